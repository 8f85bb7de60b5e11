"""sbir-study evaluate and baseline: the files, the human ceiling, reproducibility, and
every bad input named with exit status 2."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from analysis import load_ratings
from analysis.retrieval.baseline import edge_orientation_histogram, write_trec_run
from analysis.retrieval.evaluation import EvaluationOptions, evaluate_rankings
from analysis.retrieval.runs import (
    RunWarning,
    ground_truth_from_frame,
    load_ground_truth,
    load_run,
    ranking_from_scores,
)
from stimuli import SetDesign, generate_set
from study.cli import main

FAST = ["--bootstrap", "200", "--permutations", "200"]


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """A generated set, six simulated participants on it, its analysis and two baseline runs."""
    root = tmp_path_factory.mktemp("evaluate")
    design = SetDesign(sketches=4, images_per_sketch=8, anchor_sketches=0, width=96, height=72)
    stimuli = generate_set(root / "set", design, seed=3)
    assert main(["simulate", "--stimuli", str(stimuli), "--participants", "6", "--out",
                 str(root / "data"), "--seed", "3"]) == 0  # fmt: skip
    assert main(["analyze", str(root / "data"), "--out", str(root / "analysis"),
                 "--no-figures"]) == 0  # fmt: skip
    assert main(["baseline", "--stimuli", str(stimuli), "--distance", "l1,chi2,linf",
                 "--out", str(root / "runs")]) == 0  # fmt: skip
    return root


def evaluate(study, out, *extra, runs=("l1", "chi2")):
    arguments = ["evaluate", "--ground-truth", str(study / "analysis" / "ground_truth.csv"),
                 *[str(study / "runs" / f"{r}.run") for r in runs], "--out", str(out), *FAST,
                 *extra]  # fmt: skip
    return main(arguments)


def test_evaluate_writes_every_table_with_the_human_ceiling(study, tmp_path, capsys):
    out = tmp_path / "eval"
    assert evaluate(study, out, "--ratings", str(study / "data")) == 0
    printed = capsys.readouterr().out
    assert "of human" in printed and "human" in printed
    per_sketch = pd.read_csv(out / "per_sketch.csv")
    assert per_sketch.columns.tolist() == ["system", "sketch_id", "metric", "value"]
    metrics = set(per_sketch["metric"])
    assert {"tau_b", "tau_b_pvalue", "ndcg", "ndcg@10", "p@5", "ap", "r_precision", "nn", "ft",
            "st", "e@32", "dcg_shrec", "avg_rank", "pwh@10", "psr"} <= metrics  # fmt: skip
    assert set(per_sketch["system"]) == {"l1", "chi2", "human"}
    assert per_sketch.groupby(["system", "metric"]).size().max() == 4  # one value per sketch
    summary = pd.read_csv(out / "summary.csv")
    assert summary.columns.tolist()[:5] == ["system", "metric", "mean", "ci_low", "ci_high"]
    tau = summary[summary["metric"] == "tau_b"].set_index("system")
    assert (tau["ci_low"] <= tau["mean"]).all() and (tau["mean"] <= tau["ci_high"]).all()
    fraction = summary[summary["metric"] == "tau_b_human_fraction"].set_index("system")
    assert fraction.loc["l1", "mean"] == pytest.approx(tau.loc["l1", "mean"]
                                                       / tau.loc["human", "mean"])  # fmt: skip
    # The human ceiling: each participant against the others' consensus, from analyze.
    human = pd.read_csv(out / "human_ceiling.csv", dtype={"participant": str})
    analysed = pd.read_csv(study / "analysis" / "consensus_tau.csv", dtype={"participant": str})
    merged = human.merge(analysed, on=["participant", "sketch_id"])
    np.testing.assert_allclose(merged["tau_b_loo_x"], merged["tau_b_loo_y"])
    assert tau.loc["human", "mean"] == pytest.approx(
        analysed.groupby("sketch_id")["tau_b_loo"].mean().mean()
    )
    comparisons = pd.read_csv(out / "comparisons.csv")
    assert {"wilcoxon_p_holm", "permutation_p_holm", "significant"} <= set(comparisons.columns)
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
        "systems_tau.png", "per_sketch_tau.png", "precision_recall.png"}  # fmt: skip


def test_the_same_seed_gives_the_same_files(study, tmp_path):
    for name in ("one", "two"):
        assert evaluate(study, tmp_path / name, "--seed", "5", "--no-figures") == 0
    for table in ("summary.csv", "comparisons.csv", "per_sketch.csv"):
        assert (tmp_path / "one" / table).read_bytes() == (tmp_path / "two" / table).read_bytes()


def test_without_ratings_there_is_no_human_row(study, tmp_path):
    out = tmp_path / "eval"
    assert evaluate(study, out, "--no-figures") == 0
    summary = pd.read_csv(out / "summary.csv")
    assert "human" not in set(summary["system"])
    assert "psr" not in set(summary["metric"]) and not (out / "human_ceiling.csv").exists()
    assert "No human ceiling" in (out / "report.html").read_text()


def test_a_distance_table_scores_like_the_trec_run(study, tmp_path):
    run = pd.read_csv(study / "runs" / "l1.run", sep=" ", header=None,
                      names=["sketch_id", "q0", "image_id", "rank", "score", "tag"])  # fmt: skip
    table = run.assign(distance=-run["score"])[["image_id", "sketch_id", "distance"]]
    table = table.rename(columns={"distance": "score"}).sample(frac=1.0, random_state=1)
    table.to_csv(tmp_path / "l1_distances.csv", index=False)
    truth = load_ground_truth(study / "analysis" / "ground_truth.csv")
    from_trec = load_run(study / "runs" / "l1.run", truth)
    from_csv = load_run(tmp_path / "l1_distances.csv", truth, lower_is_better=True)
    np.testing.assert_array_equal(from_csv.rank, from_trec.rank)
    np.testing.assert_allclose(from_csv.score, from_trec.score)
    assert from_csv.name == "l1_distances"


def test_write_trec_run_lists_the_run_in_trec_eval_order(tmp_path):
    frame = pd.DataFrame({"sketch_id": "s", "image_id": ["a", "b", "c", "d"],
                          "mean_rating": [1, 2, 3, 4]})  # fmt: skip
    truth = ground_truth_from_frame(frame)
    run = pd.DataFrame({"sketch_id": "s", "image_id": ["a", "b", "c", "d"],
                        "score": [0.5, 0.9, 0.5, 0.1]})  # fmt: skip
    path = write_trec_run(run, tmp_path / "run.txt", tag="t")
    listed = [line.split() for line in path.read_text().splitlines()]
    assert [f[2] for f in listed] == ["b", "c", "a", "d"]  # ties by decreasing id
    ranking = load_run(path, truth)
    assert ranking.rank[0].tolist() == [3.0, 1.0, 2.0, 4.0]
    assert [int(f[3]) for f in listed] == [1, 2, 3, 4]


def test_runs_rank_ties_like_trec_eval_and_missing_sketches_warn(tmp_path):
    frame = pd.DataFrame({"sketch_id": ["s", "s", "t"], "image_id": ["a", "b", "c"],
                          "mean_rating": [1, 5, 2]})  # fmt: skip
    truth = ground_truth_from_frame(frame)
    with pytest.warns(RunWarning, match="ranks no image for 1 ground-truth sketch"):
        ranking = ranking_from_scores(truth, ["s", "s", "s"], ["a", "b", "z"], [1.0, 1.0, 2.0])
    assert ranking.rank[0].tolist() == [3.0, 2.0]  # z first; then b before a (ids descending)
    assert np.isnan(ranking.rank[1]).all() and ranking.n_returned.tolist() == [3, 0]


def test_a_perfect_system_beats_a_reversed_one_on_every_measure():
    rng = np.random.default_rng(0)
    rows = [(f"s{s}", f"i{i}", rng.uniform(1, 7)) for s in range(12) for i in range(15)]
    frame = pd.DataFrame(rows, columns=["sketch_id", "image_id", "mean_rating"])
    truth = ground_truth_from_frame(frame)
    perfect = ranking_from_scores(truth, frame["sketch_id"], frame["image_id"],
                                  -frame["mean_rating"], name="perfect")  # fmt: skip
    reversed_ = ranking_from_scores(truth, frame["sketch_id"], frame["image_id"],
                                    frame["mean_rating"], name="reversed")  # fmt: skip
    evaluation = evaluate_rankings(truth, [perfect, reversed_],
                                   EvaluationOptions(bootstrap=200, permutations=500))  # fmt: skip
    summary = evaluation.summary.set_index(["system", "metric"])
    assert summary.loc[("perfect", "tau_b"), "mean"] == pytest.approx(1.0)
    assert summary.loc[("reversed", "tau_b"), "mean"] == pytest.approx(-1.0)
    assert summary.loc[("perfect", "ndcg"), "mean"] == pytest.approx(1.0)
    assert summary.loc[("perfect", "ap"), "mean"] == pytest.approx(1.0)
    # Lower is better for the average rank: the perfect system is marked better there too.
    for metric in ("tau_b", "ndcg", "ap", "avg_rank"):
        assert summary.loc[("perfect", metric), "significantly_better_than"] == "reversed"
        assert summary.loc[("reversed", metric), "significantly_better_than"] == ""


def test_baseline_descriptor_and_ranking_follow_the_latent_similarity(study):
    from stimuli import load_set

    stimulus_set = load_set(study / "set")
    manifest = stimulus_set.manifest
    vector = edge_orientation_histogram(stimulus_set.path(manifest["image_path"].iloc[0]))
    assert vector.shape == (128,) and vector.sum() == pytest.approx(1.0)
    # On the generated set, an image's latent similarity to its sketch should show in the
    # baseline's ranking: tau_b between the L1 scores and the latent similarity, per sketch.
    import scipy.stats

    run = pd.read_csv(study / "runs" / "l1.run", sep=" ", header=None,
                      names=["sketch_id", "q0", "image_id", "rank", "score", "tag"])  # fmt: skip
    merged = run.merge(manifest, on=["sketch_id", "image_id"])
    taus = [scipy.stats.kendalltau(g["score"], g["latent_similarity"]).statistic
            for _, g in merged.groupby("sketch_id")]  # fmt: skip
    assert np.mean(taus) > 0.3, taus


def run_file(tmp_path, text, name="run.txt"):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "text, fragments",
    [
        ("s01 Q0 x 1 0.5 t\nzz Q0 y 2 0.4 t\n", ["line 2", "sketch 'zz' is not in the ground"]),
        ("s01 Q0 x 1 0.5 t\ns01 Q0 y 2 0.4 t\ns01 Q0 x 3 0.3 t\n",
         ["line 3", "image 'x' is listed again for sketch 's01'", "first at", "line 1"]),
        ("s01 Q0 x 1 0.5 t\ns01 Q0 y 2 high t\n", ["line 2", "score: got 'high'"]),
        ("s01 Q0 x 1 0.5 t\ns01 Q0 y 2 0.4\n", ["line 2", "5 fields; expected 6"]),
        ("s01 Q0 x 1 0.5 t\n\ns01 Q0 y 2 nan t\n", ["line 3", "score", "finite number"]),
        ("sketch_id,image_id\ns01,x\n", ["line 1", "missing column 'score'"]),
        ("sketch_id,image_id,score\ns01,x,0.5\ns01,y\n", ["line 3", "2 fields; expected 3"]),
        ("", ["empty"]),
    ],
)  # fmt: skip
def test_bad_runs_exit_2_naming_file_and_line(study, tmp_path, capsys, text, fragments):
    suffix = ".csv" if text.startswith("sketch_id") else ".txt"
    gt = study / "analysis" / "ground_truth.csv"
    sketch = pd.read_csv(gt)["sketch_id"].iloc[0]
    path = run_file(tmp_path, text.replace("s01", sketch), "run" + suffix)
    code = main(["evaluate", "--ground-truth", str(gt), str(path), "--out", str(tmp_path / "o")])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert str(path) in err[0]
    for fragment in fragments:
        assert fragment.replace("s01", sketch) in err[0], err[0]


def test_irregular_whitespace_and_crlf_runs_still_parse(study, tmp_path):
    truth = load_ground_truth(study / "analysis" / "ground_truth.csv")
    lines = (study / "runs" / "l1.run").read_text().splitlines()
    spaced = run_file(tmp_path, "".join("  ".join(line.split()) + "\r\n" for line in lines))
    tabbed = run_file(tmp_path, "".join("\t".join(line.split()) + "\n" for line in lines), "t.txt")
    reference = load_run(study / "runs" / "l1.run", truth)
    for path in (spaced, tabbed):
        np.testing.assert_array_equal(load_run(path, truth).rank, reference.rank)


@pytest.mark.parametrize(
    "text, fragments",
    [
        ("sketch_id,image_id\ns,a\n", ["missing column 'mean_rating'"]),
        ("sketch_id,image_id,mean_rating\ns,a,2\ns,b,9\n", ["line 3", "mean_rating: got '9'"]),
        ("sketch_id,image_id,mean_rating\ns,a,2\ns,a,3\n",
         ["line 3", "(s, a) is listed again (first on line 2)"]),
        ("sketch_id,image_id,mean_rating\n,a,2\n", ["line 2", "sketch_id: empty"]),
    ],
)  # fmt: skip
def test_bad_ground_truth_exits_2(study, tmp_path, capsys, text, fragments):
    gt = run_file(tmp_path, text, "gt.csv")
    code = main(["evaluate", "--ground-truth", str(gt), str(study / "runs" / "l1.run"),
                 "--out", str(tmp_path / "o")])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err.strip()
    for fragment in fragments:
        assert fragment in err, err


def test_options_and_inputs_that_do_not_fit_exit_2(study, tmp_path, capsys):
    gt = study / "analysis" / "ground_truth.csv"
    l1 = study / "runs" / "l1.run"
    cases = [
        (["--name", "only-one"], "--name: given 1 times for 2 runs"),
        (["--name", "same", "--name", "same"], "run name 'same': given to two runs"),
        (["--name", "human", "--name", "x"], "reserved for the participants"),
    ]
    for extra, fragment in cases:
        code = main(["evaluate", "--ground-truth", str(gt), str(l1), str(l1), "--out",
                     str(tmp_path / "o"), *extra])  # fmt: skip
        assert code == 2
        assert fragment in capsys.readouterr().err
    # Ratings that are not the ones the ground truth came from.
    other = load_ratings(study / "data")
    row = other.index[(other["phase"] == "main") & other["rating"].isin([1, 2, 6, 7])][0]
    other.loc[row, "rating"] = 8 - other.loc[row, "rating"]
    other.to_csv(tmp_path / "other.csv", index=False)
    code = main(["evaluate", "--ground-truth", str(gt), str(l1), "--out", str(tmp_path / "o"),
                 "--ratings", str(tmp_path / "other.csv")])  # fmt: skip
    assert code == 2
    assert "expected the ratings the ground truth was computed from" in capsys.readouterr().err


def test_baseline_refuses_to_overwrite_and_checks_the_distance(study, tmp_path, capsys):
    target = tmp_path / "one.run"
    arguments = ["baseline", "--stimuli", str(study / "set"), "--distance", "cosine",
                 "--out", str(target)]  # fmt: skip
    assert main(arguments) == 0 and target.is_file()
    assert main(arguments) == 2
    assert "exists; pass --overwrite" in capsys.readouterr().err
    assert main([*arguments[:4], "cosin", "--out", str(tmp_path / "x.run")]) == 2
    assert "did you mean 'cosine'" in capsys.readouterr().err
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main([*arguments, "--overwrite", "--collection", "all"]) == 0
    lines = target.read_text().splitlines()
    assert len(lines) == 4 * 32  # every sketch ranks all 32 images of the set


@pytest.mark.parametrize(
    "content, name, line",
    [(b"s01 Q0 x 1 0.5 t\ns01 Q0 \xff 2 0.4 t\n", "run.txt", 2),
     (b"sketch_id,image_id,score\ns01,x,0.5\ns01,\xff,0.2\n", "run.csv", 3)],
)  # fmt: skip
def test_runs_that_are_not_utf8_name_the_line(study, tmp_path, capsys, content, name, line):
    gt = study / "analysis" / "ground_truth.csv"
    sketch = pd.read_csv(gt)["sketch_id"].iloc[0]
    path = tmp_path / name
    path.write_bytes(content.replace(b"s01", sketch.encode()))
    assert main(["evaluate", "--ground-truth", str(gt), str(path), "--out", str(tmp_path)]) == 2
    assert f"{path}, line {line}: not UTF-8 text" in capsys.readouterr().err
