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

from analysis import StudyDesign, load_ratings, simulate_study
from analysis.distribution import box_summary
from analysis.figures import FIGURES, tau_threshold
from analysis.pipeline import AnalysisOptions, analyze_ratings, sketch_agreement
from tests.helpers import assert_input_error, run_cli


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
    summary = pd.DataFrame({"sketch_id": [f"s{i}" for i in range(10)],
                            "tau_median": np.linspace(0.1, 0.9, 10),
                            "tau_q25": 0.0, "tau_q75": 1.0})  # fmt: skip
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
    assert summary["figures"] == sorted(FIGURES)
    for name in FIGURES:
        png = (tmp_path / "figures" / f"{name}.png").read_bytes()
        pdf = (tmp_path / "figures" / f"{name}.pdf").read_bytes()
        assert png.startswith(b"\x89PNG") and len(png) > 10_000, name
        assert pdf.startswith(b"%PDF"), name
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    # Self-contained: every figure embedded, nothing fetched from elsewhere.
    assert page.count('src="data:image/png;base64,') == len(FIGURES)
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


def test_simulated_input_is_labelled_at_the_top(tmp_path):
    data = tmp_path / "data"
    run_cli("simulate", "--out", str(data), "--participants", "4", "--sketches", "3",
            "--images", "8", "--seed", "1")  # fmt: skip
    result = run_cli("analyze", str(data), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    body = page[page.index("<body>") :]
    assert body.index("SIMULATED DATA") < body.index("<h1>")
    assert "report.html" in result.stdout


def test_pilot_is_drawn_beside_the_final_study(small_study, tmp_path):
    root, _ = small_study
    pilot, _ = simulate_study(StudyDesign(participants=3, sketches=5, images_per_sketch=10), seed=9)
    pilot.to_csv(tmp_path / "pilot.csv", index=False, na_rep="n/a")
    result = run_cli("analyze", str(root / "ratings.csv"), "--out", str(tmp_path / "out"),
                     "--pilot", str(tmp_path / "pilot.csv"))  # fmt: skip
    assert result.returncode == 0, result.stderr
    table = pd.read_csv(tmp_path / "out" / "rating_distribution.csv")
    assert set(table["dataset"]) == {"pilot", "final"}
    main = table[(table["dataset"] == "pilot") & (table["phase"] == "main")]
    assert main["share"].sum() == pytest.approx(1.0)


def test_stimuli_thumbnails_and_missing_manifest(small_study, tmp_path):
    from matplotlib.image import imsave

    from stimuli import AnchorDesign, import_set

    root, ratings = small_study
    stimuli = tmp_path / "set"
    for sketch in sorted(ratings["sketch_id"].astype(str).unique()):
        (stimuli / "images" / sketch).mkdir(parents=True)
        (stimuli / "sketches").mkdir(exist_ok=True)
        imsave(stimuli / "sketches" / f"{sketch}.png", np.eye(16), cmap="gray")
        imsave(stimuli / "images" / sketch / "i1.png", np.eye(16)[::-1], cmap="gray")
    import_set(stimuli, anchors=AnchorDesign(sketches=0))
    result = run_cli("analyze", str(root / "ratings.csv"), "--out", str(tmp_path / "out"),
                     "--stimuli", str(stimuli))  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "figures" / "fig9_extremes.png").exists()

    result = run_cli("analyze", str(root / "ratings.csv"), "--out", str(tmp_path / "out2"),
                     "--stimuli", str(tmp_path / "nowhere"))  # fmt: skip
    assert_input_error(result, "nowhere", "no such folder; expected a stimulus set")


def test_computation_never_imports_matplotlib(small_study, tmp_path):
    root, _ = small_study
    code = (
        "import sys\n"
        "from analysis import load_ratings, analyze_ratings\n"
        f"analyze_ratings(load_ratings({str(root / 'ratings.csv')!r}), {str(tmp_path)!r}, "
        "figures=False)\n"
        "assert 'matplotlib' not in sys.modules, 'matplotlib imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["figures"] == []
    assert "Not drawn" in (tmp_path / "report.html").read_text()
