"""Identity over time on a real clip (GRID talking head bbaf2n.mpg, 75 frames, 360x288):
face blur keeps the identity stable from frame to frame; fresh per-frame noise does not and
flickers."""

from __future__ import annotations

import numpy as np
import pytest

from automated.anonymizers import BASELINE_METHODS, FrameContext
from automated.attack.photos import face_crops
from automated.attack.recognizers import DlibEmbedding
from automated.detection import MediaPipeFaceDetector, largest_face
from automated.temporal import identity_over_time
from automated.video import iter_frames
from tests.automated.attack.test_photos import fresh_noise


@pytest.fixture(scope="module")
def clip(data_dir):
    frames, boxes = [], []
    with MediaPipeFaceDetector() as detector:
        for index, frame in iter_frames(data_dir / "videos" / "grid_talking_heads" / "bbaf2n.mpg", stride=5):
            box = largest_face(detector.detect(frame, index))
            if box is not None:
                frames.append(frame)
                boxes.append(box)
    return np.stack(frames), np.asarray(boxes, np.float32)


def masked_crops(frames, boxes, apply):
    masked = np.stack(
        [
            apply(frame, FrameContext(i, box, None, bytes(range(32)), bytes(8)))
            for i, (frame, box) in enumerate(zip(frames, boxes))
        ]
    )
    return face_crops(masked, boxes)


def test_blur_keeps_identity_over_time_and_fresh_noise_breaks_it(clip):
    frames, boxes = clip
    assert len(frames) >= 12  # analysed frames: every 5th of 75 with a face
    clear = face_crops(frames, boxes)
    embed = DlibEmbedding().transform
    blur = identity_over_time(clear, masked_crops(frames, boxes, BASELINE_METHODS["blur_face"].apply), embed)
    noise = identity_over_time(clear, masked_crops(frames, boxes, fresh_noise), embed)
    assert blur["n_frames"] == noise["n_frames"] == len(frames)
    # the clear face of one speaker: consecutive embeddings nearly parallel
    assert blur["consistency"].clear > 0.97
    # blur: a stable (blurred) identity, smoother than the clear crops
    assert blur["consistency"].relative > 0.97
    assert blur["flicker"].relative < 1.0
    # fresh noise: embeddings of unrelated noise crops move more (0.984 vs blur 0.999 and clear
    # 0.995 here: a face embedder maps all noise near one point, so consistency alone barely
    # separates them; the linking attacker does), and the crop flickers
    assert noise["consistency"].masked < blur["consistency"].masked
    assert noise["flicker"].relative > 5  # 72 vs 8.7 grey levels on this clip
