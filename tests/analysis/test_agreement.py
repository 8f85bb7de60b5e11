"""Kendall's tau_b and W against R, SciPy, pandas and pingouin, and their properties."""

import numpy as np
import pandas as pd
import pingouin
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sbir_study.analysis import (
    inter_user_tau,
    kendall_tau_b,
    kendall_w,
    kendall_w_by_sketch,
    pairwise_kendall_tau,
)
from sbir_study.foundation.checks import InputError
from tests.helpers import r_reference

ALTERNATIVES = {"greater": "p_greater", "two-sided": "p_two_sided", "less": "p_less"}


@pytest.mark.parametrize("alternative", list(ALTERNATIVES))
def test_inter_user_tau_matches_r(small_ratings, alternative):
    # Reference: R cor.test(method = "kendall", exact = FALSE), tests/r/reference.R section 1.
    ours = inter_user_tau(small_ratings, alternative=alternative)
    reference = r_reference("pairwise.csv")
    merged = ours.merge(reference, on=["sketch_id", "participant_a", "participant_b"])
    assert len(merged) == len(reference) == len(ours) == 3 * 28
    np.testing.assert_allclose(merged["tau_b_x"], merged["tau_b_y"], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(merged["p_value"], merged[ALTERNATIVES[alternative]], rtol=1e-12)
    assert (merged["n_items_x"] == merged["n_items_y"]).all()


@pytest.mark.parametrize("alternative", list(ALTERNATIVES))
def test_kendall_tau_b_matches_r(small_ratings, alternative):
    # Reference: R cor.test(method = "kendall", exact = FALSE), tests/r/reference.R section 1.
    reference = r_reference("pairwise.csv").iloc[0]
    main = small_ratings[small_ratings["phase"] == "main"]
    wide = main[main["sketch_id"] == reference["sketch_id"]].pivot(
        index="image_id", columns="participant", values="rating"
    )
    x = wide[reference["participant_a"]].astype(float)
    y = wide[reference["participant_b"]].astype(float)
    result = kendall_tau_b(x, y, alternative=alternative)
    assert result.statistic == pytest.approx(reference["tau_b"], rel=1e-12)
    assert result.pvalue == pytest.approx(reference[ALTERNATIVES[alternative]], rel=1e-12)
    assert result.n_items == reference["n_items"]


def _scipy_pairwise(ratings, alternative):
    """The reference loop: scipy.stats.kendalltau over the items both raters gave."""
    raters = ratings.shape[0]
    tau = np.full((raters, raters), np.nan)
    p = np.full((raters, raters), np.nan)
    for a in range(raters):
        for b in range(raters):
            both = ~np.isnan(ratings[a]) & ~np.isnan(ratings[b])
            if both.sum() < 2:
                continue
            if both.sum() == 2:
                # scipy's asymptotic p-value divides by n - 2 (ZeroDivisionError) and
                # R's cor.test refuses: tau only, p undefined.
                tau[a, b] = scipy.stats.kendalltau(ratings[a, both], ratings[b, both]).statistic
                continue
            with np.errstate(all="ignore"):
                result = scipy.stats.kendalltau(
                    ratings[a, both], ratings[b, both], method="asymptotic", alternative=alternative
                )
            tau[a, b], p[a, b] = result.statistic, result.pvalue
    return tau, p


@pytest.mark.parametrize("alternative", list(ALTERNATIVES))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pairwise_matches_scipy_loop(alternative, seed):
    # Reference: scipy.stats.kendalltau(method="asymptotic"), one call per pair of raters.
    rng = np.random.default_rng(seed)
    latent = rng.uniform(1, 7, 40)
    ratings = np.clip(np.rint(latent + rng.normal(0, 1.5, (25, 40))), 1, 7)
    ratings[rng.random(ratings.shape) < 0.1] = np.nan
    ratings[3] = 4.0  # a rater who gives one rating to everything: tau undefined
    ratings[5, :38] = np.nan  # two shared items at most
    ours = pairwise_kendall_tau(ratings, alternative=alternative)
    tau, p = _scipy_pairwise(ratings, alternative)
    np.testing.assert_allclose(ours.statistic, tau, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ours.pvalue, p, rtol=0, atol=1e-12)
    assert np.isnan(ours.statistic[3]).all()


def test_pairwise_continuous_scores_match_scipy():
    # Reference: scipy.stats.kendalltau; scores with ties and many distinct values.
    rng = np.random.default_rng(7)
    scores = np.round(rng.normal(size=(12, 30)), 1)
    ours = pairwise_kendall_tau(scores, alternative="two-sided")
    tau, p = _scipy_pairwise(scores, "two-sided")
    np.testing.assert_allclose(ours.statistic, tau, atol=1e-12)
    np.testing.assert_allclose(ours.pvalue, p, atol=1e-12)


def test_pairwise_many_items_matches_scipy():
    # Reference: scipy.stats.kendalltau. 400 items take the float64 path for the
    # tie terms (their sums pass 2**24) and produce large tie groups.
    rng = np.random.default_rng(11)
    ratings = np.clip(np.rint(rng.uniform(1, 7, 400) + rng.normal(0, 1.5, (6, 400))), 1, 7)
    ratings[rng.random(ratings.shape) < 0.05] = np.nan
    ours = pairwise_kendall_tau(ratings, alternative="greater")
    tau, p = _scipy_pairwise(ratings, "greater")
    np.testing.assert_allclose(ours.statistic, tau, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ours.pvalue, p, rtol=0, atol=1e-12)


def test_pairwise_tau_matches_pandas_corr():
    # Reference: pandas.DataFrame.corr(method="kendall"), which calls scipy for tau_b.
    rng = np.random.default_rng(3)
    ratings = rng.integers(1, 8, (15, 40)).astype(float)
    expected = pd.DataFrame(ratings.T).corr(method="kendall").to_numpy()
    np.testing.assert_allclose(pairwise_kendall_tau(ratings).statistic, expected, atol=1e-12)


def test_kendall_tau_b_rejects_bad_input():
    with pytest.raises(InputError, match="alternative"):
        kendall_tau_b([1, 2, 3], [1, 2, 3], alternative="bigger")
    with pytest.raises(InputError, match="same length"):
        kendall_tau_b([1, 2, 3], [1, 2])
    assert np.isnan(kendall_tau_b([1, np.nan, 3], [np.nan, 2, 3]).statistic)
    two_items = kendall_tau_b([1, 2, np.nan], [3, 4, 5])
    assert two_items.statistic == 1.0 and np.isnan(two_items.pvalue) and two_items.n_items == 2


rating_lists = arrays(np.float64, st.integers(3, 25), elements=st.integers(1, 7).map(float))


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_tau_b_symmetric_bounded_and_rank_invariant(data):
    x = data.draw(rating_lists)
    y = data.draw(arrays(np.float64, x.shape, elements=st.integers(1, 7).map(float)))
    forward = kendall_tau_b(x, y, alternative="two-sided")
    backward = kendall_tau_b(y, x, alternative="two-sided")
    if np.isnan(forward.statistic):
        assert np.isnan(backward.statistic)
        return
    assert forward.statistic == pytest.approx(backward.statistic, abs=1e-12)
    assert -1.0 <= forward.statistic <= 1.0
    # A strictly increasing transform of either list leaves tau_b unchanged.
    transformed = kendall_tau_b(np.exp(x) + 3.0 * x, y**3, alternative="two-sided")
    assert transformed.statistic == pytest.approx(forward.statistic, abs=1e-12)
    matrix = pairwise_kendall_tau(np.vstack([x, y]))
    assert matrix.statistic[0, 1] == pytest.approx(matrix.statistic[1, 0], abs=1e-12)
    assert matrix.statistic[0, 1] == pytest.approx(forward.statistic, abs=1e-12)


def test_kendall_w_by_sketch_matches_r(small_ratings):
    # Reference: R friedman.test (tie-corrected), W = chi2 / (m (n - 1)), F via pf();
    # tests/r/reference.R section 2.
    ours = kendall_w_by_sketch(small_ratings).set_index("sketch_id")
    reference = r_reference("kendall_w.csv").set_index("sketch_id")
    for column in ["w", "chi2", "df", "p_value", "f", "f_df1", "f_df2", "f_p_value"]:
        np.testing.assert_allclose(ours[column], reference[column], rtol=1e-12, err_msg=column)
    for column in ["n_raters", "n_items", "n_raters_excluded"]:
        assert (ours[column] == reference[column]).all(), column
    assert (ours["n_raters_excluded"] > 0).all()  # the fixture has a missing rating per sketch


@pytest.mark.parametrize("seed", [0, 1])
def test_kendall_w_matches_pingouin(seed):
    # Reference: pingouin.friedman(method="chisq") and (method="f"), which report
    # the tie-corrected W and its tests.
    rng = np.random.default_rng(seed)
    ratings = np.clip(np.rint(rng.uniform(1, 7, 20) + rng.normal(0, 1.5, (9, 20))), 1, 7)
    wide = pd.DataFrame(ratings)
    chisq = pingouin.friedman(wide, method="chisq")
    f_test = pingouin.friedman(wide, method="f")
    ours = kendall_w(ratings)
    assert ours.statistic == pytest.approx(chisq["W"].iloc[0], rel=1e-12)
    assert ours.chi2 == pytest.approx(chisq["Q"].iloc[0], rel=1e-12)
    assert ours.pvalue == pytest.approx(chisq["p_unc"].iloc[0], rel=1e-10)
    assert ours.f == pytest.approx(f_test["F"].iloc[0], rel=1e-12)
    assert ours.f_pvalue == pytest.approx(f_test["p_unc"].iloc[0], rel=1e-10)


def test_kendall_w_leaves_out_incomplete_raters():
    ratings = np.array([[1, 2, 3, 4], [1, 3, 2, 4], [2, 1, 3, np.nan]])
    result = kendall_w(ratings)
    assert (result.n_raters, result.n_items, result.n_raters_excluded) == (2, 4, 1)
    assert result.statistic == pytest.approx(kendall_w(ratings[:2]).statistic)


@settings(max_examples=60, deadline=None)
@given(
    arrays(
        np.float64,
        st.tuples(st.integers(2, 8), st.integers(2, 12)),
        elements=st.integers(1, 7).map(float),
    )
)
def test_kendall_w_bounded_and_one_for_identical_raters(ratings):
    w = kendall_w(ratings).statistic
    if not np.isnan(w):
        assert -1e-12 <= w <= 1.0 + 1e-12
    row = ratings[0]
    if len(np.unique(row)) > 1:
        assert kendall_w(np.tile(row, (4, 1))).statistic == pytest.approx(1.0)


@settings(max_examples=60, deadline=None)
@given(
    arrays(
        np.float64,
        st.tuples(st.integers(1, 9), st.integers(2, 9)),
        elements=st.one_of(st.integers(1, 7).map(float), st.just(np.nan)),
    ),
    st.integers(1, 20),
    st.sampled_from(["greater", "two-sided", "less"]),
)
def test_pair_blocks_match_scipy_for_every_pair(x, cells, alternative):
    # Reference: scipy.stats.kendalltau (asymptotic, tie-corrected) on the items both raters
    # gave; tiny blocks (a few pairs each) so that every block boundary is crossed.
    from sbir_study.analysis import _kernels

    seen = set()
    for a, b, tau, p, n in _kernels.pairwise_tau_b_blocks(x, alternative, cells=cells):
        for i, j, t, pv, k in zip(a, b, tau, p, n, strict=True):
            assert i < j and (i, j) not in seen
            seen.add((i, j))
            both = ~np.isnan(x[i]) & ~np.isnan(x[j])
            assert k == both.sum()
            if k < 2 or np.ptp(x[i][both]) == 0 or np.ptp(x[j][both]) == 0:
                assert np.isnan(t) and np.isnan(pv)
                continue
            if k == 2:  # scipy's asymptotic variance divides by n - 2: tau only, p undefined
                expected = scipy.stats.kendalltau(x[i][both], x[j][both])
                assert t == pytest.approx(expected.statistic, abs=1e-12) and np.isnan(pv)
                continue
            expected = scipy.stats.kendalltau(
                x[i][both], x[j][both], alternative=alternative, method="asymptotic"
            )
            assert t == pytest.approx(expected.statistic, abs=1e-12)
            assert pv == pytest.approx(expected.pvalue, abs=1e-12, nan_ok=True)
    shares = {
        (i, j)
        for i in range(len(x))
        for j in range(i + 1, len(x))
        if (~np.isnan(x[i]) & ~np.isnan(x[j])).any()
    }
    assert seen == shares


@settings(max_examples=40, deadline=None)
@given(
    st.data(),
    st.sampled_from([3, 8, 40, 76, 77, 120]),
    st.sampled_from(["greater", "two-sided", "less"]),
)
def test_pair_blocks_are_scipys_bits(data, items, alternative):
    # Reference: scipy.stats.kendalltau (asymptotic, tie-corrected), bit for bit: the tie
    # terms are whole numbers, exact in single precision up to 76 items and in double
    # from 77, and every rounding step is scipy's. Ratings on a scale, scores with many
    # ties, or one large tie group, any share of them missing, blocks crossing the rows.
    from sbir_study.analysis import _kernels

    raters = data.draw(st.integers(2, 8))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    kind = data.draw(st.sampled_from(["scale", "scores", "nearly constant"]))
    if kind == "scale":
        x = rng.integers(1, data.draw(st.integers(2, 8)), size=(raters, items)).astype(float)
    elif kind == "scores":
        x = np.round(rng.normal(size=(raters, items)), 1)
    else:  # one large tie group: the tie terms' largest whole numbers (2 xtie ytie)
        x = np.where(rng.random((raters, items)) < 0.03, 2.0, 1.0)
    x[rng.random(x.shape) < data.draw(st.sampled_from([0.0, 0.01, 0.3, 0.9]))] = np.nan
    cells = data.draw(st.integers(1, 40))
    for a, b, tau, p, n in _kernels.pairwise_tau_b_blocks(x, alternative, cells=cells):
        for i, j, t, pv, k in zip(a, b, tau, p, n, strict=True):
            both = ~np.isnan(x[i]) & ~np.isnan(x[j])
            if k < 2 or np.ptp(x[i][both]) == 0 or np.ptp(x[j][both]) == 0:
                assert np.isnan(t) and np.isnan(pv)
                continue
            if k == 2:  # scipy's asymptotic variance divides by n - 2: tau only, p undefined
                assert t == scipy.stats.kendalltau(x[i][both], x[j][both]).statistic
                assert np.isnan(pv)
                continue
            expected = scipy.stats.kendalltau(
                x[i][both], x[j][both], alternative=alternative, method="asymptotic"
            )
            assert (t, pv) == (expected.statistic, expected.pvalue), (i, j)


@pytest.mark.parametrize("items", [76, 77, 120])
def test_pair_blocks_at_the_largest_tie_terms_are_scipys_bits(items):
    # Reference: scipy.stats.kendalltau (asymptotic), bit for bit. Nearly every rating the
    # same: 2 xtie ytie nears items**4 / 2, the largest whole number of the tie terms, which
    # passes 2**24 from 77 items (single precision would round it there).
    from sbir_study.analysis import _kernels

    rng = np.random.default_rng(items)
    x = np.where(rng.random((12, items)) < 0.03, 2.0, 1.0)
    x[0, :3] = 2.0  # no rater constant
    compared = 0
    for a, b, tau, p, _ in _kernels.pairwise_tau_b_blocks(x, "greater"):
        for i, j, t, pv in zip(a, b, tau, p, strict=True):
            if np.ptp(x[i]) == 0 or np.ptp(x[j]) == 0:
                continue
            expected = scipy.stats.kendalltau(
                x[i], x[j], alternative="greater", method="asymptotic"
            )
            assert (t, pv) == (expected.statistic, expected.pvalue), (i, j)
            compared += 1
    assert compared >= 30


def test_pair_blocks_with_blas_limited_match_scipy(monkeypatch):
    # The one-thread BLAS path taken at crowd size, forced on a small matrix; reference
    # scipy.stats.kendalltau (asymptotic) on the items both raters gave.
    from sbir_study.analysis import _kernels

    monkeypatch.setattr(_kernels, "_THREAD_LIMIT_CELLS", 0)
    rng = np.random.default_rng(3)
    x = rng.integers(1, 8, size=(12, 10)).astype(float)
    x[rng.random(x.shape) < 0.15] = np.nan
    for a, b, tau, p, _ in _kernels.pairwise_tau_b_blocks(x, "greater", cells=20):
        for i, j, t, pv in zip(a, b, tau, p, strict=True):
            both = ~np.isnan(x[i]) & ~np.isnan(x[j])
            expected = scipy.stats.kendalltau(
                x[i][both], x[j][both], alternative="greater", method="asymptotic"
            )
            assert t == pytest.approx(expected.statistic, abs=1e-12)
            assert pv == pytest.approx(expected.pvalue, abs=1e-12)
