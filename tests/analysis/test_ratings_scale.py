"""Reading ratings on a study's scale: from the sidecars of a BIDS dataset, from --scale for a
flat table; a rating off the scale is refused naming its row, two scales in one dataset naming
a file of each."""

from __future__ import annotations

import json

import pytest

from sbir_study.analysis import load_ratings
from sbir_study.analysis.simulate import StudyDesign, write_simulated_dataset
from sbir_study.foundation.checks import InputError
from sbir_study.foundation.scale import PAPER_SCALE, Scale
from tests.helpers import assert_input_error, run_main

DESIGN = StudyDesign(participants=3, sketches=2, images_per_sketch=5, anchor_images=5)


@pytest.mark.parametrize("scale", [Scale(1, 2), Scale(1, 5), Scale(1, 9), Scale(1, 9, "high")])
def test_a_dataset_s_scale_comes_from_its_sidecars(tmp_path, scale):
    design = StudyDesign(
        participants=3, sketches=2, images_per_sketch=5, anchor_images=min(5, scale.k)
    )
    root = write_simulated_dataset(tmp_path / "data", design, seed=2, scale=scale)
    ratings = load_ratings(root)
    assert ratings.attrs["scale"] == scale
    assert ratings["rating"].dropna().between(scale.low, scale.high).all()
    with pytest.raises(InputError, match=rf"scale: 1-7 differs from the scale {scale} that "):
        load_ratings(root, scale=PAPER_SCALE)


def test_a_dataset_mixing_scales_is_refused_naming_two_files(tmp_path):
    root = write_simulated_dataset(tmp_path / "data", DESIGN, seed=2, scale=Scale(1, 5))
    other = root / "sub-02" / "beh" / "sub-02_task-sbirrating_beh.json"
    sidecar = json.loads(other.read_text())
    sidecar["RatingScale"] = {"Low": 1, "High": 7, "Best": "low"}
    other.write_text(json.dumps(sidecar))
    with pytest.raises(InputError) as error:
        load_ratings(root)
    message = str(error.value)
    assert message.startswith(f"{other}: the rating scale 1-7 differs from 1-5 of ")
    assert "sub-01_task-sbirrating_beh.json" in message and "\n" not in message


def test_a_session_recorded_before_the_scale_was_takes_its_protocol_s_keys(tmp_path):
    root = write_simulated_dataset(tmp_path / "data", DESIGN, seed=2, scale=Scale(1, 5))
    for path in root.glob("sub-*/beh/*_beh.json"):
        sidecar = json.loads(path.read_text())
        del sidecar["RatingScale"]
        sidecar["Protocol"] = {"response": {"keys": ["a", "s", "d", "f", "g"]}}
        path.write_text(json.dumps(sidecar))
    assert load_ratings(root).attrs["scale"] == Scale(1, 5)


def _flat(tmp_path, rating="9", other="8"):
    table = tmp_path / "ratings.csv"
    table.write_text(
        "participant,sketch_id,image_id,rating\n01,s,a,1\n01,s,b,"
        f"{rating}\n02,s,a,2\n02,s,b,{other}\n"
    )
    return table


def test_a_flat_table_is_on_the_paper_s_scale_unless_told(tmp_path):
    table = _flat(tmp_path)
    with pytest.raises(
        InputError,
        match=r"ratings\.csv: line 3: field 'rating': expected an "
        r"integer 1\.\.7 or n/a, got '9'",
    ):
        load_ratings(table)
    ratings = load_ratings(table, scale=Scale(1, 9))
    assert ratings.attrs["scale"] == Scale(1, 9)
    assert ratings["rating"].tolist() == [1, 9, 2, 8]
    with pytest.raises(
        InputError,
        match=r"line 3: field 'rating': expected an integer 1\.\.5 "
        r"\(the scale 1-5\) or n/a, got '9'",
    ):
        load_ratings(table, scale=Scale(1, 5))
    assert load_ratings(_flat(tmp_path, "3", "6")).attrs["scale"] == PAPER_SCALE


def test_analyze_takes_the_scale_of_a_flat_table(tmp_path):
    table = _flat(tmp_path)
    assert_input_error(
        run_main("analyze", str(table), "--out", str(tmp_path / "a")),
        "line 3: field 'rating': expected an integer 1..7 or n/a, got '9'",
    )
    assert_input_error(
        run_main("analyze", str(table), "--out", str(tmp_path / "a"), "--scale", "9"),
        "--scale: expected LOW-HIGH",
    )
