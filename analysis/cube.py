"""The ratings of one phase as a sketches x participants x images array, built once."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["RatingCube", "main_phase_cube", "rating_cube"]


def _sorted_cells(column: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize(column, sort=True)``: ``intp`` codes, distinct cells as an object array."""
    codes, distinct = pd.factorize(column, sort=True)
    return codes.astype(np.intp, copy=False), np.asarray(distinct, dtype=object)


@dataclass(frozen=True)
class RatingCube:
    """``values[s, r, i]``: participant ``participants[r]``'s rating of ``images[s][i]``.

    NaN where not rated or where the sketch has fewer images than the widest.
    """

    sketches: np.ndarray
    participants: np.ndarray
    images: tuple[np.ndarray, ...]
    values: np.ndarray

    def sketch(self, index: int) -> np.ndarray:
        """The participants x images matrix of sketch ``index``, without padding."""
        return self.values[index, :, : len(self.images[index])]


def rating_cube(ratings: pd.DataFrame, column: str = "rating") -> RatingCube:
    """``ratings[column]`` as a sorted :class:`RatingCube`; each participant, sketch, image once."""
    sketch_code, sketches = _sorted_cells(ratings["sketch_id"])
    participant_code, participants = _sorted_cells(ratings["participant"])
    image_code, image_names = _sorted_cells(ratings["image_id"])
    # Pairs sorted by sketch, then image: a pair's position within its sketch is
    # its index among all pairs minus the index of its sketch's first pair. The keys are
    # small whole numbers, so the distinct ones and each row's index among them come from
    # one pass over a table of every possible key (what np.unique(..., return_inverse=True)
    # gives, without sorting millions of rows).
    key = sketch_code.astype(np.int64) * len(image_names) + image_code
    present = np.zeros(len(sketches) * len(image_names), dtype=bool)
    present[key] = True
    pairs = np.flatnonzero(present)
    pair_index = (np.cumsum(present) - 1)[key]
    starts = np.searchsorted(pairs, np.arange(len(sketches) + 1) * len(image_names))
    position = pair_index - starts[sketch_code]
    image_names = np.asarray(image_names, dtype=object)
    images = tuple(
        image_names[pairs[begin:end] % len(image_names)]
        for begin, end in itertools.pairwise(starts)
    )
    width = int(np.diff(starts).max(initial=0))
    values = np.full((len(sketches), len(participants), width), np.nan)
    values[sketch_code, participant_code, position] = ratings[column].to_numpy(
        dtype=np.float64, na_value=np.nan
    )
    return RatingCube(np.asarray(sketches), np.asarray(participants), images, values)


def main_phase_cube(ratings: pd.DataFrame, cube: RatingCube | None = None) -> RatingCube | None:
    """The main phase's :func:`rating_cube` (None without rows), or ``cube`` when given."""
    if cube is None:
        main = ratings[ratings["phase"] == "main"]
        cube = None if main.empty else rating_cube(main)
    return cube
