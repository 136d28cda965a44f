"""Build the demo dataset folder (importer layout, see evalsite/importer.py) from real clips.

Sources, all under ``settings.DATA_DIR/videos`` (read their SOURCE.md for licences):

- ``grid_talking_heads/``: 11 GRID clips of 10 speakers (P01..P10; P03 has two clips),
  360x288, 25 fps, 75 frames.
- ``grid_identity_clips/``: more clips of GRID speaker s1 (= P01) and of the probable
  speaker s4 (= P07, partly 720x576 and in a second recording condition).
- ``cremad/``: CREMA-D actor 1001 saying one sentence with six acted emotions (FLV,
  480x360, 29.97 fps), with the official demographics.

What the demo holds (``DEMO_PEOPLE``): 11 identities with pseudonymous codes ID01..ID11
(never names or dataset speaker ids) and 24 clear videos, every clip in the data folder
that shows one of them except the gallery stills' clips of ID01, ID07 and ID11. Four
identities have several videos: ID01 (GRID s1) 6, ID03 (s2) 2, ID07 (probable s4) 4 and
ID11 (CREMA-D 1001) 5; the 7 other GRID speakers have one each. One video of each of the
four is the attacker's own material (``ATTACKER_TRAIN_CLIPS``, role ``attacker_train``:
masked by the teams and trained on by the attack, never shown to raters), so 20 videos
are evaluated and the cross-video attack tests 13 of them (ID01 5, ID03 1, ID07 3, ID11
4); the single-video identities are extra classes in its training only.

The gallery still of an identity is the middle frame of a clip raters are not shown
wherever one exists: another clip of ID01, ID07 and ID11, and for ID03 its attacker clip
(``gallery_sources.csv`` column ``source_clip_role``). The 7 single-clip GRID speakers'
still is the middle frame of their only clip (``from_evaluated_clip``: yes for ID02,
ID04, ID05, ID06, ID08, ID09, ID10), which makes their clear trials answerable by pixel
matching. The organizer page and the reports name them too: ``trials.stills`` finds such
stills in any campaign by perceptual hash (``trials.stills.stills_from_evaluated_clips``,
which compares a still with its identity's evaluated videos only). Stills are full PNG
frames.

Demographics, honestly labelled: ``gender`` is an official dataset label (CREMA-D only,
"unknown" for GRID); ``gender_unofficial`` is the by-eye guess from GRID's clips.csv
(for ID11 the official CREMA-D value); ``race``, ``ethnicity``, ``age_band`` are
official for ID11 and "unknown" elsewhere. Foils are matched on ``gender_unofficial``.

Actions: GRID speakers read a command sentence with no emotion label -> "talking";
CREMA-D clips are the same sentence acted with an emotion -> "talking (angry)" etc.
These are the only behaviours the clips show; the vocabulary says no more than that.
"""

from __future__ import annotations

import csv
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from automated.video import VideoInfo, iter_frames

DEMO_CAMPAIGN_NAME = "Demo: GRID and CREMA-D talking heads"
MARKER = ".deid-demo"

CREMAD_EMOTION_ACTIONS = {
    "anger": "talking (angry)",
    "disgust": "talking (disgusted)",
    "fear": "talking (fearful)",
    "happy": "talking (happy)",
    "neutral": "talking (neutral)",
    "sad": "talking (sad)",
}
ACTION_VOCABULARY = [
    "talking",
    *[CREMAD_EMOTION_ACTIONS[e] for e in ("anger", "disgust", "fear", "happy", "sad")],
]


@dataclass(frozen=True)
class DemoPerson:
    """One identity of the demo: where its gallery still and its clear videos come from.

    Paths are relative to ``<data_dir>/videos``.
    """

    code: str
    gallery_clip: str
    videos: tuple[str, ...]


GTH, GID, CREMAD = "grid_talking_heads", "grid_identity_clips", "cremad"
DEMO_PEOPLE: tuple[DemoPerson, ...] = (
    # GRID s1: every clip in the data folder but the gallery's (one recording session).
    DemoPerson(
        "ID01",
        f"{GID}/s1/bbal6n.mpg",
        (
            f"{GTH}/bbaf2n.mpg",
            *(f"{GID}/s1/{n}.mpg" for n in ("brif5s", "lgwazp", "pbwx2p", "sgio7s", "swau9s")),
        ),
    ),
    DemoPerson("ID02", f"{GTH}/brbk7n.mpg", (f"{GTH}/brbk7n.mpg",)),
    # GRID s2: both clips; the gallery's (pwij3p) is the attacker's own, never shown to raters.
    DemoPerson("ID03", f"{GTH}/pwij3p.mpg", (f"{GTH}/id2_vcd_swwp2s.mpg", f"{GTH}/pwij3p.mpg")),
    DemoPerson("ID04", f"{GTH}/lbax4n.mpg", (f"{GTH}/lbax4n.mpg",)),
    DemoPerson("ID05", f"{GTH}/lbbc2a.mpg", (f"{GTH}/lbbc2a.mpg",)),
    DemoPerson("ID06", f"{GTH}/lrwp9a.mpg", (f"{GTH}/lrwp9a.mpg",)),
    # Gallery from condition B (high quality); probes: B at 360x288, C at 720x576 (two);
    # sgbc3n (B, 720x576, like the gallery's clip) is the attacker's own.
    DemoPerson(
        "ID07",
        f"{GID}/s4_probable/bbilzs.mpg",
        (f"{GTH}/lwbsza.mpg", *(f"{GID}/s4_probable/{n}.mpg" for n in ("lgbf6s", "sgbc3n", "sgac2a"))),
    ),
    DemoPerson("ID08", f"{GTH}/sbia1a.mpg", (f"{GTH}/sbia1a.mpg",)),
    DemoPerson("ID09", f"{GTH}/sbwe5n.mpg", (f"{GTH}/sbwe5n.mpg",)),
    DemoPerson("ID10", f"{GTH}/swiz3n.mpg", (f"{GTH}/swiz3n.mpg",)),
    DemoPerson(
        "ID11",
        f"{CREMAD}/1001_DFA_NEU_XX.flv",
        tuple(f"{CREMAD}/1001_DFA_{e}_XX.flv" for e in ("ANG", "DIS", "FEA", "HAP", "SAD")),
    ),
)
IDENTITY_COLUMNS = ["identity", "gender_unofficial", "gender", "race", "ethnicity", "age_band"]
#: The attacker's own labelled material (``videos.csv`` role ``attacker_train``): one clip of
#: each identity with several (ID01, ID03, ID07, ID11), so that each of their evaluated clips
#: is tested cross-video with at least this one to train on. ID03's is the clip its gallery
#: still comes from (its only other clip); ID07's (sgbc3n) is of the gallery's recording
#: condition and matches its still by perceptual hash, so raters must not see it.
#: Teams mask them, the attack never tests them, raters never see them.
ATTACKER_TRAIN_CLIPS = frozenset(
    {
        f"{GID}/s1/lgwazp.mpg",
        f"{GTH}/pwij3p.mpg",
        f"{GID}/s4_probable/sgbc3n.mpg",
        f"{CREMAD}/1001_DFA_SAD_XX.flv",
    }
)


def _read_rows(path: Path) -> list[dict]:
    if not path.is_file():
        raise ValueError(f"expected the data file {path} (see the data folder's README.md)")
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _age_band(age: str) -> str:
    decade = int(age) // 10 * 10
    return f"{decade}-{decade + 9}"


def clip_labels(data_dir) -> dict[str, dict]:
    """Labels of every source clip, keyed by path relative to ``<data_dir>/videos``.

    Returns
    -------
    dict
        ``{clip: {"action", "gender_unofficial", "gender", "race", "ethnicity",
        "age_band"}}`` read from the three ``clips.csv`` files.

    Raises
    ------
    ValueError
        If a ``clips.csv`` is missing.
    """
    videos = Path(data_dir) / "videos"
    unknown = {"gender": "unknown", "race": "unknown", "ethnicity": "unknown", "age_band": "unknown"}
    labels: dict[str, dict] = {}
    for row in _read_rows(videos / GTH / "clips.csv"):
        labels[f"{GTH}/{row['file']}"] = {
            "action": "talking",
            "gender_unofficial": row["apparent_gender_unofficial"],
            **unknown,
        }
    for row in _read_rows(videos / GID / "clips.csv"):
        clip = str(Path(GID, row["file"]).as_posix())
        clip = clip.replace(f"{GID}/../{GTH}/", f"{GTH}/")
        labels.setdefault(
            clip, {"action": "talking", "gender_unofficial": row["apparent_sex_unofficial"], **unknown}
        )
    for row in _read_rows(videos / CREMAD / "clips.csv"):
        labels[f"{CREMAD}/{row['file']}"] = {
            "action": CREMAD_EMOTION_ACTIONS[row["emotion"]],
            "gender_unofficial": row["sex"].lower(),
            "gender": row["sex"].lower(),
            "race": row["race"],
            "ethnicity": row["ethnicity"],
            "age_band": _age_band(row["age"]),
        }
    return labels


def _role(clip: str) -> str:
    """``videos.csv`` role of a demo clip: ``attacker_train`` or ``evaluated``."""
    return "attacker_train" if clip in ATTACKER_TRAIN_CLIPS else "evaluated"


def _write_middle_frame(video_path: Path, out_path: Path) -> int:
    middle = VideoInfo.from_video_path(video_path).frame_count // 2
    for _, frame_rgb in iter_frames(video_path, start=middle, end=middle + 1):
        out_path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(frame_rgb).save(out_path)
        return middle
    raise ValueError(f"{video_path}: frame {middle} does not decode")


def _prepare_out_dir(out_dir: Path) -> None:
    if out_dir.exists() and any(out_dir.iterdir()):
        if not (out_dir / MARKER).exists():
            raise ValueError(
                f"{out_dir} is not empty and was not written by the demo builder; refusing to overwrite"
            )
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / MARKER).write_text("written by evalsite.demo_data.build_demo_dataset\n")


def build_demo_dataset(data_dir, out_dir) -> Path:
    """Write the demo dataset (importer layout) from the real clips in ``data_dir``.

    Parameters
    ----------
    data_dir : path-like
        The real data folder (``settings.DATA_DIR``), holding ``videos/...``.
    out_dir : path-like
        Output folder; created, or replaced if an earlier build wrote it.

    Returns
    -------
    pathlib.Path
        ``out_dir``, holding campaign.json, identities.csv, gallery/, videos.csv,
        videos/, gallery_sources.csv (where each still comes from) and SOURCES.md.

    Raises
    ------
    ValueError
        If a source clip or clips.csv is missing, or ``out_dir`` holds other files.
    """
    data_dir, out_dir = Path(data_dir), Path(out_dir)
    labels = clip_labels(data_dir)
    for person in DEMO_PEOPLE:
        for clip in (person.gallery_clip, *person.videos):
            if clip not in labels or not (data_dir / "videos" / clip).is_file():
                raise ValueError(f"demo source clip missing: {data_dir / 'videos' / clip}")
    _prepare_out_dir(out_dir)
    (out_dir / "videos").mkdir()

    identity_rows, video_rows, gallery_rows = [], [], []
    for person in DEMO_PEOPLE:
        person_labels = labels[person.videos[0]]
        identity_rows.append({"identity": person.code, **{c: person_labels[c] for c in IDENTITY_COLUMNS[1:]}})
        still = out_dir / "gallery" / person.code / "still.png"
        frame = _write_middle_frame(data_dir / "videos" / person.gallery_clip, still)
        # Raters are shown the evaluated clips only, never the attacker's own.
        evaluated = [clip for clip in person.videos if clip not in ATTACKER_TRAIN_CLIPS]
        gallery_rows.append(
            {
                "identity": person.code,
                "image": f"gallery/{person.code}/still.png",
                "source_clip": person.gallery_clip,
                "frame_index": frame,
                "from_a_different_clip": "no" if person.gallery_clip in evaluated else "yes",
                # The still is a frame of a clip raters are shown (evaluated subset).
                "from_evaluated_clip": "yes" if person.gallery_clip in evaluated else "no",
                # Whether the still's clip is also a video of the dataset, and in which role.
                "source_clip_role": (
                    _role(person.gallery_clip)
                    if person.gallery_clip in person.videos
                    else "not in videos.csv"
                ),
            }
        )
        for clip in person.videos:
            source = data_dir / "videos" / clip
            shutil.copyfile(source, out_dir / "videos" / source.name)
            video_rows.append(
                {
                    "video": source.name,
                    "identity": person.code,
                    "action": labels[clip]["action"],
                    "in_evaluated_subset": "true" if _role(clip) == "evaluated" else "false",
                    "role": _role(clip),
                    "source_clip": clip,
                }
            )

    _write_csv(out_dir / "identities.csv", IDENTITY_COLUMNS, identity_rows)
    _write_csv(
        out_dir / "videos.csv",
        ["video", "identity", "action", "in_evaluated_subset", "role", "source_clip"],
        video_rows,
    )
    _write_csv(out_dir / "gallery_sources.csv", list(gallery_rows[0]), gallery_rows)
    (out_dir / "campaign.json").write_text(
        json.dumps(
            {
                "name": DEMO_CAMPAIGN_NAME,
                "description": "Real GRID and CREMA-D talking-head clips; see SOURCES.md in the demo folder.",
                "action_vocabulary": ACTION_VOCABULARY,
                "raters_per_video": 10,
                "foils_per_trial": 4,
                "demographic_attributes": ["gender_unofficial"],
                "consent_text": DEMO_CONSENT_TEXT,
            },
            indent=2,
        )
        + "\n"
    )
    (out_dir / "SOURCES.md").write_text(_sources_text())
    return out_dir


DEMO_CONSENT_TEXT = (
    "This is a demonstration of a research study on video de-identification. You will "
    "watch short silent videos of people speaking, some of them altered to hide who the "
    "person is, and answer two kinds of questions: which of five faces (if any) shows the "
    "person in the video, and what the person is most obviously doing. It takes about 10 "
    "minutes. Your answers are stored under a pseudonymous participant code only and are "
    "used to score how well the alterations hide identity and keep behaviour. You may stop "
    "at any time; closing the page keeps your place. Please do not try to find out who the "
    "people are."
)


def _write_csv(path: Path, columns: list[str], rows: list[dict]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def _sources_text() -> str:
    return (
        "# Demo data sources\n\n"
        "- GRID audiovisual sentence corpus (Cooke, Barker, Cunningham, Shao 2006), CC BY 4.0 "
        "(believed; see the data folder's SOURCE.md files).\n"
        "- CREMA-D (Cao et al. 2014), actor 1001, ODbL 1.0 + DbCL 1.0.\n\n"
        "Identity codes are pseudonymous. `gender_unofficial` is a by-eye guess for GRID "
        "speakers, not a dataset label. Gallery stills: see gallery_sources.csv; where "
        "from_evaluated_clip is yes the still is a frame of the identity's only clip, which "
        "raters are shown (no other clip of that person is in the data), so its clear trials "
        "can be answered by matching pixels. source_clip_role says whether the still's clip is "
        "also a video here: attacker_train (the attacker's own material, masked and trained on "
        "by the attack, never shown to raters) or evaluated.\n"
    )
