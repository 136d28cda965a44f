"""Lineups, target-absent trials and session plans (pure functions, no database)."""

import random
from collections import Counter

import pytest

from trials import design

# 6 identities: 4 female/white/18-29 (a, b, c, d), 1 female/black (e), 1 with a missing race (f).
PEOPLE = {
    "a": {"gender": "f", "race": "white", "age_band": "18-29"},
    "b": {"gender": "f", "race": "white", "age_band": "18-29"},
    "c": {"gender": "f", "race": "white", "age_band": "18-29"},
    "d": {"gender": "f", "race": "white", "age_band": "18-29"},
    "e": {"gender": "f", "race": "black", "age_band": "18-29"},
    "f": {"gender": "f", "age_band": "18-29"},
}
ATTRS = ["gender", "race", "age_band"]


def test_matched_identities_share_every_attribute():
    assert sorted(design.matched_identities("a", PEOPLE, ATTRS)) == ["b", "c", "d"]
    assert design.matched_identities("e", PEOPLE, ATTRS) == []
    assert sorted(design.matched_identities("a", PEOPLE, ["gender"])) == ["b", "c", "d", "e", "f"]


def test_missing_attribute_matches_nobody():
    assert design.matched_identities("f", PEOPLE, ATTRS) == []
    assert "f" not in design.matched_identities("a", PEOPLE, ["race"])


def test_foil_shortages_report_each_target_with_counts():
    shortages = design.foil_shortages(PEOPLE, ATTRS, n_foils=3, targets=["a", "e"], target_absent=False)
    assert [(s.identity, s.matching, s.needed) for s in shortages] == [("e", 0, 3)]
    with_absent = design.foil_shortages(PEOPLE, ATTRS, n_foils=3, targets=["a"], target_absent=True)
    assert [(s.identity, s.matching, s.needed) for s in with_absent] == [("a", 3, 4)]
    assert "only 3 other identities share these values" in with_absent[0].message("ID-A")
    assert "race=white" in with_absent[0].message()


def test_lineup_holds_target_and_matched_foils_only():
    rng = random.Random(0)
    for _ in range(50):
        lineup = design.build_lineup("a", PEOPLE, ATTRS, n_foils=3, target_present=True, rng=rng)
        assert sorted(lineup) == ["a", "b", "c", "d"]
        assert lineup[int(design.correct_choice("a", lineup)) - 1] == "a"


def test_target_absent_lineup_replaces_target_with_another_matched_foil():
    rng = random.Random(1)
    lineup = design.build_lineup("a", PEOPLE, ATTRS, n_foils=2, target_present=False, rng=rng)
    assert len(lineup) == 3 and "a" not in lineup and set(lineup) <= {"b", "c", "d"}
    assert design.correct_choice("a", lineup) == design.NOT_PRESENT


def test_lineup_order_is_randomised_over_positions():
    rng = random.Random(2)
    positions = Counter(
        design.correct_choice(
            "a", design.build_lineup("a", PEOPLE, ATTRS, n_foils=3, target_present=True, rng=rng)
        )
        for _ in range(4000)
    )
    assert set(positions) == {"1", "2", "3", "4"}
    assert all(900 < count < 1100 for count in positions.values())  # 1000 expected each


def test_too_few_matched_identities_raise_instead_of_mismatching():
    with pytest.raises(design.FoilShortageError, match="0 demographically matched identities, need 4"):
        design.build_lineup("e", PEOPLE, ATTRS, n_foils=4, target_present=True, rng=random.Random(0))


def test_relaxed_lineup_drops_attributes_from_the_end():
    lineup, used = design.build_lineup_relaxed(
        "e", PEOPLE, ATTRS, n_foils=3, target_present=True, rng=random.Random(0)
    )
    assert used == ["gender"] and "e" in lineup and len(lineup) == 4
    lineup, used = design.build_lineup_relaxed(
        "a", PEOPLE, ATTRS, n_foils=3, target_present=True, rng=random.Random(0)
    )
    assert used == ATTRS


def test_relaxed_lineup_fails_when_there_are_too_few_people():
    with pytest.raises(design.FoilShortageError, match="only 5 other identities"):
        design.build_lineup_relaxed("a", PEOPLE, ATTRS, n_foils=5, target_present=False, rng=random.Random(0))


def test_target_absent_share_is_respected():
    rng = random.Random(3)
    present = sum(design.draw_target_present(0.2, rng) for _ in range(10_000))
    assert 7800 < present < 8200
    assert all(design.draw_target_present(0.0, rng) for _ in range(100))
    assert not any(design.draw_target_present(1.0, rng) for _ in range(100))
    with pytest.raises(ValueError, match="target_absent_share must be in \\[0, 1\\], got 1.5"):
        design.draw_target_present(1.5, rng)


def test_session_plan_puts_practice_first_and_catch_trials_at_the_rate():
    plan = design.session_plan(n_practice=2, n_evaluated=20, attention_check_rate=0.1, rng=random.Random(4))
    assert plan[:2] == ["practice", "practice"]
    assert Counter(plan) == {"practice": 2, "item": 20, "catch": 2}
    assert plan[2] == "item"


def test_session_plan_rejects_bad_rates():
    with pytest.raises(ValueError, match="attention_check_rate must be in \\[0, 1\\], got -0.1"):
        design.session_plan(n_practice=1, n_evaluated=5, attention_check_rate=-0.1, rng=random.Random())
    with pytest.raises(ValueError, match="trial counts must be >= 0"):
        design.session_plan(n_practice=-1, n_evaluated=5, attention_check_rate=0.1, rng=random.Random())


# The demo campaign's pool: 4 women, 7 men, matched on gender only.
DEMO_POOL = {f"w{i}": {"gender": "female"} for i in range(4)} | {
    f"m{i}": {"gender": "male"} for i in range(7)
}


@pytest.mark.parametrize(("target_present", "n_men"), [(True, 1), (False, 2)])
def test_relaxed_lineup_fills_a_shortage_with_every_matched_identity_first(target_present, n_men):
    # 3 other women for 4 (present) or 5 (absent) foils: all 3 must be in every lineup and
    # only the remainder may be men; a random fill would often leave the target the only woman.
    for seed in range(200):
        lineup, used = design.build_lineup_relaxed(
            "w0", DEMO_POOL, ["gender"], n_foils=4, target_present=target_present, rng=random.Random(seed)
        )
        assert {"w1", "w2", "w3"} <= set(lineup) and len(lineup) == 5
        assert sum(key.startswith("m") for key in lineup) == n_men and used == []
