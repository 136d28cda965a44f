"""The cross-video protocol: the attacker never has labelled frames of the tested recording.

In the task's threat model (seeds/002_68b18bfdbdb94491.txt, section 3) the attacker knows
the identities from other material, not from other frames of the same recording. A split
of one video into time segments lets a recognizer learn the scene, the clothes and the
lighting instead of the person (on the demo it put whole-frame blur and Canny edges at
1.00): that figure is kept apart as *scene memorisation* (``suite.run_attack_suite`` with
``within_video=True``), never the worst case.

Here the folds are over videos:

- a video is *tested* when it is ``evaluated`` (``AttackData.roles``) and its identity
  has at least one other video to train on (another evaluated one, or the attacker's own
  ``attacker_train`` material);
- leave-one-video-out (``n_folds=None``) tests one such video per fold; ``n_folds=k``
  deals each identity's testable videos round-robin into k folds from a seeded offset;
- every other video of every identity trains: identities with a single video take part
  only as extra classes (a larger closed set: chance level = 1 / classes trained on),
  ``attacker_train`` videos are trained on in every fold and never tested.

Each recognizer x attacker (naive, parrot, %-parrot, the clear bound: seeds/000 sections
4.2.1 and 5.2) is trained and tested per fold; ``CrossVideoResult`` reports the mean,
standard deviation, minimum and maximum over folds with a 95 % Student-t interval, the
numbers of identities, videos and frames used, and per-identity accuracy.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..intervals import student_t_interval
from .attackers import DEFAULT_ATTACKERS, get_attackers
from .data import ROLE_EVALUATED, AttackData
from .model_cache import FittedModelCache
from .protocol import Split, accuracy, chance_level, chance_normalised_accuracy, identity_rng
from .suite import fit_predict

FOLD_COLUMNS = [
    "recognizer",
    "attacker",
    "fold",
    "test_videos",
    "n_classes",
    "n_train",
    "n_test",
    "n_train_videos",
    "n_test_videos",
    "accuracy",
    "chance_level",
    "chance_normalised",
    "fit_s",
    "predict_s",
]
PREDICTION_COLUMNS = ["recognizer", "attacker", "fold", "sample", "group", "identity", "predicted", "correct"]
SUMMARY_COLUMNS = [
    "recognizer",
    "attacker",
    "n_folds",
    "accuracy",
    "sd",
    "min",
    "max",
    "ci_low",
    "ci_high",
    "frame_accuracy",
    "chance_level",
    "chance_normalised",
]


@dataclass(frozen=True)
class VideoFold:
    """One fold of the cross-video protocol.

    Attributes
    ----------
    fold : int
    train_idx, test_idx : ndarray of int of shape (n,)
        Sorted sample indices; no video has samples on both sides.
    test_groups : tuple
        The videos (``AttackData.groups`` values) tested in this fold.
    """

    fold: int
    train_idx: np.ndarray
    test_idx: np.ndarray
    test_groups: tuple

    @property
    def split(self) -> Split:
        """This fold as a ``protocol.Split`` (no gap samples: folds split by video, not time)."""
        return Split(self.train_idx, self.test_idx, np.zeros(0, np.int64))


def _videos(identities, groups, roles) -> pd.DataFrame:
    """One row per video: identity, role; raises if a video shows two identities."""
    frame = pd.DataFrame({"group": groups, "identity": identities, "role": roles})
    per_video = frame.groupby("group", sort=True).agg(identity=("identity", "unique"), role=("role", "first"))
    mixed = per_video[per_video["identity"].map(len) > 1]
    if len(mixed):
        raise ValueError(f"videos {mixed.index.tolist()} show more than one identity")
    per_video["identity"] = per_video["identity"].map(lambda labels: labels[0])
    return per_video


def video_folds(
    identities, groups, *, roles=None, n_folds: int | None = None, seed: int = 0
) -> list[VideoFold]:
    """Folds over videos for the cross-video protocol.

    Parameters
    ----------
    identities, groups : array-like of shape (n_samples,)
        Identity and video of each sample (a video shows one identity).
    roles : array-like of str of shape (n_samples,), optional
        ``"evaluated"`` or ``"attacker_train"`` per sample (``AttackData.roles``);
        default all evaluated.
    n_folds : int, optional
        None: leave one video out (one fold per testable video). k >= 2: each identity's
        testable videos, in a seeded order, go round-robin into k folds from a seeded
        offset, so a fold tests at most ceil(n/k) of an identity's n videos and every
        identity keeps a training video; empty folds are dropped.
    seed : int, default=0
        Per-identity order and offset (``protocol.identity_rng``).

    Returns
    -------
    list of VideoFold
        Numbered 0, 1, ... in order of their first tested video.

    Raises
    ------
    ValueError
        If the lengths differ, a video shows two identities, ``n_folds`` < 2, or no
        identity has an evaluated video and another video to train on.

    Examples
    --------
    Identity a with videos 0, 1, 2, identity b with a single video 3:

    >>> folds = video_folds(["a", "a", "a", "a", "b"], [0, 0, 1, 2, 3])
    >>> [(f.test_groups, f.train_idx.tolist()) for f in folds]
    [((0,), [2, 3, 4]), ((1,), [0, 1, 3, 4]), ((2,), [0, 1, 2, 4])]
    """
    identities, groups = np.asarray(identities), np.asarray(groups)
    roles = np.full(len(identities), ROLE_EVALUATED) if roles is None else np.asarray(roles).astype(str)
    if not (len(identities) == len(groups) == len(roles)):
        raise ValueError(
            f"inconsistent numbers of samples: identities {len(identities)}, groups {len(groups)}, "
            f"roles {len(roles)}"
        )
    if n_folds is not None and n_folds < 2:
        raise ValueError(f"n_folds must be >= 2 (or None for leave-one-video-out), got {n_folds}")
    videos = _videos(identities, groups, roles)
    assignment: dict = {}  # tested video -> fold key
    for identity, own in videos.groupby("identity", sort=True):
        if len(own) < 2:
            continue  # a single video: an extra class in training only
        testable = own.index[own["role"] == ROLE_EVALUATED].tolist()
        if not testable:
            continue
        if n_folds is None:
            assignment.update({video: video for video in testable})
            continue
        rng = identity_rng(seed, identity)
        order = [testable[i] for i in rng.permutation(len(testable))]
        offset = int(rng.integers(n_folds))
        assignment.update({video: (offset + i) % n_folds for i, video in enumerate(order)})
    if not assignment:
        raise ValueError(
            "the cross-video protocol needs an identity with an evaluated video and another video "
            "to train on; every identity here has a single video (or only attacker material)"
        )
    by_fold: dict = {}
    for video, key in assignment.items():
        by_fold.setdefault(key, []).append(video)
    ordered = sorted(by_fold.values(), key=lambda vids: min(videos.index.get_loc(v) for v in vids))
    folds = []
    for number, tested in enumerate(ordered):
        is_test = np.isin(groups, tested)
        folds.append(
            VideoFold(
                number,
                np.flatnonzero(~is_test),
                np.flatnonzero(is_test),
                tuple(sorted(tested, key=videos.index.get_loc)),
            )
        )
    return folds


def fold_interval(values, confidence: float = 0.95) -> tuple[float, float]:
    """Student-t interval of the mean of per-fold accuracies, clipped to [0, 1].

    ``mean +- t_{(1+confidence)/2, n-1} * sd / sqrt(n)`` with the sample standard
    deviation (ddof 1), by ``intervals.student_t_interval``. Folds share training videos, so they are not independent and the
    interval is approximate (no unbiased variance estimator exists for k-fold
    cross-validation: Bengio and Grandvalet 2004); it shows how far the headline moves
    with the held-out videos. A single fold gives (nan, nan).

    Parameters
    ----------
    values : array-like of float in [0, 1], shape (n_folds,)
    confidence : float in (0, 1), default=0.95

    Returns
    -------
    (low, high) : tuple of float

    Raises
    ------
    ValueError
        If ``confidence`` is not in (0, 1), ``values`` is not one-dimensional, or a value
        is outside [0, 1] (not an accuracy).

    A NaN fold (no tested frame) makes the interval undefined: (nan, nan), never a
    clipped (0, 1) that looks like a result.
    """
    values = np.asarray(values, dtype=float)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if values.ndim != 1:
        raise ValueError(f"values must be one accuracy per fold, shape (n_folds,), got shape {values.shape}")
    bad = values[(values < 0.0) | (values > 1.0)]
    if bad.size:
        raise ValueError(f"fold accuracies must be in [0, 1], got {bad.tolist()}")
    if len(values) < 2 or np.isnan(values).any():
        return float("nan"), float("nan")
    _, low, high = student_t_interval(values, confidence)
    return float(max(0.0, low)), float(min(1.0, high))


@dataclass(frozen=True)
class CrossVideoResult:
    """Per-fold results and per-sample predictions of ``run_cross_video_suite``.

    Attributes
    ----------
    folds : pandas.DataFrame
        One row per recognizer x attacker x fold, columns ``FOLD_COLUMNS``
        (``test_videos``: the tested groups joined by commas).
    predictions : pandas.DataFrame
        One row per recognizer x attacker x tested sample: ``recognizer``, ``attacker``,
        ``fold``, ``sample``, ``group``, ``identity``, ``predicted``, ``correct``.
    counts : dict
        ``n_identities`` (classes), ``n_evaluated_identities`` (identities with a tested
        video), ``n_videos``, ``n_tested_videos``, ``n_attacker_videos``, ``n_frames``,
        ``n_tested_frames``, ``n_folds``.
    """

    folds: pd.DataFrame
    predictions: pd.DataFrame
    counts: dict

    def summary(self, confidence: float = 0.95) -> pd.DataFrame:
        """Mean, sd, min, max and interval of the per-fold accuracy per recognizer x attacker.

        Returns
        -------
        pandas.DataFrame
            Columns ``SUMMARY_COLUMNS``: ``accuracy`` is the mean over folds (each tested
            video counts once under leave-one-video-out), ``sd`` its sample standard
            deviation (ddof 1; nan for one fold), ``ci_low``/``ci_high`` the
            ``fold_interval``, ``frame_accuracy`` the share of all tested frames
            identified, ``chance_level`` 1 / classes, ``chance_normalised`` of the mean.
        """
        rows = []
        pooled = self.predictions.groupby(["recognizer", "attacker"], sort=False)["correct"].mean()
        for (recognizer, attacker), part in self.folds.groupby(["recognizer", "attacker"], sort=False):
            values = part["accuracy"].to_numpy()
            low, high = fold_interval(values, confidence)
            mean = float(values.mean())
            n_classes = int(part["n_classes"].iloc[0])
            rows.append(
                {
                    "recognizer": recognizer,
                    "attacker": attacker,
                    "n_folds": len(values),
                    "accuracy": mean,
                    "sd": float(values.std(ddof=1)) if len(values) > 1 else float("nan"),
                    "min": float(values.min()),
                    "max": float(values.max()),
                    "ci_low": low,
                    "ci_high": high,
                    "frame_accuracy": float(pooled.loc[(recognizer, attacker)]),
                    "chance_level": float(part["chance_level"].mean()),
                    "chance_normalised": chance_normalised_accuracy(mean, n_classes)
                    if n_classes >= 2
                    else float("nan"),
                }
            )
        return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)

    def per_identity(self) -> pd.DataFrame:
        """Share of each tested identity's frames identified, per recognizer x attacker.

        Returns
        -------
        pandas.DataFrame
            Columns ``recognizer``, ``attacker``, ``identity``, ``n_videos`` (tested),
            ``n_frames``, ``accuracy``.
        """
        grouped = self.predictions.groupby(["recognizer", "attacker", "identity"], sort=False)
        return grouped.agg(
            n_videos=("group", "nunique"), n_frames=("correct", "size"), accuracy=("correct", "mean")
        ).reset_index()

    def worst_case(self, *, baseline: str = "clear", confidence: float = 0.95) -> dict:
        """The headline worst case: the recognizer x attacker pair with the highest mean.

        seeds/000 sections 4.2.2 and 5.2, over cross-video folds. The clear baseline is the
        bound, not an attack, and is reported apart.

        Returns
        -------
        dict
            ``protocol`` ("cross_video"), ``accuracy`` (mean over folds), ``sd``, ``min``,
            ``max``, ``ci_low``, ``ci_high``, ``frame_accuracy``, ``recognizer``,
            ``attacker``, ``chance_level``, ``chance_normalised``, the ``counts``, and
            ``clear_accuracy`` / ``clear_recognizer`` (best clear-on-clear mean; None when
            the baseline was not run).

        Raises
        ------
        ValueError
            If no attacker other than the baseline was run.
        """
        summary = self.summary(confidence)
        attacks = summary[summary["attacker"] != baseline]
        if attacks.empty:
            raise ValueError("no attacker other than the clear baseline in the results")
        best = attacks.loc[attacks["accuracy"].idxmax()]
        clear = summary[summary["attacker"] == baseline]
        result = {
            "protocol": "cross_video",
            **{c: best[c] for c in SUMMARY_COLUMNS},
            **self.counts,
            "clear_accuracy": None,
            "clear_recognizer": None,
        }
        result["n_folds"] = int(result["n_folds"])
        if not clear.empty:
            top = clear.loc[clear["accuracy"].idxmax()]
            result["clear_accuracy"], result["clear_recognizer"] = float(top["accuracy"]), top["recognizer"]
        return result


def run_cross_video_suite(
    data: AttackData,
    *,
    recognizers: Mapping[str, Callable],
    attackers: Sequence = DEFAULT_ATTACKERS,
    n_folds: int | None = None,
    seed: int = 0,
    restorer: Callable | None = None,
    progress: Callable[[dict], None] | None = None,
    models: FittedModelCache | None = None,
) -> CrossVideoResult:
    """Train and test every recognizer x attacker on every cross-video fold.

    Parameters
    ----------
    data : AttackData
        Samples with ``groups`` = videos (and optional ``roles``).
    recognizers : mapping name -> zero-argument factory
        As in ``suite.run_attack_suite``.
    attackers : sequence of str or Attacker, default the six of ``attackers.DEFAULT_ATTACKERS``
        Also ``"reversal"`` (``reversal.py``).
    n_folds : int, optional
        None: leave one video out; k: k folds by video (``video_folds``).
    seed : int, default=0
        Folds and %-parrot samples.
    restorer : callable, optional
        Factory of the reversal attacker's image restorer (default
        ``reversal.RestorationNet``).
    progress : callable, optional
        Called with each finished fold row (dict).
    models : model_cache.FittedModelCache, optional
        Reuse recognizers trained on clear samples only (``run_fold``).

    Returns
    -------
    CrossVideoResult

    Raises
    ------
    ValueError
        As ``video_folds``; an unknown attacker; an empty ``recognizers``.
    """
    if not recognizers:
        raise ValueError("recognizers is empty: give at least one name -> factory")
    attacker_list = get_attackers(attackers)
    roles = data.roles if data.roles is not None else np.full(data.n_samples, ROLE_EVALUATED)
    folds = video_folds(data.identities, data.groups, roles=roles, n_folds=n_folds, seed=seed)
    restorers: dict = {}
    rows, predictions = [], []
    for fold in folds:
        fold_rows, fold_predictions = run_fold(
            data,
            fold,
            recognizers=recognizers,
            attackers=attacker_list,
            seed=seed,
            restorer=restorer,
            restorers=restorers,
            progress=progress,
            models=models,
        )
        rows += fold_rows
        predictions.append(fold_predictions)
    return CrossVideoResult(
        pd.DataFrame(rows, columns=FOLD_COLUMNS),
        pd.concat(predictions, ignore_index=True),
        cross_video_counts(data, folds),
    )


def fold_of_groups(groups, tested_groups, number: int = 0) -> VideoFold:
    """The fold that tests the videos ``tested_groups`` and trains on every other sample.

    Used where the folds were planned before the samples existed (the Django layer plans
    them from the catalogue, one task per fold, with ``video_folds`` over one row per video).

    Parameters
    ----------
    groups : array-like of shape (n_samples,)
        Video of each sample (``AttackData.groups``).
    tested_groups : sequence
        Videos tested in the fold; a video without samples simply tests nothing.
    number : int, default=0

    Returns
    -------
    VideoFold
    """
    groups = np.asarray(groups)
    tested = list(tested_groups)
    is_test = np.isin(groups, tested)
    return VideoFold(number, np.flatnonzero(~is_test), np.flatnonzero(is_test), tuple(tested))


def run_fold(
    data: AttackData,
    fold: VideoFold,
    *,
    recognizers: Mapping[str, Callable],
    attackers: Sequence = DEFAULT_ATTACKERS,
    seed: int = 0,
    restorer: Callable | None = None,
    restorers: dict | None = None,
    progress: Callable[[dict], None] | None = None,
    video_names: Mapping | None = None,
    models: FittedModelCache | None = None,
) -> tuple[list[dict], pd.DataFrame]:
    """Train and test every recognizer x attacker on one cross-video fold.

    The unit a worker runs (one task per fold in the Django layer); the attacker's own
    videos are trained on whatever the fold. A fold whose tested videos have no sample
    gives no rows. ``video_names`` (group -> name, e.g. the source video's name) names the
    tested videos in error messages; default the group itself. ``models``
    (``model_cache.FittedModelCache``) reuses the recognizers trained on clear samples
    only: the clear and naive attackers share one fit, and a later submission of the
    campaign fits only the attackers that see its masked samples (``suite.fit_predict``).

    Raises
    ------
    ValueError
        A recognizer's or attacker's ``ValueError``, prefixed with the fold, its tested
        videos (by ``video_names``) and the recognizer x attacker.

    Returns
    -------
    rows : list of dict
        One per recognizer x attacker, keys ``FOLD_COLUMNS``.
    predictions : pandas.DataFrame
        One row per recognizer x attacker x tested sample (``CrossVideoResult.predictions``).
    """
    attacker_list = get_attackers(attackers)
    labels = data.identity_labels
    restorers = {} if restorers is None else restorers
    names = {} if video_names is None else video_names
    rows, predictions = [], []
    if len(fold.test_idx) == 0 or len(fold.train_idx) == 0:
        return rows, pd.DataFrame(columns=PREDICTION_COLUMNS)
    n_classes = len(set(data.identities[fold.train_idx].tolist()))
    n_train_videos = len(set(data.groups[fold.train_idx].tolist()))
    for name, factory in recognizers.items():
        for attacker in attacker_list:
            started = time.perf_counter()
            try:
                test_idx, y_test, y_pred, n_train, timing = fit_predict(
                    data,
                    fold.split,
                    factory,
                    attacker,
                    labels,
                    seed,
                    restorer=restorer,
                    restorers=restorers,
                    models=models,
                )
            except ValueError as error:  # say which unit failed: the run's error is all a user sees
                raise ValueError(
                    f"fold {fold.fold} (tested videos {', '.join(str(names.get(g, g)) for g in fold.test_groups)}), "
                    f"recognizer {name} x attacker {attacker.name}: {error}"
                ) from error
            acc = accuracy(y_test, y_pred)
            row = {
                "recognizer": name,
                "attacker": attacker.name,
                "fold": fold.fold,
                "test_videos": ",".join(str(g) for g in fold.test_groups),
                "n_classes": n_classes,
                "n_train": n_train,
                "n_test": len(y_test),
                "n_train_videos": n_train_videos,
                "n_test_videos": len(fold.test_groups),
                "accuracy": acc,
                "chance_level": chance_level(n_classes),
                "chance_normalised": chance_normalised_accuracy(acc, n_classes)
                if n_classes >= 2
                else float("nan"),
                **timing,
            }
            rows.append(row)
            predictions.append(
                pd.DataFrame(
                    {
                        "recognizer": name,
                        "attacker": attacker.name,
                        "fold": fold.fold,
                        "sample": test_idx,
                        "group": data.groups[test_idx],
                        "identity": y_test,
                        "predicted": y_pred,
                        "correct": y_test == y_pred,
                    },
                    columns=PREDICTION_COLUMNS,
                )
            )
            if progress is not None:
                progress({**row, "elapsed_s": time.perf_counter() - started})
    return rows, pd.concat(predictions, ignore_index=True)


def cross_video_counts(data: AttackData, folds: Sequence[VideoFold]) -> dict:
    """``CrossVideoResult.counts`` of ``folds`` over ``data``."""
    tested = np.concatenate([f.test_idx for f in folds]) if folds else np.zeros(0, np.int64)
    return {
        "n_identities": len(data.identity_labels),
        "n_evaluated_identities": len(set(data.identities[tested].tolist())),
        "n_videos": len(set(data.groups.tolist())),
        "n_tested_videos": len(set(data.groups[tested].tolist())),
        "n_attacker_videos": len(set(data.groups[data.train_only].tolist())),
        "n_frames": data.n_samples,
        "n_tested_frames": len(tested),
        "n_folds": sum(1 for f in folds if len(f.test_idx)),
    }
