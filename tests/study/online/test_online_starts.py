"""Limits on starts: per client address, study-wide, and the platform's ids checked."""

from __future__ import annotations

import httpx
from hypothesis import given
from hypothesis import strategies as st

from sbir_study.study.online.start_limit import StartLimit
from tests.study.online.support import ADMIN_TOKEN, make_client, report, start, write_protocol

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
PROLIFIC = "5f8d0d55b54764421b7156c3"  # the form of a Prolific id: 24 hex digits


@given(
    per_minute=st.integers(1, 20),
    gaps=st.lists(st.floats(0.0, 30.0, allow_nan=False), min_size=1, max_size=80),
)
def test_a_client_starts_no_more_than_the_bucket_allows(per_minute, gaps):
    """Over any stretch of t seconds from the first request, at most per_minute + t *
    per_minute / 60 starts pass (the token bucket's bound); a client asking no faster than
    one start every 60/per_minute s is never refused."""
    now = [0.0]
    limit = StartLimit(per_minute, clock=lambda: now[0])
    passed = []
    for gap in gaps:
        now[0] += gap
        if limit.take("a"):
            passed.append(now[0])
    for i, first in enumerate(passed):
        for j in range(i, len(passed)):
            assert j - i + 1 <= per_minute + (passed[j] - first) * per_minute / 60.0 + 1e-9
    steady = StartLimit(per_minute, clock=lambda: now[0])
    for _ in range(3 * per_minute):
        now[0] += 60.0 / per_minute
        assert steady.take("b")


def test_a_start_loop_is_held_by_the_limit_and_the_cap(tmp_path, online_set, start_server):
    """A real serve: a loop of starts from one address gets starts_per_minute sessions, then
    429 with the protocol's words; the study-wide cap refuses the rest with study_full."""
    protocol = write_protocol(tmp_path, online={"starts_per_minute": 5, "max_sessions": 8})
    server = start_server(protocol, online_set, tmp_path / "data")
    with httpx.Client(base_url=server.url, timeout=10) as http:
        answers = [start(http, f"bot{k}")[0] for k in range(300)]
        status = http.get("/api/admin/status", headers=ADMIN).json()
    assert [a.status_code for a in answers] == [201] * 5 + [429] * 295
    assert answers[-1].json()["error"].startswith("Too many sessions were started")
    assert status["participants"]["started"] == 5


def test_the_study_takes_no_more_sessions_than_its_cap(tmp_path, online_set):
    client = make_client(tmp_path, online_set, online={"max_sessions": 3})
    assert [start(client, f"p{k}")[0].status_code for k in range(3)] == [201] * 3
    full = start(client, "p3")[0]
    assert full.status_code == 409 and full.json()["error"].startswith("The study is full")
    assert client.get("/api/admin/status", headers=ADMIN).json()["participants"]["started"] == 3


def test_starts_that_store_nothing_do_not_fill_the_lists(tmp_path, online_set):
    """raters_per_list counts a running session once it has stored a trial: idle starts
    leave the places to real participants."""
    client = make_client(tmp_path, online_set, online={"raters_per_list": 1})
    assert all(start(client, f"bot{k}")[0].status_code == 201 for k in range(20))
    answer, token = start(client, "real")
    state = answer.json()
    put = client.put(
        f"/api/sessions/{state['session_id']}/trials/1",
        json=report(state["trials"][0], 1, [("3", 0.2)]),
        headers={"Authorization": f"Bearer {token}"},
    )
    assert put.status_code == 201
    assert start(client, "late")[0].status_code == 409  # the one list's one place is taken


def _prolific_start(client, pid, study="STUDY1"):
    parameters = {"PROLIFIC_PID": pid, "STUDY_ID": study, "SESSION_ID": "s1"}
    return start(client, pid, url_parameters=parameters)[0]


def test_a_prolific_study_takes_only_prolific_ids_of_its_own_study(tmp_path, online_set):
    client = make_client(
        tmp_path, online_set, online={"platform": "prolific", "platform_study_id": "STUDY1"}
    )
    assert _prolific_start(client, PROLIFIC).status_code == 201
    for pid, study in [
        ("p01", "STUDY1"),  # not a Prolific id
        (PROLIFIC[:-1], "STUDY1"),
        (PROLIFIC.replace("5", "g"), "STUDY1"),
        ("6" + PROLIFIC[1:], "OTHER"),  # another study's address
        ("7" + PROLIFIC[1:], "STUDY1 "),
    ]:
        refused = _prolific_start(client, pid, study)
        assert refused.status_code == 422, (pid, study)
        assert refused.json()["error"].startswith("This page's address does not come from")
    # An id given as participant=, not as Prolific gives it, is no Prolific start either.
    assert start(client, "8" + PROLIFIC[1:])[0].status_code == 422
    assert client.get("/api/admin/status", headers=ADMIN).json()["participants"]["started"] == 1
