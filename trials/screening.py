"""The device gate: raters whose device cannot show the study properly leave through the
campaign's screen-out path (issue 23), before any trial.

Checked when the rater agrees to the consent text: ``Campaign.desktop_only`` (a phone or
tablet browser, told by its user agent: "Mobi", "Android", "iPhone", "iPad", "Tablet")
and ``Campaign.min_screen_width`` / ``min_screen_height`` (the screen size in CSS pixels
the consent page's script sends; a browser without scripts sends none and is not gated by
size). A screened-out session ends in state ``screened_out`` with the reason; its page
shows the campaign's screen-out code and redirect URL (``Campaign.screen_out_url``, with
``{screen_out_code}`` replaced), never a completion code. The crowd bookkeeping lists such
raters as ``screened_out`` (``trials.crowd``).

Only the device is gated here: screening out on a failed attention check would tell a
bot which trials are checks (``trials.assignment``: a flagged rater goes on like any
other), so failed checks are handled by the crowd bookkeeping (reject with the reason).
"""

from __future__ import annotations

import re

MOBILE = re.compile(r"Mobi|Android|iPhone|iPad|iPod|Tablet|Silk|Kindle", re.IGNORECASE)


def _size(value) -> int | None:
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError):
        return None
    return number if 0 < number < 100_000 else None


def screen_out_reason(campaign, user_agent: str, width, height) -> str:
    """Why ``campaign``'s device gate screens this browser out, or ``""`` if it passes.

    Parameters
    ----------
    campaign : Campaign
    user_agent : str
        The request's ``User-Agent`` header.
    width, height : str or int or None
        Screen size in CSS pixels as the page reported it (None or junk: unknown).
    """
    if campaign.desktop_only and MOBILE.search(user_agent or ""):
        return "a phone or tablet browser; this study needs a desktop or laptop computer"
    width, height = _size(width), _size(height)
    need_w, need_h = campaign.min_screen_width, campaign.min_screen_height
    if width is not None and height is not None and (need_w or need_h):
        if (need_w and width < need_w) or (need_h and height < need_h):
            return f"screen {width}x{height} smaller than {need_w or 0}x{need_h or 0} pixels"
    return ""


def screen_out_url(campaign) -> str:
    """The campaign's screen-out redirect URL with its code filled in ('' if none)."""
    return campaign.screen_out_url.replace("{screen_out_code}", campaign.screen_out_code)
