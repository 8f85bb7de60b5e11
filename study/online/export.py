"""The online sessions of a database as the BIDS dataset that ``sbir-study analyze`` reads.

Each session with a stored trial becomes ``sub-<label>/beh/sub-<label>_task-<task>_beh.tsv``
with exactly the lab session's columns (:data:`sbir_study.study.recorder.SESSION_COLUMNS`),
cells written as the lab recorder writes them: what the server stored, the files
of each pair from the session's trial order, ``onset_planned`` on the lab's
timeline (:func:`planned_onsets`), and ``n/a`` for ``onset_monotonic``, which a
browser cannot give. Beside it, a sidecar with the lab session's entries plus
the online ones: ``Mode`` (``online``), the browser, screen and window size,
the refresh estimate, the participant's list (and, kept in the lab, the URL
parameters of a crowd platform); and the session's key log in ``sourcedata/`` as
the lab writes it (:func:`key_log`), from the key events the page sent with each
trial.
``participants.tsv`` holds every participant who started, those who stored no
trial too, with the status the experimenter's status page gives them and the
details the participant gave (age, sex, handedness), spelled and described as the
lab session records them (:mod:`sbir_study.study.participants`).

A dataset made to be shared holds no id of a crowd platform (:mod:`.publish`): its
labels are keyed hashes of the platform's ids, its sidecars give the browser and
operating system without the user agent, and the link from label to platform ids
(``source_id``, ``PROLIFIC_PID``, ``STUDY_ID``, ``SESSION_ID``) is a file written beside
the dataset (:func:`~.publish.linkage_path`). With ``keep_platform_ids``, for a dataset
that stays in the lab, the labels are the server's and the ids are in the dataset:
``source_id`` in participants.tsv (the id as the platform sent it, of which the label
was made), ``UserAgent`` and ``CrowdPlatform`` in the sidecars.
``dataset_description.json`` takes the protocol's ``[dataset]`` name and authors,
written as the lab session writes it (:func:`sbir_study.study.recorder.dataset_description`).

The dataset is written as every output is (:mod:`sbir_study.foundation.outputs`,
``docs/outputs.md``): into a temporary folder beside ``out``, moved into place
when complete with its output record; an existing ``out`` is refused unless
``overwrite``, and then only when it is an earlier export holding nothing but
the files that export wrote. The linkage file beside it is written the same way,
with its own record, and put in place before the dataset.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import tempfile
import time
import warnings
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sbir_study.foundation import bids
from sbir_study.foundation.checks import InputError
from sbir_study.foundation.scale import Scale
from sbir_study.foundation.tables import read_table, read_text

from ..participants import DETAILS, check_details, details_description
from ..recorder import (
    KEY_LOG_COLUMNS,
    SESSION_COLUMNS,
    dataset_description,
    format_cell,
    key_log_path,
)
from . import publish, queries, storage
from .browser_keys import browser_key_name
from .scoring import resumed_from
from .status import spreadsheet_cell
from .storage import studies

__all__ = [
    "KEY_LOG_EXTRA_COLUMNS",
    "ExportSummary",
    "export_online",
    "export_zip",
    "key_log",
    "planned_onsets",
    "write_dataset",
]

_GENERATED_BY = "sbir-study export-online"

_README = """Ratings of sketch/image pairs recorded online with sbir-study (the rating
study of Eitz et al. 2011, Sec. 2.3, run in a browser by sbir-study serve and
exported by sbir-study export-online). One _beh.tsv per participant: one row per
presented pair, columns as in the lab sessions, described in the _beh.json
sidecar, which also holds the protocol, the stimulus-set digest, the seed, the
trial order, the participant's list of pairs and the browser and screen. The
key-downs behind each participant's trials are in sourcedata/, as the lab's key
logs are.
"""

#: The dataset README's paragraph on its labels: one made to be shared, one kept in the lab.
_README_LABELS = {
    False: """
The participant labels are keyed hashes (HMAC-SHA256) of the ids a recruitment
platform gave the participants; the dataset holds none of those ids, nor the
browsers' user agents (the browser and operating system only). The lab that ran
the study keeps the link from label to platform id, outside this dataset.
""",
    True: """
This dataset holds the ids a recruitment platform gave the participants
(participants.tsv source_id, CrowdPlatform in each sidecar) and the browsers' user
agents: it is for the lab that ran the study, not for publishing (export it without
--keep-platform-ids to share it).
""",
}


#: The key log's columns after the lab's (:data:`~sbir_study.study.recorder.KEY_LOG_COLUMNS`):
#: what only a browser gives.
KEY_LOG_EXTRA_COLUMNS = ("code", "browser_key", "page_time", "trial", "screen")

#: participants.tsv's ``status``: as the status page and ``admin/participants.csv`` give it.
_STATUS_DESCRIPTION = {
    "Description": "How the participant's online session stands at the time of the export, "
    "as the experimenter's status page (admin/participants.csv) gives it; a participant "
    "who started and stored no trial has no sub- folder.",
    "Levels": {
        "running": "started, heard from within the protocol's online.dropout_after_s",
        "complete": "every trial stored",
        "incomplete": "ended early (quit)",
        "timed_out": "came back after online.dropout_after_s without contact",
        "dropped_out": "running, but silent for online.dropout_after_s",
    },
}


@dataclass(frozen=True)
class ExportSummary:
    """What :func:`export_online` wrote: the participants with files (lab ones copied in
    included), their trials, the complete online sessions, and ``skipped_empty`` sessions
    that stored no trial (in participants.tsv, without files)."""

    out: Path
    study: str
    participants: int
    trials: int
    complete: int
    skipped_empty: int
    #: The file beside the dataset linking its labels to the platform's ids; None when the
    #: dataset keeps them itself (``keep_platform_ids``).
    linkage: Path | None = None


def export_online(
    url: str,
    out: str | Path,
    *,
    study: int | None = None,
    overwrite: bool = False,
    with_lab: Sequence[str | Path] = (),
    keep_platform_ids: bool = False,
    label_key: str | Path | None = None,
) -> ExportSummary:
    """Export the sessions of one study in the database at ``url`` to the BIDS folder ``out``.

    ``study`` is the study's id (``sbir-study export-online`` lists them
    when the database holds several). ``with_lab`` are BIDS datasets of lab
    sessions (``sbir-study run``) copied in beside the online ones, so that
    one dataset holds both arms of a study (they are read, never changed; a
    label in both is refused).

    The dataset holds no platform id: its labels are keyed with the key in
    ``label_key`` (:func:`~.publish.label_key`; default ``label-key`` beside a SQLite
    database, made on the first export), and the link from each label to the platform's
    ids goes to :func:`~.publish.linkage_path` beside ``out``, written as ``out`` is (the
    same ``overwrite``). ``keep_platform_ids`` keeps the server's labels and puts the ids
    in the dataset, with no linkage file. Raises
    :class:`~sbir_study.foundation.checks.InputError` for a database without a study, an
    ambiguous study, a key that may not be used, or a target that may not be replaced.
    """
    from sbir_study.foundation.outputs import output_files, output_folder

    out = Path(out)
    engine = storage.open_database(url)
    try:
        study_id = _choose_study(engine, study)
        if keep_platform_ids:
            with output_folder(out, "export-online", overwrite=overwrite, inputs=with_lab) as root:
                summary = write_dataset(engine, study_id, root, with_lab=with_lab)
            return dataclasses.replace(summary, out=out)
        key_file = Path(label_key) if label_key else publish.default_label_key(engine.url)
        linkage = publish.linkage_path(out)
        # Both targets are checked before anything is written; the linkage file is put in
        # place first, so that a dataset in place always has its link (a later export's
        # linkage holds every label of an earlier one: the labels do not change).
        with (
            output_folder(out, "export-online", overwrite=overwrite, inputs=with_lab) as root,
            output_files(linkage, "export-online", overwrite=overwrite, inputs=with_lab) as files,
        ):
            key = publish.label_key(key_file)  # made only for an export that may be written
            summary = write_dataset(
                engine, study_id, root, with_lab=with_lab, label_key=key, linkage=files[0]
            )
    finally:
        engine.dispose()
    return dataclasses.replace(summary, out=out, linkage=linkage)


def export_zip(engine: Engine, study_id: int) -> bytes:
    """The study's BIDS dataset as a zip archive, for the admin export route: the lab's copy,
    with the server's labels and the platform's ids (as ``keep_platform_ids``), which the
    admin token guards as it guards ``admin/participants.csv``; the server holds no label key."""
    with tempfile.TemporaryDirectory(prefix="sbir-export-") as folder:
        root = Path(folder) / "dataset"
        root.mkdir()
        write_dataset(engine, study_id, root)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(root.rglob("*")):
                if path.is_file():
                    archive.write(path, path.relative_to(root).as_posix())
        return buffer.getvalue()


def _choose_study(engine: Engine, study: int | None) -> int:
    if storage.schema_revision(engine) is None:
        raise InputError(
            f"--db: {engine.url.render_as_string()}: holds no online study "
            "(sbir-study serve creates one)"
        )
    with storage.reading(engine) as connection:
        rows = connection.execute(
            sa.select(
                studies.c.id, studies.c.name, studies.c.task, studies.c.stimulus_digest
            ).order_by(studies.c.id)
        ).all()
    ids = [row.id for row in rows]
    listing = "; ".join(
        f"{r.id}: {r.name} (task {r.task}, set {r.stimulus_digest[:12]})" for r in rows
    )
    if study is None:
        if len(rows) == 1:
            return rows[0].id
        if not rows:
            raise InputError(f"--db: {engine.url.render_as_string()}: holds no online study")
        raise InputError(f"--study: the database holds {len(rows)} studies ({listing}); choose one")
    if study not in ids:
        raise InputError(f"--study: no study {study} in the database ({listing})")
    return study


def write_dataset(
    engine: Engine,
    study_id: int,
    root: Path,
    *,
    with_lab: Sequence[str | Path] = (),
    label_key: bytes | None = None,
    linkage: Path | None = None,
) -> ExportSummary:
    """Write the study's sessions as a BIDS dataset into the empty folder ``root``.

    With ``label_key``, the dataset made to be shared: keyed labels and no platform id, the
    link from each label to the platform's ids written to ``linkage`` (when given). Without,
    the lab's: the server's labels, the platform's ids in participants.tsv and the sidecars.
    """
    of_study = {"study": study_id}
    with storage.reading(engine) as connection:
        study = connection.execute(queries.EXPORT_STUDY, of_study).mappings().one()
        rows = connection.execute(queries.EXPORT_SESSIONS, of_study).mappings().all()
        stored = pd.read_sql(queries.EXPORT_TRIALS, connection, params=of_study)
    protocol = json.loads(study["protocol_json"])
    keep = label_key is None
    labels = _labels(rows, label_key)
    # A running session silent this long has dropped out, as the status page counts it
    # (sbir_study.study.online.status.participant_table).
    silent_since = storage.now() - protocol["online"]["dropout_after_s"]
    by_session = {key: group for key, group in stored.groupby("session_id", sort=False)}
    people, links, n_trials, complete, empty = [], [], 0, 0, 0
    # In the labels' order: a shared dataset's rows say nothing of the platform's ids.
    for session in sorted(rows, key=lambda row: labels[row["id"]]):
        label = labels[session["id"]]
        status = session["status"]
        if status == "running" and session["last_seen_at"] < silent_since:
            status = "dropped_out"
        source = {"source_id": session["source_id"]} if keep else {}
        people.append(
            {"participant_id": f"sub-{label}", **source, "status": status}
            | _details(session["details"])
        )
        links.append(_linkage_row(label, session))
        group = by_session.get(session["id"])
        if group is None or group.empty:
            empty += 1  # in participants.tsv, with no files: there is nothing to write
            continue
        _write_session(root, study, protocol, session, label, group, keep=keep)
        n_trials += len(group)
        complete += session["status"] == "complete"
    _write_description(root, study, protocol, keep=keep)
    columns = ["participant_id", *(["source_id"] if keep else []), "status", *DETAILS]
    participants = pd.DataFrame(people, columns=columns)
    described = _participant_descriptions(keep)
    for lab in with_lab:
        table, descriptions = _copy_lab(Path(lab), root, set(participants["participant_id"]))
        if not keep:  # the id a lab session was started with (run --participant)
            table = table.drop(columns="source_id", errors="ignore")
            descriptions.pop("source_id", None)
        participants = pd.concat([participants, table], ignore_index=True)
        described = {**descriptions, **described}
    bids.write_participants(root, participants, described)
    if linkage is not None:
        linkage.write_text(_tsv(pd.DataFrame(links, columns=_LINKAGE_COLUMNS)), encoding="utf-8")
        os.chmod(linkage, 0o600)  # the platform's ids: for the lab's eyes only
    n_people = len(participants) - empty
    return ExportSummary(root, study["name"], n_people, n_trials, complete, empty)


def _labels(rows: Sequence[Mapping], label_key: bytes | None) -> dict[str, str]:
    """Each session's label in the dataset: the server's, checked, or with ``label_key`` the
    keyed label of its platform id (:func:`~.publish.keyed_labels`), given in the order the
    sessions started so that a later session never changes an earlier one's."""
    if label_key is None:
        return {row["id"]: bids.check_label(row["participant"]) for row in rows}
    started = sorted(rows, key=lambda row: (row["created_at"], row["id"]))
    keyed = publish.keyed_labels(label_key, [row["source_id"] for row in started])
    return {row["id"]: keyed[row["source_id"]] for row in rows}


#: The linkage file's columns: the dataset's label, the status page's and the platform's ids.
_LINKAGE_COLUMNS = ("participant_id", "participant", "source_id", *publish.PLATFORM_PARAMETERS)


def _linkage_row(label: str, session: Mapping) -> dict:
    """The session's row of the linkage file, which an experimenter opens in a spreadsheet to
    pay participants: each cell one line of text (:func:`_plain`), spreadsheet-safe as
    ``admin/participants.csv``'s (:func:`~.status.spreadsheet_cell`)."""
    url = json.loads(session["url_parameters"])
    row = {
        "participant_id": f"sub-{label}",
        "participant": session["participant"],
        "source_id": session["source_id"],
        **{name: url.get(name) for name in publish.PLATFORM_PARAMETERS},
    }
    return {
        name: None if value is None else spreadsheet_cell(_plain(str(value)))
        for name, value in row.items()
    }


def _write_session(
    root: Path,
    study: Mapping,
    protocol: dict,
    session: Mapping,
    label: str,
    group: pd.DataFrame,
    *,
    keep: bool,
) -> None:
    """Write one session's ``_beh.tsv``, its sidecar and its key log."""
    order = json.loads(session["trial_order"])
    path = bids.beh_path(root, label, study["task"])
    table = _beh_table(label, group, order, protocol["timing"])
    bids.write_text(path, _tsv(table, _INTEGER_COLUMNS))
    sidecar = _sidecar(study, protocol, session, len(group), keep=keep)
    # As the lab's sidecar says a session was resumed: the trials a reloaded page went on
    # from, each with the time it reached the server.
    resumed = resumed_from(group[["trial", "page_onset", "onset"]].itertuples(index=False))
    if resumed:
        at = group.set_index("trial")["received_at"]
        sidecar["Resumed"] = [{"At": _iso(at[t]), "FromTrial": t} for t in resumed]
    bids.write_json(path.with_suffix(".json"), sidecar)
    final = json.loads(session["final_events"]) if session["final_events"] else None
    bids.write_text(key_log_path(path), _tsv(key_log(group, final)))


def _write_description(root: Path, study: Mapping, protocol: dict, *, keep: bool) -> None:
    """Write ``dataset_description.json`` (the protocol's ``[dataset]``) and the README."""
    dataset = protocol.get("dataset", {})
    if not dataset.get("authors"):
        warnings.warn(
            f"the protocol {study['name']!r} names no authors ([dataset] authors); the "
            "export's dataset_description.json names none",
            stacklevel=3,
        )
    description = dataset_description(
        {"Name": dataset.get("name"), "Authors": dataset.get("authors")}, _GENERATED_BY
    )
    bids.write_json(root / "dataset_description.json", description)
    bids.write_text(root / "README", _README + _README_LABELS[keep])


def _participant_descriptions(keep: bool) -> dict:
    """participants.json's descriptions of the online participants' columns."""
    if not keep:
        label = {
            "Description": "Participant label (sub-<label>): the first hex digits of a keyed "
            "hash (HMAC-SHA256) of the id a recruitment platform gave the participant "
            "(sbir_study.study.online.publish.keyed_labels); the lab keeps the key and the "
            "link to the platform's ids outside the dataset."
        }
        return {
            "participant_id": label,
            "status": _STATUS_DESCRIPTION,
            **details_description(DETAILS),
        }
    return {
        "participant_id": {"Description": "Participant label (sub-<label>)."},
        "source_id": {
            "Description": "The participant's id as the page's address gave it (a recruitment "
            "platform's id, e.g. Prolific's PROLIFIC_PID), of which the label is made "
            "(sbir_study.foundation.checks.participant_label)."
        },
        "status": _STATUS_DESCRIPTION,
        **details_description(DETAILS),
    }


def planned_onsets(group: pd.DataFrame, order: Sequence[Sequence], timing: Mapping) -> list:
    """Each stored trial's ``onset_planned``: when the lab's timeline had the pair due.

    The lab's rule (:class:`sbir_study.study.schedule.Timeline`, and ``onset_planned`` in
    :data:`sbir_study.foundation.bids.BEH_COLUMNS`): the first pair is due one blank
    (``blank_s``) after the key press that began the session (session time 0), each
    next one the previous planned onset plus the previous pair's duration
    (``anchor_demo_s`` for an anchor demonstration, else ``stimulus_s``), one blank, and
    its own ``paused_before``. Late frames never move it, so ``onset - onset_planned``
    is how far the page's pair came from the protocol's timeline, as in the lab.

    ``group`` is the session's stored trials (``trial``, ``paused_before``), ``order``
    its trial order, ``timing`` the protocol's ``[timing]``. A trial after one that is
    not stored gets None: the time paused before the missing one is not known.

    Examples
    --------
    Pairs of 2 s with a 1 s blank, the third after a pause that moved the timeline 5 s:

    >>> group = pd.DataFrame({"trial": [1, 2, 3], "paused_before": [0.0, 0.0, 5.0]})
    >>> order = [[k, "main"] for k in (1, 2, 3)]
    >>> planned_onsets(group, order, {"stimulus_s": 2.0, "blank_s": 1.0, "anchor_demo_s": 3.0})
    [1.0, 4.0, 12.0]
    """
    blank = timing["blank_s"]
    shown = {
        int(row[0]): timing["anchor_demo_s"] if row[1] == "anchor_demo" else timing["stimulus_s"]
        for row in order
    }
    planned: list = []
    due = blank  # trial 1: one blank after the session began
    for number, paused in zip(group["trial"], group["paused_before"], strict=True):
        number = int(number)
        if number != len(planned) + 1:  # a trial missing before this one
            return planned + [None] * (len(group) - len(planned))
        due += paused
        planned.append(due)
        due += shown[number] + blank
    return planned


def key_log(group: pd.DataFrame, final: Mapping | None = None) -> pd.DataFrame:
    """The session's key log, as the lab's (``sourcedata/``), from the key events the page sent.

    The page sends with each trial every key-down from the trial's onset until a
    moment after its window closed (``events``), and the keys pressed on its screens
    since the previous trial's report (``screen_events``: instructions, a pause, the
    quit question); with the session's finish, those of its last screens (``final``:
    ``{"session_start": ..., "events": [...]}``, as ``sessions.final_events`` holds
    it). A key sent twice (one pressed just after a window closed comes with that
    trial and with the next report) is logged once, with the first.

    Columns: the lab's, :data:`~sbir_study.study.recorder.KEY_LOG_COLUMNS` (``key`` as
    PsychoPy names it, :func:`~.keys.browser_key_name`, or None when it has no name;
    ``onset_monotonic`` None, a browser cannot read the system's monotonic clock;
    ``session_time`` in seconds from the session's start, as ``onset`` is), then
    :data:`KEY_LOG_EXTRA_COLUMNS`: the browser's ``KeyboardEvent.code`` and ``.key``, the
    time on the page's clock (``performance.now()``, seconds; a reloaded page's starts
    again), the trial whose report carried it (None for the finish's) and the screen on
    view when it went down, as the page saw it (``trial``: a pair or its blank; for a key
    of a trial's window from a page that named no screen, ``trial`` too).
    """
    rows = []
    previous: set[tuple] = set()  # the keys the previous trial's report carried

    def identity(event) -> tuple:
        return str(event.get("code", "")), str(event.get("key", "")), event["t"]

    def add(events, start, trial, default_screen) -> None:
        for event in events:
            code, key, t = key_of = identity(event)
            if key_of in previous:
                continue
            rows.append(
                (
                    browser_key_name(code, key),
                    None,
                    None if start is None else t - start,
                    _plain(code),
                    _plain(key),
                    t,
                    trial,
                    event.get("screen") or default_screen,
                )
            )

    for trial in group.itertuples(index=False):
        start = trial.page_onset - trial.onset  # the session's start on this page's clock
        number = int(trial.trial)
        events = json.loads(trial.events)
        add(json.loads(trial.screen_events), start, number, "message")
        add(events, start, number, "trial")  # a page of an earlier version named no screen
        previous = {identity(event) for event in events}
    if final:
        add(final.get("events", ()), final.get("session_start"), None, "message")
    log = pd.DataFrame(rows, columns=[*KEY_LOG_COLUMNS, *KEY_LOG_EXTRA_COLUMNS])
    log["trial"] = log["trial"].astype("Int64")  # a whole number, or n/a for the finish's keys
    return log


def _plain(text: str) -> str | None:
    """A text a browser sent (a key's, an address parameter) as one TSV cell: control
    characters (a tab, a line break) as ``\\uXXXX``, none for an empty one."""
    if not text:
        return None
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text)


def _details(stored: str) -> dict[str, str | None]:
    """The details a browser participant gave, spelled as the lab session records them."""
    given = json.loads(stored)
    text = {name: None if given.get(name) is None else str(given[name]) for name in DETAILS}
    return {name: None for name in DETAILS} | check_details(text, tuple(DETAILS))


def _copy_lab(lab: Path, root: Path, taken: set[str]):
    """Copy a lab dataset's sessions into ``root``; its participants.tsv rows and descriptions."""
    table_path = lab / "participants.tsv"
    try:
        table = read_table(read_text(table_path), "\t")
    except InputError as error:
        raise InputError(f"{error}; --with-lab expects a dataset of sbir-study run") from None
    if "participant_id" not in table.columns:
        raise InputError(f"{table_path}: line 1: missing column 'participant_id'")
    for line, label in enumerate(table["participant_id"], start=2):
        if label in taken:
            raise InputError(
                f"{table_path}: line {line}: {label} is also an online participant; "
                "a label may be in one arm only"
            )
        folder = lab / label
        if not (folder / "beh").is_dir():
            raise InputError(f"{folder}: no beh folder; {table_path} line {line} lists it")
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                relative = path.relative_to(lab).as_posix()
                bids.write_text(root / relative, path.read_text(encoding="utf-8"))
        # The session's key log (and any line a crash cut off), byte for byte.
        for path in sorted((lab / "sourcedata" / label).rglob("*")):
            if path.is_file():
                copy = root / path.relative_to(lab)
                copy.parent.mkdir(parents=True, exist_ok=True)
                copy.write_bytes(path.read_bytes())  # flushed to disk when moved into place
        taken.add(label)
    try:
        descriptions = json.loads((lab / "participants.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        descriptions = {}
    return table.replace({"": None}), descriptions


def _beh_table(
    label: str, group: pd.DataFrame, order: Sequence[Sequence], timing: Mapping
) -> pd.DataFrame:
    """The lab's columns of the session's stored trials (what each holds: docs/formats.md)."""
    files = {int(row[0]): (row[5], row[6]) for row in order}
    columns: dict[str, list] = {}
    for column in SESSION_COLUMNS:
        if column == "participant":
            columns[column] = [label] * len(group)
        elif column == "sketch_file":
            columns[column] = [files[int(t)][0] for t in group["trial"]]
        elif column == "image_file":
            columns[column] = [files[int(t)][1] for t in group["trial"]]
        elif column == "onset_planned":
            columns[column] = planned_onsets(group, order, timing)
        elif column in group.columns:
            columns[column] = group[column].tolist()
        else:  # onset_monotonic: a browser cannot read the system's monotonic clock
            columns[column] = [None] * len(group)
    return pd.DataFrame(columns)


#: The session table's columns of whole numbers (pandas holds them as floats beside n/a).
_INTEGER_COLUMNS = frozenset({"trial", "rating", "anchor_rating", "dropped_frames", "n_presses"})


def _tsv(table: pd.DataFrame, integers: frozenset[str] = frozenset()) -> str:
    """A table as the lab's files write one: tab-separated, floats with 6 decimals, n/a;
    the numbers of the ``integers`` columns as whole numbers."""

    def cell(column: str, value: Any) -> str:
        if column in integers and value is not None and not pd.isna(value):
            value = int(value)
        return format_cell(value)

    lines = ["\t".join(table.columns)]
    lines += ["\t".join(map(cell, table.columns, row)) for row in table.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def _sidecar(
    study: Mapping, protocol: dict, session: Mapping, n_stored: int, *, keep: bool
) -> dict:
    """The session's sidecar; without ``keep``, neither the user agent nor the platform's ids,
    and the browser's major version only (the build narrows down whose browser it was)."""
    environment = json.loads(session["environment"])
    url = json.loads(session["url_parameters"])
    order = json.loads(session["trial_order"])
    refresh = environment.get("refresh_hz")
    low, high = protocol["timing"]["refresh_range_hz"]
    status = session["status"]
    # The protocol's scale, as the lab's sidecar records it: analyze reads the scale's
    # levels and which end is best from it.
    response = protocol["response"]
    scale = Scale(1, len(response["keys"]), response.get("best", "low"))
    sidecar = {
        **{c: bids.BEH_COLUMNS[c] for c in SESSION_COLUMNS},
        **bids.scale_sidecar(scale),
        "TaskName": study["task"],
        "Mode": "online",
        "Origin": "online",
        "Protocol": protocol,
        "ProtocolFile": study["protocol_file"],
        "StimulusSet": study["stimulus_set"],
        "StimulusSetDigest": study["stimulus_digest"],
        "Seed": int(session["seed"]),
        "TrialOrder": [row[:4] for row in order],
        "OnlineList": {
            "Subset": protocol["online"]["subset"],
            "List": session["list_index"] + 1,
            "Lists": protocol["online"]["lists"],
        },
        "SessionStart": _iso(session["created_at"]),
        "SessionEnd": _iso(session["finished_at"]) if session["finished_at"] else None,
        "SessionStatus": status,
        "TrialsRecorded": n_stored,
        "TrialsPlanned": int(session["n_trials"]),
        "Browser": environment.get("browser"),
        "BrowserVersion": environment.get("browser_version"),
        "OperatingSystem": environment.get("os"),
        "UserAgent": environment.get("user_agent"),
        "Mobile": environment.get("mobile"),
        "ScreenSize": [environment.get("screen_width"), environment.get("screen_height")],
        "WindowSize": [environment.get("window_width"), environment.get("window_height")],
        "DevicePixelRatio": environment.get("device_pixel_ratio"),
        "Fullscreen": environment.get("fullscreen"),
        "MeasuredRefreshRate": refresh,
        "TimingMode": "frames"
        if isinstance(refresh, int | float) and low <= refresh <= high
        else "clock",
        "KeyboardBackend": "browser KeyboardEvent.timeStamp (performance.now() clock); names "
        "from KeyboardEvent.code as in sbir_study.study.online.browser_keys",
        "ClockNote": "onset_monotonic is n/a: a browser has no access to the system's monotonic "
        "clock; onsets are frame times of requestAnimationFrame on performance.now(), from the "
        "key press that began the session. onset_planned is the lab's timeline computed by the "
        "server from the protocol's timing and each trial's paused_before (n/a after a trial "
        "that is not stored). The key log in sourcedata/ holds the key-downs the page sent "
        "with each trial (from its onset to just after its window closed).",
        "CrowdPlatform": {k: url[k] for k in ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID") if k in url}
        or None,
        "Software": environment.get("software"),
    }
    if not keep:
        del sidecar["UserAgent"], sidecar["CrowdPlatform"]
        sidecar["BrowserVersion"] = _major_version(sidecar["BrowserVersion"])
    return sidecar


def _major_version(version: object) -> str | None:
    """The first number of a browser's version as the page's browser check gives it
    (``120.0.6099`` gives ``120``); None for none.

    >>> _major_version("120.0.6099"), _major_version(""), _major_version(None)
    ('120', None, None)
    """
    major = str(version or "").split(".")[0].strip()
    return major or None


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(epoch))
