"""Identity subset selection: a small, easily distinguished evaluation set.

seeds/000_0b74979cb8a3f1c3.txt, section 4.2.3: a reduced number of identities that are easy
to tell apart is a *hard* anonymization problem (hypotheses H4/H5, sections 5.2 and 6.3).
Strategies (each returns identity labels; deterministic given the seed):

- **Random**: repeated random subsets (baseline; report mean and spread).
- **Classification**: identities with the highest per-identity accuracy of a recognizer on
  clear data, measured on a split of the training samples (``protocol.selection_split``),
  never on the test samples the suite then reports (that would be optimistic).
- **Metadata**: metadata normalised to [0, 1] (each attribute weighs at most 1:
  ``normalise_metadata``); start from the pair at the greatest Euclidean distance, then
  repeatedly add the identity farthest from the average of the subset.
- **Distinctive** (Biometric Menagerie, Yager and Dunstone 2010): per identity a genuine
  score (largest distance of its feature vectors to its own mean: intra-class) and an
  impostor score (smallest distance of its mean to a feature vector of any other identity:
  inter-class); the identities with the best average of the two are kept.
- **Center**: start from the two identities whose mean feature vectors are farthest apart,
  then repeatedly add the identity whose mean lies farthest from the average mean vector of
  the subset.

Subset sizes halve from all identities down to three (section 5.2: "50%, 25%, 12.5%, ...,
until three identities remain").
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from .names import SELECTION_STRATEGIES as SELECTION_STRATEGIES  # its home is names (light)


def halving_subset_sizes(n_identities: int, *, minimum: int = 3) -> list[int]:
    """Subset sizes from all identities, halving (floor) down to ``minimum``.

    Examples
    --------
    >>> halving_subset_sizes(40)
    [40, 20, 10, 5, 3]
    >>> halving_subset_sizes(1000)
    [1000, 500, 250, 125, 62, 31, 15, 7, 3]

    Raises
    ------
    ValueError
        If ``n_identities`` < 2 (closed-set identification needs two identities).
    """
    if n_identities < 2:
        raise ValueError(f"need at least 2 identities, got {n_identities}")
    sizes = [n_identities]
    while sizes[-1] // 2 >= minimum:
        sizes.append(sizes[-1] // 2)
    if sizes[-1] > minimum:
        sizes.append(minimum)
    return sizes


def _check_k(k: int, n: int) -> None:
    if not 2 <= k <= n:
        raise ValueError(f"subset size must be in [2, {n}], got {k}")


def random_subsets(identities, k: int, *, n_repeats: int = 5, seed: int = 0) -> list[list]:
    """``n_repeats`` random subsets of ``k`` identities (Random strategy).

    Parameters
    ----------
    identities : array-like
        Identity labels (duplicates ignored; sorted first so the seed alone fixes the result).
    k : int
    n_repeats : int, default=5
        The paper repeats five times for face and gait (section 5.2).
    seed : int, default=0

    Returns
    -------
    list of n_repeats lists of k labels
    """
    labels = sorted(set(np.asarray(identities).tolist()))
    _check_k(k, len(labels))
    if n_repeats < 1:
        raise ValueError(f"n_repeats must be >= 1, got {n_repeats}")
    rng = np.random.default_rng(seed)
    return [
        sorted(labels[i] for i in rng.choice(len(labels), size=k, replace=False)) for _ in range(n_repeats)
    ]


def classification_subset(per_identity_accuracy: Mapping, k: int) -> list:
    """The ``k`` identities with the highest clear-data identification accuracy.

    Parameters
    ----------
    per_identity_accuracy : mapping label -> float in [0, 1]
        E.g. from ``per_identity_accuracy(y_true, y_pred)`` of a recognizer trained and
        tested on clear data (seeds/000 section 5.7 uses ArcFace for faces).
    k : int

    Returns
    -------
    list of k labels, best first; ties broken by label order.
    """
    _check_k(k, len(per_identity_accuracy))
    ranked = sorted(per_identity_accuracy.items(), key=lambda item: (-item[1], str(item[0])))
    return [label for label, _ in ranked[:k]]


def per_identity_accuracy(y_true, y_pred) -> dict:
    """Share of each identity's test samples predicted correctly: ``{label: float}``."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_true.shape != y_pred.shape or y_true.size == 0:
        raise ValueError(f"need equal, non-empty label arrays, got {y_true.shape} and {y_pred.shape}")
    return {label: float(np.mean(y_pred[y_true == label] == label)) for label in sorted(set(y_true.tolist()))}


def _farthest_point_order(vectors: np.ndarray, k: int) -> list[int]:
    """Indices: the farthest pair first, then repeatedly the row farthest from the subset mean.

    Shared by Metadata and Center (seeds/000 section 4.2.3). Ties go to the lower index.
    """
    distances = np.linalg.norm(vectors[:, None, :] - vectors[None, :, :], axis=2)
    first, second = np.unravel_index(np.argmax(distances), distances.shape)
    chosen = [int(min(first, second)), int(max(first, second))]
    while len(chosen) < k:
        centre = vectors[chosen].mean(axis=0)
        spread = np.linalg.norm(vectors - centre, axis=1)
        spread[chosen] = -np.inf
        chosen.append(int(np.argmax(spread)))
    return chosen


def _as_numbers(values: pd.Series) -> pd.Series | None:
    """The column as floats when every value is a number (also numbers stored as text,
    as the importer stores attributes); None when it is categorical."""
    if pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        return values.astype(float)
    try:
        return pd.to_numeric(values.astype(str).str.strip(), errors="raise").astype(float)
    except (ValueError, TypeError):
        return None


def normalise_metadata(metadata: pd.DataFrame) -> pd.DataFrame:
    """Metadata as numbers in [0, 1], each attribute weighing at most 1 in a distance.

    seeds/000 section 4.2.3: "we normalize each point of metadata information between 0
    and 1, and then we calculate the pair-wise Euclidean distance". Per column:

    - numbers (also numbers stored as text, e.g. ``"40"``): min-max scaled to [0, 1]; a
      constant column becomes 0;
    - a binary attribute (two categories): one 0/1 column named ``<column>_<second
      category>`` (categories sorted), so two identities that differ in it are at
      distance 1, like the two ends of a numeric attribute (one-hot's two columns would
      put them sqrt(2) apart);
    - three or more categories: one-hot columns scaled by 1/sqrt(2), so any two
      different categories are again at distance 1 (they differ in two columns);
    - a single category: one column of 0.

    Returns
    -------
    pandas.DataFrame
        Same index, float columns in [0, 1].

    Raises
    ------
    ValueError
        If the frame has no row or no column, or has missing values.
    """
    if metadata.empty:
        raise ValueError("identity metadata is empty")
    if metadata.isna().any().any():
        missing = metadata.columns[metadata.isna().any()].tolist()
        raise ValueError(f"identity metadata has missing values in columns {missing}")
    parts = []
    for column in metadata.columns:
        values = metadata[column]
        numbers = _as_numbers(values)
        if numbers is not None:
            span = numbers.max() - numbers.min()
            parts.append(((numbers - numbers.min()) / span if span > 0 else numbers * 0.0).rename(column))
            continue
        dummies = pd.get_dummies(values.astype(str), prefix=str(column), dtype=float)
        if dummies.shape[1] == 1:
            parts.append(dummies * 0.0)
        elif dummies.shape[1] == 2:
            parts.append(dummies.iloc[:, 1:])
        else:
            parts.append(dummies / np.sqrt(2.0))
    return pd.concat(parts, axis=1)


def metadata_subset(metadata: pd.DataFrame, k: int) -> list:
    """Metadata strategy: identities with the most diverse attributes.

    Parameters
    ----------
    metadata : pandas.DataFrame
        One row per identity (index: label), e.g. columns ``age`` (numeric) and ``gender``
        (categorical); normalised with ``normalise_metadata``.
    k : int

    Returns
    -------
    list of k labels in selection order (the farthest pair first).
    """
    _check_k(k, len(metadata))
    vectors = normalise_metadata(metadata).to_numpy(dtype=float)
    return [metadata.index[i] for i in _farthest_point_order(vectors, k)]


def identity_means(features, identities) -> tuple[list, np.ndarray]:
    """Sorted labels and the mean feature vector of each: ``(labels, (m, d) float64)``."""
    features = np.asarray(features, dtype=np.float64)
    identities = np.asarray(identities)
    if features.ndim != 2 or len(features) != len(identities):
        raise ValueError(
            f"features must have shape (n_samples, d) matching {len(identities)} identities, "
            f"got {features.shape}"
        )
    labels = sorted(set(identities.tolist()))
    return labels, np.stack([features[identities == label].mean(axis=0) for label in labels])


def genuine_impostor_scores(features, identities) -> pd.DataFrame:
    """Per-identity genuine and impostor scores of the Distinctive strategy (Fig. 2).

    Parameters
    ----------
    features : array-like of shape (n_samples, d)
        Feature vectors of clear samples (e.g. face embeddings; PCA of poses for gait).
    identities : array-like of shape (n_samples,)

    Returns
    -------
    pandas.DataFrame indexed by label, columns
        ``genuine``: largest Euclidean distance of the identity's vectors to its own mean
        (intra-class; lower is better); ``impostor``: smallest Euclidean distance of its
        mean to any vector of another identity (inter-class; higher is better);
        ``score``: their average with the genuine score negated, ``(impostor - genuine) / 2``
        (higher = more distinctive).
    """
    features = np.asarray(features, dtype=np.float64)
    identities = np.asarray(identities)
    labels, means = identity_means(features, identities)
    if len(labels) < 2:
        raise ValueError("impostor scores need at least 2 identities")
    rows = []
    for label, mean in zip(labels, means):
        own = identities == label
        genuine = np.linalg.norm(features[own] - mean, axis=1).max()
        impostor = np.linalg.norm(features[~own] - mean, axis=1).min()
        rows.append({"genuine": genuine, "impostor": impostor, "score": (impostor - genuine) / 2.0})
    return pd.DataFrame(rows, index=pd.Index(labels, name="identity"))


def distinctive_subset(features, identities, k: int) -> list:
    """Distinctive strategy: the ``k`` identities with the best genuine/impostor average.

    Returns
    -------
    list of k labels, most distinctive first; ties broken by label order.
    """
    scores = genuine_impostor_scores(features, identities)
    _check_k(k, len(scores))
    ranked = sorted(zip(scores.index, scores["score"]), key=lambda item: (-item[1], str(item[0])))
    return [label for label, _ in ranked[:k]]


def center_subset(features, identities, k: int) -> list:
    """Center strategy: identities whose mean feature vectors lie farthest apart.

    Returns
    -------
    list of k labels in selection order (the farthest pair first).
    """
    labels, means = identity_means(features, identities)
    _check_k(k, len(labels))
    return [labels[i] for i in _farthest_point_order(means, k)]
