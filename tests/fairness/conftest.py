"""A tiny campaign with identities of two groups, and a registered per-video test score."""

import math

import pandas as pd
import pytest
from django.contrib.auth import get_user_model

from evalsite import reports
from evalsite.models import Campaign, Identity, SourceVideo, Submission, Team

# video -> (identity, re-identification rate of the masked video); NaN = not evaluated
REID_RATES = {
    "v1": ("ID01", 0.5),
    "v2": ("ID01", 0.5),
    "v3": ("ID02", math.nan),
    "v4": ("ID03", 0.0),
    "v5": ("ID04", 0.0),
}
ATTRIBUTES = {
    "ID01": {"gender": "female", "age_band": "20-29"},
    "ID02": {"gender": "female", "age_band": "20-29"},
    "ID03": {"gender": "male", "age_band": "30-39"},
    "ID04": {"gender": "male", "age_band": "unknown"},
}
TEST_COLUMNS = [
    {
        "column": "test_reid_rate",
        "favourable": "lower",
        "mdg_step": 0.01,
        "description": "test: re-identification rate",
    }
]


@pytest.fixture
def campaign(db):
    campaign = Campaign.objects.create(
        name="Fairness test", slug="fairness-test", demographic_attributes=["gender", "age_band"]
    )
    identities = {
        code: Identity.objects.create(campaign=campaign, code=code, attributes=attributes)
        for code, attributes in ATTRIBUTES.items()
    }
    for video, (code, _) in REID_RATES.items():
        SourceVideo.objects.create(
            campaign=campaign,
            identity=identities[code],
            name=video,
            file=f"source/{video}.mpg",
            action="talking",
        )
    return campaign


@pytest.fixture
def submission(campaign):
    return Submission.objects.create(
        campaign=campaign, team=Team.objects.create(campaign=campaign, name="Team A"), name="blur"
    )


@pytest.fixture
def test_score(monkeypatch, settings):
    """Register the ``test_reid_rate`` column for this test only and evaluate only it."""

    def provider(submission):
        return pd.DataFrame({"test_reid_rate": {video: rate for video, (_, rate) in REID_RATES.items()}})

    monkeypatch.setattr(
        reports, "VIDEO_COLUMN_PROVIDERS", [*reports.VIDEO_COLUMN_PROVIDERS, ("fairness_test", provider)]
    )
    settings.FAIRNESS_SCORE_COLUMNS = TEST_COLUMNS
    settings.FAIRNESS_BOOTSTRAP_RESAMPLES = 100
    settings.FAIRNESS_COMPUTE_QUALITY_ON_DEMAND = False


@pytest.fixture
def organizer(campaign):
    user = get_user_model().objects.create_user("organizer", password="x", is_staff=True)
    campaign.organizers.add(user)
    return user


@pytest.fixture
def other_staff(db):
    return get_user_model().objects.create_user("other", password="x", is_staff=True)


@pytest.fixture
def rater(db):
    return get_user_model().objects.create_user("rater", password="x")
