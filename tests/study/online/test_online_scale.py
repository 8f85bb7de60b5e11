"""Scale out as the README deploys it: two `serve` processes on two ports against one PostgreSQL,
simulated participants spread over both (as a proxy spreads them), one server killed with SIGKILL
in the middle and not started again: its participants' retries go to the other server, as a proxy
takes a dead server out of its rotation. Nothing acknowledged is lost, nothing is stored twice,
and a session that moved is one session, its trials in order, whichever server took them.
"""

from __future__ import annotations

import threading
import time

from sbir_study.study.online.loadtest import run_load
from tests.study.online.support import query, write_protocol
from tests.study.online.test_online_load import check_nothing_lost


def test_two_servers_one_database_one_killed(online_set, tmp_path, start_server, postgres):
    # Every pair shown as long as the load clients show it (loadtest._report).
    timing = {"stimulus_s": 0.3, "blank_s": 0.2, "anchor_demo_s": 0.3}
    protocol = write_protocol(tmp_path, timing=timing)
    db = postgres.new_database()
    first = start_server(protocol, online_set, tmp_path / "a", db=db)
    second = start_server(protocol, online_set, tmp_path / "b", db=db)
    killed_at: list[float] = []

    def kill_first() -> None:
        time.sleep(6.0)
        first.kill()
        killed_at.append(time.monotonic())

    killer = threading.Thread(target=kill_first)
    began = time.monotonic()
    killer.start()
    result = run_load(
        [first.url, second.url],
        participants=40,
        duration_s=14.0,
        pace_s=0.5,
        stimulus_s=0.3,
        seed=5,
        ramp_s=2.0,
    )
    killer.join()
    assert killed_at and killed_at[0] - began < 12.0, "the kill came after the load"

    counts = check_nothing_lost(db, result)
    assert counts["participants_acknowledged"] == 40

    # Participant k starts on server k % 2. Those that started on the first one moved to the
    # second at the kill (the load ran on after it): each is one session, started and then
    # acknowledged by the first server and, from one trial on, by the second, never back (the
    # first never came back); its trials numbered 1, 2, ... without a gap (check_nothing_lost).
    # Those that started on the second one stayed there.
    servers_of: dict[str, list[str]] = {}
    for (label, _trial), base in sorted(result.acknowledged_by.items()):
        servers_of.setdefault(label, []).append(base)
    moved = 0
    for k in range(40):
        label = f"load{k:05d}"
        path = [result.started_by[label], *servers_of[label]]
        home = first.url if k % 2 == 0 else second.url
        assert path[-1] == second.url, (label, path)
        switch = path.index(second.url)
        assert path == [home] * switch + [second.url] * (len(path) - switch), (label, path)
        moved += switch > 0
    # Some sessions were split between the servers, started on one and continued on the other.
    assert moved > 0
    assert result.retries > 0

    # The database holds one session per participant, under the label its client used, and
    # the second server's status (it alone answers now) counts every trial stored.
    sessions = dict(query(db, "SELECT participant, id FROM sessions"))
    assert sessions == result.sessions
    status = second.admin("api/admin/status").json()
    assert status["participants"]["started"] == 40
    assert status["trials_stored"] == counts["stored"]
    # Its live load is its own: the participant requests it answered (not the first one's).
    assert status["load"]["requests"] > 0 and status["load"]["process"].endswith(
        f":{second.process.pid}"
    )
    print(f"\ntwo servers: {counts}, {moved} moved, {result.retries} retries")
