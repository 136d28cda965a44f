"""Practice from material outside the evaluated subset (issue 9): practice harvests no answers."""

import io
import json
import re

import shutil

import cv2
import pytest
from django.core.files import File
from django.test import Client

from automated.video import transcode_for_web
from evalsite.importer import DatasetError, import_dataset
from evalsite.models import GalleryImage, Identity, SourceVideo
from trials.checks import campaign_warnings
from django.core.management import call_command

from trials.models import Item, Trial, TrialFace

RESPOND = re.compile(r'"respond_url": "(/t/[^"]+/respond/)"')
CHOICE = re.compile(r'data-choice="([^"]+)"')
MEDIA = re.compile(r'src="(/m/[^"]+)"')


@pytest.fixture(autouse=True)
def instant_viewing(settings):
    settings.TRIALS_MIN_VIEW_MS = 0
    settings.TRIALS_MIN_WATCH_PERCENT = 0


def _practice_replies(campaign, code):
    """(trial, JSON reply) of each practice trial of a new session."""
    client = Client()
    client.post(f"/join/{campaign.join_code}/", {"participant_code": code})
    client.post("/session/consent/", {"agree": "yes"})
    client.post("/session/start/")
    replies = []
    for _ in range(40):
        html = client.get("/session/").content.decode()
        match = RESPOND.search(html)
        if match is None:
            break
        trial = Trial.objects.get(token=match.group(1).split("/")[2])
        if trial.kind != "practice":
            break
        for url in MEDIA.findall(html):
            b"".join(client.get(url).streaming_content)
        body = {"choice": CHOICE.findall(html)[0], "response_time_ms": 1500}
        replies.append(
            (trial, client.post(match.group(1), json.dumps(body), content_type="application/json").json())
        )
    return replies


@pytest.fixture
def campaign_without_practice_faces(grid_campaign):
    """The GRID campaign, without practice material."""
    assert not Identity.objects.filter(campaign=grid_campaign, practice=True).exists()
    return grid_campaign


def test_practice_without_material_shows_no_evaluated_person(campaign_without_practice_faces):
    campaign = campaign_without_practice_faces
    assert not SourceVideo.objects.filter(campaign=campaign, in_evaluated_subset=False).exists()
    for code in ("throwaway-1", "throwaway-2", "throwaway-3"):
        replies = _practice_replies(campaign, code)
        assert len(replies) == 2
        for trial, reply in replies:
            # Before: a video of an evaluated person (no feedback, but the person seen).
            # Now: a face and an instruction; the feedback names the instructed answer only.
            assert trial.source_video_id is None and trial.probe_image_id is not None
            assert reply["stored"] and reply["feedback"]["correct_choice"] == trial.correct_choice
    warnings = " ".join(campaign_warnings(campaign))
    assert "no practice material" in warnings and "never a video of an evaluated person" in warnings


def test_practice_on_the_london_faces_gives_feedback_and_shows_no_evaluated_person(grid_campaign):
    call_command("add_practice_faces", "--campaign", str(grid_campaign.pk), stdout=io.StringIO())
    submission = grid_campaign.submissions.get()
    assert submission.is_complete  # practice videos need no masked video
    london = Identity.objects.filter(campaign=grid_campaign, practice=True)
    assert london.count() == 12 and all(i.code.startswith("practice-london-") for i in london)
    assert {i.attributes["gender"] for i in london} == {"female", "male"}
    assert "no practice material" not in " ".join(campaign_warnings(grid_campaign))
    practice_people = set(london.values_list("pk", flat=True))
    for code in ("learner-1", "learner-2", "learner-3"):
        replies = _practice_replies(grid_campaign, code)
        assert len(replies) == 2
        for trial, reply in replies:
            assert trial.source_video.identity_id in practice_people
            assert reply["feedback"]["correct_choice"] == trial.correct_choice
            faces = trial.faces.select_related("gallery_image__identity")
            assert {f.gallery_image.identity_id for f in faces} <= practice_people
            # Matched like evaluated lineups: one gender per lineup.
            target_gender = trial.source_video.identity.attributes["gender"]
            assert {f.gallery_image.identity.attributes["gender"] for f in faces} == {target_gender}
    # Never evaluated: no item, no evaluated or catch lineup shows them.
    assert not Item.objects.filter(source_video__identity__in=practice_people).exists()
    assert (
        not TrialFace.objects.exclude(trial__kind="practice")
        .filter(gallery_image__identity__in=practice_people)
        .exists()
    )


def add_orl_practice_identities(campaign, data_dir, tmp_path, n=5):
    """``n`` practice identities from the ORL faces (real people outside the study): gallery
    still = picture 1 of subject k, practice video = 2 s of picture 2 of the same subject."""
    orl = data_dir / "faces" / "orl_att_faces"
    videos = []
    for k in range(1, n + 1):
        identity = Identity.objects.create(
            campaign=campaign, code=f"practice-orl-{k}", attributes={"gender": "male"}, practice=True
        )
        image = GalleryImage(identity=identity, original_name="1.pgm")
        with open(orl / f"s{k}" / "1.pgm", "rb") as handle:
            image.image.save("1.pgm", File(handle), save=True)
        frame = cv2.resize(cv2.imread(str(orl / f"s{k}" / "2.pgm")), (184, 224))
        raw = tmp_path / f"orl{k}.avi"
        writer = cv2.VideoWriter(str(raw), cv2.VideoWriter_fourcc(*"MJPG"), 25, (184, 224))
        for _ in range(50):
            writer.write(frame)
        writer.release()
        web = transcode_for_web(raw, tmp_path / f"orl{k}.mp4")
        video = SourceVideo(
            campaign=campaign,
            identity=identity,
            name=f"practice-orl-{k}",
            action=campaign.action_vocabulary[0],
            in_evaluated_subset=False,
            practice=True,
        )
        with open(raw, "rb") as handle:
            video.file.save(raw.name, File(handle), save=False)
        with open(web, "rb") as handle:
            video.web_file.save(web.name, File(handle), save=False)
        video.save()
        videos.append(video)
    return videos


def test_practice_uses_only_practice_identities_and_videos_with_feedback(
    campaign_without_practice_faces, data_dir, tmp_path
):
    grid_campaign = campaign_without_practice_faces  # imported practice material only
    practice = add_orl_practice_identities(grid_campaign, data_dir, tmp_path)
    practice_identities = {v.identity_id for v in practice}
    assert "no practice material" not in " ".join(campaign_warnings(grid_campaign))
    for code in ("learner-1", "learner-2", "learner-3"):
        replies = _practice_replies(grid_campaign, code)
        assert len(replies) == 2
        assert {trial.source_video_id for trial, _ in replies} <= {v.pk for v in practice}
        for trial, reply in replies:
            assert reply["feedback"]["correct_choice"] == trial.correct_choice
            # Every face of a practice lineup is a practice identity's: no practice file
            # or face appears in an evaluated trial.
            faces = set(trial.faces.values_list("gallery_image__identity_id", flat=True))
            assert faces <= practice_identities
    # Practice identities are never evaluated: no item, no evaluated or catch trial shows them.
    assert not Item.objects.filter(source_video__in=practice).exists()
    assert not Trial.objects.filter(kind="item", source_video__in=practice).exists()
    assert (
        not TrialFace.objects.exclude(trial__kind="practice")
        .filter(gallery_image__identity_id__in=practice_identities)
        .exists()
    )


def test_practice_never_shows_unevaluated_videos_of_evaluated_people(campaign_without_practice_faces):
    """Unevaluated videos of people who also appear in evaluated videos are not practice:
    feedback would teach the face (and clothes, room) of an evaluated person's video, and
    without feedback the person could still be struck off later lineups."""
    grid_campaign = campaign_without_practice_faces
    evaluated = SourceVideo.objects.filter(campaign=grid_campaign).order_by("name").first()
    pwij = SourceVideo.objects.create(  # a second, unevaluated row of that person's clip
        campaign=grid_campaign,
        identity=evaluated.identity,
        name=f"{evaluated.name}-practice",
        file=evaluated.file.name,
        web_file=evaluated.web_file.name,
        action=evaluated.action,
        in_evaluated_subset=False,
        practice=True,
    )
    for code in ("learner-1", "learner-2"):
        replies = _practice_replies(grid_campaign, code)
        assert len(replies) == 2
        for trial, reply in replies:
            # Before: the flagged practice video first, without feedback.
            assert trial.source_video_id != pwij.pk and trial.source_video_id is None
            assert reply["stored"]
    assert "no practice material" in " ".join(campaign_warnings(grid_campaign))


def _dataset(folder, data_dir, *, practice_flag, video_role):
    """Two GRID speakers, the second a practice identity per ``practice_flag``."""
    (folder / "gallery" / "ID01").mkdir(parents=True)
    (folder / "gallery" / "ID02").mkdir(parents=True)
    (folder / "videos").mkdir()
    grid = data_dir / "videos" / "grid_talking_heads"
    for code, clip in (("ID01", "bbaf2n"), ("ID02", "brbk7n")):
        shutil.copyfile(grid / f"{clip}.mpg", folder / "videos" / f"{clip}.mpg")
    (folder / "identities.csv").write_text(
        f"identity,gender,practice\nID01,male,\nID02,female,{practice_flag}\n"
    )
    (folder / "videos.csv").write_text(
        f"video,identity,action,role\nbbaf2n.mpg,ID01,talking,\nbrbk7n.mpg,ID02,talking,{video_role}\n"
    )
    # The stills must decode as images: write real PNGs of the ORL face.
    for code in ("ID01", "ID02"):
        image = cv2.imread(str(data_dir / "faces" / "orl_att_faces" / "s1" / "1.pgm"))
        cv2.imwrite(str(folder / "gallery" / code / "1.png"), image)
    return folder


@pytest.mark.django_db
def test_importer_reads_the_practice_identity_column(tmp_path, data_dir, media_root):
    folder = _dataset(tmp_path / "ok", data_dir, practice_flag="yes", video_role="practice")
    report = import_dataset(folder, "Practice import", web_copies=False)
    identities = {i.code: i for i in Identity.objects.filter(campaign=report.campaign)}
    assert (identities["ID01"].practice, identities["ID02"].practice) == (False, True)
    assert identities["ID02"].attributes == {"gender": "female"}  # not a demographic attribute
    assert report.campaign.demographic_attributes == ["gender"]
    assert SourceVideo.objects.get(name="brbk7n").practice

    with pytest.raises(DatasetError) as error:
        import_dataset(_dataset(tmp_path / "bad", data_dir, practice_flag="yes", video_role=""), "Bad")
    assert "video 'brbk7n' of practice identity 'ID02' must be a practice video" in str(error.value)
    with pytest.raises(DatasetError, match="identities.csv line 3: practice must be true/false"):
        import_dataset(_dataset(tmp_path / "odd", data_dir, practice_flag="maybe", video_role=""), "Odd")
