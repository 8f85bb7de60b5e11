"""sbir-study evaluate-hpatches: the tables it writes, and malformed files named with their line."""

import shutil
from pathlib import Path

import pandas as pd
import pytest

from sbir_study.cli import main
from tests.helpers import HPATCHES as DATA


def test_command_line_writes_the_tables(tmp_path, capsys):
    out = tmp_path / "out"
    code = main(
        [
            "evaluate-hpatches",
            str(DATA / "benchmarks"),
            str(DATA / "results"),
            "--top",
            "5",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "31.67" in printed  # mAP patch, in percent
    summary = pd.read_csv(out / "hpatches_summary.csv")
    assert summary.columns.tolist() == ["descriptor", "task", "n_queries", "map_patch", "map_image"]
    assert len(pd.read_csv(out / "hpatches_per_query.csv")) == 3


def damaged(tmp_path: Path, name: str, change) -> tuple[Path, Path]:
    benchmarks = shutil.copytree(DATA / "benchmarks", tmp_path / "benchmarks")
    results = shutil.copytree(DATA / "results" / "desc_a", tmp_path / "results")
    path = {
        "benchmark": benchmarks / "tiny_easy_2s_00.benchmark",
        "labels": benchmarks / "tiny_easy_2s_00.labels",
        "results": results / "tiny_easy_2s_00.results",
    }[name]
    lines = path.read_text().splitlines()
    path.write_text("\n".join(change(lines)) + "\n")
    return benchmarks, results


@pytest.mark.parametrize(
    "name, change, fragments",
    [
        (
            "results",
            lambda lines: ["i_a.ref,i_a.e1", *lines[1:]],
            ["tiny_easy_2s_00.results, line 1", "pool of patch-images differs"],
        ),
        (
            "results",
            lambda lines: [lines[0], lines[2], lines[1], lines[3]],
            ["line 2", "starts with 'v_b.ref.7'", "expected the query 'i_a.ref.1'"],
        ),
        (
            "results",
            lambda lines: [*lines[:3], lines[3].rsplit(",", 1)[0]],
            ["line 4", "5 entries", "expected the query and 5 retrieved patches"],
        ),
        ("results", lambda lines: lines[:3], ["2 result lines", "expected one per query"]),
        (
            "results",
            lambda lines: [*lines[:2], lines[2].replace("v_b.ref.2,", ","), lines[3]],
            ["line 3", "an empty entry"],
        ),
        (
            "labels",
            lambda lines: [lines[0], lines[1], lines[3]],
            ["tiny_easy_2s_00.labels", "2 labels lines; expected one per query"],
        ),
        (
            "labels",
            lambda lines: [lines[0], lines[2], lines[1], lines[3]],
            ["tiny_easy_2s_00.labels, line 2", "does not list the query 'i_a.ref.1'"],
        ),
        (
            "results",
            lambda lines: [lines[0], lines[1].replace("i_a.e1.1", "i_a.e1"), *lines[2:]],
            ["tiny_easy_2s_00.results, line 2", "'i_a.e1' is not a patch name"],
        ),
        (
            "results",
            lambda lines: [lines[0], lines[1].replace("v_b.ref.3", "v_x.ref.3"), *lines[2:]],
            ["tiny_easy_2s_00.results, line 2", "'v_x.ref.3' is not from a patch-image"],
        ),
        ("labels", lambda lines: ["x.ref", *lines[1:]], ["labels, line 1", "pool"]),
        (
            "benchmark",
            lambda lines: [lines[0], "i_a.ref.1,i_a.ref.2"],
            ["benchmark, line 2", "2 entries", "expected one query patch"],
        ),
    ],
)
def test_malformed_files_exit_2_naming_file_and_line(tmp_path, capsys, name, change, fragments):
    benchmarks, results = damaged(tmp_path, name, change)
    code = main(["evaluate-hpatches", str(benchmarks), str(results), "--top", "5"])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    for fragment in fragments:
        assert fragment in err[0], err[0]
