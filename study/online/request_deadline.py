"""A deadline for receiving a whole request, which uvicorn does not set.

Uvicorn's keep-alive timeout covers only the silence between requests, and any byte a
client sends resets it: a client that opens a connection and sends nothing, or trickles
a request's headers a byte at a time, holds the connection for as long as it likes, and
a few thousand such clients fill ``limit_concurrency`` so that real pages are answered
503. :class:`RequestDeadlineProtocol` is uvicorn's own HTTP protocol (httptools'
parser) with one timer: armed when a connection opens and when a request begins,
disarmed when the request has been read whole; a connection still short of a whole
request when it fires is closed. A page's trial (a few KB) takes milliseconds; the
deadline is far above any real client's, so only a stalled one meets it. A reverse
proxy's ``client_header_timeout`` and ``client_body_timeout`` do the same in front
(the README's nginx example).
"""

from __future__ import annotations

import asyncio
import logging

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["REQUEST_DEADLINE_S", "RequestDeadlineProtocol"]

LOG = logging.getLogger("sbir_study.study.online")

#: Seconds a connection has to send a whole request, from its opening or from the
#: request's first byte.
REQUEST_DEADLINE_S = 20.0


class RequestDeadlineProtocol(HttpToolsProtocol):
    """Uvicorn's httptools protocol, closing a connection that sends no whole request
    within :data:`REQUEST_DEADLINE_S`."""

    deadline_s = REQUEST_DEADLINE_S
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm()

    def on_message_complete(self) -> None:
        self._disarm()
        super().on_message_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.deadline_s, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            client = "{}:{}".format(*self.client) if self.client else "unknown"
            LOG.warning(
                "closed a connection from %s: no whole request in %g s", client, self.deadline_s
            )
            self.transport.close()
