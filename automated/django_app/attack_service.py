"""Run the attack suite on a submission: the thin Django adapter of ``automated.attack``.

``run_attack`` builds ``AttackData`` from the campaign's clear source videos (identity =
``SourceVideo.identity``) and the submission's masked videos (face detected in the clear
frame, the same box cropped from both: ``attack.faces``), runs ``run_attack_suite`` through
the Celery task (in-process when no broker is configured) and stores the tidy table as
``AttackResult`` rows, plus the worst-case pair's accuracy per masked video.
"""
from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pandas as pd
from django.conf import settings
from django.utils import timezone

from evalsite.models import Submission

from automated.attack.attackers import ATTACKERS, DEFAULT_ATTACKERS, get_attackers
from automated.attack.faces import face_attack_data_from_videos
from automated.attack.recognizers import FACE_RECOGNIZERS, get_recognizers
from automated.attack.selection import SELECTION_STRATEGIES
from automated.attack.suite import ALL, TABLE_COLUMNS, attack_predictions, run_attack_suite, worst_case
from .attack_models import AttackResult, AttackRun, AttackVideoResult
from automated.detection import DETECTOR_NAMES, make_face_detector
from .services import local_path

#: Default recognizers of a campaign run: one of each kind (embedding, classic, CNN).
DEFAULT_RECOGNIZERS = ("dlib_svm", "dlib_knn", "lbph", "eigenfaces", "cnn")


def attack_config(*, attackers=DEFAULT_ATTACKERS, recognizers=DEFAULT_RECOGNIZERS, selection=(ALL,),
                  stride: int = 5, gap: int = 10, seed: int = 0, detector: str = "mediapipe",
                  allow_incomplete: bool = False) -> dict:
    """Validate the options of a run and return them as its JSON configuration.

    Raises
    ------
    ValueError
        On an unknown attacker, recognizer, selection or detector, ``stride`` < 1 or
        ``gap`` < 0 (in frames).
    """
    attacker_names = [a.name for a in get_attackers(list(attackers))]
    if all(ATTACKERS[name].is_baseline for name in attacker_names):
        raise ValueError(f"attackers {attacker_names} contain no attack on the masking (only the clear baseline)")
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
    return {
        "attackers": attacker_names, "recognizers": list(recognizers), "selection": list(selection),
        "stride": int(stride), "gap": int(gap), "seed": int(seed), "detector": detector,
        "allow_incomplete": bool(allow_incomplete),
    }


def _masked_videos(submission: Submission, *, allow_incomplete: bool):
    masked = list(submission.masked_videos.select_related("source_video__identity").order_by("source_video__name"))
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


def run_attack(submission: Submission, **options) -> AttackRun:
    """Create an attack run of ``submission`` and execute it through the Celery task.

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
        Completed when tasks run in-process (no broker); pending when a worker will run it.

    Raises
    ------
    ValueError
        Bad options, no masked video, an incomplete submission (unless allowed) or fewer
        than two identities: no run is created. A failure during the run is stored on the
        run (``status`` failed, ``error``) and re-raised.
    """
    from .attack_tasks import run_attack_task

    config = attack_config(**options)
    _masked_videos(submission, allow_incomplete=config["allow_incomplete"])
    run = AttackRun.objects.create(submission=submission, config=config)
    run_attack_task.delay(run.pk)
    run.refresh_from_db()
    return run


def _identity_metadata(masked_videos) -> pd.DataFrame:
    rows = {m.source_video.identity.code: m.source_video.identity.attributes or {} for m in masked_videos}
    return pd.DataFrame.from_dict(rows, orient="index")


def execute_attack_run(run: AttackRun) -> AttackRun:
    """Execute a pending run (the body of ``attack_tasks.run_attack_task``)."""
    config = run.config
    run.status, run.started_at, run.error = AttackRun.Status.RUNNING, timezone.now(), ""
    run.save(update_fields=["status", "started_at", "error"])
    try:
        masked_videos = _masked_videos(run.submission, allow_incomplete=config.get("allow_incomplete", False))
        started = time.perf_counter()
        with contextlib.ExitStack() as stack:
            pairs = [
                (stack.enter_context(local_path(m.source_video.file)), stack.enter_context(local_path(m.file)))
                for m in masked_videos
            ]
            detector = stack.enter_context(make_face_detector(config["detector"]))
            needs_features = bool({"distinctive", "center"} & set(config["selection"]))
            data = face_attack_data_from_videos(
                pairs, [m.source_video.identity.code for m in masked_videos], stride=config["stride"],
                detector=detector, cache_dir=Path(settings.CACHE_DIR) / "attack_faces",
                features=needs_features,
                identity_metadata=_identity_metadata(masked_videos) if "metadata" in config["selection"] else None,
            )
        run.extraction_s = time.perf_counter() - started
        started = time.perf_counter()
        recognizers = get_recognizers(config["recognizers"], FACE_RECOGNIZERS)
        table = run_attack_suite(
            data, recognizers=recognizers, attackers=config["attackers"], selection=config["selection"],
            gap=config["gap"], seed=config["seed"],
        )
        AttackResult.objects.bulk_create(
            AttackResult(run=run, **{c: row[c] for c in TABLE_COLUMNS}) for row in table.to_dict("records")
        )
        worst = worst_case(table)
        predictions = attack_predictions(
            data, recognizer=recognizers[worst["recognizer"]], attacker=worst["attacker"],
            gap=config["gap"], seed=config["seed"],
        )
        per_video = predictions.groupby("group")["correct"].agg(["size", "mean"])
        AttackVideoResult.objects.bulk_create(
            AttackVideoResult(run=run, source_video=masked_videos[int(group)].source_video,
                              n_test=int(row["size"]), accuracy=float(row["mean"]))
            for group, row in per_video.iterrows()
        )
        run.training_s = time.perf_counter() - started
        run.n_samples = data.n_samples
    except Exception as error:
        run.status, run.finished_at = AttackRun.Status.FAILED, timezone.now()
        run.error = f"{type(error).__name__}: {error}"
        run.save(update_fields=["status", "finished_at", "error", "extraction_s"])
        raise
    run.status, run.finished_at = AttackRun.Status.COMPLETED, timezone.now()
    run.save(update_fields=["status", "finished_at", "extraction_s", "training_s", "n_samples"])
    return run


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
    summary = {"run_id": run.pk, **{k: run.config.get(k) for k in ("attackers", "recognizers", "selection", "stride")}}
    if table.empty:
        return {**summary, "worst_case": None}
    worst = worst_case(table)
    full = table[(table["selection"] == ALL)]
    records = (full.groupby(["recognizer", "attacker"], sort=False)["accuracy"].mean()
               .reset_index().to_dict("records"))
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
