"""The rating scale of a study: its points, and which end is the best match.

A protocol's rating keys define a k-point scale (2 <= k <= 9); the paper's is 1..7, 1 the
best match (Sec. 2.3). A session writes it into every ``_beh.json`` (:meth:`Scale.sidecar`),
the analysis reads it back (:meth:`Scale.from_sidecar`), and a flat table names it on the
command line (``--scale 1-9:high-is-best``, :meth:`Scale.parse`). The statistics work with
the low end best: :meth:`Scale.oriented` turns a high-is-best scale round in one place, and
every other number of the scale is in that orientation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeVar

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    from numpy.typing import ArrayLike

from . import paper
from .checks import InputError

__all__ = ["PAPER_SCALE", "SCALE_POINTS", "Scale"]

#: How many points a scale may have: at least two, at most one key per digit 1..9.
SCALE_POINTS = (2, 9)
_BEST = ("low", "high")
#: What :meth:`Scale.oriented` turns: a rating, or an array or Series of them.
_Ratings = TypeVar("_Ratings", int, float, "np.ndarray", "pd.Series")
_TEXT = re.compile(r"(\d+)-(\d+)(?::(low|high)-is-best)?")


@dataclass(frozen=True)
class Scale:
    """A k-point rating scale ``low..high`` (``low >= 0``, k in 2..9) and the end that means the
    best match (``best``).

    >>> Scale.parse("1-9:high-is-best")
    Scale(low=1, high=9, best='high')
    >>> PAPER_SCALE.k, PAPER_SCALE.relevant_below, str(PAPER_SCALE)
    (7, 3.5, '1-7')
    >>> Scale(1, 5, "high").oriented(5)
    1
    """

    low: int = 1
    high: int = 7
    best: Literal["low", "high"] = "low"

    def __post_init__(self) -> None:
        for name in ("low", "high"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise InputError(f"scale: expected a whole number >= 0 as {name}, got {value!r}")
        if not SCALE_POINTS[0] <= self.k <= SCALE_POINTS[1]:
            raise InputError(
                f"scale: expected {SCALE_POINTS[0]} to {SCALE_POINTS[1]} points, got "
                f"{self.low}-{self.high} ({self.k} points)"
            )
        if self.best not in _BEST:
            raise InputError(f"scale: expected best 'low' or 'high', got {self.best!r}")

    @classmethod
    def parse(cls, text: str, *, what: str = "--scale") -> Scale:
        """A scale from ``LOW-HIGH``, optionally ``:high-is-best`` or ``:low-is-best``; ``what``
        names the text's source in an error.

        >>> Scale.parse("1-5")
        Scale(low=1, high=5, best='low')
        >>> try:
        ...     Scale.parse("1-12")
        ... except InputError as error:
        ...     print(error)
        --scale: expected 2 to 9 points, got 1-12 (12 points)
        """
        match = _TEXT.fullmatch(str(text).strip())
        if match is None:
            raise InputError(
                f"{what}: expected LOW-HIGH, optionally with :high-is-best (1-5, "
                f"1-9:high-is-best), got {text!r}"
            )
        try:
            return cls(int(match[1]), int(match[2]), "high" if match[3] == "high" else "low")
        except InputError as error:
            raise InputError(f"{what}: {str(error).removeprefix('scale: ')}") from None

    def __str__(self) -> str:
        return f"{self.low}-{self.high}" + (":high-is-best" if self.best == "high" else "")

    @property
    def k(self) -> int:
        """The number of points."""
        return self.high - self.low + 1

    @property
    def points(self) -> tuple[int, ...]:
        """Every point, ``low`` first."""
        return tuple(range(self.low, self.high + 1))

    @property
    def best_point(self) -> int:
        """The point meaning the best match, as recorded."""
        return self.low if self.best == "low" else self.high

    @property
    def midpoint(self) -> float:
        """The middle of the scale, (low + high) / 2."""
        return (self.low + self.high) / 2

    @property
    def relevant_below(self) -> float:
        """Binary relevance: a mean rating (oriented) below low + floor(k / 2) - 0.5 is relevant.

        A mean rounding to the better half is relevant, one rounding to an odd scale's middle is
        not: 3.5 on 1..7 (a qrels grade of at least 4), 2.5 on 1..4.
        """
        return self.low + self.k // 2 - 0.5

    def oriented(self, ratings: _Ratings) -> _Ratings:
        """Ratings (a number, array or Series; missing stays missing) with ``low`` the best match:
        r -> low + high - r for a high-is-best scale.
        """
        return ratings if self.best == "low" else self.low + self.high - ratings

    def grade(self, mean_rating: ArrayLike) -> np.ndarray:
        """The qrels grade of an oriented mean rating, high - round(mean) (k - 1 best .. 0 worst); a
        half rounds to the worse point.
        """
        import numpy as np

        return self.high - np.floor(np.asarray(mean_rating, dtype=float) + 0.5).astype(int)

    def levels(self) -> dict[str, str]:
        """The BIDS ``Levels`` of the ``rating`` column: every point and its meaning."""
        worst = self.high if self.best == "low" else self.low
        middle = self.midpoint
        levels = {}
        for point in self.points:
            if point == self.best_point:
                levels[str(point)] = "best match"
            elif point == worst:
                levels[str(point)] = "worst match"
            elif point == middle:
                levels[str(point)] = f"{point} (middle of the scale)"
            else:
                levels[str(point)] = str(point)
        return levels

    def sidecar(self) -> dict:
        """What a ``_beh.json`` sidecar records of the scale (``RatingScale``)."""
        return {"Low": self.low, "High": self.high, "Best": self.best}

    @classmethod
    def from_sidecar(cls, entry: object, *, what: str) -> Scale:
        """The scale a sidecar's ``RatingScale`` records; ``what`` names the file."""
        if not isinstance(entry, dict) or set(entry) != {"Low", "High", "Best"}:
            raise InputError(
                f"{what}: RatingScale: expected an object with Low, High and Best, got {entry!r}"
            )
        try:
            return cls(entry["Low"], entry["High"], entry["Best"])
        except InputError as error:
            raise InputError(f"{what}: RatingScale: {str(error).removeprefix('scale: ')}") from None


#: The paper's scale: 1..7, 1 the best match (Eitz et al. 2011, Sec. 2.3).
PAPER_SCALE = Scale(*paper.SCALE, "low")
