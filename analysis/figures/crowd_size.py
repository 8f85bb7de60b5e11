"""How the study's numbers grow with its crowd: the power curves and the reliability prophecy."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from sbir_study.foundation.html import DEFAULT_FIGURE_FORMATS, figure_formats

from .style import TAU, THOUSANDS, finite_min, save_figure

__all__ = [
    "plot_power",
    "plot_reliability_prophecy",
    "write_power_figure",
    "write_reliability_figure",
]


def plot_power(summary: pd.DataFrame, *, axes: Sequence[Axes]) -> Sequence[Axes]:
    """How the statistics improve with the participants.

    ``summary`` is :func:`~sbir_study.analysis.power.summarize_power`'s table.

    Left: tau_b of the panel's consensus against the reference panel's (median and 5th
    percentile over sketches); middle: share of sketches with W significant; right:
    share of significant inter-user tau_b with its 95% range over replications.
    """
    left, middle, right = axes
    k = summary["participants"].to_numpy()
    left.plot(k, summary["tau_median"], "o-", label="median over sketches")
    left.plot(k, summary["tau_p05"], "s--", label="5th percentile")
    middle.plot(k, summary["w_significant_share"], "o-", label="mean share of sketches")
    middle.plot(k, summary["w_all_significant"], "s--", label="studies with all sketches")
    middle.set_ylim(-0.02, 1.05)
    low, high = summary["inter_user_share_p025"], summary["inter_user_share_p975"]
    right.fill_between(k, low, high, alpha=0.25, label="95% of replications")
    right.plot(k, summary["inter_user_share"], "o-", label="mean")
    labels = (
        (f"{TAU}, panel consensus vs reference panel", "Ground truth from k participants"),
        ("W significant (over the raters who rated every image)", "Kendall's W significant"),
        (f"share of inter-user {TAU} significant", "Inter-user correlations significant"),
    )
    for ax, (ylabel, title) in zip(axes, labels, strict=True):
        ax.set_ylabel(ylabel)
        ax.legend(fontsize="small", loc="lower right")
        ax.set_title(title)
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
    return save_figure(figure, Path(stem), formats)


#: The prophecy's m axis is logarithmic past this many raters (a paper-sized study's runs
#: to 56, on a linear axis).
_PROPHECY_LOG_ABOVE = 200


def plot_reliability_prophecy(
    predicted: pd.DataFrame, *, ax: Axes, target: float = 0.8, n_raters: int | None = None
) -> Axes:
    """The reliability of the consensus with m raters, per sketch and over all.

    ``predicted`` is :func:`~sbir_study.analysis.reliability.predicted_reliability`'s table.

    Each sketch a faint line, ``all`` a bold one, ``target`` dashed and the study's own
    ``n_raters`` dotted: a sketch crossing ``target`` right of it needs more raters.
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
        ax.xaxis.set_major_formatter(THOUSANDS)
        ax.set_xlabel("raters m (logarithmic)")
    ax.set_ylabel("predicted reliability (Spearman-Brown, ρ)")
    ax.set_ylim(min(0.0, finite_min([predicted["predicted"].min()])), 1.0)
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
    return save_figure(figure, Path(stem), formats)
