"""Figs. 4 and 6: each participant's tau_b against the anchors' ratings and the consensus.

Up to :data:`PARTICIPANT_VIEW_LIMIT` participants each is drawn at a labelled place
(``view="each"``); beyond, ticks merge into a band, so the figures draw the
distribution over participants sorted by median (``view="aggregate"``): the medians
as a line in bands of pooled quantiles over windows of ranks (:func:`_rank_windows`).
Eitz et al. (2011), Sec. 3.3 and the captions of Figs. 4 and 6.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from sbir_study.foundation.checks import check_option

from .style import MARKERS, TAU, THOUSANDS, fitted_range, nothing_to_draw

__all__ = [
    "PARTICIPANT_VIEW_LIMIT",
    "VIEWS",
    "aggregate_view",
    "plot_anchoring",
    "plot_vs_consensus",
    "tau_threshold",
]

#: Up to this many participants, Figs. 4 and 6 draw each participant at a labelled
#: place; beyond it, the distribution over the participants sorted by their median.
PARTICIPANT_VIEW_LIMIT = 60
#: The views of Figs. 4 and 6 (:func:`plot_anchoring`).
VIEWS = ("auto", "each", "aggregate")
#: In the aggregate view, the bands are quantiles of every tau_b of the participants in a
#: window of ceil(sqrt(N)) ranks, wide enough to pool :data:`_BAND_VALUES` values: smooth
#: at any N, where a running median of each participant's own quantiles is jagged. They
#: are taken at :data:`_BAND_POINTS` ranks at most, more than a figure's width in pixels.
_BAND_POINTS = 400
_BAND_LABELS = ("25th-75th percentile", "5th-95th percentile")
_BAND_VALUES = 400
#: The aggregate view's margin left and right of the ranks, as a share of N, so the lowest-
#: and highest-ranked participants are not drawn on the axis lines.
_RANK_MARGIN = 0.02


def tau_threshold(n_items: int, alpha: float = 0.05, alternative: str = "greater") -> float:
    """The smallest tau_b significant at ``alpha`` between two untied lists of ``n_items``.

    From var S = n (n - 1)(2n + 5) / 18; ties raise it slightly; negative for ``"less"``.

    >>> round(tau_threshold(7), 3)
    0.522
    """
    from scipy import special

    n = float(n_items)
    if n < 2:
        return float("nan")
    tail = alpha / 2.0 if alternative == "two-sided" else alpha
    z = -float(special.ndtri(tail))
    threshold = z * math.sqrt(n * (n - 1.0) * (2.0 * n + 5.0) / 18.0) / (n * (n - 1.0) / 2.0)
    return -threshold if alternative == "less" else threshold


def plot_anchoring(
    anchoring: pd.DataFrame,
    *,
    ax: Axes,
    alpha: float = 0.05,
    alternative: str = "greater",
    view: str = "auto",
) -> Axes:
    """Fig. 4: per participant, tau_b between the anchor repeats and the prescribed ratings.

    ``view="each"``: a marker per participant and anchor sketch, filled where
    significant at ``alpha``; ``"aggregate"``: participants by median tau_b, the median
    a line in a band from lowest to highest; ``"auto"``: :func:`aggregate_view`. The
    dashed line is the threshold without ties; without anchor repeats the axes say so.

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> table = pd.DataFrame({"participant": ["01", "02"], "sketch_id": ["a", "a"],
    ...                       "tau_b": [0.9, 0.4], "p_value": [0.01, 0.2], "n_items": [7, 7]})
    >>> ax = plot_anchoring(table, ax=Figure().add_subplot())
    >>> [label.get_text() for label in ax.get_xticklabels()]
    ['01', '02']
    """
    check_option("view", view, VIEWS)
    table = anchoring.dropna(subset=["tau_b"])
    ax.set_title("Anchoring: ratings of the anchor pairs during the experiment")
    if table.empty:
        return nothing_to_draw(
            ax,
            "No anchor repeats in these ratings: the study had no anchoring phase (or no "
            "anchor pair was rated again in the main block), so there is nothing to compare "
            "with the prescribed ratings.",
        )
    participants = sorted(anchoring["participant"].astype(str).unique())
    n_items = int(anchoring["n_items"].max())
    threshold = tau_threshold(n_items, alpha, alternative)
    if aggregate_view(view, len(participants)):
        handles, labels, drawn, title = _anchoring_aggregate(table, ax, alpha)
    else:
        handles, labels = _anchoring_each(anchoring, table, participants, ax, alpha)
        drawn = table["tau_b"].to_numpy(dtype=float)
    if np.isfinite(threshold):
        ax.axhline(threshold, color="0.3", linestyle="--", linewidth=1)
        handles.append(Line2D([], [], color="0.3", linestyle="--"))
        labels.append(f"significance threshold (n = {n_items}, no ties, α = {alpha:g})")
    # Fitted to the data, the axes have no empty corner to spare: the legend goes beside,
    # or, in the aggregate view (as wide as a page, with long entries), below.
    ax.set_ylim(*fitted_range([*drawn, threshold]))
    if aggregate_view(view, len(participants)):
        place: dict[str, Any] = {"loc": "upper center", "bbox_to_anchor": (0.5, -0.16), "ncol": 2}
        place |= {"title": title or None, "title_fontsize": "small"}
    else:
        place = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "borderaxespad": 0}
    ax.legend(handles, labels, fontsize="small", **place)
    ax.set_ylabel(f"Kendall's {TAU} with the prescribed ratings")
    return ax


def _anchoring_each(anchoring, table, participants, ax, alpha) -> tuple[list, list]:
    position = {p: i + 1 for i, p in enumerate(participants)}
    sketches = sorted(anchoring["sketch_id"].astype(str).unique())
    for k, sketch in enumerate(sketches):
        rows = table[table["sketch_id"].astype(str) == sketch]
        x = rows["participant"].astype(str).map(position).to_numpy(dtype=float)
        x = x + (k - (len(sketches) - 1) / 2) * 0.18
        significant = (rows["p_value"] < alpha).to_numpy()
        color = f"C{k}"
        marker = MARKERS[k % len(MARKERS)]
        tau = rows["tau_b"].to_numpy()
        filled: dict[str, Any] = {"color": color, "label": f"anchor {sketch}"}
        hollow: dict[str, Any] = {"facecolors": "none", "edgecolors": color}
        for chosen, look in ((significant, filled), (~significant, hollow)):
            ax.scatter(x[chosen], tau[chosen], marker=marker, s=28, zorder=3, **look)
    handles, labels = ax.get_legend_handles_labels()
    handles.append(
        Line2D([], [], marker="o", linestyle="", markerfacecolor="none", markeredgecolor="0.3")
    )
    labels.append("hollow: not significant")
    _participant_axis(ax, participants)
    return handles, labels


def _anchoring_aggregate(table, ax, alpha) -> tuple[list, list, np.ndarray, str]:
    spread = _rank_windows(table, "tau_b")
    median, inner, outer = _draw_rank_bands(ax, spread)
    significant = float((table["p_value"] < alpha).mean())
    n_sketches = table["sketch_id"].nunique()
    _rank_axis(ax, len(spread.median), f"{TAU} over their anchor sketches")
    return (
        [median, inner, outer],
        [
            f"each participant's median over the {n_sketches} anchor sketches "
            f"({100 * significant:.1f}% of all {len(table):,} correlations significant)",
            *_BAND_LABELS,
        ],
        np.concatenate([spread.median, *spread.bands.values()]),
        spread.note,
    )


def plot_vs_consensus(
    consensus: pd.DataFrame, *, ax: Axes, loo: bool = False, view: str = "auto"
) -> Axes:
    """Fig. 6: per participant, the distribution of per-sketch tau_b against the consensus.

    ``tau_b`` (participant included, the paper's) or with ``loo`` ``tau_b_loo``.
    ``view="each"``: a box per participant, as in the paper; ``"aggregate"``: the medians
    as a line in bands of the 25th-75th and 5th-95th percentiles; ``"auto"``:
    :func:`aggregate_view`.
    """
    check_option("view", view, VIEWS)
    column = "tau_b_loo" if loo else "tau_b"
    participants = sorted(consensus["participant"].astype(str).unique())
    variant = (
        "the consensus of the other participants (leave-one-out)"
        if loo
        else "the consensus, participant included (as in the paper)"
    )
    ax.set_title(f"Each participant against {variant}", fontsize="medium")
    ax.set_ylabel(f"{TAU} with the consensus")
    values = consensus[column].to_numpy(dtype=float)
    if not np.isfinite(values).any():
        return nothing_to_draw(ax, f"No participant has a finite {TAU} against the consensus.")
    if aggregate_view(view, len(participants)):
        spread = _rank_windows(consensus, column)
        median, inner, outer = _draw_rank_bands(ax, spread)
        _rank_axis(ax, len(spread.median), f"{TAU} over the sketches")
        ax.legend(
            [median, inner, outer],
            ["each participant's median over the sketches", *_BAND_LABELS],
            loc="lower right",
            fontsize="small",
            framealpha=0.9,
            title=spread.note or None,
            title_fontsize="small",
        )
        drawn = [spread.median, *spread.bands.values()]
    else:
        by_participant = consensus.groupby(consensus["participant"].astype(str))[column]
        data = [by_participant.get_group(p).dropna().to_numpy() for p in participants]
        ax.boxplot(
            data,
            positions=np.arange(1, len(data) + 1),
            widths=0.6,
            flierprops={"marker": "+", "markeredgecolor": "red", "markersize": 5},
            medianprops={"color": "C0", "linewidth": 1.5},
        )
        _participant_axis(ax, participants)
        drawn = [values]
    # Fitted to what is drawn (as Fig. 4), not -1 to 1 with a third of the axes empty.
    ax.set_ylim(*fitted_range(np.concatenate(drawn)))
    return ax


def aggregate_view(view: str, n_participants: int) -> bool:
    """Whether ``view`` (:data:`VIEWS`) draws ``n_participants`` in the aggregate view.

    >>> aggregate_view("auto", 60), aggregate_view("auto", 61), aggregate_view("each", 61)
    (False, True, False)
    """
    return view == "aggregate" or (view == "auto" and n_participants > PARTICIPANT_VIEW_LIMIT)


class _RankSpread(NamedTuple):
    """The aggregate view of Figs. 4 and 6: each participant's median, participants sorted
    by it, and the pooled quantiles over windows of ranks (:func:`_rank_windows`)."""

    median: np.ndarray
    ranks: np.ndarray
    bands: dict
    window: int
    note: str


def _rank_window(n: int, n_values: int) -> int:
    """Participants in a band's window: ceil(sqrt(n)), or enough for :data:`_BAND_VALUES` values.

    >>> _rank_window(61, 61 * 31), _rank_window(2000, 2000 * 31), _rank_window(2000, 6000)
    (13, 45, 134)
    """
    per_participant = n_values / max(n, 1)
    wanted = max(math.ceil(math.sqrt(n)), math.ceil(_BAND_VALUES / max(per_participant, 1)))
    return max(1, min(n, wanted))


def _rank_windows(
    table: pd.DataFrame, column: str, percentiles: Sequence[int] = (5, 25, 75, 95)
) -> _RankSpread:
    """Participants by median ``column`` (ties by label) and, at up to :data:`_BAND_POINTS` ranks,
    the ``percentiles`` of the pooled values of the :func:`_rank_window` around each rank.

    Pooled values, not smoothed quantiles, make a band smooth at any N.
    """
    values = table[["participant", column]].dropna()
    labels = values["participant"].astype(str)
    median = values.groupby(labels, sort=False)[column].median()
    order = pd.DataFrame({"median": median, "label": median.index}).sort_values(
        ["median", "label"], kind="stable"
    )
    rank = pd.Series(np.arange(len(order)), index=order.index)
    # Every value in the order of its participant's rank: a window is one slice.
    by_rank = rank.reindex(labels).to_numpy()
    ordered = values[column].to_numpy(dtype=float)[np.argsort(by_rank, kind="stable")]
    starts = np.concatenate([[0], np.cumsum(np.bincount(by_rank, minlength=len(order)))])
    n, window = len(order), _rank_window(len(order), len(values))
    centres = np.unique(np.linspace(0, n - 1, min(n, _BAND_POINTS)).round().astype(int))
    low = np.maximum(centres - window // 2, 0)
    high = np.minimum(centres - window // 2 + window, n)
    quantiles = np.array(
        [
            np.percentile(ordered[starts[a] : starts[b]], percentiles)
            for a, b in zip(low, high, strict=True)
        ]
    )
    note = "" if window == 1 else f"bands over the {window:,} participants around each rank"
    return _RankSpread(
        median=order["median"].to_numpy(dtype=float),
        ranks=centres + 1.0,
        bands={q: quantiles[:, k] for k, q in enumerate(percentiles)},
        window=window,
        note=note,
    )


def _draw_rank_bands(ax: Axes, spread: _RankSpread) -> tuple:
    """Draw the aggregate view: the medians as a line, the bands of the windows' 25th-75th
    and 5th-95th percentiles; returns the three artists for the legend."""
    bands = spread.bands
    outer = ax.fill_between(spread.ranks, bands[5], bands[95], color="C0", alpha=0.15, linewidth=0)
    inner = ax.fill_between(spread.ranks, bands[25], bands[75], color="C0", alpha=0.35, linewidth=0)
    x = np.arange(1, len(spread.median) + 1)
    (median,) = ax.plot(x, spread.median, color="C0", linewidth=1.2, drawstyle="steps-mid")
    return median, inner, outer


def _rank_axis(ax: Axes, n: int, what: str) -> None:
    """The x axis of an aggregate view: participants by rank, a handful of ticks."""
    ax.xaxis.set_major_locator(MaxNLocator(nbins=10, steps=[1, 2, 2.5, 5, 10], integer=True))
    ax.xaxis.set_major_formatter(THOUSANDS)
    margin = max(0.5, _RANK_MARGIN * n)
    ax.set_xlim(1 - margin, n + margin)
    ax.set_xlabel(f"{n:,} participants, sorted by their median {what} (rank)")
    ax.axhline(0.0, color="0.8", linewidth=0.8, zorder=0)


def _participant_axis(ax: Axes, participants: Sequence[str]) -> None:
    positions = np.arange(1, len(participants) + 1)
    ax.set_xticks(
        positions,
        participants,
        rotation=90 if len(participants) > 40 else 0,
        fontsize="small" if len(participants) <= 40 else "x-small",
    )
    ax.set_xlim(0.3, len(participants) + 0.7)
    ax.set_xlabel("participant")
    ax.axhline(0.0, color="0.8", linewidth=0.8, zorder=0)
