"""The order in which a session presents its pairs, for real and simulated sessions alike.

The paper's order (Sec. 2.3, 2.3.1): ``anchor_demo``, the anchor pairs sketch by sketch from
rating 1 up, with their prescribed ratings (not rated); the main block in a random order;
``anchor_repeat``, each anchor pair again at a random place after the first ``repeat_from``
of the main block. ``run`` and ``simulate`` both seed :func:`session_order` with the
participant's seed, so the same seed gives the same order.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["session_order"]


def session_order(
    pairs: pd.DataFrame,
    rng: np.random.Generator,
    *,
    main_roles: tuple[str, ...] = ("main",),
    anchoring: bool = True,
    repeat: bool = True,
    repeat_from: float = 0.5,
) -> pd.DataFrame:
    """The pairs (index reset) in presentation order, with ``phase``.

    Parameters
    ----------
    pairs
        One row per pair with ``sketch_id``, ``role`` and (anchors) ``anchor_rating``; other
        columns are carried along.
    rng
        Draws the main block's permutation, then each anchor repeat's slot, nothing else.
    anchoring, repeat
        Show the anchor pairs first; and again inside the main block.

    Examples
    --------
    >>> pairs = pd.DataFrame({"sketch_id": ["a", "a", "s", "s", "s"],
    ...                       "image_id": ["a7", "a1", "s1", "s2", "s3"],
    ...                       "role": ["anchor", "anchor", "main", "main", "main"],
    ...                       "anchor_rating": [7, 1, None, None, None]})
    >>> order = session_order(pairs, np.random.default_rng(3))
    >>> order[["image_id", "phase"]].to_numpy().tolist()[:2]
    [['a1', 'anchor_demo'], ['a7', 'anchor_demo']]
    >>> order["phase"].value_counts().to_dict()
    {'main': 3, 'anchor_demo': 2, 'anchor_repeat': 2}
    """
    main = pairs[pairs["role"].isin(main_roles)]
    anchors = pairs[pairs["role"] == "anchor"]
    if "anchor_rating" in anchors.columns and len(anchors):
        prescribed = pd.to_numeric(anchors["anchor_rating"])
        anchors = (
            anchors.assign(_prescribed=prescribed)
            .sort_values(["sketch_id", "_prescribed"], kind="stable")
            .drop(columns="_prescribed")
        )
    if not anchoring:
        anchors = anchors.iloc[:0]
    block = main.iloc[rng.permutation(len(main))].assign(phase="main")
    if repeat and len(anchors):
        start = int(np.ceil(repeat_from * len(block)))
        # A repeat drawn into slot k is shown just before main trial k (slot len: at the end).
        slots = rng.integers(start, len(block) + 1, size=len(anchors))
        keys = np.concatenate([np.arange(len(block)), slots - 0.5])
        repeats = anchors.assign(phase="anchor_repeat")
        block = pd.concat([block, repeats]).iloc[np.argsort(keys, kind="stable")]
    return pd.concat([anchors.assign(phase="anchor_demo"), block], ignore_index=True)
