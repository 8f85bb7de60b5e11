"""The experimenter's status: who started, finished or dropped out, and how well timed.

:func:`study_status` makes the view (``GET api/admin/status``) from what the
database holds, :func:`status_page` its page (``GET admin``); both pure, the
reading is :meth:`~.service.OnlineStudy.status`'s.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

import numpy as np

from ..protocol import Protocol, Timing

__all__ = ["status_page", "study_status"]


def study_status(
    protocol: Protocol,
    study_id: int,
    *,
    list_pairs: Sequence[int],
    sessions: Iterable[tuple[str, int, bool, int]],
    durations: Sequence[tuple[str, float, float]],
    trials_stored: int,
) -> dict:
    """Participants started, complete, quit, dropped out and running; trials; timing errors.

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

    Examples
    --------
    >>> view = study_status(Protocol(), 1, list_pairs=[8], trials_stored=2,
    ...     sessions=[("running", 0, False, 1), ("running", 0, True, 2), ("complete", 0, False, 1)],
    ...     durations=[("main", 2.004, 0.998), ("anchor_demo", 3.0, 1.0)])
    >>> view["participants"]
    {'started': 4, 'complete': 1, 'incomplete': 0, 'dropped_out': 2, 'running': 1}
    >>> view["lists"], view["timing_error_ms"]["stimulus_max"]
    ([{'list': 1, 'complete': 1, 'running': 1, 'pairs': 8}], 4.0)
    """
    counts = {"started": 0, "complete": 0, "incomplete": 0, "dropped_out": 0, "running": 0}
    per_list = {k: {"complete": 0, "running": 0} for k in range(len(list_pairs))}
    for status, index, silent, count in sessions:
        counts["started"] += count
        if status == "running":
            key = "dropped_out" if silent else "running"
            counts[key] += count
            if not silent:
                per_list.setdefault(index, {"complete": 0, "running": 0})["running"] += count
        else:
            counts[status] += count
            if status == "complete":
                per_list.setdefault(index, {"complete": 0, "running": 0})["complete"] += count
    return {
        "study": protocol.name,
        "study_id": study_id,
        "participants": counts,
        "trials_stored": int(trials_stored),
        # Numbered from 1, as the page, the session's state and the export's sidecar number them.
        "lists": [
            {"list": k + 1, **v, "pairs": list_pairs[k]}
            for k, v in sorted(per_list.items())
            if k < len(list_pairs)
        ],
        "timing_error_ms": _timing_errors(durations, protocol.timing),
    }


def _timing_errors(rows: Sequence, timing: Timing) -> dict:
    """Median and max |measured - planned| of the stimulus and blank durations (ms)."""
    if not rows:
        return {
            "n_trials": 0,
            "stimulus_median": None,
            "stimulus_max": None,
            "blank_median": None,
            "blank_max": None,
            "median": None,
        }
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


def status_page(status: dict) -> str:
    """The status (:func:`study_status`) as a small HTML page.

    Examples
    --------
    >>> page = status_page({"study": "demo", "study_id": 1, "trials_stored": 0, "lists": [],
    ...     "participants": {"started": 0, "complete": 0, "incomplete": 0, "dropped_out": 0,
    ...                      "running": 0}, "timing_error_ms": {"n_trials": 0, "median": None}})
    >>> "<h1>demo" in page
    True
    """
    people = status["participants"]
    timing = status["timing_error_ms"]

    def ms(value) -> str:
        return "n/a" if value is None else f"{value:.1f} ms"

    rows = "".join(
        f"<tr><th>{html.escape(label)}</th><td>{people[key]}</td></tr>"
        for key, label in (
            ("started", "started"),
            ("running", "running now"),
            ("complete", "complete"),
            ("incomplete", "ended early (quit)"),
            ("dropped_out", "dropped out (no contact)"),
        )
    )
    lists = "".join(
        f"<tr><td>{entry['list']}</td><td>{entry['pairs']}</td><td>{entry['complete']}</td>"
        f"<td>{entry['running']}</td></tr>"
        for entry in status["lists"]
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="30">
<title>{html.escape(status["study"])}: status</title>
<style>body{{font-family:sans-serif;margin:2em}}td,th{{padding:.2em 1em;text-align:left}}</style>
</head><body>
<h1>{html.escape(status["study"])} (study {status["study_id"]})</h1>
<h2>Participants</h2><table>{rows}</table>
<h2>Trials</h2><table>
<tr><th>stored</th><td>{status["trials_stored"]}</td></tr>
<tr><th>median timing error</th><td>{ms(timing.get("median"))} (stimulus and blank
durations against the protocol, over the last {timing.get("n_trials", 0)} trials)</td></tr>
<tr><th>stimulus duration error</th><td>median {ms(timing.get("stimulus_median"))},
max {ms(timing.get("stimulus_max"))}</td></tr>
<tr><th>blank duration error</th><td>median {ms(timing.get("blank_median"))},
max {ms(timing.get("blank_max"))}</td></tr>
</table>
<h2>Lists</h2><table><tr><th>list</th><th>pairs</th><th>complete</th><th>running</th></tr>
{lists}</table>
<p>Refreshes every 30 s. JSON: <code>api/admin/status</code>; the BIDS dataset so far:
<code>api/admin/export.zip</code> (or <code>sbir-study export-online</code>).</p>
</body></html>
"""
