"""Automated evaluation: a Django-free core (video I/O, detection, recognition, attackers,
gait, image metrics, baseline anonymizers) plus a thin Django layer (models, tasks,
commands). Importing this package never imports Django."""
