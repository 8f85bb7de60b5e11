"""Fixtures of the online-session tests (their helpers are in support.py)."""

from __future__ import annotations

import contextlib
import shutil
import time
from pathlib import Path

import pytest

from sbir_study.stimuli import SetDesign, generate_set
from tests.study.online.support import Postgres, Server, chromium


@pytest.fixture(scope="session")
def online_set(tmp_path_factory) -> Path:
    """2 sketches x 4 images and one anchor sketch of 3 images (rated 1, 4, 7)."""
    folder = tmp_path_factory.mktemp("online-set") / "set"
    design = SetDesign(
        sketches=2, images_per_sketch=4, anchor_sketches=1, anchor_images=3, width=96, height=72
    )
    return generate_set(folder, design, seed=7)


@pytest.fixture
def server_clock(monkeypatch) -> list[float]:
    """The server's clock (``storage.now``), still until the test moves it (``clock[0] += s``):
    a busy machine (a garbage collection, another process) must not make a participant silent
    before the test means it to be."""
    from sbir_study.study.online import storage

    clock = [time.time()]
    monkeypatch.setattr(storage, "now", lambda: clock[0])
    return clock


@pytest.fixture
def start_server():
    """Start `serve` processes; every one is stopped at the end of the test."""
    started: list[Server] = []

    def start(*args, **kwargs) -> Server:
        server = Server(*args, **kwargs).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def postgres():
    server = Postgres().start()
    yield server
    server.stop()


@pytest.fixture
def browser():
    drivers = []

    def make(**kwargs):
        driver = chromium(**kwargs)
        drivers.append(driver)
        return driver

    yield make
    for driver in drivers:
        with contextlib.suppress(Exception):
            driver.quit()
        shutil.rmtree(driver.profile_folder, ignore_errors=True)
