"""Sybil resistance and detection: caps per browser and network address, flags, and the
per-rater accuracy test (issue 19; threat model: ``docs/human/threat-model.md``).

For the report: :func:`flagged_rater_ids` gives the raters whose answers are suspect
(any reason); every human figure is reported with and without them.

What a Sybil ring is up against:

- **Browser.** The browser key is issued by the server in a signed cookie
  (:mod:`trials.browser`); a key the client makes up is replaced. At most
  ``TRIALS_MAX_SESSIONS_PER_BROWSER`` participant codes join one campaign from one
  browser; codes sharing a browser are flagged.
- **Network address.** The rater's address (behind ``TRIALS_TRUSTED_PROXIES`` proxies:
  the X-Forwarded-For entry that many hops from the right) is stored only as a keyed hash
  (HMAC-SHA-256 keyed by ``TRIALS_ADDRESS_HASH_KEY`` or the site's secret, and the
  campaign: hashes of two campaigns cannot be matched). An IPv6 address counts by its
  /64 (one machine gets a whole /64), a port is dropped, and every entry that is no
  address counts as one shared address. At most ``TRIALS_MAX_SESSIONS_PER_ADDRESS`` codes
  join from one address; codes sharing one are flagged. A home or site gets many /64s
  (a /56 or /48 delegated prefix), so IPv6 addresses are also counted per /48: at most
  ``TRIALS_MAX_SESSIONS_PER_NETWORK`` codes (default 4 times the address cap) join from
  one /48, and codes sharing a /48 are flagged (hostile pass 2: 8 codes from 8 /64s of
  one /56 all joined unflagged). The same cap counts an IPv4 /24 (hostile pass 3: 20
  codes from 20 addresses of one /24 joined unflagged); sharing a /24 flags nobody (a
  campus or carrier pool), but the codes of one /24 or /48 are tested together
  (:func:`network_tests`).
- **Crowd platform.** A join link carrying a platform ID (``PROLIFIC_PID``, ``workerId``,
  ``participantId``, names in any case) joins with one participant code only; the ID is
  compared after NFKC, trimming and case folding, and a link repeating a parameter with
  different values is refused.
- **Answers.** :func:`accuracy_tests`: each rater's accuracy against the accuracy of the
  *other* (unflagged) raters on the same items, an exact two-sided Poisson-binomial
  test, Holm-corrected over raters; outliers are flagged. The test pools every answered
  evaluated trial of the rater (identity and action, clear and masked) and its attention
  checks (against the crowd's pass rate): rotation per person leaves a session at most
  one identity trial per lineup block (one in all on GRID), so a test of masked identity
  trials alone never had the 5 trials it needs. A ring that carries identities from
  clear to masked videos, or a perfect recognizer, scores above the crowd wherever the
  crowd errs; one that answers wrongly on purpose, below. Its power is what the
  rater's trials carry: a perfect score is flagged only when the crowd's accuracies on
  those trials multiply to less than about ``alpha / (2 x raters tested)``; few trials
  on which the crowd is good (GRID: one identity trial and 9 action trials a session)
  do not get there (``tests/trials/test_rater_outliers.py`` gives the figures).

Every flag also excludes the rater from scoring (``Rater.excluded``: the report's figures
leave them out, its ``with_flagged`` figures count them; their items reopen for others);
the organizer may include a rater again (a household sharing an address, say), and a
flag never overrules that choice.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from dataclasses import dataclass

import numpy as np
from django.conf import settings
from django.db.models import Q

from .models import FlagKind, Rater, RaterFlag, RatingSession, Response, TrialKind

# --- network addresses ---------------------------------------------------------------


def client_address(request) -> str:
    """The rater's network address, seen through ``TRIALS_TRUSTED_PROXIES`` proxies.

    With N trusted proxies the chain is X-Forwarded-For's entries followed by the TCP peer
    (``REMOTE_ADDR``, the last proxy); the client is the entry N places from the right.
    Entries the client wrote itself are further left, so they are never read. A chain
    shorter than N+1 (a misconfigured proxy) gives its leftmost entry. A port
    (``203.0.113.7:443``, ``[2001:db8::1]:80``) and brackets are dropped, so ports of one
    address are one address.

    Returns
    -------
    str
        The address in canonical form (``ipaddress``); :data:`UNPARSABLE_ADDRESS` for an
        entry that is no address (all such joins share one bucket, so they are capped
        together); ``""`` if there is no address at all.
    """
    chain = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
    chain.append(request.META.get("REMOTE_ADDR", "") or "")
    proxies = settings.TRIALS_TRUSTED_PROXIES
    raw = chain[-(proxies + 1)] if len(chain) > proxies else chain[0]
    if not raw:
        return ""
    return _parse_address(raw)


#: What :func:`client_address` gives for an entry that is no address: one shared bucket.
UNPARSABLE_ADDRESS = "unparsable"


def _parse_address(raw: str) -> str:
    """``raw`` in canonical form, without a port or brackets; :data:`UNPARSABLE_ADDRESS`
    if it is no IPv4 or IPv6 address."""
    text = raw.strip()
    if text.startswith("["):  # [2001:db8::1] or [2001:db8::1]:80
        inside, closed, port = text[1:].partition("]")
        text = inside if closed and (not port or port.startswith(":")) else ""
    elif text.count(":") == 1:  # 203.0.113.7:443 (an IPv6 address has two colons or more)
        text = text.partition(":")[0]
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return UNPARSABLE_ADDRESS


def _keyed_hash(campaign_pk: int, network: str) -> str:
    key = (settings.TRIALS_ADDRESS_HASH_KEY or settings.SECRET_KEY).encode()
    return hmac.new(key, f"{campaign_pk}|{network}".encode(), hashlib.sha256).hexdigest()


def address_hash(campaign_pk: int, address: str) -> str:
    """Hex HMAC-SHA-256 of ``campaign_pk`` and :func:`network_of` ``address`` (what
    ``RatingSession.address_hash`` stores); ``""`` for no address.

    Keyed by ``TRIALS_ADDRESS_HASH_KEY`` (default: the site's ``SECRET_KEY``), so nobody
    without the key can test a guessed address against it (an unkeyed hash of the 2^32
    IPv4 addresses is reversed in minutes).
    """
    return _keyed_hash(campaign_pk, network_of(address)) if address else ""


#: The IPv6 prefix counted by ``TRIALS_MAX_SESSIONS_PER_NETWORK`` (RFC 6177: a site gets a
#: /48 to /56, so one household or site holds up to 65,536 /64s).
WIDE_IPV6_PREFIX = 48

#: The IPv4 prefix counted by ``TRIALS_MAX_SESSIONS_PER_NETWORK`` and the pooled network
#: test: one machine with a /24 of addresses (a server with extra IPs, a proxy pool) joined
#: 20 codes unflagged when IPv4 counted only per address (hostile pass 3).
WIDE_IPV4_PREFIX = 24

#: :func:`network_hash` of an IPv4 /24 starts with this (a /48's is 64 hex digits), so
#: that the shared-/48 flag leaves IPv4 networks out (:func:`is_ipv6_network`).
IPV4_NETWORK_MARK = "v4"


def network_of(address: str, *, ipv6_prefix: int = 64, ipv4_prefix: int = 32) -> str:
    """What counts as one network address: an IPv4 address, or an IPv6 address's /64.

    ``"2001:db8::1"`` and ``"2001:db8::2"`` -> ``"2001:db8::/64"``; an IPv4-mapped IPv6
    address counts as its IPv4 address. ``ipv6_prefix`` (0-128) gives another prefix
    length for IPv6, e.g. 48: ``"2001:db8:0:ff::1"`` -> ``"2001:db8::/48"``; ``ipv4_prefix``
    (0-32) one for IPv4, e.g. 24: ``"203.0.113.7"`` -> ``"203.0.113.0/24"``.
    """
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is None:
            return str(ipaddress.IPv6Network((ip, ipv6_prefix), strict=False))
        ip = ip.ipv4_mapped
    if ipv4_prefix == 32:
        return str(ip)
    return str(ipaddress.IPv4Network((ip, ipv4_prefix), strict=False))


def network_hash(campaign_pk: int, address: str) -> str:
    """Keyed hash (as :func:`address_hash`) of the network an ``address`` belongs to (what
    ``RatingSession.network_hash`` stores): the /48 of an IPv6 address (64 hex digits), the
    /24 of an IPv4 one (IPv4-mapped included; :data:`IPV4_NETWORK_MARK` and 62 hex
    digits); ``""`` for an unparsable entry or no address.

    ``network_hash(1, "2001:db8:0:1::1") == network_hash(1, "2001:db8:0:ff::9")`` (one /48)
    and ``network_hash(1, "203.0.113.7") == network_hash(1, "203.0.113.200")`` (one /24),
    unlike their :func:`address_hash`.
    """
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return ""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is None:
        return _keyed_hash(campaign_pk, network_of(address, ipv6_prefix=WIDE_IPV6_PREFIX))
    network = network_of(address, ipv4_prefix=WIDE_IPV4_PREFIX)
    return IPV4_NETWORK_MARK + _keyed_hash(campaign_pk, network)[: 64 - len(IPV4_NETWORK_MARK)]


def is_ipv6_network(network: str) -> bool:
    """Whether a :func:`network_hash` is an IPv6 /48's (shared ones are flagged at the join;
    an IPv4 /24 is only tested by answers, :func:`network_tests`)."""
    return bool(network) and not network.startswith(IPV4_NETWORK_MARK)


# --- caps at join --------------------------------------------------------------------


class JoinRefused(Exception):
    """Joining would exceed a cap; the message is for the person joining."""


PLATFORM_ID_TAKEN = (
    "Your crowd-platform ID has already joined this study with another participant code. "
    "Continue with the code you used first."
)


def check_join_caps(campaign, *, browser_hash: str, address: str, network: str = "") -> None:
    """Refuse a *new* participant from a browser or address that has its share of sessions.

    Parameters
    ----------
    campaign : evalsite.models.Campaign
    browser_hash : str
        SHA-256 hex of the joining browser's key (``""``: no browser, not counted).
    address : str
        :func:`address_hash` of the joining address (``""``: none, not counted).
    network : str
        :func:`network_hash` of the joining address (``""``: none, not counted).

    Raises
    ------
    JoinRefused
        When ``TRIALS_MAX_SESSIONS_PER_BROWSER`` sessions of the campaign already came
        from this browser, ``TRIALS_MAX_SESSIONS_PER_ADDRESS`` from this address, or
        ``TRIALS_MAX_SESSIONS_PER_NETWORK`` from this IPv6 /48 or IPv4 /24 (a cap of 0 is no cap).
    """
    sessions = RatingSession.objects.filter(campaign=campaign)
    browser_cap = settings.TRIALS_MAX_SESSIONS_PER_BROWSER
    if browser_hash and browser_cap and sessions.filter(browser_key_hash=browser_hash).count() >= browser_cap:
        raise JoinRefused(
            "This browser has already taken part in this study with another participant code. "
            "Each participant takes part once."
        )
    address_cap = settings.TRIALS_MAX_SESSIONS_PER_ADDRESS
    if address and address_cap and sessions.filter(address_hash=address).count() >= address_cap:
        raise JoinRefused(
            "Too many participants have joined this study from your network. "
            "If you share a network with other participants, contact the organizer."
        )
    network_cap = settings.TRIALS_MAX_SESSIONS_PER_NETWORK
    if network and network_cap and sessions.filter(network_hash=network).count() >= network_cap:
        raise JoinRefused(
            "Too many participants have joined this study from your network. "
            "If you share a network with other participants, contact the organizer."
        )


def _shared_checks() -> list[tuple[str, str, str, int]]:
    """``(RatingSession field, flag kind, what is shared, cap)`` of the shared-origin flags."""
    return [
        ("browser_key_hash", FlagKind.SHARED_BROWSER, "browser", settings.TRIALS_MAX_SESSIONS_PER_BROWSER),
        (
            "address_hash",
            FlagKind.SHARED_ADDRESS,
            "network address",
            settings.TRIALS_MAX_SESSIONS_PER_ADDRESS,
        ),
        (
            "network_hash",
            FlagKind.SHARED_NETWORK,
            "IPv6 /48 network",
            settings.TRIALS_MAX_SESSIONS_PER_NETWORK,
        ),
    ]


def _shared_reasons(raters, what: str) -> dict[int, str]:
    """``{rater: reason}`` for the raters (ids) sharing one browser, address or network."""
    raters = sorted(raters)
    if len(raters) < 2:
        return {}
    return {
        rater: f"joined from the same {what} as rater{'s' * (len(raters) > 2)} "
        + ", ".join(str(pk) for pk in raters if pk != rater)
        for rater in raters
    }


def flag_shared(session: RatingSession) -> None:
    """Flag every rater of ``session``'s campaign that shares its browser, address or IPv6 /48.

    Flagged raters are excluded from scoring (:func:`_flag`). Reasons name the other
    raters, e.g. ``"joined from the same browser as raters 12, 14"``. A cap of 0
    (``TRIALS_MAX_SESSIONS_PER_BROWSER`` or ``..._PER_ADDRESS``) turns that check off
    entirely: no cap, no flag (a lab whose raters all share one network address).
    """
    for field, kind, what, cap in _shared_checks():
        value = getattr(session, field)
        if not value or not cap or (field == "network_hash" and not is_ipv6_network(value)):
            continue
        raters = RatingSession.objects.filter(campaign_id=session.campaign_id, **{field: value}).values_list(
            "rater_id", flat=True
        )
        for rater, reason in _shared_reasons(raters, what).items():
            _flag(rater, kind, reason)


def _flag(rater_id: int, kind: str, reason: str) -> None:
    """Store (or update the reason of) a flag; a new flag excludes the rater from scoring.

    Only a new flag excludes: a rater the organizer included again stays included when
    the same flag's reason is updated (another code joined from the same address).
    """
    _, created = RaterFlag.objects.update_or_create(rater_id=rater_id, kind=kind, defaults={"reason": reason})
    if created:
        Rater.objects.filter(pk=rater_id).update(excluded=True)


# --- the per-rater accuracy test (no Django below, up to accuracy_tests) ---------------


def poisson_binomial_pvalue(probabilities, k: int) -> float:
    """Exact two-sided p-value of ``k`` successes among independent trials of the given
    success probabilities (Poisson-binomial distribution).

    Two-sided as twice the smaller tail, capped at 1: ``min(1, 2 min(P(X<=k), P(X>=k)))``.
    With equal probabilities it is the binomial test's doubled-tail p-value, e.g.
    ``poisson_binomial_pvalue([0.5] * 4, 4) == 2 * 0.5**4 == 0.125``.

    Parameters
    ----------
    probabilities : array-like of shape (n_trials,), floats in [0, 1]
    k : int
        Observed successes, 0 <= k <= n_trials.

    Raises
    ------
    ValueError
        If a probability is outside [0, 1] or ``k`` outside [0, n_trials].
    """
    p = np.asarray(probabilities, dtype=float).ravel()
    if np.any((p < 0) | (p > 1)) or np.any(np.isnan(p)):
        raise ValueError(f"probabilities must lie in [0, 1], got {p.tolist()}")
    if not 0 <= k <= p.size:
        raise ValueError(f"k must lie in [0, {p.size}] for {p.size} trials, got {k}")
    pmf = np.array([1.0])
    for pi in p:  # pmf of the number of successes, one trial at a time
        pmf = np.convolve(pmf, [1.0 - pi, pi])
    lower, upper = pmf[: k + 1].sum(), pmf[k:].sum()
    return float(min(1.0, 2.0 * min(lower, upper)))


def holm(pvalues) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error rate; Holm 1979).

    ``holm([0.01, 0.04, 0.03]) -> [0.03, 0.06, 0.06]``: sorted, the i-th smallest (from 0)
    is multiplied by ``m - i``, made non-decreasing, capped at 1.

    Parameters
    ----------
    pvalues : array-like of shape (m,)

    Returns
    -------
    ndarray of shape (m,), in the input order.
    """
    p = np.asarray(pvalues, dtype=float).ravel()
    order = np.argsort(p, kind="stable")
    scaled = p[order] * (p.size - np.arange(p.size))
    adjusted = np.minimum(1.0, np.maximum.accumulate(scaled))
    out = np.empty_like(p)
    out[order] = adjusted
    return out


@dataclass(frozen=True)
class RaterTest:
    """One rater's accuracy against the crowd's on the same items."""

    rater_id: int
    n_trials: int
    n_correct: int
    expected: float  # sum over the rater's trials of the others' (smoothed) accuracy on that item
    p_value: float
    p_adjusted: float  # Holm over the raters tested
    what: str = "masked identity accuracy"  # the trials tested, for the reason

    @property
    def reason(self) -> str:
        return (
            f"{self.what} {self.n_correct}/{self.n_trials}, "
            f"{self.expected:.1f} expected from the other raters on the same items "
            f"(exact test p = {self.p_value:.2g}, Holm-adjusted {self.p_adjusted:.2g})"
        )


def rater_tests(
    rows, *, baseline_raters=None, min_trials: int = 5, what: str = "masked identity accuracy"
) -> list[RaterTest]:
    """The per-rater test over answered trials (pure: rows in, tests out).

    For each trial of rater r on item i, the others' accuracy on i is
    ``(c + 1) / (n + 2)`` (Laplace's rule: never exactly 0 or 1) over the answers to i of
    the raters in ``baseline_raters`` other than r; items no baseline rater answered are
    left out. r's number correct is then Poisson-binomial under "r answers like the
    crowd" (:func:`poisson_binomial_pvalue`); p-values are Holm-adjusted (:func:`holm`)
    over the raters with at least ``min_trials`` such trials.

    Parameters
    ----------
    rows : iterable of (rater_id, item_id, correct)
    baseline_raters : set of int, optional
        Raters whose answers make the crowd's accuracy (default: every rater).
    min_trials : int
        Raters with fewer comparable trials are not tested.
    what : str
        What the rows are, for :attr:`RaterTest.reason`.

    Returns
    -------
    list of RaterTest, by rater id.
    """
    rows = [(int(r), int(i), bool(c)) for r, i, c in rows]
    baseline = {r for r, _, _ in rows} if baseline_raters is None else set(baseline_raters)
    totals: dict[int, list[int]] = {}
    for rater, item, correct in rows:
        if rater in baseline:
            total = totals.setdefault(item, [0, 0])
            total[0] += correct
            total[1] += 1
    per_rater: dict[int, list[tuple[float, bool]]] = {}
    for rater, item, correct in rows:
        c, n = totals.get(item, (0, 0))
        if rater in baseline:  # leave the rater's own answer out
            c, n = c - correct, n - 1
        if n > 0:
            per_rater.setdefault(rater, []).append(((c + 1) / (n + 2), correct))
    tested = sorted(r for r, trials in per_rater.items() if len(trials) >= min_trials)
    pvalues = [
        poisson_binomial_pvalue([p for p, _ in per_rater[r]], sum(c for _, c in per_rater[r])) for r in tested
    ]
    adjusted = holm(pvalues) if tested else []
    return [
        RaterTest(
            rater_id=r,
            n_trials=len(per_rater[r]),
            n_correct=sum(c for _, c in per_rater[r]),
            expected=float(sum(p for p, _ in per_rater[r])),
            p_value=pv,
            p_adjusted=float(adj),
            what=what,
        )
        for r, pv, adj in zip(tested, pvalues, adjusted)
    ]


# --- Django: the campaign's tests and flags ------------------------------------------


#: Flags whose raters do not make the crowd's accuracy in the per-rater test (:func:`accuracy_tests`).
SHARED_KINDS = (FlagKind.SHARED_BROWSER, FlagKind.SHARED_ADDRESS, FlagKind.SHARED_NETWORK)


#: The item key of every attention check in :func:`accuracy_tests` (item keys are > 0):
#: the crowd's accuracy on it is its pass rate of checks.
CHECKS_ITEM = -1


def accuracy_tests(campaign, *, suspects: set[int] | None = None) -> list[RaterTest]:
    """:func:`rater_tests` over every answered evaluated trial of the campaign and its
    attention checks.

    Each evaluated trial is compared with the other raters' accuracy on its item
    (identity or action, clear or masked); every attention check with the other raters'
    pass rate of checks (:data:`CHECKS_ITEM`). The crowd's accuracy comes from raters
    neither flagged (attention checks, plausibility, a shared browser, address or
    network) nor excluded; items of a replaced file are left out.

    Parameters
    ----------
    campaign : evalsite.models.Campaign
    suspects : set of int, optional
        Rater ids left out of the crowd's accuracy; default: as stored (flagged, excluded
        or with a flag of :data:`SHARED_KINDS`).
    """
    answers = Response.objects.filter(trial__session__campaign=campaign)
    items = answers.filter(trial__kind=TrialKind.ITEM, trial__item__superseded_at__isnull=True).values_list(
        "trial__session__rater_id", "trial__item_id", "correct"
    )
    checks = answers.filter(trial__kind=TrialKind.CATCH).values_list("trial__session__rater_id", "correct")
    rows = [*items, *((rater, CHECKS_ITEM, correct) for rater, correct in checks)]
    baseline = _baseline_raters(campaign, suspects)
    return rater_tests(
        rows, baseline_raters=baseline, what="accuracy on evaluated trials and attention checks"
    )


@dataclass(frozen=True)
class ClusterTest:
    """The pooled accuracy of the codes that joined from one network against the crowd's."""

    network: str  # the network_hash
    raters: tuple[int, ...]
    n_trials: int
    n_correct: int
    expected: float
    p_value: float
    p_adjusted: float  # Holm over the clusters tested

    @property
    def reason(self) -> str:
        kind = "IPv6 /48" if is_ipv6_network(self.network) else "IPv4 /24"
        return (
            f"one of {len(self.raters)} codes from one {kind} network (raters "
            f"{', '.join(str(r) for r in self.raters)}) whose pooled masked identity accuracy "
            f"{self.n_correct}/{self.n_trials} is far from the {self.expected:.1f} expected from the "
            f"raters outside the network on the same items (exact test p = {self.p_value:.2g}, "
            f"Holm-adjusted {self.p_adjusted:.2g})"
        )


def cluster_tests(rows, clusters, *, baseline_raters=None, min_trials: int = 5) -> list[ClusterTest]:
    """The per-rater test of :func:`rater_tests`, pooled over clusters of raters (pure).

    For each cluster (raters that joined from one network), every trial of a member on
    item i is compared with the accuracy on i of the baseline raters *outside the cluster*
    (Laplace-smoothed, ``(c + 1) / (n + 2)``: a ring's own answers never make its
    baseline), and the cluster's number right with the Poisson-binomial distribution
    (:func:`poisson_binomial_pvalue`, two-sided); p-values are Holm-adjusted over the
    clusters with at least ``min_trials`` comparable trials. K codes that each answer one
    masked identity trial right where the crowd gets 25 % are, pooled, as unlikely as one
    rater answering K such trials right.

    Parameters
    ----------
    rows : iterable of (rater_id, item_id, correct)
    clusters : mapping of network key -> iterable of rater ids (clusters of 2 or more)
    baseline_raters : set of int, optional
        Raters whose answers make the crowd's accuracy (default: every rater in ``rows``).
    min_trials : int

    Returns
    -------
    list of ClusterTest, by network key.
    """
    rows = [(int(r), int(i), bool(c)) for r, i, c in rows]
    baseline = {r for r, _, _ in rows} if baseline_raters is None else set(baseline_raters)
    clusters = {
        key: tuple(sorted(set(members))) for key, members in clusters.items() if len(set(members)) > 1
    }
    totals: dict[int, list[int]] = {}
    for rater, item, correct in rows:
        if rater in baseline:
            total = totals.setdefault(item, [0, 0])
            total[0] += correct
            total[1] += 1
    pooled: dict[str, list[tuple[float, bool]]] = {}
    for key, members in sorted(clusters.items()):
        inside: dict[int, list[int]] = {}
        for rater, item, correct in rows:
            if rater in members and rater in baseline:
                total = inside.setdefault(item, [0, 0])
                total[0] += correct
                total[1] += 1
        trials = []
        for rater, item, correct in rows:
            if rater in members:
                c, n = totals.get(item, (0, 0))
                c_in, n_in = inside.get(item, (0, 0))
                c, n = c - c_in, n - n_in
                if n > 0:
                    trials.append(((c + 1) / (n + 2), correct))
        if len(trials) >= min_trials:
            pooled[key] = trials
    tested = sorted(pooled)
    pvalues = [
        poisson_binomial_pvalue([p for p, _ in pooled[k]], sum(c for _, c in pooled[k])) for k in tested
    ]
    adjusted = holm(pvalues) if tested else []
    return [
        ClusterTest(
            network=key,
            raters=clusters[key],
            n_trials=len(pooled[key]),
            n_correct=sum(c for _, c in pooled[key]),
            expected=float(sum(p for p, _ in pooled[key])),
            p_value=pv,
            p_adjusted=float(adj),
        )
        for key, pv, adj in zip(tested, pvalues, adjusted)
    ]


def _baseline_raters(campaign, suspects: set[int] | None) -> set[int]:
    """Ids of the campaign's raters the crowd's baseline is taken from: all but ``suspects``
    (default: raters already flagged or excluded, or sharing a browser, address or network)."""
    raters = Rater.objects.filter(campaign=campaign)
    if suspects is None:
        suspects = set(
            raters.filter(
                Q(flagged=True) | Q(excluded=True) | Q(flags__kind__in=list(SHARED_KINDS))
            ).values_list("pk", flat=True)
        )
    return set(raters.values_list("pk", flat=True)) - suspects


def network_tests(campaign, *, suspects: set[int] | None = None) -> list[ClusterTest]:
    """:func:`cluster_tests` of the campaign's masked identity trials, the codes grouped by
    the network they joined from (``RatingSession.network_hash``: an IPv4 /24 or an IPv6
    /48; hostile pass 3: a ring of 10 codes on one /24, each answering its masked identity
    trial right, was neither capped nor flagged and moved the report's masked identity
    accuracy from 0.095 to 0.208).

    Masked identity trials are the carry-over's target (clear -> masked by picture) and
    where a ring moves the headline; the crowd's accuracy comes from raters not in
    ``suspects`` (as :func:`accuracy_tests`) outside the cluster. Runs whatever the caps
    (a lab that turned them off is still tested).
    """
    answers = Response.objects.filter(
        trial__session__campaign=campaign,
        trial__kind=TrialKind.ITEM,
        trial__task="identity",
        trial__item__masked_video__isnull=False,
        trial__item__superseded_at__isnull=True,
    ).values_list("trial__session__rater_id", "trial__item_id", "correct")
    clusters: dict[str, list[int]] = {}
    for rater, network in (
        RatingSession.objects.filter(campaign=campaign)
        .exclude(network_hash="")
        .values_list("rater_id", "network_hash")
    ):
        clusters.setdefault(network, []).append(rater)
    clusters = {key: members for key, members in clusters.items() if len(members) > 1}
    if not clusters:
        return []
    baseline = _baseline_raters(campaign, suspects)
    return cluster_tests(list(answers), clusters, baseline_raters=baseline, min_trials=NETWORK_MIN_TRIALS)


#: Masked identity trials a network's codes need between them to be tested (as the per-rater
#: test's 5: against a crowd at 25 %, 5 right of 5 is p = 0.002 two-sided, 4 of 4 only 0.008
#: before the Holm correction).
NETWORK_MIN_TRIALS = 5


@dataclass
class FlagState:
    """A campaign's flags: per rater ``flagged``, ``excluded`` and ``flag_reason``
    (:class:`~trials.models.Rater`), and the :class:`~trials.models.RaterFlag` reasons by
    ``(rater id, kind)``."""

    raters: dict[int, tuple[bool, bool, str]]
    flags: dict[tuple[int, str], str]

    @property
    def excluded(self) -> set[int]:
        """Raters left out of scoring (``Rater.excluded``)."""
        return {pk for pk, (_, excluded, _) in self.raters.items() if excluded}

    @property
    def flagged(self) -> set[int]:
        """Raters whose answers are suspect: ``Rater.flagged`` or any flag (:func:`flagged_rater_ids`)."""
        return {pk for pk, (flagged, _, _) in self.raters.items() if flagged} | {r for r, _ in self.flags}


def stored_flags(campaign) -> FlagState:
    """The campaign's flags as stored (two queries)."""
    raters = Rater.objects.filter(campaign=campaign).values_list("pk", "flagged", "excluded", "flag_reason")
    flags = RaterFlag.objects.filter(rater__campaign=campaign).values_list("rater_id", "kind", "reason")
    return FlagState(
        {pk: (f, e, reason) for pk, f, e, reason in raters}, {(r, k): why for r, k, why in flags}
    )


def current_flags(campaign) -> FlagState:
    """Every flag that follows from what is stored, as of now, computed without writing.

    Flags are first set when something happens (a join, an answer), and the per-rater
    test whenever it is asked for; a report must not depend on whether the organizer
    page happened to be opened since the last answers. This re-derives, for the whole
    campaign, from :func:`stored_flags`: attention-check failures
    (``TRIALS_MAX_ATTENTION_FAILURES`` or more failed checks flag and exclude, as at
    answer time; a rater the organizer included again stays included), codes sharing a
    browser, an address or an IPv6 /48 (as :func:`flag_shared`), then the per-rater
    accuracy test (:func:`accuracy_tests`, its crowd without the raters flagged so far:
    outliers flagged, the accuracy flag of raters no longer outlying removed, their
    exclusion kept: the organizer decides), and the same test pooled over the codes of
    one IPv4 /24 or IPv6 /48 (:func:`network_tests`: every code of an outlying network
    gets the accuracy flag, with the network's figures as its reason). A new flag excludes; a flag already stored
    does not exclude again (the organizer may have included the rater). Plausibility flags
    stand as judged at answer time (they depend on what had been fetched by then).

    The report's human figures read this (reads write nothing); :func:`refresh_flags`
    stores it.
    """
    from django.db.models import Count

    from .plausibility import max_attention_failures

    state = stored_flags(campaign)
    raters = {pk: list(row) for pk, row in state.raters.items()}
    flags = dict(state.flags)

    def flag(rater: int, kind: str, reason: str) -> None:
        if (rater, kind) not in flags:
            raters[rater][1] = True  # a new flag excludes (as _flag)
        flags[rater, kind] = reason

    failures = (
        Response.objects.filter(trial__session__campaign=campaign, trial__kind=TrialKind.CATCH, correct=False)
        .values("trial__session__rater_id")
        .annotate(n=Count("id"))
        .filter(n__gte=max_attention_failures())
    )
    for row in failures:
        rater = raters.get(row["trial__session__rater_id"])
        if rater is not None and not rater[0]:
            rater[:] = [True, True, f"failed {row['n']} attention checks"]
    sessions = list(
        RatingSession.objects.filter(campaign=campaign).values_list(
            "rater_id", *(field for field, *_ in _shared_checks())
        )
    )
    for position, (field, kind, what, cap) in enumerate(_shared_checks(), start=1):
        groups: dict[str, list[int]] = {}
        for row in sessions:
            if row[position] and cap and (field != "network_hash" or is_ipv6_network(row[position])):
                groups.setdefault(row[position], []).append(row[0])
        for members in groups.values():
            for rater, reason in _shared_reasons(members, what).items():
                flag(rater, kind, reason)
    suspects = {pk for pk, (f, e, _) in raters.items() if f or e} | {r for r, k in flags if k in SHARED_KINDS}
    alpha = settings.TRIALS_OUTLIER_ALPHA
    outliers = {
        t.rater_id: t.reason for t in accuracy_tests(campaign, suspects=suspects) if t.p_adjusted < alpha
    }
    for test in network_tests(campaign, suspects=suspects):
        if test.p_adjusted < alpha:
            for rater in test.raters:
                outliers[rater] = "; ".join(filter(None, (outliers.get(rater), test.reason)))
    for key in [key for key in flags if key[1] == FlagKind.ACCURACY_OUTLIER and key[0] not in outliers]:
        del flags[key]
    for rater, reason in outliers.items():
        flag(rater, FlagKind.ACCURACY_OUTLIER, reason)
    return FlagState({pk: tuple(row) for pk, row in raters.items()}, flags)


def refresh_flags(campaign) -> FlagState:
    """Store :func:`current_flags` (writing only what changed); returns it.

    Called where flags are acted on: the organizer page (where raters are included again)
    and the closing of rating. Reports only read :func:`current_flags`.
    """
    stored, state = stored_flags(campaign), current_flags(campaign)
    for pk, (flagged, excluded, reason) in state.raters.items():
        if stored.raters.get(pk) != (flagged, excluded, reason):
            Rater.objects.filter(pk=pk).update(flagged=flagged, excluded=excluded, flag_reason=reason)
    for (rater, kind), reason in state.flags.items():
        if stored.flags.get((rater, kind)) != reason:
            RaterFlag.objects.update_or_create(rater_id=rater, kind=kind, defaults={"reason": reason})
    for rater, kind in stored.flags.keys() - state.flags.keys():
        RaterFlag.objects.filter(rater_id=rater, kind=kind).delete()
    return state


def flagged_rater_ids(campaign, *, refresh: bool = True) -> set[int]:
    """Ids of the campaign's raters whose answers are suspect: for the report's figures
    "with flagged raters excluded" (every human figure is given with and without them).

    Suspect: flagged by an attention check or a plausibility check (``Rater.flagged``),
    or by a :class:`~trials.models.RaterFlag` (a browser or network address shared with
    other codes, masked accuracy far from the crowd's). Raters the organizer excluded
    by hand are left out of every figure anyway (``Rater.excluded``) and are not listed
    unless also flagged.

    Parameters
    ----------
    campaign : evalsite.models.Campaign
    refresh : bool, default=True
        As of now (:func:`current_flags`: attention checks, shared browsers and
        addresses, the per-rater accuracy test), so the set reflects every answer so
        far; nothing is written. False: as stored.

    Returns
    -------
    set of int
        ``Rater`` primary keys.
    """
    return (current_flags if refresh else stored_flags)(campaign).flagged
