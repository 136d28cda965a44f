"""Run the benchmarks and print one table per benchmark.

Usage: ``python -m benchmarks`` (all) or ``python -m benchmarks face_eval trials``.
Options after the name of one benchmark go to its ``run(argv)``, e.g.
``python -m benchmarks attack_photos --quick``.
"""

import importlib
import os
import pkgutil
import sys
import time

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")


def print_table(rows: list[dict]) -> None:
    """Print ``rows`` (dicts; keys are the columns, in first-seen order) as an aligned text table."""
    if not rows:
        print("(no rows)")
        return
    columns = list(dict.fromkeys(key for row in rows for key in row))
    cells = [[_fmt(row.get(c, "")) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths)))
    print("  ".join("-" * w for w in widths))
    for r in cells:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths)))


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def main(argv: list[str]) -> int:
    import benchmarks

    names = sorted(
        m.name[len("bench_") :]
        for m in pkgutil.iter_modules(benchmarks.__path__)
        if m.name.startswith("bench_")
    )
    first_option = next((i for i, arg in enumerate(argv) if arg.startswith("-")), len(argv))
    wanted, options = argv[:first_option] or names, argv[first_option:]
    if options and len(wanted) != 1:
        print(f"options {' '.join(options)} need exactly one benchmark name before them")
        return 2
    unknown = set(wanted) - set(names)
    if unknown:
        print(f"unknown benchmark(s): {', '.join(sorted(unknown))}; known: {', '.join(names)}")
        return 2
    for name in wanted:
        module = importlib.import_module(f"benchmarks.bench_{name}")
        print(f"\n== {name}: {(module.__doc__ or '').strip().splitlines()[0] if module.__doc__ else ''}")
        started = time.perf_counter()
        print_table(module.run(options) if options else module.run())
        print(f"({time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
