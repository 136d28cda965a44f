"""An organizer of campaign B sees nothing of campaign A, on every page the site has.

Nothing here lists pages by hand: the admin registry (``admin.site._registry``: every
model admin's changelist, add, change, delete and history pages, its actions and the
autocomplete of its relations) and the URL patterns (``get_resolver()`` walked
recursively, path parameters filled with campaign A's ids and tokens) are enumerated,
so a page added later is covered without touching this file. For every response to B
(body and headers) none of A's secrets may appear: identity codes, clear-video names,
participant codes, completion codes, rater account, team and submission names, the
campaign's name, opaque tokens (except those B put in the URL itself). GETs and POSTs
by B must not change any of A's rows either.

Positive controls make the checks mean something: A's own organizer sees A's objects
on the same admin pages and A's secrets on the same URLs. The last two tests prove the
checks fail for an unscoped admin (the one ``trials/admin.py`` had) and an unscoped URL.
"""

from __future__ import annotations

import csv
import json
import itertools
import re
import shutil
import sys
import types
from dataclasses import dataclass, field

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.auth.models import Permission, User
from django.contrib.contenttypes.models import ContentType
from django.http import HttpResponse
from django.test import Client
from django.urls import NoReverseMatch, URLResolver, get_resolver, path, reverse

from evalsite.importer import import_dataset
from evalsite.models import Campaign
from evalsite.scoping import is_scoped, scope
from evalsite.services import create_submission
from evalsite.validation import ingest_submission_zip
from trials import assignment
from trials.models import Rater, RatingSession, SessionState
from trials.services import open_rating

from .conftest import make_zip

# The rater join link is a capability by design (DESIGN.md): whoever holds it may join
# and sees the campaign's consent page. It is filled with B's own join code.
CAPABILITY_PARAMETERS = {"trials:join": "join_code"}
#: Unnamed regex patterns cannot be reversed; Django's admin catch-all is the only one allowed.
UNNAMED_ALLOWED = {"catch_all_view"}
MAX_COMBINATIONS = 300

ALPHA_CODES = {"ID01": "ALPHAIDXA", "ID02": "ALPHAIDXB", "ID03": "ALPHAIDXC"}
ALPHA_VIDEOS = {"bbaf2n": "alphaclipxa", "brbk7n": "alphaclipxb", "id2_vcd_swwp2s": "alphaclipxc"}


def _alpha_dataset(tiny_dataset, folder):
    """The tiny dataset with A's own identity codes and video names (so B's cannot collide)."""
    shutil.copytree(tiny_dataset, folder)
    for old, new in ALPHA_CODES.items():
        (folder / "gallery" / old).rename(folder / "gallery" / new)
    with (folder / "identities.csv").open() as handle:
        rows = list(csv.reader(handle))
    with (folder / "identities.csv").open("w", newline="") as handle:
        csv.writer(handle).writerows([[ALPHA_CODES.get(c, c) for c in row] for row in rows])
    with (folder / "videos.csv").open() as handle:
        rows = list(csv.reader(handle))
    renamed = [rows[0]]
    for video, code, action in rows[1:]:
        stem, suffix = video.rsplit(".", 1)
        (folder / "videos" / video).rename(folder / "videos" / f"{ALPHA_VIDEOS[stem]}.{suffix}")
        renamed.append([f"{ALPHA_VIDEOS[stem]}.{suffix}", ALPHA_CODES[code], action])
    with (folder / "videos.csv").open("w", newline="") as handle:
        csv.writer(handle).writerows(renamed)
    config = {
        **json.loads((tiny_dataset / "campaign.json").read_text()),
        "foils_per_trial": 2,
        "target_absent_share": 0,
    }
    (folder / "campaign.json").write_text(json.dumps(config))
    return folder


def _organizer(name: str) -> User:
    """A staff user with every permission of the project's apps (the strongest non-superuser)."""
    user = User.objects.create_user(name, password="pw-isolation", is_staff=True)
    user.user_permissions.set(
        Permission.objects.exclude(content_type__app_label__in=["auth", "contenttypes", "sessions", "admin"])
    )
    return user


def _rate_one_trial(campaign: Campaign, **who) -> RatingSession:
    session = assignment.join(campaign, **who)
    RatingSession.objects.filter(pk=session.pk).update(state=SessionState.RUNNING)
    session.refresh_from_db()
    trial = assignment.current_trial(session)
    choice = assignment.valid_choices(trial)[0]
    from django.test import override_settings

    with override_settings(TRIALS_PLAUSIBILITY_CHECKS=False):  # answered with no media fetched
        assignment.record_response(
            trial, {"choice": choice, "response_time_ms": 1200, "replays": 1, "watch_time_ms": 3000}
        )
    assignment.current_trial(session)  # the next trial is claimed, unanswered
    return session


def _automated_rows(submission) -> None:
    """One face-evaluation and one attack run with results (rows as the runs write them)."""
    from automated.django_app.attack_models import AttackResult, AttackRun
    from automated.django_app.face_models import AutomatedRun, VideoScore
    from automated.face_eval import METRIC_FIELDS
    from fairness.django_app.models import FaceQualityScore

    run = AutomatedRun.objects.create(submission=submission, config={"stride": 5}, status="completed")
    counts = {"frames_tested", "clear_faces", "masked_faces", "n_identities", "psnr_identical_frames"}
    VideoScore.objects.create(
        run=run,
        masked_video=submission.masked_videos.first(),
        **{name: 3 if name in counts else 0.25 for name in METRIC_FIELDS},
    )
    attack = AttackRun.objects.create(
        submission=submission, config={"attackers": ["naive"]}, status="completed"
    )
    AttackResult.objects.create(
        run=attack,
        recognizer="lbph",
        attacker="naive",
        subset_size=3,
        n_identities=3,
        n_train=9,
        n_test=3,
        accuracy=0.5,
        chance_level=1 / 3,
        chance_normalised=0.25,
    )
    FaceQualityScore.objects.create(source_video=submission.campaign.source_videos.first(), face_found=True)
    FaceQualityScore.objects.create(
        gallery_image=submission.campaign.identities.first().gallery_images.first(), face_found=True
    )


@dataclass
class World:
    a: Campaign
    b: Campaign
    organizer_a: User
    organizer_b: User
    secrets: set[str]
    tokens: set[str]
    ids: dict = field(default_factory=dict)  # model -> [pk of A's rows]

    def all_ids(self) -> list[int]:
        return sorted({pk for pks in self.ids.values() for pk in pks if isinstance(pk, int)})

    def fingerprint(self) -> dict:
        """Every field of every row of A (what B must not be able to change)."""
        return {
            model._meta.label: list(scope(model.objects.order_by("pk"), self.organizer_a).values())
            for model in self.ids
        }


@pytest.fixture
def world(db, media_root, tiny_dataset, tmp_path, masked_files):
    organizer_a, organizer_b = _organizer("organizer-alpha"), _organizer("organizer-beta")
    a = import_dataset(
        _alpha_dataset(tiny_dataset, tmp_path / "alpha"),
        "Alpha Secret Campaign",
        organizers=[organizer_a],
        web_copies=False,
    ).campaign
    b = import_dataset(tiny_dataset, "Beta Campaign", organizers=[organizer_b], web_copies=False).campaign
    Campaign.objects.filter(pk=b.pk).update(foils_per_trial=2, target_absent_share=0)
    b.refresh_from_db()
    for campaign, team, method, clip in [
        (a, "Team Alpha Secret", "method-alpha-secret", "alphaclipxa"),
        (b, "Team Beta", "method-beta", "bbaf2n"),
    ]:
        submission = create_submission(campaign, team, method)
        archive = make_zip(tmp_path / f"{method}.zip", {f"{clip}.mp4": masked_files["good_bbaf2n"]})
        ingest_submission_zip(
            submission,
            archive,
            uploaded_by=organizer_a if campaign == a else organizer_b,
            original_name=f"{method}-upload.zip",
            web_copies=False,
        )
        _automated_rows(submission)
        open_rating(campaign, prepare_media=False)
    rater_account = User.objects.create_user("rater-alpha-account", password="pw-rater-123")
    sessions = [
        _rate_one_trial(a, participant_code="pcode-alpha-7781"),
        _rate_one_trial(a, user=rater_account),
    ]
    _rate_one_trial(b, participant_code="pcode-beta-1")

    secrets = {
        a.name,
        a.slug,
        "pcode-alpha-7781",
        "rater-alpha-account",
        "Team Alpha Secret",
        "method-alpha-secret",
        "method-alpha-secret-upload.zip",
        *ALPHA_CODES.values(),
        *ALPHA_VIDEOS.values(),
        *(s.completion_code for s in sessions),
    }
    world = World(a, b, organizer_a, organizer_b, secrets, set())
    for model in apps.get_models():
        if model is User or not is_scoped(model):
            continue
        rows = scope(model.objects.all(), organizer_a)
        world.ids[model] = list(rows.values_list("pk", flat=True))
        for name in ("token", "media_token", "join_code"):
            if any(f.name == name for f in model._meta.get_fields()):
                world.tokens |= set(rows.values_list(name, flat=True))
    world.secrets |= world.tokens
    assert set(scope(Rater.objects.all(), organizer_b).values_list("campaign", flat=True)) == {b.pk}
    return world


# --- the checks -------------------------------------------------------------------------


def _text(response) -> str:
    body = b"".join(response.streaming_content) if response.streaming else response.content
    headers = "\n".join(f"{k}: {v}" for k, v in response.headers.items() if k.lower() != "set-cookie")
    return headers + "\n" + body.decode("utf-8", errors="replace")


def _leaks(response, world: World, *, known=()) -> list[str]:
    """A's secrets in the response (and a server error, which is never an answer)."""
    text = _text(response)
    errors = [f"HTTP {response.status_code}"] if response.status_code >= 500 else []
    return errors + sorted(secret for secret in world.secrets - set(known) if secret in text)


def _client(user) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


def _request(client, method, url, data=None):
    response = getattr(client, method)(url, data or {})
    client.cookies.pop("messages", None)  # a message names what B asked for, never A's data
    return response


def check_admin_registry(site, world: World) -> list[str]:
    """Findings (empty = isolated) over every model admin of ``site``."""
    findings, before = [], world.fingerprint()
    client_a, client_b = _client(world.organizer_a), _client(world.organizer_b)
    for model, model_admin in site._registry.items():
        info = f"admin:{model._meta.app_label}_{model._meta.model_name}"
        pks = world.ids.get(model, [])
        urls = [reverse(f"{info}_changelist"), reverse(f"{info}_add")]
        urls += [
            reverse(f"{info}_{page}", args=[pk]) for pk in pks for page in ("change", "delete", "history")
        ]
        for url in urls:
            for method in ("get", "post"):
                response = _request(client_b, method, url, {"post": "yes"})
                findings += [f"{method.upper()} {url}: {leak}" for leak in _leaks(response, world)]
        changelist_b = _text(_request(client_b, "get", reverse(f"{info}_changelist")))
        changelist_a = _text(_request(client_a, "get", reverse(f"{info}_changelist")))
        for pk in pks:
            change = reverse(f"{info}_change", args=[pk])
            if _request(client_a, "get", change).status_code != 200 or change not in changelist_a:
                findings.append(f"positive control: organizer A cannot open {change}")
            status = _request(client_b, "get", change).status_code
            if status == 200 or change in changelist_b:
                findings.append(f"{change}: organizer B reaches A's object (HTTP {status})")
        request = _request(client_b, "get", reverse(f"{info}_changelist")).wsgi_request
        for action in model_admin.get_actions(request) if pks else ():
            response = _request(
                client_b,
                "post",
                reverse(f"{info}_changelist"),
                {"action": action, "_selected_action": pks, "post": "yes"},
            )
            findings += [
                f"action {action} on {model._meta.label}: {leak}" for leak in _leaks(response, world)
            ]
        for relation in model._meta.get_fields():
            if relation.is_relation and relation.concrete and relation.related_model in site._registry:
                response = _request(
                    client_b,
                    "get",
                    reverse("admin:autocomplete"),
                    {
                        "app_label": model._meta.app_label,
                        "model_name": model._meta.model_name,
                        "field_name": relation.name,
                        "term": "",
                    },
                )
                findings += [
                    f"autocomplete {model._meta.label}.{relation.name}: {leak}"
                    for leak in _leaks(response, world)
                ]
    if world.fingerprint() != before:
        findings.append("organizer B's requests changed rows of campaign A")
    return findings


def _walk(resolver, prefix="", namespaces=(), levels=()):
    """Every URL pattern as (route text, full name, [pattern objects from the root])."""
    for entry in resolver.url_patterns:
        chain = (*levels, entry.pattern)
        if isinstance(entry, URLResolver):
            yield from _walk(
                entry,
                prefix + str(entry.pattern),
                (*namespaces, entry.namespace) if entry.namespace else namespaces,
                chain,
            )
        else:
            name = ":".join((*namespaces, entry.name)) if entry.name else None
            yield prefix + str(entry.pattern), name, chain, entry


def _admin_model(route: str, site):
    for model in site._registry:
        if route.startswith(f"admin/{model._meta.app_label}/{model._meta.model_name}/"):
            return model
    return None


def _model_named(text: str, world: World):
    cleaned = text.replace("-", "").replace("_", "").lower()
    matches = [m for m in world.ids if m._meta.model_name in cleaned]
    return max(matches, key=lambda m: len(m._meta.model_name)) if matches else None


def _candidates(parameter: str, converter, url_name: str | None, route: str, world: World, site) -> list:
    if parameter in ("format", "fmt"):
        return ["json", "csv"] if parameter == "fmt" else ["json"]
    if parameter == "app_label":
        return sorted({m._meta.app_label for m in site._registry})
    if parameter == "content_type_id":
        return [ContentType.objects.get_for_model(m).pk for m in world.ids if world.ids[m]]
    if CAPABILITY_PARAMETERS.get(url_name) == parameter:
        return [world.b.join_code]
    model = _admin_model(route, site) if parameter == "object_id" else None
    model = (
        model
        or _model_named(parameter, world)
        or (
            _model_named(url_name.split(":")[-1].rsplit("-", 1)[0], world)
            if url_name and "-" in url_name
            else None
        )
    )
    ids = world.ids.get(model, []) if model else world.all_ids()  # no rows of A: nothing to fill
    if re.search(r"(^|_)(pk|id)$", parameter) or model is not None:
        return [pk if converter == "int" else str(pk) for pk in ids]
    return sorted(world.tokens) + [str(pk) for pk in world.all_ids()]


def _converters(chain) -> dict[str, str]:
    found = {}
    for level in chain:
        for name in level.regex.groupindex:
            converter = getattr(level, "converters", {}).get(name)
            found[name] = "int" if type(converter).__name__ == "IntConverter" else "str"
    return found


def _urls_of(route, name, chain, entry, world, site):
    """(url, tokens used) for every combination of parameter values, or None if unreachable."""
    parameters = _converters(chain)
    if not parameters:
        try:
            return [(reverse(name) if name else "/" + route, ())]
        except NoReverseMatch:
            return None
    options = [_candidates(p, c, name, route, world, site) for p, c in parameters.items()]
    if not all(options):
        return []
    urls = []
    for values in itertools.islice(itertools.product(*options), MAX_COMBINATIONS):
        kwargs = dict(zip(parameters, values))
        try:
            if name:
                url = reverse(name, kwargs=kwargs)
            elif all(type(level).__name__ == "RoutePattern" for level in chain):
                url = "/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda m: str(kwargs[m.group(1)]), route)
            else:
                return None
        except NoReverseMatch:
            continue
        urls.append((url, tuple(str(v) for v in values)))
    return urls or None


def check_url_patterns(resolver, world: World, site, *, only=None) -> tuple[list[str], dict[str, set]]:
    """Findings over every URL pattern, and the names of the patterns that answer A's organizer
    (``"ok"``: HTTP 200; ``"secrets"``: showing A's secrets)."""
    findings, reachable = [], []
    for route, name, chain, entry in _walk(resolver):
        if only is not None and name not in only:
            continue
        if getattr(entry.callback, "__name__", "") in UNNAMED_ALLOWED and name is None:
            continue
        urls = _urls_of(route, name, chain, entry, world, site)
        if urls is None:
            findings.append(
                f"{route} ({name}): no URL could be built; name the pattern or add a parameter rule"
            )
        else:
            reachable += [(name, url, used) for url, used in urls]
    client_b, before = _client(world.organizer_b), world.fingerprint()
    for name, url, used in reachable:
        for method in ("get", "post"):
            # Logged in for every request: a POST to a logout URL (admin, team) ends the session,
            # and every URL after it would be asked anonymously.
            client_b.force_login(world.organizer_b)
            response = _request(client_b, method, url, {"open": "1", "excluded": "1", "post": "yes"})
            findings += [f"{method.upper()} {url}: {leak}" for leak in _leaks(response, world, known=used)]
    if world.fingerprint() != before:
        findings.append("organizer B's requests changed rows of campaign A")
    client_a, control = _client(world.organizer_a), {"ok": set(), "secrets": set()}  # after B
    for name, url, used in reachable:
        if name and name.split(":")[0] != "admin":
            response = _request(client_a, "get", url)
            if response.status_code == 200:
                control["ok"].add(name)
                if _leaks(response, world, known=used):
                    control["secrets"].add(name)
    return findings, control


# --- the tests --------------------------------------------------------------------------


def test_organizer_of_b_sees_nothing_of_a_on_any_admin_page(world):
    assert check_admin_registry(admin.site, world) == []
    covered = {m._meta.label for m in admin.site._registry if world.ids.get(m)}
    assert {
        "trials.Rater",
        "trials.RatingSession",
        "trials.Trial",
        "trials.Response",
        "trials.Item",
        "automated.AutomatedRun",
        "automated.VideoScore",
        "automated.AttackRun",
        "evalsite.Team",
        "evalsite.Identity",
        "evalsite.Submission",
        "evalsite.SubmissionUpload",
    } <= covered


def test_organizer_of_b_sees_nothing_of_a_on_any_url(world):
    findings, control = check_url_patterns(get_resolver(), world, admin.site)
    assert findings == []
    # Positive control: the same filled-in URLs answer A's organizer, with A's secrets.
    assert {
        "campaign-detail",
        "campaign-summary",
        "identity-list",
        "identity-detail",
        "source-video-detail",
        "submission-detail",
        "submission-report",
        "submission-summary",
        "submission-uploads",
        "trials:organizer_campaign",
        "fairness:submission",
        "fairness:index",
        "leaderboard:page",
        "leaderboard:csv",
        "campaign-leaderboard",
        "automated:submission_progress",  # evaluate everything: progress bars and run logs
        "automated:submission_progress_json",
    } <= control["secrets"]
    assert {
        "evalsite_staff:gallery_image",
        "evalsite_staff:source_video",
        "evalsite_staff:masked_video",
        "gallery-image-download",
        "source-video-download",
        "fairness:quality",
        "leaderboard:video_bars",
        "campaign-leaderboard-comparisons",  # one submission in A: no pair, no names
    } <= control["ok"]


def _urlconf_with(site, extra=()):
    """A URL conf of the project with ``site`` as its admin, plus ``extra`` patterns."""
    from evalsite.portal import urls as project_urls

    module = types.ModuleType("isolation_test_urls")
    module.urlpatterns = [
        path("admin/", site.urls),
        *extra,
        *[p for p in project_urls.urlpatterns if str(p.pattern) != "admin/"],
    ]
    sys.modules[module.__name__] = module
    return module.__name__


def test_the_check_fails_for_an_unscoped_admin(world, settings):
    # The rater admin as it was: a plain ModelAdmin lists A's participant codes to B.
    site = admin.AdminSite(name="admin")
    site._registry = {m: type(a)(m, site) for m, a in admin.site._registry.items()}
    site._registry[Rater] = admin.ModelAdmin(Rater, site)
    settings.ROOT_URLCONF = _urlconf_with(site)
    findings = check_admin_registry(site, world)
    assert any("trials/rater/" in f and "pcode-alpha-7781" in f for f in findings)
    assert any("organizer B reaches A's object" in f and "/trials/rater/" in f for f in findings)


def test_the_check_fails_for_an_unscoped_url(world, settings):
    def rater_codes(request, campaign_id):
        return HttpResponse(
            ", ".join(
                Rater.objects.filter(campaign_id=campaign_id).values_list("participant_code", flat=True)
            )
        )

    leaky = path("organizer/<int:campaign_id>/codes/", rater_codes, name="leaky_codes")
    settings.ROOT_URLCONF = _urlconf_with(admin.site, [leaky])
    findings, _ = check_url_patterns(get_resolver(), world, admin.site, only={"leaky_codes"})
    assert findings and all("pcode-alpha-7781" in f for f in findings)
    assert f"/organizer/{world.a.pk}/codes/" in "".join(findings)


def test_a_team_name_of_a_is_a_new_team_of_b_that_b_cannot_use_to_reach_a(world):
    from evalsite.models import Submission, Team

    # B enters a submission under A's team name: it is B's own, new team (teams are per campaign).
    mine = create_submission(world.b, "Team Alpha Secret", "beta-under-alpha-name").team
    theirs = Team.objects.get(campaign=world.a, name="Team Alpha Secret")
    assert mine != theirs and mine.campaign == world.b and not mine.members.exists()
    client_b = _client(world.organizer_b)
    assert (
        client_b.get(reverse("admin:evalsite_team_change", args=[theirs.pk])).status_code == 302
    )  # not found
    client_b.post(reverse("admin:evalsite_team_change", args=[theirs.pk]), {"name": "renamed", "members": []})
    client_b.post(
        reverse("admin:evalsite_team_changelist"),
        {"action": "delete_selected", "_selected_action": [theirs.pk], "post": "yes"},
    )
    assert Team.objects.get(pk=theirs.pk).name == "Team Alpha Secret"
    assert Submission.objects.filter(campaign=world.a, team=theirs).exists()
    # B's team list has B's team with its one submission, and nothing of A's.
    listing = client_b.get(reverse("admin:evalsite_team_changelist")).content.decode()
    assert f"/admin/evalsite/team/{mine.pk}/change/" in listing and ">1</td>" in listing
    assert f"/admin/evalsite/team/{theirs.pk}/change/" not in listing


def test_scoping_paths_are_derived_from_the_foreign_keys():
    from django.contrib.admin.models import LogEntry

    from automated.django_app.face_models import VideoScore
    from evalsite.scoping import NotCampaignScoped, campaign_lookups
    from fairness.django_app.models import FaceQualityScore
    from trials.models import Response, Trial

    assert campaign_lookups(Campaign) == ("pk",)
    assert campaign_lookups(Response) == ("trial__session__campaign",)
    assert campaign_lookups(Trial) == ("session__campaign",)  # the non-null link, not item or video
    assert campaign_lookups(VideoScore) == ("run__submission__campaign",)
    # Only nullable links: visible through either.
    assert campaign_lookups(FaceQualityScore) == (
        "gallery_image__identity__campaign",
        "source_video__campaign",
    )
    with pytest.raises(NotCampaignScoped, match="admin.LogEntry has no foreign-key path to a campaign"):
        campaign_lookups(LogEntry)


def test_the_rater_list_edit_cannot_reach_another_campaigns_rater(world):
    rater = Rater.objects.get(campaign=world.a, participant_code="pcode-alpha-7781")
    form = {
        "form-TOTAL_FORMS": "1",
        "form-INITIAL_FORMS": "1",
        "form-0-id": str(rater.pk),
        "form-0-excluded": "on",
        "_save": "Save",
    }
    _client(world.organizer_b).post(reverse("admin:trials_rater_changelist"), form)
    rater.refresh_from_db()
    assert not rater.excluded and Rater.objects.count() == 3
    _client(world.organizer_a).post(reverse("admin:trials_rater_changelist"), form)
    rater.refresh_from_db()
    assert rater.excluded  # A's organizer may
