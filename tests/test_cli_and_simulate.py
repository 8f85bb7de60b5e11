"""The simulator's design rules and the analyze/simulate command line end to end."""

import json

import numpy as np
import pandas as pd
import pytest
from test_ratings import assert_input_error, run_cli

from analysis import InputError, binned_medians, load_ratings, simulate_study
from analysis.simulate import RaterModel, StudyDesign

DESIGN_COLUMNS = {
    "ground_truth.csv": ["sketch_id", "image_id", "mean_rating", "median_rating", "sd_rating",
                         "n_ratings", "rank"],
    "pairwise_tau.csv": ["sketch_id", "participant_a", "participant_b", "tau_b", "p_value",
                         "n_items"],
    "kendall_w.csv": ["sketch_id", "w", "chi2", "df", "p_value", "f", "f_df1", "f_df2",
                      "f_p_value", "n_raters", "n_items"],
    "consensus_tau.csv": ["participant", "sketch_id", "tau_b", "p_value", "tau_b_loo",
                          "p_value_loo"],
    "anchoring.csv": ["participant", "sketch_id", "tau_b", "p_value", "n_items"],
    "bins.csv": ["bin", "n_ratings", "mean", "sd"],
}  # fmt: skip


def test_simulation_is_reproducible_and_per_participant():
    design = StudyDesign(participants=4, sketches=3, images_per_sketch=8)
    first, _ = simulate_study(design, seed=11)
    again, _ = simulate_study(design, seed=11)
    pd.testing.assert_frame_equal(first, again)
    other, _ = simulate_study(design, seed=12)
    assert not first["rating"].equals(other["rating"])
    # Adding participants leaves the earlier ones' sessions unchanged.
    more, _ = simulate_study(StudyDesign(participants=6, sketches=3, images_per_sketch=8), seed=11)
    pd.testing.assert_frame_equal(first, more[more["participant"].isin(first["participant"])])


def test_simulated_session_follows_the_paper_design():
    design = StudyDesign(participants=5, sketches=4, images_per_sketch=10)
    trials, _ = simulate_study(design, seed=3)
    for _, session in trials.groupby("participant"):
        phases = session["phase"].tolist()
        n_anchor = design.anchor_sketches * design.anchor_images
        assert phases[:n_anchor] == ["anchor_demo"] * n_anchor
        assert session.loc[session["phase"] == "anchor_demo", "rating"].isna().all()
        main_block = session.iloc[n_anchor:]
        n_main = design.sketches * design.images_per_sketch
        # Each main pair exactly once; each anchor pair repeated once, in the later part.
        main = main_block[main_block["phase"] == "main"]
        assert len(main) == n_main and not main.duplicated(["sketch_id", "image_id"]).any()
        repeats = main_block["phase"].to_numpy() == "anchor_repeat"
        assert repeats.sum() == n_anchor
        mains_before = np.cumsum(~repeats)[repeats] - 1
        assert (mains_before >= np.ceil(design.anchor_repeat_from * n_main) - 1).all()
        assert session["trial"].tolist() == list(range(1, len(session) + 1))
        assert np.all(np.diff(session["onset"]) == pytest.approx(3.0))


def test_simulated_ratings_spread_most_mid_scale():
    trials, _ = simulate_study(StudyDesign(participants=28, sketches=31), seed=2011)
    bins = binned_medians(trials).set_index("bin")
    assert bins.loc[4, "sd"] > bins.loc[1, "sd"] and bins.loc[4, "sd"] > bins.loc[7, "sd"]
    assert (bins["n_ratings"] > 0).all()
    missing = trials.loc[trials["phase"] == "main", "rating"].isna().mean()
    assert 0.002 < missing < 0.03  # miss_rate 0.01


def test_model_and_design_validation():
    with pytest.raises(InputError, match="miss_rate"):
        RaterModel(miss_rate=1.5)
    with pytest.raises(InputError, match="images_per_sketch"):
        StudyDesign(images_per_sketch=1)
    with pytest.raises(InputError, match="anchor_images"):
        StudyDesign(anchor_images=9)


@pytest.fixture(scope="module")
def analysed(tmp_path_factory):
    root = tmp_path_factory.mktemp("study")
    result = run_cli("simulate", "--out", str(root / "data"), "--participants", "6",
                     "--sketches", "4", "--images", "12", "--seed", "9")  # fmt: skip
    assert result.returncode == 0, result.stderr
    result = run_cli("analyze", str(root / "data"), "--out", str(root / "out"), "--no-figures")
    assert result.returncode == 0, result.stderr
    return root, result.stdout


def test_analyze_writes_design_files(analysed):
    root, stdout = analysed
    out = root / "out"
    for name, columns in DESIGN_COLUMNS.items():
        table = pd.read_csv(out / name)
        assert list(table.columns[: len(columns)]) == columns, name
    assert len(pd.read_csv(out / "pairwise_tau.csv")) == 4 * 15  # 4 sketches x C(6, 2)
    qrels = (out / "ground_truth.qrels").read_text().splitlines()
    assert len(qrels) == 48 and all(len(line.split()) == 4 for line in qrels)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_participants"] == 6 and summary["n_sketches"] == 4
    assert summary["n_pairs"] == 48 and summary["simulated"] is True
    assert summary["alternative"] == "greater" and summary["alpha"] == 0.05
    for family in ("pairwise", "consensus", "consensus_loo", "anchoring"):
        assert {"n_tests", "n_significant", "share_significant", "wilson_low", "wilson_high",
                "n_significant_bh"} <= set(summary[family])  # fmt: skip
    assert {"min", "median", "max", "n_significant"} <= set(summary["kendall_w"])
    assert [b["bin"] for b in summary["bins"]] == list(range(1, 8))
    assert len(summary["sources"]) == 6 and all(len(s["sha256"]) == 64 for s in summary["sources"])
    assert "simulated" in stdout and "ground_truth.csv" in stdout


def test_pairwise_summary_mode_and_options(analysed, tmp_path):
    root, _ = analysed
    result = run_cli("analyze", str(root / "data"), "--out", str(tmp_path), "--pairwise",
                     "summary", "--alternative", "two-sided", "--alpha", "0.01")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "pairwise_tau.csv").exists()
    summary_table = pd.read_csv(tmp_path / "pairwise_tau_summary.csv")
    assert len(summary_table) == 4 and (summary_table["n_pairs"] == 15).all()
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["pairwise_table"] == "summary" and summary["alpha"] == 0.01
    assert summary["alternative"] == "two-sided"


def test_bad_options_exit_2(analysed, tmp_path):
    root, _ = analysed
    result = run_cli("analyze", str(root / "data"), "--out", str(tmp_path), "--alpha", "2")
    assert result.returncode == 2 and "--alpha" in result.stderr
    result = run_cli("analyze", str(root / "data"), "--out", str(tmp_path), "--alternative", "up")
    assert result.returncode == 2 and "--alternative" in result.stderr


def test_simulate_never_overwrites_recorded_data(analysed, tmp_path):
    root, _ = analysed
    data = root / "data"
    before = {p: p.read_bytes() for p in data.rglob("*") if p.is_file()}
    assert_input_error(run_cli("simulate", "--out", str(data)), str(data), "not empty")
    # --overwrite replaces a simulated dataset, never anything else.
    recorded = tmp_path / "recorded"
    (recorded / "sub-01").mkdir(parents=True)
    (recorded / "dataset_description.json").write_text('{"Name": "lab study"}')
    assert_input_error(
        run_cli("simulate", "--out", str(recorded), "--overwrite"),
        str(recorded),
        "never overwritten",
    )
    assert (recorded / "dataset_description.json").read_text() == '{"Name": "lab study"}'
    assert before == {p: p.read_bytes() for p in data.rglob("*") if p.is_file()}


def test_simulate_flat_table_round_trips(tmp_path):
    table = tmp_path / "ratings.csv"
    result = run_cli("simulate", "--out", str(table), "--flat", "--participants", "3",
                     "--sketches", "2", "--images", "5")  # fmt: skip
    assert result.returncode == 0, result.stderr
    ratings = load_ratings(table)
    assert ratings.attrs["provenance"].simulated
    assert len(ratings) == 3 * (2 * 5 + 2 * 21)
    assert_input_error(run_cli("simulate", "--out", str(table), "--flat"), str(table), "exists")


def test_bids_sidecars_describe_every_column(analysed):
    root, _ = analysed
    for tsv in (root / "data").glob("sub-*/beh/*_beh.tsv"):
        columns = tsv.read_text().split("\n", 1)[0].split("\t")
        sidecar = json.loads(tsv.with_suffix(".json").read_text())
        assert all("Description" in sidecar[c] for c in columns)
        assert sidecar["Simulated"] is True and "SimulationModel" in sidecar
    description = json.loads((root / "data" / "dataset_description.json").read_text())
    assert description["BIDSVersion"] and description["DatasetType"] == "raw"
    participants = pd.read_csv(root / "data" / "participants.tsv", sep="\t")
    assert participants["participant_id"].tolist() == [f"sub-{i:02d}" for i in range(1, 7)]
