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
    assert f"{n} participants, sorted by their median" in ax.get_xlabel()
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
    # The inner band (drawn second) spans each participant's quartiles, in the same order
    # (no smoothing below 200 participants).
    order = rated.groupby("participant")["tau_b"].median().sort_values(kind="stable")
    inner = ax.collections[1].get_paths()[0].vertices[:, 1]
    for participant in order.index[:3]:
        values = rated.loc[rated["participant"] == participant, "tau_b"].to_numpy()
        q25, q75 = np.percentile(values, [25, 75])
        assert np.isclose(inner, q25).any() and np.isclose(inner, q75).any()


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
    assert any(f"{share:.1f}% of all 1500 correlations significant" in label for label in labels)
    assert any("running median over 3 neighbouring participants" in label for label in labels)


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
        boxes=[
            {
                "med": 0.5,
                "q1": 0.4,
                "q3": 0.6,
                "whislo": 0.2,
                "whishi": 0.8,
                "fliers": np.array([0.0]),
                "label": "s00",
                "n": 10,
            }
        ],
        kendall_w=pd.DataFrame(
            {"sketch_id": ["s00"], "w": [0.5], "n_raters": [5], "n_raters_all": [5]}
        ),
        consensus=_consensus(5, 1),
        distributions={
            "final": pd.DataFrame({"phase": "main", "rating": range(1, 8), "share": [1 / 7] * 7})
        },
        bins=pd.DataFrame({"bin": range(1, 8), "mean": range(1, 8), "sd": 0.5, "n_ratings": 10}),
    )
    assert matplotlib.rcParams["pdf.fonttype"] == before  # set per figure, not globally
    for name, png in written.items():
        fonts = _pdf_fonts(png.with_suffix(".pdf"))
        assert fonts, name
        # TrueType (embedded as CID TrueType for non-Latin glyphs such as τ), never Type 3.
        assert all("TrueType" in font for font in fonts), (name, fonts)
