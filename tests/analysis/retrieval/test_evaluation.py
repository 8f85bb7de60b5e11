"""Scoring runs: trec_eval's order, a perfect system against a reversed one, the baseline
engine, lenient parsing."""

import numpy as np
import pandas as pd
import pytest

from sbir_study.analysis.retrieval.baseline import edge_orientation_histogram, write_trec_run
from sbir_study.analysis.retrieval.evaluation import EvaluationOptions, evaluate_runs
from sbir_study.analysis.retrieval.runs import (
    RunWarning,
    ground_truth_from_frame,
    load_ground_truth,
    load_run,
    run_from_scores,
)


def test_write_trec_run_lists_the_run_in_trec_eval_order(tmp_path):
    frame = pd.DataFrame(
        {"sketch_id": "s", "image_id": ["a", "b", "c", "d"], "mean_rating": [1, 2, 3, 4]}
    )
    truth = ground_truth_from_frame(frame)
    run = pd.DataFrame(
        {"sketch_id": "s", "image_id": ["a", "b", "c", "d"], "score": [0.5, 0.9, 0.5, 0.1]}
    )
    path = write_trec_run(run, tmp_path / "run.txt", tag="t")
    listed = [line.split() for line in path.read_text().splitlines()]
    assert [f[2] for f in listed] == ["b", "c", "a", "d"]  # ties by decreasing id
    ranking = load_run(path, truth)
    assert ranking.rank[0].tolist() == [3.0, 1.0, 2.0, 4.0]
    assert [int(f[3]) for f in listed] == [1, 2, 3, 4]


def test_runs_rank_ties_like_trec_eval_and_missing_sketches_warn(tmp_path):
    frame = pd.DataFrame(
        {"sketch_id": ["s", "s", "t"], "image_id": ["a", "b", "c"], "mean_rating": [1, 5, 2]}
    )
    truth = ground_truth_from_frame(frame)
    with pytest.warns(RunWarning, match="ranks no image for 1 ground-truth sketch"):
        ranking = run_from_scores(truth, ["s", "s", "s"], ["a", "b", "z"], [1.0, 1.0, 2.0])
    assert ranking.rank[0].tolist() == [3.0, 2.0]  # z first; then b before a (ids descending)
    assert np.isnan(ranking.rank[1]).all() and ranking.n_returned.tolist() == [3, 0]


def test_a_perfect_system_beats_a_reversed_one_on_every_measure():
    rng = np.random.default_rng(0)
    rows = [(f"s{s}", f"i{i}", rng.uniform(1, 7)) for s in range(12) for i in range(15)]
    frame = pd.DataFrame(rows, columns=["sketch_id", "image_id", "mean_rating"])
    truth = ground_truth_from_frame(frame)
    perfect = run_from_scores(
        truth, frame["sketch_id"], frame["image_id"], -frame["mean_rating"], name="perfect"
    )
    reversed_ = run_from_scores(
        truth, frame["sketch_id"], frame["image_id"], frame["mean_rating"], name="reversed"
    )
    evaluation = evaluate_runs(
        truth, [perfect, reversed_], EvaluationOptions(bootstrap=200, permutations=500)
    )
    summary = evaluation.summary.set_index(["system", "measure"])
    assert summary.loc[("perfect", "tau_b"), "mean"] == pytest.approx(1.0)
    assert summary.loc[("reversed", "tau_b"), "mean"] == pytest.approx(-1.0)
    assert summary.loc[("perfect", "ndcg"), "mean"] == pytest.approx(1.0)
    assert summary.loc[("perfect", "ap"), "mean"] == pytest.approx(1.0)
    # Lower is better for the average rank: the perfect system is marked better there too.
    for measure in ("tau_b", "ndcg", "ap", "avg_rank"):
        assert summary.loc[("perfect", measure), "significantly_better_than"] == "reversed"
        assert summary.loc[("reversed", measure), "significantly_better_than"] == ""


def test_baseline_descriptor_and_ranking_follow_the_latent_similarity(retrieval_study):
    from sbir_study.stimuli import load_set

    stimulus_set = load_set(retrieval_study / "set")
    manifest = stimulus_set.manifest
    vector = edge_orientation_histogram(stimulus_set.path(manifest["image_path"].iloc[0]))
    assert vector.shape == (128,) and vector.sum() == pytest.approx(1.0)
    # On the generated set, an image's latent similarity to its sketch should show in the
    # baseline's ranking: tau_b between the L1 scores and the latent similarity, per sketch.
    import scipy.stats

    run = pd.read_csv(
        retrieval_study / "runs" / "l1.run",
        sep=" ",
        header=None,
        names=["sketch_id", "q0", "image_id", "rank", "score", "tag"],
    )
    merged = run.merge(manifest, on=["sketch_id", "image_id"])
    taus = [
        scipy.stats.kendalltau(g["score"], g["latent_similarity"]).statistic
        for _, g in merged.groupby("sketch_id")
    ]
    assert np.mean(taus) > 0.3, taus


def run_file(tmp_path, text, name="run.txt"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_irregular_whitespace_and_crlf_runs_still_parse(retrieval_study, tmp_path):
    truth = load_ground_truth(retrieval_study / "analysis" / "ground_truth.csv")
    lines = (retrieval_study / "runs" / "l1.run").read_text().splitlines()
    spaced = run_file(tmp_path, "".join("  ".join(line.split()) + "\r\n" for line in lines))
    tabbed = run_file(tmp_path, "".join("\t".join(line.split()) + "\n" for line in lines), "t.txt")
    reference = load_run(retrieval_study / "runs" / "l1.run", truth)
    for path in (spaced, tabbed):
        np.testing.assert_array_equal(load_run(path, truth).rank, reference.rank)
