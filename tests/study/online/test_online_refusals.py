"""What the online page says before and without its settings, and the server's refusals a
participant reads, in the protocol's words ([texts]); and the refused trials the experimenter
is shown (status, participant table) and the participant is told of (the error page).

The page (index.html) is filled in by the server with the protocol's language, title, the
line a browser without JavaScript shows, and what the page says when it cannot load the
study's settings; the refusals of POST api/participant-id and api/sessions that the page
shows are the protocol's texts. Read back with Python's own HTML parser, so that a text
holding <, > or quotes is shown as written and cannot become markup.
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
from fastapi.testclient import TestClient

from sbir_study.foundation.checks import MAX_SOURCE_ID_LENGTH
from sbir_study.study.online import storage
from sbir_study.study.online.server import ServeSettings, build_app
from sbir_study.study.protocol import load_protocol
from sbir_study.study.texts import fill
from tests.study.online.support import ADMIN_TOKEN, make_client, report, run_page, start

ROOT = Path(__file__).resolve().parents[3]
GERMAN = ROOT / "protocols" / "example_de.toml"


class _Page(HTMLParser):
    """The html element's lang, the title, the body's data- attributes, the noscript text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lang = self.title = self.noscript = None
        self.body: dict[str, str] = {}
        self._in: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "html":
            self.lang = attrs.get("lang")
        elif tag == "body":
            self.body = {k: v for k, v in attrs.items() if k.startswith("data-")}
        elif tag in ("title", "noscript"):
            self._in = tag

    def handle_endtag(self, tag):
        self._in = None

    def handle_data(self, data):
        if self._in:
            setattr(self, self._in, (getattr(self, self._in) or "") + data)


def _page(client) -> _Page:
    answer = client.get("/")
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/html; charset=utf-8"
    assert "$" not in answer.text  # every placeholder of index.html filled
    page = _Page()
    page.feed(answer.text)
    return page


def _german_client(tmp_path, online_set) -> TestClient:
    app, _ = build_app(
        ServeSettings(
            protocol=str(GERMAN),
            stimuli=str(online_set),
            db=f"sqlite:///{tmp_path / 'de.sqlite3'}",
            admin_token=ADMIN_TOKEN,
            max_body=65_536,
        )
    )
    return TestClient(app)


def test_the_german_page_and_refusals_are_in_german(tmp_path, online_set):
    texts = load_protocol(GERMAN).texts
    client = _german_client(tmp_path, online_set)
    page = _page(client)
    assert (page.lang, page.title) == ("de", "Bewertungsstudie")
    assert page.noscript == "Diese Studie benötigt JavaScript."
    assert page.body == {
        "data-went-wrong": texts.went_wrong,
        "data-settings-failed": texts.settings_failed,
    }
    assert "geladen" in page.body["data-settings-failed"]
    checked = client.post("/api/participant-id", json={"participant": "a" * 65})
    assert checked.status_code == 422
    said = checked.json()["error"]
    assert said == fill(texts.bad_participant_id, max_length=MAX_SOURCE_ID_LENGTH)
    assert "Teilnehmerkennung" in said and f"1 bis {MAX_SOURCE_ID_LENGTH} Zeichen" in said
    answer, _ = start(client, "a\tb")  # a control character: no id
    assert (answer.status_code, answer.json()["error"]) == (422, said)
    assert start(client, "p1")[0].status_code == 201
    again, _ = start(client, "p1")  # another browser: another token
    assert (again.status_code, again.json()["error"]) == (409, texts.already_started)
    assert "anderen Browser" in texts.already_started


def test_a_full_study_and_marked_up_texts_are_said_as_written(tmp_path, online_set):
    own = {
        "needs_javascript": 'Bitte <b>"JS"</b> & mehr',
        "page_title": "T<i>x</i>",
        "went_wrong": "Fehler <{error}> 'neu laden'",
        "settings_failed": "a & b",
        "study_full": "Voll <script>x</script>",
        "language": "de-AT",
    }
    client = make_client(tmp_path, online_set, texts=own, online={"max_sessions": 1})
    page = _page(client)
    assert (page.lang, page.title, page.noscript) == (
        "de-AT",
        own["page_title"],
        own["needs_javascript"],
    )
    assert page.body == {
        "data-went-wrong": own["went_wrong"],
        "data-settings-failed": own["settings_failed"],
    }
    assert start(client, "p1")[0].status_code == 201
    full, _ = start(client, "p2")
    assert (full.status_code, full.json()["error"]) == (409, own["study_full"])


def test_the_english_defaults_say_what_they_said(tmp_path, online_set):
    client = make_client(tmp_path, online_set)
    page = _page(client)
    assert (page.lang, page.title, page.noscript) == (
        "en",
        "Rating study",
        "This study needs JavaScript.",
    )
    said = client.post("/api/participant-id", json={"participant": " "}).json()["error"]
    assert said == (
        "The participant id in this page's address cannot be used (it must be 1 to 64 "
        "characters, letters, digits or punctuation). Please open the study again from the "
        "link you were given, or contact the researcher."
    )


@pytest.mark.browser
def test_a_page_that_cannot_load_its_settings_says_so_in_the_protocols_words(
    online_set, tmp_path, start_server, browser
):
    from tests.study.online.browser_participant import Participant
    from tests.study.online.test_online_texts import german_protocol

    path, settings = german_protocol(tmp_path)
    texts = settings["texts"]
    server = start_server(path, online_set, tmp_path / "data")
    driver = browser()
    # The settings' request fails as a lost connection would.
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["*api/config*"]})
    participant = Participant(driver, server.url)
    participant.open("?participant=de02")
    participant.wait(lambda: participant.phase() == "error", what="the error page")
    shown = driver.execute_script("return document.body.innerText").strip()
    expected = fill(texts["went_wrong"], error=texts["settings_failed"])
    assert " ".join(shown.split()) == " ".join(expected.split())
    assert "konnten nicht geladen werden" in shown and "Something" not in shown


# --- Refused trials, counted for the experimenter -----------------------------------------------

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def test_refused_trials_are_counted_with_their_reasons(tmp_path, online_set):
    """Each trial report of a session's own page the server refuses is kept: counted on the
    status (JSON and page) and in the participant table, with the reason the page was given;
    a retry acknowledged, or a report under another session's token or none, is not."""
    client = make_client(tmp_path, online_set)
    answer, token = start(client, "alice")
    alice = answer.json()
    _, other = start(client, "bob")
    own = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    url = f"/api/sessions/{alice['session_id']}/trials"
    first = report(alice["trials"][0], 1)
    assert client.put(f"{url}/1", json=first, headers=own).status_code == 201
    second = report(alice["trials"][1], 2)
    back = report(alice["trials"][1], 2, onset=second["onset"] - 0.5)
    sent = [  # (trial in the address, body, headers, status, kept)
        ("2", json.dumps({**second, "rating": "3"}), own, 422, True),
        ("1", json.dumps({**first, "paused_before": 1.0}), own, 409, True),
        ("2", json.dumps(back), own, 422, True),  # times back over trial 1's
        ("3", json.dumps({**second, "frames": [1.0] * 20_000}), own, 413, True),
        ("x", json.dumps(second), own, 422, True),
        ("1", json.dumps(first), own, 200, False),  # a retry, acknowledged
        (
            "2",
            json.dumps({**second, "rating": "3"}),
            {**own, "Authorization": f"Bearer {other}"},
            422,
            False,
        ),  # another session's token
        (
            "2",
            json.dumps({**second, "rating": "3"}),
            {"Content-Type": "application/json"},
            422,
            False,
        ),  # no token
    ]
    said = []
    for trial, body, headers, status, kept in sent:
        put = client.put(f"{url}/{trial}", content=body, headers=headers)
        assert put.status_code == status, put.text
        if kept:
            said.append((None if trial == "x" else int(trial), status, put.json()["error"]))
    assert said[0][2].startswith("rating: ") and said[2][2].startswith("onset: ")

    with sqlite3.connect(client.db) as connection:
        stored = connection.execute(
            "SELECT s.participant, r.trial, r.status, r.reason FROM refusals r "
            "JOIN sessions s ON s.id = r.session_id ORDER BY r.id"
        ).fetchall()
    assert stored == [("alice", *entry) for entry in said]

    status = client.get("/api/admin/status", headers=ADMIN).json()
    assert status["trials_refused"] == len(said)
    assert [(r["participant"], r["trial"], r["status"], r["error"]) for r in status["refused"]] == [
        ("alice", *entry) for entry in reversed(said)
    ]

    table = client.get("/admin/participants.csv", headers=ADMIN).text
    rows = list(csv.DictReader(io.StringIO(table)))
    assert [(r["participant"], r["trials_refused"]) for r in rows] == [
        ("alice", str(len(said))),
        ("bob", "0"),
    ]
    expected = "; ".join(
        f"trial {'?' if number is None else number} ({code}): {reason}"
        for number, code, reason in said
    )
    assert rows[0]["refusals"] == expected and rows[1]["refusals"] == ""

    page = client.get("/admin", headers=ADMIN).text
    shown = pd.read_html(io.StringIO(page), attrs={"id": "refused"})[0]
    assert shown["reason"].tolist() == [reason for _, _, reason in reversed(said)]
    assert f'<td id="trials-refused">{len(said)} ' in page


def test_the_error_page_names_the_trials_not_stored_and_that_the_researcher_knows():
    """experiment.js's error page (in Node, support.run_page): the refused trials its sender
    set aside, each once, in the protocol's words ([texts] trials_not_stored)."""
    texts = load_protocol(GERMAN).texts
    config = {
        "texts": {"went_wrong": texts.went_wrong, "trials_not_stored": texts.trials_not_stored}
    }
    refused = [
        {"trial": 7, "status": 422, "error": "onset: ..."},
        {"trial": 4, "status": 409, "error": "..."},
        {"trial": 7, "status": 422, "error": "again"},
    ]
    shown = run_page(
        "const shown = [];"
        "for (const key of ['sbir-refused:S1', 'sbir-refused:none']) {"
        "  window.sbir.config = CONFIG; window.sbir.session = { sender: { refusedKey: key } };"
        "  errorPage(new Error('finish refused'));"
        "  shown.push([window.sbir.phase, document.body.innerHTML]);"
        "}"
        "shown".replace("CONFIG", json.dumps(config)),
        storage={"sbir-refused:S1": json.dumps(refused)},
    )
    error = fill(texts.went_wrong, error="Error: finish refused")
    told = fill(texts.trials_not_stored, trials="4, 7")
    assert "benachrichtigt" in told
    assert [phase for phase, _ in shown] == ["error", "error"]
    assert _text_of(shown[0][1]) == " ".join(f"{error}\n\n{told}".split())
    # Without refused trials the page says only what went wrong.
    assert _text_of(shown[1][1]) == " ".join(error.split())


def test_ending_the_session_says_everything_is_saved_only_when_it_is():
    """The quit ending (experiment.js's quitWords, in Node): quit_ended ("Everything so far
    is saved") without refused trials; with them, the session's end and the trials not
    stored, in the protocol's words."""
    texts = load_protocol(GERMAN).texts
    words = ("quit_ended", "session_ended", "trials_not_stored")
    config = {"texts": {key: getattr(texts, key) for key in words}}
    shown = run_page(
        "['sbir-refused:S1', 'sbir-refused:none'].map((key) => {"
        "  window.sbir.session = { sender: { refusedKey: key } };"
        "  return quitWords(CONFIG);"
        "})".replace("CONFIG", json.dumps(config)),
        storage={"sbir-refused:S1": json.dumps([{"trial": 3, "status": 422, "error": "..."}])},
    )
    told = fill(texts.trials_not_stored, trials="3")
    assert _text_of(shown[0]) == " ".join(f"{texts.session_ended}\n\n{told}".split())
    assert _text_of(shown[1]) == " ".join(texts.quit_ended.split())


def _text_of(html_text: str) -> str:
    class Text(HTMLParser):
        def __init__(self):
            super().__init__(convert_charrefs=True)
            self.parts = []

        def handle_data(self, data):
            self.parts.append(data)

    parser = Text()
    parser.feed(html_text.replace("<br>", "\n"))
    return " ".join(" ".join(parser.parts).split())


def test_a_page_refused_in_a_loop_fills_no_more_than_the_limit(tmp_path, online_set, monkeypatch):
    """Past storage.MAX_REFUSALS_PER_SESSION a session's refusals are answered as before but
    not kept: a page sending reports in a loop cannot grow the table without end."""
    monkeypatch.setattr(storage, "MAX_REFUSALS_PER_SESSION", 3)
    client = make_client(tmp_path, online_set)
    answer, token = start(client, "alice")
    alice = answer.json()
    own = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    url = f"/api/sessions/{alice['session_id']}/trials"
    bad = json.dumps({**report(alice["trials"][0], 1), "rating": "3"})
    for _ in range(5):
        put = client.put(f"{url}/1", content=bad, headers=own)
        assert put.status_code == 422 and put.json()["error"].startswith("rating: ")
    with sqlite3.connect(client.db) as connection:
        assert connection.execute("SELECT count(*) FROM refusals").fetchone() == (3,)
    assert client.get("/api/admin/status", headers=ADMIN).json()["trials_refused"] == 3
    # The limit is the session's: another participant's refusals are kept.
    answer, token = start(client, "bob")
    bob = answer.json()
    put = client.put(
        f"/api/sessions/{bob['session_id']}/trials/1",
        content=bad,
        headers={**own, "Authorization": f"Bearer {token}"},
    )
    assert put.status_code == 422
    with sqlite3.connect(client.db) as connection:
        assert connection.execute("SELECT count(*) FROM refusals").fetchone() == (4,)


def test_refusals_sent_at_once_to_postgresql_keep_to_the_limit(
    tmp_path, online_set, postgres, monkeypatch
):
    """Refusals of one session recorded at the same moment from many threads, against
    PostgreSQL (whose transactions run side by side, unlike SQLite's one writer): exactly
    the limit is kept, not one more."""
    monkeypatch.setattr(storage, "MAX_REFUSALS_PER_SESSION", 5)
    client = make_client(tmp_path, online_set, url=postgres.new_database())
    answer, token = start(client, "alice")
    session_id = answer.json()["session_id"]
    barrier = threading.Barrier(12)

    def refuse(trial):
        barrier.wait()
        return client.study.record_refusal(session_id, token, trial, 422, "rating: ...")

    with ThreadPoolExecutor(12) as pool:
        kept = list(pool.map(refuse, range(1, 13)))
    assert kept.count("kept") == 5 and kept.count("full") == 7
    with client.study.engine.connect() as connection:
        assert connection.exec_driver_sql("SELECT count(*) FROM refusals").scalar_one() == 5
