"""Loading ratings: every bad input through the command line, and the tolerated cut-off line."""

import warnings
from pathlib import Path

import pandas as pd
import pytest

from sbir_study.analysis import (
    RatingsWarning,
    load_ratings,
    simulate_study,
    write_simulated_dataset,
)
from sbir_study.analysis.simulate import StudyDesign
from sbir_study.foundation.checks import InputError
from tests.helpers import assert_input_error, run_main

HEADER = "participant,sketch_id,image_id,phase,rating,rt,anchor_rating,trial\n"
GOOD_ROWS = "01,s1,a,main,2,1.2,n/a,1\n01,s1,b,main,5,0.9,n/a,2\n"


@pytest.mark.parametrize(
    "content,fragments",
    [
        (
            "participant,sketch_id,rating\n01,s1,2\n",
            ["line 1", "missing column 'image_id'"],
        ),
        (HEADER + GOOD_ROWS + "01,s1,c,main,8,1.0,n/a,3\n", ["line 4", "'rating'", "1..7", "'8'"]),
        (HEADER + "01,s1,a,main,3.5,1.0,n/a,1\n", ["line 2", "'rating'", "'3.5'"]),
        (HEADER + "01,s1,a,main,good,1.0,n/a,1\n", ["line 2", "'rating'", "'good'"]),
        (HEADER + "01,s1,a,main,0,1.0,n/a,1\n", ["line 2", "'rating'", "'0'"]),
        (HEADER + "01,s1,a,main,2,1.0,n/a,inf\n", ["line 2", "'trial'", "an integer", "'inf'"]),
        (
            HEADER + GOOD_ROWS + "01,s1,c,main,2,-1,n/a,3\n",
            ["line 4", "'rt'", "non-negative", "'-1'"],
        ),
        (
            HEADER + GOOD_ROWS + "01,s1,a,main,3,1.0,n/a,3\n",
            ["line 4", "rated sketch 's1' image 'a' twice", "first at line 2"],
        ),
        (HEADER + "01,s1,a,final,3,1.0,n/a,1\n", ["line 2", "'phase'", "'final'"]),
        (HEADER + "01,s1,a,main,3,-1,n/a,1\n", ["line 2", "'rt'", "non-negative"]),
        (HEADER + "01,s1,a,main,3,fast,n/a,1\n", ["line 2", "'rt'", "'fast'"]),
        (HEADER + "01,a1,x,anchor_repeat,3,1.0,n/a,1\n", ["line 2", "'anchor_rating'"]),
        (HEADER + "01,,a,main,3,1.0,n/a,1\n", ["line 2", "'sketch_id'"]),
        (HEADER + GOOD_ROWS + "01,s1,c,main,3,1.0\n", ["line 4", "expected 8 fields"]),
        (
            HEADER + GOOD_ROWS + "01,s1,c,main,3,1.0,n/a,3,9\n",
            ["line 4", "expected 8 fields, found 9"],
        ),
        ("", ["empty"]),
        ("\n\n", ["empty"]),
        (HEADER, ["no rows"]),
        ("participant,rating,sketch_id,image_id,rating\n", ["line 1", "'rating' appears twice"]),
    ],
)
def test_bad_table_exits_2_naming_the_place(tmp_path, content, fragments):
    table = tmp_path / "ratings.csv"
    table.write_text(content, encoding="utf-8")
    result = run_main("analyze", str(table), "--out", str(tmp_path / "out"))
    assert_input_error(result, str(table), *fragments)
    assert not (tmp_path / "out" / "summary.json").exists()


def test_not_utf8_names_the_line(tmp_path):
    table = tmp_path / "ratings.csv"
    table.write_bytes(
        (HEADER + GOOD_ROWS).encode() + "01,s1,caf\xe9,main,3,1,n/a,3\n".encode("latin-1")
    )
    assert_input_error(
        run_main("analyze", str(table), "--out", str(tmp_path / "out")),
        str(table),
        "line 4",
        "not UTF-8",
    )


def test_missing_path_and_empty_dataset(tmp_path):
    assert_input_error(
        run_main("analyze", str(tmp_path / "nothing.csv"), "--out", str(tmp_path / "o")),
        "nothing.csv",
        "no such file",
    )
    (tmp_path / "dataset").mkdir()
    assert_input_error(
        run_main("analyze", str(tmp_path / "dataset"), "--out", str(tmp_path / "o")),
        "dataset",
        "no sub-*/beh/*_beh.tsv",
    )


def test_unreadable_file(tmp_path, monkeypatch):
    table = tmp_path / "ratings.csv"
    table.write_text(HEADER + GOOD_ROWS, encoding="utf-8")

    def refuse(self):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "read_bytes", refuse)
    with pytest.raises(InputError, match=r"ratings.csv: cannot be read \(Permission denied\)"):
        load_ratings(table)


def test_quoted_field_spanning_lines(tmp_path):
    table = tmp_path / "ratings.csv"
    table.write_text(HEADER.replace("\n", ",note\n") + '01,s1,a,main,2,1.2,n/a,1,"two\nlines"\n')
    ratings = load_ratings(table)
    assert len(ratings) == 1 and ratings["note"].iloc[0] == "two\nlines"


def test_flat_table_types_and_defaults(tmp_path):
    table = tmp_path / "ratings.tsv"
    table.write_text(
        "participant\tsketch_id\timage_id\trating\tnote\n7\ts\ta\t3.0\tx\n7\ts\tb\tNA\t\n"
    )
    ratings = load_ratings(table)
    assert list(ratings.columns[:8]) == [
        "participant",
        "sketch_id",
        "image_id",
        "phase",
        "rating",
        "rt",
        "anchor_rating",
        "trial",
    ]
    assert ratings["note"].tolist() == ["x", ""]  # extra columns are kept
    assert ratings["phase"].tolist() == ["main", "main"]
    assert ratings["rating"].tolist()[0] == 3 and pd.isna(ratings["rating"].iloc[1])
    assert ratings.attrs["provenance"].sources[0].rows == 2


@pytest.fixture
def small_dataset(tmp_path):
    design = StudyDesign(participants=3, sketches=2, images_per_sketch=6)
    return write_simulated_dataset(tmp_path / "data", design, seed=5)


def test_bids_dataset_loads_every_session(small_dataset):
    ratings = load_ratings(small_dataset)
    trials, _ = simulate_study(StudyDesign(participants=3, sketches=2, images_per_sketch=6), seed=5)
    assert len(ratings) == len(trials)
    assert sorted(ratings["participant"].unique()) == ["01", "02", "03"]
    assert ratings.attrs["provenance"].simulated
    assert len(ratings.attrs["provenance"].sources) == 3


def test_the_libraries_that_ran_the_sessions_reach_the_summary(small_dataset, tmp_path):
    # Two sessions recorded by different PsychoPy versions, one by an older toolkit that
    # recorded no software: the summary lists both versions beside the analysis libraries.
    import json

    sidecars = sorted(small_dataset.glob("sub-*/beh/*_beh.json"))
    for path, version in zip(sidecars, ("2025.2.1", "2025.1.0", None), strict=True):
        content = json.loads(path.read_text())
        content.pop("Software", None)
        if version:
            content["Software"] = {"python": "3.11.2", "psychopy": version, "numpy": "2.0"}
        path.write_text(json.dumps(content))
    ratings = load_ratings(small_dataset)
    assert ratings.attrs["provenance"].session_software == (("psychopy", "2025.1.0, 2025.2.1"),)
    result = run_main("analyze", small_dataset, "--out", tmp_path / "out", "--no-figures")
    assert result.returncode == 0, result.stderr
    software = json.loads((tmp_path / "out" / "summary.json").read_text())["software"]
    assert software["psychopy (sessions)"] == "2025.1.0, 2025.2.1"
    assert "numpy" in software and "numpy (sessions)" not in software


def test_cut_off_last_line_is_dropped_with_a_warning(small_dataset):
    path = next(small_dataset.glob("sub-02/beh/*_beh.tsv"))
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-1]) + lines[-1][:15])  # a crash in the middle of a write
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ratings = load_ratings(small_dataset)
    messages = [str(w.message) for w in caught if issubclass(w.category, RatingsWarning)]
    assert len(messages) == 1 and str(path) in messages[0] and "cut off" in messages[0]
    kept = ratings[ratings["participant"] == "02"]
    assert len(kept) == len(lines) - 2  # header and the partial row


def test_cut_off_line_through_the_cli(small_dataset, tmp_path):
    path = next(small_dataset.glob("sub-01/beh/*_beh.tsv"))
    path.write_text(path.read_text()[:-7])
    result = run_main("analyze", str(small_dataset), "--out", str(tmp_path / "out"), "--no-figures")
    assert result.returncode == 0, result.stderr
    assert "warning" in result.stderr and str(path) in result.stderr


def test_bids_participant_must_match_file_label(small_dataset, tmp_path):
    path = next(small_dataset.glob("sub-03/beh/*_beh.tsv"))
    text = path.read_text().split("\n")
    text[5] = text[5].replace("03", "01", 1)
    path.write_text("\n".join(text))
    assert_input_error(
        run_main("analyze", str(small_dataset), "--out", str(tmp_path / "out")),
        str(path),
        "line 6",
        "'participant'",
        "expected '03'",
    )


def test_duplicate_across_bids_files_names_both(small_dataset, tmp_path):
    first = next(small_dataset.glob("sub-01/beh/*_beh.tsv"))
    session = small_dataset / "sub-01" / "ses-2" / "beh"
    session.mkdir(parents=True)
    copy = session / "sub-01_ses-2_task-sbirrating_beh.tsv"
    copy.write_text(first.read_text())
    result = run_main("analyze", str(small_dataset), "--out", str(tmp_path / "out"))
    assert_input_error(result, "twice", str(first))
