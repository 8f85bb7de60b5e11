"""sbir-study analyze end to end: the files of the design, options, bad options."""

import json

import pandas as pd

from tests.helpers import run_main

DESIGN_COLUMNS = {
    "ground_truth.csv": [
        "sketch_id",
        "image_id",
        "mean_rating",
        "median_rating",
        "sd_rating",
        "n_ratings",
        "rank",
    ],
    "kendall_w.csv": [
        "sketch_id",
        "w",
        "chi2",
        "df",
        "p_value",
        "f",
        "f_df1",
        "f_df2",
        "f_p_value",
        "n_raters",
        "n_items",
    ],
    "consensus_tau.csv": [
        "participant",
        "sketch_id",
        "tau_b",
        "p_value",
        "tau_b_loo",
        "p_value_loo",
    ],
    "anchoring.csv": ["participant", "sketch_id", "tau_b", "p_value", "n_items"],
    "bins.csv": ["bin", "n_ratings", "mean", "sd"],
}


def test_analyze_writes_design_files(analysed):
    root, stdout = analysed
    out = root / "out"
    for name, columns in DESIGN_COLUMNS.items():
        table = pd.read_csv(out / name)
        assert list(table.columns[: len(columns)]) == columns, name
    pairs = pd.read_parquet(out / "pairwise_tau.parquet")
    assert list(pairs.columns) == [
        "sketch_id",
        "participant_a",
        "participant_b",
        "tau_b",
        "p_value",
        "n_items",
        "reason",
    ]
    assert len(pairs) == 4 * 15  # 4 sketches x C(6, 2)
    qrels = (out / "ground_truth.qrels").read_text().splitlines()
    assert len(qrels) == 48 and all(len(line.split()) == 4 for line in qrels)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_participants"] == 6 and summary["n_sketches"] == 4
    assert summary["n_pairs"] == 48 and summary["simulated"] is True
    assert summary["alternative"] == "greater" and summary["alpha"] == 0.05
    for family in ("pairwise", "consensus", "consensus_loo", "anchoring"):
        assert {
            "n_tests",
            "n_significant",
            "share_significant",
            "wilson_low",
            "wilson_high",
            "n_significant_bh",
        } <= set(summary[family])
    assert {"min", "median", "max", "n_significant"} <= set(summary["kendall_w"])
    assert {"n_raters_min", "n_raters_max", "n_raters_all_min", "n_raters_all_max"} <= set(
        summary["kendall_w"]
    )
    alpha = summary["krippendorff_alpha"]
    for level in ("ordinal", "interval"):
        assert {"alpha", "ci_low", "ci_high", "by_sketch"} <= set(alpha[level])
        assert alpha[level]["ci_low"] < alpha[level]["alpha"] < alpha[level]["ci_high"]
    assert alpha["n_raters"] == 6 and alpha["bootstrap"]["resamples"] == 1000
    assert summary["skillings_mack"]["n_sketches"] == 4
    assert summary["skillings_mack"]["n_permutation_tested"] == 4  # 6 raters: permuted
    assert [b["bin"] for b in summary["bins"]] == list(range(1, 8))
    assert len(summary["sources"]) == 6 and all(len(s["sha256"]) == 64 for s in summary["sources"])
    assert "simulated" in stdout and "ground_truth.csv" in stdout


def test_pairwise_summary_mode_and_options(analysed, tmp_path):
    root, _ = analysed
    result = run_main(
        "analyze",
        str(root / "data"),
        "--out",
        str(tmp_path),
        "--pairwise",
        "summary",
        "--alternative",
        "two-sided",
        "--alpha",
        "0.01",
    )
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "pairwise_tau.parquet").exists()
    summary_table = pd.read_csv(tmp_path / "pairwise_tau_summary.csv")
    assert len(summary_table) == 4 and (summary_table["n_pairs"] == 15).all()
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["pairwise_table"] == "summary" and summary["alpha"] == 0.01
    assert summary["alternative"] == "two-sided"


def test_agreement_columns_and_seeded_resampling(analysed, tmp_path):
    from sbir_study.analysis.agreement_tables import AGREEMENT_COLUMNS

    root, _ = analysed
    first = pd.read_csv(root / "out" / "kendall_w.csv")
    assert list(first.columns) == list(AGREEMENT_COLUMNS)
    assert (first["n_raters"] + first["n_raters_excluded"] == first["n_raters_all"]).all()
    # The same ratings and seed give the same file; another seed other intervals.
    again = run_main(
        "analyze", str(root / "data"), "--out", str(tmp_path / "again"), "--no-figures"
    )
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "again" / "kendall_w.csv").read_bytes() == (
        root / "out" / "kendall_w.csv"
    ).read_bytes()
    other = run_main(
        "analyze",
        str(root / "data"),
        "--out",
        str(tmp_path / "other"),
        "--no-figures",
        "--seed",
        "7",
        "--bootstrap",
        "0",
        "--permutations",
        "0",
    )
    assert other.returncode == 0, other.stderr
    table = pd.read_csv(tmp_path / "other" / "kendall_w.csv")
    assert table["alpha_ordinal_ci_low"].isna().all()
    assert table["skillings_mack_permutation_p_value"].isna().all()
    pd.testing.assert_series_equal(table["alpha_ordinal"], first["alpha_ordinal"])
    assert "Krippendorff's alpha" in again.stdout and "Skillings-Mack" in again.stdout


def test_bad_options_exit_2(analysed, tmp_path):
    root, _ = analysed
    result = run_main("analyze", str(root / "data"), "--out", str(tmp_path), "--alpha", "2")
    assert result.returncode == 2 and "--alpha" in result.stderr
    result = run_main("analyze", str(root / "data"), "--out", str(tmp_path), "--alternative", "up")
    assert result.returncode == 2 and "--alternative" in result.stderr
    result = run_main("analyze", str(root / "data"), "--out", str(tmp_path), "--bootstrap", "-1")
    assert result.returncode == 2 and "--bootstrap" in result.stderr
