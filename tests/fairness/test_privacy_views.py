"""Privacy fairness in the fairness section and page (fairness/django_app/report.py): the
attack's per-identity success and the face evaluation's leak and detection rates across the
campaign's demographic groups, with intervals and small-group warnings; groups only.

Hand-made per-video face scores and a hand-made attack section (the conftest campaign:
ID01, ID02 female, ID03, ID04 male), so each group mean and interval is worked out here.
"""

import pandas as pd
import pytest
from django.urls import reverse

from evalsite import reports
from fairness.django_app import report

# video -> (detection failure rate, faces leaked of 2 tracks); v1, v2 ID01, v3 ID02, v4 ID03, v5 ID04
FACE = {"v1": (0.2, 1), "v2": (0.4, 1), "v3": (0.0, 2), "v4": (1.0, 0), "v5": (0.8, 0)}
DECLARED = {"ID01": 1.0, "ID02": 0.5, "ID03": 0.0, "ID04": 0.0}


@pytest.fixture
def privacy_scores(monkeypatch, settings):
    def face(submission):
        return pd.DataFrame(
            {
                "face_detection_failure_rate": {v: f for v, (f, _) in FACE.items()},
                "face_faces_leaked": {v: n for v, (_, n) in FACE.items()},
                "face_n_face_tracks": {v: 2 for v in FACE},
            }
        )

    def attack(submission):
        return {
            "declared_per_identity": DECLARED,
            "declared_recognizer": "lbph",
            "declared_attacker": "parrot",
        }

    monkeypatch.setattr(reports, "VIDEO_COLUMN_PROVIDERS", [("face_test", face)])
    monkeypatch.setattr(reports, "SUMMARY_PROVIDERS", [("attack", attack)])
    settings.FAIRNESS_BOOTSTRAP_RESAMPLES = 200
    settings.FAIRNESS_COMPUTE_QUALITY_ON_DEMAND = False


def test_privacy_fairness_by_group_with_intervals_and_warnings(submission, privacy_scores):
    section = report.privacy_fairness_section(submission)
    assert list(section) == ["reidentification", "faces_leaked", "face_detected"]
    reid = section["reidentification"]
    assert "lbph x parrot" in reid["description"] and reid["n_identities"] == 4
    gender = reid["attributes"]["gender"]
    female, male = gender["groups"]["female"], gender["groups"]["male"]
    # female {1.0, 0.5}: resampled means 1, 0.75 or 0.5; male {0, 0}: always 0.
    assert (female["n"], female["success"], female["ci_low"], female["ci_high"]) == (2, 0.75, 0.5, 1.0)
    assert (male["success"], male["ci_low"], male["ci_high"]) == (0.0, 0.0, 0.0)
    # Spread 0.75; of the 6 ways to split 4 identities 2 + 2, 2 give 0.75 (p near 1/3): no verdict.
    assert gender["spread"]["estimate"] == 0.75 and not gender["spread"]["differs"]
    assert 0.2 < gender["spread"]["p_value"] < 0.5
    assert any("too wide to mean much" in w for w in gender["warnings"])
    # age_band: ID04 unknown, 30-39 has one identity (left out): one group remains.
    assert "need two groups" in reid["attributes"]["age_band"]["error"]
    leaked = section["faces_leaked"]["attributes"]["gender"]["groups"]
    assert (leaked["female"]["success"], leaked["male"]["success"]) == (0.75, 0.0)  # ID01 2/4, ID02 2/2
    detected = section["face_detected"]["attributes"]["gender"]["groups"]
    # ID01 1 - 0.3, ID02 1 - 0: 0.85; ID03 0, ID04 0.2: 0.1
    assert detected["female"]["success"] == pytest.approx(0.85)
    assert detected["male"]["success"] == pytest.approx(0.1)


def test_fairness_page_shows_privacy_fairness_by_group_only(client, organizer, submission, privacy_scores):
    client.force_login(organizer)
    html = client.get(reverse("fairness:submission", args=[submission.pk])).content.decode()
    assert 'id="privacy-fairness"' in html and 'id="privacy-reidentification"' in html
    assert "too few for the interval to mean much" in html
    assert "no difference beyond what random groups of these sizes give" in html
    assert not any(code in html for code in DECLARED)  # group labels only
