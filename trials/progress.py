"""Rating progress figures of the organizer page: a roll-up per condition and the raters still needed.

Both work on evaluated items annotated by ``ItemQuerySet.with_counts`` (``n_completed``:
usable responses, i.e. completed trials of raters not excluded; ``n_live``: those plus open,
unexpired claims; ``n_excluded``: completed trials of excluded raters, which count for
nothing) and ``target_count`` (the campaign's raters per video).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass


def _usable(item) -> int:
    return min(item.n_completed, item.target_count)


def _still_needed(item) -> int:
    """Responses the item still needs from raters not yet in the study (open claims count as coming)."""
    return max(0, item.target_count - max(item.n_live, item.n_completed))


@dataclass(frozen=True)
class RollupRow:
    """Rating progress of one condition: the clear videos, or one submission's masked videos.

    Attributes
    ----------
    submission : Submission or None
        None for the clear-video baseline.
    n_items : int
        Evaluated items (video x task) of the condition.
    usable, target : int
        Usable responses (each item counted up to its target) and the sum of the targets.
    excluded : int
        Responses of excluded raters (not counted; their items reopened).
    claimed : int
        Open claims: trials shown to a rater and not answered yet.
    still_needed : int
        Responses no rater has taken on yet: target - usable - open claims, per item, >= 0.
    """

    submission: object | None
    n_items: int
    usable: int
    target: int
    excluded: int
    claimed: int
    still_needed: int

    @property
    def label(self) -> str:
        return "clear videos" if self.submission is None else str(self.submission)

    @property
    def percent(self) -> int:
        """Usable responses as a whole percentage of the target (100 for a condition with none to give)."""
        return round(100 * self.usable / self.target) if self.target else 100


def rollup(items, submissions=()) -> list[RollupRow]:
    """One ``RollupRow`` for the clear videos, then one per submission (in ``submissions`` order).

    Parameters
    ----------
    items : iterable of Item
        Evaluated items with ``with_counts`` annotations and ``masked_video`` loaded.
    submissions : iterable of Submission
        Every submission to list, also those without items yet (rating not opened, or
        no masked video in the evaluated subset): they get a row of zeros.
    """
    groups: dict[int | None, list] = defaultdict(list)
    for item in items:
        groups[None if item.masked_video_id is None else item.masked_video.submission_id].append(item)

    def row(submission, members) -> RollupRow:
        return RollupRow(
            submission=submission,
            n_items=len(members),
            usable=sum(_usable(i) for i in members),
            target=sum(i.target_count for i in members),
            excluded=sum(i.n_excluded for i in members),
            claimed=sum(max(0, i.n_live - i.n_completed) for i in members),
            still_needed=sum(_still_needed(i) for i in members),
        )

    return [row(None, groups[None])] + [row(s, groups.get(s.pk, [])) for s in submissions]


@dataclass(frozen=True)
class RatersEstimate:
    """How many more raters the targets need, as a lower bound.

    Attributes
    ----------
    still_needed : int
        Responses no rater has taken on yet, over every evaluated item (``RollupRow``).
    per_session : int
        Evaluated trials one session gives (``assignment.evaluated_trials_per_session``).
    by_sessions : int
        ``ceil(still_needed / per_session)``: sessions needed if every trial is usable.
    by_video : int
        The largest number of responses still needed on the items of one source video: a
        rater rates each source video at most once (one of its conditions), so that many
        different raters are needed however long sessions are.
    by_block : int
        The largest number of identity responses still needed on the items of one lineup
        block, divided by the evaluated identity trials a session is expected to give a
        block (``block_share``): a session gets at most one identity trial per block
        (:func:`trials.assignment.spent_block_videos`), and its attention checks take
        blocks too (:func:`trials.design.evaluated_share_of_a_block`).
    raters : int
        ``max(by_sessions, by_video, by_block)``: this many more raters must finish a
        session (``by_block`` in expectation, the others at least), assuming none is
        excluded and raters already in a session finish it (their open claims are counted
        as coming). None when sessions give no trial.
    """

    still_needed: int
    per_session: int
    by_sessions: int | None
    by_video: int
    raters: int | None
    by_block: int = 0


def raters_needed(items, per_session: int, blocks=None, block_share: float = 1.0) -> RatersEstimate:
    """Estimate the raters still needed to reach every evaluated item's target (``RatersEstimate``).

    Parameters
    ----------
    items : iterable of Item
        Evaluated items with ``with_counts`` annotations.
    per_session : int
        Evaluated trials per session (>= 0).
    blocks : mapping of source-video id -> hashable, optional
        The lineup block of each evaluated video with identity items (``by_block``).
    block_share : float, default 1
        Evaluated identity trials a session is expected to give one block, in (0, 1]
        (:func:`trials.design.evaluated_share_of_a_block`; ``by_block``).

    Examples
    --------
    Two source videos, each with a clear and one masked item of target 10, 4 usable
    responses on each, 5 trials per session: 24 responses needed, ``ceil(24 / 5) = 5``
    sessions, but each video still needs 12 responses from different raters, so 12.
    """
    still = 0
    per_video: dict[int, int] = defaultdict(int)
    per_block: dict = defaultdict(int)
    blocks = blocks or {}
    for item in items:
        need = _still_needed(item)
        still += need
        per_video[item.source_video_id] += need
        if getattr(item, "task", None) == "identity" and item.source_video_id in blocks:
            per_block[blocks[item.source_video_id]] += need
    by_video = max(per_video.values(), default=0)
    need = max(per_block.values(), default=0)
    by_block = math.ceil(need / block_share) if need and block_share > 0 else need
    if per_session <= 0:
        return RatersEstimate(still, per_session, None, by_video, None if still else 0, by_block)
    by_sessions = math.ceil(still / per_session)
    return RatersEstimate(
        still, per_session, by_sessions, by_video, max(by_sessions, by_video, by_block), by_block
    )
