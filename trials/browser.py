"""Binding a rating session to the browser that joined, and what a join link carries.

A participant code is self-asserted (anyone who knows or guesses it can type it), so it
cannot be the only key to a session: whoever joins first gets a random secret cookie
(:data:`COOKIE_NAME`), and the session stores only its SHA-256 (``browser_key_hash``).
The key is issued by the server and signed with the site's secret (``django.core.signing``):
a key the client makes up (any string, as many as it likes) is ignored and replaced by a
new one, so the number of codes joined from one browser is known (``trials.integrity``).
Another browser or device with the same code is refused: it neither answers trials nor
sees the completion code. Rater accounts are authenticated by their password, so a
logged-in rater may move the session to a new browser.

Participant codes are normalised (Unicode NFKC, then case-folded) and must then consist of
:data:`CODE_CHARACTERS` only, so "ABC", "abc" and full-width "ＡＢＣ" are one participant
and look-alike letters of other scripts (Cyrillic "а" for Latin "a") are refused.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import unicodedata

from django.conf import settings
from django.core import signing

COOKIE_NAME = "deid_rater_key"
COOKIE_MAX_AGE_S = 90 * 24 * 3600  # a study stays open for weeks at most

#: Characters a participant code may have after normalisation (documented in docs/human/integrity.md).
CODE_CHARACTERS = "a-z, 0-9, '-', '_' and '.'"
CODE_MAX_LENGTH = 64
_CODE = re.compile(r"^[a-z0-9_.-]+$")

#: Query parameters of crowd platforms recorded from the join link (Prolific, MTurk,
#: CloudResearch, generic). Anything else in the query is ignored.
PLATFORM_PARAMS = (
    "PROLIFIC_PID",
    "STUDY_ID",
    "SESSION_ID",
    "workerId",
    "assignmentId",
    "hitId",
    "turkSubmitTo",
    "participantId",
    "aid",
    "projectId",
    "participant",
    "source",
)
PLATFORM_VALUE_MAX = 200
#: Parameters naming the participant on the platform: one participant code per platform
#: ID and campaign (``Rater.platform_id``, :func:`platform_id`).
PLATFORM_ID_PARAMS = ("PROLIFIC_PID", "workerId", "participantId")


class BadParticipantCode(ValueError):
    """The code has characters outside :data:`CODE_CHARACTERS` or is too long."""


def normalise_participant_code(raw: str) -> str:
    """The canonical form of a participant code: NFKC, case-folded, surrounding spaces removed.

    Returns
    -------
    str
        ``""`` for an empty code (the caller decides whether an account may join instead).

    Raises
    ------
    BadParticipantCode
        With a message for the rater, if the normalised code has a character outside
        :data:`CODE_CHARACTERS` or more than :data:`CODE_MAX_LENGTH` characters.
    """
    code = unicodedata.normalize("NFKC", raw or "").strip().casefold()
    if not code:
        return ""
    if len(code) > CODE_MAX_LENGTH:
        raise BadParticipantCode(f"A participant code has at most {CODE_MAX_LENGTH} characters.")
    if not _CODE.match(code):
        bad = sorted({ch for ch in code if not _CODE.match(ch)})
        shown = ", ".join(repr(ch) if ch.isprintable() else f"U+{ord(ch):04X}" for ch in bad)
        raise BadParticipantCode(
            f"A participant code may contain only {CODE_CHARACTERS} (letters of the Latin "
            f"alphabet, any case); this one has {shown}. Copy it exactly from your platform."
        )
    return code


class ConflictingPlatformParams(ValueError):
    """A join link repeats a crowd-platform parameter with different values."""


def _normalise_platform_value(value: str) -> str:
    return unicodedata.normalize("NFKC", value).strip().casefold()


_PLATFORM_NAMES = {name.casefold(): name for name in PLATFORM_PARAMS}


def platform_params(query) -> dict[str, str]:
    """The crowd-platform parameters of a join link's query (``request.GET``), as received.

    Only the names in :data:`PLATFORM_PARAMS` are kept (matched in any case, stored under
    the spelling there), each value cut to :data:`PLATFORM_VALUE_MAX` characters; empty
    values are dropped.

    Raises
    ------
    ConflictingPlatformParams
        If a parameter appears more than once (in any case) with values that differ after
        NFKC, trimming and case folding (``?PROLIFIC_PID=a&prolific_pid=b``).
    """
    pairs = query.lists() if hasattr(query, "lists") else ((k, [v]) for k, v in query.items())
    values: dict[str, list[str]] = {}
    for key, given in pairs:
        name = _PLATFORM_NAMES.get(key.casefold())
        if name is not None:
            values.setdefault(name, []).extend(v.strip() for v in given if v and v.strip())
    found = {}
    for name in PLATFORM_PARAMS:
        given = values.get(name)
        if not given:
            continue
        if len({_normalise_platform_value(v[:PLATFORM_VALUE_MAX]) for v in given}) > 1:
            raise ConflictingPlatformParams(
                f"The study link gives {name} more than once, with different values. "
                "Open the link exactly as your crowd platform gave it."
            )
        found[name] = given[0][:PLATFORM_VALUE_MAX]
    return found


def platform_id(params) -> str:
    """The participant's crowd-platform ID among :func:`platform_params` ``params``
    (``"PROLIFIC_PID:5f1a..."``: the parameter's name, then the value after NFKC, trimming
    and case folding, so ``5F1A``, `` 5f1a`` and full-width ``５f1a`` are one ID), or ``""``
    if the link has none."""
    for name in PLATFORM_ID_PARAMS:
        value = _normalise_platform_value(params.get(name) or "")
        if value:
            return f"{name}:{value}"
    return ""


def key_hash(key: str) -> str:
    """Hex SHA-256 of a browser key (what ``RatingSession.browser_key_hash`` stores)."""
    return hashlib.sha256(key.encode()).hexdigest()


_SIGNER_SALT = "trials.browser.key"


def _signer() -> signing.Signer:
    return signing.Signer(salt=_SIGNER_SALT)


def issued_key(request) -> str | None:
    """The browser's key if the server issued it (its signature checks), else None.

    The signed cookie value itself is the key (it is what :func:`key_hash` hashes).
    """
    key = request.COOKIES.get(COOKIE_NAME, "")
    if not key or len(key) > 256:
        return None
    try:
        _signer().unsign(key)
    except signing.BadSignature:
        return None
    return key


def browser_key(request) -> str:
    """This browser's server-issued key, or a new one (256 random bits, signed) when it has
    none or sends one the server did not issue."""
    return issued_key(request) or _signer().sign(secrets.token_urlsafe(32))


def set_cookie(response, key: str) -> None:
    """Send the browser key: HttpOnly, SameSite=Lax, Secure when ``SESSION_COOKIE_SECURE``."""
    response.set_cookie(
        COOKIE_NAME,
        key,
        max_age=COOKIE_MAX_AGE_S,
        httponly=True,
        samesite="Lax",
        secure=settings.SESSION_COOKIE_SECURE,
    )


def same_browser(request, session) -> bool:
    """True if ``request`` comes from the browser ``session`` is bound to (or it is unbound)."""
    if not session.browser_key_hash:
        return True
    key = request.COOKIES.get(COOKIE_NAME, "")
    return bool(key) and secrets.compare_digest(key_hash(key), session.browser_key_hash)
