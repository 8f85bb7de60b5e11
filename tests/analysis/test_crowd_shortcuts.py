"""The shortcuts that keep crowd-size analysis fast give what the plain call gives.

Each is checked against the pandas or NumPy call it stands for (the oracle named in
each test), over generated inputs: missing cells, categories no row uses, blanks around
labels, ties, NaN and infinities, numbers past int64.
"""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.multitest import multipletests

from sbir_study.analysis import _kernels, agreement_tables, corrections, pipeline, reliability
from sbir_study.analysis import cube as cube_module
from sbir_study.analysis import validation as validation_module
from sbir_study.foundation.scale import Scale

CELLS = st.sampled_from(["a", " a", "a ", "b", "01", "1", "x y", "", "n/a", "Ä", "s 1"])


@st.composite
def categorical_columns(draw):
    """A categorical column as the reader gives one, or not: unused categories, a missing
    cell, or a plain object column."""
    values = draw(st.lists(CELLS, min_size=1, max_size=30))
    kind = draw(st.sampled_from(["categorical", "unused categories", "missing", "object"]))
    if kind == "object":
        return pd.Series(values, dtype=object)
    categories = sorted(set(values) | ({"unused", " b "} if kind == "unused categories" else set()))
    column = pd.Series(pd.Categorical(values, categories=categories))
    if kind == "missing":
        column[draw(st.integers(0, len(values) - 1))] = np.nan
    return column


@settings(max_examples=200, deadline=None)
@given(categorical_columns())
def test_labels_from_the_codes_are_the_labels_from_factorize(column):
    # Oracle: the labels as pd.factorize gives the distinct cells (the code before the shortcut).
    codes, uniques = pd.factorize(column, use_na_sentinel=False)
    stripped = pd.Index(uniques).astype(str).str.strip()
    merged, categories = pd.factorize(stripped, sort=True)
    expected = pd.Categorical.from_codes(merged[codes], categories=categories)
    got = validation_module._labels(column)
    assert got.equals(expected)
    assert list(got.categories) == list(expected.categories)
    assert got.categories.dtype == expected.categories.dtype
    np.testing.assert_array_equal(got.codes, expected.codes)


WHOLE = st.one_of(
    st.integers(-(2**70), 2**70).map(float),
    st.sampled_from([0.0, -0.0, 1.0, 7.0, float("nan"), 2.0**63, -(2.0**63), 2.0**63 - 1024]),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(WHOLE, min_size=1, max_size=8), st.data())
def test_an_integer_column_from_its_parts_is_the_astype_column(distinct, data):
    values = np.array(distinct, dtype=np.float64)
    codes = np.array(
        data.draw(st.lists(st.integers(0, len(values) - 1), max_size=25)), dtype=np.intp
    )
    index = pd.RangeIndex(len(codes))
    column = validation_module._Distinct(codes, np.array([], dtype=object), values, np.array([]))
    # Oracle: pandas' own conversion of the spread floats (which refuses what int64 cannot hold).
    try:
        expected = pd.Series(values[codes], index=index).astype("Int64")
    except (TypeError, ValueError) as error:
        with pytest.raises(type(error)):
            column.rows(values, index, "Int64")
        return
    got = column.rows(values, index, "Int64")
    pd.testing.assert_series_equal(got, expected)
    assert got.dtype == "Int64"


@st.composite
def rated_tables(draw):
    """Main-phase rows: sketches and participants as categoricals (unused categories, a
    missing label) or as text."""
    rows = draw(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 6)), max_size=40))
    sketches = [f"s{s}" for s, _ in rows]
    participants = [f"p {p}" for _, p in rows]
    table = pd.DataFrame({"sketch_id": sketches, "participant": participants}, dtype=object)
    if draw(st.booleans()):
        for name, extra in (("sketch_id", "s9"), ("participant", "p 9")):
            table[name] = pd.Categorical(table[name], categories=sorted(set(table[name]) | {extra}))
        if rows and draw(st.booleans()):
            table.loc[
                draw(st.integers(0, len(rows) - 1)),
                draw(st.sampled_from(["sketch_id", "participant"])),
            ] = np.nan
    return table


@settings(max_examples=200, deadline=None)
@given(rated_tables())
def test_raters_by_sketch_are_groupby_nunique(table):
    # Oracle: pandas' count of distinct participants per sketch (what the shortcut replaced).
    expected = table.groupby("sketch_id", observed=True)["participant"].nunique().to_numpy()
    np.testing.assert_array_equal(pipeline._raters_by_sketch(table), expected)


ROW_VALUES = st.sampled_from(
    [0.0, -0.0, 1.0, 1.5, 2.0, 7.0, float("nan"), float("inf"), float("-inf"), 1e-300, 3.0]
)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 6), st.integers(0, 9), st.data())
def test_tie_group_sizes_are_the_counts_of_each_distinct_value(rows, columns, data):
    x = np.array(
        data.draw(st.lists(ROW_VALUES, min_size=rows * columns, max_size=rows * columns)),
        dtype=np.float64,
    ).reshape(rows, columns)
    got = _kernels.tie_group_sizes(x)
    assert got.shape == (rows, columns)
    for row, sizes in zip(x, got, strict=True):
        # Oracle: np.unique's counts of the row's values, smallest first, NaN left out.
        _, counts = np.unique(row[~np.isnan(row)], return_counts=True)
        np.testing.assert_array_equal(sizes, np.pad(counts, (0, columns - counts.size)))


P_VALUES = st.sampled_from([0.0, 1e-300, 0.01, 0.05, 0.0500001, 0.5, 1.0, float("nan")])


@settings(max_examples=100, deadline=None)
@given(st.lists(P_VALUES, min_size=1, max_size=60))
def test_the_benjamini_hochberg_count_without_a_sort_is_statsmodels_count(values):
    p = np.array(values, dtype=np.float64)
    defined = p[~np.isnan(p)]
    got = corrections.benjamini_hochberg_count(p, 0.05)
    # Oracle: statsmodels' Benjamini-Hochberg rejections over the defined p-values.
    expected = int(multipletests(defined, 0.05, method="fdr_bh")[0].sum()) if defined.size else 0
    assert got == expected


@st.composite
def alpha_tables(draw):
    """Ratings of a 1-7 scale in any row order, some missing or of another phase, with the
    labels as categoricals (unused categories, categories in any order, a missing label)."""
    rows = draw(
        st.lists(
            st.tuples(
                st.integers(0, 3),
                st.integers(0, 3),
                st.integers(0, 5),
                st.sampled_from([1, 2, 3, 4, 5, 6, 7, None]),
                st.sampled_from(["main", "main", "anchor_repeat"]),
            ),
            min_size=1,
            max_size=40,
        )
    )
    table = pd.DataFrame(
        {
            "participant": [f"p {p}" for p, *_ in rows],
            "sketch_id": [f"s{s}" for _, s, *_ in rows],
            "image_id": [f"i{s}-{i}" for _, s, i, *_ in rows],
            "rating": pd.array([r for *_, r, _ in rows], dtype="Int64"),
            "phase": [phase for *_, phase in rows],
        }
    )
    for name in ("participant", "sketch_id", "image_id"):
        categories = sorted(set(table[name]) | {f"{name} unused"})
        if draw(st.booleans()):
            categories.reverse()
        table[name] = pd.Categorical(table[name], categories=categories)
    if draw(st.booleans()):
        row = draw(st.integers(0, len(rows) - 1))
        table.loc[row, draw(st.sampled_from(["participant", "sketch_id", "image_id"]))] = np.nan
    return table


@settings(max_examples=200, deadline=None)
@given(alpha_tables())
def test_alpha_from_the_codes_is_alpha_from_factorized_labels(table):
    scale = Scale(1, 7)
    got = agreement_tables.alpha_at_levels(
        table, ("ordinal", "interval"), n_resamples=30, seed=3, scale=scale
    )
    # Oracle: the same table with its labels as text, which alpha_at_levels numbers with
    # pd.factorize (the units in the order of their first rows, as the bootstrap draws them).
    text = table.astype({name: object for name in ("participant", "sketch_id", "image_id")})
    expected = agreement_tables.alpha_at_levels(
        text, ("ordinal", "interval"), n_resamples=30, seed=3, scale=scale
    )
    for level in ("ordinal", "interval"):
        assert np.array_equal(
            np.array(got[level][:3]), np.array(expected[level][:3]), equal_nan=True
        )
        assert got[level][3:] == expected[level][3:]


@settings(max_examples=200, deadline=None)
@given(categorical_columns(), st.booleans())
def test_sorted_cells_from_the_codes_are_factorize_sorted(column, shuffled):
    if shuffled and isinstance(column.dtype, pd.CategoricalDtype):
        column = column.cat.reorder_categories(column.cat.categories[::-1])
    # Oracle: pandas' factorize with its distinct cells sorted (the code before the shortcut).
    codes, distinct = pd.factorize(column, sort=True)
    got_codes, got_distinct = cube_module._sorted_cells(column)
    np.testing.assert_array_equal(got_codes, codes)
    assert got_codes.dtype == np.intp
    assert got_distinct.dtype == object
    assert list(got_distinct) == list(np.asarray(distinct, dtype=object))


RATINGS = st.sampled_from(
    [1.0, 2.0, 7.0, 0.0, -3.0, 2.5, 0.1, 1 / 3, 2.0**20, 2.0**23, float("nan")]
)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 9), st.integers(1, 6), st.integers(1, 4), st.data())
def test_half_means_in_single_precision_are_the_double_precision_means(
    raters, images, splits, data
):
    values = np.array(
        data.draw(st.lists(RATINGS, min_size=raters * images, max_size=raters * images)),
        dtype=np.float64,
    ).reshape(raters, images)
    cells = splits * raters
    half = np.array(data.draw(st.lists(st.booleans(), min_size=cells, max_size=cells)))
    half = half.reshape(splits, raters)
    # Oracle: the sums and counts as double-precision products (NumPy), then the means.
    rated = ~np.isnan(values)
    total = half.astype(np.float64) @ np.where(rated, values, 0.0)
    count = half.astype(np.float64) @ rated.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = np.where(count > 0, total / count, np.nan)
    got = reliability._half_means(values, half)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, expected)


KEYS = st.sampled_from([0.0, 0.25, 0.5, 0.5, 0.75, 1e-300, 0.9999])


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 12), st.integers(1, 4), st.data())
def test_the_first_half_by_partition_is_the_first_half_by_stable_sort(participants, splits, data):
    cells = splits * participants
    keys = np.array(data.draw(st.lists(KEYS, min_size=cells, max_size=cells))).reshape(
        splits, participants
    )
    raters = np.array(
        data.draw(st.lists(st.booleans(), min_size=participants, max_size=participants))
    )
    # Oracle: the raters' ranks in a stable sort of the keys (NumPy), the first half of them.
    order = np.argsort(np.where(raters, keys, np.inf), axis=1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(participants)[None, :], axis=1)
    expected = rank < raters.sum() // 2
    np.testing.assert_array_equal(reliability._first_half(keys, raters), expected)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 5),
            st.integers(0, 2),
            st.integers(0, 3),
            st.sampled_from([1, 2, 4, 7, None]),
        ),
        min_size=1,
        max_size=40,
    ),
    st.sampled_from([0, 30]),
    st.integers(0, 3),
)
def test_alpha_at_both_levels_from_one_count_is_alpha_at_each(rows, resamples, seed):
    table = pd.DataFrame(
        [(f"p{p}", f"s{s}", f"i{i}", "main", r) for p, s, i, r in rows],
        columns=["participant", "sketch_id", "image_id", "phase", "rating"],
    ).drop_duplicates(["participant", "sketch_id", "image_id"])
    table["rating"] = table["rating"].astype("Float64")
    got = agreement_tables.alpha_at_levels(
        table, ("ordinal", "interval"), n_resamples=resamples, seed=seed
    )
    for level in ("ordinal", "interval"):
        # Each level alone, as analyze asked for them before (the values themselves are
        # checked against the krippendorff package in test_analyze.py and test_undefined.py).
        expected = agreement_tables.krippendorff_alpha_overall(
            table, level=level, n_resamples=resamples, seed=seed
        )
        assert got[level]._fields == expected._fields
        for mine, theirs in zip(got[level], expected, strict=True):
            assert mine == theirs or (mine != mine and theirs != theirs)
