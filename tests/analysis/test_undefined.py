"""A comparison that cannot be made is not a result (docs/agreement.md, "Undefined").

Random sparse designs (raters with 0-40 ratings of a sketch, constant raters, sketches
and images rated by one participant) go through ``analyze``; every share's numerator and
denominator in ``summary.json`` must equal a count made here independently: the pairs and
consensus comparisons are enumerated with pandas and each test is
``scipy.stats.kendalltau(method="asymptotic")``, which gives NaN for a constant side;
Kendall's W and the Skillings-Mack test are counted from their rules (at least two
participants who rated every image, resp. at least two ratings), and a sketch's
Krippendorff's alpha is defined where the ``krippendorff`` package computes one (it refuses
a sketch with no image rated twice, or one value only). Nothing undefined may be
counted significant, and every undefined row of a table must say why.
"""

from __future__ import annotations

import json
import re
import warnings
from itertools import combinations

import krippendorff
import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from sbir_study.analysis.pipeline import AnalysisOptions, analyze_ratings
from sbir_study.analysis.summary import format_summary
from sbir_study.analysis.validation import validate_ratings

ALPHA = 0.05
OPTIONS = AnalysisOptions(bootstrap=0, permutations=0)
KINDS = ("absent", "some", "all", "constant", "one")


@st.composite
def sparse_designs(draw):
    """A main block of 1-5 participants x 1-3 sketches, each rater of a sketch one of KINDS."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_participants = draw(st.integers(1, 5))
    rows = []
    for s in range(draw(st.integers(1, 3))):
        n_images = draw(st.one_of(st.integers(1, 6), st.just(40)))
        for p in range(n_participants):
            kind = draw(st.sampled_from(KINDS))
            if kind == "absent":
                continue
            images = np.arange(n_images)
            if kind == "some":
                images = images[rng.random(n_images) < 0.6]
            elif kind == "one":
                images = images[:1]
            ratings = rng.integers(1, 8, images.size)
            if kind == "constant":
                ratings[:] = rng.integers(1, 8)
            rows += [
                (f"{p + 1:02d}", f"s{s + 1}", f"s{s + 1}i{i:02d}", "main", int(r))
                for i, r in zip(images, ratings, strict=True)
            ]
    return pd.DataFrame(rows, columns=["participant", "sketch_id", "image_id", "phase", "rating"])


def _tau_p(x, y) -> float:
    """scipy's one-sided p-value over the shared items; NaN below 3 of them or a constant side."""
    both = ~np.isnan(x) & ~np.isnan(y)
    if both.sum() < 3:
        return float("nan")
    with np.errstate(all="ignore"):
        result = stats.kendalltau(x[both], y[both], method="asymptotic", alternative="greater")
    return float(result.pvalue)


def _oracle(table: pd.DataFrame) -> dict:
    """Every family's (defined, significant, undefined) counted from the rules, not our code."""
    counts = {name: [0, 0, 0] for name in ("pairwise", "consensus", "consensus_loo")}
    w_defined = w_undefined = sm_defined = sm_undefined = alpha_defined = alpha_undefined = 0

    def count(name, p):
        if np.isnan(p):
            counts[name][2] += 1
        else:
            counts[name][0] += 1
            counts[name][1] += int(p < ALPHA)

    for _, sketch in table.groupby("sketch_id"):
        wide = sketch.pivot(index="participant", columns="image_id", values="rating").astype(float)
        matrix = wide.to_numpy()
        for a, b in combinations(range(len(matrix)), 2):
            if (~np.isnan(matrix[a]) & ~np.isnan(matrix[b])).any():  # a pair shares an image
                count("pairwise", _tau_p(matrix[a], matrix[b]))
        raters = (~np.isnan(matrix)).sum(axis=0)
        inclusive = np.where(raters >= 2, np.nanmean(matrix, axis=0), np.nan)
        for i, row in enumerate(matrix):
            others = np.delete(matrix, i, axis=0)
            with warnings.catch_warnings():  # nanmean of an all-NaN column: NaN, as wanted
                warnings.simplefilter("ignore", RuntimeWarning)
                loo = np.nanmean(others, axis=0) if len(others) else np.full(row.size, np.nan)
            count("consensus", _tau_p(row, inclusive))
            count("consensus_loo", _tau_p(row, loo))
        complete = matrix[~np.isnan(matrix).any(axis=1)]
        w_ok = len(complete) >= 2 and matrix.shape[1] >= 2 and (np.ptp(complete, axis=1) > 0).any()
        w_defined += w_ok
        w_undefined += not w_ok
        sm_ok = ((~np.isnan(matrix)).sum(axis=1) >= 2).sum() >= 2
        sm_defined += sm_ok
        sm_undefined += not sm_ok
        try:
            alpha_ok = bool(
                np.isfinite(
                    krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal")
                )
            )
        except ValueError:  # no unit with two values, or one value in the domain
            alpha_ok = False
        alpha_defined += alpha_ok
        alpha_undefined += not alpha_ok
    return {
        **{k: tuple(v) for k, v in counts.items()},
        "kendall_w": (w_defined, w_undefined),
        "skillings_mack": (sm_defined, sm_undefined),
        "alpha": (alpha_defined, alpha_undefined),
    }


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(sparse_designs())
def test_shares_count_only_defined_tests(tmp_path_factory, table):
    if table.empty:
        return
    out = tmp_path_factory.mktemp("undefined") / "out"
    summary = analyze_ratings(validate_ratings(table), out, OPTIONS, figures=False)
    expected = _oracle(table)

    for family in ("pairwise", "consensus", "consensus_loo"):
        got = summary[family]
        counted = (got["n_tests"], got["n_significant"], got["n_undefined"])
        assert counted == expected[family], family
        listed = sum(entry["n"] for entry in got["undefined"])
        assert listed <= got["n_undefined"] and bool(listed) == bool(got["n_undefined"]), family
    w = summary["kendall_w"]
    assert (w["n_defined"], w["n_undefined"]) == expected["kendall_w"]
    assert w["n_significant"] <= w["n_defined"]
    sm = summary["skillings_mack"]
    assert (sm["n_sketches"], sm["n_undefined"]) == expected["skillings_mack"]
    assert sm["n_significant"] <= sm["n_sketches"]
    if w["n_defined"]:
        assert w["n_raters_min"] >= 2  # no W over one participant
    alpha = summary.get("krippendorff_alpha")
    if alpha:
        assert alpha["ordinal"]["by_sketch"]["n_undefined"] == expected["alpha"][1]

    # Every undefined row is empty and names its reason; nothing undefined is significant.
    consensus = pd.read_csv(
        out / "consensus_tau.csv",
        keep_default_na=False,
        na_values=[""],
        dtype={"participant": str, "reason": str, "reason_loo": str},
    )
    for value, p, reason in (
        ("tau_b", "p_value", "reason"),
        ("tau_b_loo", "p_value_loo", "reason_loo"),
    ):
        undefined = consensus[p].isna()
        assert (consensus.loc[undefined, reason].fillna("") != "").all()
        assert (consensus.loc[~undefined, reason].fillna("") == "").all()
        assert consensus.loc[undefined, value].isna().all()
    agreement = pd.read_csv(
        out / "kendall_w.csv",
        keep_default_na=False,
        na_values=[""],
        dtype={"w_reason": str, "alpha_reason": str, "skillings_mack_reason": str},
    )
    alpha_by_sketch = agreement["alpha_ordinal"].notna()
    assert (alpha_by_sketch.sum(), (~alpha_by_sketch).sum()) == expected["alpha"]
    for value, reason in (
        ("w", "w_reason"),
        ("alpha_ordinal", "alpha_reason"),
        ("skillings_mack_p_value", "skillings_mack_reason"),
    ):
        assert ((agreement[reason].fillna("") != "") == agreement[value].isna()).all(), reason
    pairs = pd.read_parquet(out / "pairwise_tau.parquet")
    assert ((pairs["reason"] != "") == pairs["p_value"].isna()).all()
    assert pairs.loc[pairs["reason"] != "", "tau_b"].isna().all()
    per_sketch = pd.read_csv(out / "pairwise_tau_summary.csv")
    assert per_sketch["n_undefined"].sum() == expected["pairwise"][2]

    text = format_summary(summary, out)
    text += (out / "report.html").read_text(encoding="utf-8")
    assert not re.search(r"\b(1|n/a) participants\b", text)
    for family in ("pairwise", "consensus"):
        got = summary[family]
        if got["n_undefined"] and got["n_tests"]:
            assert f"of {got['n_tests']} defined ({got['n_undefined']} undefined: " in text


def test_one_participant_session_has_no_result(tmp_path):
    # The brief's case: one participant, four sketches. Before, "100.0% of 4 tau_b significant"
    # against a consensus that was their own ratings.
    rng = np.random.default_rng(7)
    rows = [
        ("07", f"s{s}", f"s{s}i{i}", "main", int(rng.integers(1, 8)))
        for s in range(4)
        for i in range(6)
    ]
    table = pd.DataFrame(rows, columns=["participant", "sketch_id", "image_id", "phase", "rating"])
    summary = analyze_ratings(validate_ratings(table), tmp_path / "out", OPTIONS, figures=False)
    for family in ("consensus", "consensus_loo"):
        assert (summary[family]["n_tests"], summary[family]["n_undefined"]) == (0, 4)
        assert {e["reason"] for e in summary[family]["undefined"]} == {"one rater"}
    assert summary["kendall_w"]["n_defined"] == 0
    text = format_summary(summary, tmp_path / "out")
    assert "Analysed 1 participant," in text
    assert (
        "participant vs consensus: no tau_b defined (4 undefined: one rater on s0, s1, s2, s3)"
    ) in text
    assert "Kendall's W: undefined for every sketch" in text


def test_constant_rater_is_named(tmp_path):
    # Nine participants rate one sketch's six images; participant 07 gives every image a 4:
    # their 8 inter-user pairs have no tau_b (scipy.stats.kendalltau: NaN for a constant side).
    rng = np.random.default_rng(3)
    rows = [
        (f"{p:02d}", "s3", f"i{i}", "main", 4 if p == 7 else int(rng.integers(1, 8)))
        for p in range(1, 10)
        for i in range(6)
    ]
    table = pd.DataFrame(rows, columns=["participant", "sketch_id", "image_id", "phase", "rating"])
    summary = analyze_ratings(validate_ratings(table), tmp_path / "out", OPTIONS, figures=False)
    pairwise = summary["pairwise"]
    assert pairwise["n_tests"] + pairwise["n_undefined"] == 36
    assert pairwise["n_undefined"] >= 8
    assert {"sketch_id": "s3", "reason": "constant: 07", "n": 8} in pairwise["undefined"]
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["pairwise"] == pairwise
    assert "undefined: constant: 07 on s3" in format_summary(summary, tmp_path / "out")
