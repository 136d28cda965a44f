"""Verification (FMR/FNMR, EER, DET/ROC) and identification (CMC): hand-computed cases and ORL."""

import cv2
import numpy as np
import pytest

from automated import anonymizers
from automated.attack.faces import face_attack_data_from_images, load_image_folder
from automated.attack.recognizers import DlibEmbedding
from automated.attack.verification import (
    cmc_curve,
    equal_error_rate,
    evaluate_verification,
    fnmr_at_fmr,
    genuine_impostor_scores,
    operating_points,
    plot_verification,
    similarity_from_embeddings,
    verify_masked_probes,
)

GENUINE = [0.9, 0.8, 0.7, 0.4]
IMPOSTOR = [0.6, 0.5, 0.3, 0.2, 0.1]


def test_operating_points_by_hand():
    points = operating_points(GENUINE, IMPOSTOR)
    # Match: score >= threshold. At 0.6: impostor 0.6 matches (1/5), genuine 0.4 does not (1/4).
    assert points.thresholds.tolist() == [np.inf, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1]
    assert points.fmr.tolist() == pytest.approx([0, 0, 0, 0, 0.2, 0.4, 0.4, 0.6, 0.8, 1.0])
    assert points.fnmr.tolist() == pytest.approx([1, 0.75, 0.5, 0.25, 0.25, 0.25, 0, 0, 0, 0])


def test_equal_error_rate_by_hand():
    # FNMR - FMR: +0.05 at 0.6 (0.25 - 0.2), -0.15 at 0.5 (0.25 - 0.4): the line from
    # (0.2, 0.25) to (0.4, 0.25) meets FMR = FNMR at 0.25.
    assert equal_error_rate(GENUINE, IMPOSTOR) == pytest.approx(0.25)
    # A tie moves both rates at once: from (FMR 0, FNMR 0.5) to (0.5, 0): midpoint 0.25.
    assert equal_error_rate([0.9, 0.5], [0.5, 0.1]) == pytest.approx(0.25)
    # Exactly on a point: at 0.7, FMR 1/2 = FNMR 1/2.
    assert equal_error_rate([0.8, 0.6], [0.7, 0.2]) == pytest.approx(0.5)
    assert equal_error_rate([2.0, 3.0], [0.0, 1.0]) == 0.0  # separated
    assert equal_error_rate([1.0, 1.0], [1.0, 1.0]) == pytest.approx(0.5)  # indistinguishable


def test_fnmr_at_fmr_by_hand():
    assert fnmr_at_fmr(GENUINE, IMPOSTOR, 0.2) == (0.25, 0.6)
    assert fnmr_at_fmr(GENUINE, IMPOSTOR, 0.01) == (0.25, 0.7)  # only FMR 0 qualifies
    # 1000 impostor scores 0.000 .. 0.999: FMR <= 1e-2 needs threshold 0.99 (10 match),
    # where genuine 0.985 and 0.5 fail: FNMR 2/4; FMR <= 1e-3 needs 0.999: FNMR 3/4.
    impostor = np.arange(1000) / 1000
    genuine = [0.9995, 0.995, 0.985, 0.5]
    assert fnmr_at_fmr(genuine, impostor, 1e-2) == (0.5, 0.99)
    assert fnmr_at_fmr(genuine, impostor, 1e-3) == (0.75, 0.999)
    with pytest.raises(ValueError, match=r"fmr must be in \[0, 1\]"):
        fnmr_at_fmr(GENUINE, IMPOSTOR, 1.5)


def test_cmc_by_hand_with_ties_at_chance():
    scores = np.array(
        [
            [0.9, 0.5, 0.1],  # A: first
            [0.7, 0.6, 0.2],  # B: second (A scores higher)
            [0.4, 0.4, 0.4],
        ]
    )  # C: a three-way tie, rank 1, 2 or 3 equally likely
    cmc = cmc_curve(scores, ["A", "B", "C"], ["A", "B", "C"], max_rank=5)
    assert cmc.tolist() == pytest.approx([(1 + 0 + 1 / 3) / 3, (1 + 1 + 2 / 3) / 3, 1, 1, 1])
    # Two gallery stills of A: A scores its best one.
    two = cmc_curve([[0.1, 0.8, 0.5]], ["A"], ["A", "A", "B"], max_rank=2)
    assert two.tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match=r"probe identities \['D'\] have no gallery sample"):
        cmc_curve(scores, ["A", "B", "D"], ["A", "B", "C"])


def test_matrix_to_genuine_impostor_and_summary():
    scores = np.array([[0.9, 0.6], [0.5, 0.8], [0.45, 0.4]])  # probes A, B, B vs gallery A, B
    genuine, impostor = genuine_impostor_scores(scores, ["A", "B", "B"], ["A", "B"])
    assert genuine.tolist() == [0.9, 0.8, 0.4] and impostor.tolist() == [0.6, 0.5, 0.45]
    result = evaluate_verification(scores, ["A", "B", "B"], ["A", "B"], max_rank=2)
    # Points: 0.9 (0, 2/3) 0.8 (0, 1/3) 0.6 (1/3, 1/3): EER 1/3. FMR <= 1e-2: FNMR 1/3.
    assert result.eer == pytest.approx(1 / 3)
    assert result.fnmr_at == {0.01: pytest.approx(1 / 3), 0.001: pytest.approx(1 / 3)}
    assert result.fmr_resolved == {0.01: False, 0.001: False}  # 3 impostor comparisons
    assert result.cmc.tolist() == pytest.approx([2 / 3, 1.0])  # probe 3 (B) prefers A
    summary = result.as_dict()
    assert (summary["n_genuine"], summary["n_impostor"], summary["cmc_rank_1"]) == (
        3,
        3,
        pytest.approx(2 / 3),
    )
    assert similarity_from_embeddings([[0, 0]], [[3, 4], [0, 1]]).tolist() == [[-5.0, -1.0]]
    with pytest.raises(ValueError, match="need genuine and impostor comparisons"):
        genuine_impostor_scores([[0.5]], ["A"], ["A"])
    with pytest.raises(ValueError, match=r"scores must have shape \(n_probes, n_gallery\) = \(1, 2\)"):
        genuine_impostor_scores([[0.5]], ["A"], ["A", "B"])


@pytest.fixture(scope="module")
def orl_ten(data_dir):
    images, identities = load_image_folder(data_dir / "faces" / "orl_att_faces")
    keep = np.isin(identities, [f"s{i}" for i in range(1, 11)])
    return [im for im, k in zip(images, keep) if k], identities[keep]


def test_pretrained_dlib_verification_on_clear_and_blurred_orl_probes(orl_ten):
    images, identities = orl_ten
    position = np.arange(len(identities)) % 10
    gallery, probes = np.flatnonzero(position == 0), np.flatnonzero((position >= 1) & (position <= 3))
    embed = DlibEmbedding().transform
    results = {}
    for name, anonymize in {
        "clear": lambda image, i: image.copy(),
        "blur": lambda image, i: anonymizers.blur_frame(image),
    }.items():
        data = face_attack_data_from_images(images, identities, anonymize)
        results[name] = verify_masked_probes(data, gallery, probes, embed)
    clear, blur = results["clear"], results["blur"]
    print("\nORL s1-s10, 1 gallery still, 3 probes each:", {k: r.as_dict() for k, r in results.items()})
    # Measured: clear EER 0.20, rank-1 0.70; sigma-15 blur EER 0.53, CMC 0.13 .. 0.50
    # (chance r/10). 30 genuine and 270 impostor comparisons each.
    assert (clear.genuine.size, clear.impostor.size) == (30, 270)
    assert clear.eer < 0.3 and clear.cmc[0] >= 0.6
    assert blur.eer > 0.4 and blur.cmc[0] <= 0.25 and blur.fnmr_at[0.01] > clear.fnmr_at[0.01]
    png = plot_verification(results, title="ORL")
    image = cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_COLOR)
    assert image.shape == (450, 2000, 3)  # CMC, ROC, DET, linkability


def test_verification_pooled_over_cross_video_folds_by_hand():
    from automated.attack.crossvideo import fold_of_groups
    from automated.attack.data import AttackData
    from automated.attack.verification import curve_record, plot_verification, verify_folds

    # 1-D "embeddings" = the crop's first pixel: a at 0 and 1, b at 10 and 11, one video each.
    crops = np.zeros((4, 2, 2), np.uint8)
    crops[:, 0, 0] = [0, 1, 10, 11]
    data = AttackData(crops, crops.copy(), np.array(["a", "a", "b", "b"]), groups=np.arange(4))
    folds = [fold_of_groups(data.groups, [0], 0), fold_of_groups(data.groups, [2], 1)]
    result = verify_folds(data, folds, lambda x: x.reshape(len(x), -1)[:, :1].astype(float))
    # Fold 0: probe 0 vs gallery 1 (a), 10, 11 (b) -> genuine -1, impostors -10, -11.
    # Fold 1: probe 10 vs gallery 0, 1 (a), 11 (b) -> genuine -1, impostors -10, -9.
    np.testing.assert_array_equal(np.sort(result.genuine), [-1, -1])
    np.testing.assert_array_equal(np.sort(result.impostor), [-11, -10, -10, -9])
    assert result.eer == 0.0 and result.n_probes == 2 and result.n_gallery == 3
    np.testing.assert_array_equal(result.cmc, [1.0, 1.0, 1.0, 1.0, 1.0])
    assert result.fnmr_at[0.01] == 0.0 and result.fmr_resolved[0.01] is False  # 4 impostor scores only
    record = curve_record(result)
    assert record["fmr"][0] == 0.0 and record["fnmr"][0] == 1.0 and record["fmr"][-1] == 1.0
    assert record["cmc_rank_1"] == 1.0 and record["n_impostor"] == 4
    # Linkability: scores -11 .. -1 in 100 bins of 0.1; both genuine scores (-1) in the last
    # bin (density 10, D = 1 there, no impostor); the trapezoid over the bin centres gives the
    # end bin half weight: 10 * 0.1 / 2 = 0.5.
    assert record["linkability"] == pytest.approx(0.5)
    assert len(record["linkability_curve"]["d_local"]) == 100
    assert record["linkability_curve"]["d_local"][-1] == 1.0
    assert 0.0 <= record["linkability_chance"] <= 1.0
    assert plot_verification({"stored": record}).startswith(b"\x89PNG")
    older = {k: v for k, v in record.items() if not k.startswith("linkability")}  # stored before linkability
    assert plot_verification({"stored": older, "new": record}).startswith(b"\x89PNG")
    with pytest.raises(ValueError, match="no fold has probes"):
        verify_folds(data, [fold_of_groups(data.groups, [], 0)], lambda x: x)
