"""Expression classifier accuracy on the 6 CREMA-D clips (actor 1001), clear and blurred, per acted emotion.

Not a speed benchmark: the accuracy of the pretrained mini-Xception (FER-2013) on the
project's real emotion clips, which the issue asks to report whatever it is. Every frame
of each clip (stride 1) is measured on the clear video and on whole-frame Gaussian blurs
of sigma 3, 7 and 15 px (``anonymizers.blur_frame``, the test strengths).

Columns per clip and condition: ``frame_accuracy`` = share of the clear video's face
frames whose top-1 expression is the acted emotion (a blurred frame whose face is lost
counts as wrong, ``expression.expression_accuracy`` with ``reference``);
``video_prediction`` = top-1 of the mean probabilities over the frames with a face
(``-`` if none); ``face_frames`` = frames where the face mesh found a face in that
condition. FER's "surprise" has no CREMA-D counterpart.
"""

from __future__ import annotations

from pathlib import Path

CLIPS = ("ANG", "DIS", "FEA", "HAP", "NEU", "SAD")
SIGMAS_PX = (0, 3, 7, 15)


def run() -> list[dict]:
    """One row per clip and blur strength, and one per strength over the 6 clips ("all")."""
    from django.conf import settings

    import numpy as np

    from automated.anonymizers import blur_frame
    from automated.behaviour.expression import EMOTION_TO_EXPRESSION, expression_accuracy
    from automated.behaviour.extractor import BehaviourExtractor
    from automated.video import iter_frames

    folder = Path(settings.DATA_DIR) / "videos" / "cremad"
    rows, totals = [], {sigma: [] for sigma in SIGMAS_PX}
    with BehaviourExtractor(body=False, hands=False) as extractor:
        for code in CLIPS:
            frames = list(iter_frames(folder / f"1001_DFA_{code}_XX.flv"))
            clear = None
            for sigma in SIGMAS_PX:
                extractor.reset()
                for index, frame in frames:
                    extractor.update(blur_frame(frame, sigma_px=sigma) if sigma else frame, index)
                features = extractor.features()
                clear = features if sigma == 0 else clear
                accuracy = expression_accuracy(features, code, reference=clear.face_found)
                totals[sigma].append(accuracy["video_correct"] is True)
                rows.append(
                    {
                        "emotion": EMOTION_TO_EXPRESSION[code.lower()],
                        "blur_sigma_px": sigma,
                        "frames": len(frames),
                        "face_frames": int(features.face_found.sum()),
                        "frame_accuracy": accuracy["frame_accuracy"],
                        "video_prediction": accuracy["video_prediction"] or "-",
                    }
                )
    for sigma in SIGMAS_PX:
        kept = [r for r in rows if r["blur_sigma_px"] == sigma]
        rows.append(
            {
                "emotion": "all (mean)",
                "blur_sigma_px": sigma,
                "frames": sum(r["frames"] for r in kept),
                "face_frames": sum(r["face_frames"] for r in kept),
                "frame_accuracy": float(np.mean([r["frame_accuracy"] for r in kept])),
                "video_prediction": f"{sum(totals[sigma])}/{len(CLIPS)} correct",
            }
        )
    return rows
