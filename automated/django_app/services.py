"""Face-evaluation operations on the catalogue: baseline submissions and evaluation runs.

The thin Django layer around ``automated.anonymizers`` and ``automated.face_eval``: it
reads files through Django storage, calls the Django-free science and stores rows. A run
is one unit per masked video in the shared run lifecycle (``lifecycle.py``, ``FACE_RUN``);
``dispatch.py`` queues those units as Celery tasks, ``run_face_evaluation`` runs them in
this process. This module imports no task (no import cycle).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import tempfile
import threading
from typing import TYPE_CHECKING
from pathlib import Path

import cv2
import numpy as np
from django.conf import settings
from evalsite.models import Campaign, GalleryImage, MaskedVideo, Submission, Team, delete_stored, find_team
from evalsite.storage import local_path, store_video

from automated.anonymizers import BASELINE_METHODS, anonymize_video
from automated.detection import detector_key, make_face_detector
from automated.face_fields import METRIC_FIELDS, VideoEvaluation
from . import embedded, lifecycle
from .face_models import AutomatedRun, VideoScore
from automated.dlib_torch import torch_threads
from automated.recognition import DEFAULT_EMBEDDER, MATCH_THRESHOLD, embedder_spec, make_face_embedder
from automated.checks import check_stride
from automated.video import VideoInfo

# The science that runs an evaluation (face_eval, behaviour: OpenCV, scikit-image, scipy, the
# models) is imported in the functions that call it: Django start-up imports this module.
if TYPE_CHECKING:
    from automated.behaviour import BehaviourPass

logger = logging.getLogger(__name__)

# Runs configured before the embedder registry (no "embedder" key) used dlib's own code.
LEGACY_EMBEDDER = "dlib_resnet_native"
# Clear-frame face boxes and embeddings shared by the runs of this process, and on disk
# under CACHE_DIR/clear_side by every worker and later run (face_eval.evaluate_video,
# clear_side.ClearSideStore): every submission of a campaign has the same clear videos.
_CLEAR_CACHE: dict = {}
_CLEAR_CACHE_MAX_VIDEOS = 2000
# Gallery embeddings per campaign and settings (``_cached_gallery``).
_GALLERY_CACHE: dict = {}
_GALLERY_CACHE_MAX = 16


class MissingGalleryError(ValueError):
    """Identities of the videos to evaluate have no gallery image (closed set incomplete)."""


def create_baseline_submission(
    campaign: Campaign,
    method: str,
    *,
    team_name: str = "Baselines",
    key: bytes | None = None,
    web_copies: bool = True,
) -> Submission:
    """Mask every source video of ``campaign`` with a baseline method as a submission.

    The submission is named after the method (``Submission.baseline_method`` set) and
    belongs to team ``team_name`` (matched ignoring case: ``evalsite.models.find_team``). Masked videos are lossless FFV1 ``.mkv`` files stored
    under opaque names through the default storage, with probed metadata and (if
    ``web_copies``) an H.264 copy for raters' browsers.

    Idempotent: run again, it only masks source videos that have no masked video yet;
    existing files are never overwritten.

    Parameters
    ----------
    campaign : Campaign
    method : str
        A key of ``automated.anonymizers.BASELINE_METHODS``.
    team_name : str, default="Baselines"
    key : bytes, optional
        AES key for the block permutations; default one fresh random key per call.
    web_copies : bool, default=True

    Returns
    -------
    Submission

    Raises
    ------
    ValueError
        If ``method`` is unknown, or the team already has a submission of that name that
        is not this baseline.
    automated.anonymizers.NoFaceInVideoError
        If a face-region method finds no face in a source video (the other videos are
        masked and kept; the first such error is raised).
    """
    if method not in BASELINE_METHODS:
        raise ValueError(f"unknown baseline method {method!r}; choose one of {', '.join(BASELINE_METHODS)}")
    team = find_team(campaign, team_name) or Team.objects.create(campaign=campaign, name=team_name.strip())
    submission, created = Submission.objects.get_or_create(
        campaign=campaign,
        team=team,
        name=method,
        defaults={"baseline_method": method, "description": BASELINE_METHODS[method].description},
    )
    if not created and submission.baseline_method != method:
        raise ValueError(
            f"team {team_name!r} already has a submission {method!r} in campaign {campaign.slug!r} "
            f"that is not the {method!r} baseline"
        )
    key = os.urandom(32) if key is None else key
    sources = list(submission.missing_source_videos().order_by("name"))
    # Every video masked at once by the embedded executor's pool (one per core), stored here.
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        work = [
            (stack.enter_context(local_path(source.file)), Path(tmp) / f"masked{i}.mkv", method, key)
            for i, source in enumerate(sources)
        ]
        outcomes = embedded.map_in_pool(_mask_video, work)
        for source, (_, masked_path, _, _), outcome in zip(sources, work, outcomes, strict=True):
            if not isinstance(outcome, Exception):
                _store_masked_video(submission, source, masked_path, outcome, web_copies=web_copies)
                logger.info("baseline %s: masked %s", method, source.name)
    failed = next((outcome for outcome in outcomes if isinstance(outcome, Exception)), None)
    if failed is not None:
        raise failed
    return submission


def _mask_video(source_path: Path, masked_path: Path, method: str, key: bytes) -> VideoInfo:
    """``anonymize_video`` with the submission's key (a pool worker's unit).

    The clear video's face track is kept under ``CACHE_DIR/face_tracks`` (content hash +
    detector settings, ``anonymizers.face_track``), so the campaign's face-region
    baselines detect each clear frame once; the masked frames are the same.
    """
    return anonymize_video(
        source_path,
        masked_path,
        method,
        key=key,
        face_track_cache_dir=Path(settings.CACHE_DIR) / "face_tracks",
    )


def _store_masked_video(
    submission, source, masked_path: Path, info: VideoInfo, *, web_copies: bool
) -> MaskedVideo:
    masked = MaskedVideo(submission=submission, source_video=source)
    stored = store_video(masked, masked_path, info, name="masked.mkv", web_copy=web_copies)
    try:
        masked.save()
    except Exception:
        delete_stored(stored)
        raise
    return masked


def _read_image_rgb(field_file) -> np.ndarray:
    with field_file.open("rb") as handle:
        data = np.frombuffer(handle.read(), np.uint8)
    image_bgr = cv2.imdecode(data, cv2.IMREAD_COLOR)
    if image_bgr is None:
        raise ValueError("not a readable image")  # gallery_embeddings names the image
    return cv2.cvtColor(image_bgr, cv2.COLOR_BGR2RGB)


def gallery_embeddings(campaign: Campaign, *, embedder=None, detector=None) -> tuple[np.ndarray, np.ndarray]:
    """Embeddings of every gallery image of the campaign's identities (practice identities,
    shown only in practice trials, are no part of the gallery).

    Returns
    -------
    embeddings : ndarray of shape (k, dim), float32
        ``dim = embedder.dim`` (default embedder: ``recognition.DEFAULT_EMBEDDER``).
    identity_codes : ndarray of shape (k,), str

    Raises
    ------
    ValueError
        Naming the image and its identity, if an image is unreadable or has no face
        (``automated.face_crop.NoFaceFoundError``).
    """
    from automated.face_eval import embed_gallery_image

    embedder = embedder or make_face_embedder()
    images = (
        # Practice identities (trials' practice people) appear in practice trials only.
        GalleryImage.objects.filter(identity__campaign=campaign, identity__practice=False)
        .select_related("identity")
        .order_by("id")
    )
    embeddings, codes = [], []
    for image in images:
        try:
            embeddings.append(
                embed_gallery_image(_read_image_rgb(image.image), embedder=embedder, detector=detector)
            )
        except ValueError as error:
            raise type(error)(
                f"gallery image {image.original_name or image.pk!r} of identity {image.identity.code}: {error}"
            ) from error
        codes.append(image.identity.code)
    return np.asarray(embeddings, np.float32).reshape(-1, embedder.dim), np.asarray(codes, dtype=str)


def _run_config(
    stride: int,
    detector: str,
    threshold: float | None,
    embedder: str = DEFAULT_EMBEDDER,
    behaviour: bool = True,
) -> dict:
    """Checked configuration of a run (one place for direct and queued runs).

    Records the detector, the embedder (``recognition.EMBEDDERS``), the threshold
    (default: the embedder's documented one) and ``behaviour`` (measure behaviour
    preservation, ``automated.behaviour``; a run config without the key measures it).

    Raises
    ------
    ValueError
        Naming a bad ``stride`` (not a whole number >= 1), ``detector``, ``embedder``,
        ``threshold`` or ``behaviour`` (not a bool).
    """
    if not isinstance(behaviour, bool):
        raise ValueError(f"behaviour must be true or false, got {behaviour!r}")
    check_stride(stride)
    threshold = embedder_spec(embedder).threshold if threshold is None else threshold
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, (int, float))
        or not 0 <= threshold < math.inf
    ):
        raise ValueError(f"threshold must be a finite L2 distance >= 0, got {threshold!r}")
    make_face_detector(detector).close()  # validates the name before a run row exists
    return {
        "stride": stride,
        "detector": detector,
        "embedder": embedder,
        "threshold": float(threshold),
        "behaviour": behaviour,
    }


def check_complete(submission: Submission, kind: str) -> None:
    """Raise ValueError if some source videos have no masked video, naming them and the way out.

    The way out is what really lets a run of ``kind`` ("face": ``manage.py evaluate``,
    "attack": ``manage.py attack``) go ahead: the command's ``--allow-incomplete`` or the
    ``allow_incomplete`` option of the API (``automated.django_app.api``).

    Raises
    ------
    ValueError
        ``"submission 'T / m' is incomplete: 1 of 3 source videos have no masked video
        (lwbsza); upload them, or run on the masked ones anyway: `manage.py evaluate 7
        --allow-incomplete`, or in the API POST /api/submissions/7/runs/ {"kind": "face",
        "allow_incomplete": true} (/evaluate/: {"face": {"allow_incomplete": true}})"``.
    """
    missing = list(submission.missing_source_videos().order_by("name").values_list("name", flat=True))
    if not missing:
        return
    n_sources = submission.campaign.source_videos.count()
    shown = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
    command = {"face": "evaluate", "attack": "attack"}[kind]
    pk = submission.pk
    raise ValueError(
        f"submission {str(submission)!r} is incomplete: {len(missing)} of {n_sources} source videos have no "
        f"masked video ({shown}); upload them, or run on the masked ones anyway: "
        f"`manage.py {command} {pk} --allow-incomplete`, or in the API "
        f'POST /api/submissions/{pk}/runs/ {{"kind": "{kind}", "allow_incomplete": true}} '
        f'(/evaluate/: {{"{kind}": {{"allow_incomplete": true}}}})'
    )


def _check_evaluable(submission: Submission, *, allow_incomplete: bool) -> None:
    """Refuse a submission without masked videos, or an incomplete one unless allowed.

    A summary over a subset of the source videos is not comparable with other teams'
    summaries, so evaluating an incomplete submission is an explicit choice.
    """
    if not submission.masked_videos.exists():
        n_sources = submission.campaign.source_videos.count()
        raise ValueError(
            f"submission {str(submission)!r} has no masked video yet ({n_sources} source videos)"
        )
    if not allow_incomplete:
        check_complete(submission, "face")


def create_face_run(
    submission: Submission,
    *,
    stride: int = 5,
    detector: str = "mediapipe",
    threshold: float | None = None,
    embedder: str = DEFAULT_EMBEDDER,
    allow_incomplete: bool = False,
    behaviour: bool = True,
) -> AutomatedRun:
    """Check the options and the submission, then create a PENDING run planning ``FACE_RUN.plan``.

    Planned: every current masked video except those of attacker training material
    (``FaceRunKind.plan``). Options and errors as ``run_face_evaluation``; nothing is
    created when they raise.
    ``dispatch.start_run`` queues its tasks; ``run_face_evaluation`` executes it here.
    """
    config = _run_config(stride, detector, threshold, embedder, behaviour)
    _check_evaluable(submission, allow_incomplete=allow_incomplete)
    planned = list(FACE_RUN.plan(submission).values_list("pk", flat=True))
    if not planned:
        raise ValueError(
            f"submission {str(submission)!r} has masked videos of attacker training material only; "
            "the face evaluation scores the other videos"
        )
    return AutomatedRun.objects.create(
        submission=submission, config=config, planned_videos=planned, videos_total=len(planned)
    )


def run_face_evaluation(
    submission: Submission,
    *,
    stride: int = 5,
    detector: str = "mediapipe",
    threshold: float | None = None,
    embedder: str = DEFAULT_EMBEDDER,
    allow_incomplete: bool = False,
    behaviour: bool = True,
) -> AutomatedRun:
    """Create and execute an automated face evaluation run of ``submission`` (``embedded.execute_run``: its pool).

    Every masked video but those of attacker training material (``SourceVideo.attacker_train``:
    the attack trains on them, they are never scored) is scored against its source video
    and the gallery of ALL the campaign's identities (``face_eval.evaluate_video``); one
    ``VideoScore`` per planned masked video. A source video without a face in its tested frames gets NULL face scores
    (``no_face="nan"``). Reports show the latest completed run; earlier runs are kept.
    The units are those Celery workers run (``lifecycle``, ``FACE_RUN``); to share a run
    among workers, start it with ``dispatch.start_run("face", ...)``.

    Parameters
    ----------
    submission : Submission
    stride : int, default=5
        Test every ``stride``-th frame.
    detector : str, default="mediapipe"
        A ``detection.DETECTOR_NAMES`` name.
    threshold : float, optional
        Verification threshold on the L2 embedding distance; default the embedder's
        documented threshold (0.6 for dlib's ResNet).
    embedder : str, default=recognition.DEFAULT_EMBEDDER
        A ``recognition.EMBEDDER_NAMES`` name.
    allow_incomplete : bool, default=False
        Evaluate a submission that lacks masked videos for some source videos.
    behaviour : bool, default=True
        Also measure behaviour preservation (``automated.behaviour.evaluate_behaviour``:
        head pose, gaze, eyes, mouth, expression, body) into ``VideoScore.behaviour_*``.

    Returns
    -------
    AutomatedRun
        Completed, with its ``video_scores``.

    Raises
    ------
    ValueError
        On a bad ``stride``, ``detector``, ``embedder`` or ``threshold``, a submission without masked
        videos (or with only attacker training videos masked), or an incomplete one without ``allow_incomplete`` (no run is created);
        on a failure during the run (the run is stored as failed with the message,
        naming the source video, in ``error``; then the error is re-raised).
    """
    run = create_face_run(
        submission,
        stride=stride,
        detector=detector,
        threshold=threshold,
        embedder=embedder,
        allow_incomplete=allow_incomplete,
        behaviour=behaviour,
    )
    return embedded.execute_run(FACE_RUN, run)


def _cached_gallery(campaign: Campaign, *, embedder, detector) -> tuple[np.ndarray, np.ndarray]:
    """``gallery_embeddings`` memoised per process: every video task of a run needs the same gallery.

    The key holds the gallery images (id and stored name: a replaced image has a new
    name), the detector's and the embedder's settings.
    """
    images = tuple(
        GalleryImage.objects.filter(identity__campaign=campaign, identity__practice=False)
        .order_by("id")
        .values_list("id", "image")
    )
    key = (campaign.pk, images, detector_key(detector), embedder.cache_key())
    if key not in _GALLERY_CACHE:
        if len(_GALLERY_CACHE) >= _GALLERY_CACHE_MAX:
            _GALLERY_CACHE.clear()
        _GALLERY_CACHE[key] = gallery_embeddings(campaign, embedder=embedder, detector=detector)
    return _GALLERY_CACHE[key]


class FaceRunKind(lifecycle.RunKind):
    """Face evaluation in the run lifecycle: one ``VideoScore`` per planned masked video, no final step."""

    name = "face"
    model = AutomatedRun
    result_model = VideoScore

    def plan(self, submission):
        """Current masked videos of ``submission`` but attacker training material, by source-video name."""
        return super().plan(submission).without_attacker_training()

    def compute_video(self, run: AutomatedRun, masked: MaskedVideo) -> dict:
        """``face_eval.evaluate_video`` of one masked video; the ``VideoScore`` field values.

        Raises
        ------
        MissingGalleryError
            Naming every identity of the run's videos without a gallery image.
        ValueError
            From the evaluation, prefixed with the source video's name.
        """
        from automated.attack.faces import CropPass
        from automated.behaviour.leakage import attribute_samples
        from automated.face_eval import evaluate_video

        config = run.config
        stride, detector_name = int(config.get("stride", 5)), config.get("detector", "mediapipe")
        embedder = make_face_embedder(config.get("embedder", LEGACY_EMBEDDER))
        threshold = float(config.get("threshold", embedder.threshold))
        if len(_CLEAR_CACHE) > _CLEAR_CACHE_MAX_VIDEOS:
            _CLEAR_CACHE.clear()
        source = masked.source_video
        with make_face_detector(detector_name) as detector:
            embeddings, codes = _cached_gallery(run.submission.campaign, embedder=embedder, detector=detector)
            wanted = set(
                MaskedVideo.objects.filter(pk__in=run.planned_videos).values_list(
                    "source_video__identity__code", flat=True
                )
            )
            missing = sorted(wanted - set(codes))
            if missing:
                raise MissingGalleryError(f"identities without a gallery image: {', '.join(missing)}")
            with (
                local_path(source.file) as clear_path,
                local_path(masked.file) as masked_path,
                torch_threads(settings.TORCH_NUM_THREADS),
                contextlib.ExitStack() as stack,
            ):
                try:
                    # Behaviour rides on the face evaluation's decoding pass (one decode per pair),
                    # and so do the attack's face crops (its per-video unit then reads them).
                    behaviour = (
                        stack.enter_context(_behaviour_pass(clear_path, stride))
                        if config.get("behaviour", True)
                        else None
                    )
                    crops = stack.enter_context(
                        CropPass(
                            clear_path,
                            masked_path,
                            stride=stride,
                            detector=detector_name,
                            cache_dir=crop_cache_dir(),
                        )
                    )
                    evaluation = evaluate_video(
                        clear_path,
                        masked_path,
                        embeddings,
                        codes,
                        source.identity.code,
                        stride=stride,
                        detector=detector,
                        embedder=embedder,
                        threshold=threshold,
                        clear_cache=_CLEAR_CACHE,
                        clear_cache_dir=Path(settings.CACHE_DIR) / "clear_side",
                        no_face="nan",
                        observers=[crops] if behaviour is None else [behaviour, crops],
                    )
                    values = VideoScore.metric_values(evaluation)
                    if behaviour is not None:
                        result = behaviour.result()
                        values.update(VideoScore.behaviour_values(result.metrics))
                        values["attribute_samples"] = attribute_samples(result.clear, result.masked)
                except ValueError as error:  # stored files have opaque names: say which video
                    raise type(error)(f"source video {source.name!r}: {error}") from error
        return values


def crop_cache_dir() -> Path:
    """The attack's face crops on disk (``attack.faces.video_face_crops``' cache, read by the
    attack's units), filled by the face evaluation's decoding pass (``attack.faces.CropPass``)."""
    return Path(settings.CACHE_DIR) / "attack_faces"


# Clear- and masked-side behaviour extractors per thread, reused over videos (loading the
# models costs about 0.6 CPU s per pair; every model runs in static-image mode, so nothing
# carries over from one video to the next).
_BEHAVIOUR_EXTRACTORS = threading.local()


def _behaviour_pass(clear_path, stride: int) -> BehaviourPass:
    """The behaviour measurement of a face run's video (``automated.behaviour.BehaviourPass``).

    Every model, with the gender attacker (``attribute``) for the leakage report; the
    clear side is cached on disk under ``CACHE_DIR/behaviour`` (content hash + settings)
    for every later video of the same source and every later run.
    """
    from automated.behaviour import BehaviourExtractor, BehaviourPass

    extractors = getattr(_BEHAVIOUR_EXTRACTORS, "pair", None)
    if extractors is None:
        extractors = (BehaviourExtractor(attribute=True), BehaviourExtractor(attribute=True))
        _BEHAVIOUR_EXTRACTORS.pair = extractors
    return BehaviourPass(
        clear_path, stride=stride, cache_dir=Path(settings.CACHE_DIR) / "behaviour", extractors=extractors
    )


#: The face evaluation's run kind (``dispatch.RUN_KINDS["face"]``).
FACE_RUN = FaceRunKind()


def _as_evaluation(score: VideoScore, config: dict) -> VideoEvaluation:
    """Rebuild a ``VideoEvaluation`` from a stored row (NULL -> NaN; NULL PSNR of identical frames -> +inf)."""
    values = {}
    for name in METRIC_FIELDS:
        value = getattr(score, name)
        if value is None:
            identical = (
                score.psnr_identical_frames is not None and score.psnr_identical_frames == score.frames_tested
            )
            value = math.inf if name == "psnr_db" and identical else math.nan
        values[name] = value
    return VideoEvaluation(
        stride=int(config.get("stride", 0)),
        detector=str(config.get("detector", "")),
        threshold=float(config.get("threshold", MATCH_THRESHOLD)),
        embedder=str(config.get("embedder", LEGACY_EMBEDDER)),
        **values,
    )


def run_summary(run: AutomatedRun) -> dict:
    """Per-submission summary of a run (``face_eval.summarize`` over its stored video scores).

    Over ``VideoScore.objects.reported()``: current masked videos, attacker training
    material left out (also from an older run that scored it). Non-finite values (undefined metrics, PSNR of videos identical to their source) are
    None, so the summary is valid JSON. A run without scores gives ``n_videos = 0``.
    """
    from automated.face_eval import summarize

    scores = list(run.video_scores.reported())
    summary: dict = {"run_id": run.pk, **run.config}
    if not scores:
        return {**summary, "n_videos": 0}
    for name, value in summarize(_as_evaluation(s, run.config) for s in scores).items():
        summary[name] = None if isinstance(value, float) and not math.isfinite(value) else value
    return summary
