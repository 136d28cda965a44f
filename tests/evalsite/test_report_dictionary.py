"""Every column any report emits has a data-dictionary entry (issue 13), on a realistic campaign.

The campaign: the 10 real GRID speakers with a blurred submission (``tests.crowd.simulation``,
the rating tests' campaign), rated by 4 scripted raters, with a real face evaluation
(detection, recognition, behaviour), a real attack run, the gallery-still checks and the
fairness section computed from those columns; a second submission has nothing yet but a
queued attack run. Every per-video column (DataFrame, CSV, JSON, API), every summary
entry (JSON, nested; API) and every campaign-summary-table column (CSV, API) must be
documented; a new column without an entry fails here, naming it.
"""

import copy
import csv
import hashlib
import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from automated.django_app.attack_models import AttackRun
from automated.django_app.attack_service import run_attack
from automated.django_app.services import FaceRunKind, run_face_evaluation
from evalsite import dictionary, reports
from evalsite.models import GalleryImage, Submission, Team
from trials.human_report import GALLERY_FROM_THIS_CLIP
from trials import assignment
from trials.models import RatingSession, SessionState
from trials.services import open_rating
from tests.crowd.simulation import build_grid_campaign
from trials.stills import check_stills

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

STRIDE = 40  # 2 tested frames per 75-frame clip


def _rate(campaign, raters: int) -> None:
    """Scripted raters answer every trial: even ones the correct choice, odd ones the first face."""
    for i in range(raters):
        session = assignment.join(campaign, participant_code=f"P-{i}")
        RatingSession.objects.filter(pk=session.pk).update(state=SessionState.RUNNING)
        session.refresh_from_db()
        while (trial := assignment.current_trial(session)) is not None:
            choice = trial.correct_choice if i % 2 == 0 else assignment.valid_choices(trial)[1]
            answer = {"choice": choice, "response_time_ms": 1000, "replays": 0, "watch_time_ms": 3000}
            assignment.record_response(trial, answer)


#: ``FaceRunKind.compute_video`` values of this module's runs, by :func:`_face_inputs`.
_FACE_VALUES: dict[str, dict] = {}


def _file_digest(field_file) -> bytes:
    with field_file.open("rb") as handle:
        return hashlib.sha256(handle.read()).digest()


def _face_inputs(run, masked) -> str:
    """SHA-256 of everything one video's face evaluation reads: the run's options, the clear
    and the masked file, the true identity and the campaign's gallery (codes and image bytes)."""
    digest = hashlib.sha256(json.dumps(run.config, sort_keys=True).encode())
    digest.update(_file_digest(masked.source_video.file) + _file_digest(masked.file))
    digest.update(masked.source_video.identity.code.encode())
    gallery = GalleryImage.objects.filter(
        identity__campaign=run.submission.campaign, identity__practice=False
    ).select_related("identity")
    for image in gallery.order_by("id"):
        digest.update(image.identity.code.encode() + _file_digest(image.image))
    return digest.hexdigest()


@pytest.fixture
def memoised_face_evaluation(monkeypatch):
    """Each video's face evaluation computed once in this module (a copy of its values after).

    The three tests build the same campaign (same clips, blur, gallery and stride), and the
    face evaluation of its 10 videos (detection and a ResNet embedding of every tested
    frame) was most of each test's set-up. Its values are a function of the inputs in
    :func:`_face_inputs`; the evaluation itself is tested in
    tests/automated/django_app/test_face_services.py.
    """
    real = FaceRunKind.compute_video

    def compute_video(self, run, masked):
        key = _face_inputs(run, masked)
        if key not in _FACE_VALUES:
            _FACE_VALUES[key] = real(self, run, masked)
        return copy.deepcopy(_FACE_VALUES[key])

    monkeypatch.setattr(FaceRunKind, "compute_video", compute_video)


@pytest.fixture
def evaluated(media_root, data_dir, grid_cache, settings, memoised_face_evaluation):
    settings.TRIALS_PLAUSIBILITY_CHECKS = False  # scripted raters fetch no media and answer at once
    settings.TRIALS_OUTLIER_ALPHA = 1e-12  # scripted raters: no per-rater outlier flags
    campaign = build_grid_campaign(data_dir, grid_cache, raters_per_video=3)
    open_rating(campaign, prepare_media=False)
    check_stills(campaign)  # what preparing rating media does: the gallery-still caveats
    _rate(campaign, raters=4)
    blurred = campaign.submissions.get()
    run_face_evaluation(blurred, stride=STRIDE)
    run_attack(blurred, attackers=["naive", "parrot"], recognizers=["lbph"], stride=25)
    waiting = Submission.objects.create(
        campaign=campaign, team=Team.objects.create(campaign=campaign, name="Late"), name="none yet"
    )
    AttackRun.objects.create(submission=waiting, config={}, status=AttackRun.Status.PENDING)
    organizer = get_user_model().objects.create_user("organizer", password="x", is_staff=True)
    campaign.organizers.add(organizer)
    client = Client()
    client.force_login(organizer)
    return campaign, blurred, waiting, client


def summary_paths(value, prefix=""):
    """Every key path of a nested summary dict (``section.key.sub``), containers included."""
    for key, item in value.items():
        path = f"{prefix}.{key}" if prefix else key
        yield path
        if isinstance(item, dict):
            yield from summary_paths(item, path)


def undocumented_summary(summary: dict) -> list[str]:
    return dictionary.missing(summary_paths(summary), "summary")


def test_every_column_of_every_report_has_an_entry(evaluated):
    campaign, blurred, waiting, client = evaluated
    missing = {}  # where -> undocumented names (all of them, not just the first)
    for submission in (blurred, waiting):
        label = submission.team.name
        frame = reports.per_video_report(submission)
        missing[f"{label} per-video report"] = dictionary.missing(frame.columns)
        header = next(csv.reader(io.StringIO(reports.report_as_csv(submission))))
        assert header == list(frame.columns)
        payload = json.loads(reports.report_as_json(submission))
        missing[f"{label} JSON videos"] = dictionary.missing(payload["videos"][0])
        missing[f"{label} JSON summary"] = undocumented_summary(payload["summary"])
        # The REST API emits the same columns.
        api_report = client.get(f"/api/submissions/{submission.pk}/report/").json()
        missing[f"{label} API videos"] = dictionary.missing(api_report["videos"][0])
        missing[f"{label} API summary"] = undocumented_summary(api_report["summary"])
        api_csv = client.get(f"/api/submissions/{submission.pk}/report/?format=csv").content.decode()
        assert next(csv.reader(io.StringIO(api_csv))) == header
        summary = client.get(f"/api/submissions/{submission.pk}/summary/").json()
        missing[f"{label} API submission summary"] = undocumented_summary(summary)

    table = reports.campaign_summary_table(campaign)
    missing["campaign summary table"] = dictionary.missing(table.columns, "summary")
    api_table = client.get(f"/api/campaigns/{campaign.pk}/summary/?format=csv").content.decode()
    missing["API summary CSV"] = dictionary.missing(next(csv.reader(io.StringIO(api_table))), "summary")
    for summary in client.get(f"/api/campaigns/{campaign.pk}/summary/").json():
        missing[f"API campaign summary {summary['team']}"] = undocumented_summary(summary)
    undocumented = {where: names for where, names in missing.items() if names}
    assert undocumented == {}, "columns without a data-dictionary entry:\n" + json.dumps(
        undocumented, indent=1
    )

    # Every section reported something real, so the check above covered real columns.
    report = reports.per_video_report(blurred).set_index("video")
    assert report["face_ssim"].notna().all() and report["behaviour_score"].notna().any()
    assert report["human_id_n_clear"].notna().any()
    summary = reports.submission_summary(blurred)
    assert summary["attack"]["status"] == "completed" and summary["fairness"]["scores"]


def test_dictionary_is_published_as_json_and_csv(evaluated):
    *_, client = evaluated
    records = {r["name"]: r for r in client.get("/api/dictionary/").json() if r["level"] == "video"}
    assert records["face_match_rate"]["unit"] == "fraction" and records["face_match_rate"]["precision"] == 4
    assert "L2" in records["face_match_rate"]["distance"] and "0.6" in records["face_match_rate"]["threshold"]
    rows = list(csv.DictReader(io.StringIO(client.get("/api/dictionary/?format=csv").content.decode())))
    assert {"face_match_rate", "human_masking_success", "caveats"} <= {r["name"] for r in rows}
    assert Client().get("/api/dictionary/").status_code in (401, 403)  # signed-in users only


def _csv(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def test_reports_are_stable_typed_rounded_and_say_what_is_pending(evaluated):
    campaign, blurred, waiting, client = evaluated
    rated, empty = _csv(reports.report_as_csv(blurred)), _csv(reports.report_as_csv(waiting))
    # Stable column set: a submission with nothing yet has the same header, cells empty.
    assert list(rated[0]) == list(empty[0])
    assert {row["face_ssim"] for row in empty} == {""} and {
        row["attack_worst_case_test_frames"] for row in empty
    } == {""}
    by_video = {row["video"]: row for row in rated}
    first = by_video["bbaf2n"]
    # Counts stay whole numbers; floats carry at most the dictionary's decimals.
    assert first["face_frames_tested"] == "2" and first["face_n_identities"] == "10"
    for row in rated:
        for name, cell in row.items():
            column = dictionary.find(name)
            if column.dtype == "int" and cell:
                assert cell.isdigit(), (name, cell)
            if column.dtype == "float" and "." in cell:
                assert len(cell.split(".")[1]) <= column.precision, (name, cell)
    # The recognition set-up behind the threshold, and chance levels.
    assert (first["face_detector"], first["face_embedder"], first["face_distance"]) == (
        "mediapipe",
        "dlib_resnet",
        "euclidean",
    )
    assert float(first["face_threshold"]) == 0.6
    assert float(first["face_mean_rank_chance"]) == 5.5  # (10 identities + 1) / 2
    assert float(first["human_id_chance_level"]) == round(1 / 6, 4)  # 5 faces + "not present"
    summary = reports.submission_summary(blurred)
    assert summary["face_evaluation"]["mean_rank_chance"] == 5.5
    assert summary["face_evaluation"]["distance"] == "euclidean"
    assert summary["human"]["id_chance_level"] == pytest.approx(1 / 6)
    # Caveats: the gallery still of bbaf2n is its own middle frame (tests.crowd.simulation);
    # 4 raters give no video its 3 ratings in every task and condition.
    assert GALLERY_FROM_THIS_CLIP in first["caveats"].split("; ")
    assert any("human: fewer ratings than the target of 3" in row["caveats"] for row in rated)
    # The summary counts each kind; only P03's still comes from another of its clips (pwij3p).
    assert "gallery still is a frame of this clip (9 of 10 videos)" in summary["caveats"]
    assert by_video["id2_vcd_swwp2s"]["caveats"].startswith("human:")
    assert not any("human:" in row["caveats"] for row in empty)  # not rated yet: no rating caveat
    # Counts of responses are 0 where a video has none, not empty; the accuracy is empty.
    assert {row["human_id_n_masked"] for row in empty} == {"0"} and {
        row["human_id_accuracy_masked"] for row in empty
    } == {""}
    # Sections say what they are waiting for instead of null.
    waiting_summary = reports.submission_summary(waiting)
    pending = waiting_summary["attack"]
    assert pending["status"] == "pending" and pending["run_id"] == waiting.attack_runs.get().pk
    assert waiting_summary["face_evaluation"] == {"status": "not run", "run_id": None}
    assert waiting_summary["human"]["status"] == "not rated"
    assert summary["face_evaluation"]["status"] == summary["attack"]["status"] == "completed"
    assert summary["human"]["status"] == "rating open"
    # Internal bookkeeping stays out of the summaries.
    table = reports.campaign_summary_table(campaign)
    for internal in ("attack.extraction_s", "attack.training_s", "fairness.source"):
        assert internal not in table.columns
    assert "extraction_s" not in summary["attack"] and "source" not in summary["fairness"]
    rows = {row["team"]: row for row in _csv(reports.summary_table_as_csv(campaign))}
    assert rows["Late"]["attack.status"] == "pending" and rows["Late"]["face_evaluation.n_videos"] == ""
    assert rows["Baseline team"]["face_evaluation.n_videos"] == "10"
