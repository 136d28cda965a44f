"""Typed reads of environment variables for ``settings.py`` (the one place that reads them).

Each function returns ``default`` when the variable is unset or blank, and raises
``ImproperlyConfigured`` naming the variable when its value is not of the expected type,
so a typo in a deployment's environment stops the site at start-up with a clear message
instead of silently falling back to a default.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from .booleans import NotABoolean, parse_boolean


def _raw(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def string(name: str, default: str = "") -> str:
    """The variable as text (surrounding whitespace removed)."""
    value = _raw(name)
    return default if value is None else value


def boolean(name: str, default: bool = False) -> bool:
    """``1/true/yes/on`` or ``0/false/no/off`` (any case; :func:`evalsite.booleans.parse_boolean`)."""
    value = _raw(name)
    if value is None:
        return default
    try:
        return parse_boolean(value, name)
    except NotABoolean:
        raise ImproperlyConfigured(f"{name}={value!r}: use 1 or 0 (or true/false, yes/no, on/off)") from None


def integer(name: str, default: int | None, minimum: int | None = None) -> int | None:
    """A whole number, at least ``minimum`` when given."""
    value = _raw(name)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r}: must be a whole number") from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}={number}: must be at least {minimum}")
    return number


def strings(name: str, default: list[str] | None = None) -> list[str]:
    """A comma-separated list; blank items are dropped."""
    value = _raw(name)
    if value is None:
        return list(default or [])
    return [item.strip() for item in value.split(",") if item.strip()]


def path(name: str, default: Path | None) -> Path | None:
    """A filesystem path (``~`` expanded, made absolute); the folder need not exist yet."""
    value = _raw(name)
    if value is None:
        return None if default is None else Path(default).resolve()
    return Path(value).expanduser().resolve()


def json_value(name: str, default: Any = None) -> Any:
    """A JSON document (e.g. a list of dicts)."""
    value = _raw(name)
    if value is None:
        return default
    try:
        return json.loads(value)
    except ValueError as error:
        raise ImproperlyConfigured(f"{name}: not valid JSON ({error})") from None
