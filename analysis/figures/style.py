"""What every figure shares: markers, the tau_b label, counts, fitted ranges, empty axes, saving.

Used by :mod:`sbir_study.analysis.figures` and
:mod:`sbir_study.analysis.retrieval.evaluation_figures`. :func:`save_figure` embeds PDF
fonts as TrueType (42), which journals accept, on each save, never globally. PDFs and
SVGs carry no date and SVG ids come from a fixed salt, so the same inputs write the
same bytes (the output record then says "unchanged").
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import StrMethodFormatter

from sbir_study.foundation.html import DEFAULT_FIGURE_FORMATS

__all__ = [
    "MARKERS",
    "TAU",
    "THOUSANDS",
    "finite_min",
    "fitted_range",
    "nothing_to_draw",
    "save_figure",
]

#: Marker shapes, one per series (anchor sketch, system), cycled.
MARKERS = ("o", "s", "^", "D", "v", "P", "X")
#: Kendall's tau_b as mathtext, set as the paper sets it (an italic tau, subscript b).
TAU = r"$\tau_b$"
#: Counts on an axis as a reader writes them: 100,000, not 100000 or 1e5.
THOUSANDS = StrMethodFormatter("{x:,.0f}")


def nothing_to_draw(ax: Axes, message: str) -> Axes:
    """Axes that say why they are empty, instead of empty axes a reader might misread."""
    ax.set_xticks([])
    ax.set_yticks([])
    ax.text(
        0.5,
        0.5,
        textwrap.fill(message, 70),
        transform=ax.transAxes,
        ha="center",
        va="center",
        fontsize="medium",
        color="0.25",
    )
    return ax


def fitted_range(
    values: Iterable[float], margin: float = 0.08, bounds: tuple[float, float] = (-1.05, 1.05)
) -> tuple[float, float]:
    """A y range fitting ``values`` with a margin, 0 kept in view when they straddle it.

    Fitted, correlations between 0.1 and 1 are legible; the range stays in ``bounds``.

    Examples
    --------
    >>> [round(v, 3) for v in fitted_range([0.2, 0.9, 1.0])]
    [0.136, 1.05]
    >>> [round(v, 3) for v in fitted_range([-0.3, 0.5])]
    [-0.364, 0.564]
    """
    finite = np.asarray(list(values), dtype=float)
    finite = finite[np.isfinite(finite)]
    if not finite.size:
        return bounds
    low, high = float(finite.min()), float(finite.max())
    pad = margin * max(high - low, 0.25)
    return max(bounds[0], low - pad), min(bounds[1], high + pad)


def finite_min(values: Iterable[float]) -> float:
    """The smallest finite value of ``values``, 0 when there is none.

    >>> finite_min([np.nan, 0.4, -0.2])
    -0.2
    """
    finite = np.asarray(list(values), dtype=float)
    finite = finite[np.isfinite(finite)]
    return float(finite.min()) if finite.size else 0.0


_SAVE_OPTIONS: dict[str, dict[str, Any]] = {
    "png": {"dpi": 150},
    "pdf": {"metadata": {"CreationDate": None}},
    "svg": {"metadata": {"Date": None}},
}


def save_figure(
    figure: Figure, stem: Path, formats: Sequence[str] = DEFAULT_FIGURE_FORMATS
) -> Path:
    """Write ``figure`` to ``stem`` in each of ``formats`` (already checked); return the PNG."""
    with rc_context({"pdf.fonttype": 42, "ps.fonttype": 42, "svg.hashsalt": "sbir-study"}):
        for suffix in formats:
            figure.savefig(stem.with_suffix(f".{suffix}"), **_SAVE_OPTIONS[suffix])
    return stem.with_suffix(".png")
