"""Progress: drawn on a terminal, silent in pipes, log files and CI."""

import io
import os
import pty
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sbir_study.foundation import progress
from tests.helpers import DATA, run_cli

STAGES = ("reading ratings_small.csv", "checking ratings", "inter-user tau_b", "ground truth")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _clean(monkeypatch, **env):
    for name in ("CI", "SBIR_STUDY_PROGRESS", "TERM"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)


def test_enabled_on_a_terminal_only(monkeypatch):
    _clean(monkeypatch)
    monkeypatch.setattr(sys, "stderr", _Terminal())
    assert progress.enabled()
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # a pipe or a file
    assert not progress.enabled()
    monkeypatch.setattr(sys, "stderr", None)  # pythonw, a daemon
    assert not progress.enabled()


@pytest.mark.parametrize(
    ("env", "shown"),
    [
        ({"CI": "true"}, False),
        ({"CI": "1"}, False),
        ({"CI": ""}, True),
        ({"CI": "false"}, True),
        ({"TERM": "dumb"}, False),
        ({"SBIR_STUDY_PROGRESS": "0"}, False),
        ({"CI": "true", "SBIR_STUDY_PROGRESS": "1"}, True),
    ],
)
def test_ci_and_the_switch(monkeypatch, env, shown):
    _clean(monkeypatch, **env)
    monkeypatch.setattr(sys, "stderr", _Terminal())
    assert progress.enabled() is shown


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 5), max_size=8), st.booleans())
def test_track_yields_everything_once_drawn_or_not(items, show):
    stream = _Terminal()
    original = sys.stderr
    sys.stderr = stream
    try:
        assert list(progress.track(items, "items", show=show)) == items
        with progress.step("a stage", show=show):
            pass
    finally:
        sys.stderr = original
    assert ("items" in stream.getvalue()) is show
    assert ("a stage: done in" in stream.getvalue()) is show


def test_counter_closes_at_total_and_reopens():
    stream = _Terminal()
    original = sys.stderr
    sys.stderr = stream
    try:
        report = progress.counter("descriptors", show=True)
        for total in (3, 2):
            for done in range(1, total + 1):
                report(done, total)
    finally:
        sys.stderr = original
    drawn = stream.getvalue()
    assert "3/3" in drawn and "2/2" in drawn


def _analyze_on_a_terminal(tmp_path, **env) -> str:
    """``sbir-study analyze`` with stderr on a pseudo-terminal; what the terminal showed."""
    controller, terminal = pty.openpty()
    environment = {k: v for k, v in os.environ.items() if k not in ("CI", "SBIR_STUDY_PROGRESS")}
    environment.update(env, TERM="xterm")
    command = [
        sys.executable,
        "-m",
        "sbir_study",
        "analyze",
        str(DATA / "ratings_small.csv"),
        "--out",
        str(tmp_path / "out"),
        "--no-figures",
    ]
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=terminal, env=environment)
    os.close(terminal)
    shown = b""
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    assert child.wait(timeout=120) == 0
    os.close(controller)
    return shown.decode("utf-8", "replace")


def test_analyze_shows_its_stages_on_a_terminal(tmp_path):
    shown = _analyze_on_a_terminal(tmp_path)
    for stage in STAGES:
        assert stage in shown, shown


def test_analyze_is_silent_on_a_terminal_in_ci(tmp_path):
    shown = _analyze_on_a_terminal(tmp_path, CI="true")
    assert not any(stage in shown for stage in STAGES), shown


def test_analyze_is_silent_in_a_pipe(tmp_path):
    result = run_cli(
        "analyze", str(DATA / "ratings_small.csv"), "--out", str(tmp_path / "o"), "--no-figures"
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
