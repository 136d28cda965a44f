"""Sybil rings spread over one IPv4 /24 (issue 19, hostile pass 3).

Before: an IPv4 address counted as its own network (/32) and ``network_hash`` was empty
for IPv4, so 20 codes from 20 addresses of one /24 all joined unflagged; a ring of 10 such
codes answering its masked identity trials right moved the report's masked identity
accuracy from 0.095 (honest raters only) to 0.208, a ring of 30 from 0.174 to 0.441.

Now codes are grouped by IPv4 /24 and IPv6 /48 (``RatingSession.network_hash``): the
per-network cap ``TRIALS_MAX_SESSIONS_PER_NETWORK`` counts a /24 as it counts a /48, and
the per-rater accuracy test is also run pooled over every such cluster
(:func:`trials.integrity.network_tests`), Holm-corrected over the clusters; a cluster far
from the crowd is flagged (and left out of the report), a campus NAT answering like the
crowd is not. Sharing a /24 alone flags nobody (sharing a /48 still does).
"""

import math
import random

import pytest
from django.test import Client

from evalsite.reports import submission_summary
from trials import assignment, integrity
from trials.models import FlagKind, Item, Rater, RaterFlag, RatingSession, Response, SessionState, TrialKind

from .test_sybil_ring import HONEST


def test_ipv4_addresses_are_grouped_by_24():
    one = integrity.network_hash(1, "203.0.113.7")
    assert (
        one == integrity.network_hash(1, "203.0.113.200") == integrity.network_hash(1, "::ffff:203.0.113.9")
    )
    assert one != integrity.network_hash(1, "203.0.114.7") and one != integrity.network_hash(2, "203.0.113.7")
    assert len(one) == 64 and one.startswith(integrity.IPV4_NETWORK_MARK)
    assert not integrity.is_ipv6_network(one) and integrity.is_ipv6_network(
        integrity.network_hash(1, "2001:db8::1")
    )
    assert integrity.network_of("203.0.113.7", ipv4_prefix=24) == "203.0.113.0/24"
    assert integrity.network_of("203.0.113.7") == "203.0.113.7"  # the address cap still counts one address
    assert integrity.network_hash(1, "not an address") == "" == integrity.network_hash(1, "")


def test_cluster_test_by_hand():
    """40 raters outside the clusters answer item 1 (masked identity), 10 right: the crowd's
    smoothed accuracy is 11/42. A ring of 10 codes, each right on item 1: pooled 10/10, p =
    2 (11/42)^10; a campus NAT of 10 codes, 3 right (2.6 expected): p = 1."""
    crowd = [(100 + r, 1, r < 10) for r in range(40)]
    ring = [(200 + r, 1, True) for r in range(10)]
    nat = [(300 + r, 1, r < 3) for r in range(10)]
    clusters = {"v4ring": range(200, 210), "v4nat": range(300, 310), "v4alone": [100]}
    everyone = {r for r, _, _ in crowd + ring + nat}
    tests = {
        t.network: t for t in integrity.cluster_tests(crowd + ring + nat, clusters, baseline_raters=everyone)
    }
    assert set(tests) == {"v4ring", "v4nat"}  # a network of one code is not a cluster
    # The ring's baseline: the 40 and the NAT's 10 (3 right), never the ring itself.
    p_ring = (14 / 52) ** 10 * 2
    assert tests["v4ring"].n_correct == 10 == tests["v4ring"].n_trials
    assert tests["v4ring"].p_value == pytest.approx(p_ring, rel=1e-9)
    assert tests["v4ring"].p_adjusted == pytest.approx(2 * p_ring, rel=1e-9)  # Holm over 2 clusters
    # The NAT's baseline: the 40 and the ring (20 right of 50): 21/52 each; 3 of 10 right.
    q = 21 / 52
    lower = sum(math.comb(10, k) * q**k * (1 - q) ** (10 - k) for k in range(4))
    assert tests["v4nat"].p_value == pytest.approx(min(1, 2 * lower), rel=1e-9)
    assert tests["v4nat"].p_adjusted > 0.01 and tests["v4ring"].p_adjusted < 1e-5
    assert "10/10" in tests["v4ring"].reason and "IPv4 /24" in tests["v4ring"].reason


@pytest.fixture
def production_caps(settings):
    settings.TRIALS_MAX_SESSIONS_PER_BROWSER = 1
    settings.TRIALS_MAX_SESSIONS_PER_ADDRESS = 3
    settings.TRIALS_MAX_SESSIONS_PER_NETWORK = 12
    settings.TRIALS_PLAUSIBILITY_CHECKS = False


def _join(campaign, code, address) -> int:
    return (
        Client(REMOTE_ADDR=address)
        .post(f"/join/{campaign.join_code}/", {"participant_code": code})
        .status_code
    )


def test_the_network_cap_counts_an_ipv4_24(grid_campaign, production_caps):
    """Same mechanism as the IPv6 /48: 12 codes from 20 addresses of one /24 join (before:
    20/20), none flagged for sharing the /24 alone."""
    statuses = [_join(grid_campaign, f"v4-{i}", f"203.0.113.{i + 1}") for i in range(20)]
    assert statuses.count(302) == 12 and set(statuses[12:]) == {403}  # refused, with the reason
    assert not RaterFlag.objects.exists()
    assert _join(grid_campaign, "elsewhere", "203.0.114.1") == 302


def _play(session, rng, *, ring: bool) -> None:
    while (trial := assignment.current_trial(session)) is not None:
        choices = assignment.valid_choices(trial)
        condition = "masked" if trial.item_id and trial.item.masked_video_id else "clear"
        if ring and trial.kind == TrialKind.ITEM and trial.task == "identity" and condition == "masked":
            right = True  # the carry-over
        else:
            right = rng.random() < (0.95 if trial.kind != TrialKind.ITEM else HONEST[(trial.task, condition)])
        choice = (
            trial.correct_choice if right else rng.choice([c for c in choices if c != trial.correct_choice])
        )
        assignment.record_response(trial, {"choice": choice, "response_time_ms": 3000})


def test_a_ring_on_one_24_is_flagged_and_a_campus_nat_is_not(grid_campaign, production_caps):
    """10 ring codes on 203.0.113.0/24 answer like the crowd except their masked identity
    trial (always right); 10 honest codes share 198.18.7.0/24 (a campus behind a pool of
    addresses); 30 honest codes come from 30 other /24s. Every session gets a masked
    identity trial (the campaign's clear identity items are full and it plans no attention
    check, which would take the one lineup block of GRID in half the sessions)."""
    grid_campaign.attention_check_rate = 0
    grid_campaign.save(update_fields=["attention_check_rate"])
    Item.objects.update(target_count=60)
    Item.objects.filter(task="identity", masked_video__isnull=True).update(target_count=0)
    rng = random.Random(24)
    arrivals = (
        [("ring", i) for i in range(10)]
        + [("nat", i) for i in range(10)]
        + [("honest", i) for i in range(30)]
    )
    rng.shuffle(arrivals)
    for n, (kind, i) in enumerate(arrivals):
        address = {"ring": f"203.0.113.{i + 1}", "nat": f"198.18.7.{i + 1}", "honest": f"198.51.{i}.9"}[kind]
        code = f"{kind}-{i}"
        assert _join(grid_campaign, code, address) == 302
        session = RatingSession.objects.get(rater__participant_code=code)
        plan, _ = assignment.layout(grid_campaign, 5000 + n)  # pinned: the same on every run
        RatingSession.objects.filter(pk=session.pk).update(
            seed=5000 + n, plan=plan, state=SessionState.RUNNING
        )
        session.refresh_from_db()
        _play(session, rng, ring=kind == "ring")

    def raters(prefix):
        return set(Rater.objects.filter(participant_code__startswith=prefix).values_list("pk", flat=True))

    ring, nat, honest = raters("ring-"), raters("nat-"), raters("honest-")
    masked = Response.objects.filter(
        trial__kind=TrialKind.ITEM, trial__task="identity", trial__item__masked_video__isnull=False
    )
    per_group = {
        name: (
            masked.filter(trial__session__rater__in=group, correct=True).count(),
            masked.filter(trial__session__rater__in=group).count(),
        )
        for name, group in (("ring", ring), ("nat", nat), ("honest", honest))
    }
    state = integrity.current_flags(grid_campaign)
    tests = {t.raters: t for t in integrity.network_tests(grid_campaign)}
    human = submission_summary(grid_campaign.submissions.get())["human"]
    clean_k, clean_n = (
        per_group["nat"][0] + per_group["honest"][0],
        per_group["nat"][1] + per_group["honest"][1],
    )
    print(
        f"masked identity trials right: {per_group}; cluster tests "
        + "; ".join(
            f"{len(r)} codes {t.n_correct}/{t.n_trials} exp {t.expected:.1f} Holm p {t.p_adjusted:.2g}"
            for r, t in tests.items()
        )
        + f"; report masked identity accuracy {human['id_accuracy_masked']:.3f} (n={human['id_n_masked']}), "
        f"with flagged {human['with_flagged']['id_accuracy_masked']:.3f}, honest only {clean_k / clean_n:.3f}"
    )
    assert per_group["ring"] == (10, 10) and per_group["nat"][1] == 10 and per_group["honest"][1] == 30
    assert set(tests) == {tuple(sorted(ring)), tuple(sorted(nat))}
    assert tests[tuple(sorted(ring))].p_adjusted < 0.01 < tests[tuple(sorted(nat))].p_adjusted
    # The ring is flagged and excluded; no honest code is, the campus NAT included.
    assert ring <= state.excluded and ring <= state.flagged
    assert not (state.flagged | state.excluded) & (nat | honest)
    reasons = {state.flags[rater, FlagKind.ACCURACY_OUTLIER] for rater in ring}
    assert all("IPv4 /24" in reason and "10/10" in reason for reason in reasons)
    # The report's figures leave the ring out (to the response); with_flagged counts it.
    assert human["id_n_masked"] == clean_n
    assert human["id_accuracy_masked"] == pytest.approx(clean_k / clean_n)
    assert human["with_flagged"]["id_accuracy_masked"] == pytest.approx((clean_k + 10) / (clean_n + 10))
    # Stored for the organizer page, with the reason.
    integrity.refresh_flags(grid_campaign)
    stored = RaterFlag.objects.filter(kind=FlagKind.ACCURACY_OUTLIER)
    assert set(stored.values_list("rater_id", flat=True)) == ring
    assert Rater.objects.filter(pk__in=ring, excluded=True).count() == 10
