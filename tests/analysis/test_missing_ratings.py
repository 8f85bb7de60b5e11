"""Agreement over every rating: Krippendorff's alpha and the Skillings-Mack test.

References: the worked example of Krippendorff (2011), "Computing Krippendorff's
Alpha-Reliability" (its published alphas), the `krippendorff` package (PyPI) on
random data, the R package Skillings.Mack (tests/r/skillings_mack.R), the published
Skillings-Mack examples, SciPy's Friedman test and an exact enumeration of the permutation
distribution.
"""

import itertools

import krippendorff
import numpy as np
import pandas as pd
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from sbir_study.analysis import kendall_w, kendall_w_by_sketch, validate_ratings
from sbir_study.analysis.agreement import krippendorff_alpha, skillings_mack
from sbir_study.analysis.agreement_tables import (
    AGREEMENT_COLUMNS,
    agreement_by_sketch,
    krippendorff_alpha_overall,
)
from sbir_study.foundation.checks import InputError
from tests.helpers import DATA

NAN = np.nan
# Krippendorff (2011), Sec. C "Nominal data, any number of observers, missing values":
# observers A-D (rows) x units 1-12 (columns).
KRIPPENDORFF_2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
)
# The alphas Krippendorff (2011) publishes for these data: Sec. C (nominal, .743),
# Sec. E (ordinal, .815), Sec. F (interval, .849), Sec. G (ratio, .797).
PUBLISHED_ALPHA = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849, "ratio": 0.797}


@pytest.mark.parametrize("level", list(PUBLISHED_ALPHA))
def test_alpha_reproduces_krippendorff_2011(level):
    result = krippendorff_alpha(KRIPPENDORFF_2011, level=level, n_resamples=0)
    assert round(result.statistic, 3) == PUBLISHED_ALPHA[level]
    # The krippendorff package on the same data, to rounding.
    package = krippendorff.alpha(KRIPPENDORFF_2011, level_of_measurement=level)
    assert result.statistic == pytest.approx(package, abs=1e-12)
    # Unit 12 has one value: not pairable. 11 units, 40 pairable values, 4 observers.
    assert (result.n_units, result.n_values, result.n_raters) == (11, 40, 4)


def rating_matrix(draw, max_raters=8, max_units=12):
    raters = draw(st.integers(2, max_raters))
    units = draw(st.integers(2, max_units))
    cells = draw(
        st.lists(
            st.one_of(st.none(), st.integers(1, 7)),
            min_size=raters * units,
            max_size=raters * units,
        )
    )
    return np.array([np.nan if c is None else c for c in cells], dtype=float).reshape(raters, units)


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_alpha_equals_the_krippendorff_package(data):
    ratings = rating_matrix(data.draw)
    level = data.draw(st.sampled_from(["ordinal", "interval", "nominal", "ratio"]))
    ours = krippendorff_alpha(ratings, level=level, n_resamples=0).statistic
    pairable = (~np.isnan(ratings)).sum(axis=0) >= 2
    values = ratings[:, pairable]
    if np.unique(values[~np.isnan(values)]).size < 2:
        assert np.isnan(ours)  # one value throughout: no expected disagreement
        return
    # krippendorff.alpha: the reference implementation (PyPI `krippendorff`), given the
    # 1..7 domain so that its ordinal metric sees the same scale.
    package = krippendorff.alpha(
        ratings,
        level_of_measurement=level,
        value_domain=list(range(1, 8)) if level != "nominal" else None,
    )
    assert ours == pytest.approx(package, abs=1e-10)


def test_each_bootstrap_resample_is_alpha_of_the_drawn_units():
    # The bootstrap reweights the units' coincidences; the same draw, given to the
    # package as a matrix with the drawn units as columns (repeats included), must
    # give the same alpha.
    from sbir_study.analysis import _agreement_kernels
    from sbir_study.analysis.agreement import _value_counts

    rng = np.random.default_rng(5)
    ratings = np.clip(np.rint(rng.uniform(1, 7, 30) + rng.normal(0, 1.2, (9, 30))), 1, 7)
    ratings[rng.random(ratings.shape) < 0.2] = np.nan
    domain, counts = _value_counts(ratings, np.arange(1.0, 8.0))
    pairable = np.flatnonzero(counts.sum(axis=1) >= 2)
    units = _agreement_kernels.unit_coincidences(counts)
    draws = np.random.default_rng(11)
    alphas = _agreement_kernels.bootstrap_alpha(
        units, domain, "ordinal", 20, np.random.default_rng(11)
    )
    for alpha in alphas:
        drawn = pairable[draws.integers(0, len(pairable), len(pairable))]
        package = krippendorff.alpha(
            ratings[:, drawn], level_of_measurement="ordinal", value_domain=list(range(1, 8))
        )
        assert alpha == pytest.approx(package, abs=1e-10)


def test_alpha_interval_is_seeded_and_brackets_the_estimate():
    rng = np.random.default_rng(2)
    ratings = np.clip(np.rint(rng.uniform(1, 7, 40) + rng.normal(0, 1.0, (20, 40))), 1, 7)
    ratings[rng.random(ratings.shape) < 0.1] = np.nan
    first = krippendorff_alpha(ratings, n_resamples=500, seed=3)
    assert first == krippendorff_alpha(ratings, n_resamples=500, seed=3)
    assert first.ci_low < first.statistic < first.ci_high
    assert krippendorff_alpha(ratings, n_resamples=500, seed=4).ci_low != first.ci_low
    none = krippendorff_alpha(ratings, n_resamples=0)
    assert np.isnan(none.ci_low) and none.statistic == first.statistic


def test_alpha_rejects_bad_options():
    with pytest.raises(InputError, match="level"):
        krippendorff_alpha(KRIPPENDORFF_2011, level="ordnial")
    with pytest.raises(InputError, match="n_resamples"):
        krippendorff_alpha(KRIPPENDORFF_2011, n_resamples=-1)
    with pytest.raises(InputError, match="raters x units"):
        krippendorff_alpha([1, 2, 3])


# --- Skillings-Mack ---------------------------------------------------------------------------

# Skillings and Mack (1981), Table 1: four methods of assembling a product (columns) in
# nine blocks, with four values missing (the example of the R Skillings.Mack
# documentation, Ski.Mack(maty)).
ASSEMBLY = np.array(
    [
        [3.2, 4.1, 3.8, 4.2],
        [3.1, 3.9, 3.4, 4.0],
        [4.3, 3.5, 4.6, 4.8],
        [3.5, 3.6, 3.9, 4.0],
        [3.6, 4.2, 3.7, 3.9],
        [4.5, 4.7, 3.7, NAN],
        [NAN, 4.2, 3.4, NAN],
        [4.3, 4.6, 4.4, 4.9],
        [3.5, NAN, 3.7, 3.9],
    ]
)
# Brady (1969), metronome rhythmicity and stuttering, as in Hollander and Wolfe (1999)
# and the documentation examples of PMCMRplus::skillingsMackTest and NSM3::pSkilMack:
# eight speakers (blocks) x three conditions, one value missing.
RHYTHMICITY = np.array(
    [[3, 5, 15], [1, 3, 18], [5, 4, 21], [2, NAN, 6], [0, 2, 17], [0, 2, 10], [0, 3, 8], [0, 2, 13]]
)


def test_skillings_mack_published_examples():
    # Skillings and Mack (1981), Table 1: SM = 15.493 on 3 df, p = 0.0014, as published for
    # this example (also in Chatfield and Mander 2009, Stata Journal 9(2), who reproduce it).
    result = skillings_mack(ASSEMBLY)
    assert round(result.statistic, 3) == 15.493
    assert result.df == 3 and round(result.pvalue, 4) == 0.0014
    assert (result.n_raters, result.n_items) == (9, 4)
    # PMCMRplus::skillingsMackTest on its documentation example (Brady 1969): statistic
    # 13.28095, df 2, p-value 0.001306405 (as quoted, to these digits, by the tests of
    # tlsfuzzer's Skillings-Mack implementation, which check themselves against it).
    result = skillings_mack(RHYTHMICITY)
    assert result.statistic == pytest.approx(13.28095, abs=5e-6)
    assert result.pvalue == pytest.approx(0.001306405, rel=1e-6)
    assert result.df == 2


SKILLINGS_MACK_R = pd.read_csv(
    DATA / "r_reference" / "skillings_mack.csv", dtype={"design": str}
).set_index("design")


@pytest.mark.parametrize("design", SKILLINGS_MACK_R.index)
def test_skillings_mack_equals_the_r_package(design):
    # tests/r/skillings_mack.R: the R package Skillings.Mack (Ski.Mack 1.11, R 4.2.2) on
    # Skillings and Mack's Table 1 and on five 7-point designs with ties and missing cells
    # (6 to 40 raters, 5 to 20 items); statistic, df and chi-square p-value.
    matrix = pd.read_csv(DATA / "r_reference" / f"skillings_mack_{design}.csv").to_numpy(float)
    expected = SKILLINGS_MACK_R.loc[design]
    result = skillings_mack(matrix)
    assert result.statistic == pytest.approx(expected["statistic"], rel=1e-9)
    assert result.df == expected["df"]
    assert result.pvalue == pytest.approx(expected["p_value"], rel=1e-7, abs=1e-300)


def test_skillings_mack_with_ties_and_unbalanced_missing_cells():
    # Eight blocks of five treatments, most missing, with ties within a block: the R
    # Skillings.Mack output quoted in tlsfuzzer's tests (test_example_with_many_missing_values):
    # SM = 12.53551, df = 4, p = 0.01378318.
    values = [3, 5, 15, 4, 1, 3, 5, 4, 21, 5, 2, 6, 0, 2, 17, 0, 2, 10, 0, 3, 5, 0, 2, 13]
    groups = [1, 2, 3, 5, 1, 2, 1, 2, 3, 4, 1, 3, 1, 2, 3, 1, 2, 3, 1, 2, 4, 1, 2, 3]
    blocks = [1, 1, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 5, 5, 5, 6, 6, 6, 7, 7, 7, 8, 8, 8]
    matrix = np.full((8, 5), np.nan)
    matrix[np.array(blocks) - 1, np.array(groups) - 1] = values
    result = skillings_mack(matrix)
    assert result.statistic == pytest.approx(12.53551, abs=5e-6)
    assert result.pvalue == pytest.approx(0.01378318, rel=1e-6)
    assert result.df == 4


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 9), st.integers(3, 8), st.integers(0, 2**32 - 1))
def test_skillings_mack_is_friedman_without_missing_cells_or_ties(blocks, treatments, seed):
    # scipy.stats.friedmanchisquare: with complete blocks and no ties SM is Friedman's
    # statistic (Skillings and Mack 1981, Sec. 2).
    rng = np.random.default_rng(seed)
    data = np.argsort(rng.random((blocks, treatments)), axis=1).astype(float)
    result = skillings_mack(data)
    expected = scipy.stats.friedmanchisquare(*data.T)
    assert result.statistic == pytest.approx(expected.statistic, rel=1e-10, abs=1e-10)
    assert result.pvalue == pytest.approx(expected.pvalue, rel=1e-8, abs=1e-12)
    assert result.df == treatments - 1


def _exact_permutation_pvalue(matrix):
    """Every arrangement of every block's values over the cells it observed."""
    observed = ~np.isnan(matrix)
    choices = []
    for row, seen in zip(matrix, observed, strict=True):
        cells = np.flatnonzero(seen)
        arrangements = []
        for order in set(itertools.permutations(row[cells])):
            arranged = np.full(row.shape, np.nan)
            arranged[cells] = order
            arrangements.append(arranged)
        choices.append(arrangements)
    observed_sm = skillings_mack(matrix).statistic
    # Each distinct arrangement of a block comes from equally many orderings of its
    # values, so the distinct arrangements are equally likely.
    statistics = [skillings_mack(np.array(rows)).statistic for rows in itertools.product(*choices)]
    return float(np.mean(np.array(statistics) >= observed_sm - 1e-9))


def test_skillings_mack_permutation_pvalue_matches_exact_enumeration():
    # Four blocks of three treatments, one missing cell, one tie: 6 * 6 * 2 * 3 = 216
    # equally likely arrangements (distinct orders of the tied pair counted once; each
    # block's arrangements are equally likely, so enumeration over distinct ones is exact).
    matrix = np.array([[1.0, 2.0, 3.0], [1.0, 3.0, 2.0], [NAN, 1.0, 2.0], [1.0, 1.0, 2.0]])
    exact = _exact_permutation_pvalue(matrix)
    estimate = skillings_mack(matrix, permutations=20_000, seed=1).permutation_pvalue
    # Monte Carlo error of 20,000 draws: sd <= 0.0036.
    assert estimate == pytest.approx(exact, abs=0.015)
    assert skillings_mack(matrix, permutations=500, seed=2) == skillings_mack(
        matrix, permutations=500, seed=2
    )


def test_skillings_mack_leaves_out_raters_with_one_rating():
    with_single = np.vstack([ASSEMBLY, [NAN, NAN, 4.0, NAN]])
    assert skillings_mack(with_single, permutations=200) == skillings_mack(
        ASSEMBLY, permutations=200
    )
    with pytest.raises(InputError, match="permutations"):
        skillings_mack(ASSEMBLY, permutations=-5)


# --- missing values in any dtype --------------------------------------------------------------

NUMERIC_DTYPES = [
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "Int8",
    "Int16",
    "Int32",
    "Int64",
    "UInt8",
    "UInt16",
    "UInt32",
    "UInt64",
    "Float32",
    "Float64",
]


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_statistics_accept_every_numeric_dtype_with_missing_values(data):
    matrix = rating_matrix(data.draw, max_raters=6, max_units=8)
    dtype = data.draw(st.sampled_from(NUMERIC_DTYPES))
    nullable = dtype[0].isupper() or dtype.startswith("float")
    if not nullable:
        matrix = np.nan_to_num(matrix, nan=4.0)  # plain integers cannot hold a gap
    frame = (
        pd.DataFrame(matrix).astype(dtype)
        if nullable and dtype[0].isupper()
        else pd.DataFrame(matrix.astype(dtype))
    )
    expected_w = kendall_w(matrix)
    for given_ratings in (frame, frame.to_numpy(), frame.to_numpy().tolist()):
        w = kendall_w(given_ratings)
        assert (w.n_raters, w.n_raters_excluded) == (
            expected_w.n_raters,
            expected_w.n_raters_excluded,
        )
        np.testing.assert_equal(w.statistic, expected_w.statistic)
        alpha = krippendorff_alpha(given_ratings, n_resamples=0).statistic
        np.testing.assert_equal(alpha, krippendorff_alpha(matrix, n_resamples=0).statistic)
        sm = skillings_mack(given_ratings).statistic
        np.testing.assert_equal(sm, skillings_mack(matrix).statistic)


def test_kendall_w_of_a_nullable_integer_table():
    # A pandas table of Int64 ratings with gaps, as a ratings pivot gives it.
    table = pd.DataFrame(
        {"a": [1, 2, 3], "b": [2, 1, 3], "c": [1, 3, None], "d": [3, 2, 1]}, dtype="Int64"
    )
    result = kendall_w(table)
    assert (result.n_raters, result.n_items, result.n_raters_excluded) == (2, 4, 1)
    assert result.statistic == pytest.approx(kendall_w(table.iloc[:2].to_numpy(float)).statistic)
    with pytest.raises(InputError, match="expected numbers"):
        kendall_w(pd.DataFrame({"a": ["x", "y"], "b": ["z", "w"]}))


# --- per sketch and overall -------------------------------------------------------------------


def _long(matrix_by_sketch):
    rows = []
    for sketch, matrix in matrix_by_sketch.items():
        for r, row in enumerate(matrix):
            for i, value in enumerate(row):
                rows.append(
                    (
                        f"p{r:02d}",
                        sketch,
                        f"{sketch}_i{i:02d}",
                        "n/a" if np.isnan(value) else str(int(value)),
                    )
                )
    frame = pd.DataFrame(rows, columns=["participant", "sketch_id", "image_id", "rating"])
    return validate_ratings(frame)


@pytest.fixture(scope="module")
def study():
    rng = np.random.default_rng(8)
    matrices = {}
    for s in range(3):
        latent = rng.uniform(1, 7, 10)
        matrix = np.clip(np.rint(latent + rng.normal(0, 1.3, (12, 10))), 1, 7)
        matrix[rng.random(matrix.shape) < 0.08] = np.nan
        matrices[f"s{s}"] = matrix
    matrices["s1"][4] = np.nan  # a participant who never saw sketch s1
    return matrices, _long(matrices)


def test_agreement_by_sketch_against_the_references(study):
    matrices, ratings = study
    table = agreement_by_sketch(ratings, n_resamples=200, permutations=300, seed=1)
    assert list(table.columns) == list(AGREEMENT_COLUMNS)
    w_only = kendall_w_by_sketch(ratings)
    pd.testing.assert_frame_equal(table[list(w_only.columns)], w_only)
    for row in table.itertuples():
        matrix = matrices[row.sketch_id]
        matrix = matrix[~np.isnan(matrix).all(axis=1)]
        assert row.n_raters_all == len(matrix) == row.n_raters + row.n_raters_excluded
        assert row.n_ratings == int((~np.isnan(matrix)).sum())
        for level in ("ordinal", "interval"):
            # krippendorff.alpha on the sketch's raters x images matrix.
            package = krippendorff.alpha(
                matrix, level_of_measurement=level, value_domain=list(range(1, 8))
            )
            assert getattr(row, f"alpha_{level}") == pytest.approx(package, abs=1e-12)
            assert getattr(row, f"alpha_{level}_ci_low") < getattr(row, f"alpha_{level}_ci_high")
        test = skillings_mack(matrix)
        assert row.skillings_mack == pytest.approx(test.statistic, rel=1e-12)
        assert row.skillings_mack_p_value == pytest.approx(test.pvalue, rel=1e-12)
        assert 0 < row.skillings_mack_permutation_p_value <= 1
    assert table.loc[table["sketch_id"] == "s1", "n_raters_all"].item() == 11
    again = agreement_by_sketch(ratings, n_resamples=200, permutations=300, seed=1)
    pd.testing.assert_frame_equal(table, again)


def test_overall_alpha_equals_the_package_on_all_pairs(study):
    matrices, ratings = study
    wide = np.hstack(list(matrices.values()))  # participants x all pairs
    for level in ("ordinal", "interval"):
        result = krippendorff_alpha_overall(ratings, level=level, n_resamples=300, seed=2)
        package = krippendorff.alpha(
            wide, level_of_measurement=level, value_domain=list(range(1, 8))
        )
        assert result.statistic == pytest.approx(package, abs=1e-12)
        assert result.ci_low < result.statistic < result.ci_high
        assert result.n_raters == 12
        assert result.n_values == int((~np.isnan(wide)).sum())
