"""sbir-study simulate: recorded data never overwritten, flat tables, BIDS sidecars."""

import json

import pandas as pd

from sbir_study.analysis import load_ratings
from tests.helpers import assert_input_error, run_main


def test_simulate_never_overwrites_recorded_data(analysed, tmp_path):
    root, _ = analysed
    data = root / "data"
    before = {p: p.read_bytes() for p in data.rglob("*") if p.is_file()}
    assert_input_error(run_main("simulate", "--out", str(data)), str(data), "pass --overwrite")
    # --overwrite replaces a simulated dataset, never anything else.
    recorded = tmp_path / "recorded"
    (recorded / "sub-01").mkdir(parents=True)
    (recorded / "dataset_description.json").write_text('{"Name": "lab study"}')
    assert_input_error(
        run_main("simulate", "--out", str(recorded), "--overwrite"),
        str(recorded),
        "never overwritten",
    )
    assert (recorded / "dataset_description.json").read_text() == '{"Name": "lab study"}'
    assert before == {p: p.read_bytes() for p in data.rglob("*") if p.is_file()}


def test_simulate_flat_table_round_trips(tmp_path):
    table = tmp_path / "ratings.csv"
    result = run_main(
        "simulate",
        "--out",
        str(table),
        "--flat",
        "--participants",
        "3",
        "--sketches",
        "2",
        "--images",
        "5",
    )
    assert result.returncode == 0, result.stderr
    ratings = load_ratings(table)
    assert ratings.attrs["provenance"].simulated
    assert json.loads(table.with_suffix(".json").read_text())["Origin"] == "simulate"
    assert len(ratings) == 3 * (2 * 5 + 2 * 21)
    assert_input_error(run_main("simulate", "--out", str(table), "--flat"), str(table), "exists")


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
