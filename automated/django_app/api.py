"""REST API of automated runs: start runs of a submission and follow their progress.

Served as an action of ``evalsite.portal.api.SubmissionViewSet`` (staff only, the submission
looked up among the user's campaigns, so another campaign's submission is a 404):

- ``GET /api/submissions/<id>/runs/``: the submission's runs of every kind, newest first,
  each with ``status``, ``videos_done`` / ``videos_total`` and ``error``.
- ``POST /api/submissions/<id>/runs/`` with ``{"kind": "face", "stride": 5, ...}`` or
  ``{"kind": "attack", "attackers": [...], ...}``: one part of evaluate everything
  (``evaluate_all.evaluate_everything`` with ``parts=[kind]``, the path of the admin
  actions): the run with its ``state`` (``"started"``, ``"running"``: one of the kind was
  already pending or running, ``"up to date"``: the latest completed run is current with
  the options given; nothing started) and ``detail``; 202 while the run is pending or
  running, 201 when it started and already finished, 200 up to date, 400 naming a bad
  option or why the run cannot start, 403 without the add permission of the run model,
  503 if the broker cannot be reached.
- ``POST /api/submissions/<id>/evaluate/`` with an optional ``{"face": {...}, "attack":
  {...}}`` (each the options above, without ``kind``): evaluate everything
  (``evaluate_all.evaluate_everything``): starts each part not already running or up to
  date. ``{"parts": [{"kind", "state", "run_id", "detail", "run"}], "progress_url"}``;
  202 while a run of a part is pending or running, 201 when this call started runs that
  already finished, 200 when it started none, 400 naming a bad option, 403 without the
  add permission of every run model, 503 if the broker cannot be reached.

Both answer at once: without a broker the runs execute in a thread of the server
(``embedded``), and the states say truthfully what is: a run "started" by the call is
pending or running, an up-to-date part is "up to date" and starts nothing.
"""

from __future__ import annotations

from rest_framework import serializers, status
from django.urls import reverse
from rest_framework.response import Response

from automated.attack.attackers import ATTACKERS, DEFAULT_ATTACKERS
from automated.attack.names import ALL, RECOGNIZER_NAMES, SELECTION_STRATEGIES
from automated.detection import DETECTOR_NAMES
from automated.recognition import DEFAULT_EMBEDDER, EMBEDDER_NAMES
from evalsite.bodies import BooleanField

from . import dispatch, evaluate_all, lifecycle, rerun, run_progress
from .run_progress import run_payload
from .attack_service import DEFAULT_RECOGNIZERS


class _Options(serializers.Serializer):
    def to_internal_value(self, data):
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError(
                {name: [f"unknown option; known: {', '.join(self.fields)}"] for name in unknown}
            )
        return super().to_internal_value(data)


class FaceRunOptions(_Options):
    """Options of a face evaluation run (``services.run_face_evaluation``)."""

    stride = serializers.IntegerField(min_value=1, default=5, help_text="test every N-th frame")
    detector = serializers.ChoiceField(DETECTOR_NAMES, default="mediapipe")
    embedder = serializers.ChoiceField(
        EMBEDDER_NAMES, default=DEFAULT_EMBEDDER, help_text="face embedder (automated.recognition.EMBEDDERS)"
    )
    threshold = serializers.FloatField(
        min_value=0,
        required=False,
        help_text="verification threshold on the L2 embedding distance (default: the embedder's own)",
    )
    allow_incomplete = BooleanField(default=False)
    behaviour = BooleanField(
        default=True, help_text="also measure behaviour preservation (automated.behaviour)"
    )


class AttackRunOptions(_Options):
    """Options of an attack run (``attack_service.attack_config``)."""

    attackers = serializers.ListField(
        child=serializers.ChoiceField(list(ATTACKERS)), allow_empty=False, default=list(DEFAULT_ATTACKERS)
    )
    recognizers = serializers.ListField(
        child=serializers.ChoiceField(list(RECOGNIZER_NAMES)),
        allow_empty=False,
        default=list(DEFAULT_RECOGNIZERS),
    )
    selection = serializers.ListField(
        child=serializers.ChoiceField([ALL, *SELECTION_STRATEGIES]), allow_empty=False, default=[ALL]
    )
    stride = serializers.IntegerField(min_value=1, default=5, help_text="frames")
    gap = serializers.IntegerField(min_value=0, default=10, help_text="frames")
    seed = serializers.IntegerField(min_value=0, max_value=2**32 - 1, default=0)
    detector = serializers.ChoiceField(DETECTOR_NAMES, default="mediapipe")
    allow_incomplete = BooleanField(default=False)
    n_folds = serializers.IntegerField(
        min_value=2, required=False, help_text="cross-video folds by video (default: leave one video out)"
    )
    scene_memorisation = BooleanField(
        required=False, help_text="also the within-video table, shown apart (default true)"
    )
    verification = BooleanField(
        required=False, help_text="CMC, EER and FNMR at FMR of the pretrained embedding (default true)"
    )


OPTIONS = {"face": FaceRunOptions, "attack": AttackRunOptions}


def submission_runs(request, submission) -> Response:
    """``GET``: the runs of ``submission``; ``POST``: start one (see the module docstring)."""
    if request.method != "POST":
        return Response([run_payload(run) for run in run_progress.submission_runs(submission)])
    data = request.data
    if not isinstance(data, dict):
        return Response(
            {"detail": "send a JSON object with 'kind' and the run's options"},
            status=status.HTTP_400_BAD_REQUEST,
        )
    options = dict(data)
    kind = options.pop("kind", None)
    if kind not in OPTIONS:
        return Response(
            {"kind": [f"choose one of {', '.join(OPTIONS)}; got {kind!r}"]},
            status=status.HTTP_400_BAD_REQUEST,
        )
    opts = dispatch.RUN_KINDS[kind].kind.model._meta
    if not request.user.has_perm(f"{opts.app_label}.add_{opts.model_name}"):
        return Response(
            {"detail": f"you may not start {opts.verbose_name_plural}"}, status=status.HTTP_403_FORBIDDEN
        )
    checked = OPTIONS[kind](data=options)
    if not checked.is_valid():
        return Response(checked.errors, status=status.HTTP_400_BAD_REQUEST)
    # Only the options given: the others keep the run's own defaults (as /evaluate/).
    asked = {name: value for name, value in checked.validated_data.items() if name in options}
    (outcome,) = evaluate_all.evaluate_everything(submission, {kind: asked}, background=True, parts=[kind])
    if outcome.state == evaluate_all.WAITING:
        return Response({"detail": outcome.detail}, status=status.HTTP_400_BAD_REQUEST)
    body = {**run_payload(outcome.run), "state": outcome.state, "detail": outcome.detail}
    return Response(body, status=_status(outcome.state, outcome.run))


def _status(state: str, run) -> int:
    """503 not queued; 202 a run pending or running; 201 started and already finished; 200 up to date."""
    if state == evaluate_all.NOT_QUEUED:
        return status.HTTP_503_SERVICE_UNAVAILABLE
    if run is not None and run.status in lifecycle.ACTIVE:
        return status.HTTP_202_ACCEPTED
    if state == evaluate_all.STARTED:
        return status.HTTP_201_CREATED
    return status.HTTP_200_OK


def _checked_options(data: dict) -> tuple[dict, dict]:
    """(options per part, errors per part) of a request body ``{"face": {...}, "attack": {...}}``:
    only the options given (the others keep the run's own defaults, e.g. the embedder's threshold)."""
    options, errors = {}, {}
    for kind in evaluate_all.PARTS:
        if kind not in data:
            continue  # the part's default options (evaluate_all.DEFAULT_OPTIONS)
        given = data[kind] if data[kind] is not None else {}
        if not isinstance(given, dict):
            errors[kind] = ["send the part's options as a JSON object"]
            continue
        checked = OPTIONS[kind](data=given)
        if not checked.is_valid():
            errors[kind] = checked.errors
            continue
        options[kind] = {name: value for name, value in checked.validated_data.items() if name in given}
    return options, errors


def campaign_rerun(request, campaign, phase=None) -> Response:
    """``POST``: re-run everything of ``campaign`` (or ``phase``) with its settings, changed first by
    the body's ``{"face": {...}, "attack": {...}}`` (``rerun.rerun_campaign``); 400 for bad options,
    403 without the permission to start runs. Answers the settings and each submission's parts."""
    data = request.data if request.data is not None else {}
    unknown = sorted(set(data) - set(evaluate_all.PARTS)) if isinstance(data, dict) else ["body"]
    if unknown:
        return Response(
            {name: [f"unknown part; parts are {', '.join(evaluate_all.PARTS)}"] for name in unknown},
            status=status.HTTP_400_BAD_REQUEST,
        )
    if not evaluate_all.may_evaluate(request.user):
        return Response(
            {"detail": "you may not start automated runs (face evaluation and attack)"},
            status=status.HTTP_403_FORBIDDEN,
        )
    options, errors = _checked_options(data)
    if errors:
        return Response(errors, status=status.HTTP_400_BAD_REQUEST)
    outcomes = rerun.rerun_campaign(campaign, options, phase=phase, background=True)
    submissions = [
        {
            "submission": submission.pk,
            "parts": [{**o.as_dict(), "run": None if o.run is None else run_payload(o.run)} for o in parts],
        }
        for submission, parts in outcomes
    ]
    return Response(
        {"campaign": campaign.pk, "settings": campaign.evaluation_options, "submissions": submissions}
    )


def submission_evaluate(request, submission) -> Response:
    """``POST``: evaluate everything for ``submission`` (see the module docstring)."""
    data = request.data if request.data is not None else {}
    if not isinstance(data, dict):
        return Response(
            {"detail": "send a JSON object (optionally with 'face' and 'attack' options)"},
            status=status.HTTP_400_BAD_REQUEST,
        )
    unknown = sorted(set(data) - set(evaluate_all.PARTS))
    if unknown:
        return Response(
            {name: [f"unknown part; parts are {', '.join(evaluate_all.PARTS)}"] for name in unknown},
            status=status.HTTP_400_BAD_REQUEST,
        )
    if not evaluate_all.may_evaluate(request.user):
        return Response(
            {"detail": "you may not start automated runs (face evaluation and attack)"},
            status=status.HTTP_403_FORBIDDEN,
        )
    options, errors = _checked_options(data)
    if errors:
        return Response(errors, status=status.HTTP_400_BAD_REQUEST)
    outcomes = evaluate_all.evaluate_everything(submission, options, background=True)
    parts = [{**o.as_dict(), "run": None if o.run is None else run_payload(o.run)} for o in outcomes]
    body = {
        "submission": submission.pk,
        "parts": parts,
        "progress_url": request.build_absolute_uri(
            reverse("automated:submission_progress", args=[submission.pk])
        ),
    }
    codes = [_status(o.state, o.run) for o in outcomes]
    for code in (status.HTTP_503_SERVICE_UNAVAILABLE, status.HTTP_202_ACCEPTED, status.HTTP_201_CREATED):
        if code in codes:
            return Response(body, status=code)
    return Response(body, status=status.HTTP_200_OK)
