"""The orientation of a study's ratings: which end of its scale the statistics read as best.

``analyze`` works in the paper's orientation, the low end the best match (Eitz et al.
2011, Sec. 2.3); a high-is-best table is turned once, at the start
(:func:`in_paper_orientation`), and its scale travels in ``attrs["scale"]``.
"""

from __future__ import annotations

import pandas as pd

from sbir_study.foundation.scale import PAPER_SCALE, Scale

__all__ = ["in_paper_orientation", "ratings_scale"]


def ratings_scale(table: pd.DataFrame) -> Scale:
    """A table's ``attrs["scale"]``; a table built without one is on the paper's 1..7, 1 best."""
    return table.attrs.get("scale", PAPER_SCALE)


def in_paper_orientation(ratings: pd.DataFrame) -> pd.DataFrame:
    """The ratings with the low end of their scale the best match, as the statistics read them.

    On a high-is-best scale every ``rating`` and ``anchor_rating`` r becomes
    low + high - r (:meth:`~sbir_study.foundation.scale.Scale.oriented`), so one ordering,
    binning and qrels grade serve every scale. A low-is-best or turned table is returned
    as it is; ``attrs`` keep the recorded scale and mark it turned.

    Examples
    --------
    >>> table = pd.DataFrame({"participant": "1", "sketch_id": "s", "image_id": ["a", "b"],
    ...                       "phase": "main", "rating": [5, 2]})
    >>> table.attrs["scale"] = Scale(1, 5, "high")
    >>> in_paper_orientation(table)["rating"].tolist()
    [1, 4]
    """
    scale = ratings_scale(ratings)
    if scale.best == "low" or ratings.attrs.get("paper_orientation", False):
        return ratings
    turned = ratings.copy(deep=False)
    for column in ("rating", "anchor_rating"):
        if column in turned:
            turned[column] = scale.oriented(turned[column])
    turned.attrs = {**ratings.attrs, "scale": scale, "paper_orientation": True}
    return turned
