"""The server's HTTP contract, in process: sessions, idempotent trials, refusals, admin."""

from __future__ import annotations

import base64
import io
import json
import re
import secrets
import shutil
import sqlite3
import zipfile

import httpx
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sbir_study.study.online.server import ServeSettings, build_app
from tests.study.online.support import (
    ADMIN_TOKEN,
    make_client,
    report,
    start,
    write_protocol,
)


def counts(client) -> tuple[int, int]:
    with sqlite3.connect(client.db) as connection:
        return (
            connection.execute("SELECT COUNT(*) FROM sessions").fetchone()[0],
            connection.execute("SELECT COUNT(*) FROM trials").fetchone()[0],
        )


def refusals(caplog) -> list[str]:
    """The refusals the app wrote to its log (logger ``sbir_study.study.online``)."""
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == "sbir_study.study.online" and record.levelname == "WARNING"
    ]


def rows(client, sql: str):
    with sqlite3.connect(client.db) as connection:
        return connection.execute(sql).fetchall()


@pytest.fixture
def client(tmp_path, online_set):
    return make_client(tmp_path, online_set, online={"completion_code": "OK123"})


@pytest.fixture(params=["", "/rating"], ids=["at-root", "root-path"])
def served(request, tmp_path, online_set):
    """The app at the root, and under a path as ``serve --root-path /rating`` serves it; its
    ``root`` is the path's prefix."""
    served = make_client(tmp_path, online_set, root_path=request.param)
    served.root = request.param
    return served


def test_a_session_over_http_from_start_to_completion(client, server_clock):
    answer, token = start(client)
    assert answer.status_code == 201
    state = answer.json()
    assert state["next_trial"] == 1 and state["stored"] == 0 and "token" not in state
    # Asked again with the same label and token (an answer lost): the same session.
    again = client.post("/api/sessions", json={"participant": "p01", "token": token})
    assert again.status_code == 200 and again.json()["session_id"] == state["session_id"]
    # Another browser under the same label: refused, nothing created.
    assert start(client, "p01")[0].status_code == 409
    session = state["session_id"]
    headers = {"Authorization": f"Bearer {token}"}
    trials = state["trials"]
    url = f"/api/sessions/{session}/trials"
    first = report(trials[0], 1, [("3", 0.2)])
    assert client.put(f"{url}/1", json=first, headers=headers).status_code == 201
    # A retry of the same trial: acknowledged, not stored twice.
    assert client.put(f"{url}/1", json=first, headers=headers).json()["duplicate"] is True
    # The same trial with other data: refused, the stored row unchanged.
    changed = client.put(f"{url}/1", json=report(trials[0], 1, [("5", 0.3)]), headers=headers)
    assert changed.status_code == 409 and "nothing was changed" in changed.json()["error"]
    assert rows(client, "SELECT n_presses, presses FROM trials") == [(1, "3@0.2000")]
    early = client.post(
        f"/api/sessions/{session}/finish", json={"status": "complete"}, headers=headers
    )
    assert early.status_code == 409 and "1 of" in early.json()["error"]
    for number, trial in enumerate(trials[1:], start=2):
        presses = [("2", 0.1), ("6", 0.5)] if trial["phase"] != "anchor_demo" else []
        server_clock[0] += 1.0  # each trial 1 s, sent as it ends (support.report)
        answer = client.put(f"{url}/{number}", json=report(trial, number, presses), headers=headers)
        assert answer.status_code == 201, answer.json()
    resumed = client.get(f"/api/sessions/{session}", headers=headers).json()
    assert resumed["next_trial"] == len(trials) + 1
    done = client.post(
        f"/api/sessions/{session}/finish", json={"status": "complete"}, headers=headers
    ).json()
    assert done == {
        "status": "complete",
        "stored": len(trials),
        "completion": {"code": "OK123", "url": None},
    }
    late = client.put(f"{url}/1", json=report(trials[0], 1, [("4", 0.2)]), headers=headers)
    assert late.status_code == 409
    ratings = rows(client, "SELECT phase, rating, rt FROM trials WHERE trial > 1")
    assert {(phase, rating) for phase, rating, _ in ratings} <= {
        ("anchor_demo", None),
        ("main", 6),
        ("anchor_repeat", 6),
    }
    assert all(rt == pytest.approx(0.5) for phase, _, rt in ratings if phase != "anchor_demo")


def _other_session(client):
    _, token_a = start(client, "alice")
    answer_b, token_b = start(client, "bob")
    return answer_b.json(), token_a, token_b


BAD_TRIALS = {
    "a rating outside the scale": (lambda body: body.update(rating=9), 1, 422, "rating"),
    "a rating of zero": (lambda body: body.update(rating=0), 1, 422, "rating"),
    "a rating the keys do not give": (
        lambda body: body.update(rating=2),
        1,
        422,
        "the key events give",
    ),
    "a trial index past the end": (lambda body: None, 999, 422, "trial: expected 1.."),
    "a trial index of 0": (lambda body: None, 0, 422, "trial"),
    "another trial's pair": (lambda body: body.update(image_id="zz"), 1, 422, "shows"),
    "times out of order": (lambda body: body.update(blank_onset=1.0), 1, 422, "times"),
    "a time that is not finite": (lambda body: body.update(onset=float("inf")), 1, 422, "onset"),
    "an unknown field": (lambda body: body.update(extra=1), 1, 422, "extra"),
    "a missing field": (lambda body: body.pop("events"), 1, 422, "events"),
    "too many events": (
        lambda body: body.update(events=[{"code": "", "key": "x", "t": 1.0}] * 501),
        1,
        422,
        "events",
    ),
    "a key name too long": (
        lambda body: body["events"].append({"code": "D" * 40, "key": "1", "t": 6.2}),
        1,
        422,
        "code",
    ),
}


@pytest.mark.parametrize("case", list(BAD_TRIALS))
def test_bad_trials_are_refused_with_a_clear_message_and_nothing_stored(served, case, caplog):
    client = served
    change, number, status, words = BAD_TRIALS[case]
    state, _, token_b = _other_session(client)
    body = report(state["trials"][0], 1, [("3", 0.2)])
    change(body)
    before = counts(client)
    caplog.clear()
    path = f"/api/sessions/{state['session_id']}/trials/{number}"
    answer = client.put(
        path,
        content=json.dumps(body),
        headers={"Authorization": f"Bearer {token_b}", "Content-Type": "application/json"},
    )
    assert answer.status_code == status, answer.text
    assert words in answer.json()["error"]
    assert "\n" not in answer.json()["error"]
    assert counts(client) == before
    # The experimenter sees it too: one warning naming the request and the same reason.
    line = f"refused PUT {client.root}{path} ({status}): {answer.json()['error']}"
    assert refusals(caplog) == [line]
    assert answer.headers["cache-control"] == "no-store"


def test_a_token_writes_only_its_own_session(client):
    state, token_a, token_b = _other_session(client)
    body = report(state["trials"][0], 1, [("3", 0.2)])
    url = f"/api/sessions/{state['session_id']}/trials/1"
    assert (
        client.put(url, json=body, headers={"Authorization": f"Bearer {token_a}"}).status_code
        == 403
    )
    assert client.put(url, json=body).status_code == 401
    assert (
        client.get(
            f"/api/sessions/{state['session_id']}", headers={"Authorization": f"Bearer {token_a}"}
        ).status_code
        == 403
    )
    assert (
        client.put(
            "/api/sessions/nosuchsession/trials/1",
            json=body,
            headers={"Authorization": f"Bearer {token_b}"},
        ).status_code
        == 404
    )
    assert counts(client) == (2, 0)


@pytest.mark.parametrize(
    "path",
    [
        "../manifest.csv",
        "SHA256SUMS",
        "manifest.csv",
        "%2e%2e/%2e%2e/etc/passwd",
        "/etc/passwd",
        "sketches/../../set/manifest.csv",
        "sketches/nope.png",
    ],
)
def test_only_the_sets_images_are_served(client, path):
    answer = client.get(f"/stimuli/{path}")
    assert answer.status_code == 404
    assert answer.json()["error"]  # "no stimulus ... in the set", or no such page at all


def test_images_are_served_with_their_checksum(client, online_set):
    state = start(client)[0].json()
    trial = state["trials"][0]
    answer = client.get("/" + trial["sketch_url"])
    assert answer.status_code == 200
    assert (
        answer.content == (online_set / trial["sketch_url"].removeprefix("stimuli/")).read_bytes()
    )
    checksums = dict(
        line.split("  ")[::-1] for line in (online_set / "SHA256SUMS").read_text().splitlines()
    )
    assert (
        answer.headers["etag"].strip('"') == checksums[trial["sketch_url"].removeprefix("stimuli/")]
    )


def test_oversized_bodies_are_refused_before_they_are_read(served, caplog):
    client, root = served, served.root
    state, _, token = _other_session(client)
    caplog.clear()
    url = f"/api/sessions/{state['session_id']}/trials/1"
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    declared = client.put(url, content=b"{" + b" " * 70_000 + b"}", headers=headers)
    assert declared.status_code == 413 and "65536 bytes" in declared.json()["error"]

    def chunks():  # no Content-Length: counted as it streams
        for _ in range(100):
            yield b" " * 1000

    streamed = client.put(url, content=chunks(), headers=headers)
    assert streamed.status_code == 413
    assert client.post("/api/sessions", content=b"x" * 100_000).status_code == 413
    assert counts(client) == (2, 0)
    limit = "(413): request body: expected at most 65536 bytes"
    assert refusals(caplog) == [
        f"refused PUT {root}{url} {limit}",
        f"refused PUT {root}{url} {limit}",
        f"refused POST {root}/api/sessions {limit}",
    ]


def test_an_image_changed_on_disk_after_the_check_is_not_served(tmp_path, online_set, caplog):
    copy = tmp_path / "set"
    shutil.copytree(online_set, copy)
    client = make_client(tmp_path, copy)
    trial = start(client)[0].json()["trials"][0]
    name = trial["sketch_url"].removeprefix("stimuli/")
    (copy / name).write_bytes((copy / name).read_bytes() + b"\0")
    caplog.clear()
    answer = client.get("/" + trial["sketch_url"])
    assert answer.status_code == 500
    assert answer.json()["error"] == (
        f"stimulus {name!r} changed on disk since the set was checked; it is not served"
    )
    assert [(r.name, r.levelname) for r in caplog.records] == [("sbir_study.study.online", "ERROR")]
    assert name in caplog.records[0].getMessage()


def test_serve_writes_every_refusal_to_its_log(tmp_path, online_set, start_server):
    """A real `serve`: a participant's refused trial reaches the experimenter's terminal."""
    protocol = write_protocol(tmp_path)
    server = start_server(protocol, online_set, tmp_path / "data")
    with httpx.Client(base_url=server.url, timeout=10) as http:
        state, token = start(http, "p01")
        state = state.json()
        path = f"/api/sessions/{state['session_id']}/trials/1"
        body = report(state["trials"][0], 1, [("3", 0.2)], rating=9)
        answer = http.put(path, json=body, headers={"Authorization": f"Bearer {token}"})
        assert answer.status_code == 422
        good = report(state["trials"][0], 1, [("3", 0.2)])
        assert http.put(path, json=good, headers={"Authorization": f"Bearer {token}"}).is_success
    line = f"refused PUT {path} (422): {answer.json()['error']}"
    log = server.log.read_text()
    assert [row for row in log.splitlines() if "refused" in row] == [f"WARNING:  {line}"], log


@pytest.mark.parametrize("source_id", ["", "   ", "a\tb", "a" * 65])
def test_ids_no_label_can_be_made_of_are_refused(client, source_id):
    answer, _ = start(client, source_id)
    assert answer.status_code == 422
    assert counts(client) == (0, 0)
    checked = client.post("/api/participant-id", json={"participant": source_id})
    assert checked.status_code == 422
    said = checked.json()["error"]
    assert "cannot be used" in said and "contact the researcher" in said


def test_a_server_that_knew_no_session_reads_each_order_back_as_it_was(client):
    """A restarted server knows no session: at its first request it reads the session's
    stored order back, whatever its seed would draw now. The page is sent the same
    trials, a trial is scored against the same pair, and the orders share their trials'
    keys (one of each in the process)."""
    study = client.study
    labels = ("p 1", "p 2", "p 3")
    started = [start(client, label) for label in labels]
    ids = [answer.json()["session_id"] for answer, _ in started]
    orders = [study._sessions[session]["order"] for session in ids]

    def resumed():
        return [
            client.post("/api/sessions", json={"participant": label, "token": token}).text
            for label, (_, token) in zip(labels, started, strict=True)
        ]

    before = resumed()
    # Session 3's seed no longer draws its order (as after a change to the set or the
    # protocol): it is still the order it was given.
    with sqlite3.connect(client.db) as connection:
        connection.execute("UPDATE sessions SET seed = seed + 1 WHERE id = ?", (ids[2],))
    study._sessions.clear()  # as after a restart
    assert resumed() == before
    restored = [study._sessions[session]["order"] for session in ids]
    assert restored == orders and all(a is not b for a, b in zip(restored, orders, strict=True))
    # Every order read back is made of the keys the process keeps, one object of each.
    assert {id(key) for key in restored[0].keys} == {id(key) for key in restored[1].keys}
    assert all(key is study._keys[key] for order in restored for key in order.keys)

    study._sessions.clear()
    for number, (_, token) in enumerate(started[1:], start=2):
        trial = json.loads(before[number - 1])["trials"][0]
        stored = client.put(
            f"/api/sessions/{ids[number - 1]}/trials/1",
            json=report(trial, 1, [("2", 0.3)]),
            headers={"Authorization": f"Bearer {token}"},
        )
        assert stored.status_code == 201
    assert rows(
        client,
        "SELECT s.source_id, t.sketch_id, t.image_id, t.phase FROM trials t "
        "JOIN sessions s ON s.id = t.session_id ORDER BY s.source_id",
    ) == [
        (label, trial["sketch_id"], trial["image_id"], trial["phase"])
        for label, trial in ((labels[k], json.loads(before[k])["trials"][0]) for k in (1, 2))
    ]


def test_platform_ids_get_labels_by_the_rule_and_are_kept_as_given(client):
    """Qualtrics-style ids with punctuation: the rule's labels, two ids never one label."""
    from sbir_study.foundation.checks import participant_label

    ids = ["R_2xQ9a", "R-2xQ9a", "5f8d0e2a9b1c3d4e5f6a7b8c", "jo smith.2"]
    labels: dict[str, str] = {}
    for source_id in ids:
        assert client.post("/api/participant-id", json={"participant": source_id}).json() == {
            "participant": source_id,
            "accepted": True,
        }
        answer, token = start(client, source_id)
        assert answer.status_code == 201, answer.text
        state = answer.json()
        expected = participant_label(source_id, set(labels.values()))
        assert (state["participant"], state["source_id"]) == (expected, source_id)
        labels[source_id] = expected
        # Asked again (an answer lost): the same session, the same label.
        again = client.post("/api/sessions", json={"participant": source_id, "token": token})
        assert again.status_code == 200 and again.json()["participant"] == expected
    assert labels["R_2xQ9a"] == "R2xQ9a" and labels["R-2xQ9a"].startswith("R2xQ9ax")
    stored = dict(rows(client, "SELECT source_id, participant FROM sessions"))
    assert stored == labels


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_any_report_is_stored_as_scored_or_refused_with_4xx(client, data):
    """Generated reports (times, keys, claims) never crash the server: either stored, with the
    lab rule's rating, or refused with a 4xx and nothing stored."""
    label = f"h{secrets.token_hex(6)}"
    answer, token = start(client, label)
    state = answer.json()
    number = data.draw(st.integers(1, len(state["trials"])), label="trial")
    trial = state["trials"][number - 1]
    times = st.floats(-1.0, 20.0, allow_nan=False)
    onset = data.draw(times, label="onset")
    presses = data.draw(
        st.lists(
            st.tuples(
                st.sampled_from(["1", "4", "7", "8", "a"]), st.floats(-1.0, 2.0, allow_nan=False)
            )
        ),
        label="keys",
    )
    body = report(trial, number, presses)
    body["onset"] = onset
    body["frames"][0] = onset
    if data.draw(st.booleans(), label="wrong claim"):
        body["rating"] = data.draw(st.one_of(st.none(), st.integers(-3, 12)))
    before = counts(client)[1]
    put = client.put(
        f"/api/sessions/{state['session_id']}/trials/{number}",
        json=body,
        headers={"Authorization": f"Bearer {token}"},
    )
    assert put.status_code in (201, 409, 422), put.text
    if put.status_code == 201:
        stored = rows(
            client, f"SELECT rating FROM trials WHERE session_id = '{state['session_id']}'"
        )
        assert stored == [(body["rating"],)]
        assert counts(client)[1] == before + 1
    else:
        assert counts(client)[1] == before


def test_admin_routes_need_the_admin_token(client):
    assert client.get("/api/admin/status").status_code == 401
    assert (
        client.get("/api/admin/status", headers={"Authorization": "Bearer wrong"}).status_code
        == 401
    )
    assert client.get("/admin").status_code == 401
    basic = base64.b64encode(f"lab:{ADMIN_TOKEN}".encode()).decode()
    page = client.get("/admin", headers={"Authorization": f"Basic {basic}"})
    assert page.status_code == 200 and "Participants" in page.text
    state, token = start(client)
    trial = state.json()["trials"][0]
    client.put(
        f"/api/sessions/{state.json()['session_id']}/trials/1",
        json=report(trial, 1),
        headers={"Authorization": f"Bearer {token}"},
    )
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    status = client.get("/api/admin/status", headers=admin).json()
    assert status["participants"]["started"] == 1 and status["trials_stored"] == 1
    assert status["timing_error_ms"]["median"] == pytest.approx(0.0, abs=1e-6)
    archive = zipfile.ZipFile(
        io.BytesIO(client.get("/api/admin/export.zip", headers=admin).content)
    )
    assert "sub-p01/beh/sub-p01_task-sbirtest_beh.tsv" in archive.namelist()


def test_lists_are_filled_in_turn_and_dropouts_release_theirs(tmp_path, online_set, server_clock):
    clock = server_clock
    client = make_client(
        tmp_path,
        online_set,
        online={"subset": "pairs", "lists": 2, "dropout_after_s": 0.5, "raters_per_list": 2},
    )

    def begun(label):
        """A participant who starts and stores the first trial (which holds the place)."""
        answer, token = start(client, label)
        state = answer.json()
        put = client.put(
            f"/api/sessions/{state['session_id']}/trials/1",
            json=report(state["trials"][0], 1, [("3", 0.2)]),
            headers={"Authorization": f"Bearer {token}"},
        )
        assert put.status_code == 201, put.text
        return state["list"]

    # Starts are spread over the lists (numbered from 1, as the status page numbers them) ...
    assert [start(client, f"idle{k}")[0].json()["list"] for k in range(3)] == [1, 2, 1]
    # ... but hold no place until they store a trial: the study takes four more.
    assert [begun(f"p{k}") for k in range(4)] == [2, 1, 2, 1]
    assert start(client, "p5")[0].status_code == 409  # full: two participants per list
    clock[0] += 0.49  # silent, but not yet for dropout_after_s: the lists are still taken
    assert start(client, "p5")[0].status_code == 409
    clock[0] += 0.02  # everyone silent for longer: dropped out, their lists free again
    assert start(client, "p6")[0].json()["list"] == 1
    status = client.get("/api/admin/status", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert status.json()["participants"]["dropped_out"] == 7
    # One numbering everywhere: the session's state, the status JSON, its page, the sidecar.
    assert [entry["list"] for entry in status.json()["lists"]] == [1, 2]
    page = client.get("/admin", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}).text
    lists = re.search(r"<h2>Lists</h2>.*?</table>", page, re.S).group(0)
    assert re.findall(r"<tr><td>(\d+)</td>", lists) == ["1", "2"]


def test_pairs_of_a_list_make_the_trial_list(tmp_path, online_set):
    """Each list's participant sees the anchors and that list's pairs, in the trial order
    build_trials gives for the recorded seed."""
    from sbir_study.study.online.assignment import list_manifest, split_lists
    from sbir_study.study.trials import build_trials

    client = make_client(tmp_path, online_set, online={"subset": "sketches", "lists": 2})
    study = client.study
    manifest = study.stimulus_set.manifest
    for label in ("a1", "a2"):
        state = start(client, label)[0].json()
        seed = rows(client, f"SELECT seed FROM sessions WHERE participant = '{label}'")[0][0]
        expected = build_trials(
            study.protocol,
            list_manifest(manifest, split_lists(study.protocol, manifest), state["list"] - 1),
            seed,
        )
        got = [(t["trial"], t["phase"], t["sketch_id"], t["image_id"]) for t in state["trials"]]
        assert got == list(
            expected[["trial", "phase", "sketch_id", "image_id"]].itertuples(index=False, name=None)
        )
        main = {t["sketch_id"] for t in state["trials"] if t["phase"] == "main"}
        assert len(main) == 1  # one whole sketch of the two


# --- the set's check kept between starts (study/online/setcheck.py) ---
def _settings(tmp_path, stimuli):
    (tmp_path / "data").mkdir(exist_ok=True)
    return ServeSettings(
        protocol=str(write_protocol(tmp_path)),
        stimuli=str(stimuli),
        db=f"sqlite:///{tmp_path / 'data' / 'online.sqlite3'}",
        admin_token=ADMIN_TOKEN,
        data=str(tmp_path / "data"),
    )


def _check(settings):
    """(set, max aspect, whether the kept check was reused), as build_app gets them."""
    from sbir_study.study.online.setcheck import checked_set
    from sbir_study.study.protocol import load_protocol

    checked = checked_set(
        settings.stimuli, load_protocol(settings.protocol, online=True), settings.data
    )
    return checked.stimulus_set, checked.max_aspect, checked.reused


def test_the_sets_check_is_reused_when_nothing_changed(tmp_path, online_set, monkeypatch):
    from PIL import Image

    from sbir_study.stimuli import validate

    copy = tmp_path / "set"
    shutil.copytree(online_set, copy)
    settings = _settings(tmp_path, copy)
    first, aspect, reused = _check(settings)
    assert not reused and (tmp_path / "data" / "stimulus-check.json").is_file()
    # The aspect the page is sized by, measured here from the files (PIL), not by setcheck.
    names = set(first.manifest["sketch_path"]) | set(first.manifest["image_path"])
    sizes = [Image.open(copy / name).size for name in names]
    assert aspect == round(max(h / w for w, h in sizes), 4)

    def no_check(*args, **kwargs):
        raise AssertionError("the set was checked again")

    monkeypatch.setattr(validate, "validate_set", no_check)  # what load_set runs
    again, aspect_again, reused = _check(settings)
    assert reused and aspect_again == aspect
    assert again.digest == first.digest and again.manifest.equals(first.manifest)
    _, study = build_app(settings)
    assert study.browser_config()["display"]["max_aspect"] == aspect


def test_a_changed_file_is_checked_again_and_a_bad_one_refused(tmp_path, online_set):
    import os

    from sbir_study.foundation.checks import InputError

    copy = tmp_path / "set"
    shutil.copytree(online_set, copy)
    settings = _settings(tmp_path, copy)
    first = _check(settings)[0]
    name = first.manifest["image_path"].iloc[0]
    target = copy / name
    status = target.stat()
    os.utime(target, ns=(status.st_atime_ns, status.st_mtime_ns + 10**9))  # touched only
    assert _check(settings)[2] is False  # checked again, and still good
    assert _check(settings)[2] is True  # that check is kept
    target.write_bytes(target.read_bytes()[:-8] + b"\0" * 8)  # corrupted, same size
    with pytest.raises(InputError, match=re.escape(name)):  # checked again: refused
        _check(settings)
    # Rewritten with its size and times put back, the kept check cannot see it; it is
    # still never served (each image's SHA-256 is checked when first read).
    original = (online_set / name).read_bytes()
    target.write_bytes(original)
    os.utime(target, ns=(status.st_atime_ns, status.st_mtime_ns))
    assert _check(settings)[2] is False  # the kept check was of the touched file
    target.write_bytes(original[:-8] + b"\0" * 8)
    os.utime(target, ns=(status.st_atime_ns, status.st_mtime_ns))
    client = TestClient(build_app(settings)[0])
    answer = client.get(f"/stimuli/{name}")
    assert answer.status_code == 500 and "changed on disk" in answer.json()["error"]


_SETTLED = """
import gc, sys, time, weakref
from sbir_study.study.online.server import collect_now_and_then, set_aside

class Node:
    pass

set_aside()
collect_now_and_then(every_s=0.2)
frozen, threshold = gc.get_freeze_count(), gc.get_threshold()
gone, nodes = [], []
for _ in range(3):
    node = Node()
    node.self = node  # a cycle: only the cyclic collector frees it
    weakref.finalize(node, gone.append, 1)
    nodes.append(node)
del node
gc.collect(1)  # the nodes, alive, go to the oldest generation
nodes.clear()  # garbage there: only a full collection frees it
gc.collect(1)
collected = len(gone)
time.sleep(1.0)
print(frozen, threshold[2], collected, len(gone))
"""


def test_a_running_server_sets_what_it_built_aside_and_collects_fully_on_a_clock():
    """serve's processes (server.set_aside, collect_now_and_then): what it built is frozen
    out of the collector's walks, full collections no longer come by themselves under load,
    and a thread makes one on a clock, so cyclic garbage that outlived the younger
    collections is still freed."""
    import subprocess
    import sys

    answer = subprocess.run(
        [sys.executable, "-c", _SETTLED], capture_output=True, text=True, timeout=120, check=True
    )
    frozen, threshold, before, after = map(int, answer.stdout.split())
    assert frozen > 10_000 and threshold == 1_000_000
    assert (before, after) == (0, 3)


def test_serve_builds_with_the_collector_paused_and_turns_it_back_on_as_it_was():
    """serve builds with the cyclic collector off (server.collector_paused): on again after
    the build, also when the build fails, and left off where it was off."""
    import gc

    from sbir_study.study.online.server import collector_paused

    assert gc.isenabled()
    try:
        with collector_paused():
            assert not gc.isenabled()
            raise ValueError("a protocol that does not load")
    except ValueError:
        pass
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.parametrize("where", ["port in use", "not this machine"])
def test_serve_refuses_an_address_it_cannot_listen_on_in_one_line(tmp_path, online_set, where):
    """A port another program holds, or a host that is not this machine's: exit 2 and one
    line naming --host and --port, before the set is checked or the data folder made (not
    gunicorn's five seconds of retries and a dozen lines)."""
    import socket

    from tests.helpers import run_cli

    protocol = write_protocol(tmp_path)
    data = tmp_path / "data folder"
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        # 192.0.2.1 is TEST-NET-1 (RFC 5737): never an address of this machine.
        host = "127.0.0.1" if where == "port in use" else "192.0.2.1"
        answer = run_cli(
            "serve",
            "--protocol",
            str(protocol),
            "--stimuli",
            str(online_set),
            "--data",
            str(data),
            "--host",
            host,
            "--port",
            str(port),
        )
    assert answer.returncode == 2, answer.stderr
    lines = answer.stderr.strip().splitlines()
    assert len(lines) == 1 and f"--host {host} --port {port}: cannot listen there" in lines[0]
    assert not data.exists()
