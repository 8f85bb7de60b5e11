"""``run --simulate`` with a protocol of 5 or 9 keys, in a real PsychoPy window under Xvfb.

The simulated participant presses the key of its rating through PsychoPy's keyboard; the
session records ratings 1..k and the scale in its sidecar. What the session records is
compared with the simulated dataset of the same seed and scale, written without any window
(`sbir_study.analysis.simulate.write_simulated_dataset`), and each recorded rating with the
key the key log says was pressed.
"""

import json

import pandas as pd
import pytest

from sbir_study.foundation.scale import Scale
from sbir_study.stimuli import SetDesign, generate_set
from tests.study.session_harness import start_session

TASK = "sbirscale"


@pytest.mark.parametrize(
    "keys, best",
    [(["a", "s", "d", "f", "g"], "high"), ([str(d) for d in range(1, 10)], "low")],
    ids=["5 keys, high is best", "9 keys"],
)
def test_a_simulated_session_on_another_scale(display, tmp_path, keys, best):
    from sbir_study.analysis.simulate import StudyDesign, write_simulated_dataset
    from sbir_study.stimuli import load_set

    scale = Scale(1, len(keys), best)
    stimuli = generate_set(
        tmp_path / "set",
        SetDesign(sketches=2, images_per_sketch=6, anchor_sketches=0, width=96, height=72),
        seed=8,
    )
    design = StudyDesign(participants=1, anchor_sketches=0, stimulus_s=0.6, blank_s=0.4)
    write_simulated_dataset(
        tmp_path / "sim", design, seed=5, scale=scale, stimuli=load_set(stimuli).manifest
    )
    beh = tmp_path / "sim" / "sub-01" / "beh"
    seed = json.loads(next(beh.glob("*_beh.json")).read_text())["Seed"]
    simulated = pd.read_csv(next(beh.glob("*_beh.tsv")), sep="\t")

    protocol = tmp_path / "protocol.toml"
    protocol.write_text(
        f'name = "scale"\ntask = "{TASK}"\n'
        "[timing]\nstimulus_s = 0.6\nblank_s = 0.4\n"
        "[anchoring]\nenabled = false\nrepeat = false\n"
        f'[response]\nkeys = {json.dumps(keys)}\nbest = "{best}"\npause_key = "b"\n'
        "[participants]\ndetails = []\n"
        '[dataset]\nname = "Scale tests"\nauthors = ["A. Tester"]\n'
        "[display]\nfullscreen = false\nresolution = [800, 600]\n"
    )
    data = tmp_path / "data"
    session = start_session(display, protocol, stimuli, data, "--simulate", "--seed", str(seed))
    status, _, err = session.finish(timeout=120)
    assert status == 0, err

    path = data / "sub-01" / "beh" / f"sub-01_task-{TASK}_beh.tsv"
    recorded = pd.read_csv(path, sep="\t")
    assert len(recorded) == 12
    rated = recorded["rating"].dropna().astype(int)
    assert rated.between(1, len(keys)).all() and len(rated) >= 10
    # The same pairs in the same order as the simulated participant with this seed, and the
    # same ratings wherever the press landed where the model put it (as the 7-key test says,
    # a press in a window's last instants may be scored in the next one on a busy machine).
    columns = ["trial", "phase", "sketch_id", "image_id"]
    pd.testing.assert_frame_equal(recorded[columns], simulated[columns])
    own = (recorded["rt"] - simulated["rt"]).abs() < 1e-3
    assert own.mean() >= 0.75, recorded[["rating", "rt"]].assign(model=simulated["rt"])
    assert (recorded["rating"][own] == simulated["rating"][own]).all()
    # Each rating is the key of its place in the protocol's list: rating r is keys[r - 1].
    log = data / "sourcedata" / "sub-01" / f"sub-01_task-{TASK}_keys.tsv"
    pressed = pd.read_csv(log, sep="\t", dtype=str)["key"]
    assert set(pressed) <= set(keys) | {"space"}
    # Every rating key logged is a press of some trial's window (a press that came late, in
    # the next trial's window, is that trial's, and may be changed there by its own press),
    # and each trial's rating is the last press of its window.
    presses = [
        [int(p.split("@")[0]) for p in str(cell).split()] for cell in recorded["presses"].fillna("")
    ]
    assert {keys[r - 1] for trial in presses for r in trial} == set(pressed) - {"space"}
    assert [trial[-1] if trial else None for trial in presses] == [
        None if pd.isna(rating) else int(rating) for rating in recorded["rating"]
    ]
    sidecar = json.loads(path.with_suffix(".json").read_text())
    assert sidecar["RatingScale"] == {"Low": 1, "High": len(keys), "Best": best}
    assert list(sidecar["rating"]["Levels"]) == [str(k) for k in range(1, len(keys) + 1)]
    assert sidecar["rating"]["Levels"][str(scale.best_point)] == "best match"
    # The words the participant read are kept: the main text written from the protocol's
    # settings names its keys as printed on them (a run of digits by its ends), and the
    # pause key (pauses are on).
    main = sidecar["InstructionTexts"]["main"]
    assert keys[0].upper() in main and keys[-1].upper() in main and "Press B to pause" in main
    assert "7 (worst match)" not in main
