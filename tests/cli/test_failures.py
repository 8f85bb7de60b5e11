"""How a command fails: an internal error logged, a full or read-only disk in one line."""

import errno
import os
import subprocess
import sys

from tests.helpers import SBIR_STUDY, snapshot

BROKEN = """
import sys
import sbir_study.analysis.pipeline
from sbir_study.cli import main

def broken(*args, **kwargs):
    raise RuntimeError("a bug in the analysis")

sbir_study.analysis.pipeline.analyze_ratings = broken
import sbir_study.analysis
sbir_study.analysis.analyze_ratings = broken
sys.exit(main(sys.argv[1:]))
"""


def _broken(tmp_path, env, *args):
    table = tmp_path / "ratings.csv"
    table.write_text("participant,sketch_id,image_id,rating\n01,s1,a,1\n01,s1,b,2\n")
    return subprocess.run(
        [
            sys.executable,
            "-P",
            "-c",
            BROKEN,
            "analyze",
            str(table),
            "--out",
            str(tmp_path / "out"),
            *args,
        ],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        cwd=tmp_path,
    )


def test_an_internal_error_is_one_line_naming_the_log_with_the_traceback(tmp_path):
    logs = tmp_path / "logs"
    result = _broken(tmp_path, {"SBIR_STUDY_LOG_DIR": str(logs)})
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert "internal error (RuntimeError: a bug in the analysis)" in lines[0]
    (log,) = logs.iterdir()
    assert str(log) in lines[0]
    text = log.read_text()
    assert "Traceback (most recent call last)" in text and "a bug in the analysis" in text
    assert f"analyze {tmp_path / 'ratings.csv'}" in text
    assert not (tmp_path / "out").exists()


def test_the_log_goes_to_the_state_folder_never_beside_the_data(tmp_path):
    state = tmp_path / "state"
    env = {"XDG_STATE_HOME": str(state), "SBIR_STUDY_LOG_DIR": ""}
    result = _broken(tmp_path, env)
    assert result.returncode == 1
    (log,) = (state / "sbir-study" / "logs").iterdir()
    assert str(log) in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ratings.csv", "state"]


def test_an_unwritable_log_folder_falls_back_to_the_temporary_folder(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    temporary = tmp_path / "tmp"  # the system's temporary folder, here the test's own
    temporary.mkdir()
    result = _broken(
        tmp_path, {"SBIR_STUDY_LOG_DIR": str(blocked / "logs"), "TMPDIR": str(temporary)}
    )
    assert result.returncode == 1
    assert "sbir-study-logs" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    (log,) = (temporary / "sbir-study-logs").iterdir()
    assert str(log) in result.stderr
    assert "RuntimeError: a bug in the analysis" in log.read_text()


def _analyze(tmp_path, out, *extra):
    table = tmp_path / "ratings.csv"
    if not table.exists():
        rows = [
            f"0{p},s{s},i{i},{(p + s + i) % 7 + 1}"
            for p in range(1, 4)
            for s in range(2)
            for i in range(5)
        ]
        table.write_text("participant,sketch_id,image_id,rating\n" + "\n".join(rows) + "\n")
    return subprocess.run(
        [*SBIR_STUDY, "analyze", str(table), "--out", str(out), *extra],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )


def test_a_full_disk_is_one_line_and_the_old_results_stay(tmp_path, mounted):
    first = _analyze(tmp_path, mounted / "out", "--no-figures")
    assert first.returncode == 0, first.stderr
    before = snapshot(mounted)
    (mounted / "filler").write_bytes(b"x" * 700_000)  # the figures no longer fit
    after_filler = snapshot(mounted)
    result = _analyze(tmp_path, mounted / "out", "--overwrite")
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert f"{mounted / 'out'}: {os.strerror(errno.ENOSPC)}" in line, line
    assert "nothing was replaced" in line
    assert snapshot(mounted) == after_filler
    assert {k: v for k, v in after_filler.items() if k != "filler"} == before


def test_a_read_only_disk_is_one_line(tmp_path, mounted):
    subprocess.run(["mount", "-o", "remount,ro", str(mounted)], check=True)
    result = _analyze(tmp_path, mounted / "out")
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert f"{mounted / 'out'}: cannot be written ({os.strerror(errno.EROFS)}" in line, line
