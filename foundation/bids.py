"""The BIDS behavioural dataset (1.9) that rating sessions and the simulator write::

    dataset_description.json
    participants.tsv, participants.json
    README
    sub-<label>/beh/sub-<label>_task-<task>_beh.tsv   one row per presented pair
    sub-<label>/beh/sub-<label>_task-<task>_beh.json  the sidecar describing every column

Every BIDS file of the toolkit is written here: plainly in a dataset written aside
(:mod:`.outputs` flushes the folder before it takes its place), atomically in place
(``in_place``) in ``run``'s live dataset, so a crash leaves the old content or the new.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from .atomic import atomic_write
from .checks import check_participant
from .scale import PAPER_SCALE, Scale

__all__ = [
    "BEH_COLUMNS",
    "BIDS_VERSION",
    "beh_path",
    "check_label",
    "dataset_description",
    "scale_sidecar",
    "write_beh",
    "write_dataset_description",
    "write_json",
    "write_participants",
    "write_text",
    "write_tsv",
]

BIDS_VERSION = "1.9.0"
TASK = "sbirrating"

#: Sidecar description of every column a ``_beh.tsv`` file may hold, in file order.
BEH_COLUMNS: dict[str, dict] = {
    "participant": {"Description": "Participant label (the sub- label without the prefix)."},
    "trial": {"Description": "Presentation order within the session, from 1."},
    "block": {
        "Description": "Imported PsychoPy Builder data: the iteration of the loop around the "
        "trials loop (its thisN plus 1) in which the pair was shown."
    },
    "phase": {
        "Description": "Part of the session the trial belongs to.",
        "Levels": {
            "practice": "practice trial, not analysed",
            "anchor_demo": "anchor pair shown with its prescribed rating before the experiment",
            "main": "pair of the main block, presented in random order",
            "anchor_repeat": "anchor pair rated again inside the later part of the main block",
        },
    },
    "sketch_id": {"Description": "Identifier of the sketch (the query)."},
    "image_id": {"Description": "Identifier of the image shown with the sketch."},
    "sketch_file": {
        "Description": "The sketch's image file, as a path inside the stimulus set (its "
        "manifest.csv and SHA256SUMS); the set is identified by StimulusSetDigest."
    },
    "image_file": {
        "Description": "The image's file, as a path inside the stimulus set (its manifest.csv "
        "and SHA256SUMS); the set is identified by StimulusSetDigest."
    },
    "rating": {
        "Description": "Final rating of the pair given in the response window; n/a when "
        "no rating key was pressed.",
        "Levels": PAPER_SCALE.levels(),
    },
    "rt": {
        "Description": "Time from stimulus onset to the key press of the final rating.",
        "Units": "s",
    },
    "anchor_rating": {"Description": "Prescribed rating of an anchor pair; n/a for other pairs."},
    "onset_planned": {
        "Description": "When the stimulus was due, from the start of the session (the "
        "session's key press that ended the first instructions): the previous trial's planned "
        "onset plus its stimulus and blank durations plus paused_before. Planned onsets do not "
        "move when a flip is late.",
        "Units": "s",
    },
    "onset": {
        "Description": "Actual stimulus onset (the time of the flip that showed the pair), from "
        "the start of the session.",
        "Units": "s",
    },
    "onset_monotonic": {
        "Description": "Actual stimulus-onset flip time on the system monotonic clock (the "
        "clock of Python's time.monotonic()).",
        "Units": "s",
    },
    "stim_duration": {
        "Description": "Measured duration of the stimulus, from its onset flip to the flip of "
        "the black screen.",
        "Units": "s",
    },
    "blank_duration": {
        "Description": "Measured duration of the black screen, until the flip of the next "
        "screen (which closes the response window).",
        "Units": "s",
    },
    "dropped_frames": {
        "Description": "Frames lost in the trial's flips: with vertical sync, refreshes missed "
        "between consecutive flips; timed by the clock (TimingMode clock), whole 60 Hz frame "
        "periods a flip came after its deadline."
    },
    "n_presses": {"Description": "Number of rating key presses in the response window."},
    "presses": {
        "Description": "Every rating key press in the response window, in the order they were "
        "pressed, as rating@seconds from stimulus onset, separated by spaces (the top-row and "
        "keypad keys of one rating are the same rating)."
    },
    "paused_before": {
        "Description": "How far the session's timeline moved before this trial: the time spent "
        "in a pause or scheduled break, in the question whether to end the session (also when "
        "answered no), on instruction screens and drawing them, and the black screen after "
        "them; 0 when none.",
        "Units": "s",
    },
    "latent_rating": {
        "Description": "Simulated data only: the generative model's noise-free rating of the "
        "pair (1 best .. 7 worst) before rater bias and noise."
    },
}


def scale_sidecar(scale: Scale) -> dict:
    """What a sidecar records of the scale: the ``rating`` column's levels and ``RatingScale``,
    which :meth:`~sbir_study.foundation.scale.Scale.from_sidecar` reads back.
    """
    return {
        "rating": {**BEH_COLUMNS["rating"], "Levels": scale.levels()},
        "RatingScale": scale.sidecar(),
    }


def check_label(label: str, what: str = "participant") -> str:
    """``label`` if it is a BIDS label (:func:`~sbir_study.foundation.checks.check_participant`)."""
    return check_participant(label, what)


def beh_path(root: str | Path, label: str, task: str = TASK) -> Path:
    """Path of a participant's ``_beh.tsv`` file under the dataset ``root``."""
    return Path(root) / f"sub-{label}" / "beh" / f"sub-{label}_task-{task}_beh.tsv"


def write_text(path: str | Path, text: str, *, in_place: bool = False) -> None:
    """Write one file of a dataset, its folder made if missing; ``in_place``: atomically."""
    path = Path(path)
    if in_place:
        atomic_write(path, text)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", newline="\n")


def write_json(path: str | Path, content: object, *, in_place: bool = False) -> None:
    """Write a JSON file of a dataset (indented by 2, as BIDS examples are)."""
    write_text(path, json.dumps(content, indent=2) + "\n", in_place=in_place)


def write_tsv(path: str | Path, table: pd.DataFrame, *, in_place: bool = False) -> None:
    """Write a table of a dataset as BIDS TSV: tab-separated, ``n/a`` where missing."""
    text = table.to_csv(sep="\t", index=False, na_rep="n/a", lineterminator="\n")
    write_text(path, text, in_place=in_place)


def dataset_description(
    name: str, generated_by: Mapping[str, str], authors: Sequence[str] = ()
) -> dict[str, object]:
    """``dataset_description.json``'s content, ``generated_by`` its one ``GeneratedBy`` entry
    (``Authors`` left out when empty).

    >>> dataset_description("Ratings", {"Name": "sbir-study"}, ["A. B."])["Authors"]
    ['A. B.']
    """
    description: dict[str, object] = {
        "Name": name,
        "BIDSVersion": BIDS_VERSION,
        "DatasetType": "raw",
    }
    if authors:
        description["Authors"] = list(authors)
    description["GeneratedBy"] = [dict(generated_by)]
    return description


def write_dataset_description(
    root: str | Path,
    name: str,
    generated_by: Mapping[str, str],
    readme: str,
    *,
    authors: Sequence[str] = (),
) -> None:
    """Write ``dataset_description.json`` and ``README`` of a dataset written aside."""
    root = Path(root)
    write_json(root / "dataset_description.json", dataset_description(name, generated_by, authors))
    write_text(root / "README", readme.rstrip() + "\n")


def write_participants(
    root: str | Path, participants: pd.DataFrame, descriptions: Mapping[str, object]
) -> None:
    """Write ``participants.tsv`` and its sidecar of a dataset written aside."""
    root = Path(root)
    write_tsv(root / "participants.tsv", participants)
    write_json(root / "participants.json", dict(descriptions))


def write_beh(
    root: str | Path,
    label: str,
    trials: pd.DataFrame,
    sidecar: Mapping,
    task: str = TASK,
    *,
    scale: Scale = PAPER_SCALE,
) -> Path:
    """Write one session's ``_beh.tsv`` and its sidecar: every column described
    (:data:`BEH_COLUMNS`, the rating levels of ``scale``), the scale, and ``sidecar``'s entries.
    """
    path = beh_path(root, check_label(label), task)
    unknown = [c for c in trials.columns if c not in BEH_COLUMNS]
    if unknown:
        raise ValueError(f"columns without a description in BEH_COLUMNS: {unknown}")
    write_tsv(path, trials)
    columns = {**BEH_COLUMNS, **scale_sidecar(scale)}
    content = {**{c: columns[c] for c in trials.columns}, "RatingScale": scale.sidecar(), **sidecar}
    write_json(path.with_suffix(".json"), content)
    return path
