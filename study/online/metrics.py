"""The server's load as it happens: requests per second and the server's time over the last
minute, and the trials waiting in the participants' pages, as the pages report them.

:class:`LoadWindow` keeps, in memory, the time of each participant request the
process answered in the last ``window_s`` seconds (measured by the app's
middleware exactly as the ``Server-Timing`` header it sends: from the request's
arrival to the answer's start) and the latest number each page reported waiting
in its queue with a trial (``queued``); :meth:`LoadWindow.view` is the status's
``load``.

Per process, not in the database: writing a row for every request would add a
write to each request whose time it measures, and the figures matter only
while the process runs. With ``--workers N``, or several hosts behind a proxy,
each process counts what it answered, and a status request is answered by one
of them: the view names that process (``process``, ``host:pid``) and is its
share of the load. To read every process's, run one worker per port (several
``serve`` behind the proxy) and ask each port for its status.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections import deque
from collections.abc import Callable

import numpy as np

__all__ = ["LoadWindow", "counted"]


def counted(path: str) -> bool:
    """Whether a request counts as participant load: the participants' API (``api/``, not the
    experimenter's ``api/admin/``, whose own polling of the view would count in it)."""
    return path.startswith("/api/") and not path.startswith("/api/admin/")


class LoadWindow:
    """The last ``window_s`` seconds of one server process's participant load.

    Thread-safe: the middleware records from the event loop, the trial route (a plain
    ``def``, in FastAPI's thread pool) the pages' queue reports.

    Examples
    --------
    >>> clock = [100.0]
    >>> load = LoadWindow(window_s=60.0, clock=lambda: clock[0])
    >>> for ms in (1.0, 2.0, 3.0, 4.0):
    ...     load.request(ms / 1000)
    >>> load.page_queue("s1", 2); load.page_queue("s2", 0); load.page_queue("s1", 1)
    >>> clock[0] += 10.0
    >>> view = load.view()
    >>> view["requests"], view["requests_per_s"], view["server_ms_p50"]
    (4, 0.4, 2.5)
    >>> view["pages_reporting"], view["trials_waiting"], view["trials_waiting_max"]
    (2, 1, 1)
    >>> clock[0] += 60.0
    >>> load.view()["requests"], load.view()["server_ms_p99"]
    (0, None)
    """

    def __init__(
        self, window_s: float = 60.0, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if not window_s > 0:
            raise ValueError(f"window_s: expected a positive number of seconds, got {window_s!r}")
        self.window_s = float(window_s)
        self.clock = clock
        self.started = clock()
        self.process = f"{socket.gethostname()}:{os.getpid()}"
        self._requests: deque[tuple[float, float]] = deque()  # (when, seconds taken)
        self._queues: dict[str, tuple[float, int]] = {}  # session -> (when, trials waiting)
        self._not_written = 0
        self._lock = threading.Lock()

    def request(self, seconds: float) -> None:
        """Count a participant request the process answered in ``seconds``."""
        now = self.clock()
        with self._lock:
            self._requests.append((now, seconds))
            self._forget(now)

    def page_queue(self, session_id: str, waiting: int) -> None:
        """A session's page says ``waiting`` trials wait in its queue behind the one it sent."""
        now = self.clock()
        with self._lock:
            self._queues[session_id] = (now, int(waiting))
            if len(self._queues) > 100_000:  # bounded however many pages fall silent
                self._forget(now)

    def refusal_not_written(self) -> None:
        """Count a refused trial not written: its session has as many kept as it may keep."""
        with self._lock:
            self._not_written += 1

    def _forget(self, now: float) -> None:
        since = now - self.window_s
        while self._requests and self._requests[0][0] < since:
            self._requests.popleft()
        if len(self._queues) > 100_000:
            self._queues = {k: v for k, v in self._queues.items() if v[0] >= since}

    def view(self) -> dict:
        """The load over the last ``window_s`` seconds (fewer, ``span_s``, just after start).

        ``requests`` answered, ``requests_per_s`` (``requests / span_s``), the
        server's time of those requests, median and 99th percentile in ms (NumPy's
        default, linear interpolation; None without a request), ``pages_reporting``
        (sessions whose page reported its queue within the window),
        ``trials_waiting`` (the sum of their latest reports),
        ``trials_waiting_max`` (the longest queue among them) and
        ``refusals_not_written`` (since the process started: refused trials of sessions
        that had as many kept as :data:`~.storage.MAX_REFUSALS_PER_SESSION`).
        """
        now = self.clock()
        since = now - self.window_s
        with self._lock:
            self._forget(now)
            taken = np.fromiter((s for _, s in self._requests), dtype=float)
            queues = [waiting for when, waiting in self._queues.values() if when >= since]
        span = min(self.window_s, max(now - self.started, 1e-9))
        p50, p99 = np.percentile(taken * 1000.0, [50, 99]) if taken.size else (None, None)
        return {
            "process": self.process,
            "window_s": self.window_s,
            "span_s": round(span, 3),
            "requests": int(taken.size),
            "requests_per_s": round(taken.size / span, 3),
            "server_ms_p50": None if p50 is None else round(float(p50), 3),
            "server_ms_p99": None if p99 is None else round(float(p99), 3),
            "pages_reporting": len(queues),
            "trials_waiting": int(sum(queues)),
            "trials_waiting_max": max(queues, default=0),
            "refusals_not_written": self._not_written,
        }
