"""The team view (/team/): a team member's own submissions, reports, uploads and leaderboard.

Two teams enter the tiny campaign (3 real GRID clips); team A's member must see A's
report exactly as the organizer exports it, upload through the same validation as the
admin when the organizer allows it, and get nothing of team B.
"""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from evalsite import reports
from evalsite.models import Campaign, LeaderboardVisibility, MaskedVideo, SubmissionUpload
from evalsite.services import create_submission
from evalsite.validation import ingest_submission_zip

from .conftest import make_zip


@pytest.fixture
def teams(campaign, masked_files, tmp_path):
    """Team Owl (member 'alice', one valid masked video) and team Bee Secret (member 'bob', one video)."""
    sub_a = create_submission(campaign, "Team Owl", "method-a")
    sub_b = create_submission(campaign, "Team Bee Secret", "method-bee-secret")
    for submission, name in [(sub_a, "a.zip"), (sub_b, "bee-secret.zip")]:
        archive = make_zip(tmp_path / name, {"bbaf2n.mp4": masked_files["good_bbaf2n"]})
        ingest_submission_zip(submission, archive, original_name=name, web_copies=False)
    alice = User.objects.create_user("alice", password="pw-alice-123")
    bob = User.objects.create_user("bob", password="pw-bob-123")
    sub_a.team.members.add(alice)
    sub_b.team.members.add(bob)
    return {"a": sub_a, "b": sub_b, "alice": alice, "bob": bob}


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_anonymous_visitors_go_to_the_team_login_and_a_member_logs_in_there(teams):
    response = Client().get(reverse("team:submission", args=[teams["a"].pk]))
    assert response.status_code == 302
    assert response["Location"] == f"/team/login/?next=/team/submission/{teams['a'].pk}/"
    client = Client()
    assert "Team login" in client.get(reverse("team:login")).content.decode()
    response = client.post(reverse("team:login"), {"username": "alice", "password": "pw-alice-123"})
    assert response.status_code == 302 and response["Location"] == "/team/"
    home = client.get("/team/").content.decode()
    assert "Team Owl" in home and "method-a" in home
    assert "Team Bee Secret" not in home and "method-bee-secret" not in home
    assert "1 / 3" in home  # one of the three source videos has a valid masked video
    response = client.post(reverse("team:logout"))
    assert response.status_code == 302 and client.get("/team/").status_code == 302


def test_a_member_reads_their_own_report_exactly_as_the_organizer_exports_it(teams):
    client = _client(teams["alice"])
    page = client.get(reverse("team:submission", args=[teams["a"].pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert "Per-video report (3 videos)" in html
    assert html.count("<tr><td>bbaf2n</td>") == 1 and "<td>brbk7n</td>" in html
    assert "1 of 3 source videos have a valid masked video; missing: brbk7n, id2_vcd_swwp2s" in html
    assert "a.zip" in html and "bee-secret.zip" not in html
    # Column headings carry their data-dictionary meaning; the dictionary itself is open to members.
    from evalsite import dictionary

    meaning = dictionary.lookup("has_masked_video").column.meaning
    assert f'<th scope="col" title="{escape(meaning)}">has_masked_video</th>' in html
    glossary = client.get("/api/dictionary/?format=csv")
    assert glossary.status_code == 200 and "has_masked_video" in glossary.content.decode()
    csv_response = client.get(reverse("team:submission_report", args=[teams["a"].pk, "csv"]))
    assert csv_response["Content-Type"] == "text/csv; charset=utf-8"
    # The organizer's export minus what is organizers-only (identity codes, video roles).
    assert csv_response.content.decode() == reports.report_as_csv(teams["a"], team=True)
    rows = list(csv.DictReader(io.StringIO(csv_response.content.decode())))
    assert [(r["video"], r["has_masked_video"]) for r in rows] == [
        ("bbaf2n", "True"),
        ("brbk7n", "False"),
        ("id2_vcd_swwp2s", "False"),
    ]
    payload = json.loads(client.get(reverse("team:submission_report", args=[teams["a"].pk, "json"])).content)
    assert payload["summary"]["team"] == "Team Owl" and payload["summary"]["masked_videos"] == 1
    assert client.get(reverse("team:submission_report", args=[teams["a"].pk, "xlsx"])).status_code == 404


def test_nothing_of_another_team_answers_a_member(teams):
    client = _client(teams["alice"])
    upload_b = SubmissionUpload.objects.get(submission=teams["b"])
    masked_b = MaskedVideo.objects.get(submission=teams["b"])
    urls = [
        reverse("team:submission", args=[teams["b"].pk]),
        reverse("team:submission_report", args=[teams["b"].pk, "csv"]),
        reverse("team:submission_report", args=[teams["b"].pk, "json"]),
        reverse("team:upload", args=[teams["b"].pk]),
        reverse("team:upload_detail", args=[upload_b.pk]),
        reverse("team:upload_report", args=[upload_b.pk, "csv"]),
        reverse("team:upload_report", args=[upload_b.pk, "json"]),
    ]
    Campaign.objects.update(teams_may_upload=True)
    for url in urls:
        for method in ("get", "post"):
            response = getattr(client, method)(url)
            assert response.status_code == 404, (method, url, response.status_code)
            assert b"bee-secret" not in response.content
    assert SubmissionUpload.objects.filter(submission=teams["b"]).count() == 1
    # Organizer pages, the API and media stay closed to a member (not staff).
    assert client.get(reverse("trials:organizer")).status_code == 302
    assert client.get(reverse("admin:evalsite_submission_changelist")).status_code == 302
    assert client.get(f"/api/submissions/{teams['b'].pk}/report/").status_code == 403
    assert client.get(f"/api/submissions/{teams['a'].pk}/report/").status_code == 403
    assert client.get(reverse("evalsite_staff:masked_video", args=[masked_b.token])).status_code == 302


def test_a_same_named_team_of_another_campaign_is_theirs_only_once_its_organizer_adds_them(
    teams, tiny_dataset
):
    from evalsite.importer import import_dataset

    other = import_dataset(tiny_dataset, "Other Campaign", web_copies=False).campaign
    elsewhere = create_submission(other, "Team Owl", "method-a-elsewhere")
    theirs = create_submission(other, "Team C", "method-c")
    assert elsewhere.team != teams["a"].team  # teams are per campaign
    client = _client(teams["alice"])
    home = client.get("/team/").content.decode()
    assert "Other Campaign" not in home and "method-a-elsewhere" not in home
    assert client.get(reverse("team:submission", args=[elsewhere.pk])).status_code == 404
    elsewhere.team.members.add(teams["alice"])  # the other campaign's organizer adds alice
    home = client.get("/team/").content.decode()
    assert "Other Campaign" in home and "method-a-elsewhere" in home and "method-c" not in home
    assert home.count(">Team Owl <") == 2  # one team per campaign
    assert client.get(reverse("team:submission", args=[elsewhere.pk])).status_code == 200
    assert client.get(reverse("team:submission", args=[theirs.pk])).status_code == 404


def test_uploads_stay_closed_until_the_organizer_allows_them(teams, masked_files, tmp_path):
    client = _client(teams["alice"])
    archive = make_zip(tmp_path / "second.zip", {"brbk7n.mp4": masked_files["good_brbk7n"]})
    url = reverse("team:upload", args=[teams["a"].pk])
    page = client.get(url)
    assert page.status_code == 403 and "has not opened uploads to teams" in page.content.decode()
    with archive.open("rb") as handle:
        assert client.post(url, {"file": handle}).status_code == 403
    assert SubmissionUpload.objects.filter(submission=teams["a"]).count() == 1
    assert "upload</a>" not in client.get("/team/").content.decode()


def test_a_member_upload_gets_the_admins_validation_and_per_file_report(teams, masked_files, tmp_path):
    Campaign.objects.update(teams_may_upload=True)
    client = _client(teams["alice"])
    archive = make_zip(
        tmp_path / "mixed.zip",
        {
            "brbk7n.mp4": masked_files["good_brbk7n"],
            "id2_vcd_swwp2s.mp4": masked_files["short"],  # 70 of 75 frames
            "bbaf2n.mp4": masked_files["good_bbaf2n"],  # already stored, no "replace"
        },
    )
    with archive.open("rb") as handle:
        response = client.post(reverse("team:upload", args=[teams["a"].pk]), {"file": handle})
    upload = SubmissionUpload.objects.filter(submission=teams["a"]).order_by("-id").first()
    assert response.status_code == 302 and response["Location"] == f"/team/upload/{upload.pk}/"
    assert upload.uploaded_by == teams["alice"] and upload.original_name == "mixed.zip"
    assert (upload.status, upload.accepted_count, upload.rejected_count) == ("done", 1, 2)
    statuses = {row["file"]: (row["status"], row["code"]) for row in upload.report["files"]}
    assert statuses == {
        "brbk7n.mp4": ("accepted", "accepted"),
        "id2_vcd_swwp2s.mp4": ("rejected", "frame_count_mismatch"),
        "bbaf2n.mp4": ("rejected", "already_uploaded"),
    }
    assert set(
        MaskedVideo.objects.filter(submission=teams["a"]).values_list("source_video__name", flat=True)
    ) == {
        "bbaf2n",
        "brbk7n",
    }
    page = client.get(response["Location"]).content.decode()
    assert "1 file(s) accepted, 2 rejected" in page and "frame_count_mismatch" in page
    assert "1 source video(s) missing: id2_vcd_swwp2s" in page
    report_csv = client.get(reverse("team:upload_report", args=[upload.pk, "csv"])).content.decode()
    assert "id2_vcd_swwp2s.mp4,id2_vcd_swwp2s,rejected,frame_count_mismatch" in report_csv
    # Bob (team B) cannot read it.
    assert _client(teams["bob"]).get(response["Location"]).status_code == 404


def test_a_baseline_submission_is_never_uploaded_to_by_a_team(teams):
    Campaign.objects.update(teams_may_upload=True)
    teams["a"].baseline_method = "blur_face"
    teams["a"].save()
    page = _client(teams["alice"]).get(reverse("team:upload", args=[teams["a"].pk]))
    assert page.status_code == 403 and "reference submission made by the platform" in page.content.decode()


def test_the_leaderboard_answers_only_once_published_and_only_to_teams_of_the_campaign(teams, tiny_dataset):
    from evalsite.importer import import_dataset

    url = reverse("team:leaderboard", args=[teams["a"].campaign.pk])
    alice = _client(teams["alice"])
    assert alice.get(url).status_code == 404  # hidden by default
    assert "Leaderboard not published yet." in alice.get("/team/").content.decode()
    Campaign.objects.filter(pk=teams["a"].campaign.pk).update(
        leaderboard_visibility=LeaderboardVisibility.NAMED
    )
    named = alice.get(url).content.decode()
    assert "Team Bee Secret" in named and "method-bee-secret" in named
    assert named.count(">your team<") == 1  # alice's own row is marked
    # Anonymised: the other team's name and method appear nowhere, neither on the page nor in the CSV.
    Campaign.objects.filter(pk=teams["a"].campaign.pk).update(
        leaderboard_visibility=LeaderboardVisibility.ANONYMISED
    )
    for compare in ("human_masking_success", "ssim", "reidentification"):
        page = alice.get(url, {"compare": compare}).content.decode()
        # The CSRF token is random letters: it may spell "bee" (CI, 3 Dec), so it is left out.
        page = re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", page)
        assert "Bee" not in page and "bee" not in page, compare
        assert "Team Owl" in page and "method-a" in page and "Anonymised team A" in page and ">A1<" in page
    table = list(csv.DictReader(io.StringIO(alice.get(url.rstrip("/") + ".csv").content.decode())))
    assert [(r["team"], r["method"], r["submission_id"], r["own_team"]) for r in table] == [
        ("Team Owl", "method-a", str(teams["a"].pk), "True"),
        ("Anonymised team A", "A1", "", "False"),
    ]
    assert alice.get(url, {"compare": "bogus"}).status_code == 400
    # Bob sees the same table from his side: his team named, alice's anonymised.
    bob_table = _client(teams["bob"]).get(url.rstrip("/") + ".csv").content.decode()
    assert "Team Owl" not in bob_table and "method-a" not in bob_table and "method-bee-secret" in bob_table
    # A member of a team of another campaign only: 404.
    other = import_dataset(tiny_dataset, "Other Campaign", web_copies=False).campaign
    outsider = User.objects.create_user("carol")
    create_submission(other, "Team C", "method-c").team.members.add(outsider)
    assert _client(outsider).get(url).status_code == 404


def test_a_member_of_two_teams_of_a_campaign_sees_both_as_their_own(teams):
    teams["b"].team.members.add(teams["alice"])
    Campaign.objects.filter(pk=teams["a"].campaign.pk).update(
        leaderboard_visibility=LeaderboardVisibility.ANONYMISED
    )
    alice = _client(teams["alice"])
    home = alice.get("/team/").content.decode()
    assert home.count('class="card team"') == 2 and "method-a" in home and "method-bee-secret" in home
    url = reverse("team:leaderboard_csv", args=[teams["a"].campaign.pk])
    table = list(csv.DictReader(io.StringIO(alice.get(url).content.decode())))
    assert sorted((r["team"], r["method"], r["own_team"]) for r in table) == [
        ("Team Bee Secret", "method-bee-secret", "True"),
        ("Team Owl", "method-a", "True"),
    ]
    page = alice.get(reverse("team:leaderboard", args=[teams["a"].campaign.pk])).content.decode()
    assert "your teams (Team Bee Secret, Team Owl)" in page


def test_the_organizer_sets_both_team_settings_on_the_campaigns_admin_page(teams):
    campaign = teams["a"].campaign
    organizer = User.objects.create_superuser("boss", password="pw-boss-123")
    client = _client(organizer)
    page = client.get(reverse("admin:evalsite_campaign_change", args=[campaign.pk])).content.decode()
    assert 'name="leaderboard_visibility"' in page and 'name="teams_may_upload"' in page
    assert '<option value="anonymised">published, other teams anonymised</option>' in page
    listing = client.get(reverse("admin:evalsite_campaign_changelist"), {"leaderboard_visibility": "hidden"})
    assert campaign.name in listing.content.decode()
    listing = client.get(reverse("admin:evalsite_campaign_changelist"), {"leaderboard_visibility": "named"})
    assert f">{campaign.name}<" not in listing.content.decode()


def test_no_team_facing_channel_names_an_identity_code_or_a_video_role(teams, campaign):
    """Issue 21: a team that knew which clips train the attacker, or whose they are, could
    mask them differently. Page, CSV and JSON of the team view hold neither; the
    organizer's CSV, JSON and API report keep both."""
    from automated.django_app.face_report import ATTACKER_TRAINING
    from automated.django_app.models import AutomatedRun

    campaign.source_videos.filter(name="brbk7n").update(attacker_train=True, in_evaluated_subset=False)
    AutomatedRun.objects.create(submission=teams["a"], config={"stride": 5}, status="completed")
    codes = ["ID01", "ID02", "ID03"]
    client = _client(teams["alice"])
    team_channels = {
        "page": client.get(reverse("team:submission", args=[teams["a"].pk])),
        "csv": client.get(reverse("team:submission_report", args=[teams["a"].pk, "csv"])),
        "json": client.get(reverse("team:submission_report", args=[teams["a"].pk, "json"])),
        "report page": client.get(reverse("team:submission_report_page", args=[teams["a"].pk])),
    }
    for channel, response in team_channels.items():
        assert response.status_code == 200, channel
        text = response.content.decode()
        assert "brbk7n" in text, channel  # the video is listed ...
        # (the dictionary's meaning of "stale" speaks of roles in general, for every video)
        for leak in [*codes, "identity_code", ATTACKER_TRAINING, "not face-evaluated", "attacker_train"]:
            assert leak not in text, (channel, leak)  # ... but not whose it is nor its role
    rows = list(csv.DictReader(io.StringIO(team_channels["csv"].content.decode())))
    assert "identity_code" not in rows[0] and all(ATTACKER_TRAINING not in r["caveats"] for r in rows)
    videos = json.loads(team_channels["json"].content)["videos"]
    assert all("identity_code" not in row for row in videos)
    # The organizer keeps both, in every channel.
    organizer_csv = {r["video"]: r for r in csv.DictReader(io.StringIO(reports.report_as_csv(teams["a"])))}
    assert organizer_csv["brbk7n"]["identity_code"] == "ID02"
    assert ATTACKER_TRAINING in organizer_csv["brbk7n"]["caveats"]
    staff_page = _client(User.objects.create_superuser("boss-page", password="pw-boss-page"))
    page = staff_page.get(reverse("leaderboard:report", args=[teams["a"].pk])).content.decode()
    assert "ID02" in page and ATTACKER_TRAINING in page  # the organizer's report page keeps both
    organizer_json = json.loads(reports.report_as_json(teams["a"]))["videos"]
    assert {r["video"]: r["identity_code"] for r in organizer_json}["bbaf2n"] == "ID01"
    staff = User.objects.create_superuser("root", password="pw-root-123")
    api = _client(staff).get(f"/api/submissions/{teams['a'].pk}/report/?format=json").json()
    brbk = next(r for r in api["videos"] if r["video"] == "brbk7n")
    assert brbk["identity_code"] == "ID02" and ATTACKER_TRAINING in brbk["caveats"]


def test_the_report_page_puts_the_dictionarys_words_beside_each_figure(teams):
    """Issue 21: figures with words, paper titles instead of ``seeds/...`` file names, acronyms
    spelled out, and (for a baseline at re-identification 1.00) a note why."""
    from evalsite.portal.report_page import baseline_note, plain_words

    client = _client(teams["alice"])
    page = client.get(reverse("team:submission_report_page", args=[teams["a"].pk])).content.decode()
    assert "has_masked_video" in page
    assert "the submission has a current masked video for this source that matches it" in page
    assert "PrivHAR-Bench: A Graduated Privacy Benchmark Dataset" in page  # pu_score's source
    assert "seeds/" not in page and ".txt" not in page
    assert "Sample Quality Fairness Rate" in page or "SQFR" not in page
    assert 'href="/api/dictionary/?format=csv"' in page
    submission_page = client.get(reverse("team:submission", args=[teams["a"].pk])).content.decode()
    assert reverse("team:submission_report_page", args=[teams["a"].pk]) in submission_page
    assert plain_words("source: seeds/002_68b18bfdbdb94491.txt, section 4.3") == (
        "source: the MediaEval 2021 task overview \u201cDriving Road Safety Forward: Video Data Privacy\u201d, "
        "section 4.3"
    )
    # A baseline whose worst case is 1.00 gets the note; a team's submission or a lower value none.
    teams["a"].baseline_method = "blur_face"
    summary = {
        "attack": {
            "worst_case_chance_normalised": 1.0,
            "worst_case_recognizer": "lbph",
            "worst_case_attacker": "parrot",
        }
    }
    note = baseline_note(teams["a"], summary)
    assert "lbph x parrot" in note and "A False Sense of Privacy" in note
    assert baseline_note(teams["a"], {"attack": {"worst_case_chance_normalised": 0.6}}) == ""
    teams["a"].baseline_method = ""
    assert baseline_note(teams["a"], summary) == ""
