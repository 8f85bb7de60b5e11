"""A deployment that keeps its guarantees: under a root path, against forged log lines, odd
path numbers, a weak or exposed admin token, guessed logins, other sites' pages, a page
refused in a loop, and clients that never finish a request."""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time

import httpx
import pytest
import uvicorn

from sbir_study.foundation.checks import InputError
from sbir_study.study.online import deps, storage
from sbir_study.study.online.request_deadline import REQUEST_DEADLINE_S, RequestDeadlineProtocol
from sbir_study.study.online.server import admin_token
from tests.helpers import run_cli
from tests.study.online.support import (
    ADMIN_TOKEN,
    free_port,
    make_client,
    report,
    start,
    write_protocol,
)

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
LOGGER = "sbir_study.study.online"


def warnings_of(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelname == "WARNING"]


def test_serve_under_a_root_path_keeps_its_headers_log_refusals_and_load(
    tmp_path, online_set, start_server
):
    """A real ``serve --root-path /rating``, asked as a proxy that takes the prefix off asks
    it: a refused trial is answered ``no-store``, logged with the path the client asked
    for, kept for the status, and counted in the load."""
    protocol = write_protocol(tmp_path)
    server = start_server(protocol, online_set, tmp_path / "data", root_path="/rating")
    with httpx.Client(base_url=server.url, timeout=10) as http:
        answer, token = start(http, "p01")
        state = answer.json()
        assert answer.headers["cache-control"] == "no-store"
        path = f"/api/sessions/{state['session_id']}/trials/1"
        bad = report(state["trials"][0], 1, [("3", 0.2)], rating=9)
        refused = http.put(path, json=bad, headers={"Authorization": f"Bearer {token}"})
        assert refused.status_code == 422
        assert refused.headers["cache-control"] == "no-store"
        status = http.get("/api/admin/status", headers=ADMIN).json()
    assert status["trials_refused"] == 1
    assert status["load"]["requests"] >= 2
    line = f"refused PUT /rating{path} (422): {refused.json()['error']}"
    log = server.log.read_text()
    assert [row for row in log.splitlines() if "refused" in row] == [f"WARNING:  {line}"], log


def test_what_a_client_sent_is_quoted_in_the_log_and_forges_no_line(tmp_path, online_set, caplog):
    client = make_client(tmp_path, online_set)
    caplog.clear()
    answer = client.post("/api/sessions%0AWARNING:%20forged", content=b"{}")
    assert answer.status_code in (404, 405)
    logged = warnings_of(caplog)
    assert len(logged) == 1 and "\n" not in logged[0], logged
    assert "'/api/sessions\\nWARNING: forged'" in logged[0]


@pytest.mark.parametrize("number", ["²", "١", "Ⅻ", "-1", "1.0", "+1", " 1", "1" * 10, ""])
def test_a_trial_number_of_other_digits_is_refused_not_an_error(tmp_path, online_set, number):
    """``str.isdigit`` takes superscripts and other scripts' digits, which ``int`` refuses
    or reads as digits the page never sends."""
    client = make_client(tmp_path, online_set)
    answer, token = start(client, "p01")
    state = answer.json()
    put = client.put(
        f"/api/sessions/{state['session_id']}/trials/{number}",
        json=report(state["trials"][0], 1, [("3", 0.2)]),
        headers={"Authorization": f"Bearer {token}"},
    )
    assert 400 <= put.status_code < 500, put.text
    if number:
        assert put.json()["error"].startswith("path.trial: "), put.text
    assert client.get("/api/admin/status", headers=ADMIN).json()["trials_stored"] == 0


def _token_file(tmp_path, text: str, mode: int):
    path = tmp_path / "token"
    path.write_text(text + "\n", encoding="utf-8")
    os.chmod(path, mode)
    return path


@pytest.mark.parametrize(
    ("text", "mode", "words"),
    [
        ("0123456789abcdef" * 2, 0o644, "(mode 0644); expected mode 0600 (chmod 600"),
        ("0123456789abcdef" * 2, 0o640, "mode 0640"),
        ("0123456789abcdef", 0o600, "got 16 characters"),
        ("Zm9vYmFyYmF6cXV4cXV1", 0o600, "got 20 characters"),
    ],
)
def test_an_admin_token_file_short_or_readable_by_others_is_refused(tmp_path, text, mode, words):
    path = _token_file(tmp_path, text, mode)
    with pytest.raises(InputError, match="expected") as refused:
        admin_token(tmp_path, path)
    assert str(refused.value).startswith(f"{path}: ") and words in str(refused.value)


def test_an_admin_token_of_128_bits_in_a_private_file_is_taken(tmp_path, monkeypatch):
    monkeypatch.delenv("SBIR_STUDY_ADMIN_TOKEN", raising=False)
    for text in ("0123456789abcdef" * 2, "Zm9vYmFyYmF6cXV4cXV1eA"):  # hex 16 B, base64 16 B
        path = _token_file(tmp_path, text, 0o600)
        assert admin_token(tmp_path, path) == (text, str(path))
    # The one serve writes into an empty data folder passes its own checks when read again.
    data = tmp_path / "data"
    data.mkdir()
    made, where = admin_token(data, None)
    assert admin_token(data, None) == (made, where)
    assert os.stat(where).st_mode & 0o777 == 0o600


def test_serve_refuses_an_exposed_admin_token_file_in_one_line(tmp_path, online_set):
    path = _token_file(tmp_path, "0123456789abcdef" * 2, 0o644)
    answer = run_cli(
        "serve",
        *("--protocol", str(write_protocol(tmp_path))),
        *("--stimuli", str(online_set), "--data", str(tmp_path / "data")),
        *("--admin-token-file", str(path), "--port", str(free_port())),
    )
    assert answer.returncode == 2, answer.stderr
    assert answer.stderr.strip().splitlines() == [
        f"sbir-study: error: {path}: readable by others (mode 0644); expected mode 0600 "
        f"(chmod 600 {path})"
    ]


def test_a_failed_admin_login_is_logged_and_slowed(tmp_path, online_set, caplog):
    client = make_client(tmp_path, online_set)
    caplog.clear()
    began = time.monotonic()
    wrong = client.get("/api/admin/status", headers={"Authorization": "Bearer guess"})
    took = time.monotonic() - began
    assert wrong.status_code == 401
    assert took >= deps.FAILED_LOGIN_DELAY_S
    assert "failed admin login from testclient to '/api/admin/status'" in warnings_of(caplog)
    # The right token, and no token at all (the browser's first request), wait for nothing.
    began = time.monotonic()
    assert client.get("/api/admin/status", headers=ADMIN).status_code == 200
    assert client.get("/admin").status_code == 401
    assert time.monotonic() - began < deps.FAILED_LOGIN_DELAY_S


@pytest.mark.parametrize(
    ("fetch", "method", "allowed"),
    [
        ({}, "GET", True),  # no browser: a script, curl
        ({"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"}, "GET", True),
        ({"Sec-Fetch-Site": "none", "Sec-Fetch-Mode": "navigate"}, "GET", True),  # typed in
        # A link followed from another site's page: its answer goes to the experimenter alone.
        ({"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}, "GET", True),
        ({"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"}, "GET", False),
        ({"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors"}, "GET", False),
        ({"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "cors"}, "GET", False),
        (
            {
                "Sec-Fetch-Site": "cross-site",
                "Sec-Fetch-Mode": "navigate",
                "Sec-Fetch-Dest": "iframe",
            },
            "GET",
            False,
        ),
    ],
)
def test_admin_routes_refuse_what_another_sites_page_asks(
    tmp_path, online_set, fetch, method, allowed
):
    client = make_client(tmp_path, online_set)
    for path in ("/api/admin/status", "/admin/participants.csv"):
        answer = client.request(method, path, headers={**ADMIN, **fetch})
        if allowed:
            assert answer.status_code == 200, answer.text
        else:
            assert answer.status_code == 403
            assert answer.json()["error"] == (
                "the experimenter's routes refuse requests from other sites"
            )


def test_refusals_past_the_cap_cost_no_write(tmp_path, online_set, monkeypatch):
    """A page refused in a loop: past the cap the process writes nothing and asks the
    database nothing, and counts what it did not write in the load."""
    monkeypatch.setattr(storage, "MAX_REFUSALS_PER_SESSION", 3)
    client = make_client(tmp_path, online_set)
    answer, token = start(client, "alice")
    state = answer.json()
    asked = []
    record = client.study.record_refusal
    monkeypatch.setattr(client.study, "record_refusal", lambda *a: asked.append(a) or record(*a))
    bad = json.dumps({**report(state["trials"][0], 1), "rating": "3"})
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    for _ in range(7):
        put = client.put(
            f"/api/sessions/{state['session_id']}/trials/1", content=bad, headers=headers
        )
        assert put.status_code == 422
    assert len(asked) == 3
    status = client.get("/api/admin/status", headers=ADMIN).json()
    assert status["trials_refused"] == 3
    assert status["load"]["refusals_not_written"] == 4


def test_a_process_learns_the_cap_from_the_database(tmp_path, online_set, monkeypatch):
    """Refusals kept by another process (or before a restart) count too: once the database
    says the session is full, this process asks it no more."""
    monkeypatch.setattr(storage, "MAX_REFUSALS_PER_SESSION", 2)
    client = make_client(tmp_path, online_set)
    answer, token = start(client, "alice")
    state = answer.json()
    for trial in (1, 2):  # as another worker would have kept them
        assert client.study.record_refusal(state["session_id"], token, trial, 422, "x") == "kept"
    asked = []
    record = client.study.record_refusal
    monkeypatch.setattr(client.study, "record_refusal", lambda *a: asked.append(a) or record(*a))
    bad = json.dumps({**report(state["trials"][0], 1), "rating": "3"})
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    for _ in range(3):
        client.put(f"/api/sessions/{state['session_id']}/trials/1", content=bad, headers=headers)
    assert len(asked) == 1


class _ShortDeadline(RequestDeadlineProtocol):
    deadline_s = 0.5


@pytest.fixture
def deadline_server():
    """uvicorn with the request deadline (0.5 s) in a thread, serving a one-line app."""

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, http=_ShortDeadline, log_level="critical", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listening]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    yield listening.getsockname()
    server.should_exit = True
    thread.join(10)


def _closed_within(connection: socket.socket, seconds: float) -> bool:
    """Whether the server closes ``connection`` within ``seconds`` (reading until it does)."""
    connection.settimeout(seconds)
    try:
        while connection.recv(1024):
            pass
    except TimeoutError:
        return False
    return True


def test_a_connection_that_sends_no_whole_request_is_closed(deadline_server, caplog):
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        silent = socket.create_connection(deadline_server)
        trickling = socket.create_connection(deadline_server)
        trickling.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # and never the blank line
        slow_body = socket.create_connection(deadline_server)
        slow_body.sendall(b"PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
        for connection in (silent, trickling, slow_body):
            with connection:
                assert _closed_within(connection, 5.0)
    assert sum("no whole request in 0.5 s" in m for m in caplog.messages) == 3


def test_a_kept_alive_connection_is_timed_per_request_not_for_its_life(deadline_server):
    with httpx.Client(base_url=f"http://{deadline_server[0]}:{deadline_server[1]}") as http:
        for _ in range(4):  # over the deadline in all, each well within it
            assert http.put("/", content=b"x" * 100).text == "ok"
            time.sleep(0.2)  # the pause a page takes between trials, within keep-alive


def test_serve_closes_a_connection_that_sends_nothing(tmp_path, online_set, start_server):
    """A real ``serve``: a client that connects and sends nothing holds no connection past
    the deadline (uvicorn alone would keep it open for good)."""
    server = start_server(write_protocol(tmp_path), online_set, tmp_path / "data")
    with socket.create_connection(("127.0.0.1", server.port)) as silent:
        began = time.monotonic()
        assert _closed_within(silent, REQUEST_DEADLINE_S + 10.0)
    assert time.monotonic() - began >= REQUEST_DEADLINE_S - 1.0
    assert "no whole request in 20 s" in server.log.read_text()


def test_uvicorn_takes_serves_limits():
    """Each worker's uvicorn is configured with the deadline's protocol and a connection
    limit (uvicorn's own defaults have neither)."""
    from sbir_study.study.online.server import CONNECTIONS_PER_WORKER, uvicorn_settings

    config = uvicorn.Config(None, **uvicorn_settings(proxy_headers=False, root_path="/rating"))
    assert config.http is RequestDeadlineProtocol
    assert config.limit_concurrency == CONNECTIONS_PER_WORKER >= 1000
