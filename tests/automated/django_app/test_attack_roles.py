"""The attacker's own material: ``role=attacker_train`` in videos.csv, stored, masked, trained on.

Issue 11: source videos can be the attacker's labelled training material: teams mask them
too, the attack trains on them in every cross-video fold and never tests them, and raters
never see them (no rating item, no practice trial). The demo marks one clip of each
identity with several (ID01, ID03, ID07, ID11).
"""

import csv
import shutil

import pytest

from automated.django_app.attack_service import create_attack_run
from evalsite.portal.demo import DEMO_ATTACK
from evalsite.demo_data import build_demo_dataset
from evalsite.importer import DatasetError, import_dataset
from evalsite.models import MaskedVideo, SourceVideo, Submission, Team
from trials.assignment import sync_items
from trials.models import Item


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory, data_dir):
    return build_demo_dataset(data_dir, tmp_path_factory.mktemp("roles") / "demo_data")


def _rows(path):
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def _rewrite(folder, edit):
    rows = _rows(folder / "videos.csv")
    for row in rows:
        edit(row)
    with (folder / "videos.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def test_demo_marks_one_clip_of_each_identity_with_several_as_attacker_material(demo_dir):
    rows = {r["video"]: r for r in _rows(demo_dir / "videos.csv")}
    attacker = {name for name, r in rows.items() if r["role"] == "attacker_train"}
    assert attacker == {"lgwazp.mpg", "pwij3p.mpg", "sgbc3n.mpg", "1001_DFA_SAD_XX.flv"}
    assert {rows[name]["identity"] for name in attacker} == {"ID01", "ID03", "ID07", "ID11"}
    assert all(rows[name]["in_evaluated_subset"] == "false" for name in attacker)
    # 24 videos less the 4 attacker clips.
    assert sum(r["role"] == "evaluated" and r["in_evaluated_subset"] == "true" for r in rows.values()) == 20


@pytest.mark.django_db
def test_imported_attacker_videos_get_no_rating_item_and_are_trained_on_never_tested(demo_dir, media_root):
    report = import_dataset(demo_dir, web_copies=False)
    campaign = report.campaign
    attacker = SourceVideo.objects.filter(campaign=campaign, attacker_train=True)
    assert sorted(attacker.values_list("name", flat=True)) == [
        "1001_DFA_SAD_XX",
        "lgwazp",
        "pwij3p",
        "sgbc3n",
    ]
    assert {v.role for v in attacker} == {"attacker_train"}
    assert SourceVideo.objects.get(name="bbaf2n").role == "evaluated"
    sync_items(campaign)
    assert Item.objects.filter(campaign=campaign).exists()
    assert not Item.objects.filter(source_video__attacker_train=True).exists()
    # Teams mask them too; the attack's folds (planned from the catalogue) test the
    # evaluated clips of identities with another clip: ID01 6 - 1, ID03 2 - 1, ID07 4 - 1,
    # ID11 5 - 1 -> 13 folds (leave one video out); the 7 single-clip speakers only train.
    submission = Submission.objects.create(
        campaign=campaign, team=Team.objects.create(campaign=campaign, name="T"), name="m"
    )
    for video in SourceVideo.objects.filter(campaign=campaign):
        MaskedVideo.objects.create(submission=submission, source_video=video, file=f"masked/{video.name}.mkv")
    run = create_attack_run(submission, attackers=["naive", "parrot"], recognizers=["lbph"])
    tested = {pk for fold in run.planned_folds for pk in fold}
    names = set(MaskedVideo.objects.filter(pk__in=tested).values_list("source_video__name", flat=True))
    assert run.folds_total == 13 and len(names) == 13
    assert not names & {"1001_DFA_SAD_XX", "lgwazp", "pwij3p", "sgbc3n"}
    assert names == {
        *("bbaf2n", "brif5s", "pbwx2p", "sgio7s", "swau9s"),  # ID01
        "id2_vcd_swwp2s",  # ID03: trained on its attacker clip pwij3p only
        *("lwbsza", "lgbf6s", "sgac2a"),  # ID07
        *(f"1001_DFA_{e}_XX" for e in ("ANG", "DIS", "FEA", "HAP")),  # ID11
    }
    # The demo's own suite: 4 folds over the same 13 clips, each identity's dealt
    # round-robin, so a fold tests ceil(5 / 4) = 2 clips of ID01 at most, 1 of the others,
    # and every ID11 fold one clip (4 clips, 4 folds).
    demo = create_attack_run(submission, **DEMO_ATTACK)
    assert demo.folds_total == 4
    folds = [
        list(MaskedVideo.objects.filter(pk__in=fold).values_list("source_video__identity__code", flat=True))
        for fold in demo.planned_folds
    ]
    assert sum(len(f) for f in folds) == 13
    assert {pk for fold in demo.planned_folds for pk in fold} == tested
    assert all(f.count("ID01") <= 2 and f.count("ID11") == 1 for f in folds)
    assert all(f.count("ID03") <= 1 and f.count("ID07") <= 1 for f in folds)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda r: r.update(role="attacker_train", in_evaluated_subset="true"),
            "cannot be in the evaluated subset",
        ),
        (
            lambda r: r.update(role="attacker_train", in_evaluated_subset="", practice="true"),
            "cannot be practice",
        ),
        (lambda r: r.update(role="attacker"), "role must be one of evaluated, practice, attacker_train"),
    ],
)
def test_bad_roles_are_named_and_nothing_is_stored(demo_dir, tmp_path, media_root, edit, message):
    folder = tmp_path / "dataset"
    shutil.copytree(demo_dir, folder)
    _rewrite(folder, lambda row: edit(row) if row["video"] == "bbaf2n.mpg" else None)
    with pytest.raises(DatasetError, match=message):
        import_dataset(folder, web_copies=False)
    assert not SourceVideo.objects.exists()
