"""Timing of the rating session under Xvfb, and the cost of writing each trial.

1. A session of ``--trials`` pairs (0.3 s stimulus, 0.2 s blank) runs in a real
   PsychoPy window on a private Xvfb display; this process presses one rating
   key per trial through XTEST at a random time inside the window and records
   the monotonic time of each press. Reported: the error of the logged press
   time (``onset_monotonic + rt``) against the injected one, and the error of
   each measured stimulus and blank duration against the protocol's.
2. The per-trial write: :class:`study.recorder.SessionRecorder.append` (one
   line, flush, fsync) beside what a PsychoPy script does to keep its data
   after every trial, ``ExperimentHandler.saveAsWideText`` after each
   ``nextEntry`` (it rewrites the whole file), both for ``--writes`` trials.

    python benchmarks/bench_session.py [--trials 210] [--writes 1240]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))
from test_session import Keys, beh, protocol_file, start_session

from stimuli import SetDesign, generate_set
from study.recorder import SessionRecorder


def xvfb() -> tuple[subprocess.Popen, str]:
    read, write = os.pipe()
    server = subprocess.Popen([shutil.which("Xvfb"), "-displayfd", str(write), "-screen", "0",
                               "1920x1200x24", "-nolisten", "tcp"], pass_fds=(write,),
                              stderr=subprocess.DEVNULL)  # fmt: skip
    os.close(write)
    with os.fdopen(read) as stream:
        return server, f":{stream.readline().strip()}"


def rows_written(data: Path) -> pd.DataFrame:
    path = beh(data)
    if not path.exists():
        return pd.DataFrame()
    return pd.read_csv(path, sep="\t")


def session_timing(folder: Path, trials: int, rng: np.random.Generator) -> pd.DataFrame:
    stimulus_s, blank_s = 0.3, 0.2
    sketches = max(1, trials // 21)
    design = SetDesign(sketches=sketches, images_per_sketch=21, anchor_sketches=0, width=96,
                       height=72)  # fmt: skip
    stimuli = generate_set(folder / "set", design)
    protocol = protocol_file(folder, stimulus_s, blank_s, anchoring=False)
    data = folder / "data"
    server, display = xvfb()
    try:
        session = start_session(display, protocol, stimuli, data, "--seed", "1")
        keys = Keys(display)
        while not beh(data).with_suffix(".json").exists():
            time.sleep(0.02)
        time.sleep(1.0)
        keys.tap("space")
        injected = {}
        planned = sketches * 21
        # Trial k's row is written when trial k + 1 begins: then trial k + 1's onset is known
        # exactly, and trial k + 2 follows one period later. Press in trial k + 2's window.
        for k in range(1, planned - 1):
            while len(rows := rows_written(data)) < k:
                time.sleep(0.005)
            last = rows.iloc[k - 1]
            onset_next = last["onset_monotonic"] + last["stim_duration"] + last["blank_duration"]
            target = onset_next + (stimulus_s + blank_s) + rng.uniform(0.08, 0.42)
            key = str(int(rng.integers(1, 8)))
            injected[k + 2] = (key, keys.tap_at(key, target))
        session.communicate(timeout=120)
    finally:
        server.terminate()
        server.wait()
    table = rows_written(data).set_index("trial")
    rows = []
    for trial, (key, at) in injected.items():
        row = table.loc[trial]
        press_error = row["onset_monotonic"] + row["rt"] - at
        rows.append(
            (
                trial,
                row["n_presses"],
                row["rating"] == int(key),
                press_error,
                row["stim_duration"] - stimulus_s,
                row["blank_duration"] - blank_s,
            )
        )
    return pd.DataFrame(rows, columns=["trial", "n_presses", "rating_ok", "press_error",
                                       "stim_error", "blank_error"])  # fmt: skip


def write_costs(folder: Path, writes: int) -> dict[str, np.ndarray]:
    from psychopy import data as psychopy_data
    from psychopy import logging

    logging.console.setLevel(logging.ERROR)  # saveAsWideText warns at every overwrite

    order = [(k, "main", "s1", f"i{k}") for k in range(1, writes + 1)]
    recorder = SessionRecorder.open(folder / "bids", "01", task="bench",
                                    session={"Protocol": {}, "StimulusSetDigest": "", "Seed": 0},
                                    trial_order=order)  # fmt: skip
    ours = []
    for k in range(1, writes + 1):
        row = {"participant": "01", "trial": k, "phase": "main", "sketch_id": "s1",
               "image_id": f"i{k}", "rating": k % 7 + 1, "rt": 0.8, "onset": 3.0 * k,
               "onset_monotonic": 100.0 + 3 * k, "stim_duration": 2.0, "blank_duration": 1.0,
               "n_presses": 1, "presses": "3@0.8", "paused_before": 0.0}  # fmt: skip
        start = time.perf_counter()
        recorder.append(row)
        ours.append(time.perf_counter() - start)
    recorder.finish("complete")
    handler = psychopy_data.ExperimentHandler(name="bench", dataFileName=str(folder / "psychopy"),
                                              savePickle=False, saveWideText=False)  # fmt: skip
    theirs = []
    for k in range(1, writes + 1):
        start = time.perf_counter()
        for name, value in (("trial", k), ("sketch_id", "s1"), ("image_id", f"i{k}"),
                            ("rating", k % 7 + 1), ("rt", 0.8)):  # fmt: skip
            handler.addData(name, value)
        handler.nextEntry()
        handler.saveAsWideText(
            str(folder / "psychopy.csv"), delim=",", fileCollisionMethod="overwrite"
        )
        theirs.append(time.perf_counter() - start)
    handler.abort()
    return {
        "SessionRecorder.append (line + fsync)": np.array(ours),
        "ExperimentHandler.saveAsWideText per trial": np.array(theirs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=210)
    parser.add_argument("--writes", type=int, default=1240)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as folder:
        timing = session_timing(Path(folder), args.trials, rng)
        costs = write_costs(Path(folder), args.writes)
    single = timing[timing["n_presses"] == 1]
    print(f"{len(timing)} trials with an injected press; {len(single)} logged exactly one press; "
          f"rating right in {int(single['rating_ok'].sum())}")  # fmt: skip
    print("| error (ms) | median | p5 | p95 | max abs |")
    print("|---|---|---|---|---|")
    for name, column in (("press time (logged - injected)", "press_error"),
                         ("stimulus duration (measured - 0.3 s)", "stim_error"),
                         ("blank duration (measured - 0.2 s)", "blank_error")):  # fmt: skip
        values = timing[column].to_numpy() * 1000 if column != "press_error" else \
            single[column].to_numpy() * 1000  # fmt: skip
        print(f"| {name} | {np.median(values):.2f} | {np.percentile(values, 5):.2f} | "
              f"{np.percentile(values, 95):.2f} | {np.abs(values).max():.2f} |")  # fmt: skip
    frame = 1000 / 60
    for column in ("stim_error", "blank_error"):
        late = timing[(timing[column] * 1000).abs() > frame]
        print(f"{column}: {len(late)} of {len(timing)} trials beyond one 60 Hz frame "
              f"(trials {late['trial'].tolist()})")  # fmt: skip
    print()
    print(f"| per-trial write, {args.writes} trials (ms) | median | p99 | max |")
    print("|---|---|---|---|")
    medians = []
    for name, values in costs.items():
        ms = values * 1000
        medians.append(np.median(ms))
        print(f"| {name} | {np.median(ms):.3f} | {np.percentile(ms, 99):.3f} | {ms.max():.3f} |")
    print(f"ExperimentHandler / SessionRecorder (median): {medians[1] / medians[0]:.1f}x")


if __name__ == "__main__":
    main()
