"""No private name is imported from another module: ``python -m evalsite.checks.private_imports [PATH ...]``.

A leading underscore says "this module's own business". Importing such a name elsewhere
(``from automated.recognition import _shape_predictor``, ``import a._b``) or reaching into
an imported module for one (``evaluate_all._describe(run)``) ties the two modules
together behind their public surface; make the name public instead (or move it to a
module both may use). Dunder names (``__version__``) are public. Only modules of this
repository count (names of third-party packages are theirs to judge).

Exit status 0 if none is found, 1 otherwise; every offence is printed as
``path:line: <module> imports <name> from <other module>``.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

#: The packages checked by default (and the only ones whose names count), relative to the repository root.
PACKAGES = ("automated", "fairness", "evalsite", "trials", "benchmarks")
ROOT = Path(__file__).resolve().parents[2]


def is_private(name: str) -> bool:
    """True for ``_name`` (one or more leading underscores), False for ``name`` and ``__dunder__``."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def module_name(path: Path, root: Path) -> str:
    """Dotted module name of ``path`` (a .py file under ``root``); a package's ``__init__`` is the package."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _absolute(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    """The absolute module ``node`` imports from (``from .x import y`` resolved against ``module``)."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - node.level + 1] if node.level > 1 else base
    return ".".join(base + ([node.module] if node.module else []))


def _is_module(dotted: str, root: Path) -> bool:
    """True if ``dotted`` names a module or package file under ``root``."""
    base = root.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _ours(module: str, packages: Iterable[str]) -> bool:
    return module.split(".")[0] in packages


def offences(path: Path, root: Path = ROOT, packages: Iterable[str] = PACKAGES) -> Iterator[str]:
    """Private names ``path`` takes from other modules of ``packages``, one message per use.

    Raises
    ------
    SyntaxError
        If ``path`` is not valid Python.
    """
    packages = tuple(packages)
    module = module_name(path, root)
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    modules: dict[str, str] = {}  # local name bound to a module of ours -> its dotted name
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = _absolute(module, node, is_package)
            if not _ours(source, packages):
                continue
            for alias in node.names:
                if is_private(alias.name) and source != module:
                    yield f"{path}:{node.lineno}: {module} imports {alias.name} from {source}"
                if _is_module(f"{source}.{alias.name}", root):  # a class's _meta is not a module's
                    modules[alias.asname or alias.name] = f"{source}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if not _ours(alias.name, packages):
                    continue
                parts = alias.name.split(".")
                hidden = [p for p in parts[1:] if is_private(p)]
                if hidden:
                    yield f"{path}:{node.lineno}: {module} imports private module {alias.name}"
                modules[alias.asname or parts[0]] = alias.name if alias.asname else parts[0]
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
            and is_private(node.attr)
            and modules[node.value.id] != module
        ):
            yield f"{path}:{node.lineno}: {module} uses {node.attr} of {modules[node.value.id]}"


def python_files(paths: Iterable[Path]) -> Iterator[Path]:
    """The .py files under ``paths`` (files or folders), migrations left out (Django writes them)."""
    for path in paths:
        files = [path] if path.is_file() else sorted(path.rglob("*.py"))
        yield from (f for f in files if "migrations" not in f.parts)


def main(argv: list[str] | None = None) -> int:
    """Check the given files or folders (default: ``PACKAGES`` under the repository root); print offences."""
    args = sys.argv[1:] if argv is None else argv
    paths = [Path(a).resolve() for a in args] or [ROOT / p for p in PACKAGES if (ROOT / p).is_dir()]
    found = [message for path in python_files(paths) for message in offences(path, ROOT, PACKAGES)]
    for message in found:
        print(message)
    if found:
        print(f"{len(found)} private name(s) imported from another module: make them public or move them.")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
