"""``sbir-study run`` before any window: every input checked first, then the display.

Each case runs the real command in a subprocess without a usable display:
bad input must be reported with exit status 2 and one line naming what is
wrong, in the order the checks are made (protocol, stimulus set, --data,
participant label, existing session, participant details, display), and
nothing may be written. Without a display the command must not crash (the keyboard
backend would end it with a segmentation fault, exit 139, and nothing on stderr).
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sbir_study.stimuli import SetDesign, generate_set

ROOT = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def stimulus_set(tmp_path_factory):
    return generate_set(
        tmp_path_factory.mktemp("stimuli") / "set",
        SetDesign(sketches=2, images_per_sketch=3, anchor_sketches=0, width=96, height=72),
        seed=5,
    )


@pytest.fixture()
def protocol(tmp_path):
    path = tmp_path / "protocol.toml"
    path.write_text(
        'name = "t"\ntask = "sbirtest"\n[anchoring]\nenabled = false\n'
        'repeat = false\n[participants]\ndetails = ["age", "sex"]\n'
    )
    return path


def run(*arguments, display=None):
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    if display is not None:
        env["DISPLAY"] = display
    return subprocess.run(
        [sys.executable, "-m", "sbir_study", "run", *map(str, arguments)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def assert_one_line(result, *fragments):
    assert result.returncode == 2, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("sbir-study: error: ")
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def test_no_display_is_one_line_and_nothing_is_written(protocol, stimulus_set, tmp_path):
    data = tmp_path / "data"
    common = (
        "--protocol",
        protocol,
        "--stimuli",
        stimulus_set,
        "--participant",
        "01",
        "--data",
        data,
        "--age",
        "30",
        "--sex",
        "F",
    )
    line = assert_one_line(run(*common), "no display: DISPLAY is not set", "xvfb-run")
    assert "Traceback" not in line
    assert not data.exists()
    # A display that nobody serves.
    assert_one_line(run(*common, display=":97"), "no display: cannot open DISPLAY=:97", "xvfb-run")
    assert not data.exists()


def recorded_session(data):
    """A dataset holding one started session of sub-01 (one trial); its _beh.tsv."""
    tsv = data / "sub-01" / "beh" / "sub-01_task-sbirtest_beh.tsv"
    tsv.parent.mkdir(parents=True)
    (data / "dataset_description.json").write_text('{"Name": "x", "BIDSVersion": "1.9.0"}')
    tsv.write_text("participant\ttrial\n01\t1\n")
    return tsv


@pytest.mark.parametrize(
    "case,fragments",
    [
        ("protocol", ["protocol.toml: timing.stimulus_s: expected a duration"]),
        ("stimuli", ["nowhere: no such folder; expected a stimulus set"]),
        ("data-is-a-file", ["data: exists and is a file; expected a BIDS dataset folder"]),
        ("data-of-someone", ["holds files but no dataset_description.json"]),
        ("label", ["--participant: expected no control characters, got '0\\t1'"]),
        ("existing", ["already recorded; it is never overwritten"]),
        ("existing-id", ["participant '01' is already recorded; it is never overwritten"]),
        ("resume-nothing", ["no session to resume"]),
        ("resume-seed", ["--seed: a resumed session uses its recorded seed"]),
        ("age", ["--age: expected whole years from 1 to 120 or n/a, got 'thirty'"]),
        ("sex", ["--sex: expected one of F (female), M (male), O (other) or n/a, got 'x'"]),
        ("handedness", ["--handedness: the protocol does not record handedness"]),
        ("resume-details", ["--age: participants.tsv records '31' for sub-01, not '30'"]),
    ],
)
def test_every_check_that_needs_no_window_comes_first(
    case, fragments, protocol, stimulus_set, tmp_path, monkeypatch, capsys
):
    # Without a display: each of these must be reported, not the missing display. (In this
    # process, through the command line's entry point: the subprocess above shows the same
    # entry point ends cleanly.)
    from sbir_study.cli import main

    monkeypatch.delenv("DISPLAY", raising=False)
    data = tmp_path / "data"
    arguments = {
        "--protocol": protocol,
        "--stimuli": stimulus_set,
        "--participant": "01",
        "--data": data,
        "--age": "30",
        "--sex": "F",
    }
    flags = []
    if case == "protocol":
        protocol.write_text(protocol.read_text() + "[timing]\nstimulus_s = inf\n")
        arguments["--participant"] = "0\t1"  # reported later, if at all
    elif case == "stimuli":
        arguments["--stimuli"] = tmp_path / "nowhere"
    elif case == "data-is-a-file":
        data.write_text("not a folder")
    elif case == "data-of-someone":
        data.mkdir()
        (data / "results.xlsx").write_bytes(b"precious")
    elif case == "label":
        arguments["--participant"] = "0\t1"
    elif case == "existing":
        recorded_session(data)
    elif case == "existing-id":  # the id participants.tsv records for sub-01
        recorded_session(data)
        (data / "participants.tsv").write_text("participant_id\tsource_id\nsub-01\tR_0-1\n")
        arguments["--participant"] = "R_0-1"
    elif case == "resume-nothing":
        flags.append("--resume")
    elif case == "resume-seed":
        flags += ["--resume", "--seed", "3"]
    elif case == "age":
        arguments["--age"] = "thirty"
    elif case == "sex":
        arguments["--sex"] = "x"
    elif case == "handedness":
        arguments["--handedness"] = "R"
    elif case == "resume-details":
        tsv = recorded_session(data)
        (data / "participants.tsv").write_text("participant_id\tage\tsex\nsub-01\t31\tF\n")
        tsv.with_suffix(".json").write_text('{"Seed": 4}')
        flags.append("--resume")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    status = main(["run", *(str(v) for item in arguments.items() for v in item), *flags])
    captured = capsys.readouterr()
    assert_one_line(subprocess.CompletedProcess([], status, captured.out, captured.err), *fragments)
    # Nothing written, nothing touched.
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
