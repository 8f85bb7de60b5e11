"""The counts of ``summary.json`` taken from columns, not from per-group copies of the table,
against a plain count over the rows (``collections.Counter``)."""

from __future__ import annotations

from collections import Counter

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from sbir_study.analysis.summary import _phase_counts

PHASES = ["anchor", "anchor_repeat", "main", "practice"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(PHASES), st.one_of(st.none(), st.integers(1, 9))),
        min_size=1,
        max_size=60,
    ),
    st.booleans(),
)
def test_phase_counts_are_those_of_the_rows(rows, categorical):
    """Every phase that has a row, in sorted order, with its trials and missing ratings;
    a category no row has (practice trials dropped before the statistics) is not listed."""
    phase = [p for p, _ in rows]
    table = pd.DataFrame(
        {
            "phase": pd.Categorical(phase, categories=PHASES) if categorical else phase,
            "rating": pd.array([r for _, r in rows], dtype="Int64"),
        }
    )
    trials = Counter(phase)
    missing = Counter(p for p, r in rows if r is None)
    expected = {p: {"n_trials": trials[p], "n_missing": missing[p]} for p in sorted(trials)}
    found = _phase_counts(table)
    assert found == expected
    assert list(found) == sorted(trials)
    assert all(type(v) is int for counts in found.values() for v in counts.values())
