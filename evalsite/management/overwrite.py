"""Export commands refuse to overwrite files already in their output folder (unless ``--force``)."""

from pathlib import Path

from django.core.management.base import CommandError

FORCE_HELP = "overwrite the output file and the dictionary beside it if they already exist"


def refuse_overwrite(paths, *, force: bool) -> None:
    """Raise ``CommandError`` naming every file of ``paths`` that exists, unless ``force``.

    Checked before anything is written, so a refusal leaves every file as it was.
    """
    existing = [str(p) for p in map(Path, paths) if p.exists()]
    if existing and not force:
        raise CommandError(
            f"{', '.join(existing)} already exist{'s' if len(existing) == 1 else ''}; "
            "pass --force to overwrite, or choose another --output"
        )
