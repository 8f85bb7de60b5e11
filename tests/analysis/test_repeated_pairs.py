"""The quick check for a pair rated twice in a phase decides as pandas' duplicated does."""

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from sbir_study.analysis.validation import _ONCE_PER_PHASE, _any_repeated

KEY = ["participant", "sketch_id", "image_id", "phase"]
PHASES = ["practice", "main", "anchor_demo", "anchor_repeat"]
PHASES_TYPE = pd.CategoricalDtype(PHASES)


@settings(max_examples=100, deadline=None)
@given(st.data(), st.integers(0, 30), st.booleans())
def test_any_repeated_is_pandas_duplicated(data, rows, categorical):
    labels = st.one_of(st.none(), st.sampled_from(["a", "b", "c", "10", "1"]))
    table = pd.DataFrame(
        {
            "participant": data.draw(st.lists(labels, min_size=rows, max_size=rows)),
            "sketch_id": data.draw(st.lists(labels, min_size=rows, max_size=rows)),
            "image_id": data.draw(st.lists(labels, min_size=rows, max_size=rows)),
            "phase": data.draw(st.lists(st.sampled_from(PHASES), min_size=rows, max_size=rows)),
        }
    )
    if categorical:
        # Unused categories too, as a filtered table keeps them.
        dtype = pd.CategoricalDtype(["a", "b", "c", "10", "1", "z"])
        table = table.astype(dict.fromkeys(KEY[:3], dtype) | {"phase": PHASES_TYPE})
    # pandas' DataFrame.duplicated (missing labels equal to each other) is the reference.
    expected = table[table["phase"].isin(_ONCE_PER_PHASE)].duplicated(KEY).any()
    assert _any_repeated(table, KEY) == bool(expected)


def test_any_repeated_at_scale_finds_the_one_repeat():
    rng = np.random.default_rng(0)
    n = 200_000
    codes = np.unravel_index(rng.permutation(500 * 40 * 20)[:n], (500, 40, 20))
    table = pd.DataFrame(
        {
            "participant": pd.Categorical.from_codes(codes[0], [f"p{i}" for i in range(500)]),
            "sketch_id": pd.Categorical.from_codes(codes[1], [f"s{i}" for i in range(40)]),
            "image_id": pd.Categorical.from_codes(codes[2], [f"i{i}" for i in range(20)]),
            "phase": pd.Categorical(["main"] * n, categories=PHASES),
        }
    )
    assert not _any_repeated(table, KEY)
    table = pd.concat([table, table.iloc[[12345]]], ignore_index=True)
    assert _any_repeated(table, KEY)
    table.loc[n, "phase"] = "practice"  # practice trials may repeat
    assert not _any_repeated(table, KEY)
