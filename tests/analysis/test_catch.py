"""Catch pairs: named by a protocol ([[catch]], recorded with it in every sidecar) or by
analyze --catch FILE.csv, scored per participant (passed, failed, missing), usable by
--exclude catch-failed=N, and kept in the ground truth as the pairs they are."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sbir_study.analysis import load_ratings
from sbir_study.analysis.catch import read_catch_pairs, score_catch_pairs
from sbir_study.analysis.simulate import RaterModel, StudyDesign, write_simulated_dataset
from sbir_study.foundation.checks import InputError
from sbir_study.study.protocol import CatchPair, Protocol, protocol_dict
from tests.helpers import assert_input_error, run_main

DESIGN = StudyDesign(participants=5, sketches=3, images_per_sketch=6, anchor_sketches=0)
QUICK = ("--no-figures", "--bootstrap", "0", "--permutations", "0")
# Three pairs of the simulated design (sketches s01.., images s01_i01..), their ranges
# chosen so that the simulated raters split between passing and failing.
CATCH = [("s01", "s01_i01", 1, 3), ("s02", "s02_i03", 4, 7), ("s03", "s03_i06", 2, 5)]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("catch") / "data"
    write_simulated_dataset(root, DESIGN, RaterModel(miss_rate=0.2), seed=3)
    return root


def _files(root):
    return {
        path.parent.parent.name.removeprefix("sub-"): path
        for path in sorted(root.glob("sub-*/beh/*_beh.tsv"))
    }


def _oracle(root, pairs):
    """Passed, failed, missing per participant, counted row by row from each file as the
    csv module reads it (not the code under test)."""
    import csv

    counts = {}
    for label, path in _files(root).items():
        with open(path, newline="") as handle:
            rows = [r for r in csv.DictReader(handle, delimiter="\t") if r["phase"] == "main"]
        given = {(r["sketch_id"], r["image_id"]): r["rating"] for r in rows}
        passed = failed = 0
        for sketch_id, image_id, low, high in pairs:
            rating = given.get((sketch_id, image_id), "n/a")
            if rating != "n/a":
                passed += low <= int(rating) <= high
                failed += not low <= int(rating) <= high
        counts[label] = (passed, failed, len(pairs) - passed - failed)
    return counts


def _catch_file(path, pairs=CATCH):
    pd.DataFrame(pairs, columns=["sketch_id", "image_id", "lowest", "highest"]).to_csv(
        path, index=False
    )
    return path


def test_scores_are_the_counts_of_each_participants_ratings(tmp_path, dataset):
    expected = _oracle(dataset, CATCH)
    assert any(f for _, f, _ in expected.values()) and any(m for _, _, m in expected.values())
    scores = score_catch_pairs(
        load_ratings(dataset), read_catch_pairs(_catch_file(tmp_path / "c.csv"))
    )
    got = {
        r.participant: (r.n_catch_passed, r.n_catch_failed, r.n_catch_missing)
        for r in scores.itertuples()
    }
    assert got == expected


def test_a_protocols_catch_pairs_travel_in_the_sidecar_to_participants_csv(tmp_path, dataset):
    data = tmp_path / "data"
    shutil.copytree(dataset, data)
    protocol = Protocol(catch=tuple(CatchPair(s, i, f"{lo}-{hi}") for s, i, lo, hi in CATCH))
    for path in data.glob("sub-*/beh/*_beh.json"):
        sidecar = json.loads(path.read_text())
        path.write_text(json.dumps({**sidecar, "Protocol": protocol_dict(protocol)}))
    assert load_ratings(data).attrs["provenance"].catch == tuple(CATCH)
    out = tmp_path / "out"
    assert run_main("analyze", str(data), "--out", str(out), *QUICK).returncode == 0
    table = pd.read_csv(out / "participants.csv", dtype={"participant": str})
    got = {
        r.participant: (r.n_catch_passed, r.n_catch_failed, r.n_catch_missing)
        for r in table.itertuples()
    }
    assert got == _oracle(data, CATCH)
    # Catch pairs stay in the ground truth: the same file as without any catch pair.
    plain = tmp_path / "plain"
    assert run_main("analyze", str(dataset), "--out", str(plain), *QUICK).returncode == 0
    assert (out / "ground_truth.csv").read_bytes() == (plain / "ground_truth.csv").read_bytes()
    assert "catch pairs passed / failed / missing" in (out / "report.html").read_text()


def test_catch_failed_excludes_who_failed_more_than_n(tmp_path, dataset):
    expected = _oracle(dataset, CATCH)
    out = tmp_path / "out"
    catch = _catch_file(tmp_path / "c.csv")
    result = run_main(
        "analyze",
        str(dataset),
        "--out",
        str(out),
        *QUICK,
        "--catch",
        str(catch),
        "--exclude",
        "catch-failed=1",
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert [e["participant"] for e in summary["excluded"]] == sorted(
        label for label, (_, failed, _) in expected.items() if failed > 1
    )


def test_catch_failed_without_catch_pairs_is_one_line(tmp_path, dataset):
    assert_input_error(
        run_main(
            "analyze", str(dataset), "--out", str(tmp_path / "o"), "--exclude", "catch-failed=0"
        ),
        "needs catch pairs",
    )


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("sketch_id,image_id,lowest\n", "line 1: missing column 'highest'"),
        ("sketch_id,image_id,lowest,highest\ns1,a b,1,2\n", "line 2: field 'image_id'"),
        ("sketch_id,image_id,lowest,highest\ns1,a,1,x\n", "line 2: field 'highest'"),
        (
            "sketch_id,image_id,lowest,highest\ns1,a,3,2\n",
            "line 2: field 'highest': expected a rating >= lowest (3)",
        ),
        ("sketch_id,image_id,lowest,highest\ns1,a,1,2\ns1,a,1,3\n", "line 3: the pair s1/a"),
    ],
)
def test_a_bad_catch_file_names_file_line_and_field(tmp_path, text, fragment):
    path = tmp_path / "c.csv"
    path.write_text(text)
    with pytest.raises(InputError, match="^" + str(path).replace("\\", "\\\\")) as error:
        read_catch_pairs(path)
    assert fragment in str(error.value)


def test_two_ranges_for_one_pair_are_refused(tmp_path, dataset):
    data = tmp_path / "data"
    shutil.copytree(dataset, data)
    for number, path in enumerate(sorted(data.glob("sub-*/beh/*_beh.json"))):
        pairs = [{"sketch_id": "s01", "image_id": "s01_i01", "ratings": f"1-{2 + (number > 0)}"}]
        path.write_text(json.dumps({"Protocol": {"catch": pairs}}))
    with pytest.raises(InputError, match="the pair s01/s01_i01 passes 1-3 here, 1-2 in another"):
        load_ratings(data)


@given(st.integers(0, 9), st.integers(0, 9))
def test_any_catch_range_is_taken_as_written_and_fits_the_scale(low, high):
    # The oracle is the rule of protocols/README.md: 1 <= LOW <= HIGH <= the 7 keys.
    text = f"{low}-{high}" if low != high else str(low)
    try:
        protocol = Protocol(catch=(CatchPair("s", "i", text),))
    except Exception as error:  # pydantic's ValidationError, worded by load_protocol
        assert not 1 <= low <= high <= 7, error
        return
    assert 1 <= low <= high <= 7
    assert (protocol.catch[0].lowest, protocol.catch[0].highest) == (low, high)
