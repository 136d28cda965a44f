"""The paper's three hypotheses on ORL, for every baseline: H1 parrot >= naive, H2 more masked training helps, H3 no single best recognizer.

seeds/000_0b74979cb8a3f1c3.txt, section 3 (hypotheses) and 5.2 (attackers): H1 an
attacker trained on anonymized data (parrot) recognises at least as well as one trained on
clear data (naive); H2 the more of its training data is anonymized (25 / 50 / 75 % parrot,
then parrot) the better it recognises; H3 no single recognition system is the strongest
against every anonymization, so the worst case must take the best of several.

ORL (40 identities x 10 stills, scaled to 96 x 112), one seeded 75/25 split per identity
(``suite.run_attack_suite``: 280 training and 120 test faces, chance 0.025). Each baseline
of ``automated.anonymizers.BASELINE_METHODS`` (identity excluded) masks the whole still as
its face box (eyes at ORL's mean positions, key ``bytes(range(32))``, the still's index as
frame index, so keyed methods draw a fresh permutation per still). Rows: one per baseline
and recognizer, accuracy per attacker; ``h1`` parrot - naive; ``h2_steps_down`` how many of
the four steps naive -> 25 -> 50 -> 75 % -> parrot lose accuracy; ``best`` marks the
strongest recognizer of the baseline (its parrot or %-parrot). The last rows say per
hypothesis in how many baselines it holds.

``DEID_BENCH_HYPOTHESES_RECOGNIZERS`` (default eigenfaces, lbph, cnn, dlib_svm; add
``dlib_finetuned`` for the Retrained-ArcFace analogue, about 20 CPU s per fit of 280 crops) and
``DEID_BENCH_HYPOTHESES_BASELINES`` narrow the run.
"""

from __future__ import annotations


import numpy as np

from evalsite import conf

RECOGNIZERS = "eigenfaces,lbph,cnn,dlib_svm"
ATTACKERS = ["clear", "naive", "parrot_25", "parrot_50", "parrot_75", "parrot"]
KEY = bytes(range(32))
SIZE_WH = (96, 112)
#: ORL's eye centres at 96 x 112 (pixels), measured on the mean face.
EYES_XY = np.array([[30.0, 50.0], [66.0, 50.0]], np.float32)


def _masker(method: str):
    from automated.anonymizers import BASELINE_METHODS, FrameContext

    apply = BASELINE_METHODS[method].apply
    box = np.array([0, 0, *SIZE_WH], np.float32)

    def anonymize(image, index):
        return apply(image, FrameContext(index, box_xyxy=box, eyes_xy=EYES_XY, key=KEY))

    return anonymize


def run() -> list[dict]:
    """One row per baseline x recognizer (accuracy in [0, 1] per attacker, ``h1``,
    ``h2_steps_down``, ``best``), then one row per hypothesis: in how many baselines it holds."""
    import cv2

    from automated.anonymizers import BASELINE_METHODS
    from automated.attack.faces import face_attack_data_from_images, load_image_folder
    from automated.attack.recognizers import get_recognizers
    from automated.attack.suite import accuracy_table, run_attack_suite
    from django.conf import settings

    images, identities = load_image_folder(settings.DATA_DIR / "faces" / "orl_att_faces")
    images = [cv2.resize(im, SIZE_WH, interpolation=cv2.INTER_AREA) for im in images]
    names = conf.value("DEID_BENCH_HYPOTHESES_RECOGNIZERS") or RECOGNIZERS.split(",")
    methods = conf.value("DEID_BENCH_HYPOTHESES_BASELINES") or [
        m for m in BASELINE_METHODS if m != "identity"
    ]
    rows, held = [], {"H1": 0, "H2": 0, "H3": 0}
    best_recognizers = []
    for method in methods:
        data = face_attack_data_from_images(images, identities, _masker(method))
        table = accuracy_table(
            run_attack_suite(data, recognizers=get_recognizers(names), attackers=ATTACKERS, seed=0)
        )[ATTACKERS]
        strongest = table[ATTACKERS[2:]].max(axis=1)
        best = strongest.idxmax()
        best_recognizers.append(best)
        h1 = table["parrot"] - table["naive"]
        steps = np.diff(table[ATTACKERS[1:]].to_numpy(), axis=1)
        for recognizer, accuracies in table.iterrows():
            rows.append(
                {
                    "baseline": method,
                    "recognizer": recognizer,
                    **{a: float(accuracies[a]) for a in ATTACKERS},
                    "h1": float(h1[recognizer]),
                    "h2_steps_down": int((steps[table.index.get_loc(recognizer)] < 0).sum()),
                    "best": "*" if recognizer == best else "",
                }
            )
        held["H1"] += bool((h1 >= 0).all())
        held["H2"] += bool((table["parrot"] >= table["naive"]).all() and (steps.sum(axis=1) >= 0).all())
    held["H3"] = len(set(best_recognizers))
    n = f"of {len(methods)}"
    rows.append({"baseline": "H1 holds (every recognizer)", "recognizer": f"{held['H1']} {n}"})
    rows.append({"baseline": "H2 holds (net gain, >= naive)", "recognizer": f"{held['H2']} {n}"})
    strongest = ", ".join(f"{r} {best_recognizers.count(r)}" for r in sorted(set(best_recognizers)))
    rows.append({"baseline": "H3 strongest recognizers", "recognizer": strongest})
    return rows
