"""Sketches computed side by side on threads come back in order and equal to one by one."""

import threading

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from sbir_study.analysis import _kernels
from sbir_study.analysis.agreement_tables import inter_user_tau_pairs


def _work(k, delay):
    threading.Event().wait(delay)  # later jobs may finish first
    return k, threading.get_ident()


def _trace_pairwise_writes(monkeypatch) -> list[int]:
    """The threads analyze writes its pairwise table from (a list that fills as it runs)."""
    from sbir_study.analysis import pipeline

    where: list[int] = []
    write_pairwise = pipeline.write_pairwise

    def traced(*args):
        where.append(threading.get_ident())
        return write_pairwise(*args)

    monkeypatch.setattr(pipeline, "write_pairwise", traced)
    return where


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
    if _kernels.threads() >= 2:
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
    results = _kernels.in_order(
        lambda k: started.append(k) or k, [(k,) for k in range(40)], weight=lambda j: 1, threshold=0
    )
    assert next(results) == 0
    results.close()
    assert len(started) <= 2 + _kernels.threads()


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
    """The crowd-size path (pairs on threads, beside the other statistics) forced on a
    small study: every table byte for byte the one-thread path's."""
    from sbir_study.analysis import AnalysisOptions, analyze_ratings, pipeline
    from sbir_study.analysis.simulate import StudyDesign, simulate_study

    trials, _ = simulate_study(
        StudyDesign(sketches=5, images_per_sketch=8, participants=14), seed=6
    )
    analyze_ratings(trials, tmp_path / "alone", AnalysisOptions(), figures=False)

    original = _kernels.in_order
    monkeypatch.setattr(
        _kernels,
        "in_order",
        lambda work, jobs, *, weight, threshold=0: original(work, jobs, weight=weight, threshold=0),
    )
    monkeypatch.setattr(pipeline, "_PAIRS_BESIDE", 0)
    where = _trace_pairwise_writes(monkeypatch)
    analyze_ratings(trials, tmp_path / "threads", AnalysisOptions(), figures=False)
    assert where and where[0] != threading.get_ident()
    files = sorted(
        p.name for p in (tmp_path / "alone").iterdir() if p.suffix in (".csv", ".qrels", ".parquet")
    )
    assert "pairwise_tau.parquet" in files and "consensus_tau.csv" in files
    for name in files:
        alone = (tmp_path / "alone" / name).read_bytes()
        assert (tmp_path / "threads" / name).read_bytes() == alone, name


def _crowd(raters=600, images=8, sketches=("s1", "s2", "s3"), seed=4):
    rng = np.random.default_rng(seed)
    frames = []
    for sketch in sketches:
        ratings = rng.integers(1, 8, size=(raters, images)).astype(float)
        ratings[rng.random(ratings.shape) < 0.05] = np.nan
        frames.append(
            pd.DataFrame(
                {
                    "participant": np.repeat([f"p{r:03d}" for r in range(raters)], images),
                    "sketch_id": sketch,
                    "image_id": np.tile([f"{sketch}_i{i}" for i in range(images)], raters),
                    "rating": ratings.ravel(),
                }
            )
        )
    table = pd.concat(frames, ignore_index=True)
    table["phase"] = "main"
    return table


@pytest.mark.parametrize("threads", ["2", "3"])
def test_sbir_study_threads_gives_the_bits_of_one_thread(monkeypatch, threads):
    """Every array of every sketch, bit for bit, on one thread and on several (600 raters:
    above the weight at which the sketches go to threads)."""
    table = _crowd()
    monkeypatch.setenv(_kernels.THREADS_VARIABLE, "1")
    alone = list(inter_user_tau_pairs(table))
    monkeypatch.setenv(_kernels.THREADS_VARIABLE, threads)
    used = []
    pairwise = _kernels.pairwise_tau_b_blocks
    monkeypatch.setattr(
        _kernels,
        "pairwise_tau_b_blocks",
        lambda *a, **k: used.append(threading.get_ident()) or pairwise(*a, **k),
    )
    several = list(inter_user_tau_pairs(table))
    assert threading.get_ident() not in used
    assert len(alone) == len(several) == 3
    for one, other in zip(alone, several, strict=True):
        for field in (
            "participants",
            "participant_a",
            "participant_b",
            "statistic",
            "pvalue",
            "n_items",
            "reason",
        ):
            a, b = getattr(one, field), getattr(other, field)
            assert a.dtype == b.dtype and a.shape == b.shape, field
            if a.dtype == object:
                assert a.tolist() == b.tolist(), field
            else:
                assert a.tobytes() == b.tobytes(), field


def test_one_thread_computes_everything_in_the_calling_thread(tmp_path, monkeypatch):
    """``$SBIR_STUDY_THREADS=1`` on the crowd-size path: no thread of its own for the pairs,
    and every table byte for byte the one of two threads."""
    from sbir_study.analysis import AnalysisOptions, analyze_ratings, pipeline

    table = _crowd(raters=60, images=6, sketches=("s1", "s2"))
    monkeypatch.setattr(pipeline, "_PAIRS_BESIDE", 0)
    monkeypatch.setenv(_kernels.THREADS_VARIABLE, "2")
    analyze_ratings(table, tmp_path / "two", AnalysisOptions(bootstrap=20), figures=False)
    monkeypatch.setenv(_kernels.THREADS_VARIABLE, "1")
    where = _trace_pairwise_writes(monkeypatch)
    analyze_ratings(table, tmp_path / "one", AnalysisOptions(bootstrap=20), figures=False)
    assert where == [threading.get_ident()]
    files = sorted(p.name for p in (tmp_path / "two").iterdir() if p.suffix in (".csv", ".qrels"))
    assert "consensus_tau.csv" in files and "pairwise_tau_summary.csv" in files
    for name in files:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()


@settings(max_examples=60, deadline=None)
@given(
    st.one_of(
        st.integers(-3, 40).map(str),
        st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=4),
    )
)
def test_sbir_study_threads_takes_a_whole_number_from_1_and_refuses_the_rest(value):
    from sbir_study.analysis import AnalysisOptions
    from sbir_study.foundation.checks import InputError

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(_kernels.THREADS_VARIABLE, value)
        stripped = value.strip()
        if stripped == "":
            assert _kernels.threads() >= 1  # unset or blank: the cores
        elif stripped.isascii() and stripped.isdigit() and int(stripped) >= 1:
            assert _kernels.threads() == int(stripped)
            AnalysisOptions()
        else:
            with pytest.raises(InputError, match=r"\$SBIR_STUDY_THREADS: .*whole number >= 1"):
                AnalysisOptions()


#: What analyze computes on its pool at crowd size, in the order the pool starts them.
WORK = (
    "write_pairwise",
    "_consensus_tables",
    "_reliability_tables",
    "_agreement_tables",
    "_overall_alpha",
    "_anchoring_table",
    "_bins_table",
    "_distribution_table",
    "_prophecy_table",
)


def _small_study():
    from sbir_study.analysis.simulate import StudyDesign, simulate_study

    trials, _ = simulate_study(
        StudyDesign(sketches=3, images_per_sketch=6, participants=12), seed=6
    )
    return trials


def _on_threads(monkeypatch, wrap) -> None:
    """The crowd-size path (the pairs beside the other statistics, on two threads) forced on a
    small study, each of :data:`WORK` replaced by ``wrap(name, work)``."""
    from sbir_study.analysis import pipeline

    monkeypatch.setenv(_kernels.THREADS_VARIABLE, "2")
    monkeypatch.setattr(pipeline, "_PAIRS_BESIDE", 0)
    for name in WORK:
        monkeypatch.setattr(pipeline, name, wrap(name, getattr(pipeline, name)))


def test_on_threads_each_statistic_is_computed_once(tmp_path, monkeypatch):
    from sbir_study.analysis import AnalysisOptions, analyze_ratings

    ran: list[str] = []

    def wrap(name, work):
        return lambda *args: ran.append(name) or work(*args)

    _on_threads(monkeypatch, wrap)
    analyze_ratings(_small_study(), tmp_path / "out", AnalysisOptions(bootstrap=20), figures=False)
    assert sorted(ran) == sorted(WORK)


def test_on_threads_the_first_error_in_order_is_raised_and_nothing_is_written(
    tmp_path, monkeypatch
):
    """The anchoring fails first in time; the consensus, which comes before it, fails after
    it: the consensus' error is the one raised, as on one thread, and ``out`` is not written."""
    from sbir_study.analysis import AnalysisOptions, analyze_ratings

    anchoring_failed = threading.Event()

    def wrap(name, work):
        def failing(*args):
            if name == "_anchoring_table":
                anchoring_failed.set()
                raise ValueError("the anchoring failed")
            if name == "_consensus_tables":
                assert anchoring_failed.wait(60)
                raise ValueError("the consensus failed")
            return work(*args)

        return failing

    _on_threads(monkeypatch, wrap)
    with pytest.raises(ValueError, match="the consensus failed"):
        analyze_ratings(_small_study(), tmp_path / "out", AnalysisOptions(), figures=False)
    assert anchoring_failed.is_set()
    assert not (tmp_path / "out").exists()


def test_on_threads_a_failure_leaves_the_work_not_begun_to_no_one(tmp_path, monkeypatch):
    """While the pool's threads are busy, the main thread fails: what no thread has begun is
    cancelled, and the busy threads end what they began."""
    from concurrent.futures import ThreadPoolExecutor

    from sbir_study.analysis import AnalysisOptions, analyze_ratings, pipeline

    release = threading.Event()
    started: list[str] = []

    class Pool(ThreadPoolExecutor):
        def shutdown(self, wait=True, *, cancel_futures=False):
            super().shutdown(wait=False, cancel_futures=cancel_futures)
            release.set()  # the busy threads go on once the rest is cancelled, or not
            super().shutdown(wait=wait)

    def wrap(name, work):
        def held(*args):
            started.append(name)
            assert release.wait(60)
            return work(*args)

        return held

    _on_threads(monkeypatch, wrap)
    monkeypatch.setattr(pipeline, "ThreadPoolExecutor", Pool)
    statistics = pipeline._statistics

    def then_fail(*args):
        statistics(*args)
        raise RuntimeError("the main thread failed")

    monkeypatch.setattr(pipeline, "_statistics", then_fail)
    with pytest.raises(RuntimeError, match="the main thread failed"):
        analyze_ratings(_small_study(), tmp_path / "out", AnalysisOptions(), figures=False)
    assert sorted(started) == sorted(WORK[: pipeline._WORKERS])
    assert not (tmp_path / "out").exists()
