"""Rater pages (join, consent, instructions, trials, completion) and the media view.

A rater is identified by the rating-session id kept in the Django session (set on join);
every trial, answer and media URL is looked up through that session, so a rater can reach
only their own trials. URLs carry opaque random tokens only (DESIGN.md, security stance).
"""

from __future__ import annotations

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import F, Value
from django.db.models.functions import Greatest
from django.http import Http404, HttpResponse, HttpResponseForbidden, HttpResponseNotAllowed, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_POST

from evalsite.bodies import BadBody, json_object_body
from evalsite.models import Campaign

from . import assignment, browser, integrity, plausibility, screening
from .design import PRACTICE
from .forms import JoinForm, ResponseForm, TrialStateForm
from . import variants
from .media import ensure_catch_video, ensure_gallery_crop, not_prepared_response
from .models import Item, Rater, RatingSession, SessionState, Task, Trial, TrialFace, TrialKind

SESSION_KEY = "trials_rating_session"


def _bound_session(request) -> RatingSession | None:
    """The rating session this Django session points to, whichever browser it is bound to."""
    pk = request.session.get(SESSION_KEY)
    if pk is None:
        return None
    # Unique look-ups (a pk, a token) here order by pk: the models' default orders join
    # the session's campaign (and a trial's session) for nothing, on every rater request.
    return RatingSession.objects.select_related("campaign", "rater").filter(pk=pk).order_by("pk").first()


def _rating_session(request) -> RatingSession | None:
    """The rater's session, only in the browser it is bound to (:mod:`trials.browser`)."""
    session = _bound_session(request)
    return session if session is not None and browser.same_browser(request, session) else None


def _campaign_full(campaign, code, user) -> bool:
    """True when every evaluated item has all its responses and this would be a new
    participant (late raters would get only practice and checks); a returning one resumes.

    Open claims do not make a study full: while responses are missing, new participants
    are assigned items others hold (over-assignment, ``TRIALS_OVERASSIGN``).
    """
    lookup = {"user": user} if user is not None else {"participant_code": code}
    if Rater.objects.filter(campaign=campaign, **lookup).exists():
        return False
    if not settings.TRIALS_OVERASSIGN:  # raters would wait for open claims to lapse
        return not Item.objects.least_completed_first(campaign).exists()
    return not Item.objects.missing_responses(campaign).exists()


def _other_browser(request, campaign):
    return render(request, "trials/other_browser.html", {"campaign": campaign}, status=403)


def join(request, join_code: str):
    """Join a campaign by its link, with a participant code or the logged-in rater account.

    The join link's crowd-platform parameters (``PROLIFIC_PID``, ``STUDY_ID`` ...) are
    recorded; the session is bound to this browser by a secret cookie, and a second
    browser with the same code gets a page saying the session is open elsewhere.
    """
    campaign = get_object_or_404(Campaign, join_code=join_code)
    if not campaign.rating_open:
        return render(request, "trials/closed.html", status=403)
    suggested = (
        request.GET.get("participant") or request.GET.get("PROLIFIC_PID") or request.GET.get("workerId", "")
    )
    form = JoinForm(request.POST or None, initial={"participant_code": suggested[:200]})
    if request.method == "POST" and form.is_valid():
        code = form.cleaned_data["participant_code"]
        user = request.user if request.user.is_authenticated and not code else None
        if code or user:
            if _campaign_full(campaign, code, user):
                return render(request, "trials/full.html", {"campaign": campaign}, status=403)
            key = browser.browser_key(request)
            try:
                params = browser.platform_params(request.GET)
            except browser.ConflictingPlatformParams as conflict:
                context = {"campaign": campaign, "message": str(conflict)}
                return render(request, "trials/refused.html", context, status=400)
            try:
                address = integrity.client_address(request)
                session = assignment.join(
                    campaign,
                    participant_code=code,
                    user=user,
                    browser_hash=browser.key_hash(key),
                    address_hash=integrity.address_hash(campaign.pk, address),
                    network_hash=integrity.network_hash(campaign.pk, address),
                    platform_params=params,
                )
            except assignment.OtherBrowser:
                return _other_browser(request, campaign)
            except integrity.JoinRefused as refusal:
                context = {"campaign": campaign, "message": str(refusal)}
                response = render(request, "trials/refused.html", context, status=403)
                browser.set_cookie(response, key)  # the same browser is recognised next time
                return response
            request.session.cycle_key()
            request.session[SESSION_KEY] = session.pk
            response = redirect("trials:session")
            browser.set_cookie(response, key)
            return response
        form.add_error("participant_code", "Enter your participant code or log in with a rater account.")
    return render(request, "trials/join.html", {"form": form, "campaign": campaign})


@ensure_csrf_cookie  # the trial page's JavaScript sends answers with the CSRF header
def session_page(request):
    """Where the rater is now: consent, instructions, the current trial, or completion."""
    session = _bound_session(request)
    if session is None:
        return render(request, "trials/no_session.html", status=403)
    if not browser.same_browser(request, session):
        return _other_browser(request, session.campaign)
    if session.state == SessionState.DECLINED:
        return render(request, "trials/declined.html", {"campaign": session.campaign})
    if session.state == SessionState.SCREENED_OUT:
        context = {
            "session": session,
            "campaign": session.campaign,
            "url": screening.screen_out_url(session.campaign),
        }
        return render(request, "trials/screened_out.html", context)
    if session.state == SessionState.CONSENT:
        return render(request, "trials/consent.html", {"session": session, "campaign": session.campaign})
    if session.state == SessionState.INSTRUCTIONS:
        return render(request, "trials/instructions.html", _instructions_context(session))
    if session.state == SessionState.RUNNING:
        if not session.campaign.rating_open:
            return render(request, "trials/closed.html", status=403)
        trial = assignment.current_trial(session)
        if trial is not None:
            return render(request, "trials/trial.html", _trial_context(session, trial))
        session.refresh_from_db()
    return render(request, "trials/complete.html", _complete_context(session))


def _complete_context(session) -> dict:
    url = session.campaign.completion_url
    return {"session": session, "completion_url": url.replace("{completion_code}", session.completion_code)}


def _instructions_context(session):
    return {
        "session": session,
        "campaign": session.campaign,
        "n_faces": session.campaign.foils_per_trial + 1,
        "has_actions": bool(session.campaign.action_vocabulary),
        "n_practice": session.plan.count("practice"),
    }


def _trial_context(session, trial: Trial) -> dict:
    session.refresh_from_db(fields=["position"])
    now = timezone.now()
    # Server-side start of the response time: the first time this trial page was served.
    # A reload keeps it, keeps the replays and watch time so far (trial_state) and counts
    # as a replay (the video starts again).
    if Trial.objects.filter(pk=trial.pk, shown_at=None).update(shown_at=now, page_views=1):
        trial.shown_at = now
    else:
        Trial.objects.filter(pk=trial.pk).update(page_views=F("page_views") + 1, replays=F("replays") + 1)
        trial.refresh_from_db(fields=["shown_at", "replays", "watch_time_ms"])
    practice = trial.kind == TrialKind.PRACTICE
    kinds = session.plan
    # Headings and the progress bar count trials of the study (evaluated and checks, which
    # look alike), practice separately; skipped positions are not counted twice.
    n_done = (
        session.trials.filter(completed=True, position__lt=session.position)
        .exclude(kind=TrialKind.PRACTICE)
        .count()
    )
    faces = list(trial.faces.order_by("position")) if trial.task == Task.IDENTITY else []
    actions = list(session.campaign.action_vocabulary) if trial.task == Task.ACTION else []
    config = {
        "respond_url": reverse("trials:respond", args=[trial.token]),
        "next_url": reverse("trials:session"),
        "practice": practice,
        "state_url": reverse("trials:trial_state", args=[trial.token]),
        "heartbeat_url": reverse("trials:heartbeat", args=[trial.token]),
        "heartbeat_ms": max(1000, settings.TRIALS_CLAIM_TIMEOUT_S * 1000 // 4),
        "replays": trial.replays,
        "watch_time_ms": trial.watch_time_ms,
        "elapsed_ms": max(0, int((now - trial.shown_at).total_seconds() * 1000)),
        "keys": [str(face.position) for face in faces] + ["0"]
        if faces
        else [str(i) for i in range(1, len(actions) + 1)],
    }
    return {
        "session": session,
        "trial": trial,
        "faces": faces,
        "actions": actions,
        "media_url": reverse("trials:media", args=[trial.media_token]),
        "position": (kinds[: session.position].count(PRACTICE) + 1) if practice else n_done + 1,
        "total": kinds.count(PRACTICE) if practice else len(kinds) - kinds.count(PRACTICE),
        "n_done": 0 if practice else n_done,
        "config": config,
    }


@require_POST
def consent(request):
    session = _rating_session(request)
    if session is None:
        return HttpResponseForbidden()
    if session.state == SessionState.CONSENT and request.POST.get("decline") == "yes":
        # Nothing is kept beyond the decline itself: no plan, no platform parameters.
        RatingSession.objects.filter(pk=session.pk, state=SessionState.CONSENT).update(
            state=SessionState.DECLINED, plan=[]
        )
        Rater.objects.filter(pk=session.rater_id).update(platform_params={})
        return redirect("trials:session")
    if session.state == SessionState.CONSENT and request.POST.get("agree") == "yes":
        reason = screening.screen_out_reason(
            session.campaign,
            request.headers.get("User-Agent", ""),
            request.POST.get("screen_width"),
            request.POST.get("screen_height"),
        )
        if reason:  # the device gate: out before any trial, with the campaign's screen-out code
            RatingSession.objects.filter(pk=session.pk, state=SessionState.CONSENT).update(
                state=SessionState.SCREENED_OUT,
                consented_at=timezone.now(),
                screen_out_reason=reason,
                plan=[],
            )
            return redirect("trials:session")
        RatingSession.objects.filter(pk=session.pk, state=SessionState.CONSENT).update(
            state=SessionState.INSTRUCTIONS, consented_at=timezone.now()
        )
    return redirect("trials:session")


@require_POST
def start(request):
    session = _rating_session(request)
    if session is None:
        return HttpResponseForbidden()
    RatingSession.objects.filter(pk=session.pk, state=SessionState.INSTRUCTIONS).update(
        state=SessionState.RUNNING
    )
    return redirect("trials:session")


def respond(request, token: str):
    """Store an answer (JSON body); idempotent: a resent answer returns the first one."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    session = _rating_session(request)
    if session is None:
        return JsonResponse({"error": "no rating session"}, status=403)
    trial = Trial.objects.filter(token=token, session=session).order_by("pk").first()
    if trial is None:
        return JsonResponse({"error": "unknown trial"}, status=404)
    try:
        payload = json_object_body(request)
    except BadBody as error:  # not JSON, not UTF-8, too deep, too long, wrong content type
        return JsonResponse({"error": str(error)}, status=error.status)
    form = ResponseForm(payload)
    if not form.is_valid():
        return JsonResponse({"error": "invalid answer", "fields": form.errors.get_json_data()}, status=400)
    try:
        response, created = assignment.record_response(trial, form.cleaned_data)
    except assignment.TrialExpired:
        return JsonResponse(
            {
                "error": "trial expired",
                "message": "This trial was open too long and went to another rater; your answer was not "
                "stored. The next trial is loading.",
                "next": reverse("trials:session"),
            },
            status=409,
        )
    except ValueError as error:
        return JsonResponse({"error": str(error)}, status=400)
    body = {"stored": True, "duplicate": not created, "next": reverse("trials:session")}
    if assignment.gives_feedback(trial):
        body["feedback"] = {"correct": response.correct, "correct_choice": trial.correct_choice}
    return JsonResponse(body)


def trial_state(request, token: str):
    """Replays and watch time so far of the rater's unanswered trial (JSON body), sent by
    the trial page when it is hidden or left, so a reload continues from them.

    Values only grow (a late or repeated report changes nothing); 204 on success.
    """
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    session = _rating_session(request)
    if session is None:
        return JsonResponse({"error": "no rating session"}, status=403)
    try:
        form = TrialStateForm(json_object_body(request))
    except BadBody as error:
        return JsonResponse({"error": str(error)}, status=error.status)
    if not form.is_valid():
        return JsonResponse({"error": "invalid state", "fields": form.errors.get_json_data()}, status=400)
    trials = Trial.objects.filter(token=token, session=session, completed=False)
    trial = trials.only("media_fetched_at").order_by("pk").first()
    if trial is None:
        return JsonResponse({"error": "unknown or answered trial"}, status=404)
    # The page's word, capped by the server-side time since the video's first request.
    watch_ms = plausibility.capped_watch_ms(trial, form.cleaned_data["watch_time_ms"], timezone.now())
    updated = trials.update(
        replays=Greatest("replays", Value(form.cleaned_data["replays"])),
        watch_time_ms=Greatest("watch_time_ms", Value(watch_ms)),
    )
    if not updated:
        return JsonResponse({"error": "unknown or answered trial"}, status=404)
    return HttpResponse(status=204)


def heartbeat(request, token: str):
    """Renew the claim of the rater's unanswered trial while its page is open (POST, no body).

    The trial page sends one every quarter of ``TRIALS_CLAIM_TIMEOUT_S``; a claim without
    them lapses and its item goes to other raters (:func:`trials.assignment.renew_claim`).
    204 while the trial is the rater's; 409 with the next page's URL when it is not.
    """
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    session = _rating_session(request)
    if session is None:
        return JsonResponse({"error": "no rating session"}, status=403)
    trial = Trial.objects.filter(token=token, session=session).order_by("pk").first()
    if trial is None:
        return JsonResponse({"error": "unknown trial"}, status=404)
    if assignment.renew_claim(trial):
        return HttpResponse(status=204)
    return JsonResponse({"error": "claim lapsed", "next": reverse("trials:session")}, status=409)


def media(request, token: str):
    """A trial's video (or attention-check video) or gallery face, only for the rater who owns it.

    Every file is the trial's own byte variant (:mod:`trials.variants`): re-rendered per
    trial, with sizes fixed by format (faces) or by campaign (videos), so no size or hash
    recurs across trials or tells attention checks apart. Each fetch is recorded for the
    plausibility checks (:mod:`trials.plausibility`): first request of a face and of the
    video, and the distinct bytes of the video sent. Gallery crops and catch videos are
    made when media are prepared (:func:`trials.tasks.prepare_campaign_media`; a catch
    video made here would make a check's first request slower than an evaluated
    trial's), else on first use (safe under concurrent first requests); a video without
    its browser copy is a 503.

    Media of a trial that is over (answered, or released when its claim lapsed) are a
    404 and are not made again: a re-fetch used to re-encode and store the video each
    time (0.5-0.8 s of CPU a request). Practice feedback needs no fetch: it marks the
    right answer on the page already loaded, whose video and faces the browser holds
    (``tests/trials/test_browser.py`` replays the video while the feedback is shown).
    """
    session = _rating_session(request)
    if session is None:
        raise Http404
    face = (
        TrialFace.objects.select_related("gallery_image", "trial")
        .filter(token=token, trial__session=session)
        .order_by("pk")  # unique token: no need of the default order's joins
        .first()
    )
    now = timezone.now()
    if face is not None:
        if face.trial.completed or face.trial.released:
            raise Http404
        TrialFace.objects.filter(pk=face.pk, fetched_at=None).update(fetched_at=now)
        return variants.png_variant_response(
            request, ensure_gallery_crop(face.gallery_image).file, face.token
        )
    trial = (
        Trial.objects.select_related("probe_image", "item__masked_video", "source_video")
        .filter(media_token=token, session=session)
        .order_by("pk")
        .first()
    )
    if trial is None or trial.completed or trial.released:
        raise Http404
    instruction = ""
    # Asked for every trial alike (a storage call only a check made would time it on S3).
    stored = variants.variant_stored(default_storage, trial.media_token)
    if trial.probe_image_id is not None:
        crop = ensure_gallery_crop(trial.probe_image)
        # A check's copy once made is what its rater keeps getting: its probe is not made
        # again inside this request (retired after a footage replacement, each range request
        # of an open check took 170-270 ms against 5-15 for an evaluated trial: hostile pass h61).
        if not stored:
            ensure_catch_video(crop)
        field = crop.catch_video  # after: a concurrent request's probe is read into a new FieldFile
        instruction = trial.correct_choice  # drawn as words and dots (trials.variants)
    else:
        video = trial.item.video_for_raters() if trial.item_id else trial.source_video
        # Web copies are made when rating opens (trials.tasks), never in a rater's request:
        # one not ready yet is a 503 with Retry-After, which the trial page retries.
        field = video.web_file
    if not field and not stored:
        return not_prepared_response()
    trials = Trial.objects.filter(pk=trial.pk)
    try:
        data = variants.stored_variant(
            field,
            trial.media_token,
            lock=lambda: list(trials.select_for_update()),
            total_size=lambda: variants.campaign_video_size(session.campaign),
            instruction=instruction,
        )
    except FileNotFoundError:
        return not_prepared_response()
    content = variants.content_length(data)
    # Stamped once the copy is ready to send, not when the request came: a rater can start
    # watching only then, and a slow first copy (a check's probe made now, a busy server)
    # must not count as watching time toward TRIALS_MIN_WATCH_PERCENT (trials.plausibility).
    trials.filter(media_fetched_at=None).update(media_fetched_at=timezone.now())
    trials.update(video_size=content)

    def on_sent(start: int, n: int) -> None:
        with transaction.atomic():
            blocks = bytes(trials.select_for_update().values_list("video_blocks_served", flat=True).get())
            blocks = variants.mark_blocks(blocks, start, n, content)
            trials.update(
                video_blocks_served=blocks, video_bytes_served=variants.distinct_bytes(blocks, content)
            )

    return variants.ranged_bytes_response(request, data, "video/mp4", on_sent)
