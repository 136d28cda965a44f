"""Organizer warnings about lineup material (issue 9), on real GRID and CREMA-D clips:
a gallery still that is a frame of an evaluated video (7 of 11 demo stills were, and pixel
matching answered 8 of 10 clear trials), and an identity alone in its video format."""

import csv

import cv2
import numpy as np
import pytest
from django.contrib.auth.models import User
from django.core.files import File
from django.test import Client

from automated.video import VideoInfo, iter_frames
from evalsite.demo_data import ATTACKER_TRAIN_CLIPS, DEMO_PEOPLE, build_demo_dataset
from evalsite.importer import import_dataset
from evalsite.models import GalleryImage, Identity, SourceVideo
from trials import stills
from trials.models import StillCheck
from trials.services import open_rating

VIDEOS = "videos"


def test_phash_is_the_dct_sign_pattern():
    # A left-to-right ramp: its DCT has energy only in the first row (horizontal
    # frequencies), so the hash bits are set in row 0 only (where above the median).
    ramp = np.tile(np.linspace(0, 255, 64, dtype=np.float32), (64, 1)).astype(np.uint8)
    bits = stills.phash(np.dstack([ramp] * 3)).reshape(16, 16)
    assert bits[1:].sum() == 0 and bits[0, 0]  # DC (mean 127) is the largest coefficient
    assert stills.phash(np.dstack([ramp] * 3)).dtype == bool and bits.size == 256


def test_phash_refuses_what_the_frame_check_refuses():
    # automated.face_boxes.check_frame, the one frame check (also refuses a non-uint8 image)
    with pytest.raises(
        ValueError, match=r"^image_rgb must be uint8 of shape \(height, width, 3\), got uint8 \(4, 4\)$"
    ):
        stills.phash(np.zeros((4, 4), np.uint8))
    with pytest.raises(ValueError, match=r"got float32 \(64, 64, 3\)$"):
        stills.phash(np.zeros((64, 64, 3), np.float32))


def test_a_frame_of_the_clip_matches_and_another_clip_of_the_person_does_not(data_dir):
    clip = data_dir / VIDEOS / "grid_identity_clips/s1/bbal6n.mpg"
    middle = next(f for _, f in iter_frames(clip, start=37, end=38))
    assert stills.closest_frame(middle, clip) == (0, 37)
    # The same frame as a 2/3-size JPEG still matches (a few bits).
    small = cv2.resize(middle, (240, 192), interpolation=cv2.INTER_AREA)
    jpeg = cv2.imdecode(cv2.imencode(".jpg", small, [cv2.IMWRITE_JPEG_QUALITY, 80])[1], cv2.IMREAD_COLOR)
    assert stills.closest_frame(jpeg, clip)[0] <= stills.MATCH_BITS
    # Other clips of the same speaker, same studio, same framing: far apart.
    for other in ("grid_talking_heads/bbaf2n.mpg", "grid_identity_clips/s1/lgwazp.mpg"):
        assert stills.closest_frame(middle, data_dir / VIDEOS / other)[0] >= 3 * stills.MATCH_BITS


def _organizer_page(campaign) -> str:
    user = User.objects.create_user("org-stills", password="pw-123456", is_staff=True)
    campaign.organizers.add(user)
    client = Client()
    client.force_login(user)
    return client.get(f"/organizer/{campaign.pk}/").content.decode()


def test_stills_from_the_evaluated_clip_are_named_on_the_organizer_page(grid_campaign):
    # In the GRID fixture every speaker's still is the middle frame of their only clip,
    # except P03, whose still comes from pwij3p and whose evaluated clip is id2_vcd_swwp2s.
    page = _organizer_page(grid_campaign)
    assert "10 gallery still(s) not yet compared" in page  # before media preparation
    assert 'id="check-stills"' in page  # the organizer can compare them before opening
    client = Client()
    client.force_login(User.objects.get(username="org-stills"))
    assert client.post(f"/organizer/{grid_campaign.pk}/stills/check/").status_code == 302  # eager task
    assert StillCheck.objects.filter(gallery_image__identity__campaign=grid_campaign).count() == 10
    assert stills.check_stills(grid_campaign) == 0  # stored; nothing decoded again
    found = stills.stills_from_evaluated_clips(grid_campaign)
    codes = {Identity.objects.get(pk=pk).code: names for pk, names in found.items()}
    assert len(codes) == 9 and "subject-grid-p03-code" not in codes
    assert codes["subject-grid-p02-code"] == ["brbk7n"]
    p03 = StillCheck.objects.get(gallery_image__identity__code="subject-grid-p03-code")
    assert not p03.from_evaluated_clip and p03.distance_bits > stills.MATCH_BITS
    page = _organizer_page_again(grid_campaign)
    assert page.count("its gallery still looks like a frame of the evaluated video") == 9
    assert (
        "identity subject-grid-p02-code: its gallery still looks like a frame of the evaluated video brbk7n"
        in page
    )
    assert "not yet compared" not in page
    # Replacing P02's still by another speaker's frame makes the check stale, then clean.
    image = GalleryImage.objects.get(identity__code="subject-grid-p02-code")
    other = GalleryImage.objects.get(identity__code="subject-grid-p03-code")
    image.image.name = other.image.name
    image.save(update_fields=["image"])
    assert stills.unchecked_stills(grid_campaign) == 1 and stills.check_stills(grid_campaign) == 1
    assert image.identity_id not in stills.stills_from_evaluated_clips(grid_campaign)


def _organizer_page_again(campaign) -> str:
    client = Client()
    client.force_login(User.objects.get(username="org-stills"))
    return client.get(f"/organizer/{campaign.pk}/").content.decode()


def test_an_identity_alone_in_its_format_is_named_and_warned_when_rating_opens(grid_campaign, data_dir):
    assert stills.lonely_identities(grid_campaign) == []  # ten GRID speakers, one format
    identity = Identity.objects.create(
        campaign=grid_campaign, code="ID-cremad", attributes={"gender": "male"}
    )
    still = next(
        f for _, f in iter_frames(data_dir / VIDEOS / "cremad/1001_DFA_NEU_XX.flv", start=20, end=21)
    )
    image = GalleryImage(identity=identity, original_name="still.png")
    png = cv2.imencode(".png", cv2.cvtColor(still, cv2.COLOR_RGB2BGR))[1].tobytes()
    from django.core.files.base import ContentFile

    image.image.save("still.png", ContentFile(png), save=True)
    path = data_dir / VIDEOS / "cremad/1001_DFA_ANG_XX.flv"
    video = SourceVideo(campaign=grid_campaign, identity=identity, name="cremad-ang", action="talking")
    info = VideoInfo.from_video_path(path)
    video.frame_count, video.fps, video.duration_s = info.frame_count, info.fps, info.duration_s
    video.width, video.height = info.resolution_wh
    with open(path, "rb") as handle:
        video.file.save(path.name, File(handle), save=False)
    video.save()
    warnings = stills.lonely_identities(grid_campaign)
    assert warnings == [
        "480x360, 29.97 fps, flv: only identity ID-cremad (cremad-ang): raters can tell its lineups "
        "by video format alone; add identities recorded the same way or leave these videos out of "
        "the evaluated subset"
    ]
    # Alone in a demographic group too, once it has a value nobody else has.
    Identity.objects.filter(pk=identity.pk).update(attributes={"gender": "nonbinary"})
    assert "identity ID-cremad is the only one with gender=nonbinary" in " ".join(
        stills.lonely_identities(grid_campaign)
    )
    result = open_rating(grid_campaign, prepare_media=False)
    assert any("480x360, 29.97 fps, flv: only identity ID-cremad" in w for w in result.warnings)
    assert "480x360, 29.97 fps, flv: only identity ID-cremad (cremad-ang)" in _organizer_page(grid_campaign)


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory, data_dir):
    return build_demo_dataset(data_dir, tmp_path_factory.mktemp("demo") / "demo_data")


@pytest.mark.django_db
def test_demo_marks_stills_from_the_evaluated_clip_and_takes_another_clip_wherever_one_exists(
    demo_dir, data_dir, media_root
):
    with (demo_dir / "gallery_sources.csv").open(newline="") as handle:
        sources = {r["identity"]: r for r in csv.DictReader(handle)}
    marked = {code for code, row in sources.items() if row["from_evaluated_clip"] == "yes"}
    assert marked == {"ID02", "ID04", "ID05", "ID06", "ID08", "ID09", "ID10"}
    people = {p.code: p for p in DEMO_PEOPLE}
    # The perceptual hash agrees with the mark: imported, the stored checks (each still
    # against every frame of its identity's evaluated clips) find exactly the marked ones;
    # an unmarked still is far from every frame of every clip shown to raters.
    campaign = import_dataset(demo_dir, web_copies=False).campaign
    assert stills.check_stills(campaign) == 11
    found = stills.stills_from_evaluated_clips(campaign)
    codes = dict(Identity.objects.filter(campaign=campaign).values_list("pk", "code"))
    assert {codes[pk] for pk in found} == marked
    assert all(names == [people[codes[pk]].videos[0].split("/")[-1][:-4]] for pk, names in found.items())
    unmarked = StillCheck.objects.filter(gallery_image__identity__campaign=campaign).exclude(
        gallery_image__identity__code__in=marked
    )
    assert sorted(c.gallery_image.identity.code for c in unmarked) == ["ID01", "ID03", "ID07", "ID11"]
    assert all(c.distance_bits > stills.MATCH_BITS and not c.from_evaluated_clip for c in unmarked)
    # Alone in a format, by the clips.csv files (videos of every role): ID07's lgbf6s, sgac2a
    # (evaluated) and sgbc3n (attacker_train) are the only 720x576 clips (its lwbsza is
    # 360x288, 25 fps like every other GRID clip); ID11's five CREMA-D clips are the only
    # 480x360, 29.97 fps FLV ones. The gallery's bbilzs (720x576) is a still, not a video.
    lonely = stills.lonely_identities(campaign)
    assert [w.split(": raters")[0] for w in lonely] == [
        "720x576, 25 fps, mpg: only identity ID07 (lgbf6s, sgac2a, sgbc3n)",
        "480x360, 29.97 fps, flv: only identity ID11 (1001_DFA_ANG_XX, 1001_DFA_DIS_XX, "
        "1001_DFA_FEA_XX, 1001_DFA_HAP_XX, 1001_DFA_SAD_XX)",
    ]
    # Raters never see the attacker's own clips, so they are not compared: ID03's still is
    # a frame of its attacker clip pwij3p, and ID07's matches its attacker clip sgbc3n (same
    # recording condition B): either, rated, would answer its clear trials by pixels.
    for code, clip in (
        ("ID03", "grid_talking_heads/pwij3p.mpg"),
        ("ID07", "grid_identity_clips/s4_probable/sgbc3n.mpg"),
    ):
        assert clip in ATTACKER_TRAIN_CLIPS and clip in people[code].videos
        still = cv2.cvtColor(cv2.imread(str(demo_dir / sources[code]["image"])), cv2.COLOR_BGR2RGB)
        assert stills.closest_frame(still, data_dir / VIDEOS / clip)[0] <= stills.MATCH_BITS, code
    # "Wherever one exists": a marked person has no other clip in the data folder.
    with (data_dir / VIDEOS / "grid_talking_heads" / "clips.csv").open(newline="") as handle:
        grid = list(csv.DictReader(handle))
    with (data_dir / VIDEOS / "grid_identity_clips" / "clips.csv").open(newline="") as handle:
        more_speakers = {r["grid_speaker_id"] for r in csv.DictReader(handle)}
    for code in marked:
        clip = people[code].videos[0].split("/")[-1]
        row = next(r for r in grid if r["file"] == clip)
        assert sum(r["person_label"] == row["person_label"] for r in grid) == 1
        assert row["grid_speaker_id"] == "unknown" or row["grid_speaker_id"] not in more_speakers
