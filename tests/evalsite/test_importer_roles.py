"""videos.csv ``role`` column against awkward input (issue 11: the attacker's own material)."""

import csv
import shutil

import pytest

from evalsite.importer import DatasetError, import_dataset
from evalsite.models import SourceVideo

pytestmark = pytest.mark.django_db


def _with_columns(folder, columns, values):
    """Add ``columns`` to videos.csv: ``values[i]`` on data row i, empty on the others."""
    path = folder / "videos.csv"
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    rows[0] += columns
    for i, row in enumerate(rows[1:]):
        row += values[i] if i < len(values) else [""] * len(columns)
    with path.open("w", newline="") as handle:
        csv.writer(handle).writerows(rows)
    return folder


@pytest.fixture
def folder(tmp_path, tiny_dataset):
    return shutil.copytree(tiny_dataset, tmp_path / "copy")


@pytest.mark.parametrize("role", ["Attacker_Train", " attacker_train ", "ATTACKER_TRAIN"])
def test_role_is_read_ignoring_case_and_spaces(media_root, folder, role):
    campaign = import_dataset(_with_columns(folder, ["role"], [[role]]), "Roles", web_copies=False).campaign
    video = SourceVideo.objects.get(campaign=campaign, name="bbaf2n")
    assert (video.role, video.in_evaluated_subset, video.practice) == ("attacker_train", False, False)


@pytest.mark.parametrize(
    "columns, values, problem",
    [
        (
            ["role", "practice"],
            [["evaluated", "true"]],
            "videos.csv line 2: role evaluated contradicts practice='true'",
        ),
        (
            ["role", "practice"],
            [["practice", "no"]],
            "videos.csv line 2: role practice contradicts practice='no'",
        ),
        (
            ["role", "in_evaluated_subset"],
            [["attacker_train", "TRUE"]],
            "videos.csv line 2: an attacker_train video cannot be in the evaluated subset",
        ),
        (
            ["role"],
            [["attacker_train"], ["practice"], ["attacker_train"]],
            "videos.csv lists no evaluated video: every video is practice or attacker_train material",
        ),
    ],
)
def test_contradictory_or_empty_roles_are_refused_and_nothing_is_stored(
    media_root, folder, columns, values, problem
):
    with pytest.raises(DatasetError) as caught:
        import_dataset(_with_columns(folder, columns, values), "Roles", web_copies=False)
    assert caught.value.problems == [problem]
    assert not SourceVideo.objects.exists()
