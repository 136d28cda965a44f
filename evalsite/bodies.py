"""Reading JSON request bodies safely: anything that does not decode is a client error.

``json.loads`` raises ``RecursionError`` (not ``ValueError``) on deeply nested input such
as ``"[" * 100000``, and a value nested a few hundred levels deep parses but can exhaust
the stack later (``str()`` in form cleaning). Every JSON body the site reads goes through
:func:`decode_json`: the rater answer endpoint via :func:`json_object_body`, the REST API
via :class:`JSONParser` (``REST_FRAMEWORK["DEFAULT_PARSER_CLASSES"]``).
"""

from __future__ import annotations

import json
from typing import Any

from rest_framework import parsers, serializers
from rest_framework.exceptions import ParseError

from .booleans import ACCEPTED, NotABoolean, parse_boolean

#: Deepest nesting of lists/objects accepted; the site's payloads are 1-2 levels deep.
MAX_DEPTH = 32


class BadBody(ValueError):
    """A request body that cannot be used; ``status`` is the HTTP status to answer."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def _reject_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


def _depth(value: Any) -> int:
    """Nesting depth of lists/dicts in ``value`` (iterative: no recursion limit)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in item)
    return deepest


def decode_json(raw: bytes, max_depth: int = MAX_DEPTH, encoding: str = "utf-8") -> Any:
    """Parse a JSON document (UTF-8 unless the request names another text charset).

    Parameters
    ----------
    raw : bytes
        The request body.
    max_depth : int
        Deepest list/object nesting accepted.
    encoding : str
        The text encoding of ``raw``.

    Raises
    ------
    BadBody
        (status 400) when the bytes are not text in ``encoding``, not JSON (NaN and Infinity included),
        or nested deeper than ``max_depth``.
    """
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as error:
        raise BadBody(f"body is not {encoding} text (byte {error.start})") from None
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise BadBody(f"JSON nested deeper than {max_depth} levels") from None
    except ValueError as error:
        raise BadBody(f"body is not valid JSON: {error}") from None
    if _depth(value) > max_depth:
        raise BadBody(f"JSON nested deeper than {max_depth} levels")
    return value


def json_object_body(request, max_bytes: int = 1024 * 1024) -> dict:
    """The JSON object a view expects in ``request``'s body.

    Raises
    ------
    BadBody
        415 unless the content type is ``application/json``; 413 when the body is longer
        than ``max_bytes``; 400 when it does not decode (:func:`decode_json`) or is not a
        JSON object.
    """
    if request.content_type != "application/json":
        raise BadBody("send the body as JSON (Content-Type: application/json)", status=415)
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    if declared > max_bytes or len(request.body) > max_bytes:
        raise BadBody(f"body longer than {max_bytes} bytes", status=413)
    value = decode_json(request.body)
    if not isinstance(value, dict):
        raise BadBody("body must be a JSON object")
    return value


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, through :func:`decode_json` (``ParseError``, a 400, on bad input)."""

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = parsers.get_encoding(parser_context or {})  # a text charset, else ParseError
        try:
            return decode_json(stream.read(), encoding=encoding)
        except BadBody as error:
            raise ParseError(f"JSON parse error - {error}") from None


class BooleanField(serializers.BooleanField):
    """DRF's boolean field, read by :func:`evalsite.booleans.parse_boolean` (strict).

    DRF's own field also takes ``t``/``f``/``y``/``n``; this one answers 400 with the
    field's name for anything but true/false, 1/0, yes/no, on/off (any case).
    """

    default_error_messages = {"invalid": f"{{input!r}} is not a yes/no value; use {ACCEPTED}"}

    def to_internal_value(self, data):
        try:
            return parse_boolean(data, self.field_name or "value")
        except NotABoolean:
            self.fail("invalid", input=data)
