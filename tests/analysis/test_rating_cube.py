"""The sketches x participants x images array every agreement statistic starts from.

Reference: ``pandas.DataFrame.pivot_table`` of the same rows, one sketch at a time.
"""

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from sbir_study.analysis.cube import main_phase_cube, rating_cube


@st.composite
def tables(draw):
    """Rows of (participant, sketch, image, rating): sketches with their own images, any
    subset of the cells present, ratings 1..7 or missing, rows in any order."""
    n_sketches = draw(st.integers(1, 4))
    images = {
        f"s {k}": [f"i{k}_{j}" for j in range(draw(st.integers(1, 5)))] for k in range(n_sketches)
    }
    participants = [f"p{k:02d}" for k in range(draw(st.integers(1, 5)))]
    cells = [(p, s, i) for p in participants for s, names in images.items() for i in names]
    kept = draw(st.lists(st.sampled_from(cells), min_size=1, unique=True))
    ratings = draw(
        st.lists(st.one_of(st.integers(1, 7), st.none()), min_size=len(kept), max_size=len(kept))
    )
    frame = pd.DataFrame(kept, columns=["participant", "sketch_id", "image_id"])
    return frame.assign(rating=pd.array(ratings, dtype="Int64"))


@settings(max_examples=150, deadline=None)
@given(tables())
def test_the_cube_holds_each_rating_where_the_pivot_puts_it(table):
    cube = rating_cube(table)
    assert cube.sketches.tolist() == sorted(table["sketch_id"].unique())
    assert cube.participants.tolist() == sorted(table["participant"].unique())
    for index, sketch in enumerate(cube.sketches):
        rows = table[table["sketch_id"] == sketch]
        expected = rows.pivot_table(
            index="participant", columns="image_id", values="rating", aggfunc="first", dropna=False
        )
        expected = expected.reindex(
            index=cube.participants, columns=sorted(rows["image_id"].unique())
        )
        assert cube.images[index].tolist() == expected.columns.tolist()
        got = cube.sketch(index)
        np.testing.assert_array_equal(got, expected.to_numpy(dtype=float, na_value=np.nan))
    width = max(len(names) for names in cube.images)
    assert cube.values.shape == (len(cube.sketches), len(cube.participants), width)
    for index, names in enumerate(cube.images):  # padding beyond a sketch's own images
        assert np.isnan(cube.values[index, :, len(names) :]).all()


@settings(max_examples=100, deadline=None)
@given(tables(), st.data())
def test_the_main_phase_cube_is_built_from_the_main_rows_only(table, data):
    # Reference: rating_cube of the rows a boolean mask keeps (pandas), or None without any.
    phases = data.draw(
        st.lists(
            st.sampled_from(["main", "practice", "anchor_repeat"]),
            min_size=len(table),
            max_size=len(table),
        )
    )
    table = table.assign(phase=phases)
    main = table[table["phase"] == "main"]
    cube = main_phase_cube(table)
    if main.empty:
        assert cube is None
        return
    expected = rating_cube(main)
    for field in ("sketches", "participants", "values"):
        np.testing.assert_array_equal(getattr(cube, field), getattr(expected, field))
    assert [names.tolist() for names in cube.images] == [
        names.tolist() for names in expected.images
    ]
    # A cube the caller already has is used as it is, not built again.
    assert main_phase_cube(table, expected) is expected
