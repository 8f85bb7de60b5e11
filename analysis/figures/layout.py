"""The files of ``analyze``'s figures: Figs. 4-9, each sized for what it draws."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from sbir_study.foundation.checks import check_option
from sbir_study.foundation.html import DEFAULT_FIGURE_FORMATS, figure_formats
from sbir_study.foundation.scale import PAPER_SCALE, Scale

from .distribution import plot_bins, plot_distribution
from .inter_user import plot_inter_user, plot_sketch_extremes
from .participants import (
    VIEWS,
    aggregate_view,
    plot_anchoring,
    plot_vs_consensus,
)
from .style import save_figure

__all__ = ["FIGURES", "write_figures"]

#: The figures :func:`write_figures` writes, by file stem.
FIGURES = (
    "fig4_anchoring",
    "fig5_interuser",
    "fig6_vs_consensus",
    "fig7_distribution",
    "fig8_bins",
)


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
    """Draw Figs. 4-8 (and 9 with sketch images) as ``.png`` and ``.pdf``, or in ``formats``.

    ``formats``: :func:`~sbir_study.foundation.html.figure_formats`, png among them.
    ``participant_view`` is Figs. 4 and 6's ``view`` (:func:`plot_anchoring`). Returns
    each figure's PNG path by name (:data:`FIGURES`).
    """
    check_option("participant_view", participant_view, VIEWS)
    formats = figure_formats(formats)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    n_participants = max(anchoring["participant"].nunique(), consensus["participant"].nunique())
    # One labelled place per participant in the per-participant view; the aggregate view
    # needs no more width than a paper figure.
    each = not aggregate_view(participant_view, n_participants)
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
    written["fig4_anchoring"] = save_figure(figure, folder / "fig4_anchoring", formats)

    figure = Figure(figsize=(max(8.0, 0.3 * len(boxes) + 2.0), 4.8), layout="constrained")
    plot_inter_user(boxes, kendall_w, ax=figure.add_subplot())
    written["fig5_interuser"] = save_figure(figure, folder / "fig5_interuser", formats)

    figure = Figure(figsize=(min(wide, 24.0), 8.0), layout="constrained")
    inclusive, leave_one_out = figure.subplots(2, 1, sharey=True)
    plot_vs_consensus(consensus, ax=inclusive, view=participant_view)
    plot_vs_consensus(consensus, ax=leave_one_out, loo=True, view=participant_view)
    # One scale for both panels, each fitted to what it draws: wide enough for either.
    limits = np.array([inclusive.get_ylim(), leave_one_out.get_ylim()])
    leave_one_out.set_ylim(limits[:, 0].min(), limits[:, 1].max())
    if not each:
        _say_how_the_panels_differ(consensus, leave_one_out)
    written["fig6_vs_consensus"] = save_figure(figure, folder / "fig6_vs_consensus", formats)

    figure = Figure(figsize=(6.5, 4.2), layout="constrained")
    plot_distribution(distributions, ax=figure.add_subplot(), scale=scale)
    written["fig7_distribution"] = save_figure(figure, folder / "fig7_distribution", formats)

    figure = Figure(figsize=(11.0, 4.2), layout="constrained")
    plot_bins(bins, axes=figure.subplots(1, 2), scale=scale)
    written["fig8_bins"] = save_figure(figure, folder / "fig8_bins", formats)

    if extremes is not None and sketch_images:
        per_row = int(extremes["group"].value_counts().max())
        figure = Figure(figsize=(2.2 * per_row, 5.0), layout="constrained")
        plot_sketch_extremes(extremes, sketch_images, axes=figure.subplots(2, per_row))
        written["fig9_extremes"] = save_figure(figure, folder / "fig9_extremes", formats)
    return written


def _say_how_the_panels_differ(consensus: pd.DataFrame, ax: Axes) -> None:
    """Write on Fig. 6's leave-one-out panel how far it lies from the inclusive one.

    With many participants the panels look the same; the numbers say so.
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
