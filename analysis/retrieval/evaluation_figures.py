"""The figures of ``sbir-study evaluate``, from the tables of
:func:`~sbir_study.analysis.retrieval.evaluate_runs`: each ``plot_*`` draws on the
``Axes`` it is given and returns it. They share the style of
:mod:`sbir_study.analysis.figures`; beside it, the only module of the analysis that
imports matplotlib (``evaluation_outputs`` imports it only to draw).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from sbir_study.foundation.html import DEFAULT_FIGURE_FORMATS, figure_formats

from ..figures.style import MARKERS, save_figure

__all__ = [
    "plot_precision_recall",
    "plot_system_summary",
    "plot_system_tau",
    "system_colours",
    "write_evaluation_figures",
]


def plot_system_tau(per_sketch: pd.DataFrame, *, ax: Axes, human: str = "human") -> Axes:
    """Per sketch, each system's tau_b against the consensus, beside the participants'
    (a black line) by whose tau_b the sketches are ordered (else by the systems' mean)."""
    tau = per_sketch[per_sketch["measure"] == "tau_b"].pivot(
        index="sketch_id", columns="system", values="value"
    )
    systems = [s for s in dict.fromkeys(per_sketch["system"]) if s != human and s in tau]
    order_by = tau[human] if human in tau else tau[systems].mean(axis=1)
    tau = tau.loc[order_by.sort_values(ascending=False, na_position="last").index]
    x = np.arange(len(tau))
    for system, colour, marker in _styles(systems):
        values = tau[system].to_numpy(dtype=float)
        ax.plot(
            x,
            values,
            color=colour,
            marker=marker,
            markersize=4,
            linewidth=0.7,
            alpha=0.85,
            label=f"{system} (mean {np.nanmean(values):.3f})",
        )
    if human in tau:
        values = tau[human].to_numpy(dtype=float)
        ax.plot(
            x,
            values,
            color="black",
            linewidth=2.2,
            label=f"participants, leave-one-out (mean {np.nanmean(values):.3f})",
        )
    ax.axhline(0.0, color="0.8", linewidth=0.8, zorder=0)
    ax.set_xticks(x, [str(s) for s in tau.index], rotation=90, fontsize="x-small")
    ax.set_xlim(-0.6, len(tau) - 0.4)
    ax.set_xlabel("sketch (ordered by the participants' agreement)" if human in tau else "sketch")
    ax.set_ylabel("τ_b with the consensus")
    ax.set_title("Each system's ranking against the consensus ground truth, per sketch")
    _legend_beside(ax)
    return ax


def plot_system_summary(
    summary: pd.DataFrame, *, ax: Axes, measure: str = "tau_b", human: str = "human"
) -> Axes:
    """Each system's mean ``measure`` with its bootstrap interval, best on top; the
    participants' as a vertical band."""
    rows = summary[summary["measure"] == measure]
    systems = rows[rows["system"] != human]
    ascending = systems["better"].iloc[0] == "lower" if len(systems) else False
    # Best first, so that it is drawn on top.
    systems = systems.sort_values("mean", ascending=ascending)
    y = np.arange(len(systems))[::-1]
    low = (systems["mean"] - systems["ci_low"]).to_numpy(dtype=float)
    high = (systems["ci_high"] - systems["mean"]).to_numpy(dtype=float)
    ax.errorbar(
        systems["mean"],
        y,
        xerr=np.nan_to_num(np.vstack([low, high])),
        fmt="o",
        color="C0",
        ecolor="C0",
        capsize=3,
    )
    ax.set_yticks(y, systems["system"].astype(str).tolist())
    people = rows[rows["system"] == human]
    if len(people):
        person = people.iloc[0]
        band = ax.axvspan(person["ci_low"], person["ci_high"], color="0.85", zorder=0)
        line = ax.axvline(person["mean"], color="black", linewidth=1.5)
        # Under the figure (outside the axes), never over a system's interval.
        ax.figure.legend(
            [line, band],
            [
                f"participants' mean, each against the others' consensus ({person['mean']:.3f})",
                "its 95% bootstrap interval over the sketches",
            ],
            loc="outside lower center",
            fontsize="small",
            frameon=False,
        )
    ax.set_ylim(-0.7, len(systems) - 0.3)
    ax.set_xlabel(f"mean {measure} over the sketches (95% bootstrap interval)")
    ax.set_title(f"Systems by mean {measure}")
    return ax


def plot_precision_recall(pr_curve: pd.DataFrame, *, ax: Axes) -> Axes:
    """Each system's precision at recall levels 0.05 .. 1.0, averaged over the sketches."""
    systems = list(dict.fromkeys(pr_curve["system"]))
    for system, colour, marker in _styles(systems):
        curve = pr_curve[pr_curve["system"] == system]
        ax.plot(
            curve["recall"],
            curve["precision"],
            color=colour,
            marker=marker,
            markersize=3.5,
            linewidth=1.0,
            label=str(system),
        )
    ax.set_xlim(0.0, 1.02)
    ax.set_ylim(0.0, 1.02)
    ax.set_xlabel("recall")
    ax.set_ylabel("precision (mean over sketches)")
    ax.set_title("Precision-recall (binary relevance)")
    _legend_beside(ax)
    return ax


def _styles(systems: list[str]) -> Iterator[tuple[str, str, str]]:
    """Each system with its colour and marker, the same in every figure."""
    return zip(systems, system_colours(len(systems)), itertools.cycle(MARKERS), strict=False)


def _legend_beside(ax: Axes) -> None:
    """The legend to the right of the axes, one line per system."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)


def write_evaluation_figures(
    folder: str | Path,
    per_sketch: pd.DataFrame,
    pr_curve: pd.DataFrame,
    summary: pd.DataFrame | None = None,
    *,
    formats: Sequence[str] = DEFAULT_FIGURE_FORMATS,
) -> dict[str, Path]:
    """Draw the figures of ``evaluate`` in ``formats``; returns the PNG paths by name:
    ``systems_tau`` (with ``summary``), ``per_sketch_tau``, ``precision_recall``."""
    formats = figure_formats(formats)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = {}
    if summary is not None:
        n = summary.loc[summary["measure"] == "tau_b", "system"].nunique()
        figure = Figure(figsize=(7.5, 1.7 + 0.35 * n), layout="constrained")
        plot_system_summary(summary, ax=figure.add_subplot())
        written["systems_tau"] = save_figure(figure, folder / "systems_tau", formats)
    n_sketches = per_sketch["sketch_id"].nunique()
    # With many systems, the legend beside the axes (0.25 in a line) sets the height.
    n_lines = per_sketch["system"].nunique()
    height = max(4.8, 1.0 + 0.25 * n_lines)
    figure = Figure(figsize=(max(9.0, 0.28 * n_sketches + 5.0), height), layout="constrained")
    plot_system_tau(per_sketch, ax=figure.add_subplot())
    written["per_sketch_tau"] = save_figure(figure, folder / "per_sketch_tau", formats)
    figure = Figure(figsize=(8.0, 4.8), layout="constrained")
    plot_precision_recall(pr_curve, ax=figure.add_subplot())
    written["precision_recall"] = save_figure(figure, folder / "precision_recall", formats)
    return written


def system_colours(n: int) -> list[str]:
    """Colours for ``n`` systems: up to 10 matplotlib's colour-blind safe ``petroff10``
    (Petroff 2021, arXiv:2107.02270), beyond ``tab20`` (the markers still tell them
    apart); black and grey are the participants'.

    Examples
    --------
    >>> system_colours(3)
    ['#3f90da', '#ffa90e', '#bd1f01']
    """
    from matplotlib import colormaps
    from matplotlib.colors import to_hex
    from matplotlib.style import library

    if n <= 10:
        return library["petroff10"]["axes.prop_cycle"].by_key()["color"][: max(n, 0)]
    palette = colormaps["tab20"]
    return [to_hex(palette(i % palette.N)) for i in range(n)]
