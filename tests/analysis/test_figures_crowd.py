"""Figures that read at any number of participants, with fonts journals accept."""

import shutil
import subprocess

import matplotlib
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.figure import Figure

from sbir_study.analysis.figures import (
    PARTICIPANT_VIEW_LIMIT,
    plot_anchoring,
    plot_vs_consensus,
    write_figures,
)


def _consensus(n_participants: int, n_sketches: int = 31, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    skill = rng.uniform(0.2, 0.8, n_participants)
    tau = np.clip(skill[:, None] + rng.normal(0, 0.12, (n_participants, n_sketches)), -1, 1)
    return pd.DataFrame(
        {
            "participant": np.repeat([f"p{i:05d}" for i in range(n_participants)], n_sketches),
            "sketch_id": np.tile([f"s{k:02d}" for k in range(n_sketches)], n_participants),
            "tau_b": tau.ravel(),
            "tau_b_loo": (tau - 0.03).ravel(),
        }
    )


def _anchoring(n_participants: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = n_participants * 3
    return pd.DataFrame(
        {
            "participant": np.repeat([f"p{i:05d}" for i in range(n_participants)], 3),
            "sketch_id": np.tile(["a01", "a02", "a03"], n_participants),
            "tau_b": rng.uniform(-0.2, 1.0, n),
            "p_value": rng.uniform(0, 0.2, n),
            "n_items": 7,
        }
    )


_BOX = {
    "med": 0.5,
    "q1": 0.4,
    "q3": 0.6,
    "whislo": 0.2,
    "whishi": 0.8,
    "fliers": np.array([0.0]),
    "label": "s00",
    "n": 10,
}
_W = pd.DataFrame({"sketch_id": ["s00"], "w": [0.5], "n_raters": [5], "n_raters_all": [5]})
_DISTRIBUTIONS = {
    "final": pd.DataFrame({"phase": "main", "rating": range(1, 8), "share": [1 / 7] * 7})
}
_BINS = pd.DataFrame({"bin": range(1, 8), "mean": range(1, 8), "sd": 0.5, "n_ratings": 10})


def _tick_labels(ax) -> list[str]:
    return [t.get_text() for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]


@pytest.mark.parametrize("n", [PARTICIPANT_VIEW_LIMIT + 1, 300, 2000])
def test_crowd_figures_thin_their_ticks_and_keep_every_participant(n):
    figure = Figure(figsize=(10, 4), layout="constrained")
    ax = figure.add_subplot()
    plot_vs_consensus(_consensus(n), ax=ax)
    figure.canvas.draw()
    # A handful of rank ticks, not one per participant (66,000 merged into a black band).
    assert 2 <= len(_tick_labels(ax)) <= 12
    assert f"{n:,} participants, sorted by their median" in ax.get_xlabel()
    assert [line for line in ax.lines if len(line.get_xdata()) == n]
    assert ax.get_xlim()[0] < 1 and ax.get_xlim()[1] > n


def test_paper_scale_keeps_one_labelled_box_per_participant():
    figure = Figure()
    ax = figure.add_subplot()
    table = _consensus(28)
    plot_vs_consensus(table, ax=ax)
    assert _tick_labels(ax) == sorted(table["participant"].unique())


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(2, 80),
    sketches=st.integers(1, 12),
    seed=st.integers(0, 2**16),
    missing=st.floats(0, 0.5),
)
def test_aggregate_view_draws_each_participants_median_in_order(n, sketches, seed, missing):
    # Reference: numpy.median and numpy.percentile of each participant's finite values.
    table = _consensus(n, sketches, seed)
    rng = np.random.default_rng(seed)
    table.loc[rng.random(len(table)) < missing, "tau_b"] = np.nan
    rated = table.dropna(subset=["tau_b"])
    if rated.empty:
        return
    expected = sorted(np.median(g.to_numpy()) for _, g in rated.groupby("participant")["tau_b"])
    figure = Figure()
    ax = figure.add_subplot()
    plot_vs_consensus(table, ax=ax, view="aggregate")
    (line,) = ax.lines[:1]
    np.testing.assert_allclose(line.get_ydata(), expected, rtol=0, atol=1e-12)
    # The inner band (drawn second) reaches the pooled quartiles of the participants around
    # a rank (ceil(sqrt(n)) of them, or enough for 400 values, at most all): at the first
    # rank, those of ranks 1 to 1 + window // 2.
    medians = rated.groupby("participant")["tau_b"].median()
    order = pd.DataFrame({"m": medians, "label": medians.index}).sort_values(["m", "label"])
    per = len(rated) / len(order)
    window = min(len(order), max(int(np.ceil(np.sqrt(len(order)))), int(np.ceil(400 / per))))
    first = rated[rated["participant"].isin(order.index[: window - window // 2])]
    q25, q75 = np.percentile(first["tau_b"], [25, 75])
    inner = ax.collections[1].get_paths()[0].vertices[:, 1]
    assert np.isclose(inner, q25).any() and np.isclose(inner, q75).any()


@pytest.mark.parametrize("n", [300, 2000])
def test_crowd_bands_are_window_quantiles_and_smooth(n):
    # Reference: numpy.percentile of every tau_b of the participants in a window of
    # ceil(sqrt(n)) ranks, the participants ranked by their median with pandas.
    from sbir_study.analysis.figures.participants import _rank_windows

    table = _consensus(n, seed=3)
    spread = _rank_windows(table, "tau_b")
    medians = table.groupby("participant")["tau_b"].median()
    order = pd.DataFrame({"m": medians, "label": medians.index}).sort_values(["m", "label"])
    window = int(np.ceil(np.sqrt(n)))  # 31 values each: sqrt(n) pools more than 400
    assert spread.window == window
    for k in (0, len(spread.ranks) // 2, len(spread.ranks) - 1):
        centre = int(spread.ranks[k]) - 1
        chosen = order.index[max(centre - window // 2, 0) : centre - window // 2 + window]
        pooled = table.loc[table["participant"].isin(chosen), "tau_b"]
        expected = np.percentile(pooled, [5, 25, 75, 95])
        got = [spread.bands[q][k] for q in (5, 25, 75, 95)]
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    # Smooth: from one drawn rank to the next the 5th percentile moves by a small part of
    # its range, where each participant's own 5th percentile (over 31 sketches) jumps.
    own = table.groupby("participant")["tau_b"].quantile(0.05).loc[order.index].to_numpy()
    assert np.abs(np.diff(spread.bands[5])).max() < 0.5 * np.abs(np.diff(own)).max()


@pytest.mark.parametrize("n", [20, 300])
def test_fig6_axis_fits_what_is_drawn(n):
    # Every tau_b of this table is above 0.2 - 3 x 0.12 (pandas' min/max computed here): the
    # axis no longer runs from 0 (or -1) to 1 with a third of it empty.
    table = _consensus(n, seed=4)
    table["tau_b"] = table["tau_b"].clip(0.3, 0.9)
    ax = plot_vs_consensus(table, ax=Figure().add_subplot())
    low, high = ax.get_ylim()
    values = table["tau_b"]
    medians = table.groupby("participant")["tau_b"].median()
    assert low <= medians.min() and medians.max() <= high
    if n <= PARTICIPANT_VIEW_LIMIT:  # boxes: every value drawn
        assert low <= values.min() and values.max() <= high
    # A margin of 8% of the range drawn, at most the range of all values.
    span = values.max() - values.min()
    assert values.min() - 0.1 * span < low and high < values.max() + 0.1 * span


@pytest.mark.parametrize("n", [PARTICIPANT_VIEW_LIMIT + 1, 2000])
def test_crowd_ranks_keep_a_margin_from_the_axes(n):
    ax = plot_vs_consensus(_consensus(n), ax=Figure().add_subplot())
    left, right = ax.get_xlim()
    # The lowest- and highest-ranked participants are not drawn on the axis lines.
    assert left <= 1 - max(0.5, 0.01 * n) and right >= n + max(0.5, 0.01 * n)


def test_fig6_says_how_little_the_panels_differ(tmp_path):
    table = _consensus(PARTICIPANT_VIEW_LIMIT + 40, seed=5)
    rng = np.random.default_rng(5)
    table["tau_b_loo"] = table["tau_b"] - rng.uniform(0, 0.01, len(table))
    from matplotlib.image import imread

    written = write_figures(
        tmp_path,
        anchoring=_anchoring(3),
        boxes=[_BOX],
        kendall_w=_W,
        consensus=table,
        distributions=_DISTRIBUTIONS,
        bins=_BINS,
    )
    assert imread(written["fig6_vs_consensus"]).shape[0] > 0
    # Reference: the medians' absolute difference per participant, with pandas.
    medians = table.groupby("participant")[["tau_b", "tau_b_loo"]].median()
    difference = (medians["tau_b"] - medians["tau_b_loo"]).abs()
    figure = Figure()
    _, loo = figure.subplots(2, 1, sharey=True)
    from sbir_study.analysis.figures.layout import _say_how_the_panels_differ

    _say_how_the_panels_differ(table, loo)
    (text,) = [t.get_text() for t in loo.texts]
    typical = difference.median()
    typical = f"{typical:.3f}" if typical >= 0.0005 else "less than 0.001"
    assert f"at most {difference.max():.3f}\n(half of them by {typical})" in text
    assert f"one of {len(medians)} participants" in text


def test_fig8_counts_have_thousands_separators():
    from sbir_study.analysis.figures import plot_bins

    bins = pd.DataFrame(
        {
            "bin": range(1, 8),
            "mean": range(1, 8),
            "sd": 0.5,
            "n_ratings": [100_000, 250_000, 400_000, 90_000, 10, 5, 1],
        }
    )
    figure = Figure()
    left, right = figure.subplots(1, 2)
    plot_bins(bins, axes=(left, right))
    figure.canvas.draw()
    labels = [t.get_text() for t in right.get_yticklabels() if t.get_text()]
    assert "100,000" in labels and "400,000" in labels
    assert not right.yaxis.get_offset_text().get_text()  # no "1e5" above the axis


def test_view_is_checked():
    from sbir_study.foundation.checks import InputError

    with pytest.raises(InputError, match="view"):
        plot_vs_consensus(_consensus(3), ax=Figure().add_subplot(), view="boxes")


def test_anchoring_aggregate_states_the_share_significant():
    table = _anchoring(500)
    figure = Figure()
    ax = figure.add_subplot()
    plot_anchoring(table, ax=ax)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    share = 100 * (table["p_value"] < 0.05).mean()
    assert any(f"{share:.1f}% of all 1,500 correlations significant" in label for label in labels)
    # 3 anchors each: ceil(400 / 3) participants pool 400 values, more than sqrt(500) do.
    title = ax.get_legend().get_title().get_text()
    assert title == "bands over the 134 participants around each rank"


def test_fig4_without_anchors_says_so(tmp_path):
    empty = pd.DataFrame(columns=["participant", "sketch_id", "tau_b", "p_value", "n_items"])
    ax = plot_anchoring(empty, ax=Figure().add_subplot())
    text = " ".join(t.get_text() for t in ax.texts)
    assert "No anchor repeats" in text and "no anchoring phase" in text
    assert not ax.collections and not ax.lines  # nothing drawn that could be misread


def _pdf_fonts(path) -> list[str]:
    """The font types pdffonts (poppler-utils) lists for a PDF."""
    assert shutil.which("pdffonts"), "pdffonts is missing (Debian poppler-utils); make install"
    lines = subprocess.run(
        ["pdffonts", str(path)], capture_output=True, text=True, check=True
    ).stdout.splitlines()[2:]
    # Columns: name, type (one or two words), encoding, emb, sub, uni, object, ID.
    return [" ".join(line.split()[1:3]) for line in lines if line.strip()]


def test_pdfs_embed_truetype_fonts_without_changing_global_settings(tmp_path):
    before = matplotlib.rcParams["pdf.fonttype"]
    written = write_figures(
        tmp_path,
        anchoring=_anchoring(5),
        boxes=[_BOX],
        kendall_w=_W,
        consensus=_consensus(5, 1),
        distributions=_DISTRIBUTIONS,
        bins=_BINS,
    )
    assert matplotlib.rcParams["pdf.fonttype"] == before  # set per figure, not globally
    for name, png in written.items():
        fonts = _pdf_fonts(png.with_suffix(".pdf"))
        assert fonts, name
        # TrueType (embedded as CID TrueType for non-Latin glyphs such as τ), never Type 3.
        assert all("TrueType" in font for font in fonts), (name, fonts)


@pytest.mark.parametrize(("participants", "scale"), [(28, "linear"), (2000, "log")])
def test_prophecy_axis_reads_at_a_crowds_size(participants, scale):
    from sbir_study.analysis.figures import plot_reliability_prophecy

    # The prophecy m r1 / (1 + (m - 1) r1) for m = 1 to 2 x participants, as analyze writes it.
    m = np.arange(1, 2 * participants + 1)
    predicted = pd.DataFrame(
        {"sketch_id": "all", "n_raters": m, "predicted": m * 0.4 / (1 + (m - 1) * 0.4)}
    )
    figure = Figure()
    ax = plot_reliability_prophecy(predicted, ax=figure.add_subplot(), n_raters=participants)
    figure.canvas.draw()
    assert ax.get_xscale() == scale
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert f"this study: {participants:,} raters" in labels
    if scale == "log":
        assert "1,000" in [t.get_text() for t in ax.get_xticklabels()]
