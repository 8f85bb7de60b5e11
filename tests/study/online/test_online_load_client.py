"""The load test's simulated page retries as the real page does, so that a load run (and the
burst after a server restart in benchmarks/bench_online.py) is the crowd's, not a harsher or
gentler client's."""

from __future__ import annotations

import asyncio
import random
import re
import time
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from sbir_study.study.online import loadtest
from sbir_study.study.online.loadtest import (
    RETRIED_STATUSES,
    START_RETRY,
    TRIAL_RETRY,
    LoadResult,
    Retry,
    _Route,
    _until_answered,
)

WEB = Path(loadtest.__file__).parent / "web"


def test_the_simulated_page_retries_with_the_pages_numbers():
    """The numbers are read from the page's own code: a change to one side fails here."""
    sender = (WEB / "plugin-sbir-rating.js").read_text(encoding="utf-8")
    first = {float(v) for v in re.findall(r"this\.delay = ([0-9.]+);", sender)}
    assert first == {TRIAL_RETRY.first_s}  # at the start and after each acknowledgement
    (most,) = re.findall(r"this\.delay = Math\.min\(this\.delay \* 2, ([0-9.]+)\)", sender)
    assert float(most) == TRIAL_RETRY.most_s and TRIAL_RETRY.attempts is None
    assert "this.delay * (0.5 + Math.random())" in sender
    (statuses,) = re.findall(r"!\[([0-9, ]+)\]\.includes\(answer\.status\)", sender)
    assert {int(s) for s in statuses.split(",")} == RETRIED_STATUSES

    page = (WEB / "experiment.js").read_text(encoding="utf-8")
    (attempts,) = re.findall(r"for \(let attempt = 0; attempt < (\d+); attempt \+= 1\)", page)
    (first_ms,) = re.findall(r"setTimeout\(done, (\d+) \* 2 \*\* attempt \* \(0\.5 \+", page)
    assert int(attempts) == START_RETRY.attempts
    assert int(first_ms) / 1000 == START_RETRY.first_s
    # Eight attempts never reach the ceiling: the waits double to 64 s, as the page's do.
    assert START_RETRY.first_s * 2 ** (START_RETRY.attempts - 1) <= START_RETRY.most_s


@given(
    first=st.floats(0.001, 10.0),
    most=st.floats(0.001, 100.0),
    seed=st.integers(0, 2**32),
    count=st.integers(1, 40),
)
def test_each_wait_lies_between_half_and_one_and_a_half_delays(first, most, seed, count):
    retry = Retry(first_s=first, most_s=most)
    waits = retry.waits(random.Random(seed))
    delay = first
    for _ in range(count):
        wait = next(waits)
        assert 0.5 * delay <= wait <= 1.5 * delay
        delay = min(delay * 2.0, most)


def _answering(statuses: list[int]):
    """A server on the loopback that answers with ``statuses`` in turn (then 201)."""
    from aiohttp import web

    seen: list[int] = []

    async def handle(request):
        status = statuses[len(seen)] if len(seen) < len(statuses) else 201
        seen.append(status)
        return web.json_response({"n": len(seen)}, status=status)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    return app, seen


async def _send_through(statuses, retry):
    import aiohttp
    from aiohttp import web

    app, seen = _answering(statuses)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    result = LoadResult()
    try:
        async with aiohttp.ClientSession() as client:
            answer = await _until_answered(
                client,
                _Route([f"http://127.0.0.1:{port}/"], 0),
                "PUT",
                "api/sessions/s 1/trials/1",
                {"rating": 3},
                None,
                time.monotonic() + 30.0,
                result,
                random.Random(1),
                retry,
                trial=("p 1", 1),
            )
    finally:
        await runner.cleanup()
    return answer, seen, result


def test_a_busy_answer_is_tried_again_and_a_refusal_is_not():
    quick = Retry(first_s=0.001, most_s=0.004)
    # 429, 503, 408, 425: tried again, as the page does; then stored.
    answer, seen, result = asyncio.run(_send_through([429, 503, 408, 425], quick))
    assert answer == {"n": 5} and seen == [429, 503, 408, 425, 201]
    assert result.retries == 4 and not result.refused and result.created == 1
    # A 422 is the server's refusal: kept aside, never sent again.
    answer, seen, result = asyncio.run(_send_through([422], quick))
    assert answer is None and seen == [422] and result.retries == 0
    assert [(trial, status) for trial, status, _ in result.refused] == [(("p 1", 1), 422)]


def test_a_start_gives_up_after_its_attempts():
    answer, seen, result = asyncio.run(
        _send_through([503] * 20, Retry(first_s=0.001, most_s=0.002, attempts=8))
    )
    assert answer is None and len(seen) == 8 and result.retries == 8
