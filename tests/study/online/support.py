"""Helpers of the online-session tests: a stimulus set, protocols, a real
`serve` on the loopback, a private PostgreSQL server, headless Chromium under Selenium.

The fixtures themselves are in conftest.py beside this module.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from sbir_study.study.online.server import ServeSettings, build_app
from sbir_study.study.online.storage import open_database
from sbir_study.study.responses import rating_key_map, score_trial
from tests.helpers import toml_value

ADMIN_TOKEN = "admin-token-for-tests-0123456789"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
#: Seconds a test waits for a finished session's end page: the page retries the last
#: acknowledgements with back-off (1, 2, 4, 8, 15 s), which a busy machine can need.
END_S = 120.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def query(db_url: str, sql: str) -> list[sa.Row]:
    """The rows of one SQL statement on the database at ``db_url``, as a test reads what the
    server stored (the engine is disposed of before returning)."""
    engine = open_database(db_url)
    try:
        with engine.connect() as connection:
            return connection.execute(sa.text(sql)).all()
    finally:
        engine.dispose()


def write_protocol(folder: Path, name: str = "protocol.toml", **tables) -> Path:
    """A protocol file: task sbirtest, short timing, plus the given tables' settings."""
    settings = {
        "timing": {"stimulus_s": 0.6, "blank_s": 0.4, "anchor_demo_s": 0.6},
        "display": {"fullscreen": False},
        # The tests start many sessions from one address; the limit is tested on its own.
        "online": {"stimulus_px": 200, "starts_per_minute": 0},
    }
    for table, values in tables.items():
        settings.setdefault(table, {}).update(values)
    lines = ['name = "online-test"', 'task = "sbirtest"']
    for table, values in settings.items():
        lines.append(f"[{table}]")
        for key, value in values.items():
            lines.append(f"{key} = {toml_value(value)}")
    path = folder / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class Server:
    """`sbir-study serve` in a subprocess on 127.0.0.1 (killed at the end); ``python`` is
    the interpreter it runs under (another checkout's, for a benchmark beside it)."""

    def __init__(
        self,
        protocol: Path,
        stimuli: Path,
        data: Path,
        db: str | None = None,
        workers: int = 1,
        port: int | None = None,
        python: str = sys.executable,
        root_path: str = "",
        admin_token_file: Path | None = None,
    ) -> None:
        self.protocol, self.stimuli, self.data, self.db = protocol, stimuli, data, db
        self.root_path, self.admin_token_file = root_path, admin_token_file
        self.python = python
        self.workers = workers
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.process: subprocess.Popen | None = None
        self.log = data.parent / f"serve-{self.port}.log"

    def start(self, timeout: float = 60.0) -> Server:
        command = [
            self.python,
            "-m",
            "sbir_study",
            "serve",
            "--protocol",
            str(self.protocol),
            "--stimuli",
            str(self.stimuli),
            "--data",
            str(self.data),
            "--port",
            str(self.port),
            "--workers",
            str(self.workers),
        ]
        if self.db:
            command += ["--db", self.db]
        if self.root_path:  # served as behind a proxy that takes the prefix off
            command += ["--root-path", self.root_path]
        environment = {**os.environ, "SBIR_STUDY_ADMIN_TOKEN": ADMIN_TOKEN}
        if self.admin_token_file:
            command += ["--admin-token-file", str(self.admin_token_file)]
            del environment["SBIR_STUDY_ADMIN_TOKEN"]
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=environment,
                start_new_session=True,
                # Another interpreter's package, not one of this working folder.
                cwd=None if self.python == sys.executable else self.data.parent,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(
                    f"serve exited {self.process.returncode}: {self.log.read_text()[-2000:]}"
                )
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "healthz", timeout=1.0).status_code == 200:
                    return self
            time.sleep(0.1)
        self.stop()
        raise AssertionError(f"serve did not answer within {timeout} s: {self.log.read_text()}")

    def kill(self) -> None:
        """SIGKILL the server and its workers (the whole process group), as a crash would."""
        if self.process and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def worker_pids(self) -> list[int]:
        """The process ids of the server's workers (the serve process's children)."""
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        return [int(pid) for pid in children.read_text().split()]

    def kill_worker(self) -> int:
        """SIGKILL one worker, as a crash or the out-of-memory killer would; its process id."""
        pid = self.worker_pids()[0]
        os.kill(pid, signal.SIGKILL)
        return pid

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()

    def admin(self, path: str) -> httpx.Response:
        return httpx.get(
            self.url + path, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=30.0
        )


class Postgres:
    """A private PostgreSQL server: initdb in a temporary folder, 127.0.0.1 only, run as
    the unprivileged user ``nobody`` (the tests may run as root, which PostgreSQL refuses)."""

    def __init__(self) -> None:
        self.bindir = _postgres_bindir()
        self.folder = Path(tempfile.mkdtemp(prefix="sbir-pg-"))
        self.port = free_port()
        self.user = pwd.getpwnam("nobody") if os.geteuid() == 0 else None
        self.process: subprocess.Popen | None = None

    def _as_user(self):
        if self.user is None:
            return None
        uid, gid = self.user.pw_uid, self.user.pw_gid

        def demote():
            os.setgid(gid)
            os.setuid(uid)

        return demote

    def start(self) -> Postgres:
        data = self.folder / "data"
        os.chmod(self.folder, 0o755)
        if self.user is not None:
            os.chown(self.folder, self.user.pw_uid, self.user.pw_gid)
        subprocess.run(
            [
                str(self.bindir / "initdb"),
                "-D",
                str(data),
                "-U",
                "sbir",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
            check=True,
            capture_output=True,
            preexec_fn=self._as_user(),
            cwd=self.folder,
        )
        command = [
            str(self.bindir / "postgres"),
            "-D",
            str(data),
            "-p",
            str(self.port),
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            f"unix_socket_directories={self.folder}",
            "-c",
            "max_connections=300",
            "-c",
            "shared_buffers=64MB",
        ]
        self.log = open(self.folder / "postgres.log", "ab")
        self.process = subprocess.Popen(
            command,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            preexec_fn=self._as_user(),
            cwd=self.folder,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            ready = subprocess.run(
                [str(self.bindir / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port)],
                capture_output=True,
            )
            if ready.returncode == 0:
                break
            assert self.process.poll() is None, (self.folder / "postgres.log").read_text()
            time.sleep(0.2)
        else:
            raise AssertionError("PostgreSQL did not start")
        self.counter = 0
        return self

    def new_database(self) -> str:
        """A fresh, empty database's address."""
        self.counter += 1
        name = f"study{self.counter}"
        subprocess.run(
            [
                str(self.bindir / "createdb"),
                "-h",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-U",
                "sbir",
                name,
            ],
            check=True,
            capture_output=True,
        )
        return f"postgresql://sbir@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # fast shutdown
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def _postgres_bindir() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"))
    assert found, "PostgreSQL is not installed (Debian package postgresql); make install does it"
    return found[-1].parent


def chromium(width: int = 1400, height: int = 1000, screen: tuple[int, int] = (1920, 1200)):
    """Headless Chromium under Selenium, with the flags that keep it off the network; its
    window is ``width`` x ``height`` on a screen of ``screen`` (what full screen gives)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    assert Path(CHROMIUM).exists(), "Chromium is missing (Debian chromium); make install does it"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="sbir-chromium-")
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
        f"--window-size={width},{height}",
        f"--screen-info={{0,0 {screen[0]}x{screen[1]}}}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.profile_folder = profile
    return driver


def make_client(tmp_path, online_set, *, url=None, root_path="", **tables):
    """A TestClient of the app on ``url`` (default: SQLite in ``tmp_path``), its protocol
    given ``tables``; under ``root_path``, as uvicorn's ``--root-path`` serves it (the
    request's path whole in ``scope["path"]``, the prefix in ``scope["root_path"]``), and
    requested at paths relative to it."""
    protocol = write_protocol(tmp_path, **tables)
    db = tmp_path / "online.sqlite3"
    app, study = build_app(
        ServeSettings(
            protocol=str(protocol),
            stimuli=str(online_set),
            db=url or f"sqlite:///{db}",
            admin_token=ADMIN_TOKEN,
            max_body=65_536,
        )
    )
    client = TestClient(app, base_url=f"http://testserver{root_path}", root_path=root_path)
    client.db = db
    client.study = study
    return client


def start(client, label="p01", token=None, **extra):
    token = token or secrets.token_urlsafe(32)
    answer = client.post("/api/sessions", json={"participant": label, "token": token, **extra})
    return answer, token


def report(
    trial: dict,
    number: int,
    presses=(),
    *,
    rating="auto",
    stimulus_s=0.6,
    blank_s=0.4,
    onset=None,
    screen_presses=(),
):
    """A trial report as the page sends it: presses are (key, seconds from onset). The session
    began at 5 s on the page's clock; trial ``number`` shows at ``onset``, by default
    ``5 + number`` (each trial 1 s after the one before, as the test protocol's are).
    ``screen_presses`` are (key, seconds before the onset, screen): keys of the screens
    since the previous trial."""
    onset = 5.0 + number if onset is None else onset
    blank_onset = onset + stimulus_s
    events = [{"code": f"Digit{k}", "key": k, "t": onset + t} for k, t in presses]
    if rating == "auto":
        scored = score_trial(
            [(k, onset + t) for k, t in presses],
            onset,
            blank_onset + blank_s,
            rating_key_map([str(k) for k in range(1, 8)]),
        )
        rating = None if trial["phase"] == "anchor_demo" else scored.rating
    return {
        "sketch_id": trial["sketch_id"],
        "image_id": trial["image_id"],
        "onset": onset,
        "blank_onset": blank_onset,
        "next_onset": blank_onset + blank_s,
        "session_start": 5.0,
        "frames": [onset, blank_onset, blank_onset + blank_s],
        "events": events,
        "screen_events": [
            {
                "code": f"Digit{k}" if k.isdigit() else f"Key{k.upper()}",
                "key": k,
                "t": onset - before,
                "screen": screen,
            }
            for k, before, screen in screen_presses
        ],
        "paused_before": 0.0,
        "rating": rating,
    }


#: experiment.js in a Node context holding the few browser objects it touches: its settings'
#: request fails, so it does nothing else; then EXPRESSION is evaluated and printed as JSON.
_PAGE_HARNESS = r"""
const fs = require("fs");
const vm = require("vm");
const storage = JSON.parse(process.argv[2]);
const escape = (t) => String(t).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const context = {
  console,
  setTimeout,
  window: {},
  document: {
    body: { innerHTML: "", dataset: { wentWrong: "{error}", settingsFailed: "no settings" } },
    documentElement: {},
    createElement: () => {
      let content = "";
      return { set textContent(v) { content = v; }, get innerHTML() { return escape(content); } };
    },
  },
  localStorage: {
    getItem: (k) => (k in storage ? storage[k] : null), setItem() {}, removeItem() {},
  },
  fetch: () => Promise.reject(new Error("offline")),
};
vm.createContext(context);
vm.runInContext(fs.readFileSync(process.argv[1], "utf-8"), context);
setTimeout(() => {
  const result = vm.runInContext(fs.readFileSync(0, "utf-8"), context);
  process.stdout.write(JSON.stringify(result));
}, 50);
"""


def run_page(expression: str, storage: dict | None = None):
    """What ``expression`` (JavaScript, its last statement's value) gives in the online page's
    script (study/online/web/experiment.js), run by Node without a browser: for the page's
    functions that need no screen. ``storage`` is its localStorage. Node comes with
    ``make install`` (the BIDS validator's npm)."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("Node.js is not installed (make install installs it)")
    page = Path(__file__).resolve().parents[3] / "study" / "online" / "web" / "experiment.js"
    run = subprocess.run(
        [node, "-e", _PAGE_HARNESS, str(page), json.dumps(storage or {})],
        input=expression,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)
