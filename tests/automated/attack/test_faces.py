"""Face crops of clear/masked video pairs (detect in the clear frame, crop both) on GRID clips."""

import numpy as np
import pytest

from automated.attack.faces import face_attack_data_from_videos, video_face_crops
from automated.detection import MediaPipeFaceDetector

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def detector():
    with MediaPipeFaceDetector() as mediapipe:
        yield mediapipe


def test_same_box_from_both_videos_and_a_cache_hit_the_second_time(data_dir, tmp_path, detector):
    clip = data_dir / "videos" / "grid_talking_heads" / "lwbsza.mpg"
    first = video_face_crops(clip, clip, stride=25, detector=detector, cache_dir=tmp_path)
    assert not first.from_cache
    assert list(first.frame_indices) == [0, 25, 50]  # 75 frames, a face in each tested frame
    assert first.clear.shape == (3, 160, 160, 3) and first.clear.dtype == np.uint8
    # The masked "video" is the clear one: the same box gives the same pixels.
    assert np.array_equal(first.clear, first.masked)
    second = video_face_crops(clip, clip, stride=25, detector=detector, cache_dir=tmp_path)
    assert second.from_cache and np.array_equal(second.clear, first.clear)
    assert not video_face_crops(clip, clip, stride=24, detector=detector, cache_dir=tmp_path).from_cache


def test_videos_of_different_resolution_give_crops_of_one_size(data_dir, detector):
    low = data_dir / "videos" / "grid_talking_heads" / "lwbsza.mpg"  # 360x288
    high = data_dir / "videos" / "grid_identity_clips" / "s4_probable" / "bbilzs.mpg"  # 720x576
    data = face_attack_data_from_videos(
        [(low, low), (high, high)],
        ["ID07", "ID07"],
        stride=25,
        detector=detector,
        roles=["evaluated", "attacker_train"],
    )
    assert data.clear.shape == (6, 160, 160, 3)
    assert data.roles.tolist() == ["evaluated"] * 3 + ["attacker_train"] * 3
    assert list(data.groups) == [0, 0, 0, 1, 1, 1]
    assert list(data.time_index) == [0, 25, 50, 0, 25, 50]


def test_pairs_and_identities_must_align(data_dir):
    clip = data_dir / "videos" / "grid_talking_heads" / "lwbsza.mpg"
    with pytest.raises(ValueError, match="2 video pairs but 1 identities"):
        face_attack_data_from_videos([(clip, clip), (clip, clip)], ["a"])
    with pytest.raises(ValueError, match="2 video pairs but 1 roles"):
        face_attack_data_from_videos([(clip, clip), (clip, clip)], ["a", "a"], roles=["evaluated"])
    for stride in (0, 2.5, True):  # one check (automated.checks.check_stride) everywhere
        with pytest.raises(ValueError, match="stride must be a whole number >= 1"):
            video_face_crops(clip, clip, stride=stride)
