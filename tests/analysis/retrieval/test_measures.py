"""Retrieval measures against independent implementations.

References: trec_eval through pytrec_eval-terrier (ndcg, ndcg_cut.k, P.k, map,
Rprec), ranx (the same measures), scipy.stats.kendalltau (tau_b), and worked
examples computed by hand from the definitions in the project's source notes
(SHREC's NN, FT, ST, E, DCG; Zhang's average rank, PWH, PSR).
"""

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from sbir_study.analysis.retrieval.baseline import write_trec_run
from sbir_study.analysis.retrieval.measures import (
    average_precision,
    average_rank,
    dcg_shrec,
    e_measure,
    first_tier,
    ndcg,
    nearest_neighbor,
    percentage_similarity_ranking,
    percentage_weighted_hits,
    precision_at_k,
    precision_at_recall,
    r_precision,
    second_tier,
    system_tau_b,
)
from sbir_study.analysis.retrieval.runs import ground_truth_from_frame, load_run
from sbir_study.foundation.checks import InputError

RELEVANT_BELOW = 3.5


def random_benchmark(
    seed: int,
    *,
    ties: bool,
    sketches: int = 8,
    judged: int = 15,
    collection: int = 40,
    returned: int = 32,
):
    """A ground truth and a run over a larger collection: unjudged images, judged images
    not returned, and (with ``ties``) scores rounded to one decimal, so many tie."""
    rng = np.random.default_rng(seed)
    truth_rows, run_rows = [], []
    for s in range(sketches):
        sketch = f"s{s}"
        docs = [f"img{d:03d}" for d in range(collection)]
        for d in rng.choice(collection, judged, replace=False):
            # Means on a grid of thirds, as means of three ratings are, with ties.
            truth_rows.append((sketch, docs[d], rng.integers(3, 22) / 3))
        for d in rng.choice(collection, returned, replace=False):
            score = rng.random()
            run_rows.append((sketch, docs[d], round(score, 1) if ties else score))
    truth = pd.DataFrame(truth_rows, columns=["sketch_id", "image_id", "mean_rating"])
    # Every sketch needs a relevant image for the measures trec_eval reports per query.
    first = truth.groupby("sketch_id").head(1).index
    truth.loc[first, "mean_rating"] = 1.0
    run = pd.DataFrame(run_rows, columns=["sketch_id", "image_id", "score"])
    return truth, run


def qrels_of(truth: pd.DataFrame, *, binary: bool) -> dict:
    qrels = {}
    for row in truth.itertuples():
        grade = 7 - int(np.floor(row.mean_rating + 0.5))
        value = int(row.mean_rating < RELEVANT_BELOW) if binary else grade
        qrels.setdefault(row.sketch_id, {})[row.image_id] = value
    return qrels


def run_dict(run: pd.DataFrame) -> dict:
    result = {}
    for row in run.itertuples():
        result.setdefault(row.sketch_id, {})[row.image_id] = float(row.score)
    return result


def ours(truth_frame, run_frame, tmp_path):
    """Our per-sketch values, the run going through a TREC file and the loader."""
    truth = ground_truth_from_frame(truth_frame)
    path = write_trec_run(run_frame, tmp_path / "system.run", tag="test")
    ranking = load_run(path, truth)
    relevant = truth.relevant(RELEVANT_BELOW)
    values = {
        "ndcg": ndcg(ranking.rank, truth.grade),
        "ndcg_cut_5": ndcg(ranking.rank, truth.grade, k=5),
        "ndcg_cut_10": ndcg(ranking.rank, truth.grade, k=10),
        "P_5": precision_at_k(ranking.rank, relevant, k=5),
        "P_10": precision_at_k(ranking.rank, relevant, k=10),
        "map": average_precision(ranking.rank, relevant),
        "Rprec": r_precision(ranking.rank, relevant),
    }
    return truth, ranking, path, values


GRADED = ("ndcg", "ndcg_cut_5", "ndcg_cut_10")
BINARY = ("P_5", "P_10", "map", "Rprec")


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_trec_measures_equal_trec_eval(seed, ties, tmp_path):
    import pytrec_eval

    truth_frame, run_frame = random_benchmark(seed, ties=ties)
    truth, _, _, values = ours(truth_frame, run_frame, tmp_path)
    run = run_dict(run_frame)
    # trec_eval (pytrec_eval-terrier): graded qrels for ndcg, binary for the others.
    graded_measures = {"ndcg", "ndcg_cut.5", "ndcg_cut.10"}
    graded = pytrec_eval.RelevanceEvaluator(qrels_of(truth_frame, binary=False), graded_measures)
    graded = graded.evaluate(run)
    binary_measures = {"P.5", "P.10", "map", "Rprec"}
    binary = pytrec_eval.RelevanceEvaluator(qrels_of(truth_frame, binary=True), binary_measures)
    binary = binary.evaluate(run)
    sketches = list(truth.sketches)
    for measure in GRADED:
        expected = [graded[s][measure] for s in sketches]
        np.testing.assert_allclose(values[measure], expected, rtol=0, atol=1e-12, err_msg=measure)
    for measure in BINARY:
        expected = [binary[s][measure] for s in sketches]
        np.testing.assert_allclose(values[measure], expected, rtol=0, atol=1e-12, err_msg=measure)


# ranx's own numba kernel warns about an integer cast when it is first compiled.
@pytest.mark.filterwarnings("ignore:unsafe cast from uint64 to int64")
@pytest.mark.parametrize("ties", [False, True])
def test_trec_measures_equal_ranx(ties, tmp_path):
    from ranx import Qrels, Run, evaluate

    truth_frame, run_frame = random_benchmark(7, ties=ties)
    _, _, path, values = ours(truth_frame, run_frame, tmp_path)
    # ranx sorts tied documents in no defined order, where trec_eval orders them by
    # decreasing id; with ties it is given trec_eval's order as strictly decreasing scores
    # (minus the rank column of the TREC file, which lists the run in that order).
    listed = pd.read_csv(
        path,
        sep=" ",
        header=None,
        names=["q", "q0", "d", "r", "s", "t"],
        dtype={"q": str, "d": str},
    )
    listed["score"] = -listed["r"] if ties else listed["s"]
    run = Run(run_dict(listed.rename(columns={"q": "sketch_id", "d": "image_id"})))
    graded = {"ndcg": "ndcg", "ndcg@5": "ndcg_cut_5", "ndcg@10": "ndcg_cut_10"}
    binary = {"precision@5": "P_5", "precision@10": "P_10", "map": "map", "r-precision": "Rprec"}
    for is_binary, names in ((False, graded), (True, binary)):
        qrels = Qrels(qrels_of(truth_frame, binary=is_binary))
        found = evaluate(qrels, run, list(names), return_mean=False, make_comparable=True)
        for name, ours_name in names.items():
            np.testing.assert_allclose(values[ours_name], found[name], atol=1e-12, err_msg=name)


@pytest.mark.parametrize("ties", [False, True])
def test_tau_b_equals_scipy_with_unreturned_images_tied_last(ties, tmp_path):
    truth_frame, run_frame = random_benchmark(11, ties=ties)
    truth, ranking, _, _ = ours(truth_frame, run_frame, tmp_path)
    result = system_tau_b(ranking.score, truth.mean_rating)
    scores = run_dict(run_frame)
    for s, sketch in enumerate(truth.sketches):
        images = truth.images[s]
        returned = [scores[sketch].get(i) for i in images]
        floor = min(v for v in returned if v is not None) - 1.0
        x = [floor if v is None else v for v in returned]
        y = -truth.mean_rating[s, : len(images)]
        # scipy.stats.kendalltau: tau_b and the asymptotic one-sided p-value.
        expected = scipy.stats.kendalltau(x, y, method="asymptotic", alternative="greater")
        assert result.statistic[s] == pytest.approx(expected.statistic, abs=1e-12)
        assert result.pvalue[s] == pytest.approx(expected.pvalue, abs=1e-12)


def test_shrec_measures_worked_example():
    # One sketch, C = 4 relevant images (a, b, c, d) among 6 judged; the run returns
    # 9 images: G = 0 1 0 1 0 0 1 0 0 (positions of a, b, c: 2, 4, 7; d not returned).
    rank = np.array([[2.0, 4.0, 7.0, np.nan, 1.0, 9.0]])
    relevant = np.array([[True, True, True, True, False, False]])
    assert nearest_neighbor(rank, relevant)[0] == 0.0  # G(1) = 0
    assert first_tier(rank, relevant)[0] == pytest.approx(2 / 4)  # Gs(4) = 2
    assert second_tier(rank, relevant)[0] == pytest.approx(3 / 4)  # Gs(8) = 3, / C not 2C
    # E over the first 32: Gs(32) = 3, P = 3/32, R = 3/4, E = 2PR/(P+R) = 1/6.
    assert e_measure(rank, relevant)[0] == pytest.approx(2 * (3 / 32) * (3 / 4) / (3 / 32 + 3 / 4))
    assert e_measure(rank, relevant)[0] == pytest.approx(1 / 6)
    # DCG: (1/log2 2 + 1/log2 4 + 1/log2 7) / (1 + 1/log2 2 + 1/log2 3 + 1/log2 4).
    expected = (1 + 0.5 + 1 / np.log2(7)) / (1 + 1 + 1 / np.log2(3) + 0.5)
    assert dcg_shrec(rank, relevant)[0] == pytest.approx(expected)
    # Precision where recall first reaches 0.25, 0.5, 0.75, 1: at positions 2, 4, 7, never.
    curve = precision_at_recall(rank, relevant, [0.25, 0.5, 0.75, 1.0])
    np.testing.assert_allclose(curve[0], [1 / 2, 2 / 4, 3 / 7, 0.0])
    # Rank 1 is undiscounted: a relevant first image counts 1, as does one at position 2.
    assert dcg_shrec([[1.0, 2.0]], [[True, True]])[0] == pytest.approx(1.0)


def test_sketches_without_relevant_images_are_undefined_for_recall_measures():
    rank = np.array([[1.0, 2.0]])
    relevant = np.array([[False, False]])
    for measure in (average_precision, r_precision, first_tier, second_tier, e_measure, dcg_shrec):
        assert np.isnan(measure(rank, relevant)[0]), measure.__name__
    assert precision_at_k(rank, relevant, k=1)[0] == 0.0
    assert nearest_neighbor(rank, relevant)[0] == 0.0
    assert np.isnan(ndcg(rank, [[0, 0]])[0])


def test_zhang_measures_worked_examples():
    # Average rank: relevant images at positions 1 and 3 and one not returned; the run
    # returns 10 images and two judged images are not returned, so those two take
    # positions 11 and 12, each 11.5: (1 + 3 + 11.5) / 3.
    rank = np.array([[1.0, 3.0, np.nan, np.nan, 5.0, np.nan]])
    relevant = np.array([[True, True, True, False, False, False]])
    judged = np.array([[True, True, True, True, True, False]])  # the last is padding
    assert average_rank(rank, relevant, n_returned=[10], judged=judged)[0] == pytest.approx(
        (1 + 3 + 11.5) / 3
    )
    # PWH@2: 5 of 8 people chose image 1, 1 chose image 2 (at position 4), 2 chose image 3
    # (position 2): (5 + 2) / (5 + 1 + 2).
    weights = np.array([[5.0, 1.0, 2.0]])
    assert percentage_weighted_hits([[1.0, 4.0, 2.0]], weights, k=2)[0] == pytest.approx(7 / 8)
    # PSR with ties: three participants, three images.
    #   participant 1 rates (1, 2, 2): image 1 at position 1; images 2 and 3 share positions
    #   2, 3. Participant 2 rates (1, 2, 3); participant 3 rates (2, 1, 3).
    # Q(image 1) = {1: 2, 2: 1}: mean 4/3, sd sqrt(2/9) = 0.471, window +-0.236.
    # Q(image 2) = {1: 1, 2: 1.5, 3: 0.5}: mean 11/6, sd = sqrt(23/6 - 121/36) = 0.687.
    # Q(image 3) = {2: 0.5, 3: 2.5}: mean 17/6, sd = sqrt(49/6 - 289/36) = 0.373.
    # The system ranks them 1, 2, 3: S = 2/3, 1.5/3, 2.5/3 -> PSR = (2 + 1.5 + 2.5) / 9.
    ratings = np.array([[[1, 2, 2], [1, 2, 3], [2, 1, 3]]], dtype=float)
    psr = percentage_similarity_ranking([[1.0, 2.0, 3.0]], ratings)
    assert psr[0] == pytest.approx(6 / 9)
    # With the system putting image 2 first (rank 1) and image 1 second: image 1's window
    # (2 +- 0.236) holds Q = 1, image 2's (1 +- 0.343) holds 1: (1 + 1 + 2.5) / 9.
    psr = percentage_similarity_ranking([[2.0, 1.0, 3.0]], ratings)
    assert psr[0] == pytest.approx(4.5 / 9)
    # A participant who missed an image of the sketch is left out of it.
    ratings_missing = np.concatenate([ratings, [[[np.nan, 1, 1]]]], axis=1)
    assert percentage_similarity_ranking([[1.0, 2.0, 3.0]], ratings_missing)[0] == pytest.approx(
        6 / 9
    )


def test_measures_reject_bad_input():
    with pytest.raises(InputError, match="k: expected a whole number"):
        precision_at_k([[1.0]], [[True]], k=0)
    with pytest.raises(InputError, match="relevant: expected a boolean"):
        average_precision([[1.0]], [[1]])
    with pytest.raises(InputError, match="expected the same shape"):
        ndcg([[1.0, 2.0]], [[1]])
    with pytest.raises(InputError, match="rank: expected positions from 1"):
        r_precision([[0.0]], [[True]])
