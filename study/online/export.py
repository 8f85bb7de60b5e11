"""The online sessions of a database as the BIDS dataset that ``sbir-study analyze`` reads.

Each session becomes ``sub-<label>/beh/sub-<label>_task-<task>_beh.tsv`` with
exactly the lab session's columns (:data:`sbir_study.study.recorder.SESSION_COLUMNS`,
``n/a`` where a column does not apply to a browser: ``onset_monotonic``),
cells written as the lab recorder writes them, and a sidecar with the lab
session's entries plus the online ones: ``Mode`` (``online``), the browser,
screen and window size, the refresh estimate, the participant's list and the
URL parameters of a crowd platform. ``participants.tsv`` holds the
participant's id as the platform sent it (``source_id``, of which the label
was made) and the details the participant gave (age, sex, handedness), spelled
and described as the lab session records them (:mod:`sbir_study.study.participants`).

The dataset is written as every output is (:mod:`sbir_study.foundation.outputs`,
``docs/outputs.md``): into a temporary folder beside ``out``, moved into place
when complete with its output record; an existing ``out`` is refused unless
``overwrite``, and then only when it is an earlier export holding nothing but
the files that export wrote.
"""

from __future__ import annotations

import io
import json
import tempfile
import time
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from sbir_study.foundation import bids
from sbir_study.foundation.checks import InputError
from sbir_study.foundation.provenance import toolkit_version
from sbir_study.foundation.scale import Scale

from ..participants import DETAILS, check_details, details_description
from ..recorder import SESSION_COLUMNS, format_cell
from . import storage
from .scoring import resumed_from
from .storage import sessions, studies, trials

__all__ = ["ExportSummary", "export_online", "export_zip", "write_dataset"]

_GENERATED_BY = "sbir-study export-online"

_README = """Ratings of sketch/image pairs recorded online with sbir-study (the rating
study of Eitz et al. 2011, Sec. 2.3, run in a browser by sbir-study serve and
exported by sbir-study export-online). One _beh.tsv per participant: one row per
presented pair, columns as in the lab sessions, described in the _beh.json
sidecar, which also holds the protocol, the stimulus-set digest, the seed, the
trial order, the participant's list of pairs and the browser and screen.
"""


#: participants.tsv columns beside participant_id, with their sidecar descriptions.
@dataclass(frozen=True)
class ExportSummary:
    """What :func:`export_online` wrote."""

    out: Path
    study: str
    participants: int
    trials: int
    complete: int
    skipped_empty: int


def export_online(
    url: str,
    out: str | Path,
    *,
    study: int | None = None,
    overwrite: bool = False,
    with_lab: Sequence[str | Path] = (),
) -> ExportSummary:
    """Export the sessions of one study in the database at ``url`` to the BIDS folder ``out``.

    ``study`` is the study's id (``sbir-study export-online`` lists them
    when the database holds several). ``with_lab`` are BIDS datasets of lab
    sessions (``sbir-study run``) copied in beside the online ones, so that
    one dataset holds both arms of a study (they are read, never changed; a
    label in both is refused). Raises
    :class:`~sbir_study.foundation.checks.InputError` for a database without a study, an
    ambiguous study, or an ``out`` that may not be replaced.
    """
    from sbir_study.foundation.outputs import output_folder

    out = Path(out)
    engine = storage.open_database(url)
    try:
        study_id = _choose_study(engine, study)
        with output_folder(out, "export-online", overwrite=overwrite, inputs=with_lab) as folder:
            summary = write_dataset(engine, study_id, folder, with_lab=with_lab)
    finally:
        engine.dispose()
    return ExportSummary(
        out,
        summary.study,
        summary.participants,
        summary.trials,
        summary.complete,
        summary.skipped_empty,
    )


def export_zip(engine: Engine, study_id: int) -> bytes:
    """The study's BIDS dataset as a zip archive (for the admin export route)."""
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
    engine: Engine, study_id: int, root: Path, *, with_lab: Sequence[str | Path] = ()
) -> ExportSummary:
    """Write the study's sessions as a BIDS dataset into the empty folder ``root``."""
    with storage.reading(engine) as connection:
        study = (
            connection.execute(sa.select(studies).where(studies.c.id == study_id)).mappings().one()
        )
        rows = (
            connection.execute(
                sa.select(sessions)
                .where(sessions.c.study_id == study_id)
                .order_by(sessions.c.participant)
            )
            .mappings()
            .all()
        )
        stored = pd.read_sql(
            sa.select(trials)
            .join(sessions, sessions.c.id == trials.c.session_id)
            .where(sessions.c.study_id == study_id)
            .order_by(trials.c.session_id, trials.c.trial),
            connection,
        )
    protocol = json.loads(study["protocol_json"])
    task = study["task"]
    by_session = {key: group for key, group in stored.groupby("session_id", sort=False)}
    people, n_trials, complete, empty = [], 0, 0, 0
    for session in rows:
        group = by_session.get(session["id"])
        if group is None or group.empty:
            empty += 1
            continue
        label = bids.check_label(session["participant"])
        path = bids.beh_path(root, label, task)
        table = _beh_table(label, group)
        _write(path, table)
        sidecar = _sidecar(study, protocol, session, len(group))
        # As the lab's sidecar says a session was resumed: the trials a reloaded page went on
        # from, each with the time it reached the server.
        resumed = resumed_from(group[["trial", "page_onset", "onset"]].itertuples(index=False))
        if resumed:
            at = group.set_index("trial")["received_at"]
            sidecar["Resumed"] = [{"At": _iso(at[t]), "FromTrial": t} for t in resumed]
        _write_json(path.with_suffix(".json"), sidecar)
        people.append(
            {
                "participant_id": f"sub-{label}",
                "source_id": session["source_id"],
                **_details(session["details"]),
            }
        )
        n_trials += len(group)
        complete += session["status"] == "complete"
    description = {
        "Name": f"sbir-study online sessions: {study['name']}",
        "BIDSVersion": bids.BIDS_VERSION,
        "DatasetType": "raw",
        "GeneratedBy": [
            {"Name": "sbir-study", "Version": toolkit_version(), "Description": _GENERATED_BY}
        ],
    }
    _write_json(root / "dataset_description.json", description)
    _write_text(root / "README", _README)
    participants = pd.DataFrame(people, columns=["participant_id", "source_id", *DETAILS])
    described = {
        "participant_id": {"Description": "Participant label (sub-<label>)."},
        "source_id": {
            "Description": "The participant's id as the page's address gave it (a recruitment "
            "platform's id, e.g. Prolific's PROLIFIC_PID), of which the label is made "
            "(sbir_study.foundation.checks.participant_label)."
        },
        **details_description(DETAILS),
    }
    for lab in with_lab:
        table, descriptions = _copy_lab(Path(lab), root, set(participants["participant_id"]))
        participants = pd.concat([participants, table], ignore_index=True)
        described = {**descriptions, **described}
        people.extend(table.to_dict("records"))
    _write_text(
        root / "participants.tsv",
        participants.to_csv(sep="\t", index=False, na_rep="n/a", lineterminator="\n"),
    )
    _write_json(root / "participants.json", described)
    return ExportSummary(root, study["name"], len(people), n_trials, complete, empty)


def _details(stored: str) -> dict[str, str | None]:
    """The details a browser participant gave, spelled as the lab session records them."""
    given = json.loads(stored)
    text = {name: None if given.get(name) is None else str(given[name]) for name in DETAILS}
    return {name: None for name in DETAILS} | check_details(text, tuple(DETAILS))


def _copy_lab(lab: Path, root: Path, taken: set[str]):
    """Copy a lab dataset's sessions into ``root``; its participants.tsv rows and descriptions."""
    table_path = lab / "participants.tsv"
    try:
        table = pd.read_csv(table_path, sep="\t", dtype=str, keep_default_na=False)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        raise InputError(
            f"{table_path}: cannot be read as a BIDS participants table "
            f"({error}); --with-lab expects a dataset of sbir-study run"
        ) from None
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
                _write_text(root / relative, path.read_text(encoding="utf-8"))
        taken.add(label)
    try:
        descriptions = json.loads((lab / "participants.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        descriptions = {}
    return table.replace({"": None}), descriptions


def _beh_table(label: str, group: pd.DataFrame) -> pd.DataFrame:
    columns = {}
    for column in SESSION_COLUMNS:
        if column == "participant":
            columns[column] = [label] * len(group)
        elif column in group.columns:
            columns[column] = group[column].tolist()
        else:  # a lab column a browser does not have (onset_monotonic) or does not record yet
            columns[column] = [None] * len(group)
    return pd.DataFrame(columns)


def _write(path: Path, table: pd.DataFrame) -> None:
    lines = ["\t".join(table.columns)]
    integer_columns = {"trial", "rating", "anchor_rating", "dropped_frames", "n_presses"}
    for row in table.itertuples(index=False):
        cells = []
        for column, value in zip(table.columns, row, strict=True):
            if column in integer_columns and value is not None and not pd.isna(value):
                value = int(value)
            cells.append(format_cell(value))
        lines.append("\t".join(cells))
    _write_text(path, "\n".join(lines) + "\n")


def _sidecar(study: Mapping, protocol: dict, session: Mapping, n_stored: int) -> dict:
    environment = json.loads(session["environment"])
    url = json.loads(session["url_parameters"])
    order = json.loads(session["trial_order"])
    refresh = environment.get("refresh_hz")
    low, high = protocol["timing"]["refresh_range_hz"]
    status = session["status"]
    # The protocol's scale, as the lab's sidecar records it: without it, analyze took a
    # high-is-best session for one whose low end is best, and the levels were the paper's 1..7.
    response = protocol["response"]
    scale = Scale(1, len(response["keys"]), response.get("best", "low"))
    return {
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
        "from KeyboardEvent.code as in sbir_study.study.online.keys",
        "ClockNote": "onset_monotonic is n/a: a browser has no access to the system's monotonic "
        "clock; onsets are frame times of requestAnimationFrame on performance.now().",
        "CrowdPlatform": {k: url[k] for k in ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID") if k in url}
        or None,
        "Software": environment.get("software"),
    }


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(epoch))


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))  # flushed to disk with the rest when moved into place


def _write_json(path: Path, content) -> None:
    _write_text(path, json.dumps(content, indent=2) + "\n")
