"""A session's trial order as the server keeps it, stores it and sends it to the page.

The order is :func:`~sbir_study.study.trials.build_trials`'s for the session's list and
seed, the lab's and the simulator's rule. A trial is kept as its key, ``(phase, *pair)``:
the keys repeat across a study's sessions (one of each is kept), and so does their JSON
(:class:`OrderJson`), so that a thousand sessions hold a thousand tuples of references.
"""

from __future__ import annotations

import functools
import json
import operator
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, overload

from ..trials import TRIAL_COLUMNS, build_trials
from . import storage

if TYPE_CHECKING:
    import pandas as pd

    from ..protocol import Protocol

__all__ = ["ORDER_COLUMNS", "Order", "OrderJson", "json_text", "order_keys", "page_trial"]

#: A stored trial order's columns (``session_orders.trial_order``: one list per trial).
ORDER_COLUMNS = TRIAL_COLUMNS

#: A trial's key: phase, sketch_id, image_id, anchor_rating, sketch_path, image_path.
Key = tuple[Any, ...]


def order_keys(protocol: Protocol, pairs: pd.DataFrame, seed: int, shared: dict) -> tuple[Key, ...]:
    """The key of each trial of ``build_trials(protocol, pairs, seed)``, in trial order; each
    key is the equal one already in ``shared`` (and put there if none is)."""
    import pandas as pd

    trials = build_trials(protocol, pairs, seed)
    rows = trials[list(TRIAL_COLUMNS[1:])].to_numpy(dtype=object).tolist()
    keys = []
    for row in rows:
        row[3] = None if pd.isna(row[3]) else int(row[3])
        key = tuple(row)
        keys.append(shared.setdefault(key, key))
    return tuple(keys)


class Order(Sequence):
    """A session's trial order: row ``i`` is ``(i + 1, *keys[i])``, the columns of
    :data:`ORDER_COLUMNS`. Its keys hold only strings, numbers and None, which the cyclic
    garbage collector does not track."""

    __slots__ = ("keys",)

    def __init__(self, keys: tuple[Key, ...]) -> None:
        self.keys = keys

    def __len__(self) -> int:
        return len(self.keys)

    @overload
    def __getitem__(self, index: int) -> tuple: ...
    @overload
    def __getitem__(self, index: slice) -> list[tuple]: ...
    def __getitem__(self, index: int | slice) -> tuple | list[tuple]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self.keys)))]
        key = self.keys[index]  # an IndexError as a tuple's
        return (index % len(self.keys) + 1, *key)

    def __iter__(self) -> Iterator[tuple]:
        for number, key in enumerate(self.keys, start=1):
            yield (number, *key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Order) and self.keys == other.keys

    __hash__ = None  # type: ignore[assignment]  # mutable-like: compared by value, unhashable

    @classmethod
    def of_rows(cls, rows: Sequence[Sequence], shared: dict) -> Order:
        """The order of stored ``rows`` (numbered from 1, as every order is written), its
        keys taken from ``shared`` as :func:`order_keys` takes them."""
        for number, row in enumerate(rows, start=1):
            if row[0] != number:
                raise ValueError(f"trial order: row {number} is numbered {row[0]!r}")
        return cls(tuple([shared.setdefault(key, key) for key in (tuple(r[1:]) for r in rows)]))


def page_trial(
    trial: int,
    phase: str,
    sketch_id: str,
    image_id: str,
    anchor_rating: int | None,
    sketch_path: str,
    image_path: str,
) -> dict:
    """A trial of the order as the page is sent it."""
    return {
        "trial": trial,
        "phase": phase,
        "sketch_id": sketch_id,
        "image_id": image_id,
        "anchor_rating": anchor_rating,
        "sketch_url": _url(sketch_path),
        "image_url": _url(image_path),
    }


def json_text(value: object) -> str:
    """JSON as Starlette's JSONResponse writes it."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


class OrderJson:
    """A session's order as JSON, joined from the JSON of each of its keys, made once.

    :meth:`rows` is exactly ``storage.dumps(rows)`` (what is stored) and :meth:`page_trials`
    the page's trials as :func:`json_text` writes them.
    """

    def __init__(self) -> None:
        self._stored: dict[Key, str] = {}
        self._page: dict[Key, str] = {}

    def rows(self, keys: Sequence[Key]) -> str:
        """The stored text of the order whose trial ``n`` is ``(n, *keys[n - 1])``."""
        return _joined(keys, self._stored, "[", lambda key: storage.dumps(list(key))[1:])

    def page_trials(self, keys: Sequence[Key]) -> str:
        """The page's trials of that order."""

        def made(key: Key) -> str:
            return json_text(page_trial(0, *key)).removeprefix('{"trial":0,')

        return _joined(keys, self._page, '{"trial":', made)


def _joined(keys: Sequence[Key], made: dict[Key, str], head: str, make: Callable) -> str:
    """The JSON list of the rows ``(n, *keys[n - 1])``: each row's ``head``, its number and
    the JSON of its key (made by ``make`` once, kept in ``made``), joined without a Python
    step per row."""
    try:
        texts = list(map(made.__getitem__, keys))
    except KeyError:
        for key in keys:
            if key not in made:
                made[key] = make(key)
        texts = list(map(made.__getitem__, keys))
    return "[" + ",".join(map(operator.add, _heads(head, len(texts)), texts)) + "]"


@functools.lru_cache(maxsize=64)
def _heads(head: str, count: int) -> tuple[str, ...]:
    """``head`` with each row number 1..``count`` and its comma: ``'[1,'``, ``'[2,'``..."""
    return tuple(f"{head}{number}," for number in range(1, count + 1))


@functools.lru_cache(maxsize=100_000)
def _url(path: str) -> str:
    from urllib.parse import quote

    return "stimuli/" + quote(path)
