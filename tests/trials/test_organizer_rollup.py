"""The organizer page's rating roll-up per condition and its estimate of the raters still needed.

``trials.progress`` on hand-made items whose answers are worked out by hand, then the page
of the real 10-speaker GRID campaign (10 clips x clear/blurred x action + the 6 men's clips
x clear/blurred x identity = 32 items, 3 raters per video, so a target of 48 responses per
condition; the 4 women are too few for a women-only lineup block).
"""

import math
import re
from types import SimpleNamespace

import pytest
from django.contrib.auth.models import User
from django.test import Client

from trials import assignment, design, progress
from trials.models import Rater, RatingSession, SessionState


def _item(video, submission=None, *, target=10, completed=0, live=None, excluded=0):
    return SimpleNamespace(
        source_video_id=video,
        masked_video_id=None if submission is None else 100 + video,
        masked_video=None if submission is None else SimpleNamespace(submission_id=submission),
        target_count=target,
        n_completed=completed,
        n_live=completed if live is None else live,
        n_excluded=excluded,
    )


def test_raters_needed_is_bounded_by_sessions_and_by_the_busiest_video():
    # Two videos, each a clear and one masked item of target 10 with 4 usable responses.
    items = [_item(v, s, completed=4) for v in (1, 2) for s in (None, 7)]
    estimate = progress.raters_needed(items, per_session=5)
    # 4 items x 6 = 24 responses; ceil(24 / 5) = 5 sessions, but each video still needs
    # 6 + 6 = 12 responses and a rater sees a video once: 12 raters.
    assert (estimate.still_needed, estimate.by_sessions, estimate.by_video, estimate.raters) == (
        24,
        5,
        12,
        12,
    )
    # Many videos, long sessions: the session bound rules. 30 videos x 1 item x 10 needed.
    many = [_item(v) for v in range(30)]
    assert progress.raters_needed(many, per_session=8).raters == math.ceil(300 / 8) == 38


def test_a_block_shared_with_attention_checks_needs_sessions_in_proportion():
    # design.evaluated_share_of_a_block: min(k, blocks) * n_identity / k / blocks, k = slots.
    share = design.evaluated_share_of_a_block
    assert share(0, 3, 3) == 1.0  # no checks: every block serves an evaluated trial
    assert share(1, 1, 1) == 0.5  # GRID: one block, the check or the identity slot first
    assert share(2, 8, 10) == 0.8  # 10 slots, 10 blocks: 8 of them evaluated
    assert share(3, 1, 2) == 0.25  # 4 slots, 2 served, each evaluated with p 1/4
    assert share(1, 0, 0) == 0.0
    assert design.slot_counts(10, 0.1, 1) == (1, 1) and design.slot_counts(20, 0.1, 10) == (2, 8)
    # Six identity videos of one block, 3 responses each: 18 needed, 36 sessions at 1/2.
    items = [SimpleNamespace(**vars(_item(v, target=3)), task="identity") for v in range(6)]
    blocks = {v: ("men",) for v in range(6)}
    assert progress.raters_needed(items, per_session=10, blocks=blocks).by_block == 18
    estimate = progress.raters_needed(items, per_session=10, blocks=blocks, block_share=0.5)
    assert (estimate.by_sessions, estimate.by_video, estimate.by_block, estimate.raters) == (2, 3, 36, 36)


def test_open_claims_count_as_coming_and_reached_targets_need_nobody():
    items = [
        _item(1, completed=3, live=5),  # 2 claims being answered: 5 still needed
        _item(2, completed=12),  # over the target (a late answer): needs nothing, not -2
        _item(3, target=0),
    ]
    estimate = progress.raters_needed(items, per_session=4)
    assert (estimate.still_needed, estimate.by_sessions, estimate.by_video, estimate.raters) == (5, 2, 5, 5)
    assert progress.raters_needed([_item(1, completed=10)], per_session=4).raters == 0
    none = progress.raters_needed([_item(1)], per_session=0)  # sessions give no trial
    assert (none.by_sessions, none.raters) == (None, None)


def test_rollup_rows_per_condition_with_usable_capped_at_the_target():
    team_a, team_b = SimpleNamespace(pk=7, name="A"), SimpleNamespace(pk=8, name="B")
    items = [
        _item(1, completed=12, excluded=1),  # clear: usable capped at 10
        _item(2, completed=4, live=6),  # clear: 2 open claims
        _item(1, 7, completed=5, excluded=2),
    ]
    clear, a, b = progress.rollup(items, [team_a, team_b])
    assert (clear.label, clear.n_items, clear.usable, clear.target, clear.excluded, clear.claimed) == (
        "clear videos",
        2,
        14,
        20,
        1,
        2,
    )
    assert (clear.still_needed, clear.percent) == (4, 70)  # item 2: 10 - 6 live
    assert (a.submission, a.usable, a.target, a.excluded, a.still_needed, a.percent) == (
        team_a,
        5,
        10,
        2,
        5,
        50,
    )
    assert (b.n_items, b.usable, b.target, b.percent) == (0, 0, 0, 100)  # no items yet


def _organizer_client(campaign):
    staff = User.objects.create_user("org", password="pw-123456", is_staff=True)
    campaign.organizers.add(staff)
    client = Client()
    client.force_login(staff)
    return client


def _rollup_rows(page):
    table = page[
        page.index('<table id="rollup">') : page.index("</table>", page.index('<table id="rollup">'))
    ]
    return re.findall(r"(\d+) / (\d+) \((\d+)%\)", table)


@pytest.mark.django_db
def test_campaign_page_rolls_up_progress_above_the_collapsed_item_table(grid_campaign, settings):
    settings.TRIALS_PLAUSIBILITY_CHECKS = False  # answered directly, no media fetched
    client = _organizer_client(grid_campaign)
    per_session = assignment.evaluated_trials_per_session(grid_campaign)
    assert per_session == 10  # 20 per session, but 10 people (practice shows practice people only)
    page = client.get(f"/organizer/{grid_campaign.pk}/").content.decode()
    assert _rollup_rows(page) == [("0", "48", "0"), ("0", "48", "0")]  # clear, blurred
    # 96 responses / 10 per session = 10; each man's clip needs 4 items x 3 = 12 different
    # raters (the 4 women's clips get no identity items: trials.design.exposure_plan); the
    # 6 men are one lineup block, of which a session gets one identity trial, 12 x 3 = 36
    # responses, but only when its slot comes before its one attention check (rate 0.1 of
    # 10 trials), which else takes the block: 1/2 per session, 36 / 0.5 = 72 sessions.
    assert assignment.block_share(grid_campaign) == 0.5
    assert "About <strong>72 more raters</strong> needed" in page
    assert "96 responses not yet taken on, 10 evaluated trials per session" in page
    assert "one lineup block\n  needs about 72 sessions for its identity responses" in page
    # Order: roll-up, raters, then the per-item table folded away.
    assert page.index('id="rollup"') < page.index('id="raters"') < page.index('<details id="items-details">')
    assert page.index('<details id="items-details">') < page.index('<table id="items">')
    assert "Per-item progress (32 items)" in page

    # One answer and one open claim; then the answering rater is excluded.
    session = assignment.join(grid_campaign, participant_code="P-rollup")
    RatingSession.objects.filter(pk=session.pk).update(state=SessionState.RUNNING, plan=["item", "item"])
    trial = assignment.current_trial(session)
    assignment.record_response(trial, {"choice": assignment.valid_choices(trial)[0], "response_time_ms": 900})
    assignment.current_trial(session)  # the second item is claimed, not answered
    page = client.get(f"/organizer/{grid_campaign.pk}/").content.decode()
    rows = _rollup_rows(page)
    assert sorted(rows) == [("0", "48", "0"), ("1", "48", "2")]
    # The answer and the claim: 2 of the 96 taken on, at most one an identity response.
    n_identity = session.trials.filter(task="identity").count()
    assert n_identity <= 1
    assert "94 responses not yet taken on" in page
    assert f"About <strong>{72 - 2 * n_identity} more raters</strong>" in page
    assert Rater.objects.filter(pk=session.rater_id).update(excluded=True) == 1
    page = client.get(f"/organizer/{grid_campaign.pk}/").content.decode()
    assert _rollup_rows(page) == [("0", "48", "0"), ("0", "48", "0")]
    table = page[
        page.index('<table id="rollup">') : page.index("</table>", page.index('<table id="rollup">'))
    ]
    # excluded and claimed cells of the two rows: the excluded answer counts for nothing.
    assert sorted(
        re.findall(
            r'<td data-label="excluded">(\d+)</td><td data-label="claimed, unanswered">(\d+)</td>', table
        )
    ) == [("0", "0"), ("1", "0")]
    assert "96 responses not yet taken on" in page


@pytest.mark.django_db
def test_organizer_pages_have_the_navigation(grid_campaign):
    client = _organizer_client(grid_campaign)
    pk = grid_campaign.pk
    submission = grid_campaign.submissions.get()
    for url in (f"/organizer/{pk}/", f"/organizer/automated/submission/{submission.pk}/progress/"):
        page = client.get(url).content.decode()
        nav = page[page.index('<nav class="organizer-nav"') : page.index("</nav>")]
        for href in (
            "/organizer/",
            f"/organizer/{pk}/",
            f"/organizer/{pk}/leaderboard/",
            f"/api/campaigns/{pk}/summary/?format=csv",
            f"/organizer/fairness/campaign/{pk}/quality/",
            "/admin/",
        ):
            assert f'href="{href}"' in nav, (url, href)
        assert 'action="/admin/logout/"' in nav and "Log out" in nav
    page = client.get("/organizer/").content.decode()
    assert 'href="/organizer/fairness/"' in page and 'href="/api/campaigns/"' in page
    # Raters never get it (their pages are not under /organizer/, and they are not staff).
    rater_page = Client().get(f"/join/{grid_campaign.join_code}/").content.decode()
    assert "organizer-nav" not in rater_page and "/admin/logout/" not in rater_page
