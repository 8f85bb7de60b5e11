"""The orientation of a study's ratings: which end of its scale the statistics read as best.

The statistics of ``analyze`` work in the paper's orientation, the low end of the
scale the best match (Eitz et al. 2011, Sec. 2.3: 1 best, 7 worst). Ratings recorded
on a scale whose high end is best are turned into it once, at the start of the
analysis (:func:`in_paper_orientation`); the scale itself travels with the table
in ``attrs["scale"]`` (:func:`ratings_scale`).
"""

from __future__ import annotations

import pandas as pd

from sbir_study.foundation.scale import PAPER_SCALE, Scale

__all__ = ["in_paper_orientation", "ratings_scale"]


def ratings_scale(table: pd.DataFrame) -> Scale:
    """The scale a ratings table (or a table computed from one) is on.

    ``attrs["scale"]`` as :func:`load_ratings` and :func:`validate_ratings` set it;
    a table built without them (by hand, in a test) is on the paper's 1..7, 1 best.
    """
    return table.attrs.get("scale", PAPER_SCALE)


def in_paper_orientation(ratings: pd.DataFrame) -> pd.DataFrame:
    """The ratings with the low end of their scale the best match, as the statistics read them.

    On a scale whose high end is the best match (``1-5:high-is-best``), every
    ``rating`` and ``anchor_rating`` r becomes low + high - r
    (:meth:`~sbir_study.foundation.scale.Scale.oriented`): the best match is then
    ``low``, the worst ``high``, as on the paper's scale, so that one ordering
    (ascending mean rating: best first), one binning and one qrels grade serve
    every scale. Every table and figure of ``analyze`` is in this orientation.
    A table on a low-is-best scale, or turned already, is returned as it is;
    the result's ``attrs`` keep the recorded scale and mark it turned.

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
