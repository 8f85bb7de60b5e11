"""One rating cube per analysis: the statistics given it write what they write without it."""

import numpy as np
import pandas as pd
import pytest

from sbir_study.analysis import (
    AnalysisOptions,
    agreement_by_sketch,
    agreement_tables,
    analyze_ratings,
    binned_medians,
    consensus,
    distribution,
    inter_user_tau_pairs,
    kendall_w_by_sketch,
    participant_vs_consensus,
    pipeline,
    rating_cube,
)
from sbir_study.analysis import cube as cube_module
from sbir_study.analysis import participant_table as participant_table_module
from sbir_study.analysis.participant_table import participant_table
from sbir_study.analysis.simulate import StudyDesign, simulate_study


@pytest.fixture(scope="module")
def trials() -> pd.DataFrame:
    # Missed response windows, so that the cube holds NaN where a participant saw a pair but did
    # not rate it, and W stands on fewer raters than alpha.
    table, _ = simulate_study(StudyDesign(sketches=4, images_per_sketch=6, participants=9), seed=3)
    table = table.copy()
    missed = np.random.default_rng(3).random(len(table)) < 0.05
    table.loc[missed & (table["phase"] == "main").to_numpy(), "rating"] = np.nan
    return table


def _main_cube(trials: pd.DataFrame):
    return rating_cube(trials[trials["phase"] == "main"])


def test_statistics_given_the_cube_equal_those_that_build_it(trials):
    # Reference: the same function called with the ratings table alone (it builds the cube).
    cube = _main_cube(trials)
    options = {"n_resamples": 50, "permutations": 50, "seed": 2}
    pd.testing.assert_frame_equal(
        agreement_by_sketch(trials, **options, cube=cube), agreement_by_sketch(trials, **options)
    )
    pd.testing.assert_frame_equal(
        kendall_w_by_sketch(trials, cube=cube), kendall_w_by_sketch(trials)
    )
    pd.testing.assert_frame_equal(
        participant_vs_consensus(trials, alternative="two-sided", cube=cube),
        participant_vs_consensus(trials, alternative="two-sided"),
    )
    pd.testing.assert_frame_equal(binned_medians(trials, cube=cube), binned_medians(trials))
    by_consensus = participant_vs_consensus(trials)
    pd.testing.assert_frame_equal(
        participant_table(trials, by_consensus, cube=cube), participant_table(trials, by_consensus)
    )
    given = list(inter_user_tau_pairs(trials, max_raters=5, seed=1, cube=cube))
    built = list(inter_user_tau_pairs(trials, max_raters=5, seed=1))
    assert len(given) == len(built) == len(cube.sketches)
    for ours, reference in zip(given, built, strict=True):
        assert ours.sketch_id == reference.sketch_id
        for field in (
            "participants",
            "participant_a",
            "participant_b",
            "statistic",
            "pvalue",
            "n_items",
        ):
            np.testing.assert_array_equal(getattr(ours, field), getattr(reference, field))


def test_analyze_builds_the_cube_of_the_main_phase_once(trials, tmp_path, monkeypatch):
    built = []

    def counted(ratings, column="rating"):
        if (ratings["phase"] == "main").all():
            built.append(len(ratings))
        return rating_cube(ratings, column)

    # raising=False: a module that builds its cube through cube.main_phase_cube holds no
    # rating_cube of its own, and one that imports it later is counted all the same.
    for module in (
        agreement_tables,
        consensus,
        distribution,
        pipeline,
        participant_table_module,
        cube_module,
    ):
        monkeypatch.setattr(module, "rating_cube", counted, raising=False)
    analyze_ratings(
        trials, tmp_path / "out", AnalysisOptions(bootstrap=20, permutations=20), figures=False
    )
    assert built == [int((trials["phase"] == "main").sum())]
