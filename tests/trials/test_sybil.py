"""Sybil resistance (issue 19): many codes from one browser or address, made-up browser keys,
proxy-aware keyed address hashes, one code per crowd-platform ID, and the per-rater test."""

import hashlib
import random

import numpy as np
import pytest
from django.test import Client, RequestFactory

from evalsite import conf
from trials import browser, integrity
from trials.models import FlagKind, Rater, RaterFlag, RatingSession


def _join(campaign, code, client, **extra):
    return client.post(f"/join/{campaign.join_code}/", {"participant_code": code}, **extra)


def test_many_codes_from_one_browser_are_refused_beyond_the_cap_and_flagged(
    grid_campaign, settings, admin_user
):
    settings.TRIALS_MAX_SESSIONS_PER_BROWSER = 1
    client = Client()
    assert _join(grid_campaign, "ring-0", client).status_code == 302
    refused = _join(grid_campaign, "ring-1", client)
    assert refused.status_code == 403
    assert b"This browser has already taken part in this study" in refused.content
    assert not Rater.objects.filter(participant_code="ring-1").exists()  # nothing stored
    # The first code resumes from the same browser.
    assert _join(grid_campaign, "ring-0", client).status_code == 302
    # A campaign allowing 3 codes per browser (a lab machine): 3 join, all flagged and
    # excluded from scoring, with reasons naming the others; the 4th is refused.
    settings.TRIALS_MAX_SESSIONS_PER_BROWSER = 3
    assert [_join(grid_campaign, f"ring-{i}", client).status_code for i in (1, 2, 3)] == [302, 302, 403]
    raters = {r.participant_code: r for r in Rater.objects.filter(participant_code__startswith="ring-")}
    assert sorted(raters) == ["ring-0", "ring-1", "ring-2"]
    for code, rater in raters.items():
        flag = RaterFlag.objects.get(rater=rater, kind=FlagKind.SHARED_BROWSER)
        others = sorted(r.pk for c, r in raters.items() if c != code)
        assert flag.reason == f"joined from the same browser as raters {others[0]}, {others[1]}"
        assert rater.excluded
    assert integrity.flagged_rater_ids(grid_campaign) == {r.pk for r in raters.values()}
    # The organizer sees the flags and their reasons.
    staff = Client()
    staff.force_login(admin_user)
    page = staff.get(f"/organizer/{grid_campaign.pk}/").content.decode()
    assert '<span id="n-integrity-flagged">3 flagged in all</span>' in page
    assert page.count("shares a browser with other codes: joined from the same browser as raters") == 3


def test_made_up_browser_keys_are_ignored_and_36_codes_from_3_cookie_jars_are_all_flagged(
    grid_campaign, settings
):
    settings.TRIALS_MAX_SESSIONS_PER_BROWSER = 40  # a cap no jar reaches: detection alone
    forged = "A" * 64  # any 32-128 character key used to be accepted
    client = Client()
    client.cookies[browser.COOKIE_NAME] = forged
    reply = _join(grid_campaign, "forger", client)
    issued = reply.cookies[browser.COOKIE_NAME].value
    assert issued != forged
    factory = RequestFactory()
    factory.cookies[browser.COOKIE_NAME] = forged
    assert browser.issued_key(factory.get("/")) is None
    factory.cookies[browser.COOKIE_NAME] = issued
    assert browser.issued_key(factory.get("/")) == issued
    session = RatingSession.objects.get(rater__participant_code="forger")
    assert session.browser_key_hash == hashlib.sha256(issued.encode()).hexdigest()
    assert session.browser_key_hash != hashlib.sha256(forged.encode()).hexdigest()
    # A key with a forged signature is not the server's either.
    client.cookies[browser.COOKIE_NAME] = issued[:-3] + "xyz"
    assert _join(grid_campaign, "forger-2", client).cookies[browser.COOKIE_NAME].value != issued

    jars = [Client() for _ in range(3)]
    for i in range(36):
        assert _join(grid_campaign, f"jar{i % 3}-{i}", jars[i % 3]).status_code == 302
    for j in range(3):
        raters = Rater.objects.filter(participant_code__startswith=f"jar{j}-")
        assert raters.count() == 12
        flags = RaterFlag.objects.filter(rater__in=raters, kind=FlagKind.SHARED_BROWSER)
        assert flags.count() == 12 and all(f.reason.count(",") == 10 for f in flags)  # 11 others each
    jar_raters = set(Rater.objects.filter(participant_code__startswith="jar").values_list("pk", flat=True))
    assert jar_raters <= integrity.flagged_rater_ids(grid_campaign)


def test_codes_sharing_an_address_are_flagged_and_refused_beyond_the_cap(grid_campaign, settings):
    settings.TRIALS_MAX_SESSIONS_PER_ADDRESS = 2
    settings.TRIALS_TRUSTED_PROXIES = 1
    # Behind one proxy: the proxy is the TCP peer, the rater is the X-Forwarded-For entry
    # it appended; whatever the client wrote before that is ignored.
    home = {"REMOTE_ADDR": "10.0.0.1", "HTTP_X_FORWARDED_FOR": "1.1.1.1, 203.0.113.7"}
    other = {"REMOTE_ADDR": "10.0.0.1", "HTTP_X_FORWARDED_FOR": "203.0.113.7, 198.51.100.9"}
    assert _join(grid_campaign, "home-a", Client(), **home).status_code == 302
    assert _join(grid_campaign, "elsewhere", Client(), **other).status_code == 302
    assert _join(grid_campaign, "home-b", Client(), **home).status_code == 302
    refused = _join(grid_campaign, "home-c", Client(), **home)  # a third browser, same address
    assert refused.status_code == 403 and b"Too many participants have joined" in refused.content
    home_raters = Rater.objects.filter(participant_code__in=["home-a", "home-b"])
    flags = RaterFlag.objects.filter(kind=FlagKind.SHARED_ADDRESS)
    assert sorted(flags.values_list("rater_id", flat=True)) == sorted(r.pk for r in home_raters)
    assert home_raters.filter(excluded=True).count() == 2  # flagged and left out of the figures
    elsewhere = RatingSession.objects.get(rater__participant_code="elsewhere")
    assert not RaterFlag.objects.filter(rater_id=elsewhere.rater_id).exists()
    # Only keyed hashes are stored, never the address.
    for session in RatingSession.objects.all():
        assert len(session.address_hash) == 64 and "203.0.113" not in session.address_hash
    assert elsewhere.address_hash == integrity.address_hash(grid_campaign.pk, "198.51.100.9")


def test_one_participant_code_per_crowd_platform_id(grid_campaign):
    link = f"/join/{grid_campaign.join_code}/?PROLIFIC_PID=5f1a2b3c4d"
    assert Client().post(link, {"participant_code": "first"}).status_code == 302
    second = Client().post(link, {"participant_code": "second"})
    assert (
        second.status_code == 403
        and b"already joined this study with another participant code" in second.content
    )
    assert not Rater.objects.filter(participant_code="second").exists()
    assert Rater.objects.get(participant_code="first").platform_id == "PROLIFIC_PID:5f1a2b3c4d"


@pytest.mark.parametrize(
    ("meta", "proxies", "expected"),
    [
        ({"REMOTE_ADDR": "192.0.2.5", "HTTP_X_FORWARDED_FOR": "9.9.9.9"}, 0, "192.0.2.5"),
        ({"REMOTE_ADDR": "10.0.0.1", "HTTP_X_FORWARDED_FOR": "9.9.9.9, 192.0.2.5"}, 1, "192.0.2.5"),
        ({"REMOTE_ADDR": "10.0.0.2", "HTTP_X_FORWARDED_FOR": "9.9.9.9, 192.0.2.5, 10.0.0.1"}, 2, "192.0.2.5"),
        ({"REMOTE_ADDR": "10.0.0.1"}, 1, "10.0.0.1"),  # proxy sent no header: its own address
        ({"REMOTE_ADDR": "10.0.0.1", "HTTP_X_FORWARDED_FOR": "2001:DB8::0001"}, 1, "2001:db8::1"),
    ],
)
def test_client_address_reads_x_forwarded_for_only_through_trusted_proxies(meta, proxies, expected, settings):
    settings.TRIALS_TRUSTED_PROXIES = proxies
    assert integrity.client_address(RequestFactory().get("/", **meta)) == expected


def test_address_hash_is_keyed_per_campaign_and_counts_an_ipv6_64_as_one_address(settings):
    settings.TRIALS_ADDRESS_HASH_KEY = "k1"
    one = integrity.address_hash(1, "192.0.2.5")
    assert len(one) == 64 and one != hashlib.sha256(b"192.0.2.5").hexdigest()
    assert one != integrity.address_hash(2, "192.0.2.5")  # another campaign: unlinkable
    assert one == integrity.address_hash(1, "::ffff:192.0.2.5")  # IPv4-mapped is the IPv4 address
    same_64 = integrity.address_hash(1, "2001:db8:0:1::1"), integrity.address_hash(1, "2001:db8:0:1:ffff::9")
    assert same_64[0] == same_64[1] != integrity.address_hash(1, "2001:db8:0:2::1")
    settings.TRIALS_ADDRESS_HASH_KEY = "k2"
    assert integrity.address_hash(1, "192.0.2.5") != one  # keyed: no key, no dictionary attack
    assert integrity.address_hash(1, "") == ""


# --- the per-rater accuracy test (hand-computed values) --------------------------------


def test_poisson_binomial_pvalue_matches_hand_computed_values():
    assert integrity.poisson_binomial_pvalue([0.5] * 4, 4) == pytest.approx(2 * 0.5**4)
    assert integrity.poisson_binomial_pvalue([0.5] * 4, 2) == 1.0
    # P(X=0) = 0.8 * 0.5 = 0.4, P(X>=0) = 1: two-sided 0.8.
    assert integrity.poisson_binomial_pvalue([0.2, 0.5], 0) == pytest.approx(0.8)
    # P(X=2) = 0.1: two-sided 0.2.
    assert integrity.poisson_binomial_pvalue([0.2, 0.5], 2) == pytest.approx(0.2)
    with pytest.raises(ValueError, match=r"k must lie in \[0, 2\]"):
        integrity.poisson_binomial_pvalue([0.2, 0.5], 3)
    with pytest.raises(ValueError, match="probabilities must lie in"):
        integrity.poisson_binomial_pvalue([1.5], 1)


def test_holm_adjusts_step_down():
    assert integrity.holm([0.01, 0.04, 0.03]).tolist() == pytest.approx([0.03, 0.06, 0.06])
    assert integrity.holm([0.5, 0.9]).tolist() == pytest.approx([1.0, 1.0])


def test_rater_tests_flag_a_ring_member_far_above_the_crowd_and_no_honest_rater():
    rng = random.Random(3)
    rows = []
    for rater in range(40):  # honest: about 20 % right on masked videos
        for item in rng.sample(range(100), 20):
            rows.append((rater, item, rng.random() < 0.2))
    for rater in (100, 101):  # carry-over ring members: always right
        rows += [(rater, item, True) for item in range(20)]
    tests = {t.rater_id: t for t in integrity.rater_tests(rows, baseline_raters=set(range(40)))}
    assert len(tests) == 42
    outliers = {r for r, t in tests.items() if t.p_adjusted < 0.01}
    assert outliers == {100, 101}
    ring = tests[100]
    assert ring.n_trials == 20 and ring.n_correct == 20 and ring.expected < 6
    # Each trial's probability is the others' Laplace-smoothed accuracy on that item.
    assert ring.p_value == pytest.approx(
        2
        * np.prod(
            [
                (sum(c for r, i, c in rows if i == item and r < 40) + 1)
                / (sum(1 for r, i, _ in rows if i == item and r < 40) + 2)
                for item in range(20)
            ]
        )
    )
    assert "masked identity accuracy 20/20" in ring.reason


@pytest.mark.parametrize(
    ("forwarded", "expected"),
    [
        ("203.0.113.77:1000", "203.0.113.77"),
        ("[2001:db8::1]:80", "2001:db8::1"),
        ("[2001:DB8::1]", "2001:db8::1"),
        ("2001:db8::1", "2001:db8::1"),  # IPv6 without brackets: its colons are no port
        ("garbage", integrity.UNPARSABLE_ADDRESS),
        ("999.1.1.1:80", integrity.UNPARSABLE_ADDRESS),
        ("[2001:db8::1", integrity.UNPARSABLE_ADDRESS),
    ],
)
def test_client_address_drops_ports_and_brackets_and_pools_unparsable_entries(forwarded, expected, settings):
    settings.TRIALS_TRUSTED_PROXIES = 1
    meta = {"REMOTE_ADDR": "10.0.0.1", "HTTP_X_FORWARDED_FOR": forwarded}
    assert integrity.client_address(RequestFactory().get("/", **meta)) == expected


@pytest.mark.parametrize(
    "entries", [[f"203.0.113.77:{1000 + i}" for i in range(5)], ["garbage", "unknown", "x", "y", "z"]]
)
def test_ports_of_one_address_and_unparsable_entries_are_capped_as_one_address(
    entries, grid_campaign, settings
):
    settings.TRIALS_MAX_SESSIONS_PER_ADDRESS = 3
    settings.TRIALS_TRUSTED_PROXIES = 1
    codes = [f"port-{i}" for i in range(len(entries))]
    statuses = [
        _join(grid_campaign, code, Client(), REMOTE_ADDR="10.0.0.3", HTTP_X_FORWARDED_FOR=entry).status_code
        for code, entry in zip(codes, entries, strict=True)
    ]
    assert statuses == [302, 302, 302, 403, 403]
    joined = Rater.objects.filter(participant_code__in=codes)
    assert joined.count() == 3 and joined.filter(excluded=True).count() == 3  # all flagged


@pytest.mark.parametrize(
    "query",
    [
        "?PROLIFIC_PID=5F1A",  # case
        "?PROLIFIC_PID=%205f1a%20",  # surrounding spaces
        "?PROLIFIC_PID=%EF%BC%95f1a",  # full-width digit five (NFKC)
        "?prolific_pid=5f1a",  # the parameter's name in another case
        "?Prolific_Pid=5f1a&PROLIFIC_PID=5F1A",  # repeated with one value
    ],
)
def test_a_platform_id_in_another_spelling_is_the_same_id(query, grid_campaign):
    first = Client().post(
        f"/join/{grid_campaign.join_code}/?PROLIFIC_PID=5f1a", {"participant_code": "first"}
    )
    assert first.status_code == 302
    second = Client().post(f"/join/{grid_campaign.join_code}/{query}", {"participant_code": "second"})
    assert (
        second.status_code == 403
        and b"already joined this study with another participant code" in second.content
    )
    assert not Rater.objects.filter(participant_code="second").exists()
    assert Rater.objects.get(participant_code="first").platform_id == "PROLIFIC_PID:5f1a"


def test_a_platform_parameter_repeated_with_different_values_is_refused(grid_campaign):
    for query in ("?PROLIFIC_PID=5f1a&PROLIFIC_PID=zz", "?PROLIFIC_PID=5f1a&prolific_pid=zz"):
        reply = Client().post(f"/join/{grid_campaign.join_code}/{query}", {"participant_code": "twice"})
        assert reply.status_code == 400
        assert b"gives PROLIFIC_PID more than once, with different values" in reply.content
    assert not Rater.objects.filter(participant_code="twice").exists()
    with pytest.raises(browser.ConflictingPlatformParams, match="workerId more than once"):
        browser.platform_params({"workerId": "a", "WORKERID": "b"})
    assert browser.platform_params({"workerid": " A1 ", "STUDY_ID": "s"}) == {
        "STUDY_ID": "s",
        "workerId": "A1",
    }
    assert browser.platform_id({"workerId": "A1"}) == "workerId:a1"


@pytest.mark.parametrize(("network_cap", "joined"), [(None, 8), (4, 4)])
def test_codes_from_many_64s_of_one_56_are_capped_and_flagged_per_48(
    network_cap, joined, grid_campaign, settings
):
    """Hostile pass 2: 8 codes from 8 /64s of one /56 (one home with prefix delegation) all
    joined, unflagged, since the address cap counts per /64. The /48 is now counted too."""
    settings.TRIALS_MAX_SESSIONS_PER_ADDRESS = 3
    settings.TRIALS_MAX_SESSIONS_PER_BROWSER = 1
    if network_cap is not None:
        settings.TRIALS_MAX_SESSIONS_PER_NETWORK = network_cap
    else:  # the default: 4 times the /64 cap (3)
        default = conf.DECLARED["TRIALS_MAX_SESSIONS_PER_NETWORK"].default
        settings.TRIALS_MAX_SESSIONS_PER_NETWORK = default({"TRIALS_MAX_SESSIONS_PER_ADDRESS": 3}.get)
        assert settings.TRIALS_MAX_SESSIONS_PER_NETWORK == 12
    codes = [f"v6-{i}" for i in range(8)]
    statuses = [
        _join(grid_campaign, code, Client(), REMOTE_ADDR=f"2001:db8:0:{i:x}::1").status_code
        for i, code in enumerate(codes)
    ]
    assert statuses == [302] * joined + [403] * (8 - joined)
    raters = Rater.objects.filter(participant_code__in=codes)
    assert raters.count() == joined
    flags = RaterFlag.objects.filter(rater__in=raters, kind=FlagKind.SHARED_NETWORK)
    assert flags.count() == joined and raters.filter(excluded=True).count() == joined
    assert all("joined from the same IPv6 /48 network as raters" in f.reason for f in flags)
    assert not RaterFlag.objects.filter(rater__in=raters, kind=FlagKind.SHARED_ADDRESS).exists()  # 8 /64s
    assert set(raters.values_list("pk", flat=True)) <= integrity.flagged_rater_ids(grid_campaign)
    # Stored only as a keyed hash of the /48.
    wide = integrity.network_hash(grid_campaign.pk, "2001:db8::1")
    assert len(wide) == 64 and set(RatingSession.objects.values_list("network_hash", flat=True)) == {wide}


def test_an_ipv4_24_is_capped_like_a_48_and_separate_48s_are_not_counted_together(grid_campaign, settings):
    settings.TRIALS_MAX_SESSIONS_PER_ADDRESS = 3
    settings.TRIALS_MAX_SESSIONS_PER_NETWORK = 4
    addresses = [f"198.51.100.{i + 1}" for i in range(8)] + [f"2001:db8:{i:x}::1" for i in range(8)]
    codes = [f"apart-{i}" for i in range(len(addresses))]
    statuses = [
        _join(grid_campaign, code, Client(), REMOTE_ADDR=address).status_code
        for code, address in zip(codes, addresses, strict=True)
    ]
    # 8 IPv4 addresses of one /24: 4 join (the network cap counts a /24 as a /48; before,
    # all 8 joined: hostile pass 3, 20/20 from one /24); 8 /48s: nobody capped.
    assert statuses == [302] * 4 + [403] * 4 + [302] * 8
    assert not RaterFlag.objects.exists()  # sharing a /24 alone flags nobody (a campus NAT pool)
    assert not Rater.objects.filter(excluded=True).exists()
    hashes = list(RatingSession.objects.order_by("pk").values_list("network_hash", flat=True))
    assert len(set(hashes[:4])) == 1 and hashes[0].startswith(integrity.IPV4_NETWORK_MARK)
    assert len(set(hashes[4:])) == 8


def test_network_hash_counts_an_ipv6_48_and_an_ipv4_24(settings):
    settings.TRIALS_ADDRESS_HASH_KEY = "k1"
    one = integrity.network_hash(1, "2001:db8:0:1::1")
    assert one == integrity.network_hash(1, "2001:db8:0:ffff::9") == integrity.network_hash(1, "2001:db8::")
    assert one != integrity.network_hash(1, "2001:db8:1::1") and one != integrity.network_hash(
        2, "2001:db8::1"
    )
    assert integrity.network_of("2001:db8:0:ff::1", ipv6_prefix=48) == "2001:db8::/48"
    for address in ("", integrity.UNPARSABLE_ADDRESS):
        assert integrity.network_hash(1, address) == ""
    # IPv4 counts by its /24 (hostile pass 3), marked so that sharing it flags nobody.
    v4 = integrity.network_hash(1, "192.0.2.5")
    assert v4 == integrity.network_hash(1, "::ffff:192.0.2.77") and not integrity.is_ipv6_network(v4)
