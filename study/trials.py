"""The trial list of a session: a pure function of (protocol, stimulus set, seed).

Built up front, recorded in the sidecar and re-derived on resume. The order is the paper's
(Sec. 2.3, 2.3.1), drawn by :func:`sbir_study.foundation.trial_order.session_order` as the
simulator draws it. A lab session's practice pairs come first, in the protocol's order;
they draw nothing from the seed.
"""

from __future__ import annotations

import json
import secrets
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from sbir_study.foundation.checks import InputError
from sbir_study.foundation.scale import PAPER_SCALE, Scale

from .protocol import Protocol

if TYPE_CHECKING:
    import pandas as pd

    from sbir_study.stimuli import StimulusSet

__all__ = [
    "TRIAL_COLUMNS",
    "AnchorScaleWarning",
    "build_trials",
    "check_catch_pairs",
    "draw_seed",
    "practice_pairs",
    "stimulus_set_for",
]

TRIAL_COLUMNS = (
    "trial",
    "phase",
    "sketch_id",
    "image_id",
    "anchor_rating",
    "sketch_path",
    "image_path",
)


def draw_seed() -> int:
    """A fresh seed for a participant's order (recorded, so the order can be re-derived)."""
    return secrets.randbits(63)


def build_trials(
    protocol: Protocol,
    manifest: pd.DataFrame,
    seed: int,
    *,
    practice: bool = False,
    practice_set: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The session's trials, in presentation order.

    Parameters
    ----------
    manifest
        The stimulus set's manifest (``sbir_study.stimuli.load_set(...).manifest``).
    seed
        The participant's seed: the same seed gives the same order.
    practice
        Put the protocol's practice pairs first (the lab session; the online page has none).
    practice_set
        The manifest holding the practice pairs when ``manifest`` is one list's (default:
        ``manifest``).

    Returns
    -------
    DataFrame
        :data:`TRIAL_COLUMNS`; ``trial`` counts from 1, ``anchor_rating`` is the prescribed
        rating of anchor pairs (else missing).

    Examples
    --------
    >>> import pandas as pd
    >>> from sbir_study.study.protocol import Protocol
    >>> manifest = pd.DataFrame({
    ...     "sketch_id": ["a", "a", "s", "s", "s", "s"],
    ...     "image_id": ["a1", "a2", "s1", "s2", "s3", "s4"],
    ...     "sketch_path": "x.png", "image_path": "y.png",
    ...     "role": ["anchor", "anchor", "main", "main", "main", "main"],
    ...     "anchor_rating": ["1", "7", "", "", "", ""]})
    >>> trials = build_trials(Protocol(), manifest, seed=1)
    >>> trials["phase"].value_counts().to_dict()
    {'main': 4, 'anchor_demo': 2, 'anchor_repeat': 2}

    Practice pairs come first and leave the rest as it was:

    >>> from sbir_study.study.protocol import Practice
    >>> with_practice = Protocol(practice=Practice(pairs=(("s", "s3"), ("s", "s1"))))
    >>> first = build_trials(with_practice, manifest, seed=1, practice=True)
    >>> first[["phase", "image_id"]].head(3).to_numpy().tolist()
    [['practice', 's3'], ['practice', 's1'], ['anchor_demo', 'a1']]
    >>> first["image_id"].iloc[2:].tolist() == trials["image_id"].tolist()
    True
    """
    import pandas as pd

    from sbir_study.foundation.trial_order import session_order

    if not isinstance(seed, int | np.integer) or seed < 0:
        raise InputError(f"seed: expected a whole number >= 0, got {seed!r}")
    if not manifest["role"].isin(protocol.main_roles).any():
        raise InputError(
            f"stimulus set: no pairs with role {' or '.join(protocol.main_roles)}; the protocol "
            f"{protocol.name!r} rates those"
        )
    anchoring = protocol.anchoring
    trials = session_order(
        manifest,
        np.random.default_rng(seed),
        main_roles=protocol.main_roles,
        anchoring=anchoring.enabled,
        repeat=anchoring.repeat,
        repeat_from=anchoring.repeat_from,
    )
    if practice and protocol.practice.pairs:
        found = practice_pairs(protocol, manifest if practice_set is None else practice_set)
        trials = pd.concat([found, trials], ignore_index=True)
    trials["trial"] = np.arange(1, len(trials) + 1)
    if "anchor_rating" in trials.columns:
        prescribed = pd.to_numeric(trials["anchor_rating"].replace({"": None, "n/a": None}))
        # A practice pair is rated freely, whatever the set prescribes for it.
        prescribed[trials["phase"].eq("practice").to_numpy()] = None
        trials["anchor_rating"] = prescribed.astype("Int64")
    else:
        trials["anchor_rating"] = pd.array([pd.NA] * len(trials), dtype="Int64")
    return trials[list(TRIAL_COLUMNS)]


def practice_pairs(protocol: Protocol, manifest: pd.DataFrame) -> pd.DataFrame:
    """The manifest's rows of the protocol's practice pairs, in its order, phase ``practice``;
    a pair the set lacks is refused.
    """
    index = manifest.set_index(["sketch_id", "image_id"]).index
    rows = []
    for number, (sketch_id, image_id) in enumerate(protocol.practice.pairs):
        found = np.flatnonzero(index == (sketch_id, image_id))
        if not len(found):
            raise InputError(
                f"practice.pairs[{number}]: the stimulus set has no pair {sketch_id}/{image_id}; "
                "expected pairs of its manifest (sketch_id, image_id)"
            )
        rows.append(found[0])
    return manifest.iloc[rows].assign(phase="practice")


def stimulus_set_for(
    folder: str | Path, protocol: Protocol, *, checked: StimulusSet | None = None
) -> StimulusSet:
    """Load and check the stimulus set, with the anchor pairs the protocol needs.

    ``checked`` is a set :func:`~sbir_study.stimuli.load_set` already checked (``serve`` keeps
    that check between starts); only the protocol's checks run then.
    """
    import pandas as pd

    from sbir_study.stimuli import load_set

    stimulus_set = checked if checked is not None else load_set(folder)
    if protocol.anchoring.enabled and stimulus_set.pairs("anchor").empty:
        raise InputError(
            f"{folder}: the protocol {protocol.name!r} has anchoring, but the set has no anchor "
            "pairs (set anchoring.enabled = false, or use a set with an anchor block)"
        )
    if protocol.anchoring.enabled:
        anchors = stimulus_set.pairs("anchor")
        prescribed = pd.to_numeric(anchors["anchor_rating"], errors="coerce")
        off = ~prescribed.isin(protocol.scale.points)
        if off.any():
            pair = anchors[off].iloc[0]
            raise InputError(
                f"{folder}: anchor pair {pair['sketch_id']}/{pair['image_id']}: prescribed "
                f"rating {pair['anchor_rating']} is not on the protocol's scale "
                f"{protocol.scale} ({len(protocol.response.keys)} keys); use a set whose anchor "
                "ratings lie on it, or set anchoring.enabled = false"
            )
        if meant := _anchors_meant_for(stimulus_set.folder, prescribed, protocol.scale):
            warnings.warn(meant, AnchorScaleWarning, stacklevel=2)
    check_catch_pairs(protocol, stimulus_set.manifest, folder)
    return stimulus_set


def check_catch_pairs(protocol: Protocol, manifest: pd.DataFrame, folder: str | Path) -> None:
    """Every catch pair is a pair of the set's main block: one no participant is shown could
    never be scored.
    """
    import pandas as pd

    rated = manifest[manifest["role"].isin(protocol.main_roles)]
    index = pd.MultiIndex.from_frame(rated[["sketch_id", "image_id"]])
    for number, pair in enumerate(protocol.catch):
        if (pair.sketch_id, pair.image_id) not in index:
            raise InputError(
                f"{folder}: catch[{number}]: the stimulus set has no pair "
                f"{pair.sketch_id}/{pair.image_id} of role {' or '.join(protocol.main_roles)}; "
                "expected a pair of its main block (manifest.csv: sketch_id, image_id)"
            )


class AnchorScaleWarning(UserWarning):
    """A stimulus set's anchor pairs were made for another scale than the protocol's."""


def _anchors_meant_for(folder: Path, prescribed: pd.Series, scale: Scale) -> str | None:
    """Why the anchors look made for another scale than ``scale``, or None.

    Anchoring shows what each end of the scale means: a 1-5 set's anchors under 7 keys never
    show a 7, and a set made with 1 the best match shows the best image as the worst under a
    high-is-best protocol. ``stimuli generate`` records its scale (``AnchorScale``, absent for
    the paper's); for an imported set only the prescribed ratings' range is looked at.
    """
    from sbir_study.stimuli.manifest import GENERATOR_FILE

    generator = Path(folder) / GENERATOR_FILE
    meant = None
    if generator.is_file():
        try:
            recorded = json.loads(generator.read_text(encoding="utf-8")).get("AnchorScale")
            meant = PAPER_SCALE if recorded is None else Scale.parse(recorded, what=str(generator))
        except (ValueError, AttributeError, InputError):
            meant = None  # a file another tool wrote: the ratings' range still speaks
    if meant is not None and meant != scale:
        return (
            f"{folder}: the anchor pairs were made for the scale {meant} ({GENERATOR_FILE}: "
            f"AnchorScale), but the protocol's scale is {scale}; the anchoring phase will "
            f"show the participant the ends of another scale (stimuli generate --scale {scale} "
            "makes a set for it)"
        )
    low, high = int(prescribed.min()), int(prescribed.max())
    if (low, high) != (scale.low, scale.high):
        return (
            f"{folder}: the anchor pairs' prescribed ratings run from {low} to {high}, not from "
            f"end to end of the protocol's scale {scale}; the anchoring phase will not show the "
            "participant what each end means (a set made for another scale?)"
        )
    return None
