"""PU score (our reading of PrivHAR-Bench's composite score): hand-computed values and errors."""

import numpy as np
import pytest

from automated.privacy_utility import privacy_utility_score


@pytest.mark.parametrize(
    "masked, clear, ssim, expected",
    [
        (0.5, 1.0, 0.0, 0.5),  # half the utility, no visual resemblance
        (0.8, 0.8, 0.25, 0.75),  # no utility lost, SSIM 0.25
        (0.9, 0.9, 1.0, 0.0),  # the unmasked video: no privacy
        (0.0, 0.7, 0.1, 0.0),  # no utility left
        (0.6, 0.4, 0.5, 0.75),  # masking raised accuracy: 1.5 * 0.5
        (0.6, 0.4, 0.0, 1.0),  # 1.5 * 1.0 clipped to 1
        (0.5, 1.0, -0.5, 0.75),  # anti-correlated frames: 0.5 * 1.5
        (0.9, 0.9, -0.5, 1.0),  # 1.0 * 1.5 clipped to 1
    ],
)
def test_pu_score_hand_computed(masked, clear, ssim, expected):
    assert privacy_utility_score(masked, clear, ssim) == pytest.approx(expected)


def test_seed_values_are_reproduced_for_plausible_ssims():
    # seeds/004: clear 88.8 %, tiers 63.1-66.5 %; Canny 0.713 (highest), blur 0.177 (lowest).
    canny = [privacy_utility_score(accuracy, 0.888, 0.02) for accuracy in (0.631, 0.665)]
    blur = [privacy_utility_score(accuracy, 0.888, 0.76) for accuracy in (0.631, 0.665)]
    assert canny == pytest.approx([0.631 / 0.888 * 0.98, 0.665 / 0.888 * 0.98])
    assert 0.69 < min(canny) and max(canny) < 0.74  # printed: 0.713
    assert 0.17 < min(blur) and max(blur) < 0.18  # printed: 0.177


def test_pu_score_accepts_numpy_scalars_and_returns_a_float():
    score = privacy_utility_score(np.float32(0.5), np.float64(1.0), np.float64(0.5))
    assert type(score) is float and score == pytest.approx(0.25)


@pytest.mark.parametrize(
    "args, message",
    [
        ((1.2, 0.9, 0.5), r"masked_accuracy must be a number in \[0, 1\], got 1.2"),
        ((0.5, -0.1, 0.5), r"clear_accuracy must be a number in \[0, 1\], got -0.1"),
        ((0.5, 0.9, 1.5), r"ssim must be a number in \[-1, 1\], got 1.5"),
        ((0.5, 0.9, float("nan")), r"ssim must be a number in \[-1, 1\], got nan"),
        ((0.5, 0.9, None), r"ssim must be a number in \[-1, 1\], got None"),
        ((True, 0.9, 0.5), r"masked_accuracy must be a number in \[0, 1\], got True"),
        ((0.0, 0.0, 0.5), "clear_accuracy is 0"),
    ],
)
def test_pu_score_errors(args, message):
    with pytest.raises(ValueError, match=message):
        privacy_utility_score(*args)
