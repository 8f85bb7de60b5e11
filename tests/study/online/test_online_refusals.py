"""What the online page says before and without its settings, and the server's refusals a
participant reads, in the protocol's words ([texts]).

The page (index.html) is filled in by the server with the protocol's language, title, the
line a browser without JavaScript shows, and what the page says when it cannot load the
study's settings; the refusals of POST api/participant-id and api/sessions that the page
shows are the protocol's texts. Read back with Python's own HTML parser, so that a text
holding <, > or quotes is shown as written and cannot become markup.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from sbir_study.foundation.checks import MAX_SOURCE_ID_LENGTH
from sbir_study.study.online.server import ServeSettings, build_app
from sbir_study.study.protocol import load_protocol
from sbir_study.study.texts import fill
from tests.study.online.support import ADMIN_TOKEN, make_client, start

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
    app, _ = build_app(ServeSettings(protocol=str(GERMAN), stimuli=str(online_set),
                                     db=f"sqlite:///{tmp_path / 'de.sqlite3'}",
                                     admin_token=ADMIN_TOKEN, max_body=65_536))  # fmt: skip
    return TestClient(app)


def test_the_german_page_and_refusals_are_in_german(tmp_path, online_set):
    texts = load_protocol(GERMAN).texts
    client = _german_client(tmp_path, online_set)
    page = _page(client)
    assert (page.lang, page.title) == ("de", "Bewertungsstudie")
    assert page.noscript == "Diese Studie benötigt JavaScript."
    assert page.body == {"data-went-wrong": texts.went_wrong,
                         "data-settings-failed": texts.settings_failed}  # fmt: skip
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
    own = {"needs_javascript": 'Bitte <b>"JS"</b> & mehr', "page_title": "T<i>x</i>",
           "went_wrong": "Fehler <{error}> 'neu laden'", "settings_failed": "a & b",
           "study_full": "Voll <script>x</script>", "language": "de-AT"}  # fmt: skip
    client = make_client(tmp_path, online_set, texts=own, online={"raters_per_list": 1})
    page = _page(client)
    assert (page.lang, page.title, page.noscript) == ("de-AT", own["page_title"],
                                                      own["needs_javascript"])  # fmt: skip
    assert page.body == {"data-went-wrong": own["went_wrong"],
                         "data-settings-failed": own["settings_failed"]}  # fmt: skip
    assert start(client, "p1")[0].status_code == 201
    full, _ = start(client, "p2")
    assert (full.status_code, full.json()["error"]) == (409, own["study_full"])


def test_the_english_defaults_say_what_they_said(tmp_path, online_set):
    client = make_client(tmp_path, online_set)
    page = _page(client)
    assert (page.lang, page.title, page.noscript) == ("en", "Rating study",
                                                      "This study needs JavaScript.")  # fmt: skip
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
