"""Consensus ground truth, participant-vs-consensus, anchoring, bins and test families against R."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest

from sbir_study.analysis import (
    anchoring_consistency,
    binned_medians,
    consensus_ground_truth,
    inter_user_tau,
    participant_vs_consensus,
    rating_distribution,
    summarize_family,
    wilson_interval,
    write_qrels,
)
from sbir_study.foundation.checks import InputError
from tests.helpers import r_reference


def _assert_matches_r(
    ours: pd.DataFrame, name: str, keys: list[str], rows: int, columns: list[str]
) -> pd.DataFrame:
    """``ours`` merged with the R table ``name`` on ``keys``: both hold the same ``rows`` rows,
    and each of ``columns`` equals R's to a relative 1e-12."""
    reference = r_reference(name)
    merged = ours.merge(reference, on=keys)
    assert len(merged) == len(ours) == len(reference) == rows
    for column in columns:
        np.testing.assert_allclose(merged[f"{column}_x"], merged[f"{column}_y"], rtol=1e-12)
    return merged


def test_ground_truth_matches_r(small_ratings):
    # Reference: R aggregate() mean/median/sd/length and rank(ties = "average");
    # tests/r/reference.R section 3.
    ours = consensus_ground_truth(small_ratings)
    merged = _assert_matches_r(
        ours,
        "ground_truth.csv",
        ["sketch_id", "image_id"],
        30,
        ["mean_rating", "median_rating", "sd_rating", "rank"],
    )
    assert (merged["n_ratings_x"] == merged["n_ratings_y"]).all()
    # Sorted by sketch then rank, rank 1 = lowest mean rating = best match.
    assert ours.groupby("sketch_id")["rank"].apply(lambda r: r.is_monotonic_increasing).all()


def test_ground_truth_ties_share_average_rank():
    table = pd.DataFrame(
        {
            "participant": ["1", "2"] * 3,
            "sketch_id": "s",
            "phase": "main",
            "image_id": ["a", "a", "b", "b", "c", "c"],
            "rating": [1, 3, 2, 2, 7, 6],
        }
    )
    truth = consensus_ground_truth(table).set_index("image_id")
    assert truth.loc["a", "rank"] == truth.loc["b", "rank"] == 1.5
    assert truth.loc["c", "rank"] == 3.0


def test_qrels_grades(tmp_path):
    truth = pd.DataFrame(
        {
            "sketch_id": "s",
            "image_id": ["a", "b", "c", "d"],
            "mean_rating": [1.0, 3.5, 6.49, np.nan],
        }
    )
    write_qrels(truth, tmp_path / "gt.qrels")
    # grade = 7 - round(mean): 1 -> 6; 3.5 rounds half up to 4 -> 3; 6.49 -> 1; unrated left out.
    assert (tmp_path / "gt.qrels").read_text() == "s 0 a 6\ns 0 b 3\ns 0 c 1\n"


def test_participant_vs_consensus_matches_r(small_ratings):
    # Reference: R cor.test against colMeans with and without the participant;
    # tests/r/reference.R section 4.
    ours = participant_vs_consensus(small_ratings)
    _assert_matches_r(
        ours,
        "consensus.csv",
        ["participant", "sketch_id"],
        24,
        ["tau_b", "p_value", "tau_b_loo", "p_value_loo"],
    )
    # Leaving the participant out can only lower agreement on average.
    assert ours["tau_b_loo"].mean() < ours["tau_b"].mean()


def test_anchoring_matches_r(small_ratings):
    # Reference: R cor.test of anchor_repeat ratings against anchor_rating;
    # tests/r/reference.R section 5.
    ours = anchoring_consistency(small_ratings)
    _assert_matches_r(ours, "anchoring.csv", ["participant", "sketch_id"], 16, ["tau_b", "p_value"])


def test_binned_medians_match_r(small_ratings):
    # Reference: R merge()/floor(median) binning of Eq. 3; tests/r/reference.R section 6.
    ours = binned_medians(small_ratings)
    reference = r_reference("bins.csv")
    np.testing.assert_array_equal(ours["bin"], reference["bin"])
    np.testing.assert_array_equal(ours["n_ratings"], reference["n_ratings"])
    np.testing.assert_allclose(ours["mean"], reference["mean"], rtol=1e-12)
    np.testing.assert_allclose(ours["sd"], reference["sd"], rtol=1e-12)
    histogram = [f"n_rating_{k}" for k in range(1, 8)]
    np.testing.assert_array_equal(ours[histogram], reference[histogram])
    assert ours["n_ratings"].sum() == small_ratings.query("phase == 'main'")["rating"].count()


def test_rating_distribution_counts(small_ratings):
    table = rating_distribution(small_ratings)
    assert set(table["phase"]) == {"main", "anchor_repeat"}
    for phase, group in table.groupby("phase"):
        ratings = small_ratings.loc[small_ratings["phase"] == phase, "rating"]
        expected = ratings.value_counts().reindex(range(1, 8), fill_value=0)
        np.testing.assert_array_equal(group["count"], expected.to_numpy())
        assert group["share"].sum() == pytest.approx(1.0)
        assert (group["n_missing"] == ratings.isna().sum()).all()
    np.testing.assert_allclose(table["uniform_share"], 1 / 7)


def test_families_match_r(small_ratings):
    # Reference: R prop.test(correct = FALSE)$conf.int (Wilson) and p.adjust("BH");
    # tests/r/reference.R section 7.
    reference = r_reference("families.csv").set_index("family")
    consensus = participant_vs_consensus(small_ratings)
    families = {
        "pairwise": inter_user_tau(small_ratings)["p_value"],
        "consensus": consensus["p_value"],
        "consensus_loo": consensus["p_value_loo"],
        "anchoring": anchoring_consistency(small_ratings)["p_value"],
    }
    for name, pvalues in families.items():
        ours = summarize_family(pvalues, alpha=0.05)
        expected = reference.loc[name]
        assert ours.n_tests == expected["n_tests"], name
        assert ours.n_significant == expected["n_significant"], name
        assert ours.n_significant_bh == expected["n_significant_bh"], name
        assert ours.wilson_low == pytest.approx(expected["wilson_low"], rel=1e-12), name
        assert ours.wilson_high == pytest.approx(expected["wilson_high"], rel=1e-12), name


@pytest.mark.parametrize("count,n", [(0, 10), (1, 1), (52, 84), (10077, 11718), (868, 868)])
@pytest.mark.parametrize("confidence", [0.95, 0.99, 0.5])
def test_wilson_matches_scipy(count, n, confidence):
    # Reference: scipy.stats.binomtest(count, n).proportion_ci(method="wilson"), Newcombe's
    # (1998) form of the interval, computed independently of statsmodels' (which ours calls).
    reference = binomtest(count, n).proportion_ci(confidence_level=confidence, method="wilson")
    ours = wilson_interval(count, n, confidence=confidence)
    assert ours[0] == pytest.approx(reference.low, rel=1e-12, abs=1e-15)
    assert ours[1] == pytest.approx(reference.high, rel=1e-12, abs=1e-15)


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 10**9), share=st.floats(0, 1))
def test_wilson_holds_its_share_inside_zero_to_one(n, share):
    # Reference: scipy.stats.binomtest(...).proportion_ci(method="wilson"); the interval
    # holds the observed share (to rounding: 1 - 1e-16 at count = n) and stays within
    # [0, 1] even where rounding would leave it.
    count = round(share * n)
    low, high = wilson_interval(count, n)
    reference = binomtest(count, n).proportion_ci(method="wilson")
    assert 0.0 <= low <= high <= 1.0
    assert low <= count / n + 1e-15 and high >= count / n - 1e-15
    assert low == pytest.approx(reference.low, rel=1e-9, abs=1e-12)
    assert high == pytest.approx(reference.high, rel=1e-9, abs=1e-12)


@settings(max_examples=500, deadline=None)
@given(
    n=st.integers(1, 10**12),
    share=st.floats(0, 1),
    confidence=st.one_of(st.sampled_from([0.95, 0.99, 0.5]), st.floats(1e-6, 1 - 1e-9)),
)
def test_wilson_is_statsmodels_to_the_last_bit(n, share, confidence):
    # Reference: statsmodels.stats.proportion.proportion_confint(method="wilson"), whose
    # terms wilson_interval follows without importing it (or scipy.stats).
    from statsmodels.stats.proportion import proportion_confint

    count = round(share * n)
    reference = proportion_confint(count, n, alpha=1.0 - confidence, method="wilson")
    assert wilson_interval(count, n, confidence=confidence) == reference


@pytest.mark.parametrize("n", [0, -3])
def test_wilson_of_no_tests_is_undefined(n):
    assert all(np.isnan(wilson_interval(0, n)))


@pytest.mark.parametrize(
    "column, bad",
    [("sketch_id", "s 1"), ("image_id", "a\nb"), ("image_id", "../x"), ("sketch_id", "s\x001")],
)
def test_qrels_never_carry_an_unchecked_id(tmp_path, column, bad):
    """A space or a line break in an id would forge a field or a line of the qrels."""
    truth = pd.DataFrame(
        {"sketch_id": ["s1", "s1"], "image_id": ["a", "b"], "mean_rating": [1.0, 2.0]}
    )
    truth.loc[1, column] = bad
    with pytest.raises(InputError, match=f"{column}: expected an id"):
        write_qrels(truth, tmp_path / "x.qrels")
    assert not (tmp_path / "x.qrels").exists()


_CELLS = st.one_of(st.integers(1, 7).map(float), st.just(np.nan), st.floats(1, 7, allow_nan=False))


def _three_arrays(rows: int, items: int):
    """Three arrays of ``rows`` x ``items`` ratings, means and gaps (NaN)."""
    row = st.lists(_CELLS, min_size=items, max_size=items)
    array = st.lists(row, min_size=rows, max_size=rows)
    return st.lists(array, min_size=3, max_size=3)


@settings(max_examples=150)
@given(
    st.tuples(st.integers(1, 5), st.integers(2, 9)).flatmap(lambda shape: _three_arrays(*shape)),
    st.booleans(),
    st.sampled_from(["greater", "less", "two-sided"]),
)
def test_a_row_against_each_of_several_is_scipys_kendalltau(arrays, same_gaps, alternative):
    # Reference: scipy.stats.kendalltau(method="asymptotic") of each row pair over the items
    # present in both, to the bit; the participant's signs shared between the two (the
    # consensus and the leave-one-out consensus) where both leave out the same items, and
    # not where they differ.
    import warnings

    from scipy import stats

    from sbir_study.analysis import _kernels

    x, first, second = (np.array(a) for a in arrays)
    if same_gaps:
        second = np.where(np.isnan(first), np.nan, np.nan_to_num(second, nan=4.0))
    results = _kernels.paired_rows_tau_b_each(x, [first, second], alternative)
    for y, (tau, p, n) in zip([first, second], results, strict=True):
        for row in range(x.shape[0]):
            both = ~np.isnan(x[row]) & ~np.isnan(y[row])
            assert n[row] == both.sum()
            if both.sum() < 2:
                assert np.isnan(tau[row]) and np.isnan(p[row])
                continue
            # SciPy's normal approximation divides by n - 2: at two items, tau_b alone.
            method = "asymptotic" if both.sum() >= 3 else "exact"
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                reference = stats.kendalltau(
                    x[row, both], y[row, both], method=method, alternative=alternative
                )
            if np.isnan(reference.statistic):
                assert np.isnan(tau[row]) and np.isnan(p[row])
                continue
            assert tau[row] == reference.statistic, (row, x[row], y[row])
            if method == "asymptotic":
                assert p[row] == reference.pvalue, (row, x[row], y[row])
