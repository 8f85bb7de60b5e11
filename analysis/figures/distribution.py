"""Fig. 7, the ratings over the scale, and Fig. 8, the ratings by their pair's median (Eq. 3).

One bar or bin per point of the scale, in the paper's orientation. Eitz et al.
(2011), Sec. 3.3 and the captions of Figs. 7 and 8.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from sbir_study.foundation.scale import PAPER_SCALE, Scale

from .style import THOUSANDS

__all__ = ["plot_bins", "plot_distribution"]


def _rating_axis_label(scale: Scale = PAPER_SCALE) -> str:
    """The rating axis of Figs. 7 and 8: the scale in the paper's orientation.

    >>> _rating_axis_label()
    'rating (1 = best match, 7 = worst)'
    >>> _rating_axis_label(Scale(1, 5, "high"))
    'rating (1 = best match, 5 = worst; recorded r shown as 6 - r)'
    """
    label = f"rating ({scale.low} = best match, {scale.high} = worst"
    if scale.best == "high":
        label += f"; recorded r shown as {scale.low + scale.high} - r"
    return label + ")"


def plot_distribution(
    distributions: Mapping[str, pd.DataFrame], *, ax: Axes, scale: Scale = PAPER_SCALE
) -> Axes:
    """Fig. 7: share of main-phase ratings at each point per dataset, against the uniform share.

    ``distributions`` maps a label (``"pilot"``, ``"final"``) to a
    :func:`sbir_study.analysis.rating_distribution` table.
    """
    levels = np.array(scale.points)
    width = 0.8 / max(len(distributions), 1)
    for k, (label, table) in enumerate(distributions.items()):
        main = table[table["phase"] == "main"].set_index("rating")
        shares = main["share"].reindex(levels).to_numpy(dtype=float)
        offset = (k - (len(distributions) - 1) / 2) * width
        ax.bar(
            levels + offset,
            shares,
            width=width,
            color=f"C{k}",
            label=_distribution_label(label, main.get("count")),
        )
    ax.axhline(
        1.0 / len(levels),
        color="black",
        linestyle="--",
        linewidth=1,
        label=f"desired uniform share (1/{len(levels)})",
    )
    ax.set_xticks(levels)
    ax.set_xlabel(_rating_axis_label(scale))
    ax.set_ylabel("share of ratings")
    ax.set_ylim(0, ax.get_ylim()[1] * 1.2)  # headroom for the legend
    ax.legend(loc="upper center", ncol=len(distributions) + 1, fontsize="small")
    ax.set_title("Distribution of ratings over the scale")
    return ax


def _distribution_label(dataset: str, counts: pd.Series | None) -> str:
    """A Fig. 7 legend entry: whose main-block ratings the shares are of (count when known).

    >>> _distribution_label("final", pd.Series([600, 640]))
    'final study: share of its 1,240 main-block ratings'
    """
    if counts is None:
        return f"{dataset} study: share of its main-block ratings"
    return f"{dataset} study: share of its {int(counts.sum()):,} main-block ratings"


def plot_bins(
    bins: pd.DataFrame, *, axes: Sequence[Axes], scale: Scale = PAPER_SCALE
) -> Sequence[Axes]:
    """Fig. 8: ratings grouped by their pair's median (bins B_k of Eq. 3), a bin per point.

    Left: mean and sd of each bin (the sd written above the bar); right: its count.
    """
    levels = np.array(scale.points)
    left, right = axes
    k = bins["bin"].to_numpy()
    mean, sd = bins["mean"].to_numpy(float), bins["sd"].to_numpy(float)
    left.errorbar(k, mean, yerr=sd, fmt="o", color="C0", ecolor="C0", capsize=4, label="mean ± sd")
    left.plot(
        [scale.low, scale.high],
        [scale.low, scale.high],
        color="0.7",
        linewidth=0.8,
        zorder=0,
        label="rating = bin",
    )
    for x, m, s in zip(k, mean, sd, strict=True):
        if np.isfinite(s):
            left.annotate(
                f"σ={s:.2f}",
                (x, m + s),
                textcoords="offset points",
                xytext=(0, 4),
                ha="center",
                fontsize="x-small",
            )
    left.set_xticks(levels)
    left.set_ylim(0, scale.high + 1.2)
    left.set_xlabel("bin k (k ≤ median rating of the pair < k + 1)")
    left.set_ylabel(_rating_axis_label(scale) if scale.best == "high" else "rating")
    left.legend(loc="upper left", fontsize="small")
    left.set_title("Mean and standard deviation per bin")
    right.bar(k, bins["n_ratings"].to_numpy(), color="C0")
    right.yaxis.set_major_formatter(THOUSANDS)
    right.set_xticks(levels)
    right.set_xlabel("bin k")
    right.set_ylabel("number of ratings")
    right.set_title("Ratings per bin")
    return axes
