"""Fixtures for the catalogue tests: a tiny real dataset and real masked-video variants.

All videos come from real GRID clips (360x288, 25 fps, 75 frames) in ``data_dir``;
modified versions are written with ``automated.video.VideoWriter``.
"""

import csv
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from automated.video import VideoWriter, iter_frames

GRID = "videos/grid_talking_heads"
# identity code -> (clip used as the video, clip whose middle frame is the gallery still)
TINY = {
    "ID01": ("bbaf2n.mpg", "bbaf2n.mpg"),
    "ID02": ("brbk7n.mpg", "brbk7n.mpg"),
    "ID03": ("id2_vcd_swwp2s.mpg", "pwij3p.mpg"),
}


#: The tiny dataset's campaign.json: a consent text, without which rating does not open.
TINY_CAMPAIGN_JSON = '{"consent_text": "You will watch short videos of people and answer questions."}'


def write_tiny_dataset(folder: Path, data_dir: Path) -> Path:
    """Write a 3-identity, 3-video dataset folder in the importer layout."""
    (folder / "videos").mkdir(parents=True)
    (folder / "campaign.json").write_text(TINY_CAMPAIGN_JSON)
    with (folder / "identities.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["identity", "gender_unofficial"])
        writer.writerows([["ID01", "male"], ["ID02", "female"], ["ID03", "male"]])
    with (folder / "videos.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["video", "identity", "action"])
        for code, (clip, still_clip) in TINY.items():
            writer.writerow([clip, code, "talking"])
            (folder / "videos" / clip).write_bytes((data_dir / GRID / clip).read_bytes())
            frame = next(f for i, f in iter_frames(data_dir / GRID / still_clip, start=37, end=38))
            (folder / "gallery" / code).mkdir(parents=True)
            Image.fromarray(frame).save(folder / "gallery" / code / "still.png")
    return folder


@pytest.fixture(scope="session")
def tiny_dataset(tmp_path_factory, data_dir) -> Path:
    """A valid dataset folder (read-only: copy it before modifying)."""
    return write_tiny_dataset(tmp_path_factory.mktemp("tiny") / "dataset", data_dir)


def _write(path: Path, frames, fps=25.0) -> Path:
    height, width = frames[0].shape[:2]
    with VideoWriter(path, fps, (width, height)) as writer:
        for frame in frames:
            writer.write(np.ascontiguousarray(frame))
    return path


@pytest.fixture(scope="session")
def masked_files(tmp_path_factory, data_dir) -> dict[str, Path]:
    """Masked-video variants of real clips, keyed by what is (wrong) about them."""
    out = tmp_path_factory.mktemp("masked")
    bbaf = [f for _, f in iter_frames(data_dir / GRID / "bbaf2n.mpg")]
    brbk = [f for _, f in iter_frames(data_dir / GRID / "brbk7n.mpg")]
    files = {
        "good_bbaf2n": _write(out / "good_bbaf2n.mp4", [255 - f for f in bbaf]),  # inverted = "masked"
        "good_brbk7n": _write(out / "good_brbk7n.mp4", brbk),
        "short": _write(out / "short.mp4", bbaf[:70]),
        "small": _write(out / "small.mp4", [f[::2, ::2] for f in bbaf]),
        "slow": _write(out / "slow.mp4", bbaf, fps=20.0),
    }
    good = files["good_bbaf2n"].read_bytes()
    files["truncated"] = out / "truncated.mp4"
    files["truncated"].write_bytes(good[: len(good) // 2])
    files["truncated_mpg"] = out / "truncated.mpg"
    files["truncated_mpg"].write_bytes((data_dir / GRID / "bbaf2n.mpg").read_bytes()[:200_000])
    files["text"] = out / "text.mp4"
    files["text"].write_text("this is a text file, not a video\n" * 20)
    return files


def make_zip(path: Path, members: dict[str, Path | str]) -> Path:
    """Zip ``{member name: file path or text}``."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, source in members.items():
            if isinstance(source, Path):
                archive.write(source, name)
            else:
                archive.writestr(name, source)
    return path


@pytest.fixture
def campaign(db, media_root, tiny_dataset):
    """The tiny dataset imported as campaign 'Tiny' (no web copies, for speed)."""
    from evalsite.importer import import_dataset

    return import_dataset(tiny_dataset, "Tiny", web_copies=False).campaign


@pytest.fixture
def submission(campaign):
    from evalsite.services import create_submission

    return create_submission(campaign, "Team A", "method-1")
