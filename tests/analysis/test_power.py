"""Power by simulation: reproducible whatever the jobs; closer ground truth with more
participants."""

import os

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sbir_study.analysis import StudyDesign
from sbir_study.analysis.power import PowerOptions, power_analysis, summarize_power

SMALL = PowerOptions(
    counts=(3, 12),
    replications=4,
    reference=30,
    seed=8,
    design=StudyDesign(sketches=4, images_per_sketch=12),
)


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


def _pilot(seed: int, participants: int = 6) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for sketch in ("a", "b"):
        order = rng.permutation(8)
        for p in range(participants):
            ratings = np.clip(np.round(1 + order * 0.8 + rng.normal(0, 1.5, 8)), 1, 7)
            rows += [(f"p{p}", sketch, f"i{i}", float(r)) for i, r in enumerate(ratings)]
    table = pd.DataFrame(rows, columns=["participant", "sketch_id", "image_id", "rating"])
    return table.assign(phase="main")


def test_raters_for_reliability_inverts_the_prophecy_of_the_pilots_split_half():
    # Reference: the pilot's split halves drawn again from the seed, Spearman's rho between
    # their mean ratings from scipy.stats.spearmanr, then Spearman-Brown written out here:
    # r1 = r / (h - (h - 1) r) for halves of h raters, m = r (1 - r1) / (r1 (1 - r)) rounded up.
    import scipy.stats

    from sbir_study.analysis.power import raters_for_reliability

    pilot = _pilot(3)
    table = raters_for_reliability(pilot, target=0.9, n_splits=30, seed=2).set_index("sketch_id")
    keys = np.random.default_rng(2).random((30, 6))
    for sketch in ("a", "b"):
        wide = pilot[pilot["sketch_id"] == sketch].pivot(
            index="participant", columns="image_id", values="rating"
        )
        rhos = []
        for split in keys:
            first = np.argsort(split)[:3]
            halves = np.zeros(6, dtype=bool)
            halves[first] = True
            rhos.append(scipy.stats.spearmanr(wide[halves].mean(), wide[~halves].mean()).statistic)
        r = np.mean(rhos)
        r1 = r / (3 - 2 * r)
        needed = int(np.ceil(0.9 * (1 - r1) / (r1 * 0.1)))
        assert table.loc[sketch, "rho_half"] == pytest.approx(r, rel=1e-12)
        assert table.loc[sketch, "r1"] == pytest.approx(r1, rel=1e-12)
        assert table.loc[sketch, "raters_needed"] == needed
        assert table.loc[sketch, "target"] == 0.9


def test_identical_raters_need_one_and_bad_targets_are_refused():
    from sbir_study.analysis.power import raters_for_reliability
    from sbir_study.foundation.checks import InputError

    pilot = _pilot(4)
    pilot["rating"] = pilot.groupby(["sketch_id", "image_id"])["rating"].transform("first")
    table = raters_for_reliability(pilot, n_splits=5)
    assert (table["raters_needed"] == 1).all()
    with pytest.raises(InputError, match="reliability"):
        raters_for_reliability(pilot, target=1.0)


def test_power_cli_answers_raters_for_a_reliability_from_a_pilot(tmp_path):
    from tests.helpers import assert_input_error, run_main

    path = tmp_path / "pilot.csv"
    _pilot(5).to_csv(path, index=False)
    common = [
        "power",
        "--participants",
        "2,3",
        "--replications",
        "1",
        "--reference",
        "2",
        "--sketches",
        "2",
        "--images",
        "5",
        "--pilot",
        str(path),
    ]
    result = run_main(
        *common,
        "--out",
        str(tmp_path / "out"),
        "--reliability",
        "0.9",
        "--reliability-splits",
        "40",
    )
    assert result.returncode == 0, result.stderr
    table = pd.read_csv(tmp_path / "out" / "power_reliability.csv")
    assert table["sketch_id"].tolist() == ["a", "b", "all"]
    assert (table["target"] == 0.9).all()
    needed = int(table.set_index("sketch_id").loc["all", "raters_needed"])
    assert f"a consensus of {needed} raters reaches reliability 0.9" in result.stdout
    bad = run_main(*common, "--out", str(tmp_path / "bad"), "--reliability", "1.5")
    assert_input_error(bad, "--reliability", "between 0 and 1")
    assert not (tmp_path / "bad").exists()


@settings(max_examples=200, deadline=None)
@given(text=st.one_of(st.floats().map(repr), st.text(max_size=8)))
def test_reliability_option_takes_exactly_the_numbers_between_0_and_1(text):
    import argparse

    from sbir_study.cli.power import _reliability_target

    try:
        expected = float(text)
    except ValueError:
        expected = None
    if expected is not None and 0.0 < expected < 1.0:
        assert _reliability_target(text) == expected
    else:
        with pytest.raises(argparse.ArgumentTypeError, match="between 0 and 1"):
            _reliability_target(text)
