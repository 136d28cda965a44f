"""The one overwrite rule of the commands that write files (``export_report``, ``export_summary``,
``export_dictionary``): an existing file is replaced only with ``--force``, unless it already
holds exactly what would be written (the ``dictionary.csv`` a first report left beside it).
"""

from pathlib import Path

from django.core.management.base import CommandError

FORCE_HELP = "overwrite output files (and the dictionary beside them) that exist with other content"


def _differs(path: Path, text: str) -> bool:
    try:
        return path.read_text(encoding="utf-8") != text
    except FileNotFoundError:
        return False
    except (UnicodeDecodeError, IsADirectoryError):
        return True


def refuse_overwrite(paths, *, force: bool) -> None:
    """Raise ``CommandError`` naming every file of ``paths`` that exists, unless ``force``.

    For outputs whose bytes differ on every run (a zip with time stamps): an existing one
    is a clash. :func:`write_files` passes only the files whose content would change.
    """
    existing = [str(path) for path in map(Path, paths) if path.exists()]
    if existing and not force:
        raise CommandError(
            f"{', '.join(existing)} already exist{'s' if len(existing) == 1 else ''}; "
            "pass --force to overwrite, or choose another --output"
        )


def write_files(files: dict, *, force: bool) -> list[tuple[Path, bool]]:
    """Write each text of ``files`` (path -> text, UTF-8) to its path, making its folder.

    Every path is checked before anything is written, so a refusal leaves every file as
    it was. A file that already holds its text is left untouched.

    Returns
    -------
    list of (path, written)
        In the order of ``files``; ``written`` is False for a file that already held its text.

    Raises
    ------
    CommandError
        Naming every file of ``files`` that exists with other content, unless ``force``.
    """
    files = {Path(path): text for path, text in files.items()}
    refuse_overwrite([path for path, text in files.items() if _differs(path, text)], force=force)
    done = []
    for path, text in files.items():
        same = path.is_file() and not _differs(path, text)
        if not same:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        done.append((path, not same))
    return done


def write_outputs(command, files: dict, *, force: bool, notes: dict | None = None) -> None:
    """:func:`write_files`, then one line per file on ``command``'s output: ``Wrote PATH``
    (with ``notes[path]`` after it) or ``Kept PATH (already up to date)``."""
    notes = {Path(path): note for path, note in (notes or {}).items()}
    for path, written in write_files(files, force=force):
        if written:
            note = f" ({notes[path]})" if path in notes else ""
            command.stdout.write(command.style.SUCCESS(f"Wrote {path}{note}"))
        else:
            command.stdout.write(f"Kept {path} (already up to date)")
