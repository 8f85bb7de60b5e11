"""Figures 4-9, the report and the numbers behind the plots."""

import json
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from matplotlib import cbook

from sbir_study.analysis import (
    AnalysisOptions,
    StudyDesign,
    analyze_ratings,
    load_ratings,
    simulate_study,
)
from sbir_study.analysis.distribution import box_summary
from sbir_study.analysis.figures import FIGURES, tau_threshold
from sbir_study.analysis.summary import format_summary
from sbir_study.analysis.table_writers import sketch_agreement
from sbir_study.foundation.html import share
from tests.helpers import PNG, PNG_OPTION, assert_input_error, run_main


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_box_summary_matches_matplotlib(seed):
    # Reference: matplotlib.cbook.boxplot_stats, which Axes.boxplot draws from.
    rng = np.random.default_rng(seed)
    data = np.concatenate([rng.normal(size=200), rng.normal(0, 6, size=8), [np.nan]])
    ours = box_summary(data)
    (theirs,) = cbook.boxplot_stats(data[np.isfinite(data)], whis=1.5)
    for key in ("med", "q1", "q3", "whislo", "whishi", "mean"):
        assert ours[key] == pytest.approx(theirs[key], abs=1e-12), key
    np.testing.assert_allclose(np.sort(ours["fliers"]), np.sort(theirs["fliers"]))
    assert ours["n"] == 208


def test_box_summary_caps_fliers_keeping_the_extremes():
    rng = np.random.default_rng(0)
    data = np.concatenate([rng.normal(size=500), np.arange(-50, -40), np.arange(40, 80)])
    full = box_summary(data)
    capped = box_summary(data, max_fliers=10)
    assert full["fliers"].size >= 50 and capped["fliers"].size == 10
    assert capped["fliers"].min() == -50 and capped["fliers"].max() == 79
    assert (capped["fliers"] < 0).sum() == 5  # half from each side
    assert box_summary([])["n"] == 0


@pytest.mark.parametrize("alternative", ["greater", "two-sided"])
def test_tau_threshold_separates_scipy_significance(alternative):
    # Reference: scipy.stats.kendalltau on untied permutations of 20 items: every tau
    # above the threshold is significant, every tau below it is not.
    rng = np.random.default_rng(5)
    n, alpha = 20, 0.05
    threshold = tau_threshold(n, alpha, alternative)
    x = np.arange(n)
    checked = 0
    for _ in range(400):
        y = x.copy()
        # partly shuffled lists cover the whole range of tau
        swap = rng.random(n) < rng.random()
        y[swap] = rng.permutation(y[swap])
        result = scipy.stats.kendalltau(x, y, alternative=alternative, method="asymptotic")
        if abs(abs(result.statistic) - threshold) < 1e-9:
            continue
        significant = result.pvalue < alpha
        expected = (
            abs(result.statistic) > threshold
            if alternative == "two-sided"
            else result.statistic > threshold
        )
        assert significant == expected, result
        checked += 1
    assert checked > 300


def test_sketch_agreement_marks_best_and_worst():
    summary = pd.DataFrame(
        {
            "sketch_id": [f"s{i}" for i in range(10)],
            "tau_median": np.linspace(0.1, 0.9, 10),
            "tau_q25": 0.0,
            "tau_q75": 1.0,
        }
    )
    w = pd.DataFrame({"sketch_id": summary["sketch_id"], "w": 0.5})
    table = sketch_agreement(summary, w)
    assert table["sketch_id"].tolist()[:4] == ["s9", "s8", "s7", "s6"]
    assert table["group"].tolist() == ["best"] * 4 + [""] * 2 + ["worst"] * 4
    assert table["rank"].tolist() == list(range(1, 11))


@pytest.fixture(scope="module")
def small_study(tmp_path_factory):
    root = tmp_path_factory.mktemp("figures")
    trials, _ = simulate_study(
        StudyDesign(participants=6, sketches=5, images_per_sketch=10), seed=4
    )
    trials.to_csv(root / "ratings.csv", index=False, na_rep="n/a")
    return root, load_ratings(root / "ratings.csv")


def test_figures_and_report_are_written(small_study, tmp_path):
    _, ratings = small_study
    summary = analyze_ratings(ratings, tmp_path, AnalysisOptions())
    # The paper's figures, and the reliability of the consensus for m raters.
    drawn = (*FIGURES, "reliability_prophecy")
    assert summary["figures"] == sorted(drawn)
    for name in drawn:
        png = (tmp_path / "figures" / f"{name}.png").read_bytes()
        pdf = (tmp_path / "figures" / f"{name}.pdf").read_bytes()
        assert png.startswith(b"\x89PNG") and len(png) > 10_000, name
        assert pdf.startswith(b"%PDF"), name
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    # Self-contained: every figure embedded, nothing fetched from elsewhere.
    assert page.count('src="data:image/png;base64,') == len(drawn)
    assert not re.search(r'(src|href)="(https?:)?//', page)
    # The paper's published values stand beside ours.
    for published in ("77.4%", "86%", "99%", "1.4692", "all 31"):
        assert published in page
    share = f"{100 * summary['pairwise']['share_significant']:.1f}%"
    assert share in page
    # Not simulated (read from a plain table without a sidecar): no banner.
    assert "SIMULATED DATA" not in page
    best = pd.read_csv(tmp_path / "sketch_agreement.csv")
    assert set(best["group"].fillna("")) == {"best", "worst", ""}


def _with_gaps(ratings, share, seed):
    """The ratings with a share of main-block ratings missed (as missed windows are)."""
    rng = np.random.default_rng(seed)
    ratings = ratings.copy()
    main = (ratings["phase"] == "main").to_numpy()
    missed = main & (rng.random(len(ratings)) < share)
    ratings.loc[missed, "rating"] = pd.NA
    return ratings


def test_every_agreement_number_says_over_how_many_raters(small_study, tmp_path):
    _, ratings = small_study
    ratings = _with_gaps(ratings, 0.04, seed=3)
    summary = analyze_ratings(
        ratings, tmp_path, AnalysisOptions(bootstrap=200, permutations=200), figure_formats=PNG
    )
    table = pd.read_csv(tmp_path / "kendall_w.csv")
    assert (table["n_raters"] < table["n_raters_all"]).any()  # raters were left out of W
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    k_low, k_high = table["n_raters"].min(), table["n_raters"].max()
    k = str(k_low) if k_low == k_high else f"{k_low}-{k_high}"
    k_of_m = f"{k} of 6"
    # The headline row of W, the Fig. 5 caption, the per-sketch table and the printed summary.
    assert f"W over the {k_of_m} participants who rated every image" in page
    assert f"over the {k_of_m} participants who rated every image of the sketch;" in page
    for row in table.itertuples():
        assert f"<td>{row.n_raters} of {row.n_raters_all}</td>" in page
    alpha = summary["krippendorff_alpha"]
    assert f"over all 6 participants and their {alpha['n_values']} ratings" in page
    assert "participants with at least two ratings of the sketch" in page
    printed = format_summary(summary, tmp_path)
    assert f"over the {k_of_m} participants who rated every image" in printed
    assert "Krippendorff's alpha over all 6 participants" in printed


def test_fig6_compares_like_with_like(small_study, tmp_path):
    _, ratings = small_study
    summary = analyze_ratings(
        ratings, tmp_path, AnalysisOptions(bootstrap=0, permutations=0), figure_formats=PNG
    )
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    # The paper's 99% stands beside the inclusive statistic (the paper's), not the
    # leave-one-out one, which the paper did not report.
    inclusive = share(summary["consensus"]["share_significant"])
    loo = share(summary["consensus_loo"]["share_significant"])
    row = re.search(
        r"<tr><td>participant vs consensus of all 6 participants, the participant "
        r"included \(as in the paper\), significant</td>(.*?)</tr>",
        page,
    )
    assert row and inclusive in row.group(1) and "99%" in row.group(1)
    row = re.search(
        r"<tr><td>participant vs consensus of the other 5 participants "
        r"\(leave-one-out\), significant</td>(.*?)</tr>",
        page,
    )
    assert row and loo in row.group(1) and "99%" not in row.group(1)
    assert "Top: the consensus is the mean rating of all participants" in page
    assert "Bottom: leave-one-out" in page


def test_fig6_draws_the_papers_statistic_and_leave_one_out():
    from matplotlib.figure import Figure

    from sbir_study.analysis.figures import plot_vs_consensus

    consensus = pd.DataFrame(
        {
            "participant": ["01", "01", "02", "02"],
            "sketch_id": ["a", "b"] * 2,
            "tau_b": [0.9, 0.8, 0.7, 0.6],
            "tau_b_loo": [0.5, 0.4, 0.3, 0.2],
        }
    )
    figure = Figure()
    inclusive, loo = figure.subplots(2, 1)
    plot_vs_consensus(consensus, ax=inclusive)  # the default: the paper's inclusive tau_b
    plot_vs_consensus(consensus, ax=loo, loo=True)
    medians = [line.get_ydata()[0] for line in inclusive.lines if line.get_color() == "C0"]
    assert medians == pytest.approx([0.85, 0.65])
    medians = [line.get_ydata()[0] for line in loo.lines if line.get_color() == "C0"]
    assert medians == pytest.approx([0.45, 0.25])
    assert "participant included" in inclusive.get_title()
    assert "leave-one-out" in loo.get_title()


def test_simulated_input_is_labelled_at_the_top(tmp_path):
    data = tmp_path / "data"
    run_main(
        "simulate",
        "--out",
        str(data),
        "--participants",
        "4",
        "--sketches",
        "3",
        "--images",
        "8",
        "--seed",
        "1",
    )
    result = run_main("analyze", str(data), "--out", str(tmp_path / "out"), *PNG_OPTION)
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    body = page[page.index("<body>") :]
    assert body.index("SIMULATED DATA") < body.index("<h1>")
    assert "report.html" in result.stdout


def test_pilot_is_drawn_beside_the_final_study(small_study, tmp_path):
    root, _ = small_study
    pilot, _ = simulate_study(StudyDesign(participants=3, sketches=5, images_per_sketch=10), seed=9)
    pilot.to_csv(tmp_path / "pilot.csv", index=False, na_rep="n/a")
    result = run_main(
        "analyze",
        str(root / "ratings.csv"),
        *PNG_OPTION,
        "--out",
        str(tmp_path / "out"),
        "--pilot",
        str(tmp_path / "pilot.csv"),
    )
    assert result.returncode == 0, result.stderr
    table = pd.read_csv(tmp_path / "out" / "rating_distribution.csv")
    assert set(table["dataset"]) == {"pilot", "final"}
    main = table[(table["dataset"] == "pilot") & (table["phase"] == "main")]
    assert main["share"].sum() == pytest.approx(1.0)


def test_stimuli_thumbnails_and_missing_manifest(small_study, tmp_path):
    from matplotlib.image import imsave

    from sbir_study.stimuli import AnchorDesign, import_set

    root, ratings = small_study
    stimuli = tmp_path / "set"
    for sketch in sorted(ratings["sketch_id"].astype(str).unique()):
        (stimuli / "images" / sketch).mkdir(parents=True)
        (stimuli / "sketches").mkdir(exist_ok=True)
        imsave(stimuli / "sketches" / f"{sketch}.png", np.eye(16), cmap="gray")
        imsave(stimuli / "images" / sketch / "i1.png", np.eye(16)[::-1], cmap="gray")
    import_set(stimuli, anchors=AnchorDesign(sketches=0))
    result = run_main(
        "analyze",
        str(root / "ratings.csv"),
        *PNG_OPTION,
        "--out",
        str(tmp_path / "out"),
        "--stimuli",
        str(stimuli),
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "figures" / "fig9_extremes.png").exists()

    result = run_main(
        "analyze",
        str(root / "ratings.csv"),
        *PNG_OPTION,
        "--out",
        str(tmp_path / "out2"),
        "--stimuli",
        str(tmp_path / "nowhere"),
    )
    assert_input_error(result, "nowhere", "no such folder; expected a stimulus set")


def test_analyze_loads_neither_scipy_stats_nor_statsmodels(small_study, tmp_path):
    # Their import is two seconds of every analyze; what it needs from them is computed
    # from scipy.special as they compute it (tests/analysis/test_reliability.py and
    # test_consensus.py compare the two bit for bit).
    root, _ = small_study
    code = (
        "import sys\n"
        "from sbir_study.analysis import AnalysisOptions, load_ratings, analyze_ratings\n"
        f"analyze_ratings(load_ratings({str(root / 'ratings.csv')!r}), {str(tmp_path)!r}, "
        "AnalysisOptions(pairwise='full'), figure_formats=['png'])\n"
        "loaded = [m for m in sys.modules if m.startswith(('scipy.stats', 'statsmodels'))]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert (tmp_path / "figures" / "fig5_interuser.png").is_file()


def test_computation_never_imports_matplotlib(small_study, tmp_path):
    root, _ = small_study
    code = (
        "import sys\n"
        "from sbir_study.analysis import load_ratings, analyze_ratings\n"
        f"analyze_ratings(load_ratings({str(root / 'ratings.csv')!r}), {str(tmp_path)!r}, "
        "figures=False)\n"
        "assert 'matplotlib' not in sys.modules, 'matplotlib imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["figures"] == []
    assert "Not drawn" in (tmp_path / "report.html").read_text()
