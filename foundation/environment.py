"""Environment variables set for the length of a ``with`` block, then put back."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping

__all__ = ["environment_variables"]


@contextlib.contextmanager
def environment_variables(values: Mapping[str, str]) -> Iterator[None]:
    """Set ``values`` in ``os.environ`` for the block, then put each back (unset if it was not set).

    ``unittest.mock.patch.dict`` would clear and refill the whole environment, which another
    thread of the caller's process could read empty.

    >>> with environment_variables({"SBIR_STUDY_EXAMPLE": "1"}):
    ...     os.environ["SBIR_STUDY_EXAMPLE"]
    '1'
    >>> "SBIR_STUDY_EXAMPLE" in os.environ
    False
    """
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
