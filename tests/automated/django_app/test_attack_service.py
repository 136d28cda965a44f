"""Django layer of the attack suite on real GRID clips (3 identities, 9 videos).

The headline is the cross-video protocol: every identity has several clips, so each clip is
tested once (leave one video out: 9 folds, one task each) by attackers trained on the
other clips, never on frames of the tested recording. The baseline masking is the 16-pixel
block permutation with one key and nonce for all frames (``block_permute_fixed``).
"""

from pathlib import Path

import pytest
from django.core.files import File
from django.core.management import call_command
from django.core.management.base import CommandError

from automated.django_app.attack_models import AttackFold, AttackResult, AttackRun, AttackVideoResult
from automated.django_app.attack_service import attack_summary, create_attack_run, run_attack
from automated.django_app.services import create_baseline_submission
from evalsite import reports
from evalsite.models import Campaign, Identity, SourceVideo

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

CLIPS = {
    "ID01": [
        "grid_identity_clips/s1/bbal6n.mpg",
        "grid_identity_clips/s1/brif5s.mpg",
        "grid_identity_clips/s1/lgwazp.mpg",
        "grid_identity_clips/s1/pbwx2p.mpg",
    ],
    "ID04": [
        "grid_identity_clips/s4_probable/bbilzs.mpg",
        "grid_identity_clips/s4_probable/sgbc3n.mpg",
        "grid_talking_heads/lwbsza.mpg",
    ],
    "ID02": ["grid_talking_heads/id2_vcd_swwp2s.mpg", "grid_talking_heads/pwij3p.mpg"],
}
OPTIONS = dict(attackers=["clear", "naive", "parrot"], recognizers=["eigenfaces", "lbph"], stride=5)


@pytest.fixture
def submission(data_dir, media_root):
    campaign = Campaign.objects.create(name="GRID attack", slug="grid-attack")
    for code, clips in CLIPS.items():
        identity = Identity.objects.create(campaign=campaign, code=code, attributes={"gender": "x"})
        for clip in clips:
            video = SourceVideo(campaign=campaign, identity=identity, name=Path(clip).stem, action="talking")
            with (data_dir / "videos" / clip).open("rb") as handle:
                video.file.save(Path(clip).name, File(handle), save=True)
    return create_baseline_submission(campaign, "block_permute_fixed", key=bytes(range(32)), web_copies=False)


def test_attack_run_stores_the_table_worst_case_and_per_video_results(
    submission, settings, admin_client, client, django_user_model
):
    run = run_attack(submission, **OPTIONS)
    assert run.status == AttackRun.Status.COMPLETED, run.error
    assert AttackResult.objects.filter(run=run).count() == 2 * 3
    summary = attack_summary(run)
    print(
        "\nGRID fixed block permutation:",
        {r["recognizer"] + "/" + r["attacker"]: round(r["accuracy"], 3) for r in summary["table"]},
    )
    assert summary["chance_level"] == pytest.approx(1 / 3)
    accuracy = {(r["recognizer"], r["attacker"]): r["accuracy"] for r in summary["table"]}
    # The paper's ordering, as far as 3 identities allow: the best parrot attacker beats
    # the best naive one (the fixed 8x8-cell permutation is the same in every video, so
    # an attacker trained on masked faces can learn it).
    best = {a: max(v for (_, att), v in accuracy.items() if att == a) for a in ("clear", "naive", "parrot")}
    assert best["parrot"] > best["naive"]
    # Measured: naive 0.333 (= chance) and parrot 1.0 (= clear) for both recognizers.
    assert best["naive"] <= 0.5 and best["parrot"] >= 0.9
    assert summary["worst_case_attacker"] == "parrot"
    assert summary["worst_case_accuracy"] == best["parrot"]
    assert summary["clear_bound"] == best["clear"] >= 0.9
    # Leave one video out: 9 folds, each stored once by its own unit.
    assert run.folds_total == 9 and AttackFold.objects.filter(run=run).count() == 9
    assert summary["protocol"] == "cross_video" and summary["n_folds"] == 9
    assert (summary["n_identities"], summary["n_videos"], summary["n_tested_videos"]) == (3, 9, 9)
    assert (
        summary["n_attacker_videos"] == 0
        and summary["n_tested_frames"] == summary["n_frames"] == run.n_samples
    )
    # The spread over folds: parrot re-identifies every frame of every held-out clip here.
    assert summary["worst_case_min"] <= summary["worst_case_accuracy"] <= summary["worst_case_max"]
    assert summary["worst_case_ci_low"] <= summary["worst_case_accuracy"] <= summary["worst_case_ci_high"]
    assert summary["worst_case_sd"] >= 0
    assert sorted(r["identity"] for r in summary["per_identity"]) == ["ID01", "ID02", "ID04"]
    assert sum(r["n_videos"] for r in summary["per_identity"]) == 9
    # Verification of the pretrained embedding: masked probes vs the clear gallery.
    figures = summary["verification"]["dlib_resnet"]
    assert 0 <= figures["eer"] <= 1 and figures["cmc_rank_1"] <= figures["cmc_rank_5"] <= 1
    assert figures["n_probes"] == summary["n_tested_frames"]
    # ... with the linkability of its genuine / impostor scores (Gomez-Barrero et al. 2018)
    assert 0 <= figures["linkability"] <= 1 and 0 <= figures["linkability_chance"] <= 1
    assert len(figures["linkability_curve"]["d_local"]) == 100
    # ... with 95 % intervals over the 3 probe identities (issue 22)
    assert figures["n_probe_identities"] == 3
    assert figures["eer_ci_low"] <= figures["eer"] <= figures["eer_ci_high"]
    assert figures["linkability_ci_low"] <= figures["linkability"] <= figures["linkability_ci_high"]
    # 3 tested identities cannot be split into development and tested parts (2 + 2): said so.
    assert "at least 4 identities" in summary["declared_unavailable"]
    assert summary["declared_attacker"] == "parrot" and "declared_accuracy" not in summary
    # Identity over time: every masked clip has consistency and flicker beside its clear clip,
    # and the linking attacker compared masked clips of different recordings (ID01 has 4).
    assert -1 <= summary["temporal_consistency"] <= 1 and summary["flicker"] > 0
    assert 0 <= summary["linking_eer"] <= 1 and 0 <= summary["linking_linkability"] <= 1
    # mated recording pairs: ID01 C(4,2) + ID04 C(3,2) + ID02 1 = 10, up to 10 x 10 samples each
    assert 0 < summary["linking_n_mated"] <= 10 * 100
    groups = summary["linkability_by_group"]
    assert all(set(g) == {"x"} and g["x"]["n_identities"] == 3 for g in groups.values())
    # The within-video table is there, apart and labelled, never the headline.
    scene = summary["scene_memorisation"]
    assert scene["protocol"] == "within_video" and "not the worst case" in scene["meaning"]
    # Per-video results: the worst-case pair on every tested clip (all 9 here).
    assert AttackVideoResult.objects.filter(run=run).count() == 9
    # Crops were cached on disk: one clear and one masked file per video.
    cached = list((Path(settings.CACHE_DIR) / "attack_faces").glob("*.npz"))
    assert len(cached) == 2 * 9
    assert set(run.timing) >= {"extraction_s", "cross_video_s", "scene_memorisation_s"}

    section = reports.submission_summary(submission)["attack"]
    assert section["worst_case_accuracy"] == summary["worst_case_accuracy"]
    report = reports.per_video_report(submission)
    assert report["attack_worst_case_accuracy"].notna().sum() == 9
    assert report["attack_temporal_consistency"].notna().sum() == 9
    assert (report["attack_flicker_clear"] > 0).all()

    page = admin_client.get(f"/organizer/automated/attack-run/{run.pk}/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "scene memorisation, not the worst case" in text and 'id="verification-plot"' in text
    assert 'id="declared-unavailable"' in text and 'id="linkability"' in text and 'id="temporal"' in text
    plot = admin_client.get(f"/organizer/automated/attack-run/{run.pk}/linkability/dlib_resnet.png")
    assert plot.status_code == 200 and plot.content.startswith(b"\x89PNG")
    png = admin_client.get(f"/organizer/automated/attack-run/{run.pk}/verification.png")
    assert png.status_code == 200 and png["Content-Type"] == "image/png"
    assert png.content.startswith(b"\x89PNG")
    # An organizer of another campaign (staff, not this campaign's) gets 404 on both.
    other = django_user_model.objects.create_user("other-organizer", password="x", is_staff=True)
    client.force_login(other)
    assert client.get(f"/organizer/automated/attack-run/{run.pk}/").status_code == 404
    assert client.get(f"/organizer/automated/attack-run/{run.pk}/verification.png").status_code == 404


def test_attacker_training_videos_train_in_every_fold_and_are_never_tested(submission):
    # ID01's first clip becomes the attacker's own material: it is never a fold of its own.
    SourceVideo.objects.filter(name="bbal6n").update(attacker_train=True, in_evaluated_subset=False)
    run = create_attack_run(submission, **OPTIONS)
    attacker_video = submission.masked_videos.get(source_video__name="bbal6n").pk
    assert run.folds_total == 8 and len(run.planned_folds) == 8
    assert all(attacker_video not in fold for fold in run.planned_folds)
    assert sorted(pk for fold in run.planned_folds for pk in fold) == sorted(
        m.pk for m in submission.masked_videos.exclude(pk=attacker_video)
    )
    # Three folds of 3 videos each, by identity round-robin: ID01's 3 evaluated clips split.
    folds3 = create_attack_run(submission, **OPTIONS, n_folds=3, seed=1)
    assert folds3.folds_total == 3 and sum(len(f) for f in folds3.planned_folds) == 8


def test_report_shows_the_strongest_run_not_the_latest(submission):
    strong = run_attack(submission, attackers=["naive", "parrot"], recognizers=["lbph"], stride=25)
    weak = run_attack(submission, attackers=["naive"], recognizers=["lbph"], stride=25)
    assert weak.finished_at >= strong.finished_at
    best = {run.pk: max(r.accuracy for r in run.results.exclude(attacker="clear")) for run in (strong, weak)}
    assert best[strong.pk] > best[weak.pk]  # parrot beats naive on the fixed permutation
    section = reports.submission_summary(submission)["attack"]
    assert section["run_id"] == strong.pk and section["worst_case_accuracy"] == best[strong.pk]


def test_admin_lists_attack_runs_read_only(submission, admin_client):
    run = run_attack(submission, attackers=["naive"], recognizers=["eigenfaces"], stride=25)
    assert admin_client.get("/admin/automated/attackrun/").status_code == 200
    page = admin_client.get(f"/admin/automated/attackrun/{run.pk}/change/")
    assert page.status_code == 200 and b"eigenfaces" in page.content
    assert admin_client.get("/admin/automated/attackrun/add/").status_code == 403


def test_attack_command_runs_through_the_task(submission):
    out = __import__("io").StringIO()
    call_command(
        "attack",
        str(submission.pk),
        "--attackers",
        "naive",
        "parrot",
        "--recognizers",
        "eigenfaces",
        "--stride",
        "25",
        stdout=out,
    )
    text = out.getvalue()
    assert "completed" in text and "worst case" in text and "eigenfaces" in text
    run = AttackRun.objects.get(submission=submission)
    assert run.config["stride"] == 25 and run.extraction_s is not None and run.training_s is not None


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(attackers=["clear"]), "no attack on the masking"),
        (dict(recognizers=["arcface"]), "unknown recognizer"),
        (dict(selection=["best"]), "unknown selection"),
        (dict(stride=0), "stride must be a whole number >= 1, got 0"),
        (dict(seed=-1), r"seed must be a whole number in \[0, 2\*\*32\), got -1"),
    ],
)
def test_bad_options_create_no_run(submission, options, message):
    with pytest.raises(ValueError, match=message):
        run_attack(submission, **options)
    assert not AttackRun.objects.exists()


def test_unknown_submission_is_a_command_error(db):
    with pytest.raises(CommandError, match="no submission with id 999"):
        call_command("attack", "999")
