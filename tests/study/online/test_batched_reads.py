"""Sessions read back in batches (storage.BatchedReads, OnlineStudy._read_sessions): every
request gets its own key's value, keys asked for meanwhile share one read, a failure
reaches only the keys it concerns."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sbir_study.study.online import storage
from sbir_study.study.online.service import ServiceError
from tests.study.online.support import make_client, start


class Refused(Exception):
    pass


keys = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    asked=st.lists(keys, min_size=1, max_size=40),
    stored=st.dictionaries(keys, st.integers() | st.none(), max_size=20),
    refused=st.sets(keys, max_size=5),
    max_batch=st.integers(1, 8),
)
def test_each_key_gets_its_own_value_and_keys_asked_meanwhile_share_a_read(
    asked, stored, refused, max_batch
):
    """Keys asked for from many threads, duplicates included, while the first read is held:
    each future answers its key (the stored value, None where nothing is stored, the key's
    own refusal), no batch holds a key twice or more than ``max_batch`` keys, and the keys
    asked for meanwhile are read in as few batches as ``max_batch`` allows."""
    held, reading = threading.Event(), threading.Event()
    batches: list[list] = []

    def read_many(batch):
        batches.append(list(batch))
        if len(batches) == 1:
            reading.set()
            assert held.wait(10)
        answer = {key: stored[key] for key in batch if key in stored}
        answer.update({key: Refused(key) for key in batch if key in refused})
        return answer

    reads = storage.BatchedReads(read_many, max_batch=max_batch)
    first = reads.get(asked[0])
    assert reading.wait(10)  # the first key's read has begun and is held
    with ThreadPoolExecutor(8) as pool:
        futures = list(pool.map(reads.get, asked[1:]))
    held.set()
    for key, future in zip(asked, [first, *futures], strict=True):
        if key in refused:
            with pytest.raises(Refused) as raised:
                future.result(10)
            assert raised.value.args == (key,)
        else:
            assert future.result(10) == stored.get(key)
    assert all(len(batch) == len(set(batch)) <= max_batch for batch in batches)
    assert batches[0] == [asked[0]]
    # Asked while the first read was held: each distinct key once more at most (the first
    # key again only if asked again), in the fewest batches.
    waiting = set(asked[1:]) - {asked[0]}
    assert sorted(key for batch in batches[1:] for key in batch) == sorted(waiting)
    assert len(batches) - 1 == -(-len(waiting) // max_batch)
    assert reads.reads == len(batches)


def test_a_read_that_fails_answers_its_keys_with_the_failure_and_the_next_reads():
    """A read that fails as a whole (the database gone) answers each key of its batch with
    the failure; the reader goes on, and the next key asked is read."""
    calls = []

    def read_many(batch):
        calls.append(batch)
        if len(calls) == 1:
            raise ConnectionError("the database went away")
        return dict.fromkeys(batch, "back")

    reads = storage.BatchedReads(read_many)
    with pytest.raises(ConnectionError, match="went away"):
        reads.get("a b").result(10)
    assert reads.get("a b").result(10) == "back"
    assert calls == [["a b"], ["a b"]]


def test_a_coroutine_that_stops_waiting_cancels_nobody_elses_read():
    """A request cancelled while its session is read (its client gone) stops waiting
    alone: another request for the same key, from a thread or a coroutine, still gets the
    value, and the reader goes on to the next key."""
    held = threading.Event()

    def read_many(batch):
        if batch == ["a b"]:
            assert held.wait(10)
        return dict.fromkeys(batch, f"read {batch}")

    reads = storage.BatchedReads(read_many)

    async def asking(began: asyncio.Event):
        waiting = reads.wait("a b")
        began.set()  # the task goes on into the wait before the scene resumes
        return await waiting

    async def scene():
        began = [asyncio.Event(), asyncio.Event()]
        gone = asyncio.ensure_future(asking(began[0]))
        staying = asyncio.ensure_future(asking(began[1]))
        for event in began:
            await event.wait()
        gone.cancel()
        with pytest.raises(asyncio.CancelledError):
            await gone  # stopped waiting while the read is still held
        held.set()
        return await staying

    from_thread = reads.get("a b")
    assert asyncio.run(scene()) == "read ['a b']"
    assert from_thread.result(10) == "read ['a b']"
    assert reads.get("c").result(10) == "read ['c']"


@pytest.mark.parametrize(
    "design",
    [
        {},  # the paper's: digits, 1 best, one list of every pair
        # A lab's own: letters, the high end best, the pairs dealt over two lists.
        {
            "response": {"keys": ["a", "s", "d", "f", "g", "h", "j"], "best": "high"},
            "online": {"subset": "pairs", "lists": 2},
        },
    ],
    ids=["paper", "letters-high-best-two-lists"],
)
def test_a_restarted_server_reads_the_sessions_asked_for_at_once_in_one_query(
    tmp_path, online_set, design
):
    """A restarted server meets every participant's session at once: the sessions asked for
    while a read runs are read together, each request is answered with its own session and
    order (a token checked per request, not per read), an unknown session is 404, and a
    session whose stored order cannot be read fails alone (500) without failing the others
    read with it."""
    client = make_client(tmp_path, online_set, **design)
    study = client.study
    started = [start(client, f"p {n}") for n in range(12)]
    ids = [answer.json()["session_id"] for answer, _ in started]
    tokens = [token for _, token in started]
    orders = {session: study._sessions[session]["order"] for session in ids}
    # Every list has its sessions (one list in the paper's design, two in the lab's own).
    assert {study._sessions[session]["list_index"] for session in ids} == set(
        range(len(study.lists))
    )
    with sqlite3.connect(client.db) as connection:  # an order no version wrote: not served
        connection.execute("UPDATE sessions SET seed = seed + 1 WHERE id = ?", (ids[0],))
        connection.execute(
            "UPDATE session_orders SET trial_order = '[[2, \"main\"]]' WHERE session_id = ?",
            (ids[0],),
        )
    study._sessions.clear()  # as after a restart
    held, reading, everyone = threading.Event(), threading.Event(), threading.Event()
    read = study._read_sessions
    queries = []

    def read_sessions(session_ids):
        queries.append(sorted(session_ids))
        if len(queries) == 1:
            reading.set()
            assert held.wait(10)
        return read(session_ids)

    study._reads.read_many = read_sessions
    asked = [(ids[1], tokens[1])]  # held, while all the others ask
    asked += [(session, token) for session, token in zip(ids, tokens, strict=True)]
    asked += [(ids[2], "not the token"), ("0" * 32, tokens[3])]

    get, lock, calls = study._reads.get, threading.Lock(), [0]

    def counted_get(session_id):
        future = get(session_id)
        with lock:
            calls[0] += 1
            if calls[0] == len(asked):
                everyone.set()
        return future

    study._reads.get = counted_get

    def authorise(pair):
        try:
            return study.authorise(*pair)
        except ServiceError as error:
            return error.status

    with ThreadPoolExecutor(len(asked)) as pool:
        first = pool.submit(authorise, asked[0])
        assert reading.wait(10)
        rest = [pool.submit(authorise, pair) for pair in asked[1:]]
        assert everyone.wait(10)  # every request has asked for its session
        held.set()
        answers = [first.result(10)] + [future.result(10) for future in rest]
    # Session 2 was being read when the others asked: they waited for that read.
    assert queries == [[ids[1]], sorted({*ids, "0" * 32} - {ids[1]})]
    for (session, token), answer in zip(asked, answers, strict=True):
        if session == ids[0]:
            assert answer == 500
        elif session == "0" * 32:
            assert answer == 404
        elif token == "not the token":
            assert answer == 403
        else:
            assert answer["id"] == session and answer["order"] == orders[session]
    assert set(study._sessions) == set(ids[1:])
