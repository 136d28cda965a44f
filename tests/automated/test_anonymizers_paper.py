"""The paper's face anonymizations (seeds/000 section 5.6.1) on real ORL faces: defining properties."""

import math

import cv2
import numpy as np
import pytest

from automated.anonymizers import (
    BASELINE_METHODS,
    FrameContext,
    default_background_faces,
    dp_pix,
    dp_pix_scale,
    dp_samp,
    dp_samp_counts,
    dp_samp_pixels,
    dp_snow,
    frame_nonce,
    frame_rng,
    k_rtio,
    k_same_pixel,
    rtio_overlays,
)
from automated.attack.faces import load_image_folder

KEY = bytes(range(32))


@pytest.fixture(scope="module")
def orl(data_dir):
    """The first still of each ORL identity, as RGB (112, 92, 3), keyed by identity."""
    images, identities = load_image_folder(data_dir / "faces" / "orl_att_faces")
    first = {}
    for image, identity in zip(images, identities):
        first.setdefault(identity, np.repeat(image[..., None], 3, axis=2))
    return first


def test_dp_pix_cells_are_means_plus_laplace_noise_of_the_papers_scale(orl):
    # b = 255 m / (b_cell^2 eps) = 255 * 16 / (144 * 2) = 14.17 grey levels.
    assert dp_pix_scale() == pytest.approx(255 * 16 / (144 * 2))
    assert dp_pix_scale(n_pixels=48) == pytest.approx(255 * 16 / (48 * 2))  # a cut cell of 4 x 12
    rng = np.random.default_rng(0)
    residuals = []
    for identity in [f"s{i}" for i in range(1, 21)]:
        face = cv2.resize(orl[identity], (96, 96), interpolation=cv2.INTER_AREA)  # 8 x 8 cells of 12 px
        out = dp_pix(face, (0, 0, 96, 96), rng=rng)
        cells = out.reshape(8, 12, 8, 12, 3)
        assert (cells == cells[:, :1, :, :1]).all()  # one colour per cell
        means = face.reshape(8, 12, 8, 12, 3).astype(float).mean(axis=(1, 3))
        noise = cells[:, 0, :, 0].astype(float) - means
        residuals.append(noise[(means > 60) & (means < 195)])  # far from the clipping at 0 / 255
    residuals = np.concatenate(residuals)
    assert len(residuals) > 2500
    # Laplace(0, b): E|X| = b, median |X| = b ln 2 (rounding to integers adds < 0.1).
    assert np.abs(residuals).mean() == pytest.approx(dp_pix_scale(), rel=0.06)
    assert np.median(np.abs(residuals)) == pytest.approx(dp_pix_scale() * np.log(2), rel=0.1)
    assert abs(residuals.mean()) < 1.0


def test_dp_snow_keeps_exactly_a_share_d_of_the_pixels(orl):
    face = orl["s2"].copy()
    face[face == 127] = 128  # so every grey pixel is snow
    out = dp_snow(face, (0, 0, 92, 112), rng=np.random.default_rng(1))
    snow = (out == 127).all(axis=2)
    assert snow.sum() == math.floor(0.99 * 92 * 112) == 10200
    np.testing.assert_array_equal(out[~snow], face[~snow])  # the other 1 % are untouched
    other = dp_snow(face, (0, 0, 92, 112), rng=np.random.default_rng(2))
    assert not np.array_equal(snow, (other == 127).all(axis=2))


def test_dp_samp_sample_sizes_meet_the_dp_bound():
    # Cluster of f pixels with budget eps_i = 5 f / N: the largest x with
    # C(f, x) / C(f - 12, x) <= exp(eps_i), worked out here with math.comb.
    frequencies = [100, 50, 5]
    counts = dp_samp_counts(frequencies, epsilon=5.0, m=12)
    for f, x in zip(frequencies, counts):
        if f <= 12:
            assert x == 0
            continue
        budget = 5.0 * f / sum(frequencies)
        assert math.comb(f, x) / math.comb(f - 12, x) <= math.exp(budget)
        assert math.comb(f, x + 1) / math.comb(f - 12, x + 1) > math.exp(budget)
    assert counts.tolist() == [22, 5, 0]


def test_dp_samp_rebuilds_the_face_from_few_cluster_coloured_samples(orl):
    face = cv2.resize(orl["s3"], (96, 112))
    points, colours = dp_samp_pixels(face, rng=np.random.default_rng(3))
    assert 50 < len(points) < 0.05 * 96 * 112  # a few hundred of 10,752 pixels
    assert len(np.unique(colours, axis=0)) <= 24  # k = 24 cluster centres
    out = dp_samp(face, (0, 0, 96, 112), rng=np.random.default_rng(3))
    # Same generator: the released samples sit in the output with their centre colour.
    np.testing.assert_array_equal(out[points[:, 0], points[:, 1]], np.rint(colours).astype(np.uint8))
    assert not np.array_equal(out, face)


@pytest.mark.parametrize("n_samples", [1, 2, 3, 40, 400])
def test_dp_samp_rebuild_is_linear_inside_the_hull_and_the_nearest_sample_outside(n_samples):
    """The rebuilt region equals interpolating the whole grid both ways (scipy ``griddata``
    linear, nearest where linear is undefined), for 1 and 2 samples (nearest only), 3 (a
    thin hull) and many; and a hand case: two samples give the nearest one's colour."""
    from scipy.interpolate import griddata

    from automated.anonymizers.privacy import _interpolate

    rng = np.random.default_rng(n_samples)
    shape = (37, 29)
    points = np.stack([rng.integers(0, shape[0], n_samples), rng.integers(0, shape[1], n_samples)], axis=1)
    colours = rng.uniform(0, 255, (n_samples, 3))
    grid = tuple(np.mgrid[0 : shape[0], 0 : shape[1]])
    expected = griddata(points, colours, grid, method="nearest")
    if n_samples >= 3:
        linear = griddata(points, colours, grid, method="linear")
        assert np.isnan(linear).any() and not np.isnan(linear).all()  # both rules are used
        expected = np.where(np.isnan(linear), expected, linear)
    np.testing.assert_array_equal(
        _interpolate(points, colours, shape), np.clip(np.rint(expected), 0, 255).astype(np.uint8)
    )
    two = _interpolate(np.array([[0, 0], [0, 9]]), np.array([[10.0, 20, 30], [200, 100, 0]]), (2, 10))
    assert (
        two[:, :5].tolist() == [[[10, 20, 30]] * 5] * 2 and two[:, 5:].tolist() == [[[200, 100, 0]] * 5] * 2
    )


def test_k_rtio_blends_the_face_with_permuted_overlays(orl):
    face = cv2.resize(orl["s4"], (90, 108))  # 5 x 6 blocks of 18 px
    flat = [np.full((50, 60, 3), 200, np.uint8)]
    out = k_rtio(face, (0, 0, 90, 108), key=KEY, nonce=frame_nonce(0), k=1, overlays=flat)
    np.testing.assert_array_equal(out, np.rint(0.4 * face + 0.6 * 200).astype(np.uint8))
    # A textured overlay: what is left after removing 0.4 x face is 0.6 x a permutation of
    # the overlay's 18 px blocks.
    texture = cv2.resize(orl["s5"], (90, 108))
    out = k_rtio(face, (0, 0, 90, 108), key=KEY, nonce=frame_nonce(0), k=1, overlays=[texture])
    recovered = (out.astype(float) - 0.4 * face) / 0.6

    def blocks(image):
        return image[..., 0].reshape(6, 18, 5, 18).swapaxes(1, 2).reshape(30, -1)

    pieces, original = blocks(recovered), blocks(texture.astype(float))
    match = [np.abs(original - piece).max(axis=1).argmin() for piece in pieces]
    assert sorted(match) == list(range(30))  # every block used once
    assert np.abs(original[match] - pieces).max() <= 1.0 / 0.6  # up to rounding
    assert match != list(range(30))  # and moved
    # Keyed: the same nonce repeats, a fresh frame nonce gives new overlays and blocks.
    first = k_rtio(face, (0, 0, 90, 108), key=KEY, nonce=frame_nonce(0))
    np.testing.assert_array_equal(first, k_rtio(face, (0, 0, 90, 108), key=KEY, nonce=frame_nonce(0)))
    assert not np.array_equal(first, k_rtio(face, (0, 0, 90, 108), key=KEY, nonce=frame_nonce(1)))
    assert len(rtio_overlays()) == 12 and all(
        o.dtype == np.uint8 and o.shape[2] == 3 for o in rtio_overlays()
    )


def test_k_same_pixel_averages_the_face_with_its_nine_nearest_background_faces(orl):
    face = orl["s1"]
    background = np.stack([orl[f"s{i}"][..., 0] for i in range(11, 41)])  # 30 other people, grey
    out = k_same_pixel(face, (0, 0, 92, 112), background=background, k=10)
    distances = np.linalg.norm((background.astype(float) - face[..., 0]).reshape(30, -1), axis=1)
    nearest = np.argsort(distances)[:9]
    expected = (face[..., 0].astype(float) + background[nearest].astype(float).sum(axis=0)) / 10
    np.testing.assert_array_equal(out[..., 0], np.rint(expected).astype(np.uint8))
    np.testing.assert_array_equal(k_same_pixel(face, (0, 0, 92, 112), background=background, k=1), face)
    with pytest.raises(ValueError, match=r"k must be in \[1, 31\]"):
        k_same_pixel(face, (0, 0, 92, 112), background=background, k=32)
    assert default_background_faces().shape == (100, 25, 25)


@pytest.mark.parametrize("name", ["k_same_pixel", "dp_pix", "dp_snow", "dp_samp", "k_rtio"])
def test_registered_baselines_mask_only_the_face_region_and_are_keyed(orl, name):
    frame = np.zeros((200, 240, 3), np.uint8) + 40
    frame[40:152, 70:162] = orl["s6"]
    context = FrameContext(7, np.array([80, 50, 150, 140], np.float32), None, KEY, bytes(8))
    out = BASELINE_METHODS[name].apply(frame, context)
    changed = np.argwhere((out != frame).any(axis=2))
    # Region = box + 20 % margin: x 66..164, y 32..158.
    assert changed[:, 1].min() >= 66 and changed[:, 1].max() < 164
    assert changed[:, 0].min() >= 32 and changed[:, 0].max() < 158
    np.testing.assert_array_equal(out, BASELINE_METHODS[name].apply(frame, context))  # same key, same frame
    if name != "k_same_pixel":  # k-Same-Pixel has no randomness
        other = FrameContext(8, context.box_xyxy, None, KEY, bytes(8))
        assert not np.array_equal(out, BASELINE_METHODS[name].apply(frame, other))


def test_frame_rng_depends_on_key_nonce_and_frame():
    draw = lambda *args: frame_rng(*args).integers(0, 2**32, 4).tolist()  # noqa: E731
    assert draw(KEY, bytes(8), 0) == draw(KEY, bytes(8), 0)
    assert (
        len(
            {
                tuple(draw(KEY, bytes(8), 0)),
                tuple(draw(KEY, bytes(8), 1)),
                tuple(draw(bytes(32), bytes(8), 0)),
                tuple(draw(KEY, b"\x01" * 8, 0)),
            }
        )
        == 4
    )
