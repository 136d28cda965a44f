"""The names of the attack suite's options, in a module that imports nothing.

The REST API checks a run's options against these names (the ``attack`` command, which
computes the attack anyway, reads the registries themselves); the modules that implement the options (``recognizers``: scikit-learn; ``selection``,
``suite`` and ``declared``: pandas) are imported only where an attack is computed, not when Django starts.
"""

#: Face recognizers: the keys of ``recognizers.FACE_RECOGNIZERS``, in its order.
RECOGNIZER_NAMES = (
    "dlib_svm",
    "dlib_knn",
    "lbph",
    "eigenfaces",
    "cnn",
    "dlib_finetuned",
    "arcface_svm",
    "arcface_knn",
)
#: Identity-subset selection strategies (``selection``).
SELECTION_STRATEGIES = ("random", "classification", "metadata", "distinctive", "center")
#: The selection label of the full identity set (no selection).
ALL = "all"
#: The declared knowledge level (``declared``): trained on anonymised data (VoicePrivacy's
#: semi-informed).
DECLARED_ATTACKER = "parrot"
