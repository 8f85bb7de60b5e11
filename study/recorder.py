"""Recording a rating session so that no completed trial is ever lost.

Each trial is appended to the session's ``_beh.tsv`` as one line, flushed and fsync'ed when
complete, so a session killed at any instant keeps every trial written. An existing session
is refused unless resumed; the sidecar and ``participants.tsv`` are replaced atomically.
On ``resume`` the recorded seed re-derives the trial order, which must equal the recorded
one under the same protocol and stimulus set, and the session continues at the first
unrecorded trial. A line cut off by a crash is moved to ``sourcedata/``.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

import pandas as pd

from sbir_study.foundation import bids
from sbir_study.foundation.atomic import atomic_write, fsync_folder
from sbir_study.foundation.checks import InputError, participant_label
from sbir_study.foundation.provenance import toolkit_version
from sbir_study.foundation.tables import read_table, read_text

from .participants import DETAILS, MISSING, details_description

__all__ = [
    "KEY_LOG_COLUMNS",
    "SESSION_COLUMNS",
    "SessionRecorder",
    "check_dataset_folder",
    "dataset_description",
    "format_cell",
    "key_log_path",
    "label_of",
    "recorded_details",
    "refuse_recorded",
]

#: The columns of a recorded session's ``_beh.tsv``, in file order.
SESSION_COLUMNS = (
    "participant",
    "trial",
    "phase",
    "sketch_id",
    "image_id",
    "sketch_file",
    "image_file",
    "rating",
    "rt",
    "anchor_rating",
    "onset_planned",
    "onset",
    "onset_monotonic",
    "stim_duration",
    "blank_duration",
    "dropped_frames",
    "n_presses",
    "presses",
    "paused_before",
)

#: The columns of a session's key log (:func:`key_log_path`), in file order.
KEY_LOG_COLUMNS = ("key", "onset_monotonic", "session_time")

#: participants.json's entry for the id as given (``sbir-study run --participant``).
SOURCE_ID_DESCRIPTION = {
    "Description": "The participant's id as given to sbir-study run --participant (a "
    "recruitment platform's id, e.g. Prolific's PROLIFIC_PID, or the lab's own), of which the "
    "label is made (sbir_study.foundation.checks.participant_label); n/a for a session recorded "
    "before ids were kept."
}

_README = """Ratings of sketch/image pairs recorded with sbir-study (the rating study of
Eitz et al. 2011, Sec. 2.3). One _beh.tsv per participant and session: one row per
presented pair, columns described in its _beh.json sidecar, which also holds the
protocol, the stimulus-set digest, the seed and the trial order.
"""


def format_cell(value: object) -> str:
    """A cell of a ``_beh.tsv`` line: floats with 6 decimals, ``n/a`` for none.

    >>> [format_cell(v) for v in (0.5, None, 3, "4@0.5")]
    ['0.500000', 'n/a', '3', '4@0.5']
    """
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if isinstance(value, float):
        return f"{value:.6f}"
    text = str(value)
    if "\t" in text or "\n" in text:
        raise ValueError(f"a cell may not hold a tab or line break: {text!r}")
    return text


class SessionRecorder:
    """Appends a session's trials to its ``_beh.tsv``: :meth:`open`, :meth:`append` per trial,
    :meth:`finish`.
    """

    def __init__(self, path: Path, sidecar: dict, recorded: int) -> None:
        self.path = path
        self.sidecar = sidecar
        #: Trials on disk before this process started (0 for a new session).
        self.recorded = recorded
        self._handle = open(path, "a", encoding="utf-8", newline="\n")
        self._keys: TextIO | None = None  # the key log, opened with the first keys

    @classmethod
    def open(
        cls,
        root: str | Path,
        participant: str,
        *,
        task: str,
        session: Mapping,
        trial_order: Sequence[Sequence],
        resume: bool = False,
        details: Mapping[str, str] | None = None,
        dataset: Mapping | None = None,
        source_id: str | None = None,
    ) -> SessionRecorder:
        """Start (or, with ``resume``, continue) a participant's session under ``root``.

        Parameters
        ----------
        session
            What the sidecar records (protocol, stimulus set and digest, seed, refresh rate,
            software); on resume, its ``Protocol`` and ``StimulusSetDigest`` must be those
            recorded.
        trial_order
            The rows ``(trial, phase, sketch_id, image_id)``; on resume, ``TrialOrder``'s.
        details
            Detail name -> value (:mod:`sbir_study.study.participants`) for ``participants.tsv``.
        dataset
            ``Name`` and ``Authors`` for a new dataset's ``dataset_description.json``.
        source_id
            The id the label was made of (:func:`label_of`), for ``participants.tsv``.
        """
        root = Path(root)
        label = bids.check_label(participant)
        path = bids.beh_path(root, label, task)
        order = [list(map(_plain, row)) for row in trial_order]
        if not resume:
            refuse_recorded(path, label)
        if resume and not path.exists():
            raise InputError(f"{path}: no session of participant {label!r} to resume")
        _start_dataset(root, label, details or {}, dataset or {}, source_id)
        if resume:
            sidecar, recorded = _resume(path, session, order)
            sidecar["Resumed"] = [
                *sidecar.get("Resumed", []),
                {"At": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "FromTrial": recorded + 1},
            ]
            sidecar["SessionStatus"] = "running"
        else:
            sidecar = {
                **{c: bids.BEH_COLUMNS[c] for c in SESSION_COLUMNS},
                **session,
                "TrialOrder": order,
                "SessionStart": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "SessionStatus": "running",
            }
            recorded = 0
            path.parent.mkdir(parents=True, exist_ok=True)
            # The header alone, exclusively: two processes cannot both start this session.
            with open(path, "x", encoding="utf-8", newline="\n") as handle:
                handle.write("\t".join(SESSION_COLUMNS) + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            fsync_folder(path.parent)
        bids.write_json(path.with_suffix(".json"), sidecar, in_place=True)
        return cls(path, sidecar, recorded)

    def append(self, row: Mapping, keys: Sequence[tuple[str, float, float]] = ()) -> None:
        """Write one trial as one line and force it to disk before returning.

        ``keys`` (``(key, monotonic time, seconds from the start)`` since the last trial) go to the
        key log first, so a trial on disk can always be scored again from its keys.
        """
        if keys:
            if self._keys is None:
                self._keys = _open_key_log(self.key_log)
            self._keys.write("".join(f"{k}\t{t:.6f}\t{s:.6f}\n" for k, t, s in keys))
            self._keys.flush()
            os.fsync(self._keys.fileno())
        line = "\t".join(format_cell(row.get(c)) for c in SESSION_COLUMNS) + "\n"
        self._handle.write(line)
        self._handle.flush()
        os.fsync(self._handle.fileno())

    @property
    def key_log(self) -> Path:
        """Every key-down the session received (:func:`key_log_path`)."""
        return key_log_path(self.path)

    def finish(self, status: str, **entries: object) -> None:
        """Close the files and complete the sidecar (``complete`` or ``incomplete``)."""
        self._handle.close()
        if self._keys is not None:
            self._keys.close()
        self.sidecar.update(entries)
        self.sidecar["SessionStatus"] = status
        self.sidecar["SessionEnd"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        bids.write_json(self.path.with_suffix(".json"), self.sidecar, in_place=True)

    def recorded_rows(self) -> pd.DataFrame:
        """The trials on disk, as text."""
        return pd.read_csv(self.path, sep="\t", dtype=str, keep_default_na=False)


def refuse_recorded(path: Path, label: str) -> None:
    """An InputError when a session of participant ``label`` is recorded at ``path``."""
    if path.exists():
        raise InputError(
            f"{path}: a session of participant {label!r} is already recorded; it is never "
            "overwritten (pass --resume to continue it, or choose another --participant)"
        )


def key_log_path(beh: Path) -> Path:
    """The key log of the session whose ``_beh.tsv`` is ``beh``, under ``sourcedata/``.

    >>> key_log_path(Path("data/sub-07/beh/sub-07_task-sbirrating_beh.tsv")).as_posix()
    'data/sourcedata/sub-07/sub-07_task-sbirrating_keys.tsv'
    """
    return (
        beh.parents[2]
        / "sourcedata"
        / beh.parent.parent.name
        / (beh.name.replace("_beh.tsv", "_keys.tsv"))
    )


def _open_key_log(path: Path) -> TextIO:
    """The key log for appending: a header when new, a cut-off last key moved aside when resumed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists()
    if not new:
        _keep_whole_lines(path, keep_in=path.parent)  # a key cut off by a crash: kept aside
    handle = open(path, "a", encoding="utf-8", newline="\n")
    if new:
        handle.write("\t".join(KEY_LOG_COLUMNS) + "\n")
    return handle


def _plain(value):
    """A JSON-friendly scalar (numpy and pandas scalars become Python ones)."""
    if value is None or value is pd.NA:
        return None
    if hasattr(value, "item"):
        return value.item()
    return value


def check_dataset_folder(root: str | Path) -> Path:
    """Check, before anything is shown, that sessions can be recorded under ``root``.

    ``root`` is a new or empty folder or a BIDS dataset (``dataset_description.json``, a
    readable ``participants.tsv`` if any), where the output policy allows
    (:func:`~sbir_study.foundation.outputs.check_dataset_folder`). A folder holding other files
    is someone else's and is refused.
    """
    from sbir_study.foundation.outputs import check_dataset_folder as check_place

    # Where it is: never a file, ".", a stimulus set or another command's output.
    root = check_place(root, "run")
    if root.is_dir():
        description = root / "dataset_description.json"
        if not description.exists() and any(root.iterdir()):
            raise InputError(
                f"{root}: --data: the folder holds files but no dataset_description.json, so it "
                "is not a BIDS dataset; choose a new or empty folder, or a dataset of earlier "
                "sessions"
            )
        if description.exists():
            _read_json(description)
        _read_participants(root / "participants.tsv")
    existing = root
    while not existing.exists():
        existing = existing.parent
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f"{root}: --data: {existing} is not writable")
    return root


def recorded_details(root: str | Path, label: str) -> dict[str, str]:
    """The details ``participants.tsv`` holds for participant ``label`` (empty if none)."""
    table = _read_participants(Path(root) / "participants.tsv")
    if table is None:
        return {}
    rows = table[table["participant_id"] == f"sub-{label}"]
    if rows.empty:
        return {}
    return {c: rows.iloc[0][c] for c in table.columns if c in DETAILS}


def label_of(root: str | Path, source_id: str) -> str:
    """The label of the participant whose id (``run --participant``) is ``source_id`` at ``root``.

    An id that ``participants.tsv`` records as ``source_id`` finds its label again, so a resumed
    session keeps its label; so does an id that is itself the label of a participant without a
    ``source_id``. Any other id gets :func:`~sbir_study.foundation.checks.participant_label`,
    every label of the dataset taken.

    Examples
    --------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> _ = (root / "participants.tsv").write_text(
    ...     "participant_id\\tsource_id\\nsub-R3kVq9xP2\\tR_3kVq9x-P.2\\nsub-07\\tn/a\\n")
    >>> label_of(root, "R_3kVq9x-P.2"), label_of(root, "07"), label_of(root, "R_3kVq9x-P-2")
    ('R3kVq9xP2', '07', 'R3kVq9xP2xadab487d')
    """
    if source_id == MISSING:
        raise InputError(
            f"participant id: {source_id!r} is how participants.tsv writes a missing value; "
            "expected the participant's id"
        )
    root = Path(root)
    table = _read_participants(root / "participants.tsv")
    labels = {p.name.removeprefix("sub-") for p in root.glob("sub-*") if p.is_dir()}
    sources: dict[str, str] = {}
    unsourced = set(labels)
    if table is not None:
        given = table["source_id"] if "source_id" in table.columns else [MISSING] * len(table)
        for participant_id, source in zip(table["participant_id"], given, strict=True):
            label = participant_id.removeprefix("sub-")
            labels.add(label)
            if source in ("", MISSING):
                unsourced.add(label)
            else:
                sources.setdefault(source, label)
                unsourced.discard(label)
    if source_id in sources:
        return sources[source_id]
    if source_id in unsourced and participant_label(source_id) == source_id:
        return source_id
    return participant_label(source_id, labels)


def _read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise InputError(f"{path}: cannot be read as JSON ({error})") from None


def _read_participants(path: Path) -> pd.DataFrame | None:
    if not path.exists():
        return None
    table = read_table(read_text(path), "\t")
    if "participant_id" not in table.columns:
        raise InputError(f"{path}: line 1: expected a participant_id column")
    return table


def dataset_description(dataset: Mapping, generated_by: str) -> dict[str, object]:
    """A dataset's ``dataset_description.json`` from the protocol's ``[dataset]`` (``Name``,
    ``Authors``) and the command that wrote it (``GeneratedBy``).

    >>> written = dataset_description({"Name": "Ratings", "Authors": ["A. B."]}, "sbir-study run")
    >>> written["Name"], written["Authors"], written["GeneratedBy"][0]["Description"]
    ('Ratings', ['A. B.'], 'sbir-study run')
    """
    return bids.dataset_description(
        dataset.get("Name") or "sbir-study rating sessions",
        {"Name": "sbir-study", "Version": toolkit_version(), "Description": generated_by},
        dataset.get("Authors") or (),
    )


def _start_dataset(
    root: Path, label: str, details: Mapping[str, str], dataset: Mapping, source_id: str | None
) -> None:
    """Create the dataset files that do not exist yet and add the participant."""
    root.mkdir(parents=True, exist_ok=True)
    if not (root / "dataset_description.json").exists():
        description = dataset_description(dataset, "sbir-study run")
        bids.write_json(root / "dataset_description.json", description, in_place=True)
    if not (root / "README").exists():
        bids.write_text(root / "README", _README, in_place=True)
    participants = root / "participants.tsv"
    table = _read_participants(participants)
    if table is None:
        table = pd.DataFrame({"participant_id": pd.Series(dtype=str)})
    if f"sub-{label}" not in set(table["participant_id"]):
        row = {"participant_id": f"sub-{label}", **details}
        if source_id is not None:
            row["source_id"] = source_id
        table = pd.concat([table, pd.DataFrame([row], dtype=str)], ignore_index=True)
        # The id as given beside the label, other columns as they were, the details last.
        first = ["participant_id", *(["source_id"] if "source_id" in table.columns else [])]
        known = [c for c in DETAILS if c in table.columns]
        others = [c for c in table.columns if c not in first and c not in DETAILS]
        bids.write_tsv(participants, table[[*first, *others, *known]], in_place=True)
    sidecar = root / "participants.json"
    described = _read_json(sidecar) if sidecar.exists() else {}
    wanted = {
        "participant_id": {"Description": "Participant label (sub-<label>)."},
        **({"source_id": SOURCE_ID_DESCRIPTION} if "source_id" in table.columns else {}),
        **details_description([c for c in DETAILS if c in table.columns]),
    }
    missing = {k: v for k, v in wanted.items() if k not in described}
    if missing or not sidecar.exists():
        bids.write_json(sidecar, {**described, **missing}, in_place=True)


def _resume(path: Path, session: Mapping, order: list) -> tuple[dict, int]:
    sidecar_path = path.with_suffix(".json")
    try:
        sidecar = json.loads(sidecar_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise InputError(f"{sidecar_path}: cannot be read ({error}); cannot resume") from None
    for key, what in (("StimulusSetDigest", "stimulus set"), ("Protocol", "protocol")):
        given = json.loads(json.dumps(session.get(key)))  # as JSON keeps it: tuples are lists
        # A setting the recorded protocol lacks took its default.
        default = _protocol_defaults() if key == "Protocol" else _ABSENT
        before = sidecar.get(key)
        if key == "Protocol":
            before = _as_written_from_settings(before, given)
        where, recorded, now = _difference(before, given, key, default)
        if where is not None:
            raise InputError(
                f"{sidecar_path}: {where}: the session was recorded with another {what}; resume "
                f"with the same {what} (recorded {_short(recorded)}, given {_short(now)})"
            )
    if sidecar.get("TrialOrder") != order:
        raise InputError(
            f"{sidecar_path}: TrialOrder: the order re-derived from seed {session.get('Seed')} "
            "differs from the recorded one; the session cannot be resumed safely"
        )
    recorded = _keep_whole_lines(path)
    rows = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    if list(rows.columns) != list(SESSION_COLUMNS):
        raise InputError(f"{path}: line 1: expected the columns {', '.join(SESSION_COLUMNS)}")
    for line, (row, expected) in enumerate(zip(rows.itertuples(), order, strict=False), start=2):
        if [int(row.trial), row.phase, row.sketch_id, row.image_id] != list(expected):
            raise InputError(
                f"{path}: line {line}: trial {row.trial} ({row.sketch_id}, {row.image_id}) is not "
                f"trial {expected[0]} of the recorded order; the session cannot be resumed safely"
            )
    if recorded > len(order):
        raise InputError(f"{path}: {recorded} trials recorded, more than the {len(order)} planned")
    return sidecar, recorded


#: The default instruction texts a sidecar may record for a protocol that leaves them out
#: (the toolkit records ``None``); a session whose sidecar holds one resumes as if left out.
_EARLIER_DEFAULT_INSTRUCTIONS = {
    "anchoring": "You will first see example pairs of a sketch and an image, each with the "
    "rating it deserves, from 1 (best match) to 7 (worst match).\n\nPress space to begin.",
    "main": "Now rate each pair yourself: how well does the image match the sketch?\n\n"
    "Press a number key from 1 (best match) to 7 (worst match) while the pair is shown or "
    "during the black screen after it. You may change your rating until the next pair "
    "appears.\n\nPress P to pause at any time. Press space to begin.",
    "pause": "Paused. Press space to continue.",
    "end": "Thank you! The session is complete.\n\nPress space to close.",
}


def _as_written_from_settings(recorded, given):
    """``recorded`` with each fixed default text that ``given`` leaves out (None) read as left out.

    >>> old = {"instructions": {"pause": "Paused. Press space to continue.", "end": "Bye"}}
    >>> _as_written_from_settings(old, {"instructions": {"pause": None, "end": None}})
    {'instructions': {'pause': None, 'end': 'Bye'}}
    """
    if not isinstance(recorded, dict) or not isinstance(given, dict):
        return recorded
    texts, wanted = recorded.get("instructions"), given.get("instructions")
    if not isinstance(texts, dict) or not isinstance(wanted, dict):
        return recorded
    kept = {
        name: None
        if wanted.get(name, "") is None and text == _EARLIER_DEFAULT_INSTRUCTIONS.get(name)
        else text
        for name, text in texts.items()
    }
    return {**recorded, "instructions": kept}


def _protocol_defaults() -> dict:
    from .protocol import Protocol, protocol_dict

    return json.loads(json.dumps(protocol_dict(Protocol())))


def _keep_whole_lines(path: Path, keep_in: Path | None = None) -> int:
    """Move a line cut off by a crash to ``keep_in`` (default the participant's ``sourcedata/``
    folder); return the number of whole trial lines.
    """
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    if end < len(data):
        folder = keep_in or path.parents[2] / "sourcedata" / path.parent.parent.name
        atomic_write(folder / f"{path.stem}_cut-{int(time.time())}.txt", data[end:])
        with open(path, "r+b") as handle:
            handle.truncate(end)
            handle.flush()
            os.fsync(handle.fileno())
    lines = data[:end].count(b"\n")
    return max(lines - 1, 0)


_ABSENT = object()


def _difference(recorded, given, where: str, default=_ABSENT):
    """The first place two JSON values differ, as (path, recorded, given), or Nones.

    A setting missing from the record matches a given value equal to its ``default``, no other.

    >>> _difference({"a": 1}, {"a": 1, "b": 2}, "P", {"a": 0, "b": 2})
    (None, None, None)
    >>> _difference({"a": 1}, {"a": 1, "b": 3}, "P", {"a": 0, "b": 2})
    ('P.b', None, 3)
    """
    if isinstance(recorded, dict) and isinstance(given, dict):
        for key in sorted(set(recorded) | set(given)):
            below = default.get(key, _ABSENT) if isinstance(default, dict) else _ABSENT
            if key not in recorded and below is not _ABSENT:
                found = _difference(below, given.get(key), f"{where}.{key}")
                if found[0] is not None:
                    return found[0], None, found[2]
                continue
            found = _difference(recorded.get(key), given.get(key), f"{where}.{key}", below)
            if found[0] is not None:
                return found
        return None, None, None
    return (None, None, None) if recorded == given else (where, recorded, given)


def _short(value) -> str:
    text = json.dumps(value, sort_keys=True) if not isinstance(value, str) else value
    return text if len(text) <= 40 else text[:37] + "..."
