"""Runs that leave sketches out, the paired comparisons, and the trec_eval -q files.

References: trec_eval through pytrec_eval-terrier (it scores only the queries of the run;
the -c rule averages over every query of the qrels, the missing ones at 0), SciPy
(kendalltau, ttest_rel, wilcoxon, bootstrap), statsmodels' multipletests (Holm) and
ranx's compare (Student's t and Fisher's randomization test).
"""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from sbir_study.analysis.retrieval.baseline import write_trec_run
from sbir_study.analysis.retrieval.comparison import compare_systems
from sbir_study.analysis.retrieval.evaluation import EvaluationOptions
from sbir_study.analysis.retrieval.evaluation_inputs import evaluate_files
from sbir_study.analysis.retrieval.evaluation_outputs import format_evaluation, write_evaluation
from sbir_study.foundation.checks import InputError
from tests.helpers import analysed_simulation

FAST = dict(bootstrap=200, permutations=200, cutoffs=(5, 10))


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """analyze's files for 8 simulated participants on 6 sketches x 24 images, and three
    runs without ties: the consensus with noise of three sizes."""
    root = tmp_path_factory.mktemp("missing")
    analysed_simulation(root, participants=8, sketches=6, images=24, seed=31)
    truth = pd.read_csv(root / "analysis" / "ground_truth.csv")
    rng = np.random.default_rng(5)
    for name, noise in (("good", 0.5), ("fair", 1.5), ("poor", 4.0)):
        run = truth[["sketch_id", "image_id"]].copy()
        run["score"] = -truth["mean_rating"] + rng.normal(scale=noise, size=len(truth))
        run.to_csv(root / f"{name}.csv", index=False)
    return root


def _qrels(study, name):
    import pytrec_eval

    with open(study / "analysis" / name) as f:
        return pytrec_eval.parse_qrel(f)


def _pytrec(study, run: pd.DataFrame):
    """trec_eval's per-query ndcg (graded qrels), map and P_5 (binary qrels) of ``run``."""
    import pytrec_eval

    as_run = {}
    for row in run.itertuples():
        as_run.setdefault(str(row.sketch_id), {})[str(row.image_id)] = float(row.score)
    graded = pytrec_eval.RelevanceEvaluator(_qrels(study, "ground_truth.qrels"), {"ndcg"})
    binary = pytrec_eval.RelevanceEvaluator(
        _qrels(study, "ground_truth_binary.qrels"), {"map", "P.5"}
    )
    found = graded.evaluate(as_run)
    for query, values in binary.evaluate(as_run).items():
        found[query].update(values)
    return found


def _without(study, tmp_path, dropped):
    run = pd.read_csv(study / "fair.csv")
    kept = run[~run["sketch_id"].isin(dropped)]
    path = tmp_path / "fair_missing.csv"
    kept.to_csv(path, index=False)
    return kept, path


@pytest.mark.parametrize("missing", ["zero", "skip"])
def test_a_run_that_leaves_out_a_sketch_is_scored_as_trec_eval_does(study, tmp_path, missing):
    truth = pd.read_csv(study / "analysis" / "ground_truth.csv")
    sketches = sorted(truth["sketch_id"].astype(str).unique())
    kept, path = _without(study, tmp_path, [sketches[2]])
    trec = _pytrec(study, kept)
    assert set(trec) == set(sketches) - {sketches[2]}  # pytrec_eval scores the run's queries
    with pytest.warns(UserWarning, match="ranks no image"):
        evaluation = evaluate_files(
            study / "analysis" / "ground_truth.csv",
            [path],
            EvaluationOptions(missing=missing, **FAST),
        )
    summary = evaluation.summary.set_index("measure")
    per_sketch = evaluation.per_sketch.pivot(index="sketch_id", columns="measure", values="value")
    for ours, theirs in (("ndcg", "ndcg"), ("ap", "map"), ("p@5", "P_5")):
        values = [trec[s][theirs] for s in sorted(trec)]
        # The -c rule: the missing query counts 0 over all qrels queries; without it, the mean
        # over the run's queries.
        expected = sum(values) / (len(sketches) if missing == "zero" else len(values))
        assert summary.loc[ours, "mean"] == pytest.approx(expected, abs=1e-12), ours
        for sketch in trec:
            assert per_sketch.loc[sketch, ours] == pytest.approx(trec[sketch][theirs], abs=1e-12)
    # tau_b too, against SciPy's kendalltau per sketch: 0 or left out, as the others.
    taus = []
    for sketch in sorted(trec):
        pairs = truth[truth["sketch_id"].astype(str) == sketch].merge(
            kept, on=["sketch_id", "image_id"]
        )
        taus.append(stats.kendalltau(pairs["score"], -pairs["mean_rating"]).statistic)
    expected_tau = sum(taus) / (len(sketches) if missing == "zero" else len(taus))
    assert summary.loc["tau_b", "mean"] == pytest.approx(expected_tau, abs=1e-12)
    assert summary.loc["tau_b", "n_sketches"] == (6 if missing == "zero" else 5)
    # Every measure stands on the same sketches.
    assert set(summary["n_sketches"]) <= {6 if missing == "zero" else 5}
    assert (summary["sketches_ranked"] == 5).all()
    assert (summary["sketches_in_ground_truth"] == 6).all()
    assert (summary["missing_sketches"] == sketches[2]).all()
    line = format_evaluation(evaluation, tmp_path / "out").splitlines()[1]
    assert f"on 5 of 6 sketches (missing {sketches[2]}" in line
    out = tmp_path / "out"
    write_evaluation(evaluation, out, figures=False)
    page = (out / "report.html").read_text()
    assert "5 of 6 sketches" in page and sketches[2] in page
    written = pd.read_csv(out / "summary.csv", keep_default_na=False)
    assert set(written["missing_sketches"]) == {sketches[2]}


def test_a_sketch_with_no_judged_image_returned_counts_as_missing(study, tmp_path):
    truth = pd.read_csv(study / "analysis" / "ground_truth.csv")
    sketches = sorted(truth["sketch_id"].astype(str).unique())
    run = pd.read_csv(study / "fair.csv")
    only_unjudged = run["sketch_id"].astype(str) == sketches[0]
    run.loc[only_unjudged, "image_id"] = [f"unjudged{i}" for i in range(only_unjudged.sum())]
    path = tmp_path / "odd.csv"
    run.to_csv(path, index=False)
    evaluation = evaluate_files(
        study / "analysis" / "ground_truth.csv", [path], EvaluationOptions(**FAST)
    )
    assert evaluation.missing == {"odd": [sketches[0]]}
    tau = evaluation.per_sketch.query("measure == 'tau_b'").set_index("sketch_id")["value"]
    assert tau[sketches[0]] == 0.0 and tau.notna().all()


def test_a_run_that_shares_no_sketch_is_refused_naming_it(study, tmp_path):
    run = pd.read_csv(study / "fair.csv")
    run["image_id"] = [f"other{i}" for i in range(len(run))]
    path = tmp_path / "elsewhere.csv"
    run.to_csv(path, index=False)
    with pytest.raises(InputError, match=r"elsewhere\.csv: returns no"):
        evaluate_files(study / "analysis" / "ground_truth.csv", [path], EvaluationOptions(**FAST))


def _long(values: dict[str, np.ndarray], measure="m") -> pd.DataFrame:
    frames = [
        pd.DataFrame(
            {
                "system": name,
                "sketch_id": [f"s{i:02d}" for i in range(len(v))],
                "measure": measure,
                "value": v,
            }
        )
        for name, v in values.items()
    ]
    return pd.concat(frames, ignore_index=True)


def test_comparisons_match_scipy_and_statsmodels():
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(3)
    systems = {
        name: rng.uniform(0, 1, 20) + shift for name, shift in (("a", 0.0), ("b", 0.1), ("c", 0.3))
    }
    table = pd.concat(
        [_long(systems, "m1"), _long({k: v[::-1] * 0.5 for k, v in systems.items()}, "m2")]
    )
    pairs = compare_systems(table, n_resamples=500, bootstrap=1000, seed=4)
    assert len(pairs) == 6
    for row in pairs.itertuples():
        wide = table[table["measure"] == row.measure].pivot(
            index="sketch_id", columns="system", values="value"
        )
        a, b = wide[row.system_a].to_numpy(), wide[row.system_b].to_numpy()
        t = stats.ttest_rel(a, b)
        assert row.t_statistic == pytest.approx(t.statistic, rel=1e-12)
        assert row.t_p_value == pytest.approx(t.pvalue, rel=1e-12)
        assert row.wilcoxon_p_value == pytest.approx(stats.wilcoxon(a - b).pvalue, rel=1e-12)
        # Cohen's d_z is t / sqrt(n) of the paired t-test (Lakens 2013, Eq. 7).
        assert row.effect_size_dz == pytest.approx(t.statistic / np.sqrt(20), rel=1e-12)
        interval = stats.bootstrap(
            (a - b,), np.mean, method="percentile", n_resamples=1000, rng=np.random.default_rng(4)
        ).confidence_interval
        assert (row.difference_ci_low, row.difference_ci_high) == pytest.approx(
            (interval.low, interval.high), rel=1e-12
        )
    for test in ("t", "wilcoxon", "permutation"):
        for _, group in pairs.groupby("measure"):
            holm = multipletests(group[f"{test}_p_value"], method="holm")[1]
            np.testing.assert_allclose(group[f"{test}_p_value_holm"], holm, rtol=1e-12)
    across = compare_systems(
        table, n_resamples=500, bootstrap=1000, seed=4, correct="across-measures"
    )
    holm = multipletests(across["t_p_value"], method="holm")[1]
    np.testing.assert_allclose(across["t_p_value_holm"], holm, rtol=1e-12)
    assert (across["t_p_value_holm"] >= pairs["t_p_value_holm"] - 1e-15).all()
    assert (across["t_p_value_holm"] > pairs["t_p_value_holm"]).any()


def test_baseline_compares_each_system_with_it_only():
    rng = np.random.default_rng(8)
    table = _long({name: rng.uniform(size=12) for name in ("a", "b", "c", "d")})
    pairs = compare_systems(table, baseline="b", n_resamples=200, bootstrap=200)
    assert list(zip(pairs["system_a"], pairs["system_b"], strict=True)) == [
        ("a", "b"),
        ("c", "b"),
        ("d", "b"),
    ]
    wide = table.pivot(index="sketch_id", columns="system", values="value")
    expected = (wide["c"] - wide["b"]).mean()
    assert pairs.loc[1, "mean_difference"] == pytest.approx(expected, rel=1e-12)
    with pytest.raises(InputError, match="--baseline z"):
        compare_systems(table, baseline="z")


def test_the_row_says_when_the_tests_disagree():
    # Many small gains and one large loss: the signed ranks favour a, the mean does not.
    a = np.r_[np.full(14, 0.6), 0.0]
    b = np.r_[np.full(14, 0.5) - np.linspace(0, 0.01, 14), 3.0]
    row = compare_systems(_long({"a": a, "b": b}), n_resamples=5000).iloc[0]
    d = a - b
    rejects = {
        "t": stats.ttest_rel(a, b).pvalue < 0.05,
        "wilcoxon": stats.wilcoxon(d).pvalue < 0.05,
        "permutation": stats.permutation_test(
            (d,), np.mean, permutation_type="samples", n_resamples=5000
        ).pvalue
        < 0.05,
    }
    assert rejects == {"t": False, "wilcoxon": True, "permutation": False}  # the example holds
    assert row["rejected_by"] == "wilcoxon"
    assert bool(row["tests_disagree"])


@settings(max_examples=20, deadline=None)
@given(st.lists(st.floats(-1, 1, allow_nan=False), min_size=3, max_size=15), st.floats(-0.5, 0.5))
def test_the_decision_is_the_tests_own(d, shift):
    b = np.linspace(0, 1, len(d))
    a = b + np.asarray(d) + shift
    row = compare_systems(_long({"a": a, "b": b}), n_resamples=100, bootstrap=100).iloc[0]
    p = {test: row[f"{test}_p_value_holm"] for test in ("t", "wilcoxon", "permutation")}
    rejecting = {t for t, value in p.items() if value < 0.05}
    accepting = {t for t, value in p.items() if value >= 0.05}
    assert set(filter(None, row["rejected_by"].split(";"))) == rejecting
    assert bool(row["tests_disagree"]) == (bool(rejecting) and bool(accepting))
    if np.ptp(a - b) > 1e-9:
        assert row["t_p_value"] == pytest.approx(stats.ttest_rel(a, b).pvalue, rel=1e-9)


@pytest.mark.filterwarnings("ignore:unsafe cast from uint64 to int64")
def test_comparisons_match_ranx_compare(study, tmp_path):
    from ranx import Qrels, Run, compare

    names = ["good", "fair", "poor"]
    paths = []
    for name in names:
        run = pd.read_csv(study / f"{name}.csv")
        paths.append(write_trec_run(run, tmp_path / f"{name}.run", tag=name))
    evaluation = evaluate_files(
        study / "analysis" / "ground_truth.csv",
        paths,
        EvaluationOptions(bootstrap=200, permutations=10_000),
    )
    ours = evaluation.comparisons.set_index(["measure", "system_a", "system_b"])
    binary = Qrels.from_file(str(study / "analysis" / "ground_truth_binary.qrels"), kind="trec")
    runs = [Run.from_file(str(p), kind="trec", name=n) for p, n in zip(paths, names, strict=True)]
    for test in ("student", "fisher"):
        report = compare(
            binary,
            runs,
            ["map", "precision@5"],
            stat_test=test,
            n_permutations=2000,
            make_comparable=True,
        )
        for metric, measure in (("map", "ap"), ("precision@5", "p@5")):
            for (a, b), row in ours.xs(measure, level="measure").iterrows():
                theirs = report.comparisons[a, b][metric]["p_value"]
                if test == "student":
                    assert row["t_p_value"] == pytest.approx(theirs, rel=1e-9), (measure, a, b)
                else:
                    # ranx draws 2000 random swaps; ours enumerates the 64 sign patterns of
                    # 6 sketches: the same null distribution, up to ranx's sampling error.
                    assert row["permutation_p_value"] == pytest.approx(theirs, abs=0.04)


def test_trec_eval_q_files_hold_pytrec_evals_per_query_values(study, tmp_path):
    run = pd.read_csv(study / "good.csv")
    evaluation = evaluate_files(
        study / "analysis" / "ground_truth.csv",
        [study / "good.csv", study / "poor.csv"],
        EvaluationOptions(**FAST),
    )
    out = tmp_path / "out"
    write_evaluation(evaluation, out, figures=False)
    assert sorted(p.name for p in (out / "per_sketch_trec").iterdir()) == ["good.txt", "poor.txt"]
    lines = (out / "per_sketch_trec" / "good.txt").read_text().splitlines()
    parsed = [line.split("\t") for line in lines]
    assert all(len(fields) == 3 for fields in parsed)
    values = {(m.strip(), q): float(v) for m, q, v in parsed}
    trec = _pytrec(study, run)
    for sketch, measures in trec.items():
        for name in ("ndcg", "map", "P_5"):
            assert values[(name, sketch)] == pytest.approx(measures[name], abs=5e-5)
    # The all lines come last, one per measure, the means over the sketches.
    first_all = next(i for i, fields in enumerate(parsed) if fields[1] == "all")
    assert all(fields[1] == "all" for fields in parsed[first_all:])
    for name in ("ndcg", "map", "P_5"):
        mean = np.mean([measures[name] for measures in trec.values()])
        assert values[(name, "all")] == pytest.approx(mean, abs=5e-5)
    assert ("tau_b", "all") in values


@pytest.mark.parametrize("qrels", ["ground_truth.qrels", "ground_truth_binary.qrels"])
def test_qrels_as_the_ground_truth_score_as_trec_eval_does(study, tmp_path, qrels):
    import pytrec_eval

    run = pd.read_csv(study / "fair.csv")
    evaluation = evaluate_files(
        study / "analysis" / qrels, [study / "fair.csv"], EvaluationOptions(**FAST)
    )
    assert evaluation.truth.from_qrels
    as_run = {}
    for row in run.itertuples():
        as_run.setdefault(str(row.sketch_id), {})[str(row.image_id)] = float(row.score)
    # trec_eval's default relevance level 1: grade >= 1 is relevant, the grades are the gains.
    trec = pytrec_eval.RelevanceEvaluator(_qrels(study, qrels), {"ndcg", "map", "P.5"}).evaluate(
        as_run
    )
    ours = evaluation.per_sketch.pivot(index="sketch_id", columns="measure", values="value")
    graded = pd.read_csv(
        study / "analysis" / qrels,
        sep=" ",
        header=None,
        names=["sketch_id", "q0", "image_id", "grade"],
    )
    compared = 0
    for sketch, values in trec.items():
        for name, theirs in (("ndcg", "ndcg"), ("ap", "map"), ("p@5", "P_5")):
            if np.isnan(ours.loc[sketch, name]):  # no relevant image: undefined for us
                assert values[theirs] == 0.0
                continue
            assert ours.loc[sketch, name] == pytest.approx(values[theirs], abs=1e-12)
            compared += 1
        # tau_b against the grades, ties among equal grades and all: SciPy's kendalltau.
        pairs = graded[graded["sketch_id"].astype(str) == sketch].merge(
            run, on=["sketch_id", "image_id"]
        )
        expected = stats.kendalltau(pairs["score"], pairs["grade"]).statistic
        assert ours.loc[sketch, "tau_b"] == pytest.approx(expected, abs=1e-12)
    assert compared >= 10
    out = tmp_path / "out"
    write_evaluation(evaluation, out, figures=False)
    binary = pd.read_csv(
        out / "ground_truth_binary.qrels",
        sep=" ",
        header=None,
        names=["sketch_id", "q0", "image_id", "relevant"],
    )
    merged = binary.merge(graded, on=["sketch_id", "image_id"])
    assert len(merged) == len(graded)
    assert (merged["relevant"] == (merged["grade"] >= 1).astype(int)).all()
    page = (out / "report.html").read_text()
    assert "grade 1 or more as relevant" in page
    with pytest.raises(InputError, match="--relevant-below 3: a cut of mean ratings"):
        evaluate_files(
            study / "analysis" / qrels,
            [study / "fair.csv"],
            EvaluationOptions(relevant_below=3.0, **FAST),
        )
    with pytest.raises(InputError, match=r"--ratings: the ground truth .* is TREC qrels"):
        evaluate_files(
            study / "analysis" / qrels,
            [study / "fair.csv"],
            EvaluationOptions(**FAST),
            ratings=study / "ratings.csv",
        )


_ID = st.text("abcxyz019_-.", min_size=1, max_size=6).filter(lambda s: s[0].isalnum())


@settings(max_examples=40, deadline=None)
@given(
    st.dictionaries(st.tuples(_ID, _ID), st.integers(0, 9), min_size=1, max_size=20),
    st.sampled_from([" ", "\t", "  "]),
)
def test_qrels_read_back_the_grades_they_hold(tmp_path_factory, grades, sep):
    from sbir_study.analysis.retrieval.runs import load_ground_truth

    path = tmp_path_factory.mktemp("qrels") / "truth.qrels"
    path.write_text("".join(f"{s}{sep}0{sep}{i}{sep}{g}\n" for (s, i), g in grades.items()))
    truth = load_ground_truth(path)
    assert truth.from_qrels
    read = {}
    for s, (sketch, images) in enumerate(zip(truth.sketches, truth.images, strict=True)):
        for j, image in enumerate(images):
            read[(sketch, image)] = truth.grade[s, j]
    assert read == grades
    assert (truth.relevant(None)[truth.judged] == (truth.grade[truth.judged] >= 1)).all()


@pytest.mark.parametrize("name", ["a/b", "..", "a\\b"])
def test_a_run_name_that_is_no_file_name_is_refused(study, name):
    with pytest.raises(InputError, match="expected a name without a path separator"):
        evaluate_files(
            study / "analysis" / "ground_truth.csv",
            [study / "fair.csv"],
            EvaluationOptions(**FAST),
            names=[name],
        )


@pytest.mark.filterwarnings("ignore::sbir_study.analysis.retrieval.runs.RunWarning")
@settings(max_examples=15, deadline=None)
@given(st.integers(2, 5), st.integers(3, 6), st.data())
def test_zero_and_skip_agree_on_the_sketches_a_run_ranks(n_sketches, n_images, data):
    # The two rules differ only on the sketches left out: there every measure is 0 (the
    # average rank its worst) under zero, and absent (NaN) under skip.
    from sbir_study.analysis.retrieval.evaluation import evaluate_runs
    from sbir_study.analysis.retrieval.runs import ground_truth_from_frame, run_from_scores

    ratings = data.draw(
        st.lists(st.floats(1, 7), min_size=n_sketches * n_images, max_size=n_sketches * n_images)
    )
    sketches = [f"s{s}" for s in range(n_sketches)]
    truth = ground_truth_from_frame(
        pd.DataFrame(
            {
                "sketch_id": np.repeat(sketches, n_images),
                "image_id": [f"i{j}" for j in range(n_images)] * n_sketches,
                "mean_rating": ratings,
            }
        )
    )
    kept = data.draw(st.sets(st.sampled_from(sketches), min_size=1, max_size=n_sketches - 1))
    rows = [(s, f"i{j}", float(-j)) for s in sorted(kept) for j in range(n_images)]
    run = run_from_scores(truth, *map(list, zip(*rows, strict=True)), name="r")
    tables = {}
    for missing in ("zero", "skip"):
        options = EvaluationOptions(missing=missing, bootstrap=100, permutations=100)
        evaluation = evaluate_runs(truth, [run], options)
        assert evaluation.missing == {"r": sorted(set(sketches) - kept)}
        tables[missing] = evaluation.per_sketch.pivot(
            index="sketch_id", columns="measure", values="value"
        )
    zero, skip = tables["zero"], tables["skip"]
    ranked, left_out = sorted(kept), sorted(set(sketches) - kept)
    pd.testing.assert_frame_equal(zero.loc[ranked], skip.loc[ranked])
    assert skip.loc[left_out].isna().all().all()
    for measure in ("tau_b", "ndcg", "p@5", "ap", "nn", "ft"):
        values = zero.loc[left_out, measure]
        assert ((values == 0) | values.isna()).all(), measure
    # tau_b is undefined only where the ground truth itself cannot order the images.
    flat = [s for s in left_out if np.ptp(truth.mean_rating[sketches.index(s)]) == 0]
    assert zero.loc[left_out, "tau_b"].isna().sum() == len(flat)
