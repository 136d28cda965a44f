"""The demo's privacy-fairness example on real demographic groups: the London face photos.

The demo campaign's GRID and CREMA-D speakers have no usable demographic labels, so the
fairness example with real groups is computed apart, on the Face Research Lab London Set
(DeBruine & Jones 2017, CC BY 4.0; ``automated.attack.photos``): 102 adults, a neutral and
a smiling studio photo each, self-reported gender and ethnicity. Nothing here enters an
evaluated lineup or the video campaign (a studio photo beside video stills would be a
style cue); the table is written beside the campaign's reports.

Per baseline of :data:`LONDON_METHODS` the demo runs: the masking of every photo
(``mask_photos``), the pretrained dlib embedder as attacker (``identification_success``:
each masked photo named after the nearest clear photo of the other expression, both
directions), then ``fairness.privacy.privacy_fairness_by_attribute`` by gender and
ethnicity: per group the mean success with its 95 % bootstrap interval over identities,
the spread between groups with its permutation p-value, and warnings for groups under 10
identities. Embeddings are cached on disk (``EMBEDDING_CACHE``), so a re-run is quick.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

from automated.cache_files import atomic_file
from evalsite.spreadsheet import SafeDictWriter

#: The baselines of the example (one weak, one pixel-level, one keyed): the demo's methods
#: among them are run.
LONDON_METHODS = ("blur_face", "pixelate_face", "block_permute_keyed")
ATTRIBUTES = ("gender", "ethnicity")
COLUMNS = [
    "method",
    "attribute",
    "group",
    "n_identities",
    "success",
    "ci_low",
    "ci_high",
    "spread",
    "p_value",
    "differs",
    "warning",
]


def london_privacy_fairness(
    data_dir: Path,
    reports_dir: Path,
    methods,
    *,
    cache_dir: Path | None = None,
    n_resamples: int = 1000,
    log: Callable[[str], None] = print,
) -> list[Path]:
    """Write ``london_privacy_fairness.csv`` and ``.json`` for ``methods`` among :data:`LONDON_METHODS`.

    Parameters
    ----------
    data_dir : Path
        The real data folder (``faces/london_face_set`` below it).
    reports_dir : Path
        Where the two files go.
    methods : iterable of str
        The demo's baseline methods; only those in :data:`LONDON_METHODS` run.
    cache_dir : Path, optional
        Folder for the embedding cache (default: none beyond this process).
    n_resamples : int, default=1000
        Bootstrap resamples and label permutations.

    Returns
    -------
    list of Path
        The files written; ``[]`` when no method is in :data:`LONDON_METHODS` or the London
        set is absent (logged).
    """
    from automated.attack.photos import (
        detect_faces,
        face_crops,
        identification_success,
        load_london_faces,
        mask_photos,
    )
    from automated.attack.recognizers import EMBEDDING_CACHE, DlibEmbedding
    from automated.detection import MediaPipeFaceDetector
    from fairness.privacy import privacy_fairness_by_attribute

    chosen = [m for m in LONDON_METHODS if m in set(methods)]
    root = Path(data_dir) / "faces" / "london_face_set"
    if not chosen:
        return []
    if not (root / "identities.csv").is_file():
        log(f"  London faces not found at {root}: privacy-fairness example skipped")
        return []
    if cache_dir is not None and EMBEDDING_CACHE.directory is None:
        Path(cache_dir).mkdir(parents=True, exist_ok=True)
        EMBEDDING_CACHE.directory = Path(cache_dir)
    photos = load_london_faces(root)
    with MediaPipeFaceDetector() as detector:
        boxes, eyes = detect_faces(photos.images, detector)
    embed = DlibEmbedding().transform
    clear = embed(face_crops(photos.images, boxes))
    rows, reports = [], {}
    for method in chosen:
        masked = embed(face_crops(mask_photos(photos.images, boxes, eyes, method), boxes))
        success = identification_success(masked, clear, photos.identities, photos.expressions)
        by_attribute = privacy_fairness_by_attribute(
            success,
            photos.metadata,
            list(ATTRIBUTES),
            n_resamples=n_resamples,
            n_permutations=n_resamples,
        )
        reports[method] = {"mean_success": float(success.mean()), "attributes": by_attribute}
        for attribute, report in by_attribute.items():
            if "error" in report:
                rows.append({"method": method, "attribute": attribute, "warning": report["error"]})
                continue
            spread = report["spread"]
            for group, figures in sorted(report["groups"].items(), key=lambda item: -item[1]["n"]):
                rows.append(
                    {
                        "method": method,
                        "attribute": attribute,
                        "group": group,
                        "n_identities": figures["n"],
                        "success": round(figures["success"], 4),
                        "ci_low": round(figures["ci_low"], 4),
                        "ci_high": round(figures["ci_high"], 4),
                        "spread": round(spread["estimate"], 4),
                        "p_value": round(spread["p_value"], 4),
                        "differs": spread["differs"],
                        "warning": "too few identities for the interval to mean much"
                        if figures["n"] < 10
                        else "",
                    }
                )
            log(
                f"  London faces, {method:20} by {attribute:9}: spread {spread['estimate']:.2f} "
                f"({spread['high_group']} vs {spread['low_group']}), p = {spread['p_value']:.3f}"
                f"{' differs' if spread['differs'] else ''}"
            )
    return write_files(reports_dir, rows, reports)


def write_files(reports_dir: Path, rows: list[dict], reports: dict) -> list[Path]:
    """The example's CSV (one row per method and attribute, :data:`COLUMNS`) and JSON (per
    method, the groups' figures) in ``reports_dir``; their paths.

    Both texts are made before either file is touched (a row or figure that cannot be written
    changes neither), then each file is written whole under a temporary name and renamed
    over the old one (``automated.cache_files.atomic_file``, with the ordinary file mode of
    the other reports): a reader, or a demo stopped mid-write, never sees half a file.
    """
    from automated.serialize import jsonable

    table = io.StringIO(newline="")
    writer = SafeDictWriter(table, fieldnames=COLUMNS)
    writer.writeheader()
    writer.writerows(rows)
    document = {
        "material": "Face Research Lab London Set (CC BY 4.0), 102 identities, 2 photos each",
        "attacker": "pretrained dlib embedder, nearest clear photo of the other expression",
        "source": "ISO/IEC 19795-10 differential performance, here of the attacker",
        "methods": reports,
    }
    texts = {
        reports_dir / "london_privacy_fairness.csv": table.getvalue(),
        reports_dir / "london_privacy_fairness.json": json.dumps(jsonable(document), indent=2),
    }
    for path, text in texts.items():
        with atomic_file(path, shared=True) as handle:
            handle.write(text.encode("utf-8"))
    return list(texts)
