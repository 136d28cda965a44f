"""Every baseline on the demo's cross-video protocol: the worst case, its pair, sd, interval.

The demo's 24 clips of 11 identities (``attack_demo``: four clips are the attacker's own
material), masked by each baseline of ``automated.anonymizers.BASELINE_METHODS`` (key
``bytes(range(32))``), every 5th frame. Per baseline: the cross-video worst case
(leave one video out, 13 folds; mean over folds of the strongest recognizer x attacker,
the clear baseline excluded), its sd, min/max over folds and 95 % t-interval; the clear
bound and chance level (1 / 11); and, for contrast, the within-video figure (every clip
split in time with a 10-frame gap: scene memorisation, not a worst case).

Recognizers ``DEID_BENCH_ATTACK_RECOGNIZERS`` (default dlib_svm, lbph, eigenfaces, cnn),
attackers clear, naive and parrot; ``DEID_BENCH_ATTACK_BASELINES`` narrows the baselines.
Masked videos and crops are reused from ``DEID_BENCH_ATTACK_DIR`` when present.
"""

from __future__ import annotations

import time

from evalsite import conf

RECOGNIZERS = "dlib_svm,lbph,eigenfaces,cnn"
ATTACKERS = ["clear", "naive", "parrot"]


def run() -> list[dict]:
    from automated.anonymizers import BASELINE_METHODS
    from automated.attack.crossvideo import run_cross_video_suite
    from automated.attack.recognizers import get_recognizers
    from automated.attack.suite import run_attack_suite, worst_case
    from automated.detection import MediaPipeFaceDetector

    from .attack_demo import attack_data, masked_pairs

    recognizers = get_recognizers(conf.value("DEID_BENCH_ATTACK_RECOGNIZERS") or RECOGNIZERS.split(","))
    wanted = conf.value("DEID_BENCH_ATTACK_BASELINES") or list(BASELINE_METHODS)
    rows = []
    with MediaPipeFaceDetector() as detector:
        for method in wanted:
            started = time.perf_counter()
            pairs, _ = masked_pairs(method)
            data = attack_data(pairs, detector)
            cross = run_cross_video_suite(data, recognizers=recognizers, attackers=ATTACKERS)
            worst = cross.worst_case()
            within = worst_case(
                run_attack_suite(
                    data, recognizers=recognizers, attackers=ATTACKERS, gap=10, within_video=True
                )
            )
            rows.append(
                {
                    "baseline": method,
                    "worst_case": worst["accuracy"],
                    "pair": f"{worst['recognizer']} x {worst['attacker']}",
                    "sd": worst["sd"],
                    "ci95": f"{worst['ci_low']:.3f}-{worst['ci_high']:.3f}",
                    "min_max": f"{worst['min']:.3f}-{worst['max']:.3f}",
                    "chance": worst["chance_level"],
                    "clear_bound": worst["clear_accuracy"],
                    "folds": worst["n_folds"],
                    "within_video": within["accuracy"],
                    "within_pair": f"{within['recognizer']} x {within['attacker']}",
                    "wall_s": time.perf_counter() - started,
                }
            )
            print(rows[-1], flush=True)
    return rows
