"""Fixtures of the window tests (their helpers are in session_harness.py)."""

import pytest

from tests.study.session_harness import xvfb


@pytest.fixture(scope="module")
def display():
    """A private Xvfb display for a module's window tests (tests/conftest.py marks a test that
    uses it ``realtime``).

    The X server is the display and the keyboard here: it runs ahead of other processes (at
    real-time priority where allowed), as hardware would, so that a busy shared machine does
    not delay the key presses these tests time to the millisecond. (How the session fares
    beside busy processes with an ordinary X server: benchmarks/bench_session.py.)
    """
    with xvfb(nice=-10) as name:
        yield name
