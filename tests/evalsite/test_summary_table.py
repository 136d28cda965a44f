"""The cross-submission summary table when only some submissions have a section (hand-made runs)."""

import csv
import io

import pytest
from django.utils import timezone

from automated.django_app.attack_models import AttackResult, AttackRun
from evalsite.models import Campaign, Submission, Team
from evalsite.reports import campaign_summary_table, summary_table_as_csv

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_submissions():
    """Team A's submission has a completed attack run (naive 0.25, parrot 0.75 on 4 identities);
    team B's has none."""
    campaign = Campaign.objects.create(name="Summary table", slug="summary-table")
    attacked = Submission.objects.create(
        campaign=campaign, team=Team.objects.create(campaign=campaign, name="A"), name="blur"
    )
    Submission.objects.create(
        campaign=campaign, team=Team.objects.create(campaign=campaign, name="B"), name="pixelate"
    )
    run = AttackRun.objects.create(
        submission=attacked,
        config={"attackers": ["naive", "parrot"], "recognizers": ["lbph"], "selection": ["all"], "stride": 5},
        status=AttackRun.Status.COMPLETED,
        finished_at=timezone.now(),
    )
    for attacker, accuracy in (("naive", 0.25), ("parrot", 0.75)):
        AttackResult.objects.create(
            run=run,
            recognizer="lbph",
            attacker=attacker,
            selection="all",
            subset_size=4,
            n_identities=4,
            n_train=12,
            n_test=4,
            accuracy=accuracy,
            chance_level=0.25,
            chance_normalised=(accuracy - 0.25) / 0.75,
        )
    return campaign, run


def test_a_section_missing_for_some_submissions_adds_no_bare_column(two_submissions):
    campaign, run = two_submissions
    table = campaign_summary_table(campaign).set_index("team")
    assert "attack" not in table.columns
    assert table.loc["A", "attack.worst_case_accuracy"] == 0.75
    assert table.loc["A", "attack.worst_case_attacker"] == "parrot"
    assert table.loc["B", "attack.worst_case_accuracy"] != table.loc["B", "attack.worst_case_accuracy"]  # NaN
    # Ids and counts stay whole numbers although team B has none.
    assert table.loc["A", "attack.run_id"] == run.pk and table["attack.run_id"].dtype == "Int64"


def test_summary_csv_writes_whole_numbers_and_empty_cells(two_submissions):
    campaign, run = two_submissions
    rows = {row["team"]: row for row in csv.DictReader(io.StringIO(summary_table_as_csv(campaign)))}
    assert rows["A"]["attack.run_id"] == str(run.pk)
    assert rows["A"]["attack.n_identities"] == "4"
    assert rows["B"]["attack.run_id"] == "" and rows["B"]["attack.worst_case_accuracy"] == ""
    assert rows["A"]["masked_videos"] == "0" and rows["A"]["source_videos"] == "0"


def test_team_and_run_names_starting_with_a_formula_character_are_text_in_the_summary_csv(two_submissions):
    """Team ``@B`` with run ``-pixelate`` (OWASP "CSV Injection"): text in the CSV, figures unchanged."""
    campaign, run = two_submissions
    Team.objects.filter(name="B").update(name="@B")
    Submission.objects.filter(name="pixelate").update(name="-pixelate")
    rows = {row["team"]: row for row in csv.DictReader(io.StringIO(summary_table_as_csv(campaign)))}
    assert set(rows) == {"A", "'@B"} and rows["'@B"]["method"] == "'-pixelate"
    assert rows["A"]["attack.worst_case_accuracy"] == "0.75" and rows["A"]["attack.run_id"] == str(run.pk)
