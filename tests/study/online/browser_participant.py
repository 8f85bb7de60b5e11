"""A simulated participant in a real browser: clicks through the intake and presses keys at
known times through the DevTools protocol (Input.dispatchKeyEvent), as a keyboard would."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field

# KeyboardEvent fields of the keys the tests press: key name -> (key, code, keyCode).
KEYS = {
    **{str(d): (str(d), f"Digit{d}", 48 + d) for d in range(10)},
    **{f"num_{d}": (str(d), f"Numpad{d}", 96 + d) for d in range(10)},
    "space": (" ", "Space", 32),
    "escape": ("Escape", "Escape", 27),
    # The letters: a lab's own rating keys (a, s, d, f, g), pause, quit's answers.
    **{c: (c, f"Key{c.upper()}", ord(c.upper())) for c in "abcdefghijklmnopqrstuvwxyz"},
}


@dataclass
class Press:
    name: str
    trial: int
    page_time: float  # when it was sent, on the page's performance.now() clock (s)
    sent_within: float = 0.0  # how long the DevTools command took to return (s)


@dataclass
class Participant:
    driver: object
    url: str
    presses: list[Press] = field(default_factory=list)
    offset_ms: float = 0.0  # page epoch (timeOrigin + now) minus this process's time.time()
    offset_error_ms: float = 0.0  # how far offset_ms may be off: half its best round trip

    def open(self, query: str = "") -> None:
        self.driver.get(self.url + query)
        self.calibrate()

    def calibrate(self) -> None:
        """Offset of the page's clock from time.time(), from the closest of 15 round trips."""
        samples = []
        for _ in range(15):
            before = time.time()
            page = self.driver.execute_script("return performance.timeOrigin + performance.now()")
            after = time.time()
            samples.append((after - before, page - (before + after) / 2 * 1000.0))
        # The page read its clock inside the round trip: the offset is right to within half
        # of it (a few milliseconds on a loaded machine).
        round_trip, self.offset_ms = min(samples)
        self.offset_error_ms = round_trip * 1000.0 / 2
        self.origin_ms = self.driver.execute_script("return performance.timeOrigin")

    def page_now(self) -> float:
        return (time.time() * 1000.0 + self.offset_ms - self.origin_ms) / 1000.0

    def wall_clock(self, page_time: float) -> float:
        """A time on the page's performance.now() clock (s) on the wall clock (s), as a
        DevTools input event's ``timestamp`` takes it: :meth:`page_now` the other way."""
        return (page_time * 1000.0 + self.origin_ms - self.offset_ms) / 1000.0

    def phase(self) -> str:
        return self.driver.execute_script("return window.sbir && window.sbir.phase")

    def wait(self, condition, timeout: float = 30.0, what: str = "the page") -> object:
        value = _poll(condition, timeout, every=0.02)
        if value is not None:
            return value
        error = self.driver.execute_script("return window.sbir && window.sbir.error")
        refused = self.driver.execute_script(
            "return Object.keys(localStorage).filter((k) => k.startsWith('sbir-refused'))"
            ".map((k) => localStorage.getItem(k))"
        )
        raise AssertionError(
            f"timed out waiting for {what} (phase {self.phase()!r}; page error {error!r}; "
            f"trials the server refused: {refused!r})"
        )

    def click(self, css: str, timeout: float = 30.0) -> None:
        from selenium.webdriver.common.by import By

        def found():
            elements = self.driver.find_elements(By.CSS_SELECTOR, css)
            return elements[0] if elements else None

        self.wait(found, timeout, css).click()

    def key(self, name: str, trial: int = 0, *, stamped: bool = False) -> float:
        """Press and release a key now; returns the page time at which it was sent.

        ``stamped``: the key carries the time it was sent as its event time, as a keyboard's
        press does, however late a busy page takes it (without, a page stamps a DevTools key
        when its main thread gets to it)."""
        key, code, key_code = KEYS[name]
        down = {
            "type": "keyDown",
            "key": key,
            "code": code,
            "windowsVirtualKeyCode": key_code,
            "nativeVirtualKeyCode": key_code,
        }
        if len(key) == 1:
            down["text"] = key
        sent = self.page_now()
        if stamped:
            down["timestamp"] = self.wall_clock(sent)
        self.driver.execute_cdp_cmd("Input.dispatchKeyEvent", down)
        returned = self.page_now()
        self.driver.execute_cdp_cmd("Input.dispatchKeyEvent", {**down, "type": "keyUp"})
        self.presses.append(Press(name, trial, sent, returned - sent))
        return sent

    def key_at(self, name: str, page_time: float, trial: int, *, stamped: bool = False) -> float:
        while (remaining := page_time - self.page_now()) > 0:
            time.sleep(min(remaining, 0.002) if remaining < 0.01 else remaining - 0.008)
        return self.key(name, trial, stamped=stamped)

    def intake(self, details: dict | None = None) -> None:
        """Consent, details, full screen; the window check runs by itself."""
        self.wait(lambda: self.phase() == "intake", what="the intake")
        self.click("#sbir-consent-0")
        if details is not None:
            from selenium.webdriver.common.by import By
            from selenium.webdriver.support.ui import Select

            self.wait(lambda: self.driver.find_elements(By.ID, "sbir-age"), what="the details")
            if details.get("age") is not None:
                self.driver.find_element(By.ID, "sbir-age").send_keys(str(details["age"]))
            for name in ("sex", "handedness"):
                if details.get(name):
                    Select(self.driver.find_element(By.ID, f"sbir-{name}")).select_by_value(
                        details[name]
                    )
            self.click("#jspsych-survey-html-form-next")
        self.click("#jspsych-fullscreen-btn")

    def session(self) -> dict:
        return self.driver.execute_script(
            "const s = window.sbir.session; return s && {onsets: s.onsets, current: s.current,"
            " queued: s.sender.queue.length, acknowledged: s.sender.acknowledged,"
            " state: {session_id: s.state.session_id, participant: s.state.participant,"
            " trials: s.state.trials}}"
        )

    def start_trials(self) -> None:
        """Press space on the instructions once they are up."""
        self.wait(lambda: self.phase() == "instructions", timeout=60, what="the instructions")
        time.sleep(0.2)
        self.key("space")

    def rate_every_trial(self, key_of, after_s: float) -> None:
        """Begin the trials and press ``key_of(trial)`` ``after_s`` after each rated
        trial's onset (an anchor example takes no key), beginning the main block when its
        instructions come."""
        self.start_trials()
        trials = self.session()["state"]["trials"]
        first_rated = next(t["trial"] for t in trials if t["phase"] != "anchor_demo")
        for trial in trials:
            if trial["trial"] == first_rated:
                self.start_trials()
            onset = self.onset_of(trial["trial"])["onset"]
            if trial["phase"] != "anchor_demo":
                self.key_at(key_of(trial["trial"]), onset + after_s, trial["trial"])

    def onset_of(self, trial: int, timeout: float = 15.0) -> dict:
        """Wait for trial ``trial`` to be on screen; its {trial, onset, window_end}."""

        def found():
            onsets = self.driver.execute_script(
                "return window.sbir.session ? window.sbir.session.onsets : []"
            )
            hits = [o for o in onsets if o["trial"] == trial]
            return hits[-1] if hits else None

        # Polled more often than wait() does: the onset is what key_at() times presses from.
        hit = _poll(found, timeout, every=0.003)
        if hit is None:
            raise AssertionError(f"trial {trial} did not start (phase {self.phase()!r})")
        return hit


def _poll(condition, timeout: float, *, every: float):
    """The first true value ``condition()`` returns within ``timeout`` seconds, asked every
    ``every`` seconds; None when it returns none in time."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every)
    return None


def summary(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    absolute = [abs(v) for v in values]
    return {"n": len(values), "median_abs": statistics.median(absolute), "max_abs": max(absolute)}
