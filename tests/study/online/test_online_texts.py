"""The protocol's words on the online page: the German example in headless Chromium."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from tests.helpers import toml_text
from tests.study.online.browser_participant import Participant

ROOT = Path(__file__).resolve().parents[3]


def german_protocol(folder: Path) -> tuple[Path, dict]:
    """protocols/example_de.toml with the test's short timing and small pictures."""
    settings = tomllib.loads((ROOT / "protocols" / "example_de.toml").read_text("utf-8"))
    settings["timing"] = {"stimulus_s": 0.6, "blank_s": 0.4, "anchor_demo_s": 0.6}
    settings["task"] = "sbirtest"
    settings.setdefault("online", {})["stimulus_px"] = 200
    settings["display"] = {"fullscreen": False}
    path = folder / "de.toml"
    path.write_text(toml_text(settings), encoding="utf-8")
    return path, settings


@pytest.mark.browser
def test_the_german_example_is_what_the_page_shows(online_set, tmp_path, start_server, browser):
    path, settings = german_protocol(tmp_path)
    texts = settings["texts"]
    server = start_server(path, online_set, tmp_path / "data")
    participant = Participant(browser(), server.url)
    driver = participant.driver
    body = lambda: driver.execute_script("return document.body.innerText")  # noqa: E731
    participant.open("?participant=de01")
    participant.wait(lambda: participant.phase() == "intake", what="the intake")
    assert driver.execute_script("return [document.documentElement.lang, document.title]") == [
        "de",
        "Bewertungsstudie",
    ]
    participant.wait(lambda: texts["consent_title"] in body(), what="the consent")
    shown = body()
    for text in (texts["agree"], texts["disagree"], "Nächstes"):  # the consent's own ä too
        assert text in shown, text
    participant.click("#sbir-consent-0")
    participant.wait(lambda: texts["details_title"] in body(), what="the details")
    form = driver.execute_script(
        "return document.querySelector('.jspsych-content').innerText"
        " + [...document.querySelectorAll('option')].map((o) => o.text).join('|')"
        " + document.querySelector('#jspsych-survey-html-form-next').value"
    )
    for name in (
        "details_note",
        "age",
        "sex",
        "handedness",
        "male",
        "ambidextrous",
        "prefer_not_to_say",
        "continue_button",
    ):
        assert texts[name] in form, name
    participant.click("#jspsych-survey-html-form-next")
    # ß and ü, as the page holds them: "Bitte schließen Sie ..." and its button.
    participant.wait(lambda: "schließen" in body(), what="the full-screen message")
    assert texts["fullscreen"] in body() and texts["fullscreen_button"] in body()
    participant.click("#jspsych-fullscreen-btn")
    participant.wait(
        lambda: participant.phase() == "instructions", timeout=60, what="the instructions"
    )
    instructions = settings["instructions"]["anchoring"]
    assert " ".join(instructions.split()) in " ".join(body().split())
    participant.key("space")
    participant.onset_of(1)
    label = driver.execute_script("return document.querySelector('.sbir-label').textContent")
    assert label == "Bewertung: 1"
    participant.key("escape")
    # The question shows once the trial's blank is over (the phase is set when Escape went
    # down): wait for its words, not only for the phase.
    participant.wait(
        lambda: participant.phase() == "quit" and "beenden?" in body(), what="the quit question"
    )
    assert "Die Sitzung jetzt beenden?" in body() and "weitermachen" in body()
    participant.key("j")  # the German protocol's yes ([texts] yes_key)
    participant.wait(lambda: participant.phase() == "ended", what="the end")
    assert body().strip() == texts["quit_ended"]
