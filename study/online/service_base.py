"""What the parts of :class:`~.service.OnlineStudy` share: the error a request is refused
with, and the study's state as each part reads it."""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Iterator, Mapping
from functools import cached_property
from typing import TYPE_CHECKING

from sbir_study.foundation.checks import InputError

from . import storage

if TYPE_CHECKING:
    import pandas as pd
    from sqlalchemy.engine import Engine

    from sbir_study.stimuli import StimulusSet

    from ..protocol import Protocol
    from .orders import Order, OrderJson

__all__ = ["ServiceError", "StudyParts", "token_digest", "unprocessable"]


class ServiceError(Exception):
    """A request not carried out: ``status`` is the HTTP status (4xx refused, 5xx the
    server's own fault), the message one clear line."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@contextlib.contextmanager
def unprocessable() -> Iterator[None]:
    """A report refused by a check (InputError) is refused to its page (422), in the
    check's words."""
    try:
        yield
    except InputError as error:
        raise ServiceError(422, str(error)) from None


def token_digest(token: str) -> str:
    """The SHA-256 of a session's token, as stored."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class StudyParts:
    """The study's fields (set by :class:`~.service.OnlineStudy`, a dataclass) and the
    operations one part of it calls on another."""

    protocol: Protocol
    stimulus_set: StimulusSet
    engine: Engine
    study_id: int
    lists: tuple[pd.DataFrame, ...]
    _sessions: dict
    _keys: dict
    _driver: storage.Driver
    _json: OrderJson
    _lock: threading.Lock

    @cached_property
    def writer(self) -> storage.GroupCommit:
        """The process's trial writer (:class:`~.storage.GroupCommit`)."""
        return storage.GroupCommit(self.engine, refusals=(ServiceError,))

    if TYPE_CHECKING:

        def authorise(self, session_id: str, token: str | None) -> dict: ...
        async def authorise_async(self, session_id: str, token: str | None) -> dict: ...
        def order(self, session: Mapping) -> Order: ...
        def session_state(self, session_id: str, token: str | None) -> dict: ...
        def ending(self, name: str) -> dict: ...
        def _keep(self, session_id: str, session: dict) -> None: ...
