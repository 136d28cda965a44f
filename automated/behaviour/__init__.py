"""Automated behaviour preservation: does a masked video keep the behaviour of its clear video?

The task is to obscure identity "while preserving human behavioral information"
(seeds/002_68b18bfdbdb94491.txt); pixel similarity (SSIM/PSNR) cannot say whether gaze,
head movement, eye closure, speech or expression survived. This package measures them
with offline models on the tested frames of a clear and a masked video and compares
the two (Django-free; one job per module):

- ``landmarks``: MediaPipe face mesh with irises, body pose, hands.
- ``head_pose``: yaw, pitch, roll from the mesh and a 3-D face model (``cv2.solvePnP``).
- ``gaze``: gaze direction from irises, eye corners, lids and head pose.
- ``openness``: eye (EAR) and mouth (MAR) aspect ratios; ``events``: closures,
  mouth openings and their F1.
- ``keras_model`` + ``face_classifier``: the pretrained mini-Xception expression and
  gender classifiers, read from their Keras HDF5 files into PyTorch;
  ``expression``: accuracy against acted emotions.
- ``body``: PCK of torso, arms and hands, hand presence agreement.
- ``features`` + ``extractor``: per-frame features, one ``update(frame_rgb)`` per tested frame.
- ``compare``: metrics of masked against clear features; ``score``: the
  behaviour-preservation score in [0, 1] and the per-submission aggregate.
- ``evaluate``: one masked video against its clear video, fed pair by pair by the face
  evaluation's decoding pass (``BehaviourPass``) or from the files (cached clear side).
- ``leakage``: gender inference from masked faces (pretrained and parrot attackers).
- ``frontier``: the privacy-utility frontier figure.
- ``shapes``: the shape checks of the pairwise (clear vs masked) helpers.
"""

from .compare import compare
from .evaluate import BehaviourEvaluation, BehaviourPass, evaluate_behaviour
from .extractor import BehaviourExtractor
from .features import BehaviourFeatures
from .frontier import FrontierPoint, frontier_figure
from .leakage import AttributeVideo, attribute_leakage
from .score import behaviour_score, summarize_behaviour

__all__ = [
    "BehaviourEvaluation",
    "BehaviourExtractor",
    "BehaviourFeatures",
    "BehaviourPass",
    "AttributeVideo",
    "FrontierPoint",
    "attribute_leakage",
    "behaviour_score",
    "compare",
    "evaluate_behaviour",
    "frontier_figure",
    "summarize_behaviour",
]
