"""The online session under load and in a real browser, on the loopback only.

1. Load: ``--participants`` simulated participants (sbir_study.study.online.loadtest: the page's
   retry-until-acknowledged queue, over HTTP) each post one trial every ``--pace`` seconds
   (the paper's 2 s + 1 s) for ``--duration`` seconds against a real ``sbir-study serve``:
   on SQLite (one process), and on a private PostgreSQL server (two worker processes).
   Halfway through the full load, serve's workers are killed with SIGKILL and serve forks
   them again (``--kill workers``, the default), or the whole serve is killed and started
   again 1 s later (``--kill serve``; the file append is always killed and started again).
   Reported: trials acknowledged and stored, lost (acknowledged but not stored) and stored
   twice; the server's own time per trial (``Server-Timing``) and the round trip, p50/p99,
   of the trials and apart of the session starts; throughput at full load; the restart
   (the workers' kill, or the new process's start -> first answered request, polled every
   10 ms); and the clients'
   own lateness and CPU, so that an overloaded client is not taken for a slow server.
   The goals of issue 26 (1,000 participants, 333 trials/s offered; trial server time p99
   < 50 ms on SQLite and on PostgreSQL with 2 workers, round trip p99 < 250 ms there;
   restart < 1 s; nothing lost or twice) are printed beside the figures, with a table for
   benchmarks/RESULTS.md.

   Beside it, in the same run, what a jsPsych study is usually given to save its data: an
   endpoint that appends each posted trial to a file (the ``save_data`` script of the
   jsPsych documentation, here as a Starlette route under the same uvicorn), with the same
   clients, load and kill. It answers faster; it stores a retried trial twice and keeps no
   order or ownership.

   With ``--two-servers``, also scale out as the README deploys it (``two_server_run``): two
   ``serve`` processes on two ports against one PostgreSQL, the participants spread over both;
   halfway the first is killed with SIGKILL and not started again, and its participants'
   retries go to the second, as a proxy sends them. Reported as above, with the sessions
   that moved and the trials each server acknowledged.

   With ``--cold-starts N`` (10 by default), a whole ``serve`` and the file append are each
   started N times, alternated, as after a reboot: seconds to the first answered request
   (with ``--skip load`` too); ``--cold-starts-against PYTHON`` starts another checkout's
   ``serve`` beside them.

2. Write path, in process (no HTTP): 32 participants on SQLite each store 40 trials as fast
   as they can, in 32 threads, through the service (scoring and storing), once with one
   transaction per trial (no group commit) and once through the group commit,
   alternated twice. Reported: trials/s, CPU per trial and latency p50/p99 of each, so the
   lever is measured side by side on whatever machine runs it.

2b. Session starts beside trials, in process (no HTTP): 100 participants on SQLite each store
   one trial a second while 17 new participants a second start (1,000 arriving over 60 s),
   against the same trials alone, alternated twice, 20 s each. Reported: trial time and
   start time p50/p99, starts done of those offered, CPU: what the starts cost the trials.

3. Browser: one participant in headless Chromium rates ``--trials`` pairs (0.6 s + 0.4 s),
   one to three key presses per trial at random times, sent through the DevTools protocol.
   Reported: recorded time - sent time of every press and of each final rating (rt), and
   the measured stimulus and blank durations against the protocol's.

    python benchmarks/bench_online.py [--participants 1000] [--duration 180] [--trials 120]
        [--skip browser] [--two-servers] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parents[1]))
from sbir_study.stimuli import SetDesign, generate_set
from sbir_study.study.online.loadtest import run_load
from tests.study.online.browser_participant import Participant
from tests.study.online.support import (
    Postgres,
    Server,
    chromium,
    free_port,
    query,
    write_protocol,
)

_BASELINE = textwrap.dedent('''
    """save_data as the jsPsych documentation has it: append what is posted to a file."""
    import os
    import time
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    PATH = os.environ["BASELINE_FILE"]

    async def save(request):
        began = time.perf_counter()
        body = await request.body()
        with open(PATH, "ab") as handle:
            handle.write(request.url.path.encode() + b"\\t" + body + b"\\n")
        took = (time.perf_counter() - began) * 1000
        return JSONResponse({"ok": True}, status_code=201,
                            headers={"Server-Timing": f"app;dur={took:.2f}"})

    async def start(request):
        body = await request.json()
        trials = [{"trial": k, "phase": "main", "sketch_id": "s", "image_id": f"i{k}"}
                  for k in range(1, 2000)]
        return JSONResponse({"session_id": body["participant"], "trials": trials}, 201)

    async def health(request):
        return JSONResponse("ok")

    app = Starlette(routes=[Route("/api/sessions", start, methods=["POST"]),
                            Route("/api/sessions/{sid}/trials/{n}", save, methods=["PUT"]),
                            Route("/healthz", health)])
''')


class Baseline(Server):
    """The save_data endpoint under uvicorn (killed and restarted like ours)."""

    def __init__(self, folder: Path) -> None:
        super().__init__(Path(), Path(), folder / "data")
        self.folder = folder
        self.file = folder / "trials.jsonl"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "baseline_app.py").write_text(_BASELINE)

    def start(self, timeout: float = 30.0):
        import contextlib

        import httpx

        command = [
            sys.executable,
            "-m",
            "uvicorn",
            "baseline_app:app",
            "--port",
            str(self.port),
            "--log-level",
            "warning",
        ]
        environment = {**os.environ, "BASELINE_FILE": str(self.file)}
        self.process = subprocess.Popen(
            command,
            cwd=self.folder,
            env=environment,
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "healthz", timeout=1.0).status_code == 200:
                    return self
            time.sleep(0.1)
        raise RuntimeError("the baseline did not start")


def percentiles(values) -> dict | None:
    array = np.asarray(values, dtype=float) * 1000.0
    array = array[~np.isnan(array)]  # answers without a Server-Timing header
    if not array.size:
        return None
    return {
        "p50_ms": round(float(np.percentile(array, 50)), 2),
        "p99_ms": round(float(np.percentile(array, 99)), 2),
        "max_ms": round(float(array.max()), 2),
    }


def first_answer(url: str, began: float, timeout: float = 120.0) -> float | None:
    """Seconds from ``began`` to the first 200 of ``healthz`` (polled every 10 ms)."""
    import httpx

    with httpx.Client(timeout=0.5) as client:
        while time.monotonic() < began + timeout:
            try:
                if client.get(url + "healthz").status_code == 200:
                    return time.monotonic() - began
            except httpx.HTTPError:
                pass
            time.sleep(0.01)
    return None


def by_phase(result, args, killed_at: float | None = None) -> dict:
    """The trials' server time and round trip in each part of a load run, by when they were
    answered: while the participants arrive, at full load before the kill, the 15 s after
    it (the server down, then started again), and the full load after that. The kill's
    time is the clock's when it was sent (``killed_at``, ``time.time()``): the clients
    begin a second or more after the kill's timer, once their processes are up."""
    kill = args.ramp + (args.duration - args.ramp) / 2
    if killed_at is not None:
        kill = killed_at - result.started
    at = np.asarray(result.answered_at) - result.started
    parts = {
        "arrivals": (0.0, args.ramp),
        "full load": (args.ramp, kill),
        "kill and restart": (kill, kill + 15.0),
        "after": (kill + 15.0, np.inf),
    }
    figures = {}
    for name, (begin, end) in parts.items():
        chosen = (at >= begin) & (at < end)
        figures[name] = {
            "trials": int(chosen.sum()),
            "server_time": percentiles(np.asarray(result.server_times)[chosen]),
            "round_trip": percentiles(np.asarray(result.latencies)[chosen]),
        }
    return figures


def load_run(name, server, args, db_url=None, baseline_file=None) -> dict:
    restart = {}

    def kill_and_restart():
        time.sleep(args.ramp + (args.duration - args.ramp) / 2)
        if args.kill == "workers" and not isinstance(server, Baseline):
            # Every worker at once, as a crash of the processes that answer would: serve's
            # own process forks them again (seconds from the kill to the first answer).
            pids = server.worker_pids()
            restart["killed_at"] = time.time()
            began = time.monotonic()
            for pid in pids:
                os.kill(pid, signal.SIGKILL)
            answered = first_answer(server.url, began)
        else:
            # The whole process group (serve, or the append's uvicorn), started again 1 s
            # later (seconds from the new process's start to its first answer).
            restart["killed_at"] = time.time()
            server.kill()
            time.sleep(1.0)
            began = time.monotonic()
            starting = threading.Thread(target=server.start)
            starting.start()
            answered = first_answer(server.url, began)
            starting.join()
        restart["seconds"] = round(answered, 3) if answered is not None else None

    killer = threading.Thread(target=kill_and_restart)
    killer.start()
    result = run_load(
        server.url,
        args.participants,
        args.duration,
        pace_s=args.pace,
        stimulus_s=args.pace * 2 / 3,
        seed=7,
        ramp_s=args.ramp,
        processes=args.clients,
    )
    killer.join()
    workers = args.kill == "workers" and not isinstance(server, Baseline)
    killed = "workers" if workers else "process group"
    at = np.asarray(result.acknowledged_at) - result.started
    row = {
        "server": name,
        "participants": args.participants,
        "offered_per_s": round(args.participants / args.pace, 1),
        "acknowledged": len(result.acknowledged),
        "retries": result.retries,
        "acknowledged_again": result.duplicates,
        "refused": len(result.refused),
        "throughput_per_s": round(len(result.acknowledged) / result.elapsed, 1),
        # Trials acknowledged once all participants had arrived, per second of that time.
        "full_load_per_s": round(
            float(((at >= args.ramp) & (at < args.duration)).sum()) / (args.duration - args.ramp),
            1,
        ),
        "restart_s": restart.get("seconds"),
        "killed": killed,
        "server_time": percentiles(result.server_times),
        "round_trip": percentiles(result.latencies),
        "start_server_time": percentiles(result.start_server_times),
        "start_round_trip": percentiles(result.start_latencies),
        "client_lag": percentiles(result.lags),
        "client_cpu_share": [round(c / result.elapsed, 2) for c in result.client_cpu],
        "kill_at_s": round(restart["killed_at"] - result.started, 2)
        if "killed_at" in restart
        else None,
        "by_phase": by_phase(result, args, restart.get("killed_at")),
    }
    if db_url is not None:
        stored = query(
            db_url,
            "SELECT s.participant, t.trial FROM trials t JOIN sessions s ON s.id = t.session_id",
        )
        keys = [tuple(r) for r in stored]
    else:
        keys = []
        for line in baseline_file.read_text().splitlines():
            path = line.split("\t", 1)[0].split("/")
            keys.append((path[3], int(path[5])))
    stored = set(keys)
    row["stored"] = len(stored)
    row["stored_twice"] = len(keys) - len(stored)
    row["lost"] = sum(1 for key in result.acknowledged if key not in stored)
    print(json.dumps(row), flush=True)
    return row


def cold_starts(
    folder: Path, protocol: Path, stimuli: Path, times: int, against: str | None = None
) -> dict:
    """Seconds from starting a process to its first answer, ``times`` each, alternated: the
    file append's uvicorn and a whole ``serve`` (SQLite; the set's check kept, as at any
    start but the first), fresh processes, as after a kill of everything or a reboot; with
    ``against`` (another checkout's Python), that checkout's ``serve`` too."""
    baseline = Baseline(folder / "cold-baseline")
    servers: dict[str, Server] = {"save_data": baseline}
    servers["serve"] = Server(protocol, stimuli, folder / "cold-serve")
    if against:
        servers["serve_against"] = Server(
            protocol, stimuli, folder / "cold-serve-against", python=against
        )
    for name, server in servers.items():
        if name != "save_data":
            server.data.mkdir(parents=True, exist_ok=True)
            server.start().stop()  # the first start checks the set and keeps the check
    took: dict[str, list[float]] = {name: [] for name in servers}
    for _ in range(times):
        for name, server in servers.items():
            server.port = free_port()
            server.url = f"http://127.0.0.1:{server.port}/"
            began = time.monotonic()
            starting = threading.Thread(target=server.start)
            starting.start()
            took[name].append(first_answer(server.url, began))
            starting.join()
            server.kill()
    figures = {
        name: {
            "median_s": round(statistics.median(values), 3),
            "min_s": round(min(values), 3),
            "max_s": round(max(values), 3),
        }
        for name, values in took.items()
    }
    figures["ratio_of_medians"] = round(
        figures["serve"]["median_s"] / figures["save_data"]["median_s"], 2
    )
    print(json.dumps({"cold_starts": figures}), flush=True)
    return figures


def two_server_run(folder: Path, protocol: Path, stimuli: Path, args) -> dict:
    """Two ``serve`` (one worker each) on one PostgreSQL, the participants spread over both,
    the first killed halfway and not started again (see the module docstring)."""
    postgres = Postgres().start()
    servers: list[Server] = []
    try:
        url = postgres.new_database()
        servers = [Server(protocol, stimuli, folder / f"two-{k}", db=url).start() for k in (1, 2)]
        first, second = servers

        def kill_first():
            time.sleep(args.ramp + (args.duration - args.ramp) / 2)
            first.kill()

        killer = threading.Thread(target=kill_first)
        killer.start()
        result = run_load(
            [first.url, second.url],
            args.participants,
            args.duration,
            pace_s=args.pace,
            stimulus_s=args.pace * 2 / 3,
            seed=7,
            ramp_s=args.ramp,
            processes=args.clients,
        )
        killer.join()
        rows = query(
            url,
            "SELECT s.participant, t.trial FROM trials t JOIN sessions s ON s.id = t.session_id",
        )
    finally:
        for server in servers:
            server.stop()
        postgres.stop()
    keys = [tuple(r) for r in rows]
    stored = set(keys)
    moved = {
        label
        for (label, _), base in result.acknowledged_by.items()
        if base == second.url and result.started_by.get(label) == first.url
    }
    row = {
        "server": "serve, PostgreSQL, 2 servers on 2 ports, the first killed",
        "participants": args.participants,
        "acknowledged": len(result.acknowledged),
        "acknowledged_by_first": sum(b == first.url for b in result.acknowledged_by.values()),
        "acknowledged_by_second": sum(b == second.url for b in result.acknowledged_by.values()),
        "sessions_moved": len(moved),
        "retries": result.retries,
        "acknowledged_again": result.duplicates,
        "refused": len(result.refused),
        "throughput_per_s": round(len(result.acknowledged) / result.elapsed, 1),
        "round_trip": percentiles(result.latencies),
        "server_time": percentiles(result.server_times) if result.server_times else None,
        "stored": len(stored),
        "stored_twice": len(keys) - len(stored),
        "lost": sum(1 for key in result.acknowledged if key not in stored),
    }
    print(json.dumps(row), flush=True)
    return row


def started_sessions(study, count: int, trials: int) -> list[tuple[int, str, list[dict]]]:
    """``count`` sessions started in process (labels w0, w1, ...), each with the reports of
    its first ``trials`` trials as the page sends them: (session id, token, bodies)."""
    from sbir_study.study.online.participant_routes import TrialIn
    from tests.study.online.support import report

    work = []
    for k in range(count):
        token = "t" * 32 + str(k)
        state, _ = study.create_session(
            f"w{k}", token, details={}, environment={"refresh_hz": 60.0}, url_parameters={}
        )
        bodies = [
            TrialIn(**report(state["trials"][n - 1], n)).model_dump() for n in range(1, trials + 1)
        ]
        work.append((state["session_id"], token, bodies))
    return work


def write_path_run(folder: Path, stimuli: Path, participants=32, trials=40) -> list[dict]:
    """Group commit against one transaction per trial, in process (see the docstring, 2)."""
    from tests.study.online.support import make_client

    class OneTransactionPerTrial:
        def __init__(self, engine) -> None:
            self.engine = engine

        def run(self, work):
            with self.engine.begin() as connection:
                return work(connection)

    rows = []
    for number, kind in enumerate(["one transaction per trial", "group commit"] * 2):
        where = folder / f"write-path-{number}"
        where.mkdir()
        # One trial a second on the session's clock (0.6 s + 0.4 s), as support.report
        # places them: 40 trials lie within the session's life the server allows.
        study = make_client(where, stimuli, timing={"stimulus_s": 0.6, "blank_s": 0.4}).study
        if kind != "group commit":
            study.__dict__["writer"] = OneTransactionPerTrial(study.engine)
        work = started_sessions(study, participants, trials)
        latencies = []

        def post(session_id, token, bodies, study=study, latencies=latencies):
            for n, body in enumerate(bodies, start=1):
                began = time.perf_counter()
                study.store_trial(session_id, token, n, body)
                latencies.append(time.perf_counter() - began)

        threads = [threading.Thread(target=post, args=item) for item in work]
        began, cpu = time.perf_counter(), time.process_time()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall, cpu = time.perf_counter() - began, time.process_time() - cpu
        row = {
            "write_path": kind,
            "trials": len(latencies),
            "trials_per_s": round(len(latencies) / wall, 1),
            "cpu_ms_per_trial": round(cpu / len(latencies) * 1000, 2),
            "latency": percentiles(latencies),
        }
        study.engine.dispose()
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def starts_run(folder: Path, stimuli: Path, writers=100, rate=17.0, seconds=20.0) -> list[dict]:
    """Trials alone against trials while a crowd arrives, in process (see the docstring, 2b)."""
    import random

    from tests.study.online.support import make_client

    rows = []
    for number, kind in enumerate(["trials alone", "trials while starts arrive"] * 2):
        where = folder / f"starts-{number}"
        where.mkdir()
        study = make_client(where, stimuli).study
        work = started_sessions(study, writers, int(seconds) + 2)
        trial_times, start_times = [], []
        end = time.monotonic() + seconds

        def post(session_id, token, bodies, study=study, times=trial_times, end=end):
            due = time.monotonic() + random.random()  # one trial a second, as the test protocol
            for n, body in enumerate(bodies, start=1):
                time.sleep(max(0.0, due - time.monotonic()))
                if time.monotonic() > end:
                    return
                began = time.perf_counter()
                study.store_trial(session_id, token, n, body)
                times.append(time.perf_counter() - began)
                due += 1.0

        def arrive(j, threads=6, study=study, times=start_times, end=end, number=number):
            due, k = time.monotonic() + j / rate, 0
            while True:
                time.sleep(max(0.0, due - time.monotonic()))
                if time.monotonic() > end:
                    return
                began = time.perf_counter()
                study.create_session(
                    f"a{number}x{j}x{k}",
                    "u" * 32 + f"{j}x{k}",
                    details={},
                    environment={"refresh_hz": 60.0},
                    url_parameters={},
                )
                times.append(time.perf_counter() - began)
                k, due = k + 1, due + threads / rate

        threads = [threading.Thread(target=post, args=item) for item in work]
        if kind != "trials alone":
            threads += [threading.Thread(target=arrive, args=(j,)) for j in range(6)]
        cpu = time.process_time()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        row = {
            "starts": kind,
            "trials": len(trial_times),
            "trial": percentiles(trial_times),
            "starts_done": len(start_times),
            "starts_offered": 0 if kind == "trials alone" else int(rate * seconds),
            "start": percentiles(start_times),
            "cpu_cores": round((time.process_time() - cpu) / seconds, 2),
        }
        study.engine.dispose()
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def browser_run(folder: Path, stimuli: Path, trials: int) -> dict:
    protocol = write_protocol(folder, anchoring={"enabled": False, "repeat": False})
    server = Server(protocol, stimuli, folder / "browser-data").start()
    driver = chromium()
    rng = random.Random(11)
    try:
        participant = Participant(driver, server.url)
        participant.open("?participant=bench")
        participant.intake({})
        participant.start_trials()
        planned = participant.session()["state"]["trials"][:trials]
        for trial in planned:
            onset = participant.onset_of(trial["trial"])["onset"]
            for at in sorted(rng.uniform(0.08, 0.92) for _ in range(rng.randint(1, 3))):
                participant.key_at(str(rng.randint(1, 7)), onset + at, trial["trial"])
        windows = driver.execute_script("return window.sbir.session.onsets")
        participant.wait(
            lambda: driver.execute_script(
                "const s = window.sbir.session; return s.sender.queue.length === 0 && !s.closing"
                " && s.sender.acknowledged >= arguments[0]",
                len(planned) - 1,
            ),
            timeout=60,
            what="the records acknowledged",
        )
    finally:
        driver.quit()
        shutil.rmtree(driver.profile_folder, ignore_errors=True)
        time.sleep(1.0)
        server.stop()
    stored = {
        r.trial: r
        for r in query(
            f"sqlite:///{folder / 'browser-data' / 'online.sqlite3'}",
            "SELECT trial, rt, presses, stim_duration, blank_duration FROM trials",
        )
    }
    press_errors, rt_errors, slow = [], [], 0
    for window in windows[: len(stored)]:
        row = stored[window["trial"]]
        sent = [
            p for p in participant.presses if window["onset"] <= p.page_time < window["window_end"]
        ]
        recorded = [float(item.split("@")[1]) for item in (row.presses or "").split()]
        assert len(recorded) == len(sent), (window, recorded, sent)
        for value, press in zip(recorded, sent, strict=True):
            press_errors.append(value - (press.page_time - window["onset"]))
            slow += press.sent_within > 0.010
        if sent:
            rt_errors.append(row.rt - (sent[-1].page_time - window["onset"]))
    stim = [stored[k].stim_duration - 0.6 for k in stored]
    blank = [stored[k].blank_duration - 0.4 for k in stored if k < max(stored)]

    def stats(values):
        array = np.abs(np.asarray(values)) * 1000.0
        return {
            "n": len(values),
            "median_ms": round(float(np.median(array)), 2),
            "p99_ms": round(float(np.percentile(array, 99)), 2),
            "max_ms": round(float(array.max()), 2),
        }

    row = {
        "trials": len(stored),
        "press_error": stats(press_errors),
        "rt_error": stats(rt_errors),
        "stimulus_duration_error": stats(stim),
        "blank_duration_error": stats(blank),
        "presses_sent_slowly": slow,
    }
    print(json.dumps(row), flush=True)
    return row


def _ms(figures: dict | None, key: str) -> str:
    return f"{figures[key]:,.1f}" if figures else "n/a"


def table(rows: list[dict]) -> str:
    """The load figures as benchmarks/RESULTS.md shows them, one row per server."""
    lines = [
        "| server | acknowledged | lost | stored twice | trials/s at full load (offered) "
        "| restart to first answer (s) (what was killed) | trial server time p50 / p99 (ms) "
        "| trial round trip p50 / p99 (ms) | session start server time p50 / p99 (ms) "
        "| client lag p99 (ms) | client CPU (share of a core, each) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['server']} | {row['acknowledged']:,} | {row['lost']} | "
            f"{row['stored_twice']} | {row['full_load_per_s']} ({row['offered_per_s']}) | "
            f"{row['restart_s']} ({row['killed']}) | {_ms(row['server_time'], 'p50_ms')} / "
            f"{_ms(row['server_time'], 'p99_ms')} | {_ms(row['round_trip'], 'p50_ms')} / "
            f"{_ms(row['round_trip'], 'p99_ms')} | {_ms(row['start_server_time'], 'p50_ms')} / "
            f"{_ms(row['start_server_time'], 'p99_ms')} | {_ms(row['client_lag'], 'p99_ms')} | "
            f"{', '.join(str(c) for c in row['client_cpu_share'])} |"
        )
    return "\n".join(lines)


def goals(results: dict) -> list[str]:
    """Each goal of issue 26 ("A crowd at once") against this run's figures."""

    def p99(row, key):
        return row[key]["p99_ms"] if row.get(key) else float("inf")

    said = []
    for key, round_trip in (("sqlite", None), ("postgresql", 250.0)):
        row = results.get(key)
        if row is None:
            continue
        checks = [
            ("trial server time p99 < 50 ms", p99(row, "server_time") < 50.0),
            ("nothing lost or stored twice", row["lost"] == 0 and row["stored_twice"] == 0),
            (
                f"restart < 1 s ({row['killed']} killed)",
                row["restart_s"] is not None and row["restart_s"] < 1.0,
            ),
        ]
        if round_trip is not None:
            checks.append(("trial round trip p99 < 250 ms", p99(row, "round_trip") < round_trip))
        for what, met in checks:
            said.append(f"{row['server']}: {what}: {'met' if met else 'NOT met'}")
    cold = results.get("cold_starts")
    if cold:
        met = cold["serve"]["median_s"] < 1.0
        said.append(
            f"a whole serve started anew: first answer < 1 s (median of "
            f"{cold['serve']['median_s']} s): {'met' if met else 'NOT met'}"
        )
    return said


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--participants", type=int, default=1000)
    parser.add_argument(
        "--duration",
        type=float,
        default=180.0,
        help="seconds in all: the arrivals (--ramp), then all posting",
    )
    parser.add_argument("--pace", type=float, default=3.0)
    parser.add_argument(
        "--ramp",
        type=float,
        default=60.0,
        help="participants arrive evenly over this many seconds (default 60)",
    )
    parser.add_argument("--clients", type=int, default=3, help="client processes")
    parser.add_argument("--trials", type=int, default=120)
    parser.add_argument(
        "--skip",
        choices=("load", "write-path", "starts", "browser"),
        action="append",
        default=[],
    )
    parser.add_argument(
        "--kill",
        choices=("workers", "serve"),
        default="workers",
        help="halfway, SIGKILL serve's workers (forked again by serve; the default) or the "
        "whole serve, started again 1 s later",
    )
    parser.add_argument(
        "--cold-starts",
        type=int,
        default=10,
        help="also start a whole serve and the file append this many times each (0: not)",
    )
    parser.add_argument(
        "--cold-starts-against",
        metavar="PYTHON",
        help="also start another checkout's serve (its interpreter) in the cold starts",
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument(
        "--two-servers",
        action="store_true",
        help="also two serve processes on one PostgreSQL, the first killed (two_server_run)",
    )
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-online-"))
    try:
        stimuli = generate_set(
            folder / "set",
            SetDesign(sketches=31, images_per_sketch=40, anchor_sketches=3, width=96, height=72),
            seed=1,
        )
        results = {}
        protocol = write_protocol(
            folder,
            name="load.toml",
            timing={
                "stimulus_s": args.pace * 2 / 3,
                "blank_s": args.pace / 3,
                "anchor_demo_s": args.pace * 2 / 3,  # the load clients show every pair alike
            },
        )
        if "load" not in args.skip:
            baseline = Baseline(folder / "baseline")
            baseline.start()
            results["baseline"] = load_run(
                "save_data (append to a file)", baseline, args, baseline_file=baseline.file
            )
            baseline.stop()
            sqlite = Server(protocol, stimuli, folder / "sqlite", port=free_port()).start()
            results["sqlite"] = load_run(
                "serve, SQLite",
                sqlite,
                args,
                db_url=f"sqlite:///{folder / 'sqlite' / 'online.sqlite3'}",
            )
            sqlite.stop()
            postgres = Postgres().start()
            try:
                url = postgres.new_database()
                server = Server(protocol, stimuli, folder / "pg", db=url, workers=2).start()
                results["postgresql"] = load_run(
                    "serve, PostgreSQL, 2 workers", server, args, db_url=url
                )
                server.stop()
            finally:
                postgres.stop()
            if args.two_servers:
                results["two_servers"] = two_server_run(folder, protocol, stimuli, args)
        if args.cold_starts:
            results["cold_starts"] = cold_starts(
                folder, protocol, stimuli, args.cold_starts, args.cold_starts_against
            )
        if "write-path" not in args.skip:
            results["write_path"] = write_path_run(folder, stimuli)
        if "starts" not in args.skip:
            results["starts"] = starts_run(folder, stimuli)
        if "browser" not in args.skip:
            results["browser"] = browser_run(folder, stimuli, args.trials)
        print(json.dumps(results, indent=2))
        loads = [results[k] for k in ("baseline", "sqlite", "postgresql") if k in results]
        if loads:
            print(table(loads))
            print("\n".join(goals(results)))
        if args.json:
            args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
