"""What serving a protocol on a set needs from both, made once with pandas and kept.

Every request of ``serve`` needs the same few things of its protocol and stimulus set:
each list's pairs as trial-order rows (:class:`ListOrder`), the SHA-256 of each image it
may send, and the images' largest aspect ratio. :class:`ServingPlan` holds them. It is
made from the set's manifest with pandas, by the code the lab session's order comes from
(:func:`~sbir_study.study.trials.build_trials`, :func:`.assignment.split_lists`), and kept
by :mod:`.setcheck` beside the data as plain JSON (:meth:`ServingPlan.record`), so that a
restart that finds it still holding reads it back without importing pandas at all: pandas
with pyarrow was a third of a whole start of ``serve``.

Nothing here is a second way of making an order: :meth:`ListOrder.of` takes its rows from
``build_trials`` itself, and a plan read back must equal, field for field, the plan made
again (a test compares them over generated designs).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from ..trials import TRIAL_COLUMNS, build_trials

if TYPE_CHECKING:
    import pandas as pd

    from ..protocol import Protocol

__all__ = ["ListOrder", "ServingPlan", "image_names", "measured_aspect"]


def _order_rows(order: pd.DataFrame) -> list[list]:
    """A trial order as stored: one list per trial, :data:`~.service.ORDER_COLUMNS`, plain
    Python values."""
    import pandas as pd

    rows = order[list(TRIAL_COLUMNS)].to_numpy(dtype=object).tolist()
    for row in rows:
        row[0] = int(row[0])
        row[4] = None if pd.isna(row[4]) else int(row[4])
    return rows


@dataclass(frozen=True)
class ListOrder:
    """A list's pairs, ready to be put in a participant's order: ``Order(keys(seed))``
    reads as ``_order_rows(build_trials(protocol, list_manifest, seed))``, without pandas.

    A session's start built its 1,282-trial order with pandas (``build_trials``: about 17 ms
    of CPU of the start's 25) while a crowd arrived at 17 starts a second. The pairs and
    their rows depend on the list only; the seed draws the main block's permutation, then
    each anchor repeat's slot (:func:`~sbir_study.foundation.trial_order.session_order`'s
    draws, in its order). So the rows are made once per list, from ``build_trials`` itself,
    and each start only draws. A test compares the two over generated sets, seeds and
    anchoring settings.
    """

    #: The anchor pairs' rows in the demo's order (sketch, then prescribed rating).
    anchors: tuple[tuple, ...]
    #: The main pairs' rows in the manifest's order.
    main: tuple[tuple, ...]
    repeat: bool
    repeat_from: float

    @classmethod
    def of(cls, protocol: Protocol, manifest: pd.DataFrame) -> ListOrder:
        """The rows of ``manifest``'s pairs as ``build_trials`` writes them for ``protocol``."""
        seed = 0
        built = _order_rows(build_trials(protocol, manifest, seed))
        anchors = tuple(tuple(row[2:]) for row in built if row[1] == "anchor_demo")
        drawn = [tuple(row[2:]) for row in built if row[1] == "main"]
        # build_trials put main pair k of the manifest at place j where permutation[j] == k.
        permutation = np.random.default_rng(seed).permutation(len(drawn))
        main: list = [None] * len(drawn)
        for place, pair in zip(permutation, drawn, strict=True):
            main[int(place)] = pair
        anchoring = protocol.anchoring
        return cls(
            anchors, tuple(main), anchoring.enabled and anchoring.repeat, anchoring.repeat_from
        )

    @cached_property
    def _phase_keys(self) -> tuple[tuple, tuple, tuple]:
        """Each pair with its phase, ``(phase, *pair)``, made once: the anchors' demo, the
        main pairs, the anchors' repeats. A participant's order is a sequence of these."""
        return (
            tuple(("anchor_demo", *pair) for pair in self.anchors),
            tuple(("main", *pair) for pair in self.main),
            tuple(("anchor_repeat", *pair) for pair in self.anchors),
        )

    def keys(self, seed: int) -> tuple[tuple, ...]:
        """The order of a participant of this list with ``seed``: ``(phase, *pair)`` of each
        trial, in trial order (shared by every participant of the list)."""
        demo, main, again = self._phase_keys
        rng = np.random.default_rng(seed)
        block = list(map(main.__getitem__, rng.permutation(len(main)).tolist()))
        if self.repeat and self.anchors:
            start = int(np.ceil(self.repeat_from * len(block)))
            # As session_order: a repeat drawn into slot k goes just before main trial k.
            slots = rng.integers(start, len(block) + 1, size=len(self.anchors))
            keys = np.concatenate([np.arange(len(block)), slots - 0.5])
            both = block + list(again)
            block = list(map(both.__getitem__, np.argsort(keys, kind="stable").tolist()))
        return (*demo, *block)

    def record(self) -> dict:
        """As JSON keeps it (:meth:`from_record` reads it back equal)."""
        return {
            "anchors": [list(pair) for pair in self.anchors],
            "main": [list(pair) for pair in self.main],
            "repeat": self.repeat,
            "repeat_from": self.repeat_from,
        }

    @classmethod
    def from_record(cls, record: Mapping) -> ListOrder:
        """The order :meth:`record` kept; ``ValueError`` for anything else."""
        repeat, repeat_from = record["repeat"], record["repeat_from"]
        if type(repeat) is not bool or type(repeat_from) not in (int, float):
            raise ValueError("a kept list order's repeat settings are not a bool and a number")
        return cls(_pairs(record["anchors"]), _pairs(record["main"]), repeat, float(repeat_from))


def _pairs(rows) -> tuple[tuple, ...]:
    """Kept pair rows (sketch_id, image_id, anchor_rating, sketch_path, image_path) as
    tuples, each field checked to be what :func:`_order_rows` makes."""
    if type(rows) is not list:
        raise ValueError("a kept list order's pairs are not a list")
    pairs = []
    for row in rows:
        if type(row) is not list or len(row) != len(TRIAL_COLUMNS) - 2:
            raise ValueError("a kept pair is not a row of five fields")
        sketch_id, image_id, rating, sketch_path, image_path = row
        texts = (sketch_id, image_id, sketch_path, image_path)
        if any(type(text) is not str for text in texts) or type(rating) not in (int, type(None)):
            raise ValueError("a kept pair's fields are not four texts and a rating")
        pairs.append(tuple(row))
    return tuple(pairs)


@dataclass(frozen=True)
class ServingPlan:
    """What ``serve`` needs of its protocol and set for every request (module docstring)."""

    #: Each list's pairs as trial-order rows, list by list.
    orders: tuple[ListOrder, ...]
    #: Every image file the set's manifest names -> its SHA-256 (from ``SHA256SUMS``).
    stimulus_files: Mapping[str, str]
    #: The images' largest height / width (the page sizes its area by it).
    max_aspect: float

    @classmethod
    def of(cls, protocol: Protocol, stimulus_set, max_aspect: float | None = None):
        """Made from the set's manifest (pandas); ``max_aspect`` measured from the images
        when not given. Refuses (:class:`~sbir_study.foundation.checks.InputError`) a set the
        protocol's lists cannot be split from."""
        from sbir_study.stimuli.manifest import read_checksums

        from .assignment import list_manifest, split_lists

        manifest = stimulus_set.manifest
        lists = split_lists(protocol, manifest)
        orders = []
        for index in range(len(lists)):
            pairs = list_manifest(manifest, lists, index).copy()
            # Without the manifest's line numbers (attrs["lines"], for the set's messages):
            # pandas deep-copies attrs at every step.
            pairs.attrs = {}
            orders.append(ListOrder.of(protocol, pairs))
        checksums, _ = read_checksums(stimulus_set.folder)
        files = {
            name: checksums[name] for name in sorted(image_names(stimulus_set)) if name in checksums
        }
        if max_aspect is None:
            max_aspect = measured_aspect(stimulus_set)
        return cls(tuple(orders), files, float(max_aspect))

    def record(self) -> dict:
        """As JSON keeps it (:meth:`from_record` reads it back equal)."""
        return {
            "orders": [order.record() for order in self.orders],
            "stimulus_files": dict(self.stimulus_files),
            "max_aspect": self.max_aspect,
        }

    @classmethod
    def from_record(cls, record: Mapping) -> ServingPlan:
        """The plan :meth:`record` kept; ``ValueError`` (or ``KeyError``, ``TypeError``)
        for anything else: a kept plan that cannot be read is made again."""
        orders = record["orders"]
        files = record["stimulus_files"]
        aspect = record["max_aspect"]
        if type(orders) is not list or not orders:
            raise ValueError("a kept plan has no lists")
        if type(files) is not dict or any(
            type(name) is not str or type(digest) is not str for name, digest in files.items()
        ):
            raise ValueError("a kept plan's files are not names and digests")
        if type(aspect) not in (int, float) or not 0 < aspect < float("inf"):
            raise ValueError("a kept plan's aspect ratio is not a positive number")
        return cls(tuple(map(ListOrder.from_record, orders)), files, float(aspect))


def image_names(stimulus_set) -> set[str]:
    """Every image file the set's manifest names."""
    manifest = stimulus_set.manifest
    return (set(manifest["sketch_path"]) | set(manifest["image_path"])) - {""}


def measured_aspect(stimulus_set) -> float:
    """The largest height / width of the set's images (the page sizes its area by it)."""
    from PIL import Image

    aspects = []
    for name in sorted(image_names(stimulus_set)):
        with Image.open(stimulus_set.path(name)) as image:
            aspects.append(image.height / image.width)
    return round(max(aspects), 4) if aspects else 1.0
