"""Fig. 5, the agreement between participants per sketch, and Fig. 9, its best and worst sketches.

Eitz et al. (2011), Sec. 3.3 and the captions of Figs. 5 and 9.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.lines import Line2D

from sbir_study.foundation.checks import open_image

from ..wording import span
from .style import TAU, finite_min

__all__ = ["plot_inter_user", "plot_sketch_extremes"]

#: Correlations per sketch beyond which Fig. 5 draws the range of the outliers, not each.
_FLIER_POINTS_LIMIT = 5000


def plot_inter_user(
    boxes: Sequence[Mapping],
    kendall_w: pd.DataFrame,
    *,
    ax: Axes,
) -> Axes:
    """Fig. 5: per sketch, box plots of the inter-user tau_b and Kendall's W as black circles.

    ``boxes`` holds a :func:`~sbir_study.analysis.distribution.box_summary` per sketch (with
    its ``label``) in drawing order; outliers are red plus signs, as in the paper.
    ``kendall_w`` is :func:`~sbir_study.analysis.agreement_tables.agreement_by_sketch`'s
    table; its ``alpha_ordinal``, when there, is drawn as a blue diamond. The legend says
    over how many raters W stands (k of m).
    """
    stats = [dict(box) for box in boxes]
    positions = np.arange(1, len(stats) + 1)
    # Past a few thousand correlations per sketch the outliers are a solid red bar of
    # plus signs (of which box_summary keeps the most extreme): their range says the same,
    # legibly.
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
        f"median {TAU} (box: 25th-75th percentile)",
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
    ax.set_ylabel(f"Kendall's {TAU} between participants / W / α")
    # Headroom above tau = 1 for the legend, so it never covers a box.
    lowest = [b["whislo"] for b in stats]
    lowest += [np.min(b["fliers"]) for b in stats if np.size(b["fliers"])]
    low = min(-0.2, finite_min(lowest) - 0.05)
    ax.set_ylim(low, 1.3)
    ax.set_yticks(np.round(np.arange(np.ceil(low * 5) / 5, 1.01, 0.2), 1))
    # One row of legend on a wide figure, two on a narrow one.
    figure = ax.get_figure(root=True)
    columns = len(names) if figure is not None and figure.get_figwidth() >= 12 else 2
    ax.legend(handles, names, loc="upper center", ncol=columns, fontsize="small", framealpha=0.9)
    ax.set_title("Agreement between participants, per sketch")
    return ax


def _raters_text(table: pd.DataFrame) -> str:
    """'k of m raters who rated every image': the raters Kendall's W stands on."""
    k = table["n_raters"].dropna()
    if "n_raters_all" not in table or k.empty:
        return "raters who rated every image"
    m = table["n_raters_all"].dropna()
    k_range, m_range = (span(int(v.min()), int(v.max())) for v in (k, m))
    return f"over the {k_range} of {m_range} raters who rated every image"


#: Longest side, in pixels, of a sketch drawn in Fig. 9.
_THUMBNAIL = 512


def plot_sketch_extremes(
    extremes: pd.DataFrame, images: Mapping[str, Path], *, axes: Sequence[Axes]
) -> Sequence[Axes]:
    """Fig. 9: thumbnails of the sketches with the best and worst inter-user agreement.

    ``extremes`` has ``sketch_id, group`` (``best``/``worst``), ``tau_median``;
    ``images`` maps a sketch id to its image; ``axes`` has a row per group.
    """
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
                f"{group}: {entry['sketch_id']}\nmedian {TAU} {entry['tau_median']:.2f}",
                fontsize="small",
            )
    return axes
