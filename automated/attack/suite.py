"""Run the attack suite: recognizers x attackers x identity subsets -> a tidy table.

seeds/000_0b74979cb8a3f1c3.txt, section 5.4 (evaluation framework, Fig. 4): the *selector*
picks a subset of identities, the *splitter* splits each identity's samples 75/25, each
attacker's training set takes clear or anonymized samples, and each recognition system is
trained and tested. The worst case of an anonymization is the highest accuracy any
recognizer x attacker pair reaches (sections 4.2.2 and 5.2); chance level is the ideal
bound and clear-on-clear accuracy the worst-case bound.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from .attackers import DEFAULT_ATTACKERS, Attacker, build_test_set, build_training_set, get_attackers
from .data import AttackData
from .model_cache import FittedModelCache
from .names import ALL
from .protocol import (
    Split,
    accuracy,
    chance_level,
    chance_normalised_accuracy,
    selection_split,
    split_train_test,
)
from .selection import (
    SELECTION_STRATEGIES,
    center_subset,
    classification_subset,
    distinctive_subset,
    halving_subset_sizes,
    metadata_subset,
    per_identity_accuracy,
    random_subsets,
)

__all__ = [
    "AttackData",
    "run_attack_suite",
    "worst_case",
    "accuracy_table",
    "attack_predictions",
    "fit_predict",
]

TABLE_COLUMNS = [
    "recognizer",
    "attacker",
    "selection",
    "subset_size",
    "repeat",
    "n_identities",
    "n_train",
    "n_test",
    "accuracy",
    "chance_level",
    "chance_normalised",
    "fit_s",
    "predict_s",
]


def fit_predict(
    data: AttackData,
    split: Split,
    factory: Callable,
    attacker: Attacker,
    identities: Sequence,
    seed: int,
    *,
    restorer: Callable | None = None,
    restorers: dict | None = None,
    models: FittedModelCache | None = None,
):
    """Train one recognizer as one attacker on ``split.train_idx`` and predict the test samples.

    Only samples of ``identities`` are used. The reversal attacker (``attacker.restores``)
    first fits a restorer (``restorer()``, default ``reversal.RestorationNet``) on the
    (masked, clear) training pairs and applies it to the masked test samples; fitted
    restorers are kept in ``restorers`` (keyed by the training samples) so every
    recognizer of a suite reuses one. With ``models``, a recognizer trained on clear
    samples only (clear, naive and reversal attackers) is taken from or put into that
    cache (``model_cache.FittedModelCache``: by the training set's content and the
    recognizer's settings), and so are the clear attacker's predictions; an attacker
    trained or tested on masked samples reuses (read only) a model and predictions whose
    training and test crops are byte for byte its own (a masking that leaves the faces
    unchanged); results are those of a fresh fit.

    Returns
    -------
    test_idx : ndarray of int
    y_test, y_pred : ndarray of shape (n_test,)
    n_train : int
    timing : dict
        ``fit_s`` and ``predict_s`` in wall seconds (``fit_s`` includes fitting the
        restorer when it was not cached).
    """
    in_subset = np.isin(data.identities, list(identities))
    train_idx = split.train_idx[in_subset[split.train_idx]]
    test_idx = split.test_idx[in_subset[split.test_idx]]
    X_train, y_train = build_training_set(data, train_idx, attacker, seed=seed)
    X_test, y_test = build_test_set(data, test_idx, attacker)
    started = time.perf_counter()
    if attacker.restores:
        X_test = _restorer_for(data, train_idx, restorer, restorers).transform(X_test)
    key, estimator = None, None
    if models is not None and attacker.masked_train_fraction == 0.0:  # clear samples only
        estimator, key = models.fitted(factory, X_train, y_train)
    elif models is not None:  # masked samples: only a model of identical training crops is reused
        estimator, key = models.lookup(factory, X_train, y_train)
    if estimator is None:
        estimator, key = factory().fit(X_train, y_train), None
    fitted = time.perf_counter()
    y_pred = None
    if key is not None and not attacker.test_masked:  # clear on clear: no masked sample at all
        y_pred = models.predict(estimator, key, X_test)
    elif key is not None:  # masked test crops equal to stored clear ones (read only)
        y_pred = models.stored_prediction(key, X_test)
    if y_pred is None:
        y_pred = np.asarray(estimator.predict(X_test))
    timing = {"fit_s": fitted - started, "predict_s": time.perf_counter() - fitted}
    return test_idx, y_test, y_pred, len(train_idx), timing


def _restorer_for(data: AttackData, train_idx, restorer, restorers):
    key = np.asarray(train_idx).tobytes()
    if restorers is not None and key in restorers:
        return restorers[key]
    if restorer is None:
        from .reversal import RestorationNet as restorer
    model = restorer().fit(data.masked[train_idx], data.clear[train_idx])
    if restorers is not None:
        restorers[key] = model
    return model


def classification_ranking(
    data: AttackData,
    split: Split,
    recognizer: Callable,
    *,
    test_fraction: float = 0.25,
    gap: int = 0,
    seed: int = 0,
) -> dict:
    """Per-identity clear-on-clear accuracy for the Classification strategy, off the test set.

    The recognizer is trained and tested on clear samples of ``protocol.selection_split``
    (a split of ``split.train_idx``), so the identities are ranked without looking at the
    test samples the suite then reports (seeds/000 section 4.2.3 ranks by clear-data
    accuracy; ranking on the reported split would pick identities for doing well on
    exactly those samples).

    Returns
    -------
    dict label -> float in [0, 1]
        ``selection.per_identity_accuracy`` on the inner validation samples; an identity
        with no validation sample (only the attacker's own videos) ranks last with 0.
    """
    inner = selection_split(
        split, data.identities, test_fraction=test_fraction, gap=gap, seed=seed, **_sample_layout(data)
    )
    _, y_val, y_pred, _, _ = fit_predict(
        data, inner, recognizer, get_attackers(["clear"])[0], data.identity_labels, seed
    )
    return {label: 0.0 for label in data.identity_labels} | per_identity_accuracy(y_val, y_pred)


def _subsets(
    data: AttackData,
    split: Split,
    strategies,
    sizes,
    *,
    recognizers,
    n_random_repeats,
    classification_recognizer,
    test_fraction,
    gap,
    seed,
):
    """Yield ``(selection, subset_size, repeat, identities)``; the full set once as "all"."""
    labels = data.identity_labels
    n = len(labels)
    yield ALL, n, 0, labels
    per_identity = None
    for strategy in strategies:
        for k in sizes:
            if k >= n:
                continue  # every strategy selects everyone: already run as "all"
            if strategy == "random":
                for repeat, subset in enumerate(
                    random_subsets(labels, k, n_repeats=n_random_repeats, seed=seed)
                ):
                    yield strategy, k, repeat, subset
                continue
            if strategy == "classification":
                if per_identity is None:
                    name = classification_recognizer or next(iter(recognizers))
                    per_identity = classification_ranking(
                        data, split, recognizers[name], test_fraction=test_fraction, gap=gap, seed=seed
                    )
                subset = classification_subset(per_identity, k)
            elif strategy == "metadata":
                subset = metadata_subset(data.identity_metadata.loc[labels], k)
            elif strategy == "distinctive":
                subset = distinctive_subset(data.features, data.identities, k)
            else:
                subset = center_subset(data.features, data.identities, k)
            yield strategy, k, 0, subset


def _sample_layout(data: AttackData) -> dict:
    """Where ``data``'s samples come from, as the split functions of ``protocol`` take it:
    videos as groups, frame times, attacker-only samples."""
    return {"groups": data.groups, "time_index": data.time_index, "train_only": data.train_only}


def _split(data, *, test_fraction: float, gap: int, seed: int, within_video: bool):
    """``protocol.split_train_test`` of ``data``'s samples, one call for the suite and its predictions."""
    return split_train_test(
        data.identities,
        test_fraction=test_fraction,
        gap=gap,
        seed=seed,
        within_groups=within_video,
        **_sample_layout(data),
    )


def _check_selection(data: AttackData, strategies) -> None:
    for strategy in strategies:
        if strategy not in SELECTION_STRATEGIES:
            raise ValueError(
                f"unknown selection {strategy!r}; known: {', '.join((ALL,) + SELECTION_STRATEGIES)}"
            )
        if strategy in ("distinctive", "center") and data.features is None:
            raise ValueError(f"selection {strategy!r} needs AttackData.features (clear feature vectors)")
        if strategy == "metadata":
            if data.identity_metadata is None:
                raise ValueError("selection 'metadata' needs AttackData.identity_metadata")
            missing = sorted(set(data.identity_labels) - set(data.identity_metadata.index))
            if missing:
                raise ValueError(f"identity_metadata has no row for identities {missing}")


def _subset_sizes(n_identities: int, subset_sizes, with_strategies: bool) -> list[int]:
    """Subset sizes, largest first: the given ones, else halvings of the identity set when a
    selection strategy runs, else the full set only."""
    if subset_sizes is None:
        return halving_subset_sizes(n_identities) if with_strategies else [n_identities]
    return sorted({int(k) for k in subset_sizes}, reverse=True)


def _scores(y_test, y_pred, n_identities: int, n_train: int) -> dict:
    """The score columns of one table row (``TABLE_COLUMNS``)."""
    acc = accuracy(y_test, y_pred)
    return {
        "n_identities": n_identities,
        "n_train": n_train,
        "n_test": len(y_test),
        "accuracy": acc,
        "chance_level": chance_level(n_identities),
        "chance_normalised": chance_normalised_accuracy(acc, n_identities),
    }


def run_attack_suite(
    data: AttackData,
    *,
    recognizers: Mapping[str, Callable],
    attackers: Sequence = DEFAULT_ATTACKERS,
    selection: Sequence[str] = (ALL,),
    subset_sizes: Sequence[int] | None = None,
    n_random_repeats: int = 5,
    classification_recognizer: str | None = None,
    test_fraction: float = 0.25,
    gap: int = 0,
    seed: int = 0,
    progress: Callable[[dict], None] | None = None,
    within_video: bool = False,
    restorer: Callable | None = None,
    models: FittedModelCache | None = None,
) -> pd.DataFrame:
    """Train and test every recognizer x attacker on every identity subset (one split).

    One seeded 75/25 split (``protocol.split_train_test``): by video for identities with
    several videos, by time segment inside the video otherwise (or inside every video
    with ``within_video``). Frames of one recording on both sides of a split let an
    attacker recognise the scene, clothes and lighting rather than the person: on video
    this table is the *scene-memorisation* figure, to be shown apart from the headline
    cross-video protocol (``crossvideo.run_cross_video_suite``), never as the worst case.
    On independent stills (ORL) it is the paper's protocol (seeds/000 section 5.4).
    Samples of the attacker's own videos (``AttackData.roles``) are always trained on.

    Parameters
    ----------
    data : AttackData
        Aligned clear and masked samples with identities (and groups / time index).
    recognizers : mapping name -> zero-argument factory
        Each factory returns a fresh sklearn-like estimator with ``fit(X, y)`` and
        ``predict(X)`` over samples of ``data`` (e.g. ``recognizers.FACE_RECOGNIZERS``, or
        gait recognizers over skeleton sequences).
    attackers : sequence of str or Attacker, default all of ``attackers.ATTACKERS``
        ``clear``, ``naive``, ``parrot_25``, ``parrot_50``, ``parrot_75``, ``parrot``; also
        ``reversal`` (restores masked test samples first, ``reversal.py``).
    selection : sequence of str, default ("all",)
        ``"all"`` (the full identity set) and/or strategies of ``selection.py``:
        ``random``, ``classification``, ``metadata``, ``distinctive``, ``center``. The full
        set is always evaluated (as ``"all"``).
    subset_sizes : sequence of int, optional
        Default: ``halving_subset_sizes(n_identities)`` when a strategy is chosen.
    n_random_repeats : int, default=5
        Subsets drawn per size by the Random strategy.
    classification_recognizer : str, optional
        Recognizer of the Classification strategy (default: the first one).
    test_fraction, gap, seed
        Passed to ``protocol.split_train_test`` (``gap`` in frames); ``seed`` also fixes
        the %-parrot samples and the random subsets.
    progress : callable, optional
        Called with each finished row (dict), e.g. to log or update a run record.
    within_video : bool, default=False
        Split every video in time (``split_train_test(within_groups=True)``).
    restorer : callable, optional
        Factory of the reversal attacker's restorer (default ``reversal.RestorationNet``).
    models : model_cache.FittedModelCache, optional
        Reuse recognizers trained on clear samples only (``fit_predict``).

    Returns
    -------
    pandas.DataFrame
        One row per (recognizer, attacker, selection, subset_size, repeat), columns
        ``TABLE_COLUMNS``: ``n_identities``, ``n_train``, ``n_test`` (samples),
        ``accuracy`` in [0, 1], ``chance_level`` = 1 / n_identities,
        ``chance_normalised`` = (accuracy - chance) / (1 - chance), ``fit_s`` and
        ``predict_s`` (wall seconds, including feature extraction not yet cached).

    Raises
    ------
    ValueError
        For an unknown attacker or selection, a strategy without the data it needs
        (features, metadata), fewer than 2 identities, or a split error
        (``protocol.split_train_test``).
    """
    if not recognizers:
        raise ValueError("recognizers is empty: give at least one name -> factory")
    attacker_list = get_attackers(attackers)
    strategies = [s for s in selection if s != ALL]
    _check_selection(data, strategies)
    sizes = _subset_sizes(len(data.identity_labels), subset_sizes, bool(strategies))
    split = _split(data, test_fraction=test_fraction, gap=gap, seed=seed, within_video=within_video)
    rows = []
    restorers: dict = {}
    subsets = _subsets(
        data,
        split,
        strategies,
        sizes,
        recognizers=recognizers,
        n_random_repeats=n_random_repeats,
        classification_recognizer=classification_recognizer,
        test_fraction=test_fraction,
        gap=gap,
        seed=seed,
    )
    for strategy, k, repeat, identities in subsets:
        for name, factory in recognizers.items():
            for attacker in attacker_list:
                _, y_test, y_pred, n_train, timing = fit_predict(
                    data,
                    split,
                    factory,
                    attacker,
                    identities,
                    seed,
                    restorer=restorer,
                    restorers=restorers,
                    models=models,
                )
                row = {
                    "recognizer": name,
                    "attacker": attacker.name,
                    "selection": strategy,
                    "subset_size": k,
                    "repeat": repeat,
                    **_scores(y_test, y_pred, len(identities), n_train),
                    **timing,
                }
                rows.append(row)
                if progress is not None:
                    progress(row)
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def accuracy_table(
    table: pd.DataFrame, *, selection: str = ALL, subset_size: int | None = None, value: str = "accuracy"
) -> pd.DataFrame:
    """Recognizer x attacker matrix of ``value`` for one subset (mean over repeats).

    ``subset_size`` defaults to the largest size present for ``selection``.
    """
    rows = _rows_of(table, selection, subset_size)
    return rows.pivot_table(index="recognizer", columns="attacker", values=value, aggfunc="mean")


def _rows_of(table: pd.DataFrame, selection: str, subset_size: int | None) -> pd.DataFrame:
    rows = table[table["selection"] == selection]
    if rows.empty:
        raise ValueError(f"no rows with selection {selection!r}")
    size = rows["subset_size"].max() if subset_size is None else subset_size
    rows = rows[rows["subset_size"] == size]
    if rows.empty:
        raise ValueError(f"no rows with selection {selection!r} and subset_size {subset_size}")
    return rows


def worst_case(
    table: pd.DataFrame, *, selection: str = ALL, subset_size: int | None = None, baseline: str = "clear"
) -> dict:
    """The worst case of the anonymization: the strongest recognizer x attacker pair.

    seeds/000, sections 4.2.2 and 5.2. Accuracies are averaged over repeats (Random
    subsets) of one identity subset (default: the full set). The clear baseline is not an
    attack on the masking and is reported separately as the bound.

    Returns
    -------
    dict
        ``accuracy`` (highest mean accuracy of a non-baseline pair), ``chance_normalised``,
        ``recognizer`` and ``attacker`` of that pair (ties: the first in table order),
        ``chance_level``, ``n_identities``, ``selection``, ``subset_size``,
        ``clear_accuracy`` and ``clear_recognizer`` (best clear-on-clear recognizer; None
        when the baseline was not run).

    Raises
    ------
    ValueError
        If the subset has no non-baseline row.
    """
    rows = _rows_of(table, selection, subset_size)
    keys = ["recognizer", "attacker"]
    means = rows.groupby(keys, sort=False)[
        ["accuracy", "chance_normalised", "chance_level", "n_identities"]
    ].mean()
    attacks = means[means.index.get_level_values("attacker") != baseline]
    if attacks.empty:
        raise ValueError("no attacker other than the clear baseline in the table")
    best_pair = attacks["accuracy"].idxmax()
    best = attacks.loc[best_pair]
    clear = means[means.index.get_level_values("attacker") == baseline]
    result = {
        "accuracy": float(best["accuracy"]),
        "chance_normalised": float(best["chance_normalised"]),
        "recognizer": best_pair[0],
        "attacker": best_pair[1],
        "chance_level": float(best["chance_level"]),
        "n_identities": int(round(best["n_identities"])),
        "selection": selection,
        "subset_size": int(rows["subset_size"].iloc[0]),
        "clear_accuracy": None,
        "clear_recognizer": None,
    }
    if not clear.empty:
        clear_pair = clear["accuracy"].idxmax()
        result["clear_accuracy"] = float(clear.loc[clear_pair, "accuracy"])
        result["clear_recognizer"] = clear_pair[0]
    return result


def attack_predictions(
    data: AttackData,
    *,
    recognizer: Callable,
    attacker,
    test_fraction: float = 0.25,
    gap: int = 0,
    seed: int = 0,
    within_video: bool = False,
    restorer: Callable | None = None,
    models: FittedModelCache | None = None,
) -> pd.DataFrame:
    """Per-test-sample predictions of one recognizer x attacker pair on the full set.

    Used for per-video reporting (e.g. which masked videos the worst-case pair
    re-identifies). Same split and %-parrot choice as ``run_attack_suite`` with the same
    arguments.

    Returns
    -------
    pandas.DataFrame
        Columns ``sample`` (index into ``data``), ``group``, ``identity``, ``predicted``,
        ``correct`` (bool).
    """
    split = _split(data, test_fraction=test_fraction, gap=gap, seed=seed, within_video=within_video)
    (attacker_obj,) = get_attackers([attacker])
    test_idx, y_test, y_pred, _, _ = fit_predict(
        data, split, recognizer, attacker_obj, data.identity_labels, seed, restorer=restorer
    )
    return pd.DataFrame(
        {
            "sample": test_idx,
            "group": data.groups[test_idx],
            "identity": y_test,
            "predicted": y_pred,
            "correct": y_test == y_pred,
        }
    )
