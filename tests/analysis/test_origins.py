"""Where each participant's ratings came from: the sidecar's ``Origin`` (or, for an older
sidecar, what its writer alone records), a flat table's ``origin`` column, carried to
participants.csv, summary.json and the report's banner."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sbir_study.analysis import AnalysisOptions, analyze_ratings, load_ratings
from sbir_study.analysis.ratings import RECORDED_ORIGINS, sidecar_origin
from sbir_study.analysis.simulate import StudyDesign, write_simulated_dataset
from sbir_study.foundation.checks import InputError

DESIGN = StudyDesign(participants=3, sketches=2, images_per_sketch=6, anchor_sketches=0)
QUICK = AnalysisOptions(bootstrap=0, permutations=0)

# What each writer alone records, in the order docs/formats.md reads them for a sidecar
# without Origin (the oracle is that documented table, not the function under test).
MARKS = [
    ("imported", {"Imported": {"Format": "table"}}),
    ("online", {"Mode": "online"}),
    ("simulate", {"SimulationSeed": 3}),
    ("run-simulate", {"Simulated": True}),
    ("lab", {"KeyboardBackend": "ptb"}),
]


@given(st.sets(st.sampled_from(range(len(MARKS)))), st.sampled_from(RECORDED_ORIGINS))
def test_an_older_sidecar_is_read_by_its_writers_marks_and_origin_wins(marks, recorded):
    sidecar = {"TaskName": "rate"}
    for index in marks:
        sidecar.update(MARKS[index][1])
    expected = MARKS[min(marks)][0] if marks else None
    assert sidecar_origin(sidecar) == expected
    assert sidecar_origin({**sidecar, "Origin": recorded}) == recorded


@given(st.one_of(st.text(max_size=12), st.integers(), st.none()))
def test_an_origin_not_on_the_list_names_the_file_and_field(origin):
    if origin in RECORDED_ORIGINS:
        return
    with pytest.raises(InputError, match=r"^x\.json: field 'Origin': expected one of lab, "):
        sidecar_origin({"Origin": origin}, "x.json")


def test_a_simulate_sidecar_without_origin_reads_as_simulate():
    # The sidecar sbir-study simulate wrote before Origin: Simulated and GeneratedBy.
    assert sidecar_origin({"Simulated": True, "GeneratedBy": "sbir-study simulate 0.9"}) == (
        "simulate"
    )


def _mixed_dataset(root):
    """Three simulated sessions re-labelled: 01 as an older lab session, 02 as an older
    ``run --simulate`` session (neither records Origin), 03 as simulate wrote it."""
    write_simulated_dataset(root, DESIGN, seed=4)
    for label, sidecar in (
        ("01", {"KeyboardBackend": "ptb", "Simulated": False}),
        ("02", {"KeyboardBackend": "ptb", "Simulated": True}),
    ):
        (path,) = root.glob(f"sub-{label}/beh/*_beh.json")
        path.write_text(json.dumps(sidecar), encoding="utf-8")
    return root


def _banner(out):
    found = re.search(r'<p class="banner">(.*?)</p>', (out / "report.html").read_text())
    return found and found.group(1)


def test_each_participant_carries_its_origin_to_every_output(tmp_path):
    data = _mixed_dataset(tmp_path / "data")
    summary = analyze_ratings(load_ratings(data), tmp_path / "out", QUICK, figures=False)
    participants = pd.read_csv(tmp_path / "out" / "participants.csv", dtype={"participant": str})
    assert dict(zip(participants["participant"], participants["origin"], strict=True)) == {
        "01": "lab",
        "02": "run-simulate",
        "03": "simulate",
    }
    assert summary["origins"] == {"lab": 1, "run-simulate": 1, "simulate": 1}
    assert (
        json.loads((tmp_path / "out" / "summary.json").read_text())["origins"]
        == (summary["origins"])
    )
    assert _banner(tmp_path / "out").startswith(
        "SIMULATED DATA: 2 of 3 participants simulated: sub-02 by run --simulate; "
        "sub-03 by simulate."
    )


def test_a_study_of_people_alone_has_no_banner(tmp_path):
    data = tmp_path / "data"
    write_simulated_dataset(data, DESIGN, seed=4)
    for path in data.glob("sub-*/beh/*_beh.json"):
        path.write_text(json.dumps({"Origin": "lab"}), encoding="utf-8")
    summary = analyze_ratings(load_ratings(data), tmp_path / "out", QUICK, figures=False)
    assert summary["origins"] == {"lab": 3} and summary["simulated"] is False
    assert _banner(tmp_path / "out") is None


def test_a_session_without_a_sidecar_is_of_unknown_origin(tmp_path):
    data = _mixed_dataset(tmp_path / "data")
    (path,) = data.glob("sub-03/beh/*_beh.json")
    path.unlink()
    origins = dict(load_ratings(data).attrs["provenance"].origins)
    assert origins == {"01": "lab", "02": "run-simulate", "03": "unknown"}


def _table(path, origins=None):
    rows = [("a", "s1", "i1", 2), ("a", "s1", "i2", 4), ("b", "s1", "i1", 3), ("b", "s1", "i2", 5)]
    table = pd.DataFrame(rows, columns=["participant", "sketch_id", "image_id", "rating"])
    if origins is not None:
        table["origin"] = origins
    table.to_csv(path, index=False)
    return path


def test_a_flat_table_is_of_origin_table_unless_it_has_an_origin_column(tmp_path):
    plain = load_ratings(_table(tmp_path / "plain.csv"))
    assert plain.attrs["provenance"].origins == (("a", "table"), ("b", "table"))
    named = load_ratings(_table(tmp_path / "named.csv", ["lab", "lab", " online", "online"]))
    assert named.attrs["provenance"].origins == (("a", "lab"), ("b", "online"))


def test_a_flat_table_simulate_wrote_is_simulate(tmp_path):
    table = write_simulated_dataset(tmp_path / "sim.csv", DESIGN, seed=1, flat=True)
    assert {o for _, o in load_ratings(table).attrs["provenance"].origins} == {"simulate"}


@pytest.mark.parametrize(
    "origins, line, expected",
    [
        (
            ["lab", "lab", "people", "online"],
            4,
            "expected one of lab, online, run-simulate, simulate, imported, table, got 'people'",
        ),
        (["lab", "online", "online", "online"], 3, "expected one origin per participant"),
    ],
)
def test_a_bad_origin_cell_names_file_line_and_field(tmp_path, origins, line, expected):
    path = _table(tmp_path / "bad.csv", origins)
    with pytest.raises(InputError) as error:
        load_ratings(path)
    assert str(error.value).startswith(f"{path}: line {line}: field 'origin': {expected}")
