"""Every baseline on the London face photos: attack accuracy, EER, linkability, privacy fairness.

``python -m benchmarks attack_photos [--quick] [--baselines a,b] [--recognizers a,b]
[--identities N]``. Material and protocol: ``automated.attack.photos`` (102 people of the
Face Research Lab London Set, a neutral and a smiling photo each; enrol one, probe with
the other, both directions; chance 1/102). Per baseline of
``automated.anonymizers.BASELINE_METHODS``:

- recognizers (default dlib_svm, dlib_knn, lbph, eigenfaces, cnn; ArcFace when its pack
  is under ``$DEID_MODELS_DIR``; ``dlib_finetuned`` on request: about 20 CPU s per fit of 280 crops) x the clear
  bound, naive and parrot attackers;
- the declared attacker (``attack.declared``): parrot with the recognizer strongest on a
  seeded 30 % of the identities (development, never tested), reported on the other 70 %
  with a 95 % bootstrap interval over identities; the worst case over all pairs on the
  same tested identities beside it, with the number of pairs it is the maximum of;
- verification of masked probes against the clear gallery with dlib's pretrained
  embedding (the naive attacker's scores; all identities, both directions): EER with its
  bootstrap interval over identities, and linkability D<->sys
  (``attack.linkability``), beside the median D<->sys of random relabellings
  (``linkability_chance``: the histogram estimate is biased upwards with few mated
  scores, so D<->sys means something only against it);
- the linking attacker on masked photos only (``automated.temporal.linking_attack``):
  EER, D<->sys, its chance median and the permutation p-value (identities shuffled over
  the photos);
- privacy fairness (``fairness.privacy``) of the declared attacker's per-identity success
  (tested identities) by self-reported gender and ethnicity: group means with bootstrap
  intervals over identities, the spread with its permutation p-value, Mean-GC-SQFR with
  its interval; and per group the verification EER of its probes (all identities, with
  its bootstrap interval) and their D<->sys beside its chance median.

Tables: the summary (returned), the accuracy of every recognizer x attacker (tested
identities), and the fairness table (printed). Scaled photos, detections, masked crops and dlib embeddings are
kept in ``photos/`` under ``DEID_BENCH_ATTACK_DIR`` and reused by later runs.
``--quick``: 24 identities spread through the table, three baselines, two recognizers,
200 resamples (45-70 s). Measured (2026-12-02, the shared 2-core machine at load average
about 20, one process): the full run took 2309 s wall, 83-182 s per baseline, masks and
embeddings computed on the way; later runs reuse them. On internal-face crops blur_face
and blur_frame give identical crops (the crop lies inside the blurred face region), so
their rows agree to the last digit.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np

from evalsite import conf

ATTACKERS = ("clear", "naive", "parrot")
RECOGNIZERS = ("dlib_svm", "dlib_knn", "lbph", "eigenfaces", "cnn")
QUICK_BASELINES = ("identity", "blur_face", "block_permute_keyed")
QUICK_RECOGNIZERS = ("dlib_knn", "eigenfaces")
ATTRIBUTES = ("gender", "ethnicity")
QUICK_IDENTITIES = 24


def work_dir() -> Path:
    """``photos`` under ``DEID_BENCH_ATTACK_DIR`` (the attack benchmarks' reusable files)."""
    path = Path(conf.value("DEID_BENCH_ATTACK_DIR")) / "photos"
    path.mkdir(parents=True, exist_ok=True)
    return path


def data_dir() -> Path:
    """``DEID_DATA_DIR`` (``evalsite.conf``; this benchmark needs no Django settings)."""
    return Path(conf.value("DEID_DATA_DIR"))


def parse(argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks attack_photos")
    parser.add_argument("--quick", action="store_true", help="24 identities, 3 baselines, 2 recognizers")
    parser.add_argument("--baselines", help="comma-separated BASELINE_METHODS names (default all)")
    parser.add_argument("--recognizers", help="comma-separated FACE_RECOGNIZERS names")
    parser.add_argument("--identities", type=int, help="use the first N identities of identities.csv")
    return parser.parse_args(list(argv))


def _arcface_available() -> bool:
    from automated.insightface_backend import pack_dir

    try:
        return pack_dir().is_dir()
    except Exception:  # no models folder configured
        return False


def _photos(root, identities, token):
    """The PhotoSet, its face boxes/eyes and clear crops (cached under ``token``)."""
    from automated.attack.photos import (
        WORK_SIZE_PX,
        PhotoSet,
        detect_faces,
        face_crops,
        load_london_faces,
        london_metadata,
        london_table,
    )
    from automated.cache_files import save_npz
    from automated.detection import MediaPipeFaceDetector

    cached = work_dir() / f"photos_{token}.npz"
    if cached.is_file():
        with np.load(cached) as stored:
            metadata = london_metadata(london_table(root, identities))
            photos = PhotoSet(stored["images"], stored["identities"], stored["expressions"], metadata)
            return photos, stored["boxes"], stored["eyes"], stored["clear"]
    photos = load_london_faces(root, identities=identities, size_px=WORK_SIZE_PX)
    with MediaPipeFaceDetector() as detector:
        boxes, eyes = detect_faces(photos.images, detector)
    clear = face_crops(photos.images, boxes)
    save_npz(
        cached,
        compressed=False,
        images=photos.images,
        identities=photos.identities,
        expressions=photos.expressions,
        boxes=boxes,
        eyes=eyes,
        clear=clear,
    )
    return photos, boxes, eyes, clear


def _masked_crops(photos, boxes, eyes, method, token):
    from automated.attack.photos import face_crops, mask_photos
    from automated.cache_files import save_npz

    cached = work_dir() / f"masked_{method}_{token}.npz"
    if cached.is_file():
        with np.load(cached) as stored:
            return stored["crops"]
    crops = face_crops(mask_photos(photos.images, boxes, eyes, method), boxes)
    save_npz(cached, compressed=False, crops=crops)
    return crops


def run(argv=()) -> list[dict]:
    from automated.anonymizers import BASELINE_METHODS
    from automated.attack.linkability import linkability, linkability_chance
    from automated.attack.declared import bootstrap_eer, run_declared_attack
    from automated.attack.photos import WORK_SIZE_PX, expression_folds, photo_attack_data, run_photo_attack
    from automated.attack.recognizers import EMBEDDING_CACHE, DlibEmbedding, get_recognizers
    from automated.attack.verification import similarity_from_embeddings
    from automated.cache_files import settings_token
    from automated.temporal import linking_attack
    from fairness.privacy import privacy_fairness

    from .__main__ import print_table

    options = parse(argv)
    # one photo per identity and fold: sklearn's "more classes than half the samples" note is expected
    warnings.filterwarnings("ignore", message="The number of unique classes is greater than 50%")
    quick = options.quick
    root = data_dir() / "faces" / "london_face_set"
    n_identities = options.identities or (QUICK_IDENTITIES if quick else None)
    identities = _spread_ids(root, n_identities) if n_identities else None
    baselines = (
        options.baselines.split(",")
        if options.baselines
        else list(QUICK_BASELINES if quick else BASELINE_METHODS)
    )
    names = (
        options.recognizers.split(",")
        if options.recognizers
        else list(QUICK_RECOGNIZERS if quick else RECOGNIZERS)
    )
    if not options.recognizers and not quick and _arcface_available():
        names += ["arcface_svm", "arcface_knn"]
    recognizers = get_recognizers(names)
    unknown = sorted(set(baselines) - set(BASELINE_METHODS))
    if unknown:
        raise SystemExit(f"unknown baseline(s) {unknown}; known: {', '.join(BASELINE_METHODS)}")
    n_resamples = 200 if quick else 1000
    if EMBEDDING_CACHE.directory is None:
        EMBEDDING_CACHE.directory = work_dir() / "embeddings"
        EMBEDDING_CACHE.directory.mkdir(exist_ok=True)

    started = time.perf_counter()
    token = settings_token("london", WORK_SIZE_PX, ",".join(identities) if identities else "all")
    photos, boxes, eyes, clear = _photos(root, identities, token)
    embed = DlibEmbedding().transform
    print(
        f"{len(photos.metadata)} identities, {len(photos)} photos ({time.perf_counter() - started:.1f} s to load); "
        f"recognizers {', '.join(names)}; attackers {', '.join(ATTACKERS)}",
        flush=True,
    )
    expression = photos.expressions
    probe_side, gallery_side = np.meshgrid(expression, expression, indexing="ij")
    off_protocol = probe_side == gallery_side  # enrol one expression, probe with the other

    def attack(subset):
        return run_photo_attack(
            subset, expression_folds(expression[subset.groups]), recognizers=recognizers, attackers=ATTACKERS
        )

    summary_rows, pair_rows, fairness_rows = [], [], []
    for method in baselines:
        t0 = time.perf_counter()
        data = photo_attack_data(photos, clear, _masked_crops(photos, boxes, eyes, method, token))
        declared = run_declared_attack(data, attack, n_resamples=n_resamples)
        worst, table = declared.worst_case, declared.tested.summary()
        masked_embeddings = embed(data.masked)
        scores = similarity_from_embeddings(masked_embeddings, embed(data.clear))
        eer, eer_low, eer_high = bootstrap_eer(
            scores, data.identities, data.identities, exclude=off_protocol, n_resamples=n_resamples
        )
        same = data.identities[:, None] == data.identities[None, :]
        genuine, impostor = scores[same & ~off_protocol], scores[~same & ~off_protocol]
        linked = linking_attack(masked_embeddings, data.groups, data.identities, n_permutations=200)
        summary_rows.append(
            {
                "baseline": method,
                "declared": f"{declared.recognizer} x {declared.attacker}",
                "declared_acc": f"{declared.accuracy:.3f} [{declared.ci_low:.3f}, {declared.ci_high:.3f}]",
                "worst_case": worst["accuracy"],
                "worst_pair": f"{worst['recognizer']} x {worst['attacker']}",
                "pairs": declared.n_pairs,
                "clear_bound": worst["clear_accuracy"],
                "chance": declared.chance_level,
                "ver_eer": f"{eer:.3f} [{eer_low:.3f}, {eer_high:.3f}]",
                "ver_dsys": linkability(genuine, impostor).d_sys,
                "ver_dsys_chance": float(np.median(linkability_chance(genuine, impostor))),
                "link_eer": linked.eer,
                "link_dsys": linked.d_sys,
                "link_dsys_chance": float(np.median(linked.null_d_sys)),
                "link_p": linked.p_d_sys,
                "wall_s": time.perf_counter() - t0,
            }
        )
        print(summary_rows[-1], flush=True)
        pair_rows.append(
            {"baseline": method}
            | {f"{r.recognizer}:{r.attacker}": r.accuracy for r in table.itertuples(index=False)}
        )
        per_identity = declared.tested.per_identity()
        headline = per_identity[
            (per_identity["recognizer"] == declared.recognizer)
            & (per_identity["attacker"] == declared.attacker)
        ].set_index("identity")
        for attribute in ATTRIBUTES:
            fairness_rows.append(
                _fairness_row(
                    method, attribute, headline["accuracy"], photos.metadata, n_resamples, privacy_fairness
                )
                | {
                    "ver_eer, dsys (chance) by group": _group_verification(
                        scores, data.identities, off_protocol, photos.metadata[attribute], n_resamples
                    )
                }
            )
    split = declared.split
    print(
        f"\ndeclared attacker: parrot with the recognizer strongest on {len(split.development)} development "
        f"identities (seeded split, never tested); figures on the other {len(split.tested)}"
    )
    print(
        "\n-- accuracy of every recognizer x attacker on the tested identities (mean of the two directions)"
    )
    print_table(pair_rows)
    print(
        "\n-- privacy fairness of the declared attacker (tested identities): per-identity success by group, mean [95 % bootstrap "
        "interval over identities]; spread = max - min group mean, p by permuting group labels; "
        "SQFR on privacy = 1 - success"
    )
    notes = sorted({w for row in fairness_rows for w in row.pop("_warnings")})
    print_table(fairness_rows)
    for warning in notes:
        print(f"warning: {warning}")
    print(f"\ntotal wall time {time.perf_counter() - started:.1f} s", flush=True)
    return summary_rows


def _fairness_row(method, attribute, success, metadata, n_resamples, privacy_fairness) -> dict:
    labels = metadata.loc[success.index, attribute].to_numpy()
    report = privacy_fairness(
        success.to_numpy(), labels, n_resamples=n_resamples, n_permutations=n_resamples, random_state=0
    )
    groups = "; ".join(
        f"{name} {row['success']:.2f} [{row['ci_low']:.2f}, {row['ci_high']:.2f}] n={row['n']}"
        for name, row in sorted(report["groups"].items(), key=lambda item: -item[1]["n"])
    )
    sqfr = report["measures"]["Mean-GC-SQFR"]
    return {
        "baseline": method,
        "attribute": attribute,
        "groups (success)": groups,
        "spread": report["spread"]["estimate"],
        "p": report["spread"]["p_value"],
        "differs": "yes" if report["spread"]["differs"] else "no",
        "mean_gc_sqfr": "n/a"
        if sqfr.get("estimate") is None
        else f"{sqfr['estimate']:.3f} [{sqfr.get('ci_low', float('nan')):.3f}, {sqfr.get('ci_high', float('nan')):.3f}]",
        "_warnings": report["warnings"],
    }


def _group_verification(scores, identities, off_protocol, labels, n_resamples) -> str:
    """Per group of >= 2 identities: the dlib verification EER [bootstrap interval] of its
    probes and their D<->sys with its chance median (``linkability_chance``)."""
    from automated.attack.declared import bootstrap_eer
    from automated.attack.linkability import linkability, linkability_chance

    group_of = labels.reindex(identities).to_numpy()
    same = identities[:, None] == identities[None, :]
    parts = []
    for name, n in labels.value_counts().items():
        if n < 2:
            continue
        rows = group_of == name
        eer, low, high = bootstrap_eer(
            scores[rows], identities[rows], identities, exclude=off_protocol[rows], n_resamples=n_resamples
        )
        used = ~off_protocol[rows]
        genuine, impostor = scores[rows][same[rows] & used], scores[rows][~same[rows] & used]
        d_sys = linkability(genuine, impostor).d_sys
        chance = float(np.median(linkability_chance(genuine, impostor, n_permutations=100)))
        parts.append(f"{name} {eer:.2f} [{low:.2f}, {high:.2f}], {d_sys:.2f} ({chance:.2f})")
    return "; ".join(parts)


def _spread_ids(root, n) -> list[str]:
    """``n`` identities evenly spaced through identities.csv (the table's groups are interleaved)."""
    from automated.attack.photos import london_table

    ids = london_table(root)["face_id"].tolist()
    if not 4 <= n <= len(ids):
        raise SystemExit(f"--identities must be between 4 and {len(ids)}, got {n}")
    return [ids[i] for i in np.unique(np.linspace(0, len(ids) - 1, n).round().astype(int))]
