"""Run the attack suite on a submission: the thin Django adapter of ``automated.attack``.

An attack run is, in the shared run lifecycle (``lifecycle.py``, ``ATTACK_RUN``):

1. one unit per masked video that crops the faces (detected in the clear frame, the same
   box cropped from both: ``attack.faces``) into the disk cache (per video file and
   settings);
2. one unit per **cross-video fold** (``attack.crossvideo``, the headline): the folds are
   planned from the catalogue when the run is created (identities with two or more
   videos; the attacker's own ``attacker_train`` videos always train, never test;
   single-video identities are extra classes), each trains and tests every recognizer x
   attacker (``crossvideo.run_fold``) on the cached crops; dlib embeddings are cached on
   disk by crop content and embedder, so workers share them;
3. one summary step: mean, sd, min, max and 95 % interval over folds per pair
   (``AttackResult``), the worst-case pair's accuracy per tested video
   (``AttackVideoResult``), per-identity accuracy, counts, verification of masked probes
   against the clear gallery for the pretrained embedding (CMC, EER, FNMR at FMR), and the
   within-video table (every video split in time: *scene memorisation*, kept apart on the
   run and never the worst case).

When no identity has two videos there is no cross-video fold: the run stores the
scene-memorisation table only and reports no worst case (import more videos per identity
or ``attacker_train`` material). ``dispatch.py`` queues the units as Celery tasks;
``run_attack`` runs them in this process.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from django.conf import settings
from evalsite.models import Submission
from evalsite.storage import local_path
from evalsite.video_formats import alone_in_format, video_format

from automated.attack.attackers import ATTACKERS, DEFAULT_ATTACKERS, get_attackers
from automated.attack.model_cache import FittedModelCache
from automated.attack.names import ALL, DECLARED_ATTACKER, SELECTION_STRATEGIES
from automated.attack.verification import curve_record, verify_folds
from automated.checks import check_stride
from automated.detection import DETECTOR_NAMES, make_face_detector
from automated.recognition import DEFAULT_EMBEDDER
from automated.serialize import jsonable

from . import attack_privacy, embedded, lifecycle
from .attack_models import AttackExtraction, AttackFold, AttackResult, AttackRun, AttackVideoResult
from .services import check_complete, crop_cache_dir

# The science of an attack (automated.attack's faces, recognizers, cross-video protocol and
# suite: scikit-learn, pandas, the embedders) is imported in the functions that run it:
# Django start-up imports this module (dispatch, API).
if TYPE_CHECKING:
    import pandas as pd

    from automated.attack.crossvideo import CrossVideoResult

#: Default recognizers of a campaign run: one of each kind (embedding, classic, CNN).
DEFAULT_RECOGNIZERS = ("dlib_svm", "dlib_knn", "lbph", "eigenfaces", "cnn")
#: Columns of ``AttackResult`` beyond the tidy table: the spread over cross-video folds.
FOLD_SPREAD = {
    "n_folds": "n_folds",
    "sd": "sd",
    "min_accuracy": "min",
    "max_accuracy": "max",
    "ci_low": "ci_low",
    "ci_high": "ci_high",
    "frame_accuracy": "frame_accuracy",
}


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
    n_folds: int | None = None,
    scene_memorisation: bool = True,
    verification: bool = True,
    declared_attacker: str = DECLARED_ATTACKER,
) -> dict:
    """Validate the options of a run and return them as its JSON configuration.

    ``n_folds``: None = leave one video out, k >= 2 = k folds by video
    (``crossvideo.video_folds``). ``scene_memorisation``: also run the within-video table
    (shown apart); ``selection`` strategies other than "all" apply to that table only.
    ``verification``: CMC / EER / FNMR at FMR of the pretrained embedding.
    ``declared_attacker``: the knowledge level of the campaign's headline attacker (one of
    ``attackers``; default parrot, ``attack.declared``); stored only when not the default,
    so runs of the default configuration compare equal to older ones.

    Raises
    ------
    ValueError
        On an unknown or repeated attacker or recognizer, no recognizer, a name list given
        as one string, an unknown selection or detector, ``stride``, ``gap``, ``seed`` or
        ``n_folds`` that is not a whole number (``True``, ``2.5``, ``"4"``), ``stride`` < 1,
        ``gap`` < 0 (in frames), ``n_folds`` < 2 or a ``seed`` outside [0, 2**32).
    """
    from automated.attack.recognizers import FACE_RECOGNIZERS, get_recognizers

    for name, value in (("attackers", attackers), ("recognizers", recognizers), ("selection", selection)):
        if isinstance(value, str):
            raise ValueError(f"{name} must be a list of names, got the string {value!r}")
    check_stride(stride)
    for name, value in (("gap", gap), ("seed", seed), ("n_folds", n_folds)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer))):
            raise ValueError(f"{name} must be a whole number, got {value!r}")
    if not recognizers:
        raise ValueError("recognizers is empty: give at least one")
    repeated = sorted({r for r in recognizers if list(recognizers).count(r) > 1})
    if repeated:
        raise ValueError(f"recognizer(s) {', '.join(repeated)} given more than once; give each once")
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
    if gap < 0:
        raise ValueError(f"gap must be >= 0 frames, got {gap}")
    if not 0 <= seed < 2**32:  # numpy's seeds; a bad one would only fail later, on a worker
        raise ValueError(f"seed must be a whole number in [0, 2**32), got {seed}")
    if n_folds is not None and n_folds < 2:
        raise ValueError(f"n_folds must be >= 2 (or None for leave-one-video-out), got {n_folds}")
    named = declared_attacker != DECLARED_ATTACKER  # the default may be absent: then no declared figure
    if named and (declared_attacker not in attacker_names or ATTACKERS[declared_attacker].is_baseline):
        raise ValueError(
            f"the declared attacker {declared_attacker!r} must be one of the attackers run "
            f"(not the clear baseline): {', '.join(attacker_names)}"
        )
    declared = {"declared_attacker": declared_attacker} if named else {}
    return {
        **declared,
        "attackers": attacker_names,
        "recognizers": list(recognizers),
        "selection": list(selection),
        "stride": int(stride),
        "gap": int(gap),
        "seed": int(seed),
        "detector": detector,
        "allow_incomplete": bool(allow_incomplete),
        "n_folds": None if n_folds is None else int(n_folds),
        "scene_memorisation": bool(scene_memorisation),
        "verification": bool(verification),
    }


def video_role(source_video) -> str:
    """``"attacker_train"`` for the attacker's own material, else ``"evaluated"`` (``attack.data``)."""
    from automated.attack.data import ROLE_ATTACKER_TRAIN, ROLE_EVALUATED

    return ROLE_ATTACKER_TRAIN if source_video.attacker_train else ROLE_EVALUATED


def plan_folds(masked_videos, *, n_folds: int | None = None, seed: int = 0) -> list[list[int]]:
    """The cross-video folds of a run, as lists of the masked-video ids each fold tests.

    ``crossvideo.video_folds`` over one row per video (identity, role); ``[]`` when no
    identity has an evaluated video and another video to train on.
    """
    from automated.attack.crossvideo import video_folds

    masked_videos = list(masked_videos)
    try:
        folds = video_folds(
            [m.source_video.identity.code for m in masked_videos],
            [m.pk for m in masked_videos],
            roles=[video_role(m.source_video) for m in masked_videos],
            n_folds=n_folds,
            seed=seed,
        )
    except ValueError:
        return []
    return [[int(pk) for pk in fold.test_groups] for fold in folds]


def _masked_videos(submission: Submission, *, allow_incomplete: bool):
    masked = list(
        submission.masked_videos.select_related("source_video__identity").order_by("source_video__name")
    )
    if not masked:
        raise ValueError(f"submission {str(submission)!r} has no masked video yet")
    if not allow_incomplete:
        check_complete(submission, "attack")
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
    masked = _masked_videos(submission, allow_incomplete=config["allow_incomplete"])
    folds = plan_folds(masked, n_folds=config["n_folds"], seed=config["seed"])
    return AttackRun.objects.create(
        submission=submission,
        config=config,
        planned_videos=[m.pk for m in masked],
        videos_total=len(masked),
        planned_folds=folds,
        folds_total=len(folds),
    )


def run_attack(submission: Submission, **options) -> AttackRun:
    """Create an attack run of ``submission`` and execute it (``embedded.execute_run``: this process's pool).

    The units are those Celery workers run (``lifecycle``, ``ATTACK_RUN``): face crops
    per masked video, one unit per cross-video fold, then the summary; to share a run
    among workers, start it with ``dispatch.start_run("attack", ...)``.

    Parameters
    ----------
    submission : Submission
    **options
        ``attack_config`` keywords: ``attackers`` (default all six), ``recognizers``
        (default ``DEFAULT_RECOGNIZERS``), ``selection`` (default ``("all",)``), ``stride``
        (frames, default 5), ``gap`` (frames dropped around a single-video identity's
        test segment, default 10), ``seed``, ``detector``, ``allow_incomplete``,
        ``n_folds`` (None: leave one video out), ``scene_memorisation``, ``verification``.

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
    return embedded.execute_run(ATTACK_RUN, create_attack_run(submission, **options))


def _identity_metadata(masked_videos) -> pd.DataFrame:
    import pandas as pd

    rows = {m.source_video.identity.code: m.source_video.identity.attributes or {} for m in masked_videos}
    return pd.DataFrame.from_dict(rows, orient="index")


def _model_cache() -> FittedModelCache:
    """Recognizers trained on clear crops only, on disk under ``CACHE_DIR/attack_models``.

    Keyed by the training crops' content and the recognizer's settings
    (``model_cache.FittedModelCache``): every submission of a campaign reuses the clear
    and naive attackers' models of a fold; a replaced clear video or another fold plan
    gives other crops or samples, so another key.
    """
    return FittedModelCache(Path(settings.CACHE_DIR) / "attack_models")


def _use_embedding_disk_cache() -> None:
    """Keep dlib embeddings on disk under ``CACHE_DIR`` (by embedder and crop content), once.

    Every fold task of every worker then embeds each crop once per campaign, not per task.
    """
    from automated.attack.recognizers import EMBEDDING_CACHE

    if EMBEDDING_CACHE.directory is None:
        directory = Path(settings.CACHE_DIR) / "attack_embeddings"
        directory.mkdir(parents=True, exist_ok=True)
        EMBEDDING_CACHE.directory = directory


def pretrained_embedders(recognizers) -> list[str]:
    """Embedders of the pretrained recognizers among ``recognizers`` (an embedding first step),
    and always the default one (``recognition.DEFAULT_EMBEDDER``): the verification's systems."""
    from automated.attack.recognizers import FACE_RECOGNIZERS, DlibEmbedding, get_recognizers

    names = [DEFAULT_EMBEDDER]
    for factory in get_recognizers(list(recognizers), FACE_RECOGNIZERS).values():
        steps = getattr(factory(), "steps", None)
        if steps and isinstance(steps[0][1], DlibEmbedding) and steps[0][1].embedder not in names:
            names.append(steps[0][1].embedder)
    return names


def _planned_masked_videos(run: AttackRun) -> list:
    planned = set(run.planned_videos)
    masked_videos = [m for m in _masked_videos(run.submission, allow_incomplete=True) if m.pk in planned]
    if len(masked_videos) != len(planned):
        raise LookupError("masked videos were deleted or replaced after the run was queued")
    return masked_videos


def _attack_data(run: AttackRun, masked_videos):
    """The run's ``AttackData`` from the crop cache (``groups`` = position in ``masked_videos``)."""
    from automated.attack.faces import face_attack_data_from_videos

    config = run.config
    with contextlib.ExitStack() as stack:  # crops come from the cache the video tasks filled
        pairs = [
            (stack.enter_context(local_path(m.source_video.file)), stack.enter_context(local_path(m.file)))
            for m in masked_videos
        ]
        detector = stack.enter_context(make_face_detector(config["detector"]))
        return face_attack_data_from_videos(
            pairs,
            [m.source_video.identity.code for m in masked_videos],
            stride=config["stride"],
            detector=detector,
            cache_dir=crop_cache_dir(),
            features=bool({"distinctive", "center"} & set(config["selection"])),
            identity_metadata=_identity_metadata(masked_videos)
            if "metadata" in config["selection"]
            else None,
            roles=[video_role(m.source_video) for m in masked_videos],
        )


def _fold(run: AttackRun, data, masked_videos, number: int):
    from automated.attack.crossvideo import fold_of_groups

    position = {m.pk: i for i, m in enumerate(masked_videos)}
    return fold_of_groups(data.groups, [position[pk] for pk in run.planned_folds[number]], number)


def _records(frame: pd.DataFrame) -> list[dict]:
    return [{k: jsonable(v) for k, v in row.items()} for row in frame.to_dict("records")]


def _seconds_by_recognizer(rows) -> dict:
    import pandas as pd

    frame = pd.DataFrame(list(rows))
    if frame.empty:
        return {}
    return {
        k: float(v)
        for k, v in (frame["fit_s"] + frame["predict_s"]).groupby(frame["recognizer"]).sum().items()
    }


class AttackRunKind(lifecycle.RunKind):
    """The attack suite in the run lifecycle: face crops per video, cross-video folds, summary."""

    name = "attack"
    model = AttackRun
    result_model = AttackExtraction
    fold_model = AttackFold
    has_final_step = True

    def fresh_folds(self, run: AttackRun, masked_videos) -> list[list[int]]:
        """``plan_folds`` of ``masked_videos`` (current roles) with the run's ``n_folds`` and ``seed``."""
        return plan_folds(masked_videos, n_folds=run.config.get("n_folds"), seed=run.config.get("seed", 0))

    def compute_video(self, run: AttackRun, masked) -> dict:
        """Crop the clear frame's face box from the clear and the masked video, into the disk cache.

        Returns the ``AttackExtraction`` field values (crops, wall seconds).
        """
        from automated.attack.faces import video_face_crops

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
                cache_dir=crop_cache_dir(),
            )
        return {"n_crops": len(crops.frame_indices), "extraction_s": time.perf_counter() - started}

    def compute_fold(self, run: AttackRun, fold: int) -> dict:
        """Every recognizer x attacker trained and tested on cross-video fold ``fold``.

        Returns the ``AttackFold`` field values: the tested masked videos, the per-pair rows
        (``crossvideo.FOLD_COLUMNS``), the per-frame predictions (columns as lists) and the
        wall seconds. A recognizer's or attacker's ``ValueError`` names the fold's tested
        videos by source-video name.
        """
        from automated.attack.crossvideo import PREDICTION_COLUMNS, run_fold
        from automated.attack.recognizers import FACE_RECOGNIZERS, get_recognizers

        started = time.perf_counter()
        _use_embedding_disk_cache()
        masked_videos = _planned_masked_videos(run)
        data = _attack_data(run, masked_videos)
        rows, predictions = run_fold(
            data,
            _fold(run, data, masked_videos, fold),
            recognizers=get_recognizers(run.config["recognizers"], FACE_RECOGNIZERS),
            attackers=run.config["attackers"],
            seed=run.config["seed"],
            video_names={i: m.source_video.name for i, m in enumerate(masked_videos)},
            models=_model_cache(),
        )
        return {
            "test_videos": run.planned_folds[fold],
            "rows": [{k: jsonable(v) for k, v in row.items()} for row in rows],
            "predictions": {c: [jsonable(v) for v in predictions[c].tolist()] for c in PREDICTION_COLUMNS},
            "fit_s": time.perf_counter() - started,
        }

    def compute_final(self, run: AttackRun) -> dict:
        """The summary over folds, per-video and per-identity accuracy, verification, scene memorisation."""
        import pandas as pd

        from automated.attack.crossvideo import PREDICTION_COLUMNS, CrossVideoResult, cross_video_counts
        from automated.attack.recognizers import FACE_RECOGNIZERS, DlibEmbedding, get_recognizers
        from automated.attack.suite import run_attack_suite

        config = run.config
        started = time.perf_counter()
        _use_embedding_disk_cache()
        masked_videos = _planned_masked_videos(run)
        data = _attack_data(run, masked_videos)
        result = {"n_samples": data.n_samples, "table": [], "per_video": [], "timing": {}, "privacy": {}}
        stored = list(run.folds.order_by("fold"))
        folds = [_fold(run, data, masked_videos, f.fold) for f in stored]
        fold_rows = [row for f in stored for row in f.rows]
        if fold_rows:
            predictions = pd.concat(
                [pd.DataFrame(f.predictions, columns=PREDICTION_COLUMNS) for f in stored], ignore_index=True
            )
            cross = CrossVideoResult(pd.DataFrame(fold_rows), predictions, cross_video_counts(data, folds))
            result.update(self._cross_video(cross, masked_videos))
            result["privacy"]["declared"] = attack_privacy.declared_figures(predictions, config)
            result["timing"]["cross_video_s"] = _seconds_by_recognizer(fold_rows)
        # Only folds that tested frames verify (no face in every tested clip: no probe at all).
        if config.get("verification", True) and any(len(f.test_idx) and len(f.train_idx) for f in folds):
            embedded = time.perf_counter()
            verified = {
                name: verify_folds(data, folds, DlibEmbedding(name).transform)
                for name in pretrained_embedders(config["recognizers"])
            }
            result["verification"] = {name: curve_record(found) for name, found in verified.items()}
            result["privacy"]["linkability_by_group"] = attack_privacy.group_figures(
                verified[DEFAULT_EMBEDDER],
                {m.source_video.identity.code: m.source_video.identity.attributes for m in masked_videos},
                run.submission.campaign.demographic_attributes,
            )
            result["timing"]["verification_s"] = time.perf_counter() - embedded
        if data.n_samples:
            started_temporal = time.perf_counter()
            result["privacy"]["temporal"] = attack_privacy.temporal_figures(
                data, DlibEmbedding(DEFAULT_EMBEDDER).transform, masked_videos, seed=config["seed"]
            )
            result["timing"]["temporal_s"] = time.perf_counter() - started_temporal
        if config.get("scene_memorisation", True):
            try:
                table = run_attack_suite(
                    data,
                    recognizers=get_recognizers(config["recognizers"], FACE_RECOGNIZERS),
                    attackers=config["attackers"],
                    selection=config["selection"],
                    gap=config["gap"],
                    seed=config["seed"],
                    within_video=True,
                    models=_model_cache(),
                )
            except ValueError as error:  # e.g. clips too short for the gap: the side figure only
                result["scene_memorisation_skipped"] = str(error)
            else:
                result["scene_memorisation"] = _records(table)
                result["timing"]["scene_memorisation_s"] = _seconds_by_recognizer(_records(table))
        result["training_s"] = time.perf_counter() - started + sum(f.fit_s for f in stored)
        return result

    @staticmethod
    def _cross_video(cross: CrossVideoResult, masked_videos) -> dict:
        summary = cross.summary()
        rows = []
        for record in _records(summary):
            part = cross.folds[
                (cross.folds["recognizer"] == record["recognizer"])
                & (cross.folds["attacker"] == record["attacker"])
            ]
            n_classes = int(part["n_classes"].max())
            rows.append(
                {
                    "recognizer": record["recognizer"],
                    "attacker": record["attacker"],
                    "selection": ALL,
                    "subset_size": n_classes,
                    "repeat": 0,
                    "n_identities": n_classes,
                    "n_train": int(round(part["n_train"].mean())),
                    "n_test": int(part["n_test"].sum()),
                    "accuracy": record["accuracy"],
                    "chance_level": record["chance_level"],
                    "chance_normalised": record["chance_normalised"],
                    "fit_s": float(part["fit_s"].sum()),
                    "predict_s": float(part["predict_s"].sum()),
                    **{field: record[key] for field, key in FOLD_SPREAD.items()},
                }
            )
        worst = cross.worst_case()
        pair = cross.predictions[
            (cross.predictions["recognizer"] == worst["recognizer"])
            & (cross.predictions["attacker"] == worst["attacker"])
        ]
        per_video = pair.groupby("group")["correct"].agg(["size", "mean"])
        return {
            "table": rows,
            "per_video": [
                (masked_videos[int(group)].source_video, int(row["size"]), float(row["mean"]))
                for group, row in per_video.iterrows()
            ],
            "per_identity": _records(cross.per_identity()),
            "counts": {k: jsonable(v) for k, v in cross.counts.items()},
        }

    def write_final(self, run: AttackRun, result: dict) -> None:
        from automated.attack.suite import TABLE_COLUMNS

        AttackResult.objects.bulk_create(
            AttackResult(
                run=run,
                **{c: row[c] for c in TABLE_COLUMNS},
                **{field: row.get(field) for field in FOLD_SPREAD},
            )
            for row in result["table"]
        )
        AttackVideoResult.objects.bulk_create(
            AttackVideoResult(run=run, source_video=source, n_test=n_test, accuracy=accuracy)
            for source, n_test, accuracy in result["per_video"]
        )
        run.extraction_s = sum(run.extractions.values_list("extraction_s", flat=True))
        run.training_s, run.n_samples = result["training_s"], result["n_samples"]
        run.counts = result.get("counts", {})
        if "scene_memorisation_skipped" in result:
            run.counts = {**run.counts, "scene_memorisation_skipped": result["scene_memorisation_skipped"]}
        run.per_identity = result.get("per_identity", [])
        run.verification = result.get("verification", {})
        run.scene_memorisation = result.get("scene_memorisation", [])
        run.privacy = result.get("privacy", {})
        run.timing = {"extraction_s": run.extraction_s, **result.get("timing", {})}


#: The attack suite's run kind (``dispatch.RUN_KINDS["attack"]``).
ATTACK_RUN = AttackRunKind()


def _scene_memorisation(run: AttackRun) -> dict | None:
    """Worst case of the within-video table (shown apart: the attacker saw the tested recording).

    ``{"protocol", "skipped": reason}`` when the split could not be made (clips too short
    for the gap); None when the table was not asked for.
    """
    import pandas as pd

    from automated.attack.suite import worst_case

    table = pd.DataFrame(run.scene_memorisation)
    skipped = (run.counts or {}).get("scene_memorisation_skipped")
    if table.empty and skipped:
        return {"protocol": "within_video", "skipped": skipped}
    if table.empty or not (table["attacker"] != "clear").any():
        return None
    worst = worst_case(table)
    full = table[table["selection"] == ALL]
    return {
        "protocol": "within_video",
        "meaning": "every video split in time: other frames of the tested recording are trained on, so "
        "the attacker can recognise the scene, clothes and lighting; not the worst case",
        "worst_case_accuracy": worst["accuracy"],
        "worst_case_recognizer": worst["recognizer"],
        "worst_case_attacker": worst["attacker"],
        "chance_level": worst["chance_level"],
        "clear_bound": worst["clear_accuracy"],
        "table": _records(
            full.groupby(["recognizer", "attacker"], sort=False)["accuracy"].mean().reset_index()
        ),
    }


def _no_worst_case(run: AttackRun) -> str:
    """Why ``run`` has no cross-video result: no fold planned, or folds that tested no frame."""
    if run.folds_total:
        return (
            f"the {run.folds_total} cross-video folds tested no frame: no face was found in the tested "
            "videos (see the face crops per video)"
        )
    return (
        "no cross-video fold: no identity has an evaluated video and another video to train on "
        "(every identity has a single video, or only attacker_train material); import more videos "
        "per identity or attacker_train material"
    )


def format_confounded_identities(run: AttackRun) -> list[dict]:
    """Tested identities of ``run`` alone in a video format among the run's videos.

    ``evalsite.video_formats.alone_in_format`` over the run's planned masked videos (the
    attacker's own and the evaluated alike, by their source video's frame size, frame rate
    and container), kept for identities with a video tested in a cross-video fold. An
    attacker can name such an identity by the format (sharpness, scaling) rather than the
    face: on the demo ID07 (the only 720x576 clips) and ID11 (the only CREMA-D FLV).

    Returns
    -------
    list of dict
        ``{"identity", "format", "videos"}`` (source video names, sorted) per finding,
        ordered by identity; ``[]`` when none (or no fold was planned).
    """
    tested = {pk for fold in run.planned_folds or [] for pk in fold}
    masked = run.submission.masked_videos.filter(pk__in=run.planned_videos or []).select_related(
        "source_video__identity"
    )
    rows, tested_identities = [], set()
    for m in masked:
        source = m.source_video
        rows.append((source.identity.code, source.name, video_format(source)))
        if m.pk in tested:
            tested_identities.add(source.identity.code)
    return [found for found in alone_in_format(rows) if found["identity"] in tested_identities]


def attack_summary(run: AttackRun) -> dict:
    """The headline cross-video worst case and everything around it, for reports.

    Returns
    -------
    dict
        ``protocol`` ("cross_video"); ``worst_case_accuracy`` (mean over folds of the
        strongest recognizer x attacker, the clear baseline excluded), its
        ``worst_case_recognizer`` / ``worst_case_attacker``, ``worst_case_sd``,
        ``worst_case_min`` / ``worst_case_max`` (over folds), ``worst_case_ci_low`` /
        ``worst_case_ci_high`` (95 % t-interval), ``worst_case_chance_normalised``,
        ``chance_level`` (1 / classes), ``clear_bound`` (best clear-on-clear mean); the
        counts (``n_identities`` classes, ``n_evaluated_identities``, ``n_videos``,
        ``n_tested_videos``, ``n_attacker_videos``, ``n_frames``, ``n_tested_frames``,
        ``n_folds``); ``table`` (per pair: accuracy, sd, interval), ``per_identity`` (the
        worst-case pair), ``verification`` (per embedder: CMC ranks 1-5, EER, FNMR at FMR
        1e-2 / 1e-3), ``scene_memorisation`` (the within-video figure, apart),
        ``format_confounded_identities`` (:func:`format_confounded_identities`: read their
        per-identity accuracy apart) and timings; the declared attacker, linkability by
        group and identity over time (``attack_privacy.privacy_summary``).
        Without a cross-video fold the worst-case entries are None and ``no_worst_case``
        says why.
    """
    import pandas as pd

    from automated.attack.suite import TABLE_COLUMNS

    summary = {
        "run_id": run.pk,
        "protocol": "cross_video",
        **{k: run.config.get(k) for k in ("attackers", "recognizers", "selection", "stride", "n_folds")},
        "scene_memorisation": _scene_memorisation(run),
        "format_confounded_identities": format_confounded_identities(run),
        "extraction_s": run.extraction_s,
        "training_s": run.training_s,
    }
    results = pd.DataFrame(
        list(run.results.values(*TABLE_COLUMNS, *FOLD_SPREAD)), columns=[*TABLE_COLUMNS, *FOLD_SPREAD]
    )
    attacks = results[results["attacker"] != "clear"]
    if attacks.empty:
        return {
            **summary,
            "worst_case_accuracy": None,
            "no_worst_case": _no_worst_case(run),
            **attack_privacy.privacy_summary(run),
        }
    best = attacks.loc[attacks["accuracy"].idxmax()]
    clear = results[results["attacker"] == "clear"]
    top = clear.loc[clear["accuracy"].idxmax()] if not clear.empty else None
    verification = {
        name: {k.replace(".", "_"): v for k, v in record.items() if k not in ("fmr", "fnmr", "cmc")}
        for name, record in (run.verification or {}).items()
    }
    per_identity = [
        {k: r[k] for k in ("identity", "n_videos", "n_frames", "accuracy")}
        for r in run.per_identity
        if r["recognizer"] == best["recognizer"] and r["attacker"] == best["attacker"]
    ]
    return {
        **summary,
        "worst_case_accuracy": float(best["accuracy"]),
        "worst_case_chance_normalised": float(best["chance_normalised"]),
        "worst_case_recognizer": best["recognizer"],
        "worst_case_attacker": best["attacker"],
        "worst_case_sd": jsonable(best["sd"]),
        "worst_case_min": jsonable(best["min_accuracy"]),
        "worst_case_max": jsonable(best["max_accuracy"]),
        "worst_case_ci_low": jsonable(best["ci_low"]),
        "worst_case_ci_high": jsonable(best["ci_high"]),
        "chance_level": float(best["chance_level"]),
        "clear_bound": None if top is None else float(top["accuracy"]),
        "clear_bound_recognizer": None if top is None else top["recognizer"],
        **{k: run.counts.get(k) for k in COUNT_KEYS},
        "n_identities": run.counts.get("n_identities", int(best["n_identities"])),
        "table": _records(
            results[["recognizer", "attacker", "accuracy", "sd", "ci_low", "ci_high", "n_folds"]]
        ),
        "per_identity": per_identity,
        "verification": verification,
        "timing": run.timing,
        **attack_privacy.privacy_summary(run),
    }


#: Counts of the cross-video protocol in the summary (``crossvideo.CrossVideoResult.counts``).
COUNT_KEYS = (
    "n_identities",
    "n_evaluated_identities",
    "n_videos",
    "n_tested_videos",
    "n_attacker_videos",
    "n_frames",
    "n_tested_frames",
    "n_folds",
)
