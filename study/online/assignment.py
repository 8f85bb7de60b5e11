"""Which main pairs an online participant rates: the protocol's lists, and who gets which.

Crowd participants rarely sit through 1,240 trials, so ``[online] subset`` splits the
main pairs into ``lists`` lists and gives each participant one list (an
incomplete design). Two splits keep the design balanced:

``sketches``
    whole sketches: the sketches, shuffled with ``list_seed``, are dealt into
    ``lists`` groups whose sizes differ by at most one sketch; a participant
    ranks every image of the sketches of one group (Kendall's W per sketch
    stays defined);
``pairs``
    a balanced share of every sketch: each sketch's images, shuffled, are
    dealt over the lists, continuing the rotation from sketch to sketch, so
    that every list holds every sketch, the lists' sizes differ by at most one
    pair and each sketch's share differs by at most one image between lists.

Every pair is in exactly one list. A new participant gets the list with the
fewest participants (complete sessions plus running ones still in contact), the
lowest-numbered list on a tie: the lists fill in turn, so every pair ends up
with the same number of raters whenever the number of complete sessions is a
multiple of ``lists``. The anchor pairs are not split: everyone sees them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from sbir_study.foundation.checks import InputError

from ..protocol import Protocol

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["choose_list", "list_manifest", "split_lists"]


def split_lists(protocol: Protocol, manifest: pd.DataFrame) -> list[pd.DataFrame]:
    """The main pairs of ``manifest`` split into the protocol's lists.

    Parameters
    ----------
    protocol
        ``online.subset``, ``online.lists`` and ``online.list_seed`` choose
        the split; ``main_roles`` says which pairs are the main ones.
    manifest
        The stimulus set's manifest.

    Returns
    -------
    list of DataFrame
        ``online.lists`` sub-manifests of main pairs, in manifest order each.

    Raises
    ------
    InputError
        When the set cannot be split so: more lists than sketches
        (``sketches``), or fewer than two images of some sketch per list
        (``pairs``: a ranking needs two items).

    Examples
    --------
    >>> from dataclasses import replace
    >>> import pandas as pd
    >>> from sbir_study.study.protocol import Online, Protocol
    >>> manifest = pd.DataFrame({"sketch_id": ["a"] * 4 + ["b"] * 4,
    ...                          "image_id": [f"i{k}" for k in range(8)], "role": "main"})
    >>> protocol = replace(Protocol(), online=Online(subset="pairs", lists=2))
    >>> [len(part) for part in split_lists(protocol, manifest)]
    [4, 4]
    >>> [sorted(part["sketch_id"].unique()) for part in split_lists(protocol, manifest)]
    [['a', 'b'], ['a', 'b']]
    """
    import pandas as pd

    online = protocol.online
    main = manifest[manifest["role"].isin(protocol.main_roles)]
    if main.empty:
        raise InputError(
            f"stimulus set: no pairs with role {' or '.join(protocol.main_roles)}; the protocol "
            f"{protocol.name!r} rates those"
        )
    if online.subset == "all":
        return [main]
    rng = np.random.default_rng([online.list_seed, 18])
    sketches = pd.unique(main["sketch_id"])
    lists = online.lists
    if online.subset == "sketches":
        if lists > len(sketches):
            raise InputError(
                f"online.lists: {lists} lists of whole sketches need at least {lists} sketches; "
                f"the set has {len(sketches)}"
            )
        order = sketches[rng.permutation(len(sketches))]
        groups = np.array_split(order, lists)
        return [main[main["sketch_id"].isin(set(group))] for group in groups]
    per_sketch = main.groupby("sketch_id", sort=False).size()
    if int(per_sketch.min()) < 2 * lists:
        thin = per_sketch.idxmin()
        raise InputError(
            f"online.lists: {lists} lists of pairs give some list fewer than 2 images of sketch "
            f"{thin!r} ({int(per_sketch.min())} images); use at most {int(per_sketch.min()) // 2} "
            'lists, or subset = "sketches"'
        )
    owner = np.empty(len(main), dtype=np.int64)
    positions = {key: k for k, key in enumerate(main.index)}
    next_list = 0
    for sketch in sketches:
        rows = main.index[main["sketch_id"].to_numpy() == sketch]
        shuffled = rows[rng.permutation(len(rows))]
        for k, row in enumerate(shuffled):
            owner[positions[row]] = (next_list + k) % lists
        next_list = (next_list + len(rows)) % lists
    return [main[owner == k] for k in range(lists)]


def list_manifest(
    manifest: pd.DataFrame, lists: Sequence[pd.DataFrame], index: int
) -> pd.DataFrame:
    """The manifest a participant of list ``index`` sees: the anchor pairs and that list.

    :func:`sbir_study.study.trials.build_trials` on this manifest gives the participant's
    trial list (with ``subset = "all"`` it is the whole manifest's list).
    """
    anchors = manifest[manifest["role"] == "anchor"]
    keep = anchors.index.union(lists[index].index)
    return manifest.loc[manifest.index.isin(keep)]


def choose_list(
    participants: Mapping[int, int],
    n_lists: int,
    cap: int = 0,
    holding: Mapping[int, int] | None = None,
) -> int | None:
    """The list for the next participant: the fewest participants, the lowest number on a tie,
    among the lists not full.

    ``participants`` maps a list to its participants so far (complete sessions
    plus running ones in contact); ``cap`` > 0 is the number of places per list,
    and ``holding`` maps a list to the participants who hold one (default:
    ``participants``); None is returned when every list is full.

    Examples
    --------
    >>> choose_list({0: 3, 1: 2, 2: 2}, 3)
    1
    >>> choose_list({0: 2, 1: 2}, 2, cap=2) is None
    True
    >>> choose_list({0: 2, 1: 3}, 2, cap=2, holding={0: 2, 1: 1})
    1
    """
    holding = participants if holding is None else holding
    counts = [int(participants.get(k, 0)) for k in range(n_lists)]
    open_lists = [k for k in range(n_lists) if not cap or int(holding.get(k, 0)) < cap]
    if not open_lists:
        return None
    return min(open_lists, key=lambda k: (counts[k], k))
