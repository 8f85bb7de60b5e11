"""Sketches computed side by side on threads come back in order and equal to one by one."""

import threading

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from sbir_study.analysis import _kernels
from sbir_study.analysis.agreement import inter_user_tau_pairs


def _work(k, delay):
    threading.Event().wait(delay)  # later jobs may finish first
    return k, threading.get_ident()


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0, 0.004), max_size=12), st.sampled_from([0, 1e18]))
def test_results_come_in_the_order_of_the_jobs(delays, threshold):
    jobs = [(k, d) for k, d in enumerate(delays)]
    got = list(_kernels.in_order(_work, jobs, weight=lambda job: 1, threshold=threshold))
    assert [k for k, _ in got] == list(range(len(delays)))


def test_threads_are_used_above_the_threshold_and_not_below():
    jobs = [(k, 0.01) for k in range(6)]
    here = threading.get_ident()
    below = list(_kernels.in_order(_work, jobs, weight=lambda job: 1, threshold=2))
    assert {ident for _, ident in below} == {here}
    above = list(_kernels.in_order(_work, jobs, weight=lambda job: 1, threshold=1))
    if _kernels._cores() >= 2:
        assert here not in {ident for _, ident in above}


def test_an_error_in_a_job_reaches_the_caller_and_a_stop_starts_nothing_more():
    started = []

    def work(k):
        started.append(k)
        if k == 3:
            raise ValueError("job 3")
        return k

    with pytest.raises(ValueError, match="job 3"):
        list(_kernels.in_order(work, [(k,) for k in range(40)], weight=lambda j: 1, threshold=0))
    started.clear()
    results = _kernels.in_order(lambda k: started.append(k) or k, [(k,) for k in range(40)],
                                weight=lambda j: 1, threshold=0)  # fmt: skip
    assert next(results) == 0
    results.close()
    assert len(started) <= 2 + _kernels._cores()


def test_inter_user_pairs_on_threads_equal_scipy():
    """600 raters (above the threshold for threads), three sketches; every pair of the
    first sketch against scipy.stats.kendalltau, and the sketches in order."""
    rng = np.random.default_rng(3)
    raters, images = 600, 8
    rows = []
    for sketch in ("s1", "s2", "s3"):
        ratings = rng.integers(1, 8, size=(raters, images)).astype(float)
        ratings[rng.random(ratings.shape) < 0.05] = np.nan
        for r in range(raters):
            for i in range(images):
                rows.append((f"p{r:03d}", sketch, f"{sketch}_i{i}", ratings[r, i]))
    table = pd.DataFrame(rows, columns=["participant", "sketch_id", "image_id", "rating"])
    table["phase"] = "main"
    sketches = list(inter_user_tau_pairs(table))
    assert [s.sketch_id for s in sketches] == ["s1", "s2", "s3"]
    first = sketches[0]
    matrix = table[table["sketch_id"] == "s1"].pivot(
        index="participant", columns="image_id", values="rating"
    )
    matrix = matrix.loc[first.participants].to_numpy()
    picks = rng.choice(first.statistic.size, size=300, replace=False)
    for k in picks:
        x, y = matrix[first.participant_a[k]], matrix[first.participant_b[k]]
        both = ~np.isnan(x) & ~np.isnan(y)
        # scipy.stats.kendalltau, the asymptotic test, is the reference.
        expected = stats.kendalltau(x[both], y[both], method="asymptotic", alternative="greater")
        np.testing.assert_allclose(first.statistic[k], expected.statistic, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(first.pvalue[k], expected.pvalue, rtol=1e-9, atol=1e-15)
        assert first.n_items[k] == both.sum()


def test_analyze_on_threads_writes_the_files_it_writes_alone(tmp_path, monkeypatch):
    """The crowd-scale path (pairs on threads, beside the other statistics) forced on a
    small study: every table byte for byte the one-thread path's."""
    from sbir_study.analysis import AnalysisOptions, analyze_ratings, pipeline
    from sbir_study.analysis.simulate import StudyDesign, simulate_study

    trials, _ = simulate_study(StudyDesign(sketches=5, images_per_sketch=8, participants=14),
                               seed=6)  # fmt: skip
    analyze_ratings(trials, tmp_path / "alone", AnalysisOptions(), figures=False)

    original = _kernels.in_order
    monkeypatch.setattr(_kernels, "in_order", lambda work, jobs, *, weight, threshold=0:
                        original(work, jobs, weight=weight, threshold=0))  # fmt: skip
    monkeypatch.setattr(pipeline, "_PAIRS_BESIDE", 0)
    where = []
    write_pairwise = pipeline._write_pairwise

    def traced(*args):
        where.append(threading.get_ident())
        return write_pairwise(*args)

    monkeypatch.setattr(pipeline, "_write_pairwise", traced)
    analyze_ratings(trials, tmp_path / "threads", AnalysisOptions(), figures=False)
    assert where and where[0] != threading.get_ident()
    files = sorted(p.name for p in (tmp_path / "alone").iterdir()
                   if p.suffix in (".csv", ".qrels", ".parquet"))  # fmt: skip
    assert "pairwise_tau.parquet" in files and "consensus_tau.csv" in files
    for name in files:
        alone = (tmp_path / "alone" / name).read_bytes()
        assert (tmp_path / "threads" / name).read_bytes() == alone, name
