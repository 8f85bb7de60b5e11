"""The paper's Figs. 4-9, drawn from the tables of an analysis.

Every ``plot_*`` function draws on the matplotlib ``Axes`` it is given and
returns it, so the figures can be composed, restyled or embedded; they take the
tables :func:`sbir_study.analysis.analyze_ratings` writes, not raw ratings.
:func:`write_figures` lays out the standard files (``.png`` and ``.pdf``).

This and :mod:`sbir_study.analysis.retrieval.evaluation_figures` (the figures of
``evaluate``, which share this module's markers and way of saving) are the only
modules of :mod:`sbir_study.analysis` that import matplotlib. It uses the
object-oriented API (:class:`matplotlib.figure.Figure`), never ``pyplot``, so
drawing needs no display and leaves no global state behind.

References: Eitz et al. (2011), Sec. 3.3 and the captions of Figs. 4-9.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import StrMethodFormatter

from sbir_study.foundation.checks import check_option
from sbir_study.foundation.html import DEFAULT_FIGURE_FORMATS, figure_formats
from sbir_study.foundation.scale import PAPER_SCALE, Scale

__all__ = [
    "FIGURES",
    "PARTICIPANT_VIEW_LIMIT",
    "plot_anchoring",
    "plot_bins",
    "plot_distribution",
    "plot_inter_user",
    "plot_power",
    "plot_reliability_prophecy",
    "plot_sketch_extremes",
    "plot_vs_consensus",
    "tau_threshold",
    "write_figures",
    "write_power_figure",
    "write_reliability_figure",
]

#: The figures :func:`write_figures` writes, by file stem.
FIGURES = (
    "fig4_anchoring",
    "fig5_interuser",
    "fig6_vs_consensus",
    "fig7_distribution",
    "fig8_bins",
)

_MARKERS = ("o", "s", "^", "D", "v", "P", "X")
#: Kendall's tau_b as mathtext, set as the paper sets it (an italic tau, subscript b).
_TAU = r"$\tau_b$"
_DPI = 150
#: Counts on an axis as a reader writes them: 100,000, not 100000 or 1e5.
_THOUSANDS = StrMethodFormatter("{x:,.0f}")
#: Up to this many participants, Figs. 4 and 6 draw each participant at a labelled
#: place; beyond it, one tick per participant merges into a black band and a box per
#: person is a few pixels wide, so they draw the distribution over the participants
#: sorted by their median (``view="aggregate"``).
PARTICIPANT_VIEW_LIMIT = 60
#: Correlations per sketch beyond which Fig. 5 draws the range of the outliers, not each.
_FLIER_POINTS_LIMIT = 5000
#: In the aggregate view, the bands are quantiles of every tau_b of the participants in a
#: window of ranks ceil(sqrt(N)) wide (45 of 2,000, 100 of 10,000), and wide
#: enough to pool at least :data:`_BAND_VALUES` values (Fig. 4's three anchors each: 134
#: participants): a window that grows with N pools more values as the ranks crowd together,
#: so the band is smooth at any size, where a running median of each participant's own
#: quantiles (over 31 sketches or 3 anchors) stayed jagged across the whole width. The
#: quantiles are taken at most at :data:`_BAND_POINTS` ranks, evenly spaced: more than a
#: figure's width in pixels.
_BAND_POINTS = 400
_BAND_VALUES = 400
#: The aggregate view's margin left and right of the ranks, as a share of N, so the lowest-
#: and highest-ranked participants are not drawn on the axis lines.
_RANK_MARGIN = 0.02
#: Font embedding of the PDFs: TrueType (42), which journals accept, instead of
#: matplotlib's default Type 3. Set on each save, never globally.
_PDF_FONTS = {"pdf.fonttype": 42, "ps.fonttype": 42}
#: No creation date in the PDFs and SVGs, and the SVGs' element ids drawn from a fixed
#: salt, so identical runs write identical bytes (their SHA-256 in the output record then
#: says "unchanged"); the PNGs carry no date already.
_PDF_METADATA = {"CreationDate": None}
_SAVE_OPTIONS = {
    "png": {"dpi": _DPI},
    "pdf": {"metadata": _PDF_METADATA},
    "svg": {"metadata": {"Date": None}},
}
_SVG_IDS = {"svg.hashsalt": "sbir-study"}


def tau_threshold(n_items: int, alpha: float = 0.05, alternative: str = "greater") -> float:
    """The smallest tau_b significant at ``alpha`` between two untied lists of ``n_items``.

    From the normal approximation without ties (var S = n (n - 1)(2n + 5) / 18);
    ties raise the threshold slightly. For ``"less"`` the threshold is negative.

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

    ``view="each"`` draws one marker per participant and anchor sketch; filled
    when the correlation is significant at ``alpha``, hollow when not.
    ``view="aggregate"`` sorts the participants by their median tau_b over the
    anchor sketches and draws that median as a line, with a band from each
    participant's lowest to highest tau_b. ``"auto"`` (the default) is
    ``"each"`` up to :data:`PARTICIPANT_VIEW_LIMIT` participants. The dashed line
    is the significance threshold for the anchor block's size without ties.
    Ratings without anchor repeats give axes that say so instead of being empty.

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> table = pd.DataFrame({"participant": ["01", "02"], "sketch_id": ["a", "a"],
    ...                       "tau_b": [0.9, 0.4], "p_value": [0.01, 0.2], "n_items": [7, 7]})
    >>> ax = plot_anchoring(table, ax=Figure().add_subplot())
    >>> [label.get_text() for label in ax.get_xticklabels()]
    ['01', '02']
    """
    check_option("view", view, _VIEWS)
    table = anchoring.dropna(subset=["tau_b"])
    ax.set_title("Anchoring: ratings of the anchor pairs during the experiment")
    if table.empty:
        return _nothing_to_draw(
            ax,
            "No anchor repeats in these ratings: the study had no anchoring phase (or no "
            "anchor pair was rated again in the main block), so there is nothing to compare "
            "with the prescribed ratings.",
        )
    participants = sorted(anchoring["participant"].astype(str).unique())
    n_items = int(anchoring["n_items"].max())
    threshold = tau_threshold(n_items, alpha, alternative)
    if _aggregate(view, len(participants)):
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
    ax.set_ylim(*_fitted_range([*drawn, threshold]))
    if _aggregate(view, len(participants)):
        ax.legend(
            handles,
            labels,
            loc="upper center",
            bbox_to_anchor=(0.5, -0.16),
            ncol=2,
            fontsize="small",
            title=title or None,
            title_fontsize="small",
        )
    else:
        ax.legend(
            handles,
            labels,
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            borderaxespad=0,
            fontsize="small",
        )
    ax.set_ylabel(f"Kendall's {_TAU} with the prescribed ratings")
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
        marker = _MARKERS[k % len(_MARKERS)]
        ax.scatter(
            x[significant],
            rows["tau_b"].to_numpy()[significant],
            marker=marker,
            color=color,
            s=28,
            label=f"anchor {sketch}",
            zorder=3,
        )
        ax.scatter(
            x[~significant],
            rows["tau_b"].to_numpy()[~significant],
            marker=marker,
            facecolors="none",
            edgecolors=color,
            s=28,
            zorder=3,
        )
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
    _rank_axis(ax, len(spread.median), f"{_TAU} over their anchor sketches")
    return (
        [median, inner, outer],
        [
            f"each participant's median over the {n_sketches} anchor sketches "
            f"({100 * significant:.1f}% of all {len(table):,} correlations significant)",
            "25th-75th percentile",
            "5th-95th percentile",
        ],
        np.concatenate([spread.median, *spread.bands.values()]),
        spread.note,
    )


def plot_inter_user(
    boxes: Sequence[Mapping],
    kendall_w: pd.DataFrame,
    *,
    ax: Axes,
) -> Axes:
    """Fig. 5: per sketch, box plots of the inter-user tau_b and Kendall's W as black circles.

    ``boxes`` holds one :func:`sbir_study.analysis.distribution.box_summary` per sketch
    (with a ``label``, the sketch id), in the order to draw; median line, box
    from the 25th to the 75th percentile, whiskers to 1.5 IQR, outliers as red
    plus signs, as in the paper. ``kendall_w`` is the table of
    :func:`sbir_study.analysis.agreement.agreement_by_sketch` (or of ``kendall_w_by_sketch``);
    when it has ``alpha_ordinal``, Krippendorff's ordinal alpha over all raters
    is drawn beside W as a blue diamond. The legend says over how many raters
    W stands (k of m).
    """
    stats = [dict(box) for box in boxes]
    positions = np.arange(1, len(stats) + 1)
    # Past a few thousand correlations per sketch the outliers are a solid red bar of
    # plus signs (and only the most extreme were kept): their range says the same, legibly.
    ranges = max((int(box.get("n", 0)) for box in stats), default=0) > _FLIER_POINTS_LIMIT
    ax.bxp(
        stats,
        positions=positions,
        showfliers=not ranges,
        widths=0.6,
        flierprops={"marker": "+", "markeredgecolor": "red", "markersize": 5},
        medianprops={"color": "C0", "linewidth": 1.5},
    )
    if ranges:
        for x, box in zip(positions, stats, strict=True):
            fliers = np.asarray(box["fliers"], dtype=float)
            low, high = fliers[fliers < box["whislo"]], fliers[fliers > box["whishi"]]
            if low.size:
                ax.vlines(x, low.min(), box["whislo"], color="red", linewidth=1.2)
            if high.size:
                ax.vlines(x, box["whishi"], high.max(), color="red", linewidth=1.2)
    table = kendall_w.set_index(kendall_w["sketch_id"].astype(str))
    labels = [str(box["label"]) for box in stats]
    w_values = table["w"].reindex(labels).to_numpy(dtype=float)
    ax.plot(positions, w_values, "o", markerfacecolor="none", markeredgecolor="black", markersize=6)
    outlier = (
        Line2D([], [], color="red")
        if ranges
        else Line2D([], [], marker="+", color="red", linestyle="")
    )
    handles = [
        Line2D([], [], color="C0"),
        outlier,
        Line2D([], [], marker="o", markerfacecolor="none", markeredgecolor="black", linestyle=""),
    ]
    names = [
        f"median {_TAU} (box: 25th-75th percentile)",
        "range of the outliers (beyond 1.5 IQR)" if ranges else "outlier (beyond 1.5 IQR)",
        f"Kendall's W, {_raters_text(table)}",
    ]
    if "alpha_ordinal" in table:
        alpha = table["alpha_ordinal"].reindex(labels).to_numpy(dtype=float)
        ax.plot(positions, alpha, "D", color="C0", markersize=4)
        handles.append(Line2D([], [], marker="D", color="C0", linestyle="", markersize=4))
        names.append("Krippendorff's α (ordinal), all raters")
    ax.axhline(0.0, color="0.8", linewidth=0.8, zorder=0)
    ax.set_xticks(positions, labels, rotation=90, fontsize="small")
    ax.set_xlim(0.3, len(stats) + 0.7)
    ax.set_xlabel("sketch")
    ax.set_ylabel(f"Kendall's {_TAU} between participants / W / α")
    # Headroom above tau = 1 for the legend, so it never covers a box.
    lowest = [b["whislo"] for b in stats]
    lowest += [np.min(b["fliers"]) for b in stats if np.size(b["fliers"])]
    low = min(-0.2, _finite_min(lowest) - 0.05)
    ax.set_ylim(low, 1.3)
    ax.set_yticks(np.round(np.arange(np.ceil(low * 5) / 5, 1.01, 0.2), 1))
    # One row of legend on a wide figure, two on a narrow one.
    columns = len(names) if ax.figure.get_figwidth() >= 12 else 2
    ax.legend(handles, names, loc="upper center", ncol=columns, fontsize="small", framealpha=0.9)
    ax.set_title("Agreement between participants, per sketch")
    return ax


def _raters_text(table: pd.DataFrame) -> str:
    """'k of m raters who rated every image': the raters Kendall's W stands on."""
    k = table["n_raters"].dropna()
    if "n_raters_all" not in table or k.empty:
        return "raters who rated every image"
    m = table["n_raters_all"].dropna()

    def span(values) -> str:
        low, high = int(values.min()), int(values.max())
        return f"{low:,}" if low == high else f"{low:,}-{high:,}"

    return f"over the {span(k)} of {span(m)} raters who rated every image"


def plot_vs_consensus(
    consensus: pd.DataFrame, *, ax: Axes, loo: bool = False, view: str = "auto"
) -> Axes:
    """Fig. 6: per participant, the distribution of per-sketch tau_b against the consensus.

    By default the paper's statistic: the consensus includes the participant
    (column ``tau_b``); ``loo=True`` draws the consensus of the other
    participants only (``tau_b_loo``). ``view="each"`` draws one box per
    participant, as in the paper; ``view="aggregate"`` sorts the participants by
    their median and draws the medians as a line in bands of their 25th-75th and
    5th-95th percentiles over the sketches. ``"auto"`` (the default) is
    ``"each"`` up to :data:`PARTICIPANT_VIEW_LIMIT` participants.
    """
    check_option("view", view, _VIEWS)
    column = "tau_b_loo" if loo else "tau_b"
    participants = sorted(consensus["participant"].astype(str).unique())
    variant = (
        "the consensus of the other participants (leave-one-out)"
        if loo
        else "the consensus, participant included (as in the paper)"
    )
    ax.set_title(f"Each participant against {variant}", fontsize="medium")
    ax.set_ylabel(f"{_TAU} with the consensus")
    values = consensus[column].to_numpy(dtype=float)
    if not np.isfinite(values).any():
        return _nothing_to_draw(ax, f"No participant has a finite {_TAU} against the consensus.")
    if _aggregate(view, len(participants)):
        spread = _rank_windows(consensus, column)
        median, inner, outer = _draw_rank_bands(ax, spread)
        _rank_axis(ax, len(spread.median), f"{_TAU} over the sketches")
        ax.legend(
            [median, inner, outer],
            [
                "each participant's median over the sketches",
                "25th-75th percentile",
                "5th-95th percentile",
            ],
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
    ax.set_ylim(*_fitted_range(np.concatenate(drawn)))
    return ax


def _rating_axis_label(scale: Scale = PAPER_SCALE) -> str:
    """What the rating axis of Figs. 7 and 8 shows: the scale in the paper's orientation.

    Examples
    --------
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
    """Fig. 7: share of ratings at each scale point per dataset, against the uniform share.

    ``distributions`` maps a label (e.g. ``"pilot"``, ``"final"``) to a
    :func:`sbir_study.analysis.rating_distribution` table; the main phase is drawn,
    one bar per point of ``scale`` (in the paper's orientation: the low end best).
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
    """A Fig. 7 legend entry: which study's main-block ratings a bar's shares are of.

    The paper's Fig. 7 draws the "distribution of ratings gathered in pilot/final
    study relative to the desired uniform distribution"; a bare ``final`` said
    neither that it is a share nor of what. ``counts`` (the table's ``count``) may
    be missing from a table made by hand: the label then names no number.

    >>> _distribution_label("final", pd.Series([600, 640]))
    'final study: share of its 1,240 main-block ratings'
    """
    if counts is None:
        return f"{dataset} study: share of its main-block ratings"
    return f"{dataset} study: share of its {int(counts.sum()):,} main-block ratings"


def plot_bins(
    bins: pd.DataFrame, *, axes: Sequence[Axes], scale: Scale = PAPER_SCALE
) -> Sequence[Axes]:
    """Fig. 8: ratings grouped by their pair's median rating (bins B_k of Eq. 3).

    Left: mean and standard deviation of the ratings in each bin (the sd
    written above each bar); right: the number of ratings in each bin. One
    bin per point of ``scale``, in the paper's orientation (the low end best).
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
    right.yaxis.set_major_formatter(_THOUSANDS)
    right.set_xticks(levels)
    right.set_xlabel("bin k")
    right.set_ylabel("number of ratings")
    right.set_title("Ratings per bin")
    return axes


#: Longest side, in pixels, of a sketch drawn in Fig. 9.
_THUMBNAIL = 512


def plot_sketch_extremes(
    extremes: pd.DataFrame, images: Mapping[str, Path], *, axes: Sequence[Axes]
) -> Sequence[Axes]:
    """Fig. 9: thumbnails of the sketches with the best and worst inter-user agreement.

    ``extremes`` has ``sketch_id, group`` (``best``/``worst``) and
    ``tau_median``; ``images`` maps a sketch id to its image file. ``axes``
    is a grid with one row per group.
    """
    from sbir_study.foundation.checks import open_image

    grid = np.asarray(axes, dtype=object).reshape(2, -1)
    for row, group in enumerate(("best", "worst")):
        chosen = extremes[extremes["group"] == group]
        for col, ax in enumerate(grid[row]):
            if col >= len(chosen):
                ax.set_axis_off()
                continue
            # A thin frame instead of axes: a white image is visible on the white page.
            ax.set_xticks([])
            ax.set_yticks([])
            for spine in ax.spines.values():
                spine.set_linewidth(0.6)
                spine.set_edgecolor("0.5")
            entry = chosen.iloc[col]
            path = images.get(str(entry["sketch_id"]))
            if path is not None and Path(path).exists():
                # Through Pillow with the pixel limit checked from the header, and reduced
                # to a thumbnail: a set's file is never decoded unbounded.
                with open_image(path) as picture:
                    picture.thumbnail((_THUMBNAIL, _THUMBNAIL))
                    ax.imshow(np.asarray(picture.convert("RGB")))
            ax.set_title(
                f"{group}: {entry['sketch_id']}\nmedian {_TAU} {entry['tau_median']:.2f}",
                fontsize="small",
            )
    return axes


def plot_power(summary: pd.DataFrame, *, axes: Sequence[Axes]) -> Sequence[Axes]:
    """How the study's statistics improve with the number of participants.

    ``summary`` is :func:`sbir_study.analysis.power.summarize_power`'s table. Left: tau_b
    between the panel's consensus and a large reference panel's (median and
    5th percentile over sketches); middle: share of sketches with W
    significant; right: share of significant inter-user tau_b with its 95%
    range over replications.
    """
    left, middle, right = axes
    k = summary["participants"].to_numpy()
    left.plot(k, summary["tau_median"], "o-", label="median over sketches")
    left.plot(k, summary["tau_p05"], "s--", label="5th percentile")
    left.set_ylabel(f"{_TAU}, panel consensus vs reference panel")
    left.legend(fontsize="small", loc="lower right")
    left.set_title("Ground truth from k participants")
    middle.plot(k, summary["w_significant_share"], "o-", label="mean share of sketches")
    middle.plot(k, summary["w_all_significant"], "s--", label="studies with all sketches")
    middle.set_ylim(-0.02, 1.05)
    middle.set_ylabel("W significant (over the raters who rated every image)")
    middle.legend(fontsize="small", loc="lower right")
    middle.set_title("Kendall's W significant")
    right.fill_between(
        k,
        summary["inter_user_share_p025"],
        summary["inter_user_share_p975"],
        alpha=0.25,
        label="95% of replications",
    )
    right.plot(k, summary["inter_user_share"], "o-", label="mean")
    right.set_ylabel(f"share of inter-user {_TAU} significant")
    right.legend(fontsize="small", loc="lower right")
    right.set_title("Inter-user correlations significant")
    for ax in axes:
        ax.set_xlabel("participants k")
        ax.set_xticks(k)
        ax.grid(alpha=0.3)
    return axes


def write_power_figure(
    summary: pd.DataFrame, stem: str | Path, *, formats: Sequence[str] = DEFAULT_FIGURE_FORMATS
) -> Path:
    """Draw :func:`plot_power` to ``stem``.png and ``stem``.pdf (or ``formats``); return the
    PNG path."""
    formats = figure_formats(formats)
    figure = Figure(figsize=(14.0, 4.2), layout="constrained")
    plot_power(summary, axes=figure.subplots(1, 3))
    return _save(figure, Path(stem), formats)


#: The prophecy's m axis is logarithmic past this many raters (a paper-sized study's runs
#: to 56: linear, as before).
_PROPHECY_LOG_ABOVE = 200


def plot_reliability_prophecy(
    predicted: pd.DataFrame, *, ax: Axes, target: float = 0.8, n_raters: int | None = None
) -> Axes:
    """The reliability the consensus would have with m raters, per sketch and over all.

    ``predicted`` is :func:`sbir_study.analysis.reliability.predicted_reliability`'s
    table (``sketch_id, n_raters, predicted``); each sketch is a faint line, the
    ``all`` row a bold one, ``target`` a dashed line, and ``n_raters`` (the study's
    own number) a dotted one: the curve of a sketch that crosses ``target`` right of
    it needs more raters than the study had.
    """
    for sketch, curve in predicted.groupby("sketch_id", sort=True):
        if sketch == "all":
            continue
        ax.plot(curve["n_raters"], curve["predicted"], color="C0", alpha=0.25, linewidth=0.8)
    overall = predicted[predicted["sketch_id"] == "all"]
    ax.plot(
        overall["n_raters"],
        overall["predicted"],
        color="C0",
        linewidth=2.5,
        label="all sketches (mean split-half)",
    )
    ax.plot([], [], color="C0", alpha=0.25, linewidth=0.8, label="each sketch")
    ax.axhline(target, color="C3", linestyle="--", linewidth=1.0, label=f"reliability {target:g}")
    if n_raters is not None:
        ax.axvline(
            n_raters,
            color="0.4",
            linestyle=":",
            linewidth=1.0,
            label=f"this study: {n_raters:,} raters",
        )
    ax.set_xlabel("raters m")
    if predicted["n_raters"].max() > _PROPHECY_LOG_ABOVE:
        # A crowd's m runs to thousands while the curves rise within the first tens: on a
        # linear axis they hug its left edge, on a logarithmic one each step is legible.
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(_THOUSANDS)
        ax.set_xlabel("raters m (logarithmic)")
    ax.set_ylabel("predicted reliability (Spearman-Brown, ρ)")
    ax.set_ylim(min(0.0, _finite_min([predicted["predicted"].min()])), 1.0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")
    return ax


def write_reliability_figure(
    predicted: pd.DataFrame,
    stem: str | Path,
    *,
    target: float = 0.8,
    n_raters: int | None = None,
    formats: Sequence[str] = DEFAULT_FIGURE_FORMATS,
) -> Path:
    """Draw :func:`plot_reliability_prophecy` to ``stem``.png and ``.pdf`` (or ``formats``);
    return the PNG."""
    formats = figure_formats(formats)
    figure = Figure(figsize=(6.5, 4.2), layout="constrained")
    plot_reliability_prophecy(predicted, ax=figure.add_subplot(), target=target, n_raters=n_raters)
    return _save(figure, Path(stem), formats)


def write_figures(
    folder: str | Path,
    *,
    anchoring: pd.DataFrame,
    boxes: Sequence[Mapping],
    kendall_w: pd.DataFrame,
    consensus: pd.DataFrame,
    distributions: Mapping[str, pd.DataFrame],
    bins: pd.DataFrame,
    alpha: float = 0.05,
    alternative: str = "greater",
    extremes: pd.DataFrame | None = None,
    sketch_images: Mapping[str, Path] | None = None,
    participant_view: str = "auto",
    scale: Scale = PAPER_SCALE,
    formats: Sequence[str] = DEFAULT_FIGURE_FORMATS,
) -> dict[str, Path]:
    """Draw Figs. 4-8 (and Fig. 9 when sketch images are given) as ``.png`` and ``.pdf``,
    or in ``formats`` (:func:`~sbir_study.foundation.html.figure_formats`: png among them).

    Figs. 7 and 8 have one bar or bin per point of ``scale``, the ratings in the
    paper's orientation (:func:`~sbir_study.analysis.orientation.in_paper_orientation`).

    ``participant_view`` is the ``view`` of Figs. 4 and 6 (:func:`plot_anchoring`):
    ``"auto"`` draws each participant up to :data:`PARTICIPANT_VIEW_LIMIT`, the
    distribution over the participants beyond. The PDFs embed their fonts as
    TrueType. Returns the PNG path of each figure, by name (see :data:`FIGURES`).
    """
    check_option("participant_view", participant_view, _VIEWS)
    formats = figure_formats(formats)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    n_participants = max(anchoring["participant"].nunique(), consensus["participant"].nunique())
    # One labelled place per participant in the per-participant view; the aggregate view
    # needs no more width than a paper figure.
    each = not _aggregate(participant_view, n_participants)
    wide = max(8.0, 0.32 * n_participants + 2.0) if each else 10.0
    written = {}

    figure = Figure(figsize=(min(wide, 24.0), 4.5), layout="constrained")
    plot_anchoring(
        anchoring,
        ax=figure.add_subplot(),
        alpha=alpha,
        alternative=alternative,
        view=participant_view,
    )
    written["fig4_anchoring"] = _save(figure, folder / "fig4_anchoring", formats)

    figure = Figure(figsize=(max(8.0, 0.3 * len(boxes) + 2.0), 4.8), layout="constrained")
    plot_inter_user(boxes, kendall_w, ax=figure.add_subplot())
    written["fig5_interuser"] = _save(figure, folder / "fig5_interuser", formats)

    figure = Figure(figsize=(min(wide, 24.0), 8.0), layout="constrained")
    inclusive, leave_one_out = figure.subplots(2, 1, sharey=True)
    plot_vs_consensus(consensus, ax=inclusive, view=participant_view)
    plot_vs_consensus(consensus, ax=leave_one_out, loo=True, view=participant_view)
    # One scale for both panels, each fitted to what it draws: wide enough for either.
    limits = np.array([inclusive.get_ylim(), leave_one_out.get_ylim()])
    leave_one_out.set_ylim(limits[:, 0].min(), limits[:, 1].max())
    if not each:
        _say_how_the_panels_differ(consensus, leave_one_out)
    written["fig6_vs_consensus"] = _save(figure, folder / "fig6_vs_consensus", formats)

    figure = Figure(figsize=(6.5, 4.2), layout="constrained")
    plot_distribution(distributions, ax=figure.add_subplot(), scale=scale)
    written["fig7_distribution"] = _save(figure, folder / "fig7_distribution", formats)

    figure = Figure(figsize=(11.0, 4.2), layout="constrained")
    plot_bins(bins, axes=figure.subplots(1, 2), scale=scale)
    written["fig8_bins"] = _save(figure, folder / "fig8_bins", formats)

    if extremes is not None and sketch_images:
        per_row = int(extremes["group"].value_counts().max())
        figure = Figure(figsize=(2.2 * per_row, 5.0), layout="constrained")
        plot_sketch_extremes(extremes, sketch_images, axes=figure.subplots(2, per_row))
        written["fig9_extremes"] = _save(figure, folder / "fig9_extremes", formats)
    return written


def _say_how_the_panels_differ(consensus: pd.DataFrame, ax: Axes) -> None:
    """Write on Fig. 6's leave-one-out panel how far it lies from the inclusive one.

    With many participants each one's share of the consensus is small and the two panels
    look the same; the largest and the typical difference of a participant's median say
    so in numbers, where a reader would otherwise look for a difference that is not there.
    """
    labels = consensus["participant"].astype(str)
    medians = consensus.groupby(labels)[["tau_b", "tau_b_loo"]].median()
    difference = (medians["tau_b"] - medians["tau_b_loo"]).abs().dropna()
    if difference.empty:
        return
    typical = difference.median()
    typical = f"{typical:.3f}" if typical >= 0.0005 else "less than 0.001"
    ax.text(
        0.01,
        0.97,
        f"Each participant's median differs from the top panel's by at most "
        f"{difference.max():.3f}\n(half of them by {typical}): one of {len(medians):,} "
        "participants moves the consensus little.",
        transform=ax.transAxes,
        ha="left",
        va="top",
        fontsize="small",
        bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85},
    )


def _save(figure: Figure, stem: Path, formats: Sequence[str] = DEFAULT_FIGURE_FORMATS) -> Path:
    """Write ``figure`` to ``stem`` with the suffix of each of ``formats`` (as
    :func:`~sbir_study.foundation.html.figure_formats` returns them: the public writers
    check what they are given); return the PNG."""
    from matplotlib import rc_context

    with rc_context({**_PDF_FONTS, **_SVG_IDS}):
        for suffix in formats:
            figure.savefig(stem.with_suffix(f".{suffix}"), **_SAVE_OPTIONS[suffix])
    return stem.with_suffix(".png")


_VIEWS = ("auto", "each", "aggregate")


def _aggregate(view: str, n_participants: int) -> bool:
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
    """The participants a band's window holds at ``n`` participants with ``n_values``
    values in all: ceil(sqrt(n)), or enough to pool :data:`_BAND_VALUES` values, at most n.

    >>> _rank_window(61, 61 * 31), _rank_window(2000, 2000 * 31), _rank_window(2000, 6000)
    (13, 45, 134)
    """
    per_participant = n_values / max(n, 1)
    wanted = max(math.ceil(math.sqrt(n)), math.ceil(_BAND_VALUES / max(per_participant, 1)))
    return max(1, min(n, wanted))


def _rank_windows(
    table: pd.DataFrame, column: str, percentiles: Sequence[int] = (5, 25, 75, 95)
) -> _RankSpread:
    """Participants sorted by their median of ``column``; at up to :data:`_BAND_POINTS`
    ranks, the ``percentiles`` of every value of the :func:`_rank_window` participants
    around the rank (a window centred on it, cut at the ends).

    Pooling the window's values, not smoothing each participant's own quantiles, gives a
    band that is smooth at any N and says where a participant of that rank's tau_b lie.
    Ties of the median are broken by the participant label, so the order is reproducible.
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
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(nbins=10, steps=[1, 2, 2.5, 5, 10], integer=True))
    ax.xaxis.set_major_formatter(_THOUSANDS)
    margin = max(0.5, _RANK_MARGIN * n)
    ax.set_xlim(1 - margin, n + margin)
    ax.set_xlabel(f"{n:,} participants, sorted by their median {what} (rank)")
    ax.axhline(0.0, color="0.8", linewidth=0.8, zorder=0)


def _nothing_to_draw(ax: Axes, message: str) -> Axes:
    """Axes that say why they are empty, instead of empty axes a reader might misread."""
    import textwrap

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


def _fitted_range(values, margin: float = 0.08, bounds=(-1.05, 1.05)) -> tuple[float, float]:
    """A y range that fits ``values`` with a margin, 0 kept in view when they straddle it.

    Correlations that all lie between 0.1 and 1 on an axis from -1 to 1 crowd into
    its upper half; fitted, their differences are legible. The range never leaves
    ``bounds`` (tau_b's own, with room for a marker at -1 or 1).

    Examples
    --------
    >>> [round(v, 3) for v in _fitted_range([0.2, 0.9, 1.0])]
    [0.136, 1.05]
    >>> [round(v, 3) for v in _fitted_range([-0.3, 0.5])]
    [-0.364, 0.564]
    """
    values = np.asarray(list(values), dtype=float)
    values = values[np.isfinite(values)]
    if not values.size:
        return bounds
    low, high = float(values.min()), float(values.max())
    pad = margin * max(high - low, 0.25)
    return max(bounds[0], low - pad), min(bounds[1], high + pad)


def _finite_min(values) -> float:
    values = np.asarray(list(values), dtype=float)
    values = values[np.isfinite(values)]
    return float(values.min()) if values.size else 0.0
