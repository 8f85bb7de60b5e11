"""Power by simulation: reproducible whatever the jobs; closer ground truth with more
participants."""

import os

import numpy as np
import pandas as pd

from sbir_study.analysis import StudyDesign
from sbir_study.analysis.power import PowerOptions, power_analysis, summarize_power

SMALL = PowerOptions(
    counts=(3, 12), replications=4, reference=30, seed=8,
    design=StudyDesign(sketches=4, images_per_sketch=12),
)  # fmt: skip


def test_power_is_reproducible_whatever_the_jobs():
    one = power_analysis(SMALL, jobs=1)
    two = power_analysis(SMALL, jobs=2)
    pd.testing.assert_frame_equal(one, two)
    assert len(one) == 4 * 2
    other = power_analysis(PowerOptions(**{**SMALL.__dict__, "seed": 9}))
    assert not one.equals(other)


def test_more_participants_give_a_closer_ground_truth():
    summary = summarize_power(power_analysis(SMALL)).set_index("participants")
    assert summary.loc[12, "tau_median"] > summary.loc[3, "tau_median"]
    assert summary.loc[12, "inter_user_wilson_width"] < summary.loc[3, "inter_user_wilson_width"]
    assert summary["w_significant_share"].between(0, 1).all()
    assert np.all(summary["inter_user_share_p025"] <= summary["inter_user_share_p975"])


def test_workers_use_one_blas_thread_each():
    # The workers start when work is handed out; each must see the variables that
    # keep its BLAS to one thread, or two workers of threaded BLAS oversubscribe.
    from sbir_study.analysis.power import _THREAD_VARIABLES, _single_threaded_workers

    with _single_threaded_workers(2) as pool:
        seen = list(pool.map(os.getenv, _THREAD_VARIABLES))
    assert seen == ["1"] * len(_THREAD_VARIABLES)
