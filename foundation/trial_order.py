"""The order in which a session presents its pairs: one rule for real and simulated sessions.

The paper's order (Sec. 2.3 and 2.3.1):

1. ``anchor_demo``: the anchor pairs, sketch by sketch, each image with its
   prescribed rating on screen, from rating 1 to the last (not rated);
2. the main block: every main pair exactly once, in a random order;
3. ``anchor_repeat``: every anchor pair once more, each inserted at a random
   place in the later part of the main block (after the first
   ``repeat_from`` of it).

``sbir-study run`` (through :func:`sbir_study.study.trials.build_trials`) and
``sbir-study simulate`` both call :func:`session_order` with a generator
seeded by the participant's seed, so the same seed gives the same order in
both. The rule is pure: no window, no files.
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
    """The pairs in presentation order, with a ``phase`` column.

    Parameters
    ----------
    pairs
        One row per sketch/image pair with ``sketch_id``, ``role`` and (for
        anchors) ``anchor_rating``; other columns are carried along.
    rng
        The participant's generator: draws the main block's permutation, then
        the slot of each anchor repeat (in that order, and nothing else).
    main_roles
        The roles that make the main block.
    anchoring, repeat
        Show the anchor pairs first; and again inside the main block.
    repeat_from
        The repeats go after this fraction of the main block.

    Returns
    -------
    DataFrame
        The rows of ``pairs`` (index reset) in presentation order, with
        ``phase`` one of ``anchor_demo``, ``main``, ``anchor_repeat``.

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
