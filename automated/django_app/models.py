"""Django models of the automated evaluation (thin layer; the science is Django-free).

Face-evaluation models live in ``face_models.py``, attack models in ``attack_models.py``.
"""

from .attack_models import *  # noqa: F401,F403
from .face_models import *  # noqa: F401,F403
