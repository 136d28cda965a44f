"""Where the apps plug into the catalogue: registries each app fills in its ``AppConfig.ready()``.

The catalogue imports no app (import contracts in pyproject.toml); an app that adds to a
catalogue page or to another app's page registers here, and whoever shows the page asks
the registry. The other registries: ``evalsite.reports`` (per-video columns, summary
sections, caveats), ``evalsite.dictionary`` (what each report column means) and
``evalsite.staleness`` (plan checks of automated runs).

- **Rating** (:func:`register_rating`, :func:`rating`): how a campaign's human rating
  opens and closes (``trials``); the catalogue's admin ticks "Rating open" through it.
- **Submission actions** (:func:`register_submission_actions`, ``SUBMISSION_ACTIONS``):
  admin actions on selected submissions (``automated``: run face evaluation, attack,
  evaluate everything), listed by the catalogue's Submission admin.
- **Organizer-page panels** (:func:`register_submission_panel`,
  :func:`submission_lines`, :func:`may_start`): what an app shows beside each
  submission on the organizer page (``automated``: its runs' states and the "evaluate
  everything" button), shown by ``trials.organizer``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.core.exceptions import ImproperlyConfigured


@dataclass(frozen=True)
class RatingControl:
    """How a campaign's human rating opens and closes.

    Attributes
    ----------
    open : callable
        ``open(campaign, **options)``: checks the campaign, opens rating and returns an
        object with ``items_created`` (int) and ``warnings`` (list of str); raises
        ``refused`` when the campaign cannot be rated.
    close : callable
        ``close(campaign)``: stops new trials.
    blockers : callable
        ``blockers(campaign) -> list of str``: why rating could not open with the
        campaign's current (possibly unsaved) settings; empty when it can.
    refused : type of Exception
        What ``open`` raises; its ``problems`` attribute lists the reasons (one sentence each).
    """

    open: Callable
    close: Callable
    blockers: Callable
    refused: type[Exception]


_rating: RatingControl | None = None


def register_rating(control: RatingControl) -> None:
    """Make ``control`` the way rating opens and closes (``trials``' ``ready()``)."""
    global _rating
    _rating = control


def rating() -> RatingControl:
    """The registered :class:`RatingControl`.

    Raises
    ------
    django.core.exceptions.ImproperlyConfigured
        If no installed app registered one (the human-evaluation app ``trials`` does).
    """
    if _rating is None:
        raise ImproperlyConfigured("no installed app controls rating: add 'trials' to INSTALLED_APPS")
    return _rating


#: Admin actions on selected submissions (``ModelAdmin.actions`` of the catalogue's
#: Submission admin, which lists this very list), in registration order.
SUBMISSION_ACTIONS: list[Callable] = []


def register_submission_actions(*actions: Callable) -> None:
    """Add admin actions (``@admin.action`` functions) to the Submission admin, once each."""
    SUBMISSION_ACTIONS.extend(a for a in actions if a not in SUBMISSION_ACTIONS)


#: Admin actions on selected campaigns (added to the catalogue's Campaign admin), in
#: registration order: e.g. the automated app's "re-run everything".
CAMPAIGN_ACTIONS: list[Callable] = []


def register_campaign_actions(*actions: Callable) -> None:
    """Add admin actions (``@admin.action`` functions) to the Campaign admin, once each."""
    CAMPAIGN_ACTIONS.extend(a for a in actions if a not in CAMPAIGN_ACTIONS)


@dataclass(frozen=True)
class SubmissionPanel:
    """One app's part of a submission's row on the organizer page.

    Attributes
    ----------
    lines : callable
        ``lines(submission) -> list of dict``, each at least ``{"text": str}`` (one line
        shown under the submission, e.g. ``"face run 7: running: 2/3 videos"``).
    may_start : callable
        ``may_start(user) -> bool``: whether ``user`` may start the app's work from the
        page (its button is shown only then).
    """

    lines: Callable
    may_start: Callable


SUBMISSION_PANELS: dict[str, SubmissionPanel] = {}


def register_submission_panel(name: str, panel: SubmissionPanel) -> None:
    """Show ``panel`` beside each submission on the organizer page (``name``: the app, e.g. ``"automated"``)."""
    SUBMISSION_PANELS[name] = panel


def submission_lines(submission) -> list[dict]:
    """The lines every registered panel shows for ``submission``, panel by panel."""
    return [line for panel in SUBMISSION_PANELS.values() for line in panel.lines(submission)]


def may_start(user) -> bool:
    """True if ``user`` may start the work of at least one registered panel."""
    return any(panel.may_start(user) for panel in SUBMISSION_PANELS.values())
