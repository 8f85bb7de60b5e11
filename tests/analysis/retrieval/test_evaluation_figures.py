"""The figures of ``evaluate``: colours for all readers, legends off the data, TrueType fonts."""

import ast
import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

import sbir_study.analysis
from sbir_study.analysis.retrieval.evaluation_figures import (
    plot_system_summary,
    plot_system_tau,
    system_colours,
    write_evaluation_figures,
)
from tests.analysis.test_figures_crowd import _pdf_fonts


@pytest.mark.parametrize("n", range(1, 11))
def test_system_colours_stay_apart_for_colour_blind_readers(n):
    # Reference: colorspacious's simulation of colour-vision deficiencies (Machado et al.
    # 2009) and its CAM02-UCS colour difference; 10 units is a clearly visible difference.
    from colorspacious import cspace_convert, deltaE
    from matplotlib.colors import to_rgb

    colours = system_colours(n)
    assert len(set(colours)) == n
    rgb = np.array([to_rgb(c) for c in colours])
    for deficiency in (None, "deuteranomaly", "protanomaly", "tritanomaly"):
        seen = (
            rgb
            if deficiency is None
            else np.clip(
                cspace_convert(
                    rgb, {"name": "sRGB1+CVD", "cvd_type": deficiency, "severity": 100}, "sRGB1"
                ),
                0,
                1,
            )
        )
        for a, b in itertools.combinations(seen, 2):
            assert deltaE(a, b, input_space="sRGB1") > 10, (n, deficiency)
        # ... and apart from the participants' black line.
        for a in seen:
            assert deltaE(a, [0, 0, 0], input_space="sRGB1") > 10


def _evaluation_tables(n_systems: int, n_sketches: int = 20):
    rng = np.random.default_rng(n_systems)
    systems = [f"engine-{k}" for k in range(n_systems)] + ["human"]
    rows = [
        (s, f"s{k:02d}", "tau_b", rng.uniform(0.1, 0.8)) for s in systems for k in range(n_sketches)
    ]
    per_sketch = pd.DataFrame(rows, columns=["system", "sketch_id", "measure", "value"])
    means = per_sketch.groupby("system")["value"].mean()
    summary = pd.DataFrame(
        {
            "system": means.index,
            "measure": "tau_b",
            "mean": means.to_numpy(),
            "ci_low": means.to_numpy() - 0.05,
            "ci_high": means.to_numpy() + 0.05,
            "better": "higher",
        }
    )
    recall = np.linspace(0.05, 1, 20)
    pr = pd.DataFrame(
        [(s, r, 1 - 0.5 * r) for s in systems[:-1] for r in recall],
        columns=["system", "recall", "precision"],
    )
    return per_sketch, summary, pr


def _overlaps(legend, ax) -> bool:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(ax.figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    return legend.get_window_extent(renderer).overlaps(ax.get_window_extent(renderer))


@pytest.mark.parametrize("n_systems", [1, 4, 10])
def test_retrieval_legends_never_cover_the_data(n_systems):
    per_sketch, summary, _ = _evaluation_tables(n_systems)
    figure = Figure(figsize=(7.5, 1.7 + 0.35 * n_systems), layout="constrained")
    ax = plot_system_summary(summary, ax=figure.add_subplot())
    (legend,) = figure.legends
    assert not _overlaps(legend, ax)
    # The best system on top: the highest tick is the largest mean.
    ticks = dict(zip(ax.get_yticks(), [t.get_text() for t in ax.get_yticklabels()], strict=True))
    best = summary[summary["system"] != "human"].sort_values("mean").iloc[-1]["system"]
    assert ticks[max(ticks)] == best
    figure = Figure(figsize=(12, 4.8), layout="constrained")
    ax = plot_system_tau(per_sketch, ax=figure.add_subplot())
    assert not _overlaps(ax.get_legend(), ax)
    colours = {line.get_color() for line in ax.lines if line.get_label().startswith("engine")}
    assert len(colours) == n_systems


def test_evaluation_figures_are_written_with_truetype_fonts(tmp_path):
    per_sketch, summary, pr = _evaluation_tables(3)
    written = write_evaluation_figures(tmp_path, per_sketch, pr, summary)
    assert set(written) == {"systems_tau", "per_sketch_tau", "precision_recall"}
    for png in written.values():
        assert all("TrueType" in font for font in _pdf_fonts(png.with_suffix(".pdf")))


def test_only_the_plotting_modules_import_matplotlib():
    # Computation never imports matplotlib (CONVENTIONS.md 6): read every module of the
    # statistics for an import of it, at the top or inside a function. The plotting
    # modules are those of analysis/figures/ and the figures of evaluate.
    root = Path(sbir_study.analysis.__file__).parent
    importers = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            if any(name.split(".")[0] == "matplotlib" for name in names):
                importers.add(path.relative_to(root).as_posix())
    plotting = {path.relative_to(root).as_posix() for path in (root / "figures").glob("*.py")}
    plotting = (plotting - {"figures/__init__.py"}) | {"retrieval/evaluation_figures.py"}
    assert importers == plotting


def _clash(boxes) -> list[tuple[int, int]]:
    """The pairs of bounding boxes (display units) that overlap by more than a pixel."""
    clashes = []
    for (i, a), (j, b) in itertools.combinations(enumerate(boxes), 2):
        width = min(a.x1, b.x1) - max(a.x0, b.x0)
        height = min(a.y1, b.y1) - max(a.y0, b.y0)
        if width > 1 and height > 1:
            clashes.append((i, j))
    return clashes


@pytest.mark.parametrize("n_systems", [12, 30])
def test_the_per_sketch_figure_stays_readable_with_12_systems(tmp_path, n_systems):
    # Reference: matplotlib's own layout, the text's bounding boxes as the Agg renderer
    # draws them, read back from the figure that write_evaluation_figures saves.
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from sbir_study.analysis.retrieval import evaluation_figures

    per_sketch, summary, pr = _evaluation_tables(n_systems, n_sketches=31)
    drawn = {}
    original = evaluation_figures.save_figure

    def keep(figure, path, formats):
        drawn[Path(path).name] = figure
        return original(figure, path, formats)

    evaluation_figures.save_figure, saved = keep, evaluation_figures.save_figure
    try:
        write_evaluation_figures(tmp_path, per_sketch, pr, summary, formats=("png",))
    finally:
        evaluation_figures.save_figure = saved
    figure = drawn["per_sketch_tau"]
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    (ax,) = figure.axes
    legend = ax.get_legend()
    texts = legend.get_texts()
    assert len(texts) == n_systems + 1  # and the participants
    boxes = [t.get_window_extent(renderer) for t in texts]
    assert _clash(boxes) == []
    assert not legend.get_window_extent(renderer).overlaps(ax.get_window_extent(renderer))
    whole = figure.bbox
    for box in [legend.get_window_extent(renderer), *boxes]:
        assert whole.x0 - 1 <= box.x0 and box.x1 <= whole.x1 + 1
        assert whole.y0 - 1 <= box.y0 and box.y1 <= whole.y1 + 1
    ticks = [t.get_window_extent(renderer) for t in ax.get_xticklabels() if t.get_text()]
    assert len(ticks) == 31 and _clash(ticks) == []
    # The 12 lines can be told apart: no two share both colour and marker.
    lines = [line for line in ax.lines if line.get_label().startswith("engine")]
    styles = {(line.get_color(), line.get_marker()) for line in lines}
    assert len(styles) == n_systems
