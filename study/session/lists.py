"""Design: which list of main pairs a lab participant rates, when the protocol splits them.

The online list design (:mod:`sbir_study.study.online.assignment`) holds in the lab too:
``run --list N`` gives list N (from 1); without it, the list with the fewest sessions in the
dataset, of equals the lowest (:func:`~sbir_study.study.online.assignment.choose_list`).
Every recorded session counts, whatever its status: a stopped one is continued on its list
with ``--resume``. The anchor and practice pairs are everyone's.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import pandas as pd

from sbir_study.foundation.checks import InputError

from ..online.assignment import choose_list, list_manifest, split_lists
from ..protocol import Protocol

__all__ = ["PairList", "choose_pair_list", "dataset_list_counts"]


@dataclass(frozen=True)
class PairList:
    """The participant's list: its number (from 1), of how many, and its manifest."""

    number: int
    lists: int
    subset: str
    manifest: pd.DataFrame

    def sidecar(self) -> dict:
        """The sidecar's ``PairList`` (as the export's ``OnlineList``); nothing for ``all``."""
        if self.subset == "all":
            return {}
        return {"PairList": {"Subset": self.subset, "List": self.number, "Lists": self.lists}}


def choose_pair_list(
    protocol: Protocol,
    manifest: pd.DataFrame,
    data: str | Path,
    *,
    requested: int | None,
    resumed: Path | None = None,
) -> PairList:
    """The list a participant rates: the resumed session's (its sidecar ``resumed``), else
    ``requested``, else the one with the fewest sessions at ``data``; ``all`` has one list.

    >>> import tempfile
    >>> from dataclasses import replace
    >>> from sbir_study.study.protocol import Online, Protocol
    >>> manifest = pd.DataFrame({"sketch_id": ["a"] * 4 + ["b"] * 4,
    ...                          "image_id": [f"i{k}" for k in range(8)], "role": "main"})
    >>> protocol = replace(Protocol(), online=Online(subset="sketches", lists=2))
    >>> chosen = choose_pair_list(protocol, manifest, tempfile.mkdtemp(), requested=None)
    >>> chosen.number, chosen.lists, len(chosen.manifest)
    (1, 2, 4)
    """
    online = protocol.online
    lists = online.lists
    if requested is not None and not 1 <= requested <= lists:
        raise InputError(
            f"--list: expected a list from 1 to {lists} (the protocol's [online] lists), got "
            f"{requested}"
        )
    recorded = _list_of(resumed) if resumed is not None else None
    if resumed is not None and recorded is None and online.subset != "all":
        raise InputError(
            f"{resumed}: the session was recorded with every main pair, on no list; resume it "
            'with the protocol it was recorded with ([online] subset = "all")'
        )
    if recorded is not None:
        if requested is not None and requested != recorded:
            raise InputError(
                f"--list: the session to resume was recorded on list {recorded}, not "
                f"{requested}; a resumed session keeps its list (leave --list out)"
            )
        number = recorded
    elif requested is not None:
        number = requested
    else:
        counts = dataset_list_counts(data, protocol.task)
        fewest = choose_list({k - 1: n for k, n in counts.items()}, lists)
        number = cast(int, fewest) + 1  # with no cap on a list's sessions, a list is chosen
    if not 1 <= number <= lists:
        raise InputError(
            f"PairList: the session was recorded on list {number}, but the protocol has "
            f"{lists} lists; resume with the protocol it was recorded with"
        )
    parts = split_lists(protocol, manifest)
    return PairList(number, lists, online.subset, list_manifest(manifest, parts, number - 1))


def dataset_list_counts(data: str | Path, task: str) -> Counter:
    """Sessions of ``task`` at ``data`` per list (from 1), by the sidecars' ``PairList`` or
    ``OnlineList``; sessions on no list are not counted.
    """
    counts: Counter = Counter()
    root = Path(data)
    for sidecar in sorted(root.glob(f"sub-*/beh/sub-*_task-{task}_beh.json")):
        number = _list_of(sidecar)
        if number is not None:
            counts[number] += 1
    return counts


def _list_of(sidecar: Path) -> int | None:
    try:
        recorded = json.loads(sidecar.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise InputError(f"{sidecar}: cannot be read ({error})") from None
    entry = recorded.get("PairList") or recorded.get("OnlineList")
    if not isinstance(entry, dict):
        return None
    number = entry.get("List")
    if not isinstance(number, int) or isinstance(number, bool) or number < 1:
        raise InputError(f"{sidecar}: PairList.List: expected a list number from 1, got {number!r}")
    return number
