"""Strict validation of a trial's report, in process: generated bodies around a valid one.

Every body is a valid page's report with one thing changed: a field of another JSON type,
a number that is not finite or extreme, a list past its length, unicode where names go,
times moved past the session's life or back over the trial before, a key event outside
its trial. Whatever the server answers, a 2xx stored what a valid page would send (checked
here against the body, by rules written out in this file), and a refusal named the field
and changed nothing the study holds (a dump of its tables before and after), but for the
refusal itself, kept for the experimenter.
"""

from __future__ import annotations

import json
import math
import secrets
import sqlite3
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.study.online.support import make_client, report, run_page, start

#: The session-life allowance and key grace of study/online/plausibility.py, restated: the
#: rules a stored trial is checked against below are this file's own.
ALLOWANCE_S = 60.0
KEY_GRACE_S = 0.1
TIMES = ("onset", "blank_onset", "next_onset")
FLOATS = (*TIMES, "session_start", "paused_before")
STRINGS = ("sketch_id", "image_id")
DAY_S = 86_400.0
#: The screens a key may come on, as experiment.js names them (``window.sbir.phase``).
SCREENS = ("trial", "instructions", "message", "pause", "quit", "saving")


@pytest.fixture(scope="module", params=["", "/rating"], ids=["at-root", "root-path"])
def client(request, tmp_path_factory, online_set):
    """The app served at the root, and under a path as ``serve --root-path /rating`` serves it
    behind a proxy: every check and every kept refusal holds under both."""
    return make_client(tmp_path_factory.mktemp("strict"), online_set, root_path=request.param)


def dump(db) -> dict[str, list]:
    """Every row of every table of the study, but the log of refusals (which a refusal adds
    to), in a fixed order."""
    with sqlite3.connect(db) as connection:
        names = [
            row[0]
            for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN "
                "('refusals', 'alembic_version') ORDER BY name"
            )
        ]
        return {
            name: sorted(map(repr, connection.execute(f"SELECT * FROM {name}").fetchall()))
            for name in names
        }


def refusals_of(db, session_id: str) -> list[tuple]:
    """The refusals kept for a session: (trial, status, reason), in the order they came."""
    with sqlite3.connect(db) as connection:
        return connection.execute(
            "SELECT trial, status, reason FROM refusals WHERE session_id = ? ORDER BY id",
            (session_id,),
        ).fetchall()


def other_type(kind: str):
    """JSON values of any type but ``kind`` (``number``, ``integer``, ``string``, ``list``)."""
    values = {
        "bool": st.booleans(),
        "string": st.text(max_size=5),
        "float": st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: x != int(x)),
        "integer": st.integers(-10, 10),
        "null": st.none(),
        "list": st.lists(st.integers(0, 9), max_size=3),
        "object": st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    }
    wrong = {
        "number": ("bool", "string", "null", "list", "object"),
        "integer": ("bool", "string", "float", "list", "object"),  # null is "no key"
        "string": ("bool", "float", "integer", "null", "list", "object"),
        "list": ("bool", "string", "float", "integer", "null", "object"),
    }[kind]
    return st.one_of(*(values[name] for name in wrong))


@st.composite
def changed(draw, valid: dict, before_end: float):
    """(body, the field a refusal must name or None when the body may be stored)."""
    body = json.loads(json.dumps(valid))
    kind = draw(
        st.sampled_from(
            [
                "wrong type",
                "not finite",
                "extreme",
                "huge list",
                "unicode",
                "unknown field",
                "missing field",
                "later",
                "backwards",
                "key outside",
                "valid shift",
                "screen key",
                "screen key after the onset",
                "unknown screen",
            ]
        )
    )
    if kind == "wrong type":
        name = draw(st.sampled_from([*FLOATS, *STRINGS, "rating", "frames", "events"]))
        shape = (
            "number"
            if name in FLOATS
            else "string"
            if name in STRINGS
            else "integer"
            if name == "rating"
            else "list"
        )
        body[name] = draw(other_type(shape))
        return body, name
    if kind == "not finite":
        name = draw(st.sampled_from([*FLOATS, "frames", "events"]))
        value = draw(st.sampled_from([math.nan, math.inf, -math.inf]))
        if name == "frames":
            body["frames"][draw(st.integers(0, 2))] = value
            return body, "frames"
        if name == "events":
            body["events"][0]["t"] = value
            return body, "events"
        body[name] = value
        return body, name
    if kind == "extreme":
        name = draw(st.sampled_from([*FLOATS, "rating"]))
        body[name] = (
            draw(
                st.one_of(
                    st.floats(allow_nan=False, allow_infinity=False), st.integers(-(2**70), 2**70)
                )
            )
            if name != "rating"
            else draw(st.integers(-(2**70), 2**70))
        )
        return body, None
    if kind == "huge list":
        if draw(st.booleans()):
            body["frames"] = [body["onset"]] * draw(st.integers(5001, 6000))
            return body, "frames"
        body["events"] = body["events"] * draw(st.integers(501, 600))
        return body, "events"
    if kind == "unicode":
        # Any code point, lone surrogates too (JSON can escape them; UTF-8 cannot hold them).
        text = draw(st.text(st.characters(exclude_categories=()), max_size=300))
        name = draw(st.sampled_from(["sketch_id", "image_id", "code", "key"]))
        if name in ("code", "key"):
            body["events"].append({"code": "", "key": "", "t": body["onset"] + 0.1, name: text})
        else:
            body[name] = text
        return body, None
    if kind == "unknown field":
        name = draw(st.text(st.characters(categories=["L"]), min_size=1, max_size=20))
        if name in body:
            name += "_extra"
        body[name] = 1
        return body, name
    if kind == "missing field":
        name = draw(st.sampled_from(sorted(body)))
        del body[name]
        # The page of an earlier version sends no screen keys: none, as a page sends for none.
        return body, None if name == "screen_events" else name
    if kind == "screen key":  # any time up to the pair's onset, on any screen the page has
        body["screen_events"].append(
            {
                "code": "Space",
                "key": " ",
                "t": draw(st.floats(0.0, body["onset"])),
                "screen": draw(st.sampled_from(SCREENS)),
            }
        )
        return body, None
    if kind == "screen key after the onset":
        body["screen_events"][0]["t"] = draw(st.floats(body["onset"] + 1e-3, body["onset"] + 1e6))
        return body, "screen_events"
    if kind == "unknown screen":
        body["screen_events"][0]["screen"] = draw(
            st.text(max_size=12).filter(lambda name: name not in SCREENS)
        )
        return body, "screen_events"
    if kind in ("later", "backwards", "valid shift"):
        # Every time of the page moved alike, as a page whose session began elsewhere.
        shift = {
            "later": draw(st.floats(2 * ALLOWANCE_S, 60 * DAY_S)),
            "backwards": draw(st.floats(-10.0, -0.001)),
            "valid shift": draw(st.floats(0.0, 5.0)),
        }[kind]
        moved = ["onset", "blank_onset", "next_onset"]
        for name in moved:
            body[name] += shift
        body["frames"] = [t + shift for t in body["frames"]]
        for event in [*body["events"], *body["screen_events"]]:
            event["t"] += shift
        if kind == "backwards" and body["onset"] >= 0 > min(e["t"] for e in body["screen_events"]):
            return body, "screen_events"  # a screen's key before the page's clock began
        return body, {"later": "onset", "backwards": "onset", "valid shift": None}[kind]
    # A key event outside its trial: before the pair, or long after its window.
    outside = draw(
        st.one_of(st.floats(-1e6, body["onset"] - 1e-3), st.floats(body["next_onset"] + 1.0, 1e6))
    )
    body["events"].append({"code": "KeyA", "key": "a", "t": outside})
    return body, "events"


def plausible(body: dict, previous_end: float, age_s: float) -> bool:
    """The rules a stored trial keeps, written out here: its times ordered, within the
    session's life, after the trial before; its keys within the trial."""
    start = body["session_start"]
    onset, blank, following = body["onset"], body["blank_onset"], body["next_onset"]
    window_end = max(following, blank + 0.4) + KEY_GRACE_S
    return (
        start <= onset <= blank <= following
        and following - start <= age_s + ALLOWANCE_S
        and onset - start >= previous_end - 1e-6
        and all(onset <= e["t"] <= window_end for e in body["events"])
        and all(0.0 <= e["t"] <= onset for e in body.get("screen_events", []))
    )


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(data=st.data())
def test_a_trial_is_stored_as_a_valid_page_sends_it_or_refused_changing_nothing(client, data):
    began = time.time()  # before the session: its age on the server is at most now - began
    answer, token = start(client, f"s{secrets.token_hex(6)}")
    state = answer.json()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    url = f"/api/sessions/{state['session_id']}/trials"
    rated = next(k for k, t in enumerate(state["trials"]) if t["phase"] != "anchor_demo")
    number = rated + 1  # the first rated trial, after an anchor demonstration
    first = report(state["trials"][rated - 1], number - 1)
    assert client.put(f"{url}/{number - 1}", json=first, headers=headers).status_code == 201
    previous_end = first["next_onset"] - first["session_start"]
    valid = report(
        state["trials"][rated],
        number,
        [("3", 0.2), ("5", 0.3)],
        screen_presses=[("p", 0.5, "pause"), ("4", 0.25, "pause")],
    )
    body, field = data.draw(changed(valid, previous_end), label="body")
    before, kept = dump(client.db), refusals_of(client.db, state["session_id"])
    put = client.put(f"{url}/{number}", content=json.dumps(body), headers=headers)
    after = dump(client.db)
    if put.status_code < 300:
        assert field is None, f"stored a body that changed {field}: {put.text}"
        assert put.status_code == 201
        with sqlite3.connect(client.db) as connection:
            row = connection.execute(
                "SELECT rating, typeof(rating), page_onset, onset, paused_before, events, "
                "sketch_id, image_id, screen_events FROM trials WHERE session_id = ? AND "
                "trial = ?",
                (state["session_id"], number),
            ).fetchone()
        rating, rating_type, page_onset, onset, paused, events, sketch, image, screens = row
        # As a valid page sends it: an integer rating (never true or "3"), the body's own
        # times and key events, the session's pair, and times that keep the rules.
        assert type(body["rating"]) in (int, type(None))
        assert (rating, rating_type) == (
            body["rating"],
            "null" if body["rating"] is None else "integer",
        )
        assert page_onset == body["onset"] and paused == body["paused_before"]
        assert onset == pytest.approx(body["onset"] - body["session_start"])
        assert json.loads(events) == body["events"]
        assert json.loads(screens) == body.get("screen_events", [])
        assert (sketch, image) == (valid["sketch_id"], valid["image_id"])
        assert plausible(body, previous_end, age_s=time.time() - began)
    else:
        assert 400 <= put.status_code < 500, put.text
        assert after == before, "a refused trial changed the study's tables"
        error = put.json()["error"]
        # ... but for the refusal itself, kept for the experimenter's status.
        assert refusals_of(client.db, state["session_id"]) == [
            *kept,
            (number, put.status_code, error),
        ]
        if field is not None and put.status_code == 422:
            named = error.split(":")[0].split("[")[0].split(".")[0]
            assert named in (field, "times") and field in error, (error, field)


def test_the_issues_three_trials_are_refused_naming_the_field(client):
    """A rating of true or "3", an onset 30 days after the session began, a trial whose times
    run back over the trial before: each refused (422), the field named, nothing stored."""
    answer, token = start(client, "issue26")
    state = answer.json()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    url = f"/api/sessions/{state['session_id']}/trials"
    rated = next(k for k, t in enumerate(state["trials"]) if t["phase"] != "anchor_demo")
    number = rated + 1
    first = report(state["trials"][rated - 1], number - 1)
    assert client.put(f"{url}/{number - 1}", json=first, headers=headers).status_code == 201
    valid = report(state["trials"][rated], number, [("3", 0.2)])
    later = {
        **valid,
        **{name: valid[name] + 30 * DAY_S for name in TIMES},
        "frames": [t + 30 * DAY_S for t in valid["frames"]],
        "events": [{**e, "t": e["t"] + 30 * DAY_S} for e in valid["events"]],
    }
    back = {
        **valid,
        **{name: valid[name] - 0.5 for name in TIMES},
        "frames": [t - 0.5 for t in valid["frames"]],
        "events": [{**e, "t": e["t"] - 0.5} for e in valid["events"]],
    }
    cases = [
        ({**valid, "rating": True}, "rating: Input should be a valid integer"),
        ({**valid, "rating": "3"}, "rating: Input should be a valid integer"),
        (later, "onset: expected at most"),
        (back, "onset: expected no earlier than the end of trial"),
    ]
    before = dump(client.db)
    for body, said in cases:
        put = client.put(f"{url}/{number}", content=json.dumps(body), headers=headers)
        assert put.status_code == 422 and put.json()["error"].startswith(said), put.text
    assert dump(client.db) == before
    # The valid trial is stored, and sent again (the page's retry queue) acknowledged again.
    for status in (201, 200):
        put = client.put(f"{url}/{number}", json=valid, headers=headers)
        assert put.status_code == status, put.text
    assert put.json()["duplicate"] is True


def test_a_reloaded_page_resumes_after_the_trials_it_still_holds():
    """After a reload the page's clock goes on from the server's last stored trial, or from a
    later one the page still holds unsent (its queue), so that its next trial does not begin
    before that one ended and is not refused for it (experiment.js resumedAt, in Node)."""
    held = [
        {"trial": 3, "body": {"next_onset": 17.5, "session_start": 5.0}},
        {"trial": 4, "body": {"next_onset": 4.0, "session_start": -9.25}},
    ]
    cases = "[resumedAt({resumed_at: 9.5}, HELD), resumedAt({resumed_at: 14.0}, []),"
    cases += " resumedAt({resumed_at: 20.0}, HELD), resumedAt({}, [])]"
    assert run_page(cases.replace("HELD", json.dumps(held))) == [13.25, 14.0, 20.0, 0]


SESSION_BODIES = {
    "an age as a string": ({"details": {"age": "34"}}, "details.age"),
    "an age as a number with a fraction": ({"details": {"age": 34.0}}, "details.age"),
    "mobile as a string": ({"environment": {"mobile": "false"}}, "environment.mobile"),
    "a width that is not whole": (
        {"environment": {"screen_width": 1920.5}},
        "environment.screen_width",
    ),
    "a refresh rate as a string": ({"environment": {"refresh_hz": "60"}}, "environment.refresh_hz"),
    "a refresh rate that is not finite": (
        {"environment": {"refresh_hz": math.inf}},
        "environment.refresh_hz",
    ),
    "a platform id as a number": (
        {"url_parameters": {"PROLIFIC_PID": 12345}},
        "url_parameters.PROLIFIC_PID",
    ),
    "a token as a number": ({"token": 10**40}, "token"),
}


@pytest.mark.parametrize("case", list(SESSION_BODIES))
def test_every_other_body_is_strict_too(client, case):
    """The bodies of a session's start, an id's check and a session's end: a value of another
    JSON type than its field's is refused (422, naming the field), nothing stored."""
    change, field = SESSION_BODIES[case]
    body = {"participant": f"c{secrets.token_hex(4)}", "token": secrets.token_urlsafe(32)}
    for name, value in change.items():
        body[name] = value
    before = dump(client.db)
    answer = client.post(
        "/api/sessions", content=json.dumps(body), headers={"Content-Type": "application/json"}
    )
    assert answer.status_code == 422 and answer.json()["error"].startswith(f"{field}: "), (
        answer.text
    )
    assert dump(client.db) == before


def test_an_ids_check_and_a_sessions_end_are_strict(client):
    checked = client.post("/api/participant-id", json={"participant": 12345})
    assert checked.status_code == 422 and checked.json()["error"].startswith("participant: ")
    answer, token = start(client, "strictend")
    session = answer.json()["session_id"]
    before = dump(client.db)
    for status in (True, 1, ["complete"]):
        ended = client.post(
            f"/api/sessions/{session}/finish",
            json={"status": status},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert ended.status_code == 422 and ended.json()["error"].startswith("status: ")
    assert dump(client.db) == before


def test_a_trial_refused_for_its_times_in_a_group_commit_spares_the_others(
    tmp_path_factory, online_set
):
    """The times are checked in the write's own transaction: queued in one group with valid
    trials of other sessions, a trial whose times run back over the trial before is refused
    (422, naming the field) before it writes, and the group's other trials are committed
    with it, in one commit."""
    import threading

    from sbir_study.study.online.service import ServiceError

    client = make_client(tmp_path_factory.mktemp("group"), online_set)
    study = client.study
    sessions = []
    for k in range(5):
        answer, token = start(client, f"g{k} with space")
        state = answer.json()
        rated = next(n for n, t in enumerate(state["trials"]) if t["phase"] != "anchor_demo")
        first = report(state["trials"][rated - 1], rated)
        assert study.store_trial(state["session_id"], token, rated, first)
        sessions.append((state["session_id"], token, rated + 1, state["trials"][rated]))
    outcomes: dict[int, object] = {}

    def send(k: int) -> None:
        session_id, token, number, trial = sessions[k]
        body = report(trial, number, [("2", 0.1), ("5", 0.9)])
        if k == 2:  # begins half a second before the end of the trial before
            body = {
                **body,
                **{name: body[name] - 1.5 for name in TIMES},
                "frames": [t - 1.5 for t in body["frames"]],
                "events": [{**e, "t": e["t"] - 1.5} for e in body["events"]],
            }
        try:
            outcomes[k] = study.store_trial(session_id, token, number, body)
        except ServiceError as error:
            outcomes[k] = error

    # Hold the writer on a first write, so that the five trials queue into one group.
    held, go = threading.Event(), threading.Event()
    holder = threading.Thread(target=study.writer.run, args=(lambda c: held.set() or go.wait(),))
    holder.start()
    assert held.wait(10)
    senders = [threading.Thread(target=send, args=(k,)) for k in range(5)]
    for sender in senders:
        sender.start()
    deadline = time.monotonic() + 10
    while study.writer._queue.qsize() < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    commits = study.writer.commits
    go.set()
    for thread in (holder, *senders):
        thread.join(10)
    assert study.writer.commits == commits + 2  # the holder's, then the five's
    refused = outcomes.pop(2)
    assert isinstance(refused, ServiceError) and refused.status == 422, refused
    assert str(refused).startswith("onset: expected no earlier than the end of trial")
    assert outcomes == {0: True, 1: True, 3: True, 4: True}
    with sqlite3.connect(client.db) as connection:
        stored = connection.execute(
            "SELECT session_id, trial FROM trials WHERE trial > 1"
        ).fetchall()
    wanted = {(s, n) for k, (s, _, n, _) in enumerate(sessions) if k != 2}
    assert wanted <= set(stored) and (sessions[2][0], sessions[2][2]) not in set(stored)
