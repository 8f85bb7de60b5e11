"""``evaluate`` against a ground truth on another scale than the paper's 1..7.

The ground truth's scale comes from the ratings, else from the summary.json of the
analyze that wrote it, else from ``--scale``; two that differ are refused. On it the
qrels grades run from k - 1 (best) to 0. References: trec_eval through
pytrec_eval-terrier, given qrels built here with pandas from ground_truth.csv
(grade = high - round(mean), halves to the worse grade; relevant below the
scale's cut).
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from sbir_study.analysis import load_ratings
from sbir_study.analysis.pipeline import AnalysisOptions, analyze_ratings
from sbir_study.analysis.retrieval.evaluation import EvaluationOptions
from sbir_study.analysis.retrieval.evaluation_inputs import evaluate_files
from sbir_study.analysis.retrieval.evaluation_outputs import write_evaluation
from sbir_study.analysis.simulate import StudyDesign, write_simulated_dataset
from sbir_study.foundation.checks import InputError
from sbir_study.foundation.scale import Scale

OPTIONS = EvaluationOptions(bootstrap=100, permutations=100)
SCALES = [Scale(1, 5), Scale(1, 9, "high")]


@pytest.fixture(scope="module", params=SCALES, ids=str)
def study(request, tmp_path_factory):
    """A simulated study on the scale, analyzed, and an engine's run with distinct scores."""
    scale = request.param
    root = tmp_path_factory.mktemp(f"scale{scale.k}{scale.best}")
    design = StudyDesign(
        participants=6, sketches=4, images_per_sketch=12, anchor_images=min(3, scale.k)
    )
    data = write_simulated_dataset(root / "data", design, seed=7, scale=scale)
    analyze_ratings(
        load_ratings(data),
        root / "analysis",
        AnalysisOptions(bootstrap=0, permutations=0),
        figures=False,
    )
    truth = pd.read_csv(
        root / "analysis" / "ground_truth.csv", dtype={"sketch_id": str, "image_id": str}
    )
    rng = np.random.default_rng(3)
    run = truth[["sketch_id", "image_id"]].assign(score=rng.permutation(len(truth)) / len(truth))
    run.to_csv(root / "engine.csv", index=False)
    return scale, root, data, truth, run


def _trec_eval(truth: pd.DataFrame, run: pd.DataFrame, scale: Scale) -> dict:
    import pytrec_eval

    # The qrels of the scale, from the table: grade = high - round(mean rating), a half
    # rounding to the worse grade; binary relevance below the scale's cut.
    grade = scale.high - np.floor(truth["mean_rating"] + 0.5).astype(int)
    relevant = (truth["mean_rating"] < scale.relevant_below).astype(int)

    def qrels(values):
        table = {}
        for sketch, image, value in zip(truth["sketch_id"], truth["image_id"], values, strict=True):
            table.setdefault(sketch, {})[image] = int(value)
        return table

    scores = {}
    for sketch, image, score in run.itertuples(index=False):
        scores.setdefault(sketch, {})[image] = float(score)
    graded = pytrec_eval.RelevanceEvaluator(qrels(grade), {"ndcg", "ndcg_cut.5"})
    binary = pytrec_eval.RelevanceEvaluator(qrels(relevant), {"P.5", "map"})
    return {"graded": graded.evaluate(scores), "binary": binary.evaluate(scores)}


def _per_sketch(evaluation) -> pd.DataFrame:
    table = evaluation.per_sketch[evaluation.per_sketch["system"] == "engine"]
    return table.pivot(index="sketch_id", columns="measure", values="value")


def test_summary_json_records_the_scale(study):
    scale, root, *_ = study
    summary = json.loads((root / "analysis" / "summary.json").read_text())
    assert summary["scale"] == str(scale)
    assert Scale.parse(summary["scale"]) == scale


def test_grades_and_cut_of_the_scale_from_analyze_summary(study, tmp_path):
    scale, root, _, truth, run = study
    evaluation = evaluate_files(
        root / "analysis" / "ground_truth.csv", [root / "engine.csv"], OPTIONS
    )
    assert evaluation.truth.scale == scale
    assert evaluation.options.relevant_below == scale.relevant_below
    assert np.nanmax(evaluation.truth.grade) <= scale.k - 1
    ours = _per_sketch(evaluation)
    trec = _trec_eval(truth, run, scale)
    pairs = {
        "ndcg": ("graded", "ndcg"),
        "ndcg@5": ("graded", "ndcg_cut_5"),
        "p@5": ("binary", "P_5"),
        "ap": ("binary", "map"),
    }
    compared = 0
    for ours_name, (kind, theirs) in pairs.items():
        for sketch, value in ours[ours_name].items():
            expected = trec[kind][str(sketch)][theirs]
            if np.isnan(value):  # no relevant image: undefined here, 0 for trec_eval
                assert expected == 0.0
                continue
            assert value == pytest.approx(expected, abs=1e-12, rel=0), (ours_name, sketch)
            compared += 1
    assert compared >= 8
    # The grades of the paper's scale (7 - round(mean)) give other nDCG values here.
    paper = _trec_eval(truth, run, Scale(1, 7))["graded"]
    assert any(abs(paper[str(s)]["ndcg"] - v) > 1e-6 for s, v in ours["ndcg"].items())
    # The report says how the grades were computed on this scale.
    write_evaluation(evaluation, tmp_path / "out", figures=False)
    assert f"{scale.high} - round(mean rating)" in (tmp_path / "out" / "report.html").read_text()
    assert json.loads((tmp_path / "out" / "evaluation.json").read_text())["scale"] == str(scale)


def test_ratings_give_the_scale_and_agree_with_the_summary(study, tmp_path):
    scale, root, data, *_ = study
    truth_file = root / "analysis" / "ground_truth.csv"
    evaluation = evaluate_files(truth_file, [root / "engine.csv"], OPTIONS, ratings=data)
    assert evaluation.truth.scale == scale
    with pytest.raises(
        InputError,
        match=rf"--scale: the scale 1-7, where .*summary.json is on "
        rf"{scale}",
    ):
        evaluate_files(truth_file, [root / "engine.csv"], OPTIONS, scale=Scale(1, 7))
    # A flat table of the same ratings is on the paper's scale unless --scale names its own.
    flat = tmp_path / "ratings.csv"
    table = load_ratings(data)
    table[["participant", "sketch_id", "image_id", "phase", "rating", "anchor_rating"]].to_csv(
        flat, index=False, na_rep="n/a"
    )
    evaluation = evaluate_files(
        truth_file, [root / "engine.csv"], OPTIONS, ratings=flat, scale=scale
    )
    assert evaluation.truth.scale == scale
    if table["rating"].max() <= 7:
        with pytest.raises(
            InputError,
            match=rf"summary.json: the scale {scale}, where the "
            rf"ratings .*ratings.csv is on 1-7",
        ):
            evaluate_files(truth_file, [root / "engine.csv"], OPTIONS, ratings=flat)


def test_a_ground_truth_without_analyze_records_takes_scale(study, tmp_path):
    scale, root, _, truth, _ = study
    alone = tmp_path / "ground_truth.csv"
    shutil.copy(root / "analysis" / "ground_truth.csv", alone)
    evaluation = evaluate_files(alone, [root / "engine.csv"], OPTIONS, scale=scale)
    assert evaluation.truth.scale == scale
    same = evaluate_files(root / "analysis" / "ground_truth.csv", [root / "engine.csv"], OPTIONS)
    pd.testing.assert_frame_equal(evaluation.per_sketch, same.per_sketch)
    without = evaluate_files if truth["mean_rating"].max() <= 7 else None
    if without is None:  # means above 7: not a ground truth on the paper's scale
        with pytest.raises(InputError, match=r"mean_rating: .* expected a number from 1 to 7"):
            evaluate_files(alone, [root / "engine.csv"], OPTIONS)
    else:  # read on the paper's scale, as before: the grades differ
        paper = evaluate_files(alone, [root / "engine.csv"], OPTIONS)
        assert paper.truth.scale == Scale(1, 7)
        assert not np.allclose(
            paper.truth.grade[paper.truth.judged], same.truth.grade[same.truth.judged]
        )


def test_a_summary_of_another_scale_is_refused(study, tmp_path):
    scale, root, data, *_ = study
    # The same analysis with its summary.json on another scale: the ground truth is still
    # the file analyze's record lists.
    folder = tmp_path / "analysis"
    shutil.copytree(root / "analysis", folder)
    summary = json.loads((folder / "summary.json").read_text())
    other = "1-3" if scale.k != 3 else "1-4"
    (folder / "summary.json").write_text(json.dumps({**summary, "scale": other}))
    with pytest.raises(
        InputError,
        match=rf"--scale: the scale {scale}, where .*summary.json is on"
        rf" {other}",
    ):
        evaluate_files(folder / "ground_truth.csv", [root / "engine.csv"], OPTIONS, scale=scale)
    with pytest.raises(InputError, match=rf"summary.json: the scale {other}, where the ratings"):
        evaluate_files(folder / "ground_truth.csv", [root / "engine.csv"], OPTIONS, ratings=data)
    (folder / "summary.json").write_text(json.dumps({**summary, "scale": "1-12"}))
    with pytest.raises(InputError, match=r"summary.json: scale: expected 2 to 9 points"):
        evaluate_files(folder / "ground_truth.csv", [root / "engine.csv"], OPTIONS)


@pytest.mark.parametrize("below", [1.0, 10.0, 5.0])
def test_the_cut_lies_on_the_scale(study, below):
    scale, root, *_ = study
    options = EvaluationOptions(relevant_below=below, bootstrap=100, permutations=100)
    if scale.low < below <= scale.high:
        evaluation = evaluate_files(
            root / "analysis" / "ground_truth.csv", [root / "engine.csv"], options
        )
        assert evaluation.options.relevant_below == below
        return
    message = rf"--relevant-below {below:g}: expected a mean rating above {scale.low} and at most"
    with pytest.raises(InputError, match=rf"{message} {scale.high}"):
        evaluate_files(root / "analysis" / "ground_truth.csv", [root / "engine.csv"], options)


def test_evaluate_scale_on_the_command_line(study, tmp_path, capsys):
    from sbir_study.cli import main

    scale, root, *_ = study
    alone = tmp_path / "ground_truth.csv"
    shutil.copy(root / "analysis" / "ground_truth.csv", alone)
    command = [
        "evaluate",
        "--ground-truth",
        str(alone),
        str(root / "engine.csv"),
        "--bootstrap",
        "100",
        "--permutations",
        "100",
        "--no-figures",
        "--scale",
        str(scale),
    ]
    assert main([*command, "--out", str(tmp_path / "out")]) == 0
    assert f"mean rating below {scale.relevant_below:g}" in capsys.readouterr().out
    record = json.loads((tmp_path / "out" / "evaluation.json").read_text())
    assert record["options"]["relevant_below"] == scale.relevant_below
    # A cut off the scale: one line, exit status 2.
    assert main([*command, "--out", str(tmp_path / "o2"), "--relevant-below", "12"]) == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "--relevant-below 12: expected a mean rating" in error
