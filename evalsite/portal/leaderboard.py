"""The campaign leaderboard: one row per submission, each headline figure with its 95 % interval and n.

Public entry point: :func:`leaderboard_frame` (also used by the team view). The figures
come from the report providers every app registers for ``evalsite.reports`` (the human
responses of ``trials.human_report``, the face, behaviour and attack providers of
``automated.django_app``), so the leaderboard says what the per-video reports say; the
statistics are :mod:`evalsite.comparisons` (Django-free).

Headline figures (:data:`HEADLINES`; rates are fractions, differences in [-1, 1]):

=====================================  ========  ======================================
column                                 better    interval (n)
=====================================  ========  ======================================
``human_masking_success``              higher    bootstrap over videos x raters (videos
                                                 rated clear and masked)
``human_action_loss``                  lower     same, action trials
``declared_reidentification``          lower     the declared attacker (headline),
                                                 bootstrap over tested identities
``reidentification``                   lower     cross-video: the attack suite's t
                                                 interval over folds; otherwise a
                                                 bootstrap over test videos (pooled
                                                 frames), labelled within-video
``linkability``                        lower     D<->sys of masked probes vs clear gallery,
                                                 bootstrap over probe identities
``linking_linkability``                lower     D<->sys masked vs masked across
                                                 recordings (no interval; n mated pairs)
``face_detection_failure_rate``        higher    t over videos (clipped to [0, 1])
``faces_leaked``                       lower     bootstrap over videos (pooled tracks)
``behaviour_score``                    higher    t over videos
``ssim``                               (none)    t over videos
=====================================  ========  ======================================

Paired comparisons between submissions on the same videos: :func:`comparison_frame`.
Baseline submissions (``Submission.baseline_method`` set, as ``make_baseline`` makes
them) are *reference rows*: listed after the teams' submissions and never anonymised.
"""

from __future__ import annotations

import io
import math
import string
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from automated.recognition import DEFAULT_EMBEDDER
from trials.human_report import responses_frame

from evalsite import comparisons, dictionary, phases, reports, spreadsheet
from evalsite.comparisons import (
    Estimate,
    pooled_rate_interval,
    t_interval,
    video_bootstrap,
    video_rater_bootstrap,
)
from evalsite.models import ANONYMISED_TEAM_PREFIX
from evalsite.report_cache import cached

# pandas is imported where it is used: slow to import, and Django start-up imports this module.
if TYPE_CHECKING:
    import pandas as pd

CROSS_VIDEO = "cross-video"
WITHIN_VIDEO = "within-video (scene memorisation)"


@dataclass(frozen=True)
class Headline:
    """One headline figure of the leaderboard.

    Attributes
    ----------
    key : str
        Column name (its interval and n are ``<key>_ci_low``, ``<key>_ci_high``, ``<key>_n``).
    label, unit, description : str
    better : {"higher", "lower", ""}
        Which way is better for the masking ("" = neither: SSIM keeps image content,
        which helps utility and hurts privacy).
    bounds : (float, float)
        The figure's possible range; t intervals are clipped to it (a mean of rates
        near 1 over few videos would otherwise reach above 1).
    """

    key: str
    label: str
    unit: str
    better: str
    description: str
    bounds: tuple[float, float] = (0.0, 1.0)


HEADLINES: tuple[Headline, ...] = (
    Headline(
        "human_masking_success",
        "Human masking success",
        "fraction",
        "higher",
        "Human identification accuracy on the clear video minus on the masked video, mean over videos "
        "rated in both conditions (seeds/002, 4.3). 1 = always identified clear, never masked.",
        (-1.0, 1.0),
    ),
    Headline(
        "human_action_loss",
        "Human action loss",
        "fraction",
        "lower",
        "Human action-labelling accuracy clear minus masked, mean over videos (seeds/002, 5). 0 = the action "
        "is as recognisable as in the clear video.",
        (-1.0, 1.0),
    ),
    Headline(
        "declared_reidentification",
        "Re-identification (declared attacker)",
        "chance-normalised",
        "lower",
        "The headline attack: the campaign's declared attacker (parrot: trained on masked data) with the "
        "recognizer strongest on held-out development identities, on the other (tested) identities, "
        "(accuracy - chance) / (1 - chance); 95 % bootstrap interval over tested identities, n = tested "
        "identities (VoicePrivacy 2024 evaluation plan; automated.attack.declared).",
        (-math.inf, 1.0),
    ),
    Headline(
        "reidentification",
        "Re-identification (worst case)",
        "chance-normalised",
        "lower",
        "Best recognizer x attacker of the attack suite, (accuracy - chance) / (1 - chance): 0 = chance, "
        "1 = every probe identified (seeds/000, 4.2.2). The protocol column says cross-video or within-video.",
        (-math.inf, 1.0),
    ),
    Headline(
        "linkability",
        "Linkability D<->sys",
        "[0, 1]",
        "lower",
        "Global linkability of masked probes vs the clear gallery (pretrained embedding): 0 = the scores say "
        "nothing about same or different person, 1 = fully linkable (Gomez-Barrero et al., IEEE TIFS 2018, "
        "eq. 7); 95 % bootstrap interval over probe identities, n = identities.",
    ),
    Headline(
        "linking_linkability",
        "Linking attacker D<->sys",
        "[0, 1]",
        "lower",
        "Linkability of masked recordings to each other (same person or not, masked vs masked, across "
        "recordings): a stable pseudo-identity is linkable though hidden from a gallery. n = same-person "
        "pairs; the interval is the chance range (identities permuted over recordings), not a CI "
        "(automated.temporal.linking_attack).",
    ),
    Headline(
        "face_detection_failure_rate",
        "Face detection failure",
        "fraction",
        "higher",
        "Share of clear-video face frames where no face is found in the masked frame, mean over videos.",
    ),
    Headline(
        "faces_leaked",
        "Faces leaked",
        "fraction",
        "lower",
        "Share of face tracks (people) still detected or recognisable in at least half of their masked frames, "
        "pooled over videos (count in faces_leaked_count of face_tracks).",
    ),
    Headline(
        "behaviour_score",
        "Behaviour preservation",
        "score in [0, 1]",
        "higher",
        "Automated behaviour-preservation score (gaze, head pose, eyes, mouth, expression, body), 1 = identical "
        "behaviour; mean over videos.",
    ),
    Headline(
        "ssim",
        "SSIM",
        "[-1, 1]",
        "",
        "Mean structural similarity of masked to clear frames: higher keeps more image content (utility), "
        "lower hides more (privacy).",
        (-1.0, 1.0),
    ),
)
HEADLINE_KEYS = tuple(h.key for h in HEADLINES)
HUMAN_TASKS = {"human_masking_success": "identity", "human_action_loss": "action"}
ROW_FIELDS = ["submission_id", "team", "method", "reference", "own_team"]
EXTRA_FIELDS = [
    "reidentification_protocol",
    "faces_leaked_count",
    "face_tracks",
    "human_raters",
    "declared_attack",
    "reidentification_pairs",
]


def headline(key: str) -> Headline:
    """The :class:`Headline` named ``key``; ValueError naming the known keys otherwise."""
    for entry in HEADLINES:
        if entry.key == key:
            return entry
    raise ValueError(f"unknown leaderboard figure {key!r}; known: {', '.join(HEADLINE_KEYS)}")


def leaderboard_columns() -> list[str]:
    """Every column of :func:`leaderboard_frame`, in order."""
    figures = [f"{h.key}{suffix}" for h in HEADLINES for suffix in ("", "_ci_low", "_ci_high", "_n")]
    return [*ROW_FIELDS, *figures, *EXTRA_FIELDS]


# --- gathering the per-video scores of a campaign ----------------------------------------


def _chance_normalised(accuracy, chance):
    if chance is None or not 0 <= chance < 1:
        return np.asarray(accuracy, dtype=float) * np.nan
    return (np.asarray(accuracy, dtype=float) - chance) / (1 - chance)


@dataclass
class CampaignScores:
    """The per-video scores of every submission of a campaign (one query pass, reused).

    Attributes
    ----------
    submissions : list of Submission
        Teams' submissions first (by team, then name), then the baselines (by name).
    per_video : dict
        Headline key -> DataFrame (index: video name, columns: submission pk as str) of
        automated per-video scores, for the bootstrap comparisons.
    responses : dict
        ``"identity"`` / ``"action"`` -> human responses of every submission (columns of
        ``comparisons.HUMAN_RESPONSE_COLUMNS``, ``submission`` = pk as str).
    attack : dict
        Submission pk -> its ``attack`` summary section (None before an attack run).
    attack_videos : dict
        Submission pk -> its ``attack_worst_case_*`` per-video columns.
    face : dict
        Submission pk -> its ``face_`` per-video columns.
    """

    submissions: list
    per_video: dict = field(default_factory=dict)
    responses: dict = field(default_factory=dict)
    attack: dict = field(default_factory=dict)
    attack_videos: dict = field(default_factory=dict)
    face: dict = field(default_factory=dict)
    _human: dict = field(default_factory=dict)

    def human_bootstrap(self, key: str) -> comparisons.VideoBootstrap | None:
        """The videos x raters bootstrap of ``human_masking_success`` or ``human_action_loss``."""
        if key not in self._human:
            frame = self.responses.get(HUMAN_TASKS[key])
            usable = frame is not None and (frame["condition"] == "masked").any()
            self._human[key] = (
                video_rater_bootstrap(frame, submissions=[str(s.pk) for s in self.submissions])
                if usable
                else None
            )
        return self._human[key]


def _ordered_submissions(campaign, submissions=None) -> list:
    chosen = campaign.submissions if submissions is None else submissions.filter(campaign=campaign)
    submissions = list(chosen.select_related("team", "campaign"))
    return sorted(
        submissions, key=lambda s: (bool(s.baseline_method), s.team.name.lower(), s.name.lower(), s.pk)
    )


def _human_responses(submissions) -> dict[str, pd.DataFrame]:
    import pandas as pd

    parts, clear_seen = [], False
    for submission in submissions:
        frame = responses_frame(submission)
        masked = frame[frame["condition"] == "masked"].assign(submission=str(submission.pk))
        parts.append(masked)
        if not clear_seen:  # the campaign's clear items: the same for every submission
            parts.append(frame[frame["condition"] == "clear"].assign(submission=None))
            clear_seen = True
    if not parts:
        return {}
    every = pd.concat(parts, ignore_index=True)
    columns = comparisons.HUMAN_RESPONSE_COLUMNS
    return {
        task: every.loc[every["task"] == task, columns].reset_index(drop=True)
        for task in ("identity", "action")
    }


def campaign_scores(campaign, submissions=None) -> CampaignScores:
    """Gather every submission's per-video scores and attack summary (see :class:`CampaignScores`).

    ``submissions``: a queryset narrowing the rows (e.g. :func:`evalsite.phases.runs_from_query`:
    one phase, primary runs, what a team may see); default every submission of the campaign.
    Cached by the campaign's inputs inside a request (``evalsite.report_cache``), with both
    human bootstraps computed.
    """
    ordered = _ordered_submissions(campaign, submissions)

    def compute():
        scores = _campaign_scores(ordered)
        for key in HUMAN_TASKS:
            scores.human_bootstrap(key)
        return scores

    return cached(campaign, ("campaign_scores", tuple(s.pk for s in ordered)), compute)


def warm_leaderboard(campaign) -> None:
    """The organizer's leaderboard (every run, as its page shows it without a query),
    computed into the cache (``evalsite.report_cache.warm``)."""
    leaderboard_frame(campaign, scores=campaign_scores(campaign, phases.runs_from_query(campaign, {})))


def _viewer_key(viewer_team) -> tuple:
    if viewer_team is None or isinstance(viewer_team, int) or hasattr(viewer_team, "pk"):
        viewer_team = [viewer_team]
    return tuple(sorted(getattr(t, "pk", t) for t in viewer_team if t is not None))


def _scores_key(scores) -> tuple | None:
    return None if scores is None else tuple(s.pk for s in scores.submissions)


def _campaign_scores(submissions) -> CampaignScores:
    import pandas as pd

    scores = CampaignScores(submissions=submissions, responses=_human_responses(submissions))
    columns: dict[str, dict[str, pd.Series]] = {
        k: {}
        for k in (
            "face_detection_failure_rate",
            "faces_leaked",
            "behaviour_score",
            "ssim",
            "reidentification",
        )
    }
    for submission in submissions:
        label = str(submission.pk)
        face = reports.video_columns("face", submission)
        scores.face[submission.pk] = face
        if len(face):
            columns["face_detection_failure_rate"][label] = pd.to_numeric(face["face_detection_failure_rate"])
            columns["ssim"][label] = pd.to_numeric(face["face_ssim"])
            tracks = pd.to_numeric(face["face_n_face_tracks"])
            columns["faces_leaked"][label] = pd.to_numeric(face["face_faces_leaked"]) / tracks.where(
                tracks > 0
            )
        behaviour = reports.video_columns("behaviour", submission)
        if len(behaviour) and "behaviour_score" in behaviour:
            columns["behaviour_score"][label] = pd.to_numeric(behaviour["behaviour_score"])
        section = reports.summary_section("attack", submission)
        scores.attack[submission.pk] = section
        attack = reports.video_columns("attack", submission)
        scores.attack_videos[submission.pk] = attack
        if len(attack) and "attack_worst_case_accuracy" in attack:  # temporal-only rows: not tested
            attack = attack[attack["attack_worst_case_accuracy"].notna()]
        if section and len(attack):
            columns["reidentification"][label] = pd.Series(
                _chance_normalised(attack["attack_worst_case_accuracy"], section.get("chance_level")),
                index=attack.index,
            )
    labels = [str(s.pk) for s in submissions]
    for key, series in columns.items():
        frame = pd.DataFrame(series) if series else pd.DataFrame()
        scores.per_video[key] = frame.reindex(columns=labels).sort_index()
    return scores


# --- the figures of one submission -------------------------------------------------------


def _reidentification(section: dict | None, attack_per_video: pd.DataFrame | None) -> tuple[Estimate, str]:
    """The worst-case chance-normalised re-identification, its interval, n and protocol label.

    Reads the ``attack`` summary section (``attack_service.attack_summary``). A
    cross-video worst case (``protocol`` "cross_video") carries the attack suite's own
    t interval over folds (``worst_case_ci_low`` / ``worst_case_ci_high``, accuracy
    scale, chance-normalised here) with ``n`` the tested videos. Otherwise (a summary
    without a protocol: the within-video time split, labelled scene memorisation; or a
    single fold, no interval) the interval is a bootstrap over the worst-case pair's test
    videos of the pooled share of frames re-identified (``attack_worst_case_*`` columns).
    """
    import pandas as pd

    if not section:
        return Estimate.missing(), ""
    label = CROSS_VIDEO if section.get("protocol") == "cross_video" else WITHIN_VIDEO
    value, chance = section.get("worst_case_chance_normalised"), section.get("chance_level")
    if value is None:
        return Estimate.missing(), label
    low, high = section.get("worst_case_ci_low"), section.get("worst_case_ci_high")
    if label == CROSS_VIDEO and low is not None and high is not None:
        bounds = _chance_normalised([low, high], chance)
        n = int(section.get("n_tested_videos") or section.get("n_folds") or 0)
        return Estimate(
            float(value), float(bounds[0]), float(bounds[1]), n, "t over folds (attack suite)"
        ), label
    if attack_per_video is not None and len(attack_per_video) and chance is not None:
        frames = pd.to_numeric(attack_per_video["attack_worst_case_test_frames"]).to_numpy(dtype=float)
        shares = pd.to_numeric(attack_per_video["attack_worst_case_accuracy"]).to_numpy(dtype=float)
        tested = frames > 0
        pooled = pooled_rate_interval(np.round(shares[tested] * frames[tested]), frames[tested])
        bounds = _chance_normalised([pooled.ci_low, pooled.ci_high], chance)
        return Estimate(float(value), float(bounds[0]), float(bounds[1]), pooled.n, pooled.method), label
    return Estimate(float(value), math.nan, math.nan, 0, ""), label


def _clipped(estimate: Estimate, entry: Headline) -> Estimate:
    """``estimate`` with its bounds clipped to the figure's range (NaN stays NaN)."""
    low, high = entry.bounds
    return replace(
        estimate,
        ci_low=min(max(estimate.ci_low, low), high) if math.isfinite(estimate.ci_low) else estimate.ci_low,
        ci_high=min(max(estimate.ci_high, low), high)
        if math.isfinite(estimate.ci_high)
        else estimate.ci_high,
    )


def _faces_leaked(face: pd.DataFrame) -> tuple[Estimate, int, int]:
    import pandas as pd

    if not len(face):
        return Estimate.missing(), 0, 0
    leaked = pd.to_numeric(face["face_faces_leaked"])
    tracks = pd.to_numeric(face["face_n_face_tracks"])
    kept = leaked.notna() & tracks.notna()
    estimate = pooled_rate_interval(leaked[kept], tracks[kept])
    return estimate, int(leaked[kept].sum()), int(tracks[kept].sum())


def _estimates(scores: CampaignScores, submission) -> dict:
    label = str(submission.pk)
    out: dict = {}
    for key in HUMAN_TASKS:
        bootstrap = scores.human_bootstrap(key)
        out[key] = bootstrap.estimate(label) if bootstrap is not None else Estimate.missing()
    for key in ("face_detection_failure_rate", "behaviour_score", "ssim"):
        frame = scores.per_video[key]
        out[key] = (
            _clipped(t_interval(frame[label]), headline(key))
            if label in frame and len(frame)
            else Estimate.missing()
        )
    attack = scores.attack[submission.pk] or {}
    out["declared_reidentification"] = _declared(attack)
    out["linkability"], out["linking_linkability"] = _linkability(attack)
    out["faces_leaked"], leaked, tracks = _faces_leaked(scores.face[submission.pk])
    out["reidentification"], protocol = _reidentification(
        scores.attack[submission.pk],
        scores.attack_videos[submission.pk],
    )
    identity = scores.responses.get("identity")
    raters = 0
    if identity is not None and len(identity):
        mine = identity[(identity["submission"] == label) | identity["submission"].isna()]
        raters = int(mine["rater"].nunique())
    extras = {
        "reidentification_protocol": protocol,
        "faces_leaked_count": leaked,
        "face_tracks": tracks,
        "human_raters": raters,
        "declared_attack": f"{attack['declared_recognizer']} x {attack['declared_attacker']}"
        if attack.get("declared_recognizer")
        else "",
        "reidentification_pairs": int(
            attack.get("worst_case_n_pairs")
            or sum(1 for r in attack.get("table") or () if r.get("attacker") != "clear")
        ),
    }
    return {"estimates": out, "extras": extras}


def _declared(section: dict) -> Estimate:
    """The declared attacker's chance-normalised accuracy with its interval over tested identities."""
    value, chance = section.get("declared_accuracy"), section.get("chance_level")
    if value is None or chance is None:
        return Estimate.missing()
    normalised = _chance_normalised([value, section["declared_ci_low"], section["declared_ci_high"]], chance)
    return Estimate(
        float(normalised[0]),
        float(normalised[1]),
        float(normalised[2]),
        int(section.get("declared_n_tested_identities") or 0),
        "bootstrap over tested identities (declared attacker)",
    )


def _linkability(section: dict) -> tuple[Estimate, Estimate]:
    """D<->sys of the default embedder's verification (interval over identities) and of the linking attacker."""
    records = section.get("verification") or {}
    record = records.get(DEFAULT_EMBEDDER) or next(iter(records.values()), {})
    if record.get("linkability") is None:
        verified = Estimate.missing()
    else:
        verified = Estimate(
            float(record["linkability"]),
            float(record.get("linkability_ci_low", math.nan)),
            float(record.get("linkability_ci_high", math.nan)),
            int(record.get("n_probe_identities") or 0),
            "bootstrap over probe identities",
        )
    if section.get("linking_linkability") is None:
        return verified, Estimate.missing()
    return verified, Estimate(
        float(section["linking_linkability"]),
        math.nan,
        math.nan,
        int(section.get("linking_n_mated") or 0),
        "",
    )


# --- anonymisation -----------------------------------------------------------------------


def _team_letter(index: int) -> str:
    return string.ascii_uppercase[index] if index < 26 else str(index + 1)


def display_names(submissions, *, anonymise_teams: bool = False, viewer_team=None) -> dict[int, dict]:
    """Submission pk -> ``{"team", "method", "submission_id", "own_team"}`` as shown.

    Anonymised: every team other than ``viewer_team`` becomes "Anonymised team A", "B", ...
    (a prefix no real team name may take: ``models.check_team_name``)
    (in order of first submission id) and its submissions "A1", "A2", ... (by id), with
    no submission id; baselines (reference rows) and the viewer's own team keep their names.
    ``viewer_team`` is a team, a team pk, or a collection of them (a member of several
    teams of the campaign: all are their own).
    """
    single = viewer_team is None or isinstance(viewer_team, int) or hasattr(viewer_team, "pk")
    viewers = [viewer_team] if single else viewer_team
    viewer_pks = {getattr(team, "pk", team) for team in viewers if team is not None}
    letters: dict[int, str] = {}
    counters: dict[int, int] = {}
    names = {}
    for submission in sorted(submissions, key=lambda s: s.pk):
        own = submission.team_id in viewer_pks
        if not anonymise_teams or own or submission.baseline_method:
            names[submission.pk] = {
                "team": submission.team.name,
                "method": submission.name,
                "submission_id": submission.pk,
                "own_team": own,
            }
            continue
        letter = letters.setdefault(submission.team_id, _team_letter(len(letters)))
        counters[submission.team_id] = counters.get(submission.team_id, 0) + 1
        names[submission.pk] = {
            "team": f"{ANONYMISED_TEAM_PREFIX} {letter}",
            "method": f"{letter}{counters[submission.team_id]}",
            "submission_id": None,
            "own_team": False,
        }
    return names


# --- the public tables -------------------------------------------------------------------


def leaderboard_frame(
    campaign,
    *,
    anonymise_teams: bool = False,
    viewer_team=None,
    scores: CampaignScores | None = None,
    submissions=None,
) -> pd.DataFrame:
    """The campaign leaderboard: one row per submission, baselines last as reference rows.

    Parameters
    ----------
    campaign : evalsite.models.Campaign
    anonymise_teams : bool, default=False
        Show teams other than ``viewer_team`` as "Team A", "Team B", ... and their
        submissions as "A1", "A2", ... without their ids (for publishing to teams).
        Baselines keep their names.
    viewer_team : Team or int or collection of them, optional
        The team(s) looking (their rows keep their names and have ``own_team`` True).
    scores : CampaignScores, optional
        :func:`campaign_scores` if already gathered (the page reuses it for comparisons).
    submissions : QuerySet of Submission, optional
        Instead of ``scores``: the rows (as for :func:`campaign_scores`), whose scores are
        gathered only when the frame is not in the cache (the same entry as with
        ``scores=campaign_scores(campaign, submissions)``).

    Returns
    -------
    pandas.DataFrame
        Columns :func:`leaderboard_columns`: ``submission_id`` (Int64, missing when
        anonymised), ``team``, ``method``, ``reference`` (bool: a baseline),
        ``own_team`` (bool); for each key of :data:`HEADLINES` the figure, ``_ci_low``,
        ``_ci_high`` (95 %) and ``_n`` (videos it is computed over; 0 = not measured,
        the figure NaN); then ``reidentification_protocol`` ("cross-video",
        "within-video (scene memorisation)" or "" before an attack run),
        ``faces_leaked_count`` and ``face_tracks`` (totals), ``human_raters`` (raters
        whose responses count), ``declared_attack`` (the declared recognizer x attacker, ""
        before one) and ``reidentification_pairs`` (pairs the worst case is the maximum of). Rows: teams' submissions by team and name, then baselines.
    """
    if scores is None and submissions is not None:
        ordered = _ordered_submissions(campaign, submissions)
        rows = tuple(s.pk for s in ordered)

        def gathered():
            return campaign_scores(campaign, submissions)

    else:
        rows = _scores_key(scores)

        def gathered():
            return scores or campaign_scores(campaign)

    key = ("leaderboard_frame", anonymise_teams, _viewer_key(viewer_team), rows)
    return cached(
        campaign,
        key,
        lambda: _leaderboard_frame(gathered(), anonymise_teams=anonymise_teams, viewer_team=viewer_team),
    )


def _leaderboard_frame(scores: CampaignScores, *, anonymise_teams: bool, viewer_team) -> pd.DataFrame:
    import pandas as pd

    names = display_names(scores.submissions, anonymise_teams=anonymise_teams, viewer_team=viewer_team)
    rows = []
    for submission in scores.submissions:
        figures = _estimates(scores, submission)
        row = {**names[submission.pk], "reference": bool(submission.baseline_method)}
        for key, estimate in figures["estimates"].items():
            row.update(
                {
                    key: estimate.value,
                    f"{key}_ci_low": estimate.ci_low,
                    f"{key}_ci_high": estimate.ci_high,
                    f"{key}_n": estimate.n,
                }
            )
        row.update(figures["extras"])
        rows.append(row)
    frame = pd.DataFrame(rows, columns=leaderboard_columns())
    frame["submission_id"] = frame["submission_id"].astype("Int64")
    for column in [f"{k}_n" for k in HEADLINE_KEYS] + [
        "faces_leaked_count",
        "face_tracks",
        "human_raters",
        "reidentification_pairs",
    ]:
        frame[column] = frame[column].astype("int64")
    if anonymise_teams:  # the anonymised order must not follow the real team names
        frame = frame.sort_values(
            ["reference", "own_team", "team", "method"], ascending=[True, False, True, True]
        )
    return frame.reset_index(drop=True)


def _verdict(comparison: comparisons.Comparison, better: str, a: str, b: str) -> str:
    if not math.isfinite(comparison.ci_low) or comparison.ci_low <= 0 <= comparison.ci_high:
        return "no clear difference (interval contains 0)"
    higher, lower = (a, b) if comparison.ci_low > 0 else (b, a)
    if better == "higher":
        return f"{higher} better"
    if better == "lower":
        return f"{lower} better"
    return f"{higher} higher"


def comparison_frame(
    campaign,
    key: str,
    *,
    anonymise_teams: bool = False,
    viewer_team=None,
    scores: CampaignScores | None = None,
) -> pd.DataFrame:
    """Paired comparisons of every pair of submissions on headline figure ``key``.

    Human figures use the videos x raters bootstrap, automated ones the bootstrap over
    videos (``evalsite.comparisons``; 2000 seeded resamples); per-video re-identification
    is the worst-case pair's share of a video's test frames, chance-normalised, each test
    video weighing the same.

    Returns
    -------
    pandas.DataFrame
        One row per pair with a common video: ``a``, ``b`` (as ``team: method``),
        ``difference`` (a - b, in the figure's unit), ``ci_low``, ``ci_high`` (95 %),
        ``p_value`` (two-sided bootstrap), ``share_a_greater`` (bootstrap probability
        that a's figure is higher), ``n_videos``, ``method``, ``verdict``.

    Raises
    ------
    ValueError
        For an unknown ``key``.
    """
    entry = headline(key)
    return cached(
        campaign,
        ("comparison_frame", key, anonymise_teams, _viewer_key(viewer_team), _scores_key(scores)),
        lambda: _comparison_frame(
            scores or campaign_scores(campaign),
            entry,
            anonymise_teams=anonymise_teams,
            viewer_team=viewer_team,
        ),
    )


def _comparison_frame(scores: CampaignScores, entry: Headline, *, anonymise_teams: bool, viewer_team):
    import pandas as pd

    key = entry.key
    names = display_names(scores.submissions, anonymise_teams=anonymise_teams, viewer_team=viewer_team)
    shown = {str(pk): f"{n['team']}: {n['method']}" for pk, n in names.items()}
    if key in HUMAN_TASKS:
        bootstrap = scores.human_bootstrap(key)
    else:  # figures with no per-video values (the declared attacker's, over identities): no pairs
        frame = scores.per_video.get(key, pd.DataFrame()).dropna(axis=1, how="all")
        bootstrap = video_bootstrap(frame) if frame.shape[0] and frame.shape[1] >= 2 else None
    columns = [*comparisons.COMPARISON_COLUMNS, "verdict"]
    if bootstrap is None:
        return pd.DataFrame(columns=columns)
    rows = []
    for comparison in bootstrap.all_pairs():
        if comparison.n_videos == 0:
            continue
        a, b = shown[comparison.a], shown[comparison.b]
        values = {name: getattr(comparison, name) for name in comparisons.COMPARISON_COLUMNS}
        rows.append({**values, "a": a, "b": b, "verdict": _verdict(comparison, entry.better, a, b)})
    return pd.DataFrame(rows, columns=columns)


# --- per-video bars of one submission ----------------------------------------------------


def per_video_frame(scores: CampaignScores, submission) -> pd.DataFrame:
    """One row per video, one column per headline figure that has per-video values.

    Human figures are the observed per-video differences (no resampling); videos
    without any value are left out.
    """
    import pandas as pd

    label = str(submission.pk)
    columns = {}
    for key in HUMAN_TASKS:
        bootstrap = scores.human_bootstrap(key)
        if bootstrap is not None:
            columns[key] = pd.Series(
                bootstrap.point[:, bootstrap.submissions.index(label)], index=bootstrap.videos
            )
    for key, frame in scores.per_video.items():
        if label in frame:
            columns[key] = frame[label]
    table = pd.DataFrame(columns).reindex(columns=[k for k in HEADLINE_KEYS if k in columns])
    return table.dropna(how="all").dropna(axis=1, how="all").sort_index()


def video_bars_png(campaign, submission) -> bytes:
    """:func:`per_video_bars_png` of ``submission`` among every submission of ``campaign`` (the
    organizer's leaderboard), ``b""`` without per-video values; cached by the campaign's
    inputs inside a request (``evalsite.report_cache``)."""

    def draw() -> bytes:
        table = per_video_frame(campaign_scores(campaign), submission)
        if table.empty:
            return b""
        return per_video_bars_png(table, title=f"{submission.team.name}: {submission.name}, per video")

    return cached(campaign, ("video_bars.png", submission.pk), draw)


def warm_video_bars(campaign) -> None:
    """Every submission's per-video bars (the leaderboard's figures), computed into the cache
    (``evalsite.report_cache.warm``)."""
    for submission in campaign.submissions.select_related("team").order_by("pk"):
        video_bars_png(campaign, submission)


def per_video_bars_png(table: pd.DataFrame, *, title: str) -> bytes:
    """Horizontal bars of :func:`per_video_frame` (one panel per figure) as PNG bytes.

    matplotlib's object API on the Agg canvas (no pyplot state: safe in a web worker).

    Raises
    ------
    ValueError
        If ``table`` is empty.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if table.empty:
        raise ValueError("no per-video values to draw")
    n_panels = len(table.columns)
    height = max(2.5, 0.22 * len(table) + 1.2)
    figure = Figure(figsize=(min(3.2 * n_panels, 16), height), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(1, n_panels, sharey=True, squeeze=False)[0]
    positions = np.arange(len(table))
    for axis, key in zip(axes, table.columns):
        entry = headline(key)
        values = table[key].to_numpy(dtype=float)
        colours = ["#4c72b0" if v >= 0 else "#c44e52" for v in np.nan_to_num(values)]
        axis.barh(positions, np.nan_to_num(values), color=colours)
        for position in positions[np.isnan(values)]:
            axis.text(0, position, " n/a", va="center", fontsize=7, color="#777")
        axis.set_title(entry.label + (f"\n({entry.better} is better)" if entry.better else ""), fontsize=9)
        axis.axvline(0, color="#333", linewidth=0.6)
        low, high = entry.bounds  # the figure's whole range, so submissions' bars compare
        finite = values[np.isfinite(values)]
        low = min(0.0, float(finite.min()) if len(finite) else 0.0) if not math.isfinite(low) else low
        axis.set_xlim(low, high)
        axis.tick_params(labelsize=7)
        axis.grid(axis="x", color="#ddd", linewidth=0.5)
    axes[0].set_yticks(positions, table.index, fontsize=7)
    axes[0].invert_yaxis()
    figure.suptitle(title, fontsize=10)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


# --- for the templates -------------------------------------------------------------------


def _number(value) -> float | None:
    import pandas as pd

    return None if value is None or pd.isna(value) else float(value)


#: A short line under a headline's figure, from the row's extras.
CELL_NOTES = {
    "declared_reidentification": lambda row: row["declared_attack"],
    "reidentification": lambda row: (
        f"max of {row['reidentification_pairs']} pairs" if row["reidentification_pairs"] else ""
    ),
}


#: The re-identification figures a baseline reads 1.00 on (``dictionary.BASELINE_NOTE`` says why).
REIDENTIFICATION_KEYS = ("declared_reidentification", "reidentification")


def table_context(frame: pd.DataFrame) -> dict:
    """``{"columns", "rows", "baseline_note"}`` for ``templates/evalsite/_leaderboard_table.html``.

    ``columns``: one dict per headline (``key``, ``label``, ``unit``, ``better``,
    ``description``). ``rows``: one dict per row of ``frame`` (:func:`leaderboard_frame`)
    with ``team``, ``method``, ``submission_id`` (None when anonymised), ``reference``,
    ``own_team``, ``protocol`` and ``cells``: per headline ``value``, ``ci_low``,
    ``ci_high`` (float or None), ``n`` (int) and ``at_ceiling`` (a baseline's
    re-identification reading 1.00). ``baseline_note``: ``dictionary.BASELINE_NOTE`` when
    a cell is at the ceiling, else "" (issue 21: 1.00 side by side, with no word why).
    """
    import pandas as pd

    columns = [
        {
            "key": h.key,
            "label": h.label,
            "unit": h.unit,
            "better": h.better,
            "description": dictionary.plain_words(h.description),  # paper titles, not seeds/ files
        }
        for h in HEADLINES
    ]
    rows = []
    for record in frame.to_dict(orient="records"):
        cells = [
            {
                "key": h.key,
                "value": _number(record[h.key]),
                "ci_low": _number(record[f"{h.key}_ci_low"]),
                "ci_high": _number(record[f"{h.key}_ci_high"]),
                "n": int(record[f"{h.key}_n"]),
                "note": CELL_NOTES[h.key](record) if h.key in CELL_NOTES else "",
                "at_ceiling": bool(record["reference"])
                and h.key in REIDENTIFICATION_KEYS
                and (_number(record[h.key]) or 0.0) >= dictionary.BASELINE_CEILING,
            }
            for h in HEADLINES
        ]
        submission_id = record["submission_id"]
        rows.append(
            {
                "team": record["team"],
                "method": record["method"],
                "submission_id": None if pd.isna(submission_id) else int(submission_id),
                "reference": bool(record["reference"]),
                "own_team": bool(record["own_team"]),
                "protocol": record["reidentification_protocol"],
                "faces_leaked_count": int(record["faces_leaked_count"]),
                "face_tracks": int(record["face_tracks"]),
                "cells": cells,
            }
        )
    at_ceiling = any(cell["at_ceiling"] for row in rows for cell in row["cells"])
    return {"columns": columns, "rows": rows, "baseline_note": dictionary.BASELINE_NOTE if at_ceiling else ""}


#: Decimals of the figures in CSV downloads (JSON keeps full precision): a bootstrap
#: p-value from 2000 resamples moves in steps of 0.0005.
CSV_DECIMALS = 4


def as_csv(frame: pd.DataFrame, *, decimals: int = CSV_DECIMALS) -> str:
    """:func:`leaderboard_frame` or :func:`comparison_frame` as CSV text, floats rounded to ``decimals``.

    Counts stay whole numbers; a missing figure is an empty cell; text cells (team and run
    names) are made spreadsheet-safe (:func:`evalsite.spreadsheet.frame_csv`).
    """
    return spreadsheet.frame_csv(frame.round(decimals))
