"""MkDocs hooks: the pages generated from the code at build time (``mkdocs.yml``, ``hooks:``).

- ``<!-- generated: settings -->`` in a page becomes the configuration reference, from
  the declarations of ``evalsite/conf.py`` (``conf.markdown()``).
- ``<!-- generated: dictionary -->`` becomes the data dictionary, from the entries the
  apps register in ``evalsite/dictionary.py`` (Django is set up to fill the registry).
- ``<!-- generated: validation codes -->`` becomes the table of upload validation codes
  (``evalsite.validation.CODES``).
- ``api/<package>.md`` pages, one per science package, list every public module of
  ``automated/`` and ``fairness/`` (not their Django layers) for mkdocstrings; they are
  added to the "Library API" section of the navigation.

Nothing is copied by hand, so the pages cannot drift from the code.

:class:`RuntimeDocstrings` (a griffe extension, ``mkdocs.yml``) reads the docstrings that a
module completes when it is imported (``fairness.measures`` fills ``{scores}`` and
``{raises}`` with ``__doc__.format``) from the imported function instead of the source.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import re
import secrets
import sys
from pathlib import Path

import griffe
from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

#: API pages: (page path, title, package); a subpackage without a page joins its parent's.
API_PACKAGES = (
    ("api/automated.md", "automated (core)", "automated"),
    ("api/automated-attack.md", "automated.attack", "automated.attack"),
    ("api/automated-behaviour.md", "automated.behaviour", "automated.behaviour"),
    ("api/automated-gait.md", "automated.gait", "automated.gait"),
    ("api/fairness.md", "fairness", "fairness"),
)
#: Never documented as library API: the Django layers, command-line entry points.
SKIP_PARTS = {"django_app", "migrations", "__main__", "cli"}
API_SECTION = "Library API"


def _setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
    os.environ.setdefault("DEID_SECRET_KEY", "docs-build-only-" + secrets.token_urlsafe(30))
    import django

    django.setup()


def _escape(text) -> str:
    """A table cell: no line breaks, ``|`` escaped, ``<`` not read as HTML."""
    text = "" if text is None else str(text)
    return text.replace("\n", " ").replace("|", "\\|").replace("<", "&lt;")


def dictionary_markdown() -> str:
    """Every registered report column, by level and section, as Markdown tables."""
    _setup_django()
    from evalsite import dictionary

    parts = []
    for level, title in (("video", "Per-video report columns"), ("summary", "Submission summary keys")):
        parts += [f"## {title}", ""]
        sections: dict[str, list] = {}
        for entry in dictionary.entries(level):
            sections.setdefault(entry.section or "top level", []).append(entry)
        for section, rows in sections.items():
            parts += [f"### {section} ({level})", "", "| name | meaning | type | unit | range | ideal |"]
            parts.append("|---|---|---|---|---|---|")
            for entry in rows:
                c = entry.column
                details = [
                    f"*{label}:* {_escape(value)}"
                    for label, value in (
                        ("model", c.model),
                        ("threshold", c.threshold),
                        ("distance", c.distance),
                        ("source", c.source),
                    )
                    if value
                ]
                meaning = _escape(c.meaning) + (" (internal)" if c.internal else "")
                meaning += "<br>" + " · ".join(details) if details else ""
                dtype = c.dtype if c.precision is None else f"{c.dtype}, {c.precision} decimals in CSV"
                parts.append(
                    f"| `{_escape(entry.name)}` | {meaning} | {dtype} | {_escape(c.unit)} "
                    f"| {_escape(c.range)} | {_escape(c.ideal)} |"
                )
            parts.append("")
    return "\n".join(parts)


def validation_codes_markdown() -> str:
    """The upload validation codes with their meaning."""
    _setup_django()
    from evalsite import validation

    rows = ["| code | meaning | fails the whole upload |", "|---|---|---|"]
    for code, meaning in validation.CODES.items():
        whole = "yes" if code in validation.UPLOAD_CODES else ""
        rows.append(f"| `{code}` | {_escape(meaning)} | {whole} |")
    return "\n".join(rows) + "\n"


def settings_markdown() -> str:
    from evalsite import conf

    return conf.markdown()


GENERATED = {
    "<!-- generated: settings -->": settings_markdown,
    "<!-- generated: dictionary -->": dictionary_markdown,
    "<!-- generated: validation codes -->": validation_codes_markdown,
}


def _public_modules(package: str) -> list[str]:
    """Modules directly in ``package`` (a folder of the checkout), public ones, sorted; the
    package itself first when its ``__init__`` has content."""
    folder = ROOT.joinpath(*package.split("."))
    names = [package] if (folder / "__init__.py").read_text().strip() else []
    for path in sorted(folder.iterdir()):
        name = path.stem if path.suffix == ".py" else path.name
        if name.startswith("_") or name in SKIP_PARTS:
            continue
        if path.suffix == ".py":
            names.append(f"{package}.{name}")
        elif (path / "__init__.py").is_file() and f"{package}.{name}" not in {p for _, _, p in API_PACKAGES}:
            # A subpackage without a page of its own (e.g. a module split into a package):
            # documented here, with its modules.
            names += _public_modules(f"{package}.{name}")
    return names


def _only_reexports(package: str) -> bool:
    """True if ``package/__init__.py`` defines no function or class of its own."""
    tree = ast.parse(ROOT.joinpath(*package.split("."), "__init__.py").read_text())
    return not any(isinstance(node, (ast.FunctionDef, ast.ClassDef)) for node in tree.body)


def api_markdown(title: str, package: str) -> str:
    lines = [
        f"# {title}",
        "",
        f"Generated from the docstrings of `{package}` (Django-free; see the [library overview](index.md)).",
        "",
    ]
    for module in _public_modules(package):
        lines += [f"## `{module}`", "", f"::: {module}", "    options:", "      heading_level: 3"]
        # A package's __init__ that only re-exports: its docstring here, the members under
        # the modules that define them (documented once).
        lines += ["      members: false", ""] if module == package and _only_reexports(package) else [""]
    return "\n".join(lines)


def on_config(config, **kwargs):
    for entry in config["nav"] or []:
        if isinstance(entry, dict) and API_SECTION in entry:
            pages = entry[API_SECTION]
            known = {next(iter(p.values())) if isinstance(p, dict) else p for p in pages}
            pages += [{title: path} for path, title, _ in API_PACKAGES if path not in known]
    return config


def on_files(files, config, **kwargs):
    for path, title, package in API_PACKAGES:
        files.append(File.generated(config, path, content=api_markdown(title, package)))
    return files


def on_page_markdown(markdown, page, config, files, **kwargs):
    for marker, make in GENERATED.items():
        if marker in markdown:
            markdown = markdown.replace(marker, make())
    return markdown


#: A docstring line that is only a ``{placeholder}``: filled in when the module is imported.
PLACEHOLDER = re.compile(r"^\s*\{[a-z_]+\}\s*$", re.M)


class RuntimeDocstrings(griffe.Extension):
    """Docstrings with ``{placeholder}`` lines are read from the imported function."""

    def on_function(self, *, func, loader, **kwargs) -> None:
        if func.docstring is None or not PLACEHOLDER.search(func.docstring.value):
            return
        runtime = getattr(importlib.import_module(func.module.path), func.name, None)
        if runtime is not None and runtime.__doc__:
            func.docstring.value = inspect.cleandoc(runtime.__doc__)
