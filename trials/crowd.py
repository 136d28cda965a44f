"""Paying the crowd: who to approve, reject (with the recorded reason) or pay a bonus (issue 23).

:func:`rater_decisions` decides per rater of a campaign, from what the rating pages
recorded:

- ``incomplete``: the session did not reach its end (consent, instructions or trials
  left); nothing to do on the platform (its own time-out returns the place);
- ``declined``: declined consent;
- ``screened_out``: left through the device gate (``trials.screening``) with the
  campaign's screen-out code; paid as the platform's screen-out rules say;
- ``reject``: a completed session of a rater flagged by the attention checks or the
  plausibility rules (``Rater.flagged``, set by ``trials.assignment``), with that reason;
- ``review``: completed, but flagged by a campaign-level test only (shared browser or
  address, accuracy outlier: ``RaterFlag``): crowd platforms do not allow rejecting on
  statistical suspicion alone, so the organizer looks first (the reasons are listed);
- ``approve``: every other completed session.

The bonus is the organizer's rule ``Campaign.bonus_per_correct_check`` times the
attention checks answered correctly, for approved raters only.

:func:`export` writes what each platform's bulk tools accept:

- ``decisions``: every column of :func:`rater_decisions` (with header);
- ``prolific-approve``: one participant ID per line (Prolific: Submissions > Bulk approve);
- ``prolific-reject``: ``participant_id,reason`` lines (Prolific rejects one by one, with a reason);
- ``prolific-bonus``: ``participant_id,amount`` lines, no header (Prolific: Bulk bonus payment);
- ``mturk``: ``AssignmentId,WorkerId,Approve,Reject`` (MTurk batch results upload: ``x`` under
  Approve, or the reason under Reject);
- ``mturk-bonus``: ``WorkerId,AssignmentId,BonusAmount,Reason`` (for ``aws mturk send-bonus``).

Every text cell is made safe for spreadsheets (:func:`evalsite.spreadsheet.spreadsheet_safe`): the crowd IDs
come from the join link as the rater's browser sent them, so ``?PROLIFIC_PID==HYPERLINK(...)``
must not become a formula when the organizer opens the file. Real platform IDs (Prolific:
24 hexadecimal digits; MTurk: capitals and digits) never start with such a character, so
the bulk files are unchanged for them.
"""

from __future__ import annotations

import io
from decimal import Decimal
from typing import TYPE_CHECKING

from django.db.models import Count, Q

from evalsite.spreadsheet import SafeWriter

from .models import Rater, SessionState, TrialKind

# pandas is imported where it is used: slow to import, and Django start-up imports this module.
if TYPE_CHECKING:
    import pandas as pd

DECISION_COLUMNS = [
    "rater_id",
    "participant_code",
    "prolific_pid",
    "mturk_worker_id",
    "mturk_assignment_id",
    "session_state",
    "attention_checks",
    "attention_checks_correct",
    "decision",
    "reason",
    "bonus",
]
FORMATS = ("decisions", "prolific-approve", "prolific-reject", "prolific-bonus", "mturk", "mturk-bonus")


def rater_decisions(campaign) -> pd.DataFrame:
    """One row per rater of ``campaign`` (by id) with the decision, its reason and the bonus.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`DECISION_COLUMNS`: ``attention_checks`` and
        ``attention_checks_correct`` (int, answered checks); ``decision`` one of approve,
        reject, review, incomplete, declined, screened_out; ``reason`` (text, empty for approve);
        ``bonus`` (``Decimal``, 2 places; 0 unless approved).
    """
    import pandas as pd

    per_check = Decimal(campaign.bonus_per_correct_check or 0)
    catch = Q(session__trials__kind=TrialKind.CATCH, session__trials__response__isnull=False)
    raters = (
        Rater.objects.filter(campaign=campaign)
        .select_related("session")
        .prefetch_related("flags")
        .annotate(
            n_checks=Count("session__trials", filter=catch),
            n_correct=Count("session__trials", filter=catch & Q(session__trials__response__correct=True)),
        )
        .order_by("pk")
    )
    rows = []
    for rater in raters:
        session = getattr(rater, "session", None)
        state = session.state if session is not None else "not started"
        decision, reason = _decide(rater, state)
        params = rater.platform_params or {}
        rows.append(
            {
                "rater_id": rater.pk,
                "participant_code": rater.participant_code,
                "prolific_pid": params.get("PROLIFIC_PID", ""),
                "mturk_worker_id": params.get("workerId", ""),
                "mturk_assignment_id": params.get("assignmentId", ""),
                "session_state": state,
                "attention_checks": rater.n_checks,
                "attention_checks_correct": rater.n_correct,
                "decision": decision,
                "reason": reason,
                "bonus": (per_check * rater.n_correct if decision == "approve" else Decimal(0)).quantize(
                    Decimal("0.01")
                ),
            }
        )
    return pd.DataFrame(rows, columns=DECISION_COLUMNS)


def _decide(rater: Rater, state: str) -> tuple[str, str]:
    if state == SessionState.DECLINED:
        return "declined", "declined consent"
    if state == SessionState.SCREENED_OUT:
        return "screened_out", f"device gate: {rater.session.screen_out_reason}"
    if state != SessionState.COMPLETE:
        return "incomplete", f"session not completed ({state})"
    if rater.flagged:
        return "reject", rater.flag_reason or "flagged by the attention checks or plausibility rules"
    flags = list(rater.flags.all())
    if flags:
        return "review", "; ".join(f"{flag.get_kind_display()}: {flag.reason}" for flag in flags)
    return "approve", ""


def _platform_id(row, key: str) -> str:
    return row[key] or row["participant_code"]


def export(campaign, fmt: str) -> str:
    """The decisions of ``campaign`` as CSV text in format ``fmt`` (one of :data:`FORMATS`).

    Prolific rows use ``PROLIFIC_PID`` from the join link, else the participant code; MTurk
    rows ``workerId``/``assignmentId`` (MTurk rows without an assignment ID are left out:
    nothing to approve there). Every cell goes through :func:`evalsite.spreadsheet.spreadsheet_safe`.

    Raises
    ------
    ValueError
        For an unknown ``fmt`` (naming the formats).
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown crowd export format {fmt!r}; one of: {', '.join(FORMATS)}")
    table = rater_decisions(campaign)
    out = io.StringIO()
    writer = SafeWriter(out, lineterminator="\n")
    rows = table.to_dict(orient="records")
    if fmt == "decisions":
        writer.writerow(DECISION_COLUMNS)
        writer.writerows([[row[c] for c in DECISION_COLUMNS] for row in rows])
    elif fmt == "prolific-approve":
        writer.writerows([[_platform_id(r, "prolific_pid")] for r in rows if r["decision"] == "approve"])
    elif fmt == "prolific-reject":
        writer.writerows(
            [[_platform_id(r, "prolific_pid"), r["reason"]] for r in rows if r["decision"] == "reject"]
        )
    elif fmt == "prolific-bonus":
        writer.writerows(
            [[_platform_id(r, "prolific_pid"), f"{r['bonus']:.2f}"] for r in rows if r["bonus"] > 0]
        )
    elif fmt == "mturk":
        writer.writerow(["AssignmentId", "WorkerId", "Approve", "Reject"])
        for r in rows:
            if r["mturk_assignment_id"] and r["decision"] in ("approve", "reject"):
                approve = "x" if r["decision"] == "approve" else ""
                writer.writerow([r["mturk_assignment_id"], r["mturk_worker_id"], approve, r["reason"]])
    else:  # mturk-bonus
        writer.writerow(["WorkerId", "AssignmentId", "BonusAmount", "Reason"])
        for r in rows:
            if r["mturk_assignment_id"] and r["bonus"] > 0:
                reason = f"{r['attention_checks_correct']} attention checks answered correctly"
                writer.writerow([r["mturk_worker_id"], r["mturk_assignment_id"], f"{r['bonus']:.2f}", reason])
    return out.getvalue()
