"""The SHA-256 of each file a ratings table is read from, on a thread beside the parse.

Kept because a user waits for it (``benchmarks/RESULTS.md``): ``hashlib`` releases the
interpreter lock, so one thread hashes while the caller parses. With
``$SBIR_STUDY_THREADS`` at 1 the caller hashes; the hashes are the same.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType

from sbir_study.foundation.provenance import data_sha256
from sbir_study.foundation.threads import threads

__all__ = ["FileHasher"]


class FileHasher:
    """Hashes on a thread of their own (``threaded``), or at once; a context manager.

    On a failed block those not begun are dropped and the running one stops within a
    slice (:func:`~sbir_study.foundation.provenance.data_sha256`).
    """

    def __init__(self, *, threaded: bool = True) -> None:
        self._stop = threading.Event()
        self._pool = (
            ThreadPoolExecutor(1, thread_name_prefix="sbir-sha256")
            if threaded and threads() > 1
            else None
        )

    def __enter__(self) -> FileHasher:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._pool is not None:
            if kind is not None:
                self._stop.set()
            self._pool.shutdown(wait=True, cancel_futures=kind is not None)

    def submit(self, data: bytes) -> Future[str | None]:
        """The SHA-256 (hex) of ``data``, to be taken; ``None`` if left unfinished."""
        if self._pool is None:
            digest: Future[str | None] = Future()
            digest.set_result(data_sha256(data))
            return digest
        return self._pool.submit(data_sha256, data, stop=self._stop.is_set)
