"""Cheating-rater tests (issue 9): each test is named after the leak it closes and fails
if the trick beats chance."""
import random
from collections import Counter, defaultdict

import pytest

from evalsite.demo_data import DEMO_PEOPLE, IDENTITY_COLUMNS, clip_labels
from trials import design

N_FOILS = 4


def demo_pool(data_dir) -> dict:
    """The demo campaign's identities with the attributes the importer stores."""
    labels = clip_labels(data_dir)
    return {p.code: {c: labels[p.videos[0]][c] for c in IDENTITY_COLUMNS[1:]} for p in DEMO_PEOPLE}


def _make_up(lineup, pool, attributes) -> tuple:
    """Counts per attribute value of a lineup (what a rater sees without recognising anyone)."""
    return tuple(sorted(Counter((a, pool[key][a]) for key in lineup for a in attributes).items()))


def test_lineup_make_up_does_not_reveal_target_presence(data_dir):
    pool = demo_pool(data_dir)
    attributes = ["gender_unofficial"]  # the demo campaign matches on this
    rng = random.Random(9)
    make_ups = defaultdict(lambda: {True: Counter(), False: Counter()})
    targets = sorted(pool)
    for i in range(2000):
        target = targets[i % len(targets)]
        lineup, present = design.trial_lineup(
            target, pool, attributes, n_foils=N_FOILS, target_absent_share=0.3, rng=rng
        )
        assert len(lineup) == N_FOILS + 1 and (target in lineup) == present
        make_ups[target][present][_make_up(lineup, pool, attributes)] += 1
    women = [t for t in targets if pool[t]["gender_unofficial"] == "female"]
    assert len(women) == 4  # 3 other women: too few for any target-absent lineup
    for target in targets:
        present, absent = make_ups[target][True], make_ups[target][False]
        if target in women:
            assert not absent, f"{target}: a target-absent lineup of a thin stratum"
            continue
        # Men: 6 other men, both kinds all-male; the make-up never tells presence apart.
        assert set(present) == set(absent) == {((("gender_unofficial", "male"), 5),)}, target
        assert sum(absent.values()) > 30  # target-absent trials do happen (30 % of ~182)
    # The organizer is told which identities get no target-absent trials and why.
    shortages = {s.identity: s for s in design.foil_shortages(pool, attributes, n_foils=N_FOILS)}
    assert sorted(shortages) == women
    message = shortages["ID02"].message("ID02", n_foils=N_FOILS)
    assert "ID02 (gender_unofficial=female): only 3 other identities share these values" in message
    assert "it gets no target-absent trials (2 more matched identities needed)" in message


def test_unknown_attribute_values_match_nobody(data_dir):
    pool = demo_pool(data_dir)
    # race is "unknown" for every GRID speaker and known only for ID11.
    assert design.matched_identities("ID01", pool, ["race"]) == []
    assert design.matched_identities("ID01", pool, ["gender_unofficial", "age_band"]) == []
    people = {"a": {"g": "f"}, "b": {"g": "f"}, "c": {"g": ""}, "d": {"g": "Unknown"}, "e": {"g": None}}
    assert design.matched_identities("c", people, ["g"]) == []
    assert design.matched_identities("d", people, ["g"]) == []
    assert design.matched_identities("a", people, ["g"]) == ["b"]
    shortage = design.foil_shortages(people, ["g"], n_foils=1, targets=["d"])[0]
    assert "g=unknown (matches nobody)" in shortage.message("D", n_foils=1)


@pytest.mark.parametrize("share", [0.0, 0.5, 1.0])
def test_thin_stratum_is_always_target_present_whatever_the_share(share):
    people = {f"w{i}": {"g": "f"} for i in range(4)} | {f"m{i}": {"g": "m"} for i in range(7)}
    rng = random.Random(1)
    for _ in range(100):
        lineup, present = design.trial_lineup("w0", people, ["g"], n_foils=4, target_absent_share=share, rng=rng)
        assert present and "w0" in lineup
        lineup, present = design.trial_lineup("m0", people, ["g"], n_foils=4, target_absent_share=share, rng=rng)
        assert all(k.startswith("m") for k in lineup)
        if share in (0.0, 1.0):
            assert present == (share == 0.0)
