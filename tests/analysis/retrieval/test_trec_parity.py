"""The files of analyze and evaluate, given to trec_eval and ranx, give evaluate's numbers.

References: trec_eval through pytrec_eval-terrier (which embeds trec_eval 9: scores read
into single-precision floats, ties broken by decreasing document id) and ranx, each
reading our ground_truth.qrels, ground_truth_binary.qrels and run files with its own
parsers. Every measure `evaluate` shares with them must agree to 1e-12.
"""

import numpy as np
import pandas as pd
import pytest

from sbir_study.analysis.retrieval.baseline import write_trec_run
from sbir_study.analysis.retrieval.evaluation import EvaluationOptions
from sbir_study.analysis.retrieval.evaluation_inputs import evaluate_files
from sbir_study.analysis.retrieval.evaluation_outputs import write_evaluation
from tests.helpers import analysed_simulation

CUTOFFS = (5, 10, 20)
# evaluate's measure -> (trec_eval measure, which qrels): every measure both compute.
# nn is P@1 and ft is R-precision under SHREC's names.
SHARED = {
    "ndcg": ("ndcg", "graded"),
    **{f"ndcg@{k}": (f"ndcg_cut_{k}", "graded") for k in CUTOFFS},
    **{f"p@{k}": (f"P_{k}", "binary") for k in CUTOFFS},
    "ap": ("map", "binary"),
    "r_precision": ("Rprec", "binary"),
    "ft": ("Rprec", "binary"),
    "nn": ("P_1", "binary"),
}
TREC_MEASURES = {
    "graded": {"ndcg", *(f"ndcg_cut.{k}" for k in CUTOFFS)},
    "binary": {"map", "Rprec", "P.1", *(f"P.{k}" for k in CUTOFFS)},
}
FAST = EvaluationOptions(bootstrap=100, permutations=100, cutoffs=CUTOFFS)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """analyze's files for 8 simulated participants on 6 sketches x 24 images."""
    root = tmp_path_factory.mktemp("parity")
    analysed_simulation(root, participants=8, sketches=6, images=24, seed=21)
    return root


def _near_tie_run(truth: pd.DataFrame, seed: int) -> pd.DataFrame:
    """A run over the judged images and 30 unjudged ones per sketch whose scores come in
    groups equal in single precision but not in double: float32 anchors plus offsets of
    1e-12, the larger offsets on the smaller ids, so that double precision orders each
    group against trec_eval's tie order (decreasing id)."""
    rng = np.random.default_rng(seed)
    rows = []
    for sketch, group in truth.groupby("sketch_id"):
        images = sorted(list(group["image_id"]) + [f"zz_unjudged_{i:02d}" for i in range(30)])
        anchors = np.float32(rng.normal(size=len(images) // 3 + 1)).astype(np.float64)
        anchor_of = rng.integers(0, anchors.size, len(images))
        for position, (image, anchor) in enumerate(zip(images, anchor_of, strict=True)):
            offset = (len(images) - position) * 1e-12
            rows.append((sketch, image, anchors[anchor] + offset))
    run = pd.DataFrame(rows, columns=["sketch_id", "image_id", "score"])
    single = run.assign(score=run["score"].astype(np.float32))
    assert not run.duplicated(["sketch_id", "score"]).any()  # distinct in double precision
    assert single.duplicated(["sketch_id", "score"]).sum() > len(run) / 2  # ties in single
    return run


def _trec_eval(root, run_path, **kwargs):
    import pytrec_eval

    results = {}
    qrels_files = {"graded": "ground_truth.qrels", "binary": "ground_truth_binary.qrels"}
    for kind, name in qrels_files.items():
        with open(root / "analysis" / name) as qrels_file, open(run_path) as run_file:
            qrels = pytrec_eval.parse_qrel(qrels_file)
            run = pytrec_eval.parse_run(run_file)
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, TREC_MEASURES[kind], **kwargs)
        results[kind] = evaluator.evaluate(run)
    return results


def _ours(root, run_path, **kwargs):
    evaluation = evaluate_files(root / "analysis" / "ground_truth.csv", [run_path], FAST, **kwargs)
    table = evaluation.per_sketch
    return evaluation, table.pivot(index="sketch_id", columns="measure", values="value")


def _compare(ours: pd.DataFrame, trec: dict) -> int:
    compared = 0
    for ours_name, (theirs_name, kind) in SHARED.items():
        for sketch, value in ours[ours_name].items():
            expected = trec[kind][str(sketch)][theirs_name]
            if np.isnan(value):
                # Undefined for us without a relevant image, where trec_eval says 0.
                assert expected == 0.0, (ours_name, sketch)
                continue
            assert value == pytest.approx(expected, abs=1e-12, rel=0), (ours_name, sketch)
            compared += 1
    return compared


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_trec_eval_on_our_files_gives_our_numbers_with_float32_near_ties(study, tmp_path, seed):
    truth = pd.read_csv(study / "analysis" / "ground_truth.csv")
    run_path = write_trec_run(_near_tie_run(truth, seed), tmp_path / "near.run", tag="near")
    evaluation, ours = _ours(study, run_path)
    trec = _trec_eval(study, run_path)
    assert _compare(ours, trec) >= len(SHARED) * 5
    # Not a vacuous check: compared in double precision (as trec_eval 10 and ranx compare),
    # the same run is put in another order and some measures differ from trec_eval 9's.
    _, double = _ours(study, run_path, score_precision="float64")
    differences = [
        abs(double[m][s] - trec[kind][str(s)][measure])
        for m, (measure, kind) in SHARED.items()
        for s in double.index
        if not np.isnan(double[m][s])
    ]
    assert max(differences) > 1e-6
    # evaluate writes the binary judgement it used; at the default threshold it is analyze's.
    out = tmp_path / "out"
    write_evaluation(evaluation, out, figures=False)
    written = (out / "ground_truth_binary.qrels").read_text().splitlines()
    analysed = (study / "analysis" / "ground_truth_binary.qrels").read_text().splitlines()
    assert sorted(written) == sorted(analysed)


def test_trec_eval_level_4_on_the_graded_qrels_is_the_binary_judgement(study, tmp_path):
    # `trec_eval -l 4 ground_truth.qrels RUN` (pytrec_eval's relevance_level=4) counts grade
    # >= 4 relevant: mean rating below 3.5, the binary qrels.
    import pytrec_eval

    truth = pd.read_csv(study / "analysis" / "ground_truth.csv")
    run_path = write_trec_run(_near_tie_run(truth, 4), tmp_path / "near.run", tag="near")
    with open(study / "analysis" / "ground_truth.qrels") as qrels_file, open(run_path) as f:
        graded, run = pytrec_eval.parse_qrel(qrels_file), pytrec_eval.parse_run(f)
    level_4 = pytrec_eval.RelevanceEvaluator(graded, TREC_MEASURES["binary"], relevance_level=4)
    assert level_4.evaluate(run) == _trec_eval(study, run_path)["binary"]


# ranx's own numba kernel warns about an integer cast when it is first compiled.
@pytest.mark.filterwarnings("ignore:unsafe cast from uint64 to int64")
def test_ranx_on_our_files_gives_our_numbers(study, tmp_path):
    from ranx import Qrels, Run, evaluate

    # ranx orders tied documents in no defined way: a run without ties, in either precision.
    truth = pd.read_csv(study / "analysis" / "ground_truth.csv")
    rng = np.random.default_rng(9)
    run = _near_tie_run(truth, 5)
    run["score"] = rng.permutation(len(run)) / len(run)
    run_path = write_trec_run(run, tmp_path / "plain.run", tag="plain")
    _, ours = _ours(study, run_path)
    ranx_run = Run.from_file(str(run_path), kind="trec")
    graded = Qrels.from_file(str(study / "analysis" / "ground_truth.qrels"), kind="trec")
    binary = Qrels.from_file(str(study / "analysis" / "ground_truth_binary.qrels"), kind="trec")
    names = {
        "ndcg": ("ndcg", graded),
        "ap": ("map", binary),
        "r_precision": ("r-precision", binary),
        "ft": ("r-precision", binary),
        "nn": ("precision@1", binary),
        **{f"ndcg@{k}": (f"ndcg@{k}", graded) for k in CUTOFFS},
        **{f"p@{k}": (f"precision@{k}", binary) for k in CUTOFFS},
    }
    assert set(names) == set(SHARED)
    for measure, (name, qrels) in names.items():
        evaluate(qrels, ranx_run, name, make_comparable=True)
        theirs = ranx_run.scores[name]
        compared = 0
        for sketch, value in ours[measure].items():
            if np.isnan(value):
                continue
            assert value == pytest.approx(theirs[str(sketch)], abs=1e-12, rel=0), (measure, sketch)
            compared += 1
        assert compared >= 5, measure
        if qrels is binary:
            # ranx's relevance level 4 on the graded qrels ("-l4") is the same judgement.
            evaluate(graded, ranx_run, f"{name}-l4", make_comparable=True)
            assert ranx_run.scores[f"{name}-l4"] == pytest.approx(theirs, abs=1e-12)
