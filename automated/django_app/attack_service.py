"""Run the attack suite on a submission: the thin Django adapter of ``automated.attack``.

An attack run is, in the shared run lifecycle (``lifecycle.py``, ``ATTACK_RUN``), one unit
per masked video that crops the faces (detected in the clear frame, the same box cropped
from both: ``attack.faces``) into the disk cache, then one final step that builds
``AttackData`` from those crops (identity = ``SourceVideo.identity``), runs
``run_attack_suite`` and stores the tidy table as ``AttackResult`` rows plus the
worst-case pair's accuracy per masked video, in one transaction. ``dispatch.py`` queues
the units as Celery tasks (several workers share the extraction); ``run_attack`` runs them
in this process.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pandas as pd
from django.conf import settings
from evalsite.models import Submission

from automated.attack.attackers import ATTACKERS, DEFAULT_ATTACKERS, get_attackers
from automated.attack.faces import face_attack_data_from_videos, video_face_crops
from automated.attack.recognizers import FACE_RECOGNIZERS, get_recognizers
from automated.attack.selection import SELECTION_STRATEGIES
from automated.attack.suite import ALL, TABLE_COLUMNS, attack_predictions, run_attack_suite, worst_case
from automated.detection import DETECTOR_NAMES, make_face_detector

from . import lifecycle
from .attack_models import AttackExtraction, AttackResult, AttackRun, AttackVideoResult
from .services import local_path

#: Default recognizers of a campaign run: one of each kind (embedding, classic, CNN).
DEFAULT_RECOGNIZERS = ("dlib_svm", "dlib_knn", "lbph", "eigenfaces", "cnn")


def attack_config(
    *,
    attackers=DEFAULT_ATTACKERS,
    recognizers=DEFAULT_RECOGNIZERS,
    selection=(ALL,),
    stride: int = 5,
    gap: int = 10,
    seed: int = 0,
    detector: str = "mediapipe",
    allow_incomplete: bool = False,
) -> dict:
    """Validate the options of a run and return them as its JSON configuration.

    Raises
    ------
    ValueError
        On an unknown attacker, recognizer, selection or detector, ``stride`` < 1,
        ``gap`` < 0 (in frames) or a ``seed`` outside [0, 2**32).
    """
    attacker_names = [a.name for a in get_attackers(list(attackers))]
    if all(ATTACKERS[name].is_baseline for name in attacker_names):
        raise ValueError(
            f"attackers {attacker_names} contain no attack on the masking (only the clear baseline)"
        )
    get_recognizers(list(recognizers), FACE_RECOGNIZERS)
    unknown = [s for s in selection if s != ALL and s not in SELECTION_STRATEGIES]
    if unknown:
        raise ValueError(f"unknown selection {unknown}; known: {', '.join((ALL,) + SELECTION_STRATEGIES)}")
    if detector not in DETECTOR_NAMES:
        raise ValueError(f"unknown face detector {detector!r}; choose one of {', '.join(DETECTOR_NAMES)}")
    if stride < 1:
        raise ValueError(f"stride must be >= 1 frame, got {stride}")
    if gap < 0:
        raise ValueError(f"gap must be >= 0 frames, got {gap}")
    if not 0 <= seed < 2**32:  # numpy's seeds; a bad one would only fail later, on a worker
        raise ValueError(f"seed must be a whole number in [0, 2**32), got {seed}")
    return {
        "attackers": attacker_names,
        "recognizers": list(recognizers),
        "selection": list(selection),
        "stride": int(stride),
        "gap": int(gap),
        "seed": int(seed),
        "detector": detector,
        "allow_incomplete": bool(allow_incomplete),
    }


def _masked_videos(submission: Submission, *, allow_incomplete: bool):
    masked = list(
        submission.masked_videos.select_related("source_video__identity").order_by("source_video__name")
    )
    if not masked:
        raise ValueError(f"submission {str(submission)!r} has no masked video yet")
    missing = list(submission.missing_source_videos().order_by("name").values_list("name", flat=True))
    if missing and not allow_incomplete:
        raise ValueError(
            f"submission {str(submission)!r} is incomplete: no masked video for {', '.join(missing[:5])}"
            f"{', ...' if len(missing) > 5 else ''}; upload them or allow an incomplete attack run"
        )
    identities = {m.source_video.identity.code for m in masked}
    if len(identities) < 2:
        raise ValueError(
            f"closed-set identification needs at least 2 identities; the masked videos show {len(identities)}"
        )
    return masked


def create_attack_run(submission: Submission, **options) -> AttackRun:
    """Check the options and the submission, then create a PENDING run planning every masked video.

    Options and errors as ``run_attack``; nothing is created when they raise.
    ``dispatch.start_run("attack", ...)`` queues its tasks; ``run_attack`` executes it here.
    """
    config = attack_config(**options)
    planned = [m.pk for m in _masked_videos(submission, allow_incomplete=config["allow_incomplete"])]
    return AttackRun.objects.create(
        submission=submission, config=config, planned_videos=planned, videos_total=len(planned)
    )


def run_attack(submission: Submission, **options) -> AttackRun:
    """Create an attack run of ``submission`` and execute it in this process.

    The units are those Celery workers run (``lifecycle``, ``ATTACK_RUN``): face crops
    per masked video, then the suite; to share a run among workers, start it with
    ``dispatch.start_run("attack", ...)``.

    Parameters
    ----------
    submission : Submission
    **options
        ``attack_config`` keywords: ``attackers`` (default all six), ``recognizers``
        (default ``DEFAULT_RECOGNIZERS``), ``selection`` (default ``("all",)``), ``stride``
        (frames, default 5), ``gap`` (frames dropped around a single-video identity's
        test segment, default 10), ``seed``, ``detector``, ``allow_incomplete``.

    Returns
    -------
    AttackRun
        Completed.

    Raises
    ------
    ValueError
        Bad options, no masked video, an incomplete submission (unless allowed) or fewer
        than two identities: no run is created. A failure during the run is stored on the
        run (``status`` failed, ``error``) and re-raised.
    """
    return lifecycle.execute_inline(ATTACK_RUN, create_attack_run(submission, **options))


def _identity_metadata(masked_videos) -> pd.DataFrame:
    rows = {m.source_video.identity.code: m.source_video.identity.attributes or {} for m in masked_videos}
    return pd.DataFrame.from_dict(rows, orient="index")


def _crop_cache_dir() -> Path:
    return Path(settings.CACHE_DIR) / "attack_faces"


class AttackRunKind(lifecycle.RunKind):
    """The attack suite in the run lifecycle: face crops per masked video, then one suite step."""

    name = "attack"
    model = AttackRun
    result_model = AttackExtraction
    has_final_step = True

    def compute_video(self, run: AttackRun, masked) -> dict:
        """Crop the clear frame's face box from the clear and the masked video, into the disk cache.

        Returns the ``AttackExtraction`` field values (crops, wall seconds).
        """
        started = time.perf_counter()
        config = run.config
        with (
            local_path(masked.source_video.file) as clear_path,
            local_path(masked.file) as masked_path,
            make_face_detector(config["detector"]) as detector,
        ):
            crops = video_face_crops(
                clear_path,
                masked_path,
                stride=config["stride"],
                detector=detector,
                cache_dir=_crop_cache_dir(),
            )
        return {"n_crops": len(crops.frame_indices), "extraction_s": time.perf_counter() - started}

    def compute_final(self, run: AttackRun) -> dict:
        """Every recognizer x attacker on the cached crops (``run_attack_suite``) and the per-video worst case."""
        config = run.config
        planned = set(run.planned_videos)
        masked_videos = [m for m in _masked_videos(run.submission, allow_incomplete=True) if m.pk in planned]
        if len(masked_videos) != len(planned):
            raise LookupError("masked videos were deleted or replaced after the run was queued")
        started = time.perf_counter()
        with contextlib.ExitStack() as stack:  # crops come from the cache the video tasks filled
            pairs = [
                (
                    stack.enter_context(local_path(m.source_video.file)),
                    stack.enter_context(local_path(m.file)),
                )
                for m in masked_videos
            ]
            detector = stack.enter_context(make_face_detector(config["detector"]))
            data = face_attack_data_from_videos(
                pairs,
                [m.source_video.identity.code for m in masked_videos],
                stride=config["stride"],
                detector=detector,
                cache_dir=_crop_cache_dir(),
                features=bool({"distinctive", "center"} & set(config["selection"])),
                identity_metadata=_identity_metadata(masked_videos)
                if "metadata" in config["selection"]
                else None,
            )
        recognizers = get_recognizers(config["recognizers"], FACE_RECOGNIZERS)
        table = run_attack_suite(
            data,
            recognizers=recognizers,
            attackers=config["attackers"],
            selection=config["selection"],
            gap=config["gap"],
            seed=config["seed"],
        )
        worst = worst_case(table)
        predictions = attack_predictions(
            data,
            recognizer=recognizers[worst["recognizer"]],
            attacker=worst["attacker"],
            gap=config["gap"],
            seed=config["seed"],
        )
        per_video = predictions.groupby("group")["correct"].agg(["size", "mean"])
        return {
            "table": table.to_dict("records"),
            "per_video": [
                (masked_videos[int(group)].source_video, int(row["size"]), float(row["mean"]))
                for group, row in per_video.iterrows()
            ],
            "n_samples": data.n_samples,
            "training_s": time.perf_counter() - started,
        }

    def write_final(self, run: AttackRun, result: dict) -> None:
        AttackResult.objects.bulk_create(
            AttackResult(run=run, **{c: row[c] for c in TABLE_COLUMNS}) for row in result["table"]
        )
        AttackVideoResult.objects.bulk_create(
            AttackVideoResult(run=run, source_video=source, n_test=n_test, accuracy=accuracy)
            for source, n_test, accuracy in result["per_video"]
        )
        run.extraction_s = sum(run.extractions.values_list("extraction_s", flat=True))
        run.training_s, run.n_samples = result["training_s"], result["n_samples"]


#: The attack suite's run kind (``dispatch.RUN_KINDS["attack"]``).
ATTACK_RUN = AttackRunKind()


def results_table(run: AttackRun) -> pd.DataFrame:
    """The run's stored results as the tidy table of ``run_attack_suite``."""
    rows = run.results.values(*TABLE_COLUMNS)
    return pd.DataFrame(list(rows), columns=TABLE_COLUMNS)


def attack_summary(run: AttackRun) -> dict:
    """Worst case (pair, accuracy, chance-normalised), chance level, clear bound and the table.

    ``table`` lists, for the full identity set, the accuracy of each recognizer x attacker
    (mean over repeats) as ``{"recognizer", "attacker", "accuracy"}`` records.
    """
    table = results_table(run)
    summary = {
        "run_id": run.pk,
        **{k: run.config.get(k) for k in ("attackers", "recognizers", "selection", "stride")},
    }
    if table.empty:
        return {**summary, "worst_case": None}
    worst = worst_case(table)
    full = table[(table["selection"] == ALL)]
    records = (
        full.groupby(["recognizer", "attacker"], sort=False)["accuracy"]
        .mean()
        .reset_index()
        .to_dict("records")
    )
    return {
        **summary,
        "worst_case_accuracy": worst["accuracy"],
        "worst_case_chance_normalised": worst["chance_normalised"],
        "worst_case_recognizer": worst["recognizer"],
        "worst_case_attacker": worst["attacker"],
        "chance_level": worst["chance_level"],
        "n_identities": worst["n_identities"],
        "clear_bound": worst["clear_accuracy"],
        "clear_bound_recognizer": worst["clear_recognizer"],
        "table": records,
        "extraction_s": run.extraction_s,
        "training_s": run.training_s,
    }
