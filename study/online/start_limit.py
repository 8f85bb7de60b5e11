"""How many sessions one client may start: a token bucket per client address.

Each start stores a session and may hold a list place, so a loop of starts from one
client could fill the study for real participants and the database with sessions.
:class:`StartLimit` lets each address start ``per_minute`` sessions at once and then one
every ``60 / per_minute`` seconds (``[online] starts_per_minute``). It is in memory, per
server process: with ``--workers N`` a client may start up to N times as many, and the
study-wide ``[online] max_sessions`` bounds the whole. A proxy in front limits again
(the README's nginx ``limit_req``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

__all__ = ["StartLimit"]


class StartLimit:
    """Per client, ``per_minute`` starts at once, then one every ``60 / per_minute`` s (0:
    no limit).

    >>> now = [0.0]
    >>> limit = StartLimit(2, clock=lambda: now[0])
    >>> [limit.take("10.0.0.1") for _ in range(3)], limit.take("10.0.0.2")
    ([True, True, False], True)
    >>> now[0] = 30.0  # one start's worth back
    >>> limit.take("10.0.0.1"), limit.take("10.0.0.1")
    (True, False)
    """

    def __init__(
        self,
        per_minute: int,
        clock: Callable[[], float] = time.monotonic,
        max_clients: int = 100_000,
    ) -> None:
        self.per_minute, self.clock, self.max_clients = per_minute, clock, max_clients
        self._buckets: dict[str, tuple[float, float]] = {}  # client -> (starts left, when)
        self._lock = threading.Lock()

    def take(self, client: str) -> bool:
        """Whether ``client`` may start a session now (and count it if so)."""
        if self.per_minute == 0:
            return True
        rate = self.per_minute / 60.0
        with self._lock:
            now = self.clock()
            left, when = self._buckets.get(client, (float(self.per_minute), now))
            left = min(float(self.per_minute), left + (now - when) * rate)
            if left < 1.0 - 1e-9:  # a client exactly on the rate is not refused by rounding
                self._buckets[client] = (left, now)
                return False
            self._buckets[client] = (left - 1.0, now)
            if len(self._buckets) > self.max_clients:
                self._forget_full(now, rate)
            return True

    def _forget_full(self, now: float, rate: float) -> None:
        """Drop the clients whose bucket has filled again: they are as new ones."""
        full = [
            c
            for c, (left, when) in self._buckets.items()
            if left + (now - when) * rate >= self.per_minute
        ]
        for client in full:
            del self._buckets[client]
