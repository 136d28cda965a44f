"""Benchmarks: ``python -m benchmarks [name ...]`` runs every ``benchmarks/bench_*.py``.

Each module defines ``run() -> list[dict]``; the rows are printed as a table. Speed and
memory targets live here, never in timed unit tests.
"""
