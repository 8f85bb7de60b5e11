"""Inter-user tau_b over the pairs among a random sample of a sketch's raters (crowd size).

Above ``max_raters`` raters of a sketch, :func:`sbir_study.analysis.inter_user_tau_pairs`
draws that many of them and gives every pair among them; each pair's tau_b and
p-value are those of the two raters over the items both gave (reference:
``scipy.stats.kendalltau``, asymptotic, tie-corrected), the draw is fixed by
the seed and the sketch id, and the files and report say how many raters the
pairs stand on.
"""

import json

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from sbir_study.analysis import AnalysisOptions, analyze_ratings, inter_user_tau_pairs
from sbir_study.analysis.simulate import StudyDesign, simulate_study
from sbir_study.foundation.checks import InputError
from tests.helpers import run_main


def crowd(participants: int, sketches: int, images: int, seed: int, missing: float = 0.05):
    """A main-phase ratings table: each participant a noisy view of one latent order per sketch."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(sketches):
        latent = rng.uniform(1, 7, images)
        values = np.clip(np.rint(latent + rng.normal(0, 1.2, (participants, images))), 1, 7)
        values[rng.random(values.shape) < missing] = np.nan
        for r in range(participants):
            rows += [(f"p {r:04d}", f"s{s}", f"i{i}", values[r, i]) for i in range(images)]
    table = pd.DataFrame(rows, columns=["participant", "sketch_id", "image_id", "rating"])
    return table.assign(phase="main")


def by_label(pairs) -> dict:
    labels = pairs.participants
    return {
        (labels[a], labels[b]): (t, p, n)
        for a, b, t, p, n in zip(
            pairs.participant_a,
            pairs.participant_b,
            pairs.statistic,
            pairs.pvalue,
            pairs.n_items,
            strict=True,
        )
    }


def test_no_sample_up_to_the_cap():
    table = crowd(12, 2, 6, seed=1)
    for capped, every in zip(
        inter_user_tau_pairs(table, max_raters=12), inter_user_tau_pairs(table), strict=True
    ):
        assert capped.participants.tolist() == every.participants.tolist()
        assert capped.n_raters_total == every.n_raters_total == 12
        for mine, theirs in zip(capped[2:7], every[2:7], strict=True):
            np.testing.assert_array_equal(mine, theirs)


def test_sampled_pairs_are_every_pair_among_the_drawn_raters_scipy_reference():
    table = crowd(40, 3, 8, seed=2, missing=0.15)
    wide = table.pivot_table(
        index=["sketch_id", "participant"], columns="image_id", values="rating", dropna=False
    )
    for pairs in inter_user_tau_pairs(table, max_raters=9, seed=11):
        assert pairs.n_raters_total == 40 and pairs.participants.size == 9
        assert list(pairs.participants) == sorted(pairs.participants)
        found = by_label(pairs)
        drawn = list(pairs.participants)
        expected_pairs = {(a, b) for i, a in enumerate(drawn) for b in drawn[i + 1 :]}
        assert set(found) == expected_pairs  # 15% missing of 8 items: every pair shares some
        for (a, b), (tau, p, n) in found.items():
            x, y = (
                wide.loc[(pairs.sketch_id, a)].to_numpy(),
                wide.loc[(pairs.sketch_id, b)].to_numpy(),
            )
            both = ~np.isnan(x) & ~np.isnan(y)
            assert n == both.sum()
            reference = scipy.stats.kendalltau(
                x[both], y[both], alternative="greater", method="asymptotic"
            )
            assert tau == pytest.approx(reference.statistic, abs=1e-12, nan_ok=True)
            assert p == pytest.approx(reference.pvalue, abs=1e-12, nan_ok=True)


def test_the_draw_is_fixed_by_the_seed_and_the_sketch_alone():
    table = crowd(30, 3, 5, seed=3)

    def drawn(frame, seed):
        return {
            p.sketch_id: p.participants.tolist()
            for p in inter_user_tau_pairs(frame, max_raters=6, seed=seed)
        }

    first, again, other = drawn(table, 7), drawn(table, 7), drawn(table, 8)
    assert first == again
    assert first != other
    # Without sketch s0 in the table, s1 and s2 draw the same raters as before.
    without = drawn(table[table["sketch_id"] != "s0"], 7)
    assert without == {k: v for k, v in first.items() if k != "s0"}


@settings(max_examples=40, deadline=None)
@given(st.integers(3, 12), st.integers(2, 6), st.integers(2, 14), st.integers(0, 2**32 - 1))
def test_every_sampled_pair_equals_the_same_pair_unsampled(participants, images, cap, seed):
    # Reference: the computation over every pair (itself checked against SciPy in
    # test_agreement.py). Whatever the sizes, a sampled pair's numbers are that pair's.
    table = crowd(participants, 2, images, seed=seed % 1000, missing=0.3)
    for sampled, every in zip(
        inter_user_tau_pairs(table, max_raters=cap, seed=seed),
        inter_user_tau_pairs(table),
        strict=True,
    ):
        assert sampled.n_raters_total == every.participants.size
        assert sampled.participants.size == min(cap, every.participants.size)
        assert set(sampled.participants) <= set(every.participants)
        full = by_label(every)
        chosen = set(sampled.participants)
        among = {pair: v for pair, v in full.items() if set(pair) <= chosen}
        found = by_label(sampled)
        assert set(found) == set(among)
        for pair, (tau, p, n) in found.items():
            np.testing.assert_equal((tau, p, n), among[pair])


@pytest.mark.parametrize("cap", [1, 0, -3, 2.5, True, "10"])
def test_a_cap_below_two_or_not_whole_is_refused(cap):
    table = crowd(5, 1, 4, seed=4)
    with pytest.raises(InputError, match="max_raters"):
        next(inter_user_tau_pairs(table, max_raters=cap))
    with pytest.raises(InputError, match="pairwise_raters"):
        AnalysisOptions(pairwise_raters=cap)


@pytest.fixture(scope="module")
def study():
    trials, _ = simulate_study(
        StudyDesign(sketches=4, images_per_sketch=8, participants=12), seed=5
    )
    return trials


def test_analyze_says_how_many_raters_the_pairs_stand_on(study, tmp_path):
    analyze_ratings(
        study, tmp_path / "sampled", AnalysisOptions(pairwise_raters=5, seed=2), figures=False
    )
    analyze_ratings(
        study, tmp_path / "every", AnalysisOptions(pairwise_raters=None, seed=2), figures=False
    )
    sampled = pd.read_csv(tmp_path / "sampled" / "pairwise_tau_summary.csv")
    every = pd.read_csv(tmp_path / "every" / "pairwise_tau_summary.csv")
    assert (sampled["n_raters"] == 5).all() and (sampled["n_raters_all"] == 12).all()
    assert (sampled["n_pairs"] == 10).all()
    assert (every["n_raters"] == every["n_raters_all"]).all() and (every["n_pairs"] == 66).all()
    table = pd.read_parquet(tmp_path / "sampled" / "pairwise_tau.parquet")
    assert table.groupby("sketch_id", observed=True).size().tolist() == [10] * 4
    summary = json.loads((tmp_path / "sampled" / "summary.json").read_text())
    assert summary["pairwise_raters"] == {"max": 5, "n_sketches_sampled": 4, "seed": 2}
    assert summary["pairwise"]["n_tests"] == 40
    report = (tmp_path / "sampled" / "report.html").read_text()
    assert "in 4 of 4 sketches over the pairs among 5 raters drawn at random, seed 2" in report
    unsampled = json.loads((tmp_path / "every" / "summary.json").read_text())
    assert unsampled["pairwise_raters"]["n_sketches_sampled"] == 0
    assert "drawn at random" not in (tmp_path / "every" / "report.html").read_text()


def test_the_default_leaves_a_paper_sized_study_whole(study, tmp_path):
    default = analyze_ratings(study, tmp_path / "default", figures=False)
    every = analyze_ratings(
        study, tmp_path / "every", AnalysisOptions(pairwise_raters=None), figures=False
    )
    assert default["pairwise"] == every["pairwise"]
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "default" / "pairwise_tau.parquet"),
        pd.read_parquet(tmp_path / "every" / "pairwise_tau.parquet"),
    )


def test_the_command_line_option(study, tmp_path):
    table = tmp_path / "ratings.csv"
    study.to_csv(table, index=False)
    done = run_main(
        "analyze",
        str(table),
        "--out",
        str(tmp_path / "a"),
        "--no-figures",
        "--pairwise-raters",
        "4",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "a" / "summary.json").read_text())["pairwise_raters"]["max"] == 4
    done = run_main(
        "analyze",
        str(table),
        "--out",
        str(tmp_path / "b"),
        "--no-figures",
        "--pairwise-raters",
        "ALL",
    )
    assert done.returncode == 0, done.stderr
    assert (
        json.loads((tmp_path / "b" / "summary.json").read_text())["pairwise_raters"]["max"] is None
    )
    for bad in ("1", "x", "2.5", ""):
        done = run_main(
            "analyze",
            str(table),
            "--out",
            str(tmp_path / "c"),
            "--no-figures",
            "--pairwise-raters",
            bad,
        )
        assert done.returncode == 2
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "--pairwise-raters" in lines[0] and "'all'" in lines[0], lines
        assert not (tmp_path / "c").exists()
