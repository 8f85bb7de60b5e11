"""Each online ending has the protocol's code and address, as a crowd platform asks.

Complete, no consent, quit and timed out (the page came back after ``dropout_after_s``
without contact): the server hands each ending's code and address to the page, and the
participant table's ``completion_code`` column shows the code of each participant's
ending, checked against the database's own sessions table read with pandas.
"""

from __future__ import annotations

import sqlite3

import pandas as pd
import pytest
from pydantic import ValidationError

from sbir_study.study.protocol import Online
from tests.study.online.support import ADMIN_TOKEN, make_client, report, start
from tests.study.online.test_online_participants import read_csv

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
ENDINGS = {
    "completion_code": "DONE1",
    "completion_url": "https://app.prolific.com/submissions/complete?cc=DONE1",
    "no_consent_code": "NOCONSENT",
    "no_consent_url": "https://app.prolific.com/submissions/complete?cc=NOCONSENT",
    "quit_code": "QUIT-2",
    "quit_url": "",
    "timed_out_code": "LATE_3",
    "timed_out_url": "https://app.prolific.com/submissions/complete?cc=LATE_3",
}
DROPOUT_S = 60.0


@pytest.mark.parametrize("ending", ["completion", "no_consent", "quit", "timed_out"])
def test_every_ending_takes_a_code_and_an_address_of_one_shape(ending):
    assert getattr(Online(**{f"{ending}_code": "A-b_9"}), f"{ending}_code") == "A-b_9"
    for bad in ("has space", "x" * 65, "é"):
        with pytest.raises(ValidationError, match=f"{ending}_code"):
            Online(**{f"{ending}_code": bad})
    for bad in ("ftp://x", "https://a b", "www.example.org"):
        with pytest.raises(ValidationError, match=f"{ending}_url"):
            Online(**{f"{ending}_url": bad})


@pytest.fixture
def client(tmp_path, online_set, server_clock):
    client = make_client(tmp_path, online_set, online={**ENDINGS, "dropout_after_s": DROPOUT_S})
    client.clock = server_clock
    return client


def put_trials(client, state, token, numbers):
    """Trials ``numbers`` as the page sends them, each as it ends, 1 s after the one before
    on the server's clock (as support.report times them)."""
    headers = {"Authorization": f"Bearer {token}"}
    for number in numbers:
        client.clock[0] += 1.0
        trial = state["trials"][number - 1]
        answer = client.put(
            f"/api/sessions/{state['session_id']}/trials/{number}",
            json=report(trial, number, [("3", 0.2)] if trial["phase"] != "anchor_demo" else []),
            headers=headers,
        )
        assert answer.status_code == 201, answer.text


def finish(client, state, token, status):
    return client.post(
        f"/api/sessions/{state['session_id']}/finish",
        json={"status": status},
        headers={"Authorization": f"Bearer {token}"},
    )


def resume(client, state, token):
    answer = client.get(
        f"/api/sessions/{state['session_id']}", headers={"Authorization": f"Bearer {token}"}
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


def ending(name):
    prefix = "completion" if name == "complete" else name
    return {
        "code": ENDINGS[f"{prefix}_code"] or None,
        "url": ENDINGS[f"{prefix}_url"] or None,
    }


def test_no_consent_is_the_pages_own_ending(client):
    # No session exists before consent: the page has the code and address from its settings,
    # and nothing else of the endings (the complete code is earned).
    online = client.get("/api/config").json()["online"]
    assert online["no_consent"] == ending("no_consent")
    text = str(online)
    for name in ("DONE1", "QUIT-2", "LATE_3"):
        assert name not in text


def test_quit_and_complete_answer_with_their_endings(client):
    answer, token = start(client, "quitter")
    state = answer.json()
    assert state["timed_out"] is False and "completion" not in state
    put_trials(client, state, token, [1, 2])
    done = finish(client, state, token, "incomplete").json()
    assert done == {"status": "incomplete", "stored": 2, "completion": ending("quit")}
    # A reload after quitting: the session has ended, with its ending's code.
    again = resume(client, state, token)
    assert again["status"] == "incomplete" and again["completion"] == ending("quit")

    answer, token = start(client, "finisher")
    state = answer.json()
    put_trials(client, state, token, range(1, len(state["trials"]) + 1))
    done = finish(client, state, token, "complete").json()
    assert done["completion"] == ending("complete")
    assert resume(client, state, token)["completion"] == ending("complete")


def test_a_page_back_after_the_dropout_time_sends_its_trials_and_times_out(client, server_clock):
    clock = server_clock
    answer, token = start(client, "sleeper")
    state = answer.json()
    put_trials(client, state, token, [1, 2])
    clock[0] += DROPOUT_S - 1
    assert resume(client, state, token)["timed_out"] is False  # not silent long enough
    clock[0] += DROPOUT_S + 1
    back = resume(client, state, token)
    assert back["status"] == "running" and back["timed_out"] is True
    # The trial the page still held is stored; then the session ends as timed out.
    put_trials(client, state, token, [3])
    done = finish(client, state, token, "timed_out").json()
    assert done == {"status": "timed_out", "stored": 3, "completion": ending("timed_out")}
    again = resume(client, state, token)
    assert again["status"] == "timed_out" and again["timed_out"] is False
    assert again["completion"] == ending("timed_out")
    late = client.put(
        f"/api/sessions/{state['session_id']}/trials/4",
        json=report(state["trials"][3], 4, []),
        headers={"Authorization": f"Bearer {token}"},
    )
    assert late.status_code == 409
    assert finish(client, state, token, "incomplete").status_code == 409


def test_the_participant_table_shows_the_code_of_each_ending(client, server_clock):
    clock = server_clock
    answer, token = start(client, "done1")
    state = answer.json()
    put_trials(client, state, token, range(1, len(state["trials"]) + 1))
    finish(client, state, token, "complete")
    answer, token = start(client, "quit2")
    state = answer.json()
    put_trials(client, state, token, [1])
    finish(client, state, token, "incomplete")
    answer, token = start(client, "late3")
    late = (answer.json(), token)
    answer, token = start(client, "gone4")
    clock[0] += DROPOUT_S + 1
    assert resume(client, *late)["timed_out"] is True
    finish(client, *late, "timed_out")
    start(client, "now5")

    got = read_csv(client.get("/admin/participants.csv", headers=ADMIN).text)
    # The database's sessions, read with pandas: the status of each, silent ones dropped out.
    with sqlite3.connect(client.db) as connection:
        sessions = pd.read_sql("SELECT participant, status, last_seen_at FROM sessions", connection)
    sessions = sessions.set_index("participant")
    codes = {"complete": "DONE1", "incomplete": "QUIT-2", "timed_out": "LATE_3"}
    expected = {}
    for label, row in sessions.iterrows():
        status = row["status"]
        if status == "running" and row["last_seen_at"] < clock[0] - DROPOUT_S:
            status = "dropped_out"
        expected[label] = (status, codes.get(status, ""))
    shown = zip(got["status"], got["completion_code"], strict=True)
    assert dict(zip(got["participant"], shown, strict=True)) == expected
    assert expected == {
        "done1": ("complete", "DONE1"),
        "quit2": ("incomplete", "QUIT-2"),
        "late3": ("timed_out", "LATE_3"),
        "gone4": ("dropped_out", ""),
        "now5": ("running", ""),
    }
    counts = client.get("/api/admin/status", headers=ADMIN).json()["participants"]
    assert counts == {
        "started": 5,
        "complete": 1,
        "incomplete": 1,
        "timed_out": 1,
        "dropped_out": 1,
        "running": 1,
    }
    page = client.get("/admin", headers=ADMIN).text
    assert "timed out" in page and "LATE_3" in page


@pytest.mark.browser
def test_each_ending_page_shows_its_code(online_set, tmp_path, start_server, browser):
    """In Chromium: not agreeing, quitting and coming back after the dropout time each end on
    a page with the protocol's code for that ending."""
    import time

    from tests.study.online.browser_participant import Participant
    from tests.study.online.support import write_protocol

    dropout_s = 2.0
    protocol = write_protocol(
        tmp_path,
        anchoring={"enabled": False, "repeat": False},
        online={key: value for key, value in ENDINGS.items() if not key.endswith("_url")}
        | {"dropout_after_s": dropout_s},
    )
    data = tmp_path / "data"
    server = start_server(protocol, online_set, data)

    def code(participant):
        return participant.driver.find_element("id", "sbir-code").text

    declined = Participant(browser(), server.url)
    declined.open("?participant=declined")
    declined.wait(lambda: declined.phase() == "intake", what="the intake")
    declined.click("#sbir-consent-1")
    declined.wait(lambda: declined.phase() == "declined", what="the page after not agreeing")
    assert code(declined) == "NOCONSENT"

    quitter = Participant(browser(), server.url)
    quitter.open("?participant=quitter")
    quitter.intake({})
    quitter.start_trials()
    quitter.key_at("escape", quitter.onset_of(1)["onset"] + 0.2, 1)
    quitter.wait(lambda: quitter.phase() == "quit", what="the question")
    quitter.key("y")
    quitter.wait(lambda: quitter.phase() == "ended", what="the page after quitting")
    assert code(quitter) == "QUIT-2"

    # Away on the instructions screen for longer than the dropout time, then back (a reload).
    sleeper = Participant(browser(), server.url)
    sleeper.open("?participant=sleeper")
    sleeper.intake({})
    sleeper.wait(lambda: sleeper.phase() == "instructions", what="the instructions")
    time.sleep(dropout_s + 1.0)
    sleeper.driver.refresh()
    sleeper.wait(lambda: sleeper.phase() == "timed_out", what="the timed-out page")
    assert code(sleeper) == "LATE_3"
    assert "nothing was heard from it for too long" in sleeper.driver.page_source

    statuses = server.admin("api/admin/status").json()["participants"]
    assert statuses["incomplete"] == 1 and statuses["timed_out"] == 1 and statuses["started"] == 2
