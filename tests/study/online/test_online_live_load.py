"""The status's live load (``load`` in ``api/admin/status`` and on ``/admin``) against what the
test sent: the requests it made, the server times the answers' ``Server-Timing`` headers gave,
their percentiles from Python's ``statistics.quantiles`` (method "inclusive": R's type 7, the
linear interpolation), and the queue lengths the test's pages reported."""

from __future__ import annotations

import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sbir_study.study.online.metrics import LoadWindow
from tests.study.online.support import ADMIN_TOKEN, make_client, report, start

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def percentile(values: list[float], q: int) -> float:
    """The q-th percentile, by statistics.quantiles (which needs two values in Python 3.11)."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def server_ms(answer) -> float:
    return float(answer.headers["server-timing"].split("dur=")[1])


def test_the_live_load_counts_what_the_pages_sent(tmp_path, online_set):
    client = make_client(tmp_path, online_set)
    times: list[float] = []  # the server's time of every participant request, from its answers

    def sent(answer):
        times.append(server_ms(answer))
        return answer

    # Not participant load: the page, its images, the experimenter's own view.
    assert client.get("/").status_code == 200
    assert client.get("/api/admin/status", headers=ADMIN).json()["load"]["requests"] == 0

    sent(client.get("/api/config"))
    sent(client.post("/api/participant-id", json={"participant": "p01"}))
    pages = {}
    for label in ("p01", "p02"):
        answer, token = start(client, label)
        sent(answer)
        pages[label] = (answer.json(), {"Authorization": f"Bearer {token}"})
    image = pages["p01"][0]["trials"][0]["image_url"]
    assert client.get(image).status_code == 200

    def put(label: str, number: int, queued=None):
        state, headers = pages[label]
        body = report(state["trials"][number - 1], number, [("3", 0.2)])
        if queued is not None:
            body["queued"] = queued
        path = f"/api/sessions/{state['session_id']}/trials/{number}"
        return sent(client.put(path, json=body, headers=headers))

    # p01's page fell behind (5 waiting), then caught up to 3; p02's never queued.
    assert put("p01", 1, queued=5).status_code == 201
    assert put("p01", 2, queued=4).status_code == 201
    # The same trial again with another count is the same trial, acknowledged as stored.
    again = put("p01", 2, queued=3)
    assert again.status_code == 200 and again.json()["duplicate"] is True
    assert put("p02", 1, queued=0).status_code == 201
    assert put("p02", 2).status_code == 201  # a page that does not report (an older one)
    # Refused: not a count of trials; a refused trial's report is not counted either.
    for bad in (-1, 100_001, "2", 2.0, True):
        refused = put("p02", 3, queued=bad)
        assert refused.status_code == 422 and "queued" in refused.json()["error"], refused.text
    off_scale = report(pages["p02"][0]["trials"][2], 3, [])
    off_scale.update(rating=99, queued=40)
    state, headers = pages["p02"]
    path = f"/api/sessions/{state['session_id']}/trials/3"
    assert sent(client.put(path, json=off_scale, headers=headers)).status_code == 422

    load = client.get("/api/admin/status", headers=ADMIN).json()["load"]
    assert load["requests"] == len(times) == 15
    # Both are rounded to 3 decimals: the rate's own rounding, and the span's, which moves
    # the rate by requests / span^2 per second (a slow machine's span is seconds long).
    span, n = load["span_s"], len(times)
    assert abs(load["requests_per_s"] - n / span) <= 0.0005 + n * 0.0005 / span**2 + 1e-9
    assert 0 < load["span_s"] <= load["window_s"] == 60.0
    # The header rounds each time to 0.01 ms: the percentiles agree to that.
    assert load["server_ms_p50"] == pytest.approx(percentile(times, 50), abs=0.01)
    assert load["server_ms_p99"] == pytest.approx(percentile(times, 99), abs=0.01)
    assert (load["pages_reporting"], load["trials_waiting"], load["trials_waiting_max"]) == (
        2,
        3 + 0,
        3,
    )
    stored = client.get("/api/admin/status", headers=ADMIN).json()["trials_stored"]
    assert stored == 4

    page = client.get("/admin", headers=ADMIN).text
    assert '<table id="load">' in page
    assert "<td>3\n(longest queue 3, 2 pages reporting)</td>" in page
    assert f"({len(times)} participant requests)" in page


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0.0, 200.0, allow_nan=False), st.floats(0.0, 5.0, allow_nan=False)),
        max_size=40,
    ),
    st.lists(
        st.tuples(st.floats(0.0, 200.0), st.sampled_from("abcd"), st.integers(0, 1000)),
        max_size=20,
    ),
    st.floats(1.0, 120.0),
)
def test_the_window_holds_exactly_the_last_minute(requests, reports, window_s):
    """Requests and reports at any times (in order): the view is what fell within the window."""
    clock = [0.0]
    load = LoadWindow(window_s=window_s, clock=lambda: clock[0])
    events = sorted(
        [(at, "request", taken) for at, taken in requests]
        + [(at, "report", (session, waiting)) for at, session, waiting in reports],
        key=lambda event: event[0],
    )
    for at, kind, what in events:
        clock[0] = at
        if kind == "request":
            load.request(what)
        else:
            load.page_queue(*what)
    clock[0] = now = max([at for at, _, _ in events], default=0.0) + 1.0
    view = load.view()

    since = now - window_s
    kept = [taken * 1000 for at, kind, taken in events if kind == "request" and at >= since]
    latest: dict[str, tuple[float, int]] = {}
    for at, kind, what in events:
        if kind == "report":
            latest[what[0]] = (at, what[1])
    waiting = [count for at, count in latest.values() if at >= since]
    assert view["requests"] == len(kept)
    assert view["span_s"] == pytest.approx(min(window_s, now), abs=1e-3)
    assert view["requests_per_s"] == pytest.approx(len(kept) / min(window_s, now), abs=1e-3)
    if kept:
        assert view["server_ms_p50"] == pytest.approx(percentile(kept, 50), abs=1e-3)
        assert view["server_ms_p99"] == pytest.approx(percentile(kept, 99), abs=1e-3)
    else:
        assert view["server_ms_p50"] is view["server_ms_p99"] is None
    assert view["pages_reporting"] == len(waiting)
    assert view["trials_waiting"] == sum(waiting)
    assert view["trials_waiting_max"] == max(waiting, default=0)
