"""analyze's long tables, written by pyarrow.csv, read back by pandas as they were written."""

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from sbir_study.analysis.table_writers import write_csv

#: Any float64 bit pattern: subnormals, both zeros, infinities, NaN payloads.
ANY_BITS = st.integers(-(2**63), 2**63 - 1).map(lambda bits: float(np.int64(bits).view(np.float64)))
FLOATS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    ANY_BITS,
    st.sampled_from([0.0, -0.0, 1.0, 1e-5, 1e16, 1e22, 0.1, 1 / 3, 5e-324, float("nan")]),
)
TEXT = st.text(st.sampled_from('ab ,"\n\r\tä'), max_size=4)


@st.composite
def tables(draw):
    """A table of the columns analyze writes, in any number (two or more) and order: floats
    with repeats, whole numbers to the int64 limits, booleans, and text (plain, categorical
    or either of pandas' string types, with missing cells) that may hold separators, quotes
    and line breaks; names that may need quoting too."""
    rows = draw(st.integers(0, 12))
    pool = draw(st.lists(FLOATS, min_size=1, max_size=5))
    kinds = draw(
        st.lists(
            st.sampled_from(["float", "int", "bool", "object", "category", "string", "str"]),
            min_size=2,
            max_size=6,
        )
    )
    names = [f"{name}{k}" for k, name in enumerate(draw(st.permutations(NAMES))[: len(kinds)])]
    columns = {}
    for name, kind in zip(names, kinds, strict=True):
        if kind == "float":
            values = draw(st.lists(st.sampled_from(pool) | FLOATS, min_size=rows, max_size=rows))
            columns[name] = np.array(values, dtype=np.float64)
        elif kind == "int":
            values = draw(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=rows, max_size=rows))
            columns[name] = np.array(values, dtype=np.int64)
        elif kind == "bool":
            columns[name] = np.array(
                draw(st.lists(st.booleans(), min_size=rows, max_size=rows)), dtype=bool
            )
        else:
            values = draw(st.lists(TEXT | st.none(), min_size=rows, max_size=rows))
            if kind == "object":
                columns[name] = pd.Series(values, dtype=object)
            elif kind == "category":
                columns[name] = pd.Categorical(values)
            else:  # pandas' string types: missing as pd.NA ("string") or as NaN ("str")
                columns[name] = pd.Series(values, dtype=kind)
    return pd.DataFrame(columns, index=pd.RangeIndex(rows))


NAMES = ["tau_b", "n_items", "reason", "a,b", 'say "x"', "p value"]


@settings(max_examples=400, deadline=None)
@given(tables())
def test_every_value_reads_back_as_written(table):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "table.csv"
        write_csv(table, path)
        floats = [c for c in table if table[c].dtype == np.float64]
        whole = [c for c in table if table[c].dtype == np.int64]
        # Oracle: pandas' reader, each column read as the type it was written as.
        back = pd.read_csv(
            path,
            dtype={
                c: ("float64" if c in floats else "int64" if c in whole else str) for c in table
            },
            keep_default_na=False,
            na_values={c: [""] for c in floats},
        )
    assert list(back.columns) == list(table.columns)
    assert len(back) == len(table)
    for name in table:
        written = table[name]
        if name in floats:
            expected, got = written.to_numpy(), back[name].to_numpy()
            # Bit for bit, but that every NaN is one NaN (a missing value).
            assert np.array_equal(np.isnan(got), np.isnan(expected)), name
            defined = ~np.isnan(expected)
            assert got[defined].view(np.int64).tolist() == expected[defined].view(np.int64).tolist()
        elif name in whole:
            assert back[name].tolist() == written.tolist(), name
        elif written.dtype == bool:
            assert back[name].tolist() == [str(v) for v in written.tolist()], name
        else:  # text: a missing cell reads back empty
            expected = [v if isinstance(v, str) else "" for v in written.astype(object).tolist()]
            assert back[name].tolist() == expected, name
