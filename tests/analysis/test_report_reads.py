"""The report and figures as a reviewer reads them: what is not applicable says so, counts
agree with their nouns, every printed number is its source's, axes fit the data, and the
figure files are the same bytes from the same inputs.
"""

import hashlib
import json
import re
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from matplotlib.figure import Figure

from sbir_study.analysis import (
    AnalysisOptions,
    StudyDesign,
    analyze_ratings,
    load_ratings,
    simulate_study,
)
from sbir_study.analysis.distribution import rating_distribution
from sbir_study.analysis.figures import (
    plot_anchoring,
    plot_distribution,
    plot_inter_user,
    plot_sketch_extremes,
    plot_vs_consensus,
)
from sbir_study.analysis.figures.style import fitted_range as _fitted_range
from sbir_study.analysis.report import counted, share_interval, write_report
from sbir_study.analysis.summary import format_summary
from tests.helpers import PNG, run_cli, run_main


class _Tables(HTMLParser):
    """The tables of a page as lists of rows of cell texts (whitespace collapsed)."""

    def __init__(self, page: str):
        super().__init__()
        self.tables, self.paragraphs, self._cell, self._p = [], [], None, None
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = ""
        elif tag == "p":
            self._p = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.tables[-1][-1].append(" ".join(self._cell.split()))
            self._cell = None
        elif tag == "p" and self._p is not None:
            self.paragraphs.append(" ".join(self._p.split()))
            self._p = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data
        if self._p is not None:
            self._p += data

    def table(self, first_header: str) -> list[list[str]]:
        (found,) = [t for t in self.tables if t[0][0] == first_header]
        return found


@given(st.integers(0, 10**7))
def test_a_count_agrees_with_its_number(n):
    # English: the singular for exactly one, the plural for zero and every other number;
    # thousands separated by commas (grouped here by a regular expression on the digits).
    digits = re.sub(r"(?<=\d)(?=(\d{3})+$)", ",", str(n))
    assert counted(n, "participant") == (
        f"{digits} participant" if n == 1 else f"{digits} participants"
    )
    assert counted(n, "sketch", "sketches").endswith("sketch" if n == 1 else "sketches")


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """A simulated BIDS study of 5 participants and its analysis, twice (determinism): once
    in this process, once in a fresh one."""
    root = tmp_path_factory.mktemp("reads")
    result = run_main(
        "simulate",
        "--out",
        str(root / "data"),
        "--participants",
        "5",
        "--sketches",
        "4",
        "--images",
        "8",
        "--seed",
        "2",
    )
    assert result.returncode == 0, result.stderr
    for out, run in (("analysis", run_main), ("again", run_cli)):
        result = run(
            "analyze",
            str(root / "data"),
            "--out",
            str(root / out),
            "--bootstrap",
            "50",
            "--permutations",
            "20",
        )
        assert result.returncode == 0, result.stderr
    return root


def test_every_count_reads_singular_or_plural(study):
    page = (study / "analysis" / "report.html").read_text(encoding="utf-8")
    assert not re.search(r"\b1 (participants|sketches|ratings|permutations|input files)\b", page)
    assert not re.search(r"\b(0|[2-9]|\d\d+) (participant|sketch(?!/)|rating|input file)\b", page)


def test_inputs_table_counts_the_lines_below_the_header(study):
    # Counted here from the files themselves (Python's splitlines), not from the record.
    tables = _Tables((study / "analysis" / "report.html").read_text(encoding="utf-8"))
    files = tables.table("file")
    assert files[0] == ["file", "SHA-256", "lines below the header"]
    assert len(files) == 1 + 5
    for path, sha256, lines in files[1:]:
        data = (study / path).read_bytes() if not path.startswith("/") else open(path, "rb").read()
        assert hashlib.sha256(data).hexdigest() == sha256
        assert int(lines) == len(data.decode("utf-8").splitlines()) - 1


def test_study_without_anchoring_says_so(tmp_path):
    trials, _ = simulate_study(StudyDesign(participants=4, sketches=3, images_per_sketch=8), seed=5)
    trials = trials[~trials["phase"].isin(["anchor_demo", "anchor_repeat"])]
    trials.to_csv(tmp_path / "ratings.csv", index=False, na_rep="n/a")
    options = AnalysisOptions(bootstrap=20, permutations=20)
    analyze_ratings(
        load_ratings(tmp_path / "ratings.csv"), tmp_path / "out", options, figure_formats=PNG
    )
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    headline = _Tables(page).table("statistic")
    (anchoring,) = [row for row in headline if row[0].startswith("anchoring")]
    assert anchoring[1:4] == ["no anchoring phase in this study", "", ""]
    assert "n/a to n/a" not in page
    assert "0 of 0" not in page
    # One table, one input file.
    assert "1 input file with their SHA-256" in page


def _fmt_share(value) -> str:
    return f"{100 * value:.1f}%"


def test_every_headline_number_is_its_source(study):
    """Each number of the headline tables against summary.json or the CSV it comes from,
    formatted as the page rounds (shares to 0.1%, statistics to 3 decimals, bin 4's sd to 4)."""
    out = study / "analysis"
    summary = json.loads((out / "summary.json").read_text())
    tables = _Tables((out / "report.html").read_text(encoding="utf-8"))
    # What was analysed: counts from the tables themselves.
    participants = pd.read_csv(out / "participants.csv", dtype={"participant": str})
    kendall_w = pd.read_csv(out / "kendall_w.csv", dtype={"sketch_id": str})
    truth = pd.read_csv(out / "ground_truth.csv", dtype={"sketch_id": str, "image_id": str})
    counts = (
        f"{len(participants)} participants, {len(kendall_w)} sketches, {len(truth)} "
        "sketch/image pairs in the main block"
    )
    assert any(p.startswith(counts) for p in tables.paragraphs)
    for phase, trials, missed in tables.table("phase")[1:]:
        assert int(trials.replace(",", "")) == summary["phases"][phase]["n_trials"]
        if missed.replace(",", "").isdigit():
            assert int(missed.replace(",", "")) == summary["phases"][phase]["n_missing"]

    rows = {row[0]: row[1:] for row in tables.table("statistic")[1:]}
    labels = iter(rows)
    for family in ("anchoring", "pairwise", "consensus", "consensus_loo"):
        f = summary[family]
        this, interval, detail, _ = rows[next(labels)]
        assert this == _fmt_share(f["n_significant"] / f["n_tests"])
        assert interval == f"{_fmt_share(f['wilson_low'])} to {_fmt_share(f['wilson_high'])}"
        assert detail == f"{f['n_significant']} of {f['n_tests']}"
    # Kendall's W: the counts and range from kendall_w.csv (scipy-free: pandas' own min/max).
    label = next(labels)
    this, _, detail, _ = rows[label]
    significant = int((kendall_w["p_value"] < summary["alpha"]).sum())
    assert this == f"{significant} of {len(kendall_w)}"
    w = kendall_w["w"]
    assert detail == f"W from {w.min():.3f} to {w.max():.3f}, median {w.median():.3f}"
    k, m = kendall_w["n_raters"], kendall_w["n_raters_all"]

    def span(values) -> str:
        return (
            str(values.min()) if values.min() == values.max() else f"{values.min()}-{values.max()}"
        )

    assert f"over the {span(k)} of {span(m)} participant" in label
    for level in ("ordinal", "interval"):
        label = next(labels)
        alpha = summary["krippendorff_alpha"][level]
        this, interval, detail, _ = rows[label]
        assert this == f"{alpha['alpha']:.3f}"
        assert interval == f"{alpha['ci_low']:.3f} to {alpha['ci_high']:.3f}"
        by_sketch = kendall_w[f"alpha_{level}"]
        assert detail == (
            f"per sketch from {by_sketch.min():.3f} to {by_sketch.max():.3f}, "
            f"median {by_sketch.median():.3f}"
        )
        ratings = summary["krippendorff_alpha"]
        assert (
            f"{ratings['n_raters']} participants and their {ratings['n_values']} ratings" in label
        )
    this, _, detail, _ = rows[next(labels)]
    significant = int((kendall_w["skillings_mack_p_value"] < summary["alpha"]).sum())
    assert this == f"{significant} of {len(kendall_w)}"
    permutation = kendall_w["skillings_mack_permutation_p_value"].dropna()
    assert detail == (
        f"chi-square approximation; by permutation "
        f"{int((permutation < summary['alpha']).sum())} of {len(permutation)} (20 permutations)"
    )
    bins = pd.read_csv(out / "bins.csv").dropna(subset=["sd"]).set_index("bin")["sd"]
    this, _, detail, _ = rows[next(labels)]
    assert this == f"{bins[4]:.4f}"
    assert detail == f"largest spread in bin {bins.idxmax()}"
    this, _, detail, _ = rows[next(labels)]
    assert this == " and ".join(str(b) for b in sorted(bins.nsmallest(2).index))
    assert detail == ", ".join(f"bin {b}: {sd:.3f}" for b, sd in bins.sort_index().items())
    assert next(labels, None) is None  # every headline row checked

    # The best and worst sketches, and the participants, against their CSVs.
    agreement = pd.read_csv(out / "sketch_agreement.csv", dtype={"sketch_id": str})
    marked = agreement[agreement["group"].notna()]
    extremes = tables.table("group")[1:]
    assert [row[1] for row in extremes] == marked["sketch_id"].tolist()
    for row, r in zip(extremes, marked.itertuples(), strict=True):
        assert row[3:7] == [
            f"{r.tau_median:.3f}",
            f"{r.tau_q25:.3f}",
            f"{r.tau_q75:.3f}",
            f"{r.w:.3f}",
        ]

    # The agreement per sketch against kendall_w.csv (p-values as the page writes them:
    # 4 decimals, scientific below 0.001).
    def p(value) -> str:
        return f"{value:.2e}" if value < 1e-3 else f"{value:.4f}"

    per_sketch = tables.table("sketch")[1:]
    assert [row[0] for row in per_sketch] == kendall_w["sketch_id"].tolist()
    for row, r in zip(per_sketch, kendall_w.itertuples(), strict=True):
        assert row[1:5] == [
            f"{r.n_raters} of {r.n_raters_all}",
            f"{r.w:.3f}",
            p(r.p_value),
            f"{r.alpha_ordinal:.3f}",
        ]
        assert row[6] == f"{r.alpha_interval:.3f}"
        assert row[8] == str(r.n_ratings)
        assert row[10] == p(r.skillings_mack_p_value)
    listed = tables.table("participant")[1:]
    for row, r in zip(listed, participants.itertuples(), strict=True):
        origin = {"run-simulate": "run --simulate"}.get(r.origin, r.origin)  # as it reads
        assert row == [
            r.participant,
            str(r.n_trials),
            str(r.n_missing),
            f"{r.n_sketches_complete} of {r.n_sketches}",
            f"{r.tau_b_median:.3f}",
            f"{r.tau_b_loo_median:.3f}",
            origin,
        ]


def test_figures_are_the_same_bytes_from_the_same_inputs(study):
    first, second = study / "analysis", study / "again"
    files = sorted(p.name for p in (first / "figures").iterdir())
    assert {name.rsplit(".", 1)[1] for name in files} == {"pdf", "png"}
    record = json.loads((first / ".sbir-study-output.json").read_text())["files"]
    for name in files:
        data = (first / "figures" / name).read_bytes()
        assert data == (second / "figures" / name).read_bytes(), name
        assert b"CreationDate" not in data
        # The output record lists each figure with its SHA-256 (hashlib's, here).
        assert record[f"figures/{name}"] == hashlib.sha256(data).hexdigest()


def _anchoring(values) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "participant": [f"{k:02d}" for k in range(len(values))],
            "sketch_id": "a",
            "tau_b": values,
            "p_value": 0.01,
            "n_items": 7,
        }
    )


def test_fig4_axis_fits_the_data():
    # Every tau_b above 0.1: the axis no longer runs from -1.
    ax = plot_anchoring(_anchoring([0.6, 0.8, 0.95]), ax=Figure().add_subplot())
    low, high = ax.get_ylim()
    # The threshold for 7 items at 0.05 is 0.522 (normal approximation, no ties).
    assert 0.4 < low < 0.522 and 0.95 < high <= 1.05
    # Straddling 0: 0 stays in view.
    low, high = plot_anchoring(_anchoring([-0.4, 0.9]), ax=Figure().add_subplot()).get_ylim()
    assert low < -0.4 and high > 0.9


@given(st.lists(st.floats(-1, 1), min_size=1, max_size=30))
def test_fitted_range_holds_the_values_and_zero_between_them(values):
    low, high = _fitted_range(values)
    assert -1.05 <= low < min(values) or low == -1.05
    assert max(values) < high <= 1.05 or high == 1.05
    assert low <= min(values) and max(values) <= high
    if min(values) < 0 < max(values):
        assert low < 0 < high
    # A margin, not the whole of tau's range, around values that span little of it.
    if max(values) - min(values) < 0.5:
        assert high - low < 1.0


def _texts(figure: Figure) -> list[str]:
    return [t.get_text() for t in figure.findobj(lambda a: hasattr(a, "get_text"))]


def test_tau_b_is_set_as_math():
    consensus = pd.DataFrame(
        {
            "participant": ["1", "1", "2", "2"],
            "sketch_id": ["a", "b"] * 2,
            "tau_b": [0.5, 0.6, 0.4, 0.7],
            "tau_b_loo": 0.5,
        }
    )
    figure = Figure()
    plot_anchoring(_anchoring([0.6, 0.8]), ax=figure.add_subplot(2, 1, 1))
    plot_vs_consensus(consensus, ax=figure.add_subplot(2, 1, 2))
    texts = _texts(figure)
    assert not any("τ" in text for text in texts)
    assert any(r"$\tau_b$" in text for text in texts)
    figure.canvas.draw()  # mathtext parses it


def test_fig5_legend_sets_tau_b_as_math():
    box = {
        "label": "a",
        "med": 0.5,
        "q1": 0.4,
        "q3": 0.6,
        "whislo": 0.2,
        "whishi": 0.8,
        "fliers": [],
        "n": 10,
    }
    w = pd.DataFrame({"sketch_id": ["a"], "w": [0.6], "n_raters": [5], "n_raters_all": [6]})
    ax = plot_inter_user([box], w, ax=Figure().add_subplot())
    assert r"median $\tau_b$" in ax.get_legend().get_texts()[0].get_text()


def test_fig7_legend_says_what_is_drawn():
    trials, _ = simulate_study(StudyDesign(participants=3, sketches=2, images_per_sketch=7), seed=1)
    ratings = trials
    # Counted from the ratings table itself: main-block ratings given (missed ones excluded).
    n = int(ratings.loc[ratings["phase"] == "main", "rating"].notna().sum())
    ax = plot_distribution({"final": rating_distribution(ratings)}, ax=Figure().add_subplot())
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert sorted(labels) == sorted(
        [f"final study: share of its {n} main-block ratings", "desired uniform share (1/7)"]
    )


def test_fig9_thumbnails_are_framed(tmp_path):
    from matplotlib.image import imsave

    white = tmp_path / "white.png"
    imsave(white, np.ones((8, 8)), cmap="gray", vmin=0, vmax=1)
    extremes = pd.DataFrame(
        {"sketch_id": ["s1", "s2"], "group": ["best", "worst"], "tau_median": [0.8, 0.1]}
    )
    figure = Figure()
    axes = figure.subplots(2, 2)
    plot_sketch_extremes(extremes, {"s1": white, "s2": white}, axes=axes)
    for ax in (axes[0][0], axes[1][0]):
        assert ax.axison
        spines = list(ax.spines.values())
        assert all(s.get_visible() and s.get_linewidth() > 0 for s in spines)
        assert ax.get_xticks().size == 0 and ax.get_yticks().size == 0
    # The cells without a sketch stay blank.
    assert not axes[0][1].axison and not axes[1][1].axison


def test_fig9_files_are_the_same_bytes_from_the_same_inputs(tmp_path):
    # Fig. 9 needs a stimulus set in analyze; drawn here directly, twice, through the same
    # save as every figure (its PDF embeds the thumbnails as images).
    from matplotlib.image import imsave

    from sbir_study.analysis.figures.style import save_figure as _save

    imsave(tmp_path / "s1.png", np.eye(16), cmap="gray")
    extremes = pd.DataFrame(
        {"sketch_id": ["s1", "s1"], "group": ["best", "worst"], "tau_median": [0.8, 0.1]}
    )
    for run in ("one", "two"):
        figure = Figure(layout="constrained")
        plot_sketch_extremes(extremes, {"s1": tmp_path / "s1.png"}, axes=figure.subplots(2, 1))
        _save(figure, tmp_path / run)
    for suffix in (".png", ".pdf"):
        assert (tmp_path / f"one{suffix}").read_bytes() == (tmp_path / f"two{suffix}").read_bytes()
    # Two runs within one second would share a creation date: there is none to share.
    assert b"CreationDate" not in (tmp_path / "one.pdf").read_bytes()


@pytest.mark.parametrize(
    ("phases", "reason"),
    [
        (("anchor_demo", "anchor_repeat", "main"), "no anchor pair rated again in the main block"),
        (("main",), "no anchoring phase in this study"),
    ],
)
def test_an_empty_test_family_says_why(study, tmp_path, phases, reason):
    from sbir_study.analysis.report import write_report

    out = study / "analysis"
    summary = json.loads((out / "summary.json").read_text())
    summary["phases"] = {k: v for k, v in summary["phases"].items() if k in phases}
    summary["anchoring"] = {
        "n_tests": 0,
        "n_significant": 0,
        "share_significant": None,
        "wilson_low": None,
        "wilson_high": None,
    }
    summary["n_participants"] = 1
    write_report(
        tmp_path / "report.html",
        summary,
        pd.read_csv(out / "kendall_w.csv", dtype={"sketch_id": str}),
        pd.read_csv(out / "sketch_agreement.csv", dtype={"sketch_id": str}).fillna(""),
        {},
    )
    tables = _Tables((tmp_path / "report.html").read_text(encoding="utf-8"))
    (anchoring,) = [r for r in tables.table("statistic") if r[0].startswith("anchoring")]
    assert anchoring[1:4] == [reason, "", ""]
    assert any(p.startswith("1 participant, ") for p in tables.paragraphs)


def _decimal_percent(value: float, digits: int) -> str:
    # Reference: the decimal module, rounding the float's exact value half to even, as
    # correctly rounded formatting does.
    from decimal import ROUND_HALF_EVEN, Decimal

    exact = Decimal(value) * 100
    return f"{exact.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_EVEN)}%"


@given(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1))
def test_a_share_interval_prints_the_digits_its_bounds_need(a, b, c):
    low, value, high = sorted((a, b, c))
    point, interval = share_interval(value, low, high)
    digits = len(point.rstrip("%").split(".")[1])
    assert 1 <= digits <= 3
    assert point == _decimal_percent(value, digits)
    lower, upper = _decimal_percent(low, digits), _decimal_percent(high, digits)
    if " to " in interval:
        # The bounds differ as printed, and one decimal fewer would have made them equal.
        assert interval == f"{lower} to {upper}" and lower != upper
        if digits > 1:
            assert _decimal_percent(low, digits - 1) == _decimal_percent(high, digits - 1)
    else:
        # Narrower than the last decimal: it says so, never "89.2% to 89.2%".
        assert digits == 3 and lower == upper
        assert interval == f"{lower} (interval narrower than 0.001 points)"


def test_a_crowd_share_keeps_its_precision_and_the_note_on_independence(study, tmp_path):
    out = study / "analysis"
    summary = json.loads((out / "summary.json").read_text())
    # The case: 86.13% of 61,969,000 inter-user correlations (Wilson's interval from
    # statsmodels, an independent implementation of the summary's).
    from statsmodels.stats.proportion import proportion_confint

    n, k = 61_969_000, 53_376_130
    low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
    summary["pairwise"].update(
        n_tests=n, n_significant=k, share_significant=k / n, wilson_low=low, wilson_high=high
    )
    _write(out, summary, tmp_path / "report.html")
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    (row,) = [r for r in _Tables(page).table("statistic") if r[0].startswith("inter-user")]
    assert row[1:4] == [
        f"{100 * k / n:.2f}%",
        f"{100 * low:.2f}% to {100 * high:.2f}%",
        "53,376,130 of 61,969,000",
    ]
    assert row[2].split(" to ")[0] != row[2].split(" to ")[1]
    assert "which correlations sharing raters are not" in page
    # analyze's console says it alike.
    printed = format_summary(summary, out)
    assert (
        f"{100 * k / n:.2f}% of 61,969,000 tau_b significant "
        f"(95% CI {100 * low:.2f}% to {100 * high:.2f}%)"
    ) in printed


def _write(out, summary, path, participants=None, **options):
    return write_report(
        path,
        summary,
        pd.read_csv(out / "kendall_w.csv", dtype={"sketch_id": str}),
        pd.read_csv(out / "sketch_agreement.csv", dtype={"sketch_id": str}).fillna(""),
        {},
        participants,
        **options,
    )


def test_permutation_p_values_not_computed_say_why(study, tmp_path):
    out = study / "analysis"
    summary = json.loads((out / "summary.json").read_text())
    kendall_w = pd.read_csv(out / "kendall_w.csv", dtype={"sketch_id": str})
    # A crowd: every sketch rated by more than 50 raters, none permuted.
    summary["skillings_mack"].update(
        n_permutation_tested=0, n_significant_permutation=0, n_raters_min=1990, n_raters_max=2000
    )
    kendall_w["skillings_mack_permutation_p_value"] = np.nan
    kendall_w["skillings_mack_n_raters"] = 2000
    kendall_w.to_csv(tmp_path / "kendall_w.csv", index=False)
    (tmp_path / "sketch_agreement.csv").write_bytes((out / "sketch_agreement.csv").read_bytes())
    _write(tmp_path, summary, tmp_path / "report.html")
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    tables = _Tables(page)
    (row,) = [r for r in tables.table("statistic") if "Skillings-Mack" in r[0]]
    assert "0 of 0" not in row[3]
    assert "permutation p-values not computed for sketches with more than 50 raters" in row[3]
    assert "(these sketches have 1,990-2,000 raters)" in row[3]
    column = tables.table("sketch")[0].index("p (SM, permutation)")
    assert {r[column] for r in tables.table("sketch")[1:]} == {"not computed (over 50 raters)"}
    # analyze's console says it alike.
    (line,) = [x for x in format_summary(summary, out).splitlines() if "Skillings-Mack" in x]
    assert "0 of 0" not in line
    assert "permutation p-values not computed for sketches with more than 50 raters" in line


@pytest.fixture(scope="module")
def crowd(tmp_path_factory):
    """A simulated study of 30 participants, analysed: a crowd for a report whose
    participants' threshold is lowered to 12."""
    root = tmp_path_factory.mktemp("crowd")
    result = run_main(
        "simulate",
        "--flat",
        "--out",
        str(root / "ratings.csv"),
        "--participants",
        "30",
        "--sketches",
        "3",
        "--images",
        "8",
        "--seed",
        "4",
    )
    assert result.returncode == 0, result.stderr
    result = run_main(
        "analyze",
        str(root / "ratings.csv"),
        "--out",
        str(root / "analysis"),
        "--bootstrap",
        "20",
        "--permutations",
        "20",
        "--no-figures",
        "--reliability-splits",
        "10",
    )
    assert result.returncode == 0, result.stderr
    return root / "analysis"


def test_a_crowd_report_lists_the_participants_a_reader_needs(crowd, tmp_path):
    # Reference: the selection made again with pandas from participants.csv.
    summary = json.loads((crowd / "summary.json").read_text())
    participants = pd.read_csv(
        crowd / "participants.csv",
        dtype={"participant": str},
        keep_default_na=False,
        na_values=[""],
    )
    # Flags, set on participants in the middle of the ranking: a session that did not finish,
    # an exclusion, no tau_b, and a simulated participant among people (lab).
    middle = participants.sort_values("tau_b_median").index[12:16]
    participants = participants.astype({"session_status": object, "exclusion_rule": object})
    participants.loc[middle[0], "session_status"] = "incomplete"
    participants.loc[middle[1], ["excluded", "exclusion_rule"]] = [True, "missed-above=0.1"]
    participants.loc[middle[2], "tau_b_median"] = np.nan
    participants["origin"] = "lab"
    participants.loc[middle[3], "origin"] = "run-simulate"
    _write(crowd, summary, tmp_path / "report.html", participants, participants_listed_up_to=12)
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    listed = _Tables(page).table("participant")
    header, rows = listed[0], listed[1:]
    assert header[-1] == "listed as"
    ranked = participants.dropna(subset=["tau_b_median"]).sort_values(
        ["tau_b_median", "participant"], kind="stable"
    )
    lowest, highest = ranked["participant"].head(10), ranked["participant"].tail(10)
    flagged = participants.loc[middle, "participant"]
    expected = set(lowest) | set(highest) | set(flagged)
    assert len(expected) == 24
    tau = participants.set_index("participant")["tau_b_median"].fillna(np.inf)
    assert [r[0] for r in rows] == sorted(expected, key=lambda p: (tau[p], p))
    why = {r[0]: r[-1] for r in rows}
    assert all(why[p].startswith("lowest") for p in lowest)
    assert all(why[p].startswith("highest") for p in highest)
    assert "session did not finish" in why[flagged.iloc[0]]
    assert "excluded" in why[flagged.iloc[1]]
    assert "no tau_b against the consensus" in why[flagged.iloc[2]]
    assert why[flagged.iloc[3]] == "simulated"
    assert f"{len(rows)} of 30 participants" in page
    assert "participants.csv</code> holds every participant" in page
    assert "With more than 12 participants" in page


def test_a_participant_who_followed_none_of_the_anchors_is_listed(crowd, tmp_path):
    summary = json.loads((crowd / "summary.json").read_text())
    participants = pd.read_csv(crowd / "participants.csv", dtype={"participant": str})
    middle = participants.sort_values("tau_b_median")["participant"].iloc[12:15].tolist()
    # Anchoring tests of three anchor sketches each (anchoring.csv's columns): the first of
    # the middle participants significant on none, the second on one, the third undefined.
    rows = []
    for label in participants["participant"]:
        p_values = [0.01, 0.2, 0.3]
        if label == middle[0]:
            p_values = [0.06, 0.2, 0.5]
        elif label == middle[2]:
            p_values = [np.nan] * 3
        rows += [
            {"participant": label, "sketch_id": f"a{k}", "p_value": p}
            for k, p in enumerate(p_values)
        ]
    anchoring = pd.DataFrame(rows)
    _write(
        crowd,
        summary,
        tmp_path / "report.html",
        participants,
        participants_listed_up_to=12,
        anchoring=anchoring,
    )
    listed = _Tables((tmp_path / "report.html").read_text(encoding="utf-8")).table("participant")
    why = {r[0]: r[-1] for r in listed[1:]}
    # The reference: no p-value below the summary's alpha among the defined ones (pandas).
    defined = anchoring.dropna(subset=["p_value"])
    none = defined.groupby("participant")["p_value"].min() >= summary["alpha"]
    assert set(none[none].index) == {middle[0]}
    assert why[middle[0]] == "followed none of the anchors"
    assert middle[1] not in why and middle[2] not in why


def test_up_to_the_threshold_every_participant_is_listed_as_before(crowd, tmp_path):
    summary = json.loads((crowd / "summary.json").read_text())
    participants = pd.read_csv(crowd / "participants.csv", dtype={"participant": str})
    _write(crowd, summary, tmp_path / "report.html", participants)
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    listed = _Tables(page).table("participant")
    assert [r[0] for r in listed[1:]] == participants["participant"].tolist()
    assert "listed as" not in listed[0] and "holds every participant" not in page


@given(st.integers(-(10**12), 10**12), st.sampled_from(["", "%", ".5"]))
def test_a_count_with_separators_is_a_number_cell(n, tail):
    # Right-aligned and never broken, as the same count without separators was: the pages'
    # table macro, rendered as the pages render it.
    from sbir_study.foundation.html import environment

    macro = '{% from "macros.html.jinja" import table %}{{ table(["n"], [(cell,)]) }}'

    def table(cell):
        return environment().from_string(macro).render(cell=cell)

    for cell in (f"{n:,}{tail}", f"{n}{tail}", "< 1e-300"):
        assert '<td class="num">' in table(cell), cell
    for text in ("1,23", "12,3456", "sub-01", "1,000 of 2,000"):
        assert '<td class="num">' not in table(text), text
