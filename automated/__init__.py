"""Automated evaluation: a Django-free core (video I/O, detection, recognition, attackers,
gait, image metrics, baseline anonymizers) plus a thin Django layer (models, tasks,
commands). Importing this package never imports Django."""

from automated.native_logs import quiet_environment

quiet_environment()  # before any native library opens a video or a model (DEID_VERBOSE=1 keeps them)
