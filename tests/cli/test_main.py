"""``sbir_study.cli.main`` called from a program (a notebook, a pipeline, these tests): it
gives the exit status and leaves the program's process as it found it."""

import os

import pytest

import sbir_study.cli.power
from sbir_study.cli import main
from sbir_study.foundation.checks import InputError


@pytest.mark.parametrize("ending", ["returns", "refuses"])
def test_the_environment_a_command_changed_is_restored(monkeypatch, tmp_path, ending):
    def changing_the_environment(args):
        # What importing PsychoPy does: its package folders added for the programs it starts.
        os.environ["PATH"] += os.pathsep + str(tmp_path / "bin")
        os.environ["PYTHONUSERBASE"] = str(tmp_path)
        del os.environ["SBIR_STUDY_KEPT"]
        if ending == "refuses":
            raise InputError(f"{args.out}: refused")
        return 0

    monkeypatch.setattr(sbir_study.cli.power, "power", changing_the_environment)
    monkeypatch.setenv("SBIR_STUDY_KEPT", "the program's own")
    monkeypatch.delenv("PYTHONUSERBASE", raising=False)
    before = dict(os.environ)
    status = main(["power", "--out", str(tmp_path / "out")])
    assert status == {"returns": 0, "refuses": 2}[ending]
    assert dict(os.environ) == before
