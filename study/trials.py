"""The trial list of a session: a pure function of (protocol, stimulus set, seed).

Built up front, recorded in the session's sidecar and re-derived on resume;
testable without a window. The paper's order (Sec. 2.3 and 2.3.1):

1. ``anchor_demo``: the anchor pairs, sketch by sketch, each image with its
   prescribed rating on screen, from rating 1 to the last (not rated);
2. the main block: every main pair exactly once, in a random order;
3. ``anchor_repeat``: every anchor pair once more, each inserted at a random
   place in the later part of the main block (after the first
   ``anchoring.repeat_from`` of it).
"""

from __future__ import annotations

import secrets

import numpy as np
import pandas as pd

from analysis.checks import InputError

from .protocol import Protocol

__all__ = ["TRIAL_COLUMNS", "build_trials", "draw_seed"]

TRIAL_COLUMNS = ("trial", "phase", "sketch_id", "image_id", "anchor_rating", "sketch_path",
                 "image_path")  # fmt: skip


def draw_seed() -> int:
    """A fresh seed for a participant's order (recorded, so the order can be re-derived)."""
    return secrets.randbits(63)


def build_trials(protocol: Protocol, manifest: pd.DataFrame, seed: int) -> pd.DataFrame:
    """The session's trials, in presentation order.

    Parameters
    ----------
    protocol
        Which roles form the main block and how anchoring works.
    manifest
        The stimulus set's manifest (``stimuli.load_set(...).manifest``).
    seed
        The participant's seed: the same seed gives the same order.

    Returns
    -------
    DataFrame
        :data:`TRIAL_COLUMNS`; ``trial`` counts from 1, ``anchor_rating`` is
        the prescribed rating of anchor pairs (else missing).

    Examples
    --------
    >>> from study.protocol import Protocol
    >>> manifest = pd.DataFrame({
    ...     "sketch_id": ["a", "a", "s", "s", "s", "s"],
    ...     "image_id": ["a1", "a2", "s1", "s2", "s3", "s4"],
    ...     "sketch_path": "x.png", "image_path": "y.png",
    ...     "role": ["anchor", "anchor", "main", "main", "main", "main"],
    ...     "anchor_rating": ["1", "7", "", "", "", ""]})
    >>> trials = build_trials(Protocol(), manifest, seed=1)
    >>> trials["phase"].value_counts().to_dict()
    {'main': 4, 'anchor_demo': 2, 'anchor_repeat': 2}
    """
    if not isinstance(seed, int | np.integer) or seed < 0:
        raise InputError(f"seed: expected a whole number >= 0, got {seed!r}")
    rng = np.random.default_rng(seed)
    main = manifest[manifest["role"].isin(protocol.main_roles)]
    if main.empty:
        raise InputError(
            f"stimulus set: no pairs with role {' or '.join(protocol.main_roles)}; the protocol "
            f"{protocol.name!r} rates those"
        )
    anchors = manifest[manifest["role"] == "anchor"]
    if "anchor_rating" in anchors.columns and len(anchors):
        order = pd.to_numeric(anchors["anchor_rating"])
        anchors = anchors.assign(_r=order).sort_values(["sketch_id", "_r"], kind="stable")
    if not protocol.anchoring.enabled:
        anchors = anchors.iloc[:0]

    block = main.iloc[rng.permutation(len(main))].assign(phase="main")
    if protocol.anchoring.repeat and len(anchors):
        start = int(np.ceil(protocol.anchoring.repeat_from * len(block)))
        # A repeat drawn into slot k is shown just before main trial k (slot len: at the end).
        slots = rng.integers(start, len(block) + 1, size=len(anchors))
        keys = np.concatenate([np.arange(len(block)), slots - 0.5])
        repeats = anchors.assign(phase="anchor_repeat")
        block = pd.concat([block, repeats]).iloc[np.argsort(keys, kind="stable")]
    trials = pd.concat([anchors.assign(phase="anchor_demo"), block], ignore_index=True)
    trials["trial"] = np.arange(1, len(trials) + 1)
    if "anchor_rating" in trials.columns:
        prescribed = pd.to_numeric(trials["anchor_rating"].replace({"": None, "n/a": None}))
        trials["anchor_rating"] = prescribed.astype("Int64")
    else:
        trials["anchor_rating"] = pd.array([pd.NA] * len(trials), dtype="Int64")
    return trials[list(TRIAL_COLUMNS)]
