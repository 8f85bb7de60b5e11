"""sbir-study evaluate and baseline: the files, the human ceiling, reproducibility, and
every bad input named with exit status 2."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from sbir_study.analysis import load_ratings
from sbir_study.analysis.retrieval.runs import load_ground_truth, load_run
from sbir_study.cli import main
from tests.helpers import PNG_OPTION

#: Fewer resamples, and the figures as PNG alone (tests.helpers.PNG_OPTION).
FAST = ["--bootstrap", "200", "--permutations", "200", *PNG_OPTION]


def evaluate(retrieval_study, out, *extra, runs=("l1", "chi2")):
    truth = retrieval_study / "analysis" / "ground_truth.csv"
    arguments = [
        "evaluate",
        "--ground-truth",
        str(truth),
        *[str(retrieval_study / "runs" / f"{r}.run") for r in runs],
        "--out",
        str(out),
        *FAST,
        *extra,
    ]
    return main(arguments)


def test_evaluate_writes_every_table_with_the_human_ceiling(retrieval_study, tmp_path, capsys):
    out = tmp_path / "eval"
    assert evaluate(retrieval_study, out, "--ratings", str(retrieval_study / "data")) == 0
    printed = capsys.readouterr().out
    assert "of human" in printed and "human" in printed
    per_sketch = pd.read_csv(out / "per_sketch.csv")
    assert per_sketch.columns.tolist() == ["system", "sketch_id", "measure", "value"]
    measures = set(per_sketch["measure"])
    assert {
        "tau_b",
        "tau_b_p_value",
        "ndcg",
        "ndcg@10",
        "p@5",
        "ap",
        "r_precision",
        "nn",
        "ft",
        "st",
        "e@32",
        "dcg_shrec",
        "avg_rank",
        "pwh@10",
        "psr",
    } <= measures
    assert set(per_sketch["system"]) == {"l1", "chi2", "human"}
    assert per_sketch.groupby(["system", "measure"]).size().max() == 4  # one value per sketch
    summary = pd.read_csv(out / "summary.csv")
    assert summary.columns.tolist()[:5] == ["system", "measure", "mean", "ci_low", "ci_high"]
    tau = summary[summary["measure"] == "tau_b"].set_index("system")
    assert (tau["ci_low"] <= tau["mean"]).all() and (tau["mean"] <= tau["ci_high"]).all()
    fraction = summary[summary["measure"] == "tau_b_human_fraction"].set_index("system")
    assert fraction.loc["l1", "mean"] == pytest.approx(
        tau.loc["l1", "mean"] / tau.loc["human", "mean"]
    )
    # The human ceiling: each participant against the others' consensus, from analyze.
    human = pd.read_csv(out / "human_ceiling.csv", dtype={"participant": str})
    analysed = pd.read_csv(
        retrieval_study / "analysis" / "consensus_tau.csv", dtype={"participant": str}
    )
    merged = human.merge(analysed, on=["participant", "sketch_id"])
    np.testing.assert_allclose(merged["tau_b_loo_x"], merged["tau_b_loo_y"])
    assert tau.loc["human", "mean"] == pytest.approx(
        analysed.groupby("sketch_id")["tau_b_loo"].mean().mean()
    )
    comparisons = pd.read_csv(out / "comparisons.csv")
    assert {"wilcoxon_p_value_holm", "permutation_p_value_holm", "significant"} <= set(
        comparisons.columns
    )
    assert set(comparisons["system_a"]) | set(comparisons["system_b"]) == {"l1", "chi2"}
    curve = pd.read_csv(out / "pr_curve.csv")
    assert len(curve) == 2 * 20 and curve["recall"].max() == 1.0
    record = json.loads((out / "evaluation.json").read_text())
    roles = [f["role"] for f in record["inputs"]["files"]]
    assert roles[:3] == ["ground truth", "run", "run"] and "ratings" in roles
    assert all(len(f["sha256"]) == 64 for f in record["inputs"]["files"])
    page = (out / "report.html").read_text()
    assert "Comparison" in page and "data:image/png;base64," in page and "http" not in page
    assert {p.name for p in (out / "figures").glob("*.png")} == {
        "systems_tau.png",
        "per_sketch_tau.png",
        "precision_recall.png",
    }


@pytest.fixture(scope="module")
def without_ratings(retrieval_study, tmp_path_factory):
    """The two runs scored without ratings and figures, seed 5 (read, never written to)."""
    out = tmp_path_factory.mktemp("evaluation") / "eval"
    assert evaluate(retrieval_study, out, "--seed", "5", "--no-figures") == 0
    return out


def test_the_same_seed_gives_the_same_files(retrieval_study, without_ratings, tmp_path):
    again = tmp_path / "again"
    assert evaluate(retrieval_study, again, "--seed", "5", "--no-figures") == 0
    for table in ("summary.csv", "comparisons.csv", "per_sketch.csv"):
        assert (again / table).read_bytes() == (without_ratings / table).read_bytes()


def test_score_precision_and_the_binary_judgement_are_recorded(retrieval_study, tmp_path, capsys):
    out = tmp_path / "eval"
    assert (
        evaluate(
            retrieval_study,
            out,
            "--no-figures",
            "--score-precision",
            "float64",
            "--relevant-below",
            "3",
        )
        == 0
    )
    record = json.loads((out / "evaluation.json").read_text())
    assert record["inputs"]["score_precision"] == "float64"
    assert record["options"]["relevant_below"] == 3.0
    assert record["scale"] == "1-7"  # the paper's, as analyze's summary.json says
    # The binary judgement written is the one used: mean rating below 3.
    truth = pd.read_csv(retrieval_study / "analysis" / "ground_truth.csv")
    qrels = pd.read_csv(
        out / "ground_truth_binary.qrels",
        sep=" ",
        header=None,
        names=["sketch_id", "zero", "image_id", "relevant"],
    )
    merged = qrels.merge(truth, on=["sketch_id", "image_id"])
    assert len(merged) == len(truth) and (merged["zero"] == 0).all()
    assert (merged["relevant"] == (merged["mean_rating"] < 3).astype(int)).all()
    with pytest.raises(SystemExit) as exit_status:  # argparse's own exit for a bad choice
        evaluate(retrieval_study, tmp_path / "x", "--score-precision", "float16")
    assert exit_status.value.code == 2
    assert "--score-precision" in capsys.readouterr().err


def test_without_ratings_there_is_no_human_row(without_ratings):
    out = without_ratings
    summary = pd.read_csv(out / "summary.csv")
    assert "human" not in set(summary["system"])
    assert "psr" not in set(summary["measure"]) and not (out / "human_ceiling.csv").exists()
    assert "No human ceiling" in (out / "report.html").read_text()


def test_a_distance_table_scores_like_the_trec_run(retrieval_study, tmp_path):
    run = pd.read_csv(
        retrieval_study / "runs" / "l1.run",
        sep=" ",
        header=None,
        names=["sketch_id", "q0", "image_id", "rank", "score", "tag"],
    )
    table = run.assign(distance=-run["score"])[["image_id", "sketch_id", "distance"]]
    table = table.rename(columns={"distance": "score"}).sample(frac=1.0, random_state=1)
    table.to_csv(tmp_path / "l1_distances.csv", index=False)
    truth = load_ground_truth(retrieval_study / "analysis" / "ground_truth.csv")
    from_trec = load_run(retrieval_study / "runs" / "l1.run", truth)
    from_csv = load_run(tmp_path / "l1_distances.csv", truth, lower_is_better=True)
    np.testing.assert_array_equal(from_csv.rank, from_trec.rank)
    np.testing.assert_allclose(from_csv.score, from_trec.score)
    assert from_csv.name == "l1_distances"


def evaluate_against(retrieval_study, ground_truth, out):
    """The exit status of evaluate scoring the l1 run against ``ground_truth``."""
    run = retrieval_study / "runs" / "l1.run"
    return main(["evaluate", "--ground-truth", str(ground_truth), str(run), "--out", str(out)])


def run_file(tmp_path, text, name="run.txt"):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "text, fragments",
    [
        ("s01 Q0 x 1 0.5 t\nzz Q0 y 2 0.4 t\n", ["line 2", "sketch 'zz' is not in the ground"]),
        (
            "s01 Q0 x 1 0.5 t\ns01 Q0 y 2 0.4 t\ns01 Q0 x 3 0.3 t\n",
            ["line 3", "image 'x' is listed again for sketch 's01'", "first at", "line 1"],
        ),
        ("s01 Q0 x 1 0.5 t\ns01 Q0 y 2 high t\n", ["line 2", "score: got 'high'"]),
        ("s01 Q0 x 1 0.5 t\ns01 Q0 y 2 0.4\n", ["line 2", "5 fields; expected 6"]),
        ("s01 Q0 x 1 0.5 t\n\ns01 Q0 y 2 nan t\n", ["line 3", "score", "finite number"]),
        ("sketch_id,image_id\ns01,x\n", ["line 1", "missing column 'score'"]),
        ("sketch_id,image_id,score\ns01,x,0.5\ns01,y\n", ["line 3", "2 fields; expected 3"]),
        ("", ["empty"]),
    ],
)
def test_bad_runs_exit_2_naming_file_and_line(retrieval_study, tmp_path, capsys, text, fragments):
    suffix = ".csv" if text.startswith("sketch_id") else ".txt"
    gt = retrieval_study / "analysis" / "ground_truth.csv"
    sketch = pd.read_csv(gt)["sketch_id"].iloc[0]
    path = run_file(tmp_path, text.replace("s01", sketch), "run" + suffix)
    code = main(["evaluate", "--ground-truth", str(gt), str(path), "--out", str(tmp_path / "o")])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert str(path) in err[0]
    for fragment in fragments:
        assert fragment.replace("s01", sketch) in err[0], err[0]


@pytest.mark.parametrize(
    "text, fragments",
    [
        ("sketch_id,image_id\ns,a\n", ["missing column 'mean_rating'"]),
        ("sketch_id,image_id,mean_rating\ns,a,2\ns,b,9\n", ["line 3", "mean_rating: got '9'"]),
        (
            "sketch_id,image_id,mean_rating\ns,a,2\ns,a,3\n",
            ["line 3", "(s, a) is listed again (first on line 2)"],
        ),
        ("sketch_id,image_id,mean_rating\n,a,2\n", ["line 2", "sketch_id: empty"]),
    ],
)
def test_bad_ground_truth_exits_2(retrieval_study, tmp_path, capsys, text, fragments):
    gt = run_file(tmp_path, text, "gt.csv")
    assert evaluate_against(retrieval_study, gt, tmp_path / "o") == 2
    err = capsys.readouterr().err.strip()
    for fragment in fragments:
        assert fragment in err, err


def test_options_and_inputs_that_do_not_fit_exit_2(retrieval_study, tmp_path, capsys):
    gt = retrieval_study / "analysis" / "ground_truth.csv"
    l1 = retrieval_study / "runs" / "l1.run"
    cases = [
        (["--name", "only-one"], "--name: given 1 times for 2 runs"),
        (["--name", "same", "--name", "same"], "run name 'same': given to two runs"),
        (["--name", "human", "--name", "x"], "reserved for the participants"),
    ]
    for extra, fragment in cases:
        code = main(
            [
                "evaluate",
                "--ground-truth",
                str(gt),
                str(l1),
                str(l1),
                "--out",
                str(tmp_path / "o"),
                *extra,
            ]
        )
        assert code == 2
        assert fragment in capsys.readouterr().err
    # Ratings that are not the ones the ground truth came from.
    other = load_ratings(retrieval_study / "data")
    row = other.index[(other["phase"] == "main") & other["rating"].isin([1, 2, 6, 7])][0]
    other.loc[row, "rating"] = 8 - other.loc[row, "rating"]
    other.to_csv(tmp_path / "other.csv", index=False)
    code = main(
        [
            "evaluate",
            "--ground-truth",
            str(gt),
            str(l1),
            "--out",
            str(tmp_path / "o"),
            "--ratings",
            str(tmp_path / "other.csv"),
        ]
    )
    assert code == 2
    assert "expected the ratings the ground truth was computed from" in capsys.readouterr().err


def test_baseline_refuses_to_overwrite_and_checks_the_distance(retrieval_study, tmp_path, capsys):
    target = tmp_path / "one.run"
    arguments = [
        "baseline",
        "--stimuli",
        str(retrieval_study / "set"),
        "--distance",
        "cosine",
        "--out",
        str(target),
    ]
    assert main(arguments) == 0 and target.is_file()
    assert main(arguments) == 2
    assert "exists (the output of an earlier sbir-study baseline); pass --overwrite" in (
        capsys.readouterr().err
    )
    assert main([*arguments[:4], "cosin", "--out", str(tmp_path / "x.run")]) == 2
    assert "did you mean 'cosine'" in capsys.readouterr().err
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main([*arguments, "--overwrite", "--collection", "all"]) == 0
    lines = target.read_text().splitlines()
    assert len(lines) == 4 * 32  # every sketch ranks all 32 images of the set


@pytest.mark.parametrize(
    "content, name, line",
    [
        (b"s01 Q0 x 1 0.5 t\ns01 Q0 \xff 2 0.4 t\n", "run.txt", 2),
        (b"sketch_id,image_id,score\ns01,x,0.5\ns01,\xff,0.2\n", "run.csv", 3),
    ],
)
def test_runs_that_are_not_utf8_name_the_line(
    retrieval_study, tmp_path, capsys, content, name, line
):
    gt = retrieval_study / "analysis" / "ground_truth.csv"
    sketch = pd.read_csv(gt)["sketch_id"].iloc[0]
    path = tmp_path / name
    path.write_bytes(content.replace(b"s01", sketch.encode()))
    out = tmp_path / "out"
    assert main(["evaluate", "--ground-truth", str(gt), str(path), "--out", str(out)]) == 2
    assert f"{path}, line {line}: not UTF-8 text" in capsys.readouterr().err


def test_a_run_that_shares_no_sketch_exits_2_naming_it(retrieval_study, tmp_path, capsys):
    gt = retrieval_study / "analysis" / "ground_truth.csv"
    sketch = pd.read_csv(gt)["sketch_id"].iloc[0]
    path = run_file(tmp_path, f"{sketch} Q0 not_judged 1 0.5 t\n", "unrelated.run")
    code = main(["evaluate", "--ground-truth", str(gt), str(path), "--out", str(tmp_path / "o")])
    assert code == 2
    err = [line for line in capsys.readouterr().err.strip().splitlines() if "error" in line]
    assert len(err) == 1, err
    assert str(path) in err[0] and "no judged image" in err[0]


def test_missing_sketches_are_named_and_scored_by_the_option(retrieval_study, tmp_path, capsys):
    run = (retrieval_study / "runs" / "l1.run").read_text().splitlines()
    sketches = sorted({line.split()[0] for line in run})
    path = run_file(
        tmp_path,
        "\n".join(line for line in run if not line.startswith(sketches[1] + " ")) + "\n",
        "part.run",
    )
    means = {}
    for missing in ("zero", "skip"):
        out = tmp_path / missing
        arguments = [
            "evaluate",
            "--ground-truth",
            str(retrieval_study / "analysis" / "ground_truth.csv"),
            str(path),
            str(retrieval_study / "runs" / "chi2.run"),
            "--out",
            str(out),
            "--missing",
            missing,
            *FAST,
        ]
        assert main(arguments) == 0
        printed, err = capsys.readouterr()
        assert f"part: ranks no image for 1 ground-truth sketch(es): {sketches[1]}" in err
        assert f"on 3 of 4 sketches (missing {sketches[1]}" in printed
        summary = pd.read_csv(out / "summary.csv", keep_default_na=False).set_index(
            ["system", "measure"]
        )
        assert summary.loc[("part", "tau_b"), "missing_sketches"] == sketches[1]
        assert summary.loc[("chi2", "tau_b"), "missing_sketches"] == ""
        assert summary.loc[("part", "tau_b"), "n_sketches"] == (4 if missing == "zero" else 3)
        means[missing] = summary.loc[("part", "tau_b"), "mean"]
        per_sketch = pd.read_csv(out / "per_sketch.csv")
        tau = per_sketch.query("system == 'part' and measure == 'tau_b'")
        # 0 for the missing sketch, or left out: the mean over 4 is 3/4 of the mean over 3.
        assert tau["value"].sum() == pytest.approx(
            float(means[missing]) * (4 if missing == "zero" else 3)
        )
    assert means["zero"] == pytest.approx(means["skip"] * 3 / 4)


def test_one_system_is_one_system_with_nothing_to_compare(retrieval_study, tmp_path, capsys):
    out = tmp_path / "one"
    assert evaluate(retrieval_study, out, runs=("l1",)) == 0
    printed = capsys.readouterr().out
    assert "Scored 1 system on" in printed and "one system: nothing to compare" in printed
    page = (out / "report.html").read_text()
    assert "1 system scored" in page and "1 systems" not in page
    assert "One system: nothing to compare." in page and "0 of 0" not in page


def test_baseline_and_correction_options(retrieval_study, tmp_path, capsys):
    out = tmp_path / "base"
    runs = ("l1", "chi2", "linf")
    assert (
        evaluate(
            retrieval_study, out, "--baseline", "chi2", "--correct", "across-measures", runs=runs
        )
        == 0
    )
    comparisons = pd.read_csv(out / "comparisons.csv")
    assert set(comparisons["system_b"]) == {"chi2"}
    assert set(comparisons["system_a"]) == {"l1", "linf"}
    assert {
        "difference_ci_low",
        "difference_ci_high",
        "effect_size_dz",
        "t_p_value_holm",
        "rejected_by",
        "tests_disagree",
    } <= set(comparisons.columns)
    from statsmodels.stats.multitest import multipletests

    defined = comparisons["permutation_p_value"].notna()
    holm = multipletests(comparisons.loc[defined, "permutation_p_value"], method="holm")[1]
    np.testing.assert_allclose(comparisons.loc[defined, "permutation_p_value_holm"], holm)
    capsys.readouterr()
    assert evaluate(retrieval_study, tmp_path / "bad", "--baseline", "nothere", runs=runs) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--baseline nothere" in err[0]


@pytest.mark.parametrize(
    "text, fragments",
    [
        ("s01 0 a 1\ns01 0 b x\n", ["line 2", "grade: got 'x'", "whole number >= 0"]),
        ("s01 0 a 1\ns01 0 b 1.5\n", ["line 2", "grade: got '1.5'"]),
        ("s01 0 a 1\n\ns01 0 b -1\n", ["line 3", "grade: got '-1'"]),
        ("s01 0 a 1\ns01 0 b\n", ["line 2", "3 fields; expected 4 (sketch_id 0 image_id grade)"]),
        ("s01 0 a 1\ns01 0 a 2\n", ["line 2", "the pair (s01, a) is listed again", "line 1"]),
        ("s01 0 a/b 1\n", ["line 1", "image_id"]),
    ],
)
def test_bad_qrels_exit_2_naming_file_and_line(retrieval_study, tmp_path, capsys, text, fragments):
    path = run_file(tmp_path, text, "truth.qrels")
    assert evaluate_against(retrieval_study, path, tmp_path / "o") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert str(path) in err[0]
    for fragment in fragments:
        assert fragment in err[0], err[0]
