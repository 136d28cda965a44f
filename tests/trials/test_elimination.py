"""Striking off people already seen in the session (issue 19): no gain over chance.

Rotation is per person, so whoever a session has shown in a video (the answer of an
earlier identity trial, an action trial, practice) is never the answer later in it. On
the lineups of one block that a session used to get several times, a rater who remembered
those people struck their faces off and chose among the rest: 65/290 (22 %, p = 0.007)
where chance is 1/6. Now a session gets at most one identity trial per lineup block and
none after a video of one of the block's people (:func:`trials.assignment.spent_block_videos`),
so no lineup shows anyone seen before in the session.

The strategist is played through the real views (join, consent, trial pages, JSON
answers) with perfect memory and recognition: it knows who every video showed and who
every face is (read from the database, the most a rater could know), strikes off every
face of a person shown earlier in the session and picks at random among the other
options. Its score is tested against chance 1/6 (one-sided binomial test).
"""

import json
import random

import pytest
from scipy.stats import binomtest

from trials import assignment
from trials.models import Trial
from trials.services import open_rating
from tests.crowd.simulation import build_grid_campaign

from .test_cheating import CHOICE, RESPOND, _start

CHANCE = 1 / 6


@pytest.fixture
def strategist_campaign(db, media_root, data_dir, grid_cache, settings):
    settings.TRIALS_PLAUSIBILITY_CHECKS = False  # the strategy, not the checks, is tested
    campaign = build_grid_campaign(
        data_dir, grid_cache, raters_per_video=40, attention_check_rate=0.0, name="strike-off"
    )
    open_rating(campaign, prepare_media=False)
    return campaign


def _play(campaign, code, rng) -> list[dict]:
    """One session of the strategist; a row per evaluated identity trial."""
    client = _start(campaign, code)
    shown: set[int] = set()  # people the session has shown in a video so far
    rows = []
    for _ in range(40):
        html = client.get("/session/").content.decode()
        match = RESPOND.search(html)
        if match is None:
            break
        trial = Trial.objects.get(token=match.group(1).split("/")[2])
        choices = CHOICE.findall(html)
        choice = choices[0]
        if trial.kind == "item" and trial.task == "identity":
            faces = {
                str(face.position): face.gallery_image.identity_id
                for face in trial.faces.select_related("gallery_image")
            }
            struck = {position for position, person in faces.items() if person in shown}
            options = sorted(set(choices) - struck)
            choice = rng.choice(options)
            rows.append(
                {
                    "struck": len(struck),
                    "hit": choice == trial.correct_choice,
                    "expected": (trial.correct_choice in options) / len(options),
                }
            )
        if trial.source_video_id is not None:
            shown.add(trial.source_video.identity_id)
        body = {"choice": choice, "response_time_ms": 2000}
        client.post(match.group(1), json.dumps(body), content_type="application/json")
    return rows


def _score(rows) -> tuple[int, int, float]:
    hits = sum(row["hit"] for row in rows)
    return hits, len(rows), binomtest(hits, len(rows), CHANCE, alternative="greater").pvalue


def test_striking_off_people_seen_earlier_in_the_session_gives_nothing(strategist_campaign):
    rng = random.Random(11)
    rows = [row for i in range(24) for row in _play(strategist_campaign, f"striker-{i}", rng)]
    hits, n, p = _score(rows)
    print(f"strike-off strategist, blocks spent per session: {hits}/{n} (chance 1/6), p = {p:.3g}")
    assert n >= 12  # the GRID campaign has one block (the 6 men): one identity trial a session
    # No lineup showed anyone the session had shown before: nothing to strike off ...
    assert sum(row["struck"] for row in rows) == 0
    # ... so the strategist is a uniform guesser over the 6 options.
    assert sum(row["expected"] for row in rows) == pytest.approx(n / 6)
    assert p >= 0.01, (hits, n, p)


def test_the_same_strategist_gains_when_a_session_gets_a_block_again(strategist_campaign, monkeypatch):
    """The design before: lineups of one block several times a session (the test can fail)."""
    monkeypatch.setattr(assignment, "spent_block_videos", lambda session: [])
    monkeypatch.setattr(assignment, "identity_positions", lambda session: None)  # identity trials anywhere
    rng = random.Random(11)
    rows = [row for i in range(8) for row in _play(strategist_campaign, f"old-striker-{i}", rng)]
    struck = [row for row in rows if row["struck"]]
    assert len(struck) >= 8
    # A face of a person shown earlier is never the answer: striking k faces off turns
    # chance 1/6 into 1/(6 - k) on that trial.
    assert all(row["expected"] == 1 / (6 - row["struck"]) for row in struck)
    hits, n, p = _score(rows)
    print(
        f"strike-off strategist, blocks repeated: {hits}/{n}, expected {sum(r['expected'] for r in rows):.1f}"
    )
