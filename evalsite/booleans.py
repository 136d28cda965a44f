"""The one reading of a yes/no value sent by a person: form and API fields, query
parameters, page buttons, environment variables and data-file columns.

Accepted (any case, surrounding spaces ignored): ``true/false``, ``1/0``, ``yes/no``,
``on/off`` (``on`` is what a checked HTML checkbox sends). Anything else is refused with
the field's name, never guessed: Django's ``forms.BooleanField`` reads ``"0"``, ``"no"`` and
``"off"`` as true, DRF's reads ``"t"``/``"n"`` too (issue 21).

Pure Python (used by ``settings.py`` through :mod:`evalsite.env`); the Django form field is
:class:`evalsite.forms.StrictBooleanField`, the DRF one :class:`evalsite.bodies.BooleanField`.
"""

from __future__ import annotations

TRUE_WORDS = ("true", "1", "yes", "on")
FALSE_WORDS = ("false", "0", "no", "off")

#: How to say it, for error messages.
ACCEPTED = "true/false, 1/0, yes/no or on/off"


class NotABoolean(ValueError):
    """A value that is none of the accepted words; ``field`` names where it came from."""

    def __init__(self, field: str, value: object):
        self.field = field
        self.value = value
        super().__init__(f"{field}: {value!r} is not a yes/no value; use {ACCEPTED}")


def parse_boolean(value: object, field: str) -> bool:
    """Read ``value`` as true or false, strictly.

    Parameters
    ----------
    value : bool, int or str
        ``True``/``False``, the integers 1/0 (a JSON body), or one of the words of
        :data:`TRUE_WORDS` / :data:`FALSE_WORDS` in any case.
    field : str
        The field's name, for the error message.

    Returns
    -------
    bool

    Raises
    ------
    NotABoolean
        (a ``ValueError``) for anything else: ``"n"``, ``"2"``, ``""``, ``None``, a list ...
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
    raise NotABoolean(field, value)
