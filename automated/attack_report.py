"""Report providers of the attack evaluation (see evalsite/reports.py)."""


def register() -> None:
    """Register this module's video columns and summary section."""
