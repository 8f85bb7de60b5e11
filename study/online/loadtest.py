"""Simulated online participants over HTTP, to load-test a server as the browsers would.

Each participant starts a session (token and label drawn on its side, as the
page does), then sends its trials one after another at the protocol's pace,
each as soon as its window closes, keeping an unacknowledged trial and
retrying it with back-off (connection errors, 5xx, 408/425/429, a server being
restarted) before the next, as the page's queue does: the same first delay,
doubling and ceiling, each wait drawn between half and one and a half times the
delay (:data:`TRIAL_RETRY`), and with each trial the number of trials waiting
behind it (``queued``, for the status page's live load). A session start is
tried as the page tries it (:data:`START_RETRY`: eight attempts). Every
request's latency and outcome is recorded, so that a run can be checked
against the database: every acknowledged trial stored, none twice.

Given several base URLs (servers on one database, as behind a proxy), the
participants are spread over them in turn; a participant stays with its
server until a request to it fails (no answer, or a 5xx), and then sends
that request and the rest to the next one, as a proxy takes a dead server
out of its rotation.

The clients measure themselves too, so that an overloaded client is not taken for a slow
server: how late a client woke for each trial against its due time (``lags``), and the CPU
time each client process used over the run (``client_cpu``, seconds per process). They
reuse their connections (one ``aiohttp.ClientSession`` per process, keep-alive), as a
browser does; aiohttp because its client costs a fraction of httpx's CPU per request
(benchmarks/bench_load_client.py), which leaves the machine's CPU to the server.
"""

from __future__ import annotations

import asyncio
import functools
import json
import random
import secrets
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

__all__ = ["LoadResult", "run_load"]

NAN = float("nan")  # a server time not sent


@dataclass(frozen=True)
class Retry:
    """How a request is tried again: wait ``first_s`` (times a draw between 0.5 and 1.5)
    after the first failure, twice as long after each further one, never more than
    ``most_s``; give up after ``attempts`` tries (None: not before the deadline)."""

    first_s: float
    most_s: float
    attempts: int | None = None

    def waits(self, rng: random.Random) -> Iterator[float]:
        delay = self.first_s
        while True:
            yield delay * (0.5 + rng.random())
            delay = min(delay * 2.0, self.most_s)


#: The page's trial queue (``SbirSender`` in web/plugin-sbir-rating.js): 0.25 s, doubling,
#: at most 15 s, until acknowledged. A test holds the two to the same numbers.
TRIAL_RETRY = Retry(first_s=0.25, most_s=15.0)
#: The page's session start (web/experiment.js): 0.5 s, doubling, eight attempts.
START_RETRY = Retry(first_s=0.5, most_s=64.0, attempts=8)
#: Answers below 500 that the page tries again rather than taking as a refusal.
RETRIED_STATUSES = frozenset({408, 425, 429})


@dataclass
class LoadResult:
    """What a load run did, seen from the clients."""

    participants: int = 0
    sessions: dict = field(default_factory=dict)  # label -> session id
    started_by: dict = field(default_factory=dict)  # label -> base URL that answered its start
    acknowledged: dict = field(default_factory=dict)  # (label, trial) -> claimed rating
    acknowledged_by: dict = field(default_factory=dict)  # (label, trial) -> base URL that did
    created: int = 0
    duplicates: int = 0
    refused: list = field(default_factory=list)
    retries: int = 0
    latencies: list = field(default_factory=list)  # seconds of every answered trial request
    answered_at: list = field(default_factory=list)  # time.time() of each, in the same order
    server_times: list = field(default_factory=list)  # what the server says it took (s)
    start_latencies: list = field(default_factory=list)  # the same of the session starts
    start_server_times: list = field(default_factory=list)
    lags: list = field(default_factory=list)  # seconds each trial woke after its due time
    client_cpu: list = field(default_factory=list)  # CPU seconds of each client process
    acknowledged_at: list = field(default_factory=list)  # time.time() of each trial's 2xx
    started: float = 0.0  # time.time() when the clients began
    elapsed: float = 0.0

    def merge(self, other: LoadResult) -> None:
        """Add another client process's result: its counts and lists to these, its labels'
        entries to these dicts; the run began at the earliest start and took the longest."""
        for name, value in vars(other).items():
            if name == "started":
                self.started = min(self.started or value, value)
            elif name == "elapsed":
                self.elapsed = max(self.elapsed, value)
            elif isinstance(value, dict):
                getattr(self, name).update(value)
            else:
                setattr(self, name, getattr(self, name) + value)


def _report(
    trial: dict,
    number: int,
    pace: float,
    stimulus_s: float,
    rng: random.Random,
    keys: tuple[str, ...],
) -> tuple[dict, int | None]:
    """A plausible trial report (times on a simulated page clock) and its rating."""
    onset = 10.0 + (number - 1) * pace
    blank_onset = onset + stimulus_s
    next_onset = onset + pace
    presses = sorted(rng.uniform(0.05, pace - 0.05) for _ in range(rng.randint(0, 3)))
    events = []
    rating = None
    for at in presses:
        value = rng.randint(1, len(keys))
        events.append({"code": f"Digit{keys[value - 1]}", "key": keys[value - 1], "t": onset + at})
        rating = value
    if trial["phase"] == "anchor_demo":
        rating = None
    frames = [onset, blank_onset, next_onset]
    return {
        "sketch_id": trial["sketch_id"],
        "image_id": trial["image_id"],
        "onset": onset,
        "blank_onset": blank_onset,
        "next_onset": next_onset,
        "session_start": 9.0,
        "frames": frames,
        "events": events,
        "paused_before": 0.0,
        "rating": rating,
    }, rating


class _Route:
    """The servers a participant may send to, and the one it sends to now."""

    def __init__(self, bases: Sequence[str], first: int) -> None:
        self.bases, self.current = list(bases), first % len(bases)

    @property
    def base(self) -> str:
        return self.bases[self.current]

    def fail_over(self) -> None:
        self.current = (self.current + 1) % len(self.bases)


async def _participant(
    client,
    route: _Route,
    label: str,
    pace: float,
    stimulus_s: float,
    deadline: float,
    result: LoadResult,
    rng: random.Random,
    keys: tuple[str, ...],
    full: threading.Event | None,
) -> None:
    token = secrets.token_urlsafe(32)
    body = {"participant": label, "token": token, "environment": {"refresh_hz": 60.0}}
    # A participant who arrived before the deadline is served after it too, and sends the
    # trial it was rating, as a page does: on a machine too busy to keep the pace, every
    # participant still has trials to check (only later trials are cut at the deadline).
    send = functools.partial(
        _until_answered, client, route, deadline=deadline + 30.0, result=result, rng=rng
    )
    state = await send("POST", "api/sessions", body, None, retry=START_RETRY)
    if state is None:
        return
    result.sessions[label] = state["session_id"]
    result.started_by[label] = route.base
    if full is not None and len(result.sessions) == result.participants:
        full.set()
    headers = {"Authorization": f"Bearer {token}"}
    started = time.monotonic()
    for number, trial in enumerate(state["trials"], start=1):
        due = started + number * pace  # sent when its window closes
        if due > time.monotonic():
            await asyncio.sleep(due - time.monotonic())
            # The client's own lateness (its event loop busy): not the server's, which shows
            # as the previous trial's round trip.
            result.lags.append(time.monotonic() - due)
        if number > 1 and time.monotonic() >= deadline:
            return
        report, rating = _report(trial, number, pace, stimulus_s, rng, keys)
        # The trials whose windows closed while this one waited (the page's queue behind it).
        closed = min(int((time.monotonic() - started) / pace), len(state["trials"]))
        report["queued"] = max(0, closed - number)
        path = f"api/sessions/{state['session_id']}/trials/{number}"
        answer = await send("PUT", path, report, headers, retry=TRIAL_RETRY, trial=(label, number))
        if answer is None:
            return
        result.acknowledged[(label, number)] = rating
        result.acknowledged_by[(label, number)] = route.base
        result.acknowledged_at.append(time.time())


async def _until_answered(
    client, route, method, path, body, headers, deadline, result, rng, retry, trial=None
):
    """Send until a 2xx (returned) or a refusal (a 4xx but :data:`RETRIED_STATUSES`:
    recorded as refused); after anything else wait as ``retry`` says, then send to the
    route's next server."""
    import aiohttp

    waits = retry.waits(rng)
    tries = 0
    while time.monotonic() < deadline and (retry.attempts is None or tries < retry.attempts):
        tries += 1
        sent = time.perf_counter()
        try:
            async with client.request(
                method, route.base + path, json=body, headers=headers
            ) as answer:
                status, text = answer.status, await answer.text()
                timing = answer.headers.get("server-timing", "")
        except (TimeoutError, aiohttp.ClientError):
            status = None
        if status is not None and status < 500 and status not in RETRIED_STATUSES:
            latencies, server_times = (
                (result.latencies, result.server_times)
                if trial is not None
                else (result.start_latencies, result.start_server_times)
            )
            latencies.append(time.perf_counter() - sent)
            if trial is not None:
                result.answered_at.append(time.time())
            # The server's time of each answered request (NaN if it sent none), in step with
            # the latencies.
            took = float(timing.split("dur=")[1].split(",")[0]) / 1000 if "dur=" in timing else NAN
            server_times.append(took)
            if 200 <= status < 300:
                if trial is not None:
                    if status == 201:
                        result.created += 1
                    else:
                        result.duplicates += 1
                return json.loads(text)
            result.refused.append((trial or path, status, text[:200]))
            return None
        result.retries += 1
        route.fail_over()
        if retry.attempts is not None and tries >= retry.attempts:
            break  # the page gives up here (its last wait changes nothing the server sees)
        # Never past the deadline: a run stays bounded, whatever the ceiling of the waits.
        await asyncio.sleep(min(next(waits), max(0.0, deadline - time.monotonic())))
    return None


async def _run(
    bases: list[str],
    indices: list[int],
    total: int,
    duration_s: float,
    pace_s: float,
    stimulus_s: float,
    seed: int,
    keys: tuple[str, ...],
    ramp_s: float,
    start_at: float,
    full: threading.Event | None = None,
) -> LoadResult:
    import aiohttp

    result = LoadResult(participants=len(indices))
    connections = len(indices) * len(bases)
    timeout = aiohttp.ClientTimeout(total=30.0, connect=5.0)
    await asyncio.sleep(max(0.0, start_at - time.time()))
    cpu = time.process_time()
    result.started = time.time()
    start = time.monotonic()
    deadline = start + duration_s
    connector = aiohttp.TCPConnector(limit=connections + 10)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as client:

        async def one(k: int) -> None:
            await asyncio.sleep(ramp_s * k / max(total, 1))
            rng = random.Random(seed * 1_000_003 + k)
            label, route = f"load{k:05d}", _Route(bases, k)
            await _participant(
                client, route, label, pace_s, stimulus_s, deadline, result, rng, keys, full
            )

        await asyncio.gather(*(one(k) for k in indices))
    result.elapsed = time.monotonic() - start
    result.client_cpu.append(time.process_time() - cpu)
    return result


def _run_share(*args) -> LoadResult:
    return asyncio.run(_run(*args))


def run_load(
    base_url: str | Sequence[str],
    participants: int,
    duration_s: float,
    *,
    pace_s: float = 3.0,
    stimulus_s: float = 2.0,
    seed: int = 0,
    keys: tuple[str, ...] = tuple("1234567"),
    ramp_s: float = 5.0,
    processes: int = 1,
    full: threading.Event | None = None,
) -> LoadResult:
    """Run ``participants`` simulated participants against ``base_url`` for ``duration_s``.

    Each sends one trial every ``pace_s`` seconds (the protocol's stimulus
    plus blank); starts are spread evenly over ``ramp_s``. ``processes`` > 1
    shares the participants among that many client processes, so that the
    clients, not only the server, keep the pace. Bounded: no trial is begun
    after ``duration_s``, and one begun is retried for at most 30 s more.

    ``base_url`` may be several servers of one study (one database): participant
    ``k`` starts on the ``k``-th (in turn), and a request that fails is retried on the
    next (see the module docstring); ``LoadResult.acknowledged_by`` says which server
    acknowledged each trial.

    ``full`` (one process only) is set once every participant's session has started: the
    load is full, and a caller can act on the server under it (kill it, for a test).
    """
    urls = [base_url] if isinstance(base_url, str) else list(base_url)
    if not urls:
        raise ValueError("base_url: expected at least one server address")
    bases = [url.rstrip("/") + "/" for url in urls]
    shares = [list(range(j, participants, processes)) for j in range(processes)]
    start_at = time.time() + (1.0 if processes > 1 else 0.0)
    arguments = [
        (bases, share, participants, duration_s, pace_s, stimulus_s, seed, keys, ramp_s, start_at)
        for share in shares
        if share
    ]
    if len(arguments) == 1:
        return asyncio.run(_run(*arguments[0], full=full))
    if full is not None:
        raise ValueError("full: an event of this process, with processes=1 only")
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(len(arguments), mp_context=context) as pool:
        parts = list(pool.map(_run_share, *zip(*arguments, strict=True)))
    result = LoadResult(participants=0)
    for part in parts:
        result.merge(part)
    return result
