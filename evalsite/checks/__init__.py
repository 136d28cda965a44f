"""Repository checks run by ``make lint`` beside ruff and import-linter (Django-free)."""
