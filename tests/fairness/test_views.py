"""Organizer fairness pages: staff only, own campaigns only, PNG plots."""

import pytest
from django.urls import reverse


@pytest.fixture
def organizer_client(client, organizer):
    client.force_login(organizer)
    return client


def test_index_lists_own_campaigns(organizer_client, submission, other_staff, client):
    response = organizer_client.get(reverse("fairness:index"))
    assert response.status_code == 200
    assert "Fairness test" in response.content.decode()
    assert reverse("fairness:submission", args=[submission.pk]) in response.content.decode()


def test_submission_page_shows_measures_and_plots(organizer_client, submission, test_score):
    response = organizer_client.get(reverse("fairness:submission", args=[submission.pk]))
    html = response.content.decode()
    assert response.status_code == 200
    assert "1 - test_reid_rate" in html and "Mean-GC-SQFR" in html and "0.667" in html
    assert "score=1%20-%20test_reid_rate&amp;attribute=gender" in html
    assert "ID01" not in html  # group labels only
    # The measures' names spelled out once (issue 21: acronyms without words).
    assert html.count("<summary>What the measures' names mean</summary>") == 1
    meaning = "SQFR from the Gini coefficient of the groups&#x27; mean scores"
    assert f"<dt>Mean-GC-SQFR</dt><dd>{meaning}</dd>" in html


def test_submission_plot_is_a_png(organizer_client, submission, test_score):
    url = reverse("fairness:submission_plot", args=[submission.pk])
    response = organizer_client.get(url, {"score": "1 - test_reid_rate", "attribute": "gender"})
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    assert response.content.startswith(b"\x89PNG")
    assert organizer_client.get(url, {"score": "nope", "attribute": "gender"}).status_code == 404
    assert organizer_client.get(url, {"score": "1 - test_reid_rate", "attribute": "shoe"}).status_code == 404


def test_quality_page_without_scores(organizer_client, campaign, test_score):
    response = organizer_client.get(reverse("fairness:quality", args=[campaign.pk]))
    assert response.status_code == 200
    assert "No score of this kind is available yet" in response.content.decode()
    assert "<summary>What the measures' names mean</summary>" in response.content.decode()
    assert "<dt>CSQFR</dt>" in response.content.decode()


@pytest.mark.parametrize("name", ["index", "submission", "quality"])
def test_non_staff_are_redirected_to_login(client, rater, submission, name):
    args = {"index": [], "submission": [submission.pk], "quality": [submission.campaign.pk]}[name]
    url = reverse(f"fairness:{name}", args=args)
    assert client.get(url).status_code == 302
    client.force_login(rater)
    response = client.get(url)
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_staff_of_other_campaigns_get_404(client, other_staff, submission, test_score):
    client.force_login(other_staff)
    assert "Fairness test" not in client.get(reverse("fairness:index")).content.decode()
    assert client.get(reverse("fairness:submission", args=[submission.pk])).status_code == 404
    assert client.get(reverse("fairness:quality", args=[submission.campaign.pk])).status_code == 404
    plot = reverse("fairness:submission_plot", args=[submission.pk])
    assert client.get(plot, {"score": "1 - test_reid_rate", "attribute": "gender"}).status_code == 404
