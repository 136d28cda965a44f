"""Django models of this app (the science lives in Django-free modules)."""
