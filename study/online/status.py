"""The experimenter's status page: who started, finished or dropped out, and how well timed."""

from __future__ import annotations

import html

__all__ = ["status_page"]


def status_page(status: dict) -> str:
    """The status (:meth:`~.service.OnlineStudy.status`) as a small HTML page.

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
        f"<tr><td>{entry['list'] + 1}</td><td>{entry['pairs']}</td><td>{entry['complete']}</td>"
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
