"""Timing of the rating session under Xvfb, quiet and beside CPU-busy processes.

1. Onset schedule and response times. ``sbir-study run`` runs the protocol
   ``protocols/eitz2011.toml`` (2 s stimulus, 1 s black, anchoring shown for
   3 s) on a stimulus set of the paper's size (31 sketches x 40 images, 3 x 7
   anchors: 1,282 trials, about 65 minutes) in a window on a private Xvfb
   display, once on a quiet machine and once with ``--load`` busy processes
   (``python -c "while True: pass"``) running beside it. This process is the
   participant's keyboard: it presses keys through XTEST (at real-time
   priority where allowed, as a keyboard is not delayed by the machine's
   load), one to three rating keys per rated trial at random times inside the
   response window (a change of mind: top row and keypad mixed), and notes
   the monotonic time of each press. Reported per run: the onset error
   (actual flip - planned onset, on the session's own record), its growth
   from the first trials to the last, the stimulus and blank durations, the
   frames counted as dropped, and the error of every logged press time
   (``onset_monotonic`` + seconds from onset) against the injected one.
2. The per-trial write: :class:`sbir_study.study.recorder.SessionRecorder.append` (one
   line, flush, fsync) beside what a PsychoPy script does to keep its data
   after every trial, ``ExperimentHandler.saveAsWideText`` after each
   ``nextEntry`` (it rewrites the whole file), both for ``--writes`` trials.

    python benchmarks/bench_session.py [--sketches 31] [--images 40] [--anchor-sketches 3]
        [--load 2]
        [--runs quiet,loaded] [--writes 1240] [--out DIR]

``--out`` keeps each run's per-trial and per-press tables (CSV).
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parents[1]))
from sbir_study.stimuli import SetDesign, generate_set
from sbir_study.study.protocol import load_protocol
from sbir_study.study.recorder import SessionRecorder
from tests.study.session_harness import Keyboard, beh_file, realtime, start_session, xvfb

ROOT = Path(__file__).parents[1]
PROTOCOL = ROOT / "protocols" / "eitz2011.toml"
FRAME_MS = 1000 / 60


class MachineLoad:
    """The machine's 1-minute load average every 10 s, and the CPU time stolen by the host."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._steal = self._stolen()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    @staticmethod
    def _stolen() -> int:
        with open("/proc/stat") as handle:
            return int(handle.readline().split()[8])

    def _sample(self) -> None:
        while not self._stop.wait(10.0):
            with open("/proc/loadavg") as handle:
                self.samples.append(float(handle.read().split()[0]))

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join()
        stolen = (self._stolen() - self._steal) / 100  # USER_HZ
        return {
            "load average during (mean)": float(np.mean(self.samples or [np.nan])),
            "load average during (max)": float(np.max(self.samples or [np.nan])),
            "CPU time stolen by the host (s)": stolen,
        }


def busy(count: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def presses_for(rng: np.random.Generator, window: float) -> list[tuple[float, str]]:
    """One to three rating presses inside a response window: (seconds from onset, key)."""
    count = rng.choice([1, 2, 3], p=[0.6, 0.3, 0.1])
    times = np.sort(rng.uniform(0.15, window - 0.03, count))
    while count > 1 and np.diff(times).min() < 0.03:
        times = np.sort(rng.uniform(0.15, window - 0.03, count))
    keys = [("num_" if rng.random() < 0.3 else "") + str(rng.integers(1, 8)) for _ in times]
    return list(zip(times.tolist(), keys, strict=True))


def session_run(
    folder: Path, stimuli: Path, load: int, seed: int, x_nice: int = 0
) -> tuple[pd.DataFrame, ...]:
    """One session; returns the recorded trials and the injected presses."""
    protocol = load_protocol(PROTOCOL)
    timing = protocol.timing
    rng = np.random.default_rng(seed)
    data = folder / "data"
    workers = busy(load)
    injected = []
    try:
        with xvfb(nice=x_nice) as display:
            session = start_session(
                display,
                PROTOCOL,
                stimuli,
                data,
                "--seed",
                str(seed),
                "--age",
                "n/a",
                "--sex",
                "n/a",
            )
            session.wait_line("the session begins when the participant presses space")
            sidecar = beh_file(data, protocol.task).with_suffix(".json")
            order = pd.DataFrame(
                json.loads(sidecar.read_text())["TrialOrder"],
                columns=["trial", "phase", "sketch_id", "image_id"],
            )
            keys = Keyboard(display)
            time.sleep(1.0)
            # Time zero: the space bar that ends the instructions; each onset is planned
            # from it, and again from the space bar after the anchoring phase.
            base = keys.tap("space").t + timing.blank_s
            planned = base
            for index, phase in enumerate(order["phase"]):
                shown = timing.anchor_demo_s if phase == "anchor_demo" else timing.stimulus_s
                window = shown + timing.blank_s
                if phase != "anchor_demo":
                    plan = [(planned + t, key) for t, key in presses_for(rng, window)]
                    for press in keys.play(plan):
                        injected.append((index + 1, press.key, press.t))
                planned += window
                following = order["phase"].iloc[index + 1] if index + 1 < len(order) else None
                if phase == "anchor_demo" and following != "anchor_demo":
                    planned = keys.tap("space", at=planned + 0.5).t + timing.blank_s
            keys.tap("space", at=planned + 0.5)  # the end screen
            status, _, err = session.finish(timeout=120)
            if status != 0:
                raise RuntimeError(err)
    finally:
        for worker in workers:
            worker.kill()
            worker.wait()
    trials = pd.read_csv(beh_file(data, protocol.task), sep="\t", dtype={"participant": str})
    presses = pd.DataFrame(injected, columns=["trial", "key", "t_injected"])
    return trials, presses


def press_errors(trials: pd.DataFrame, presses: pd.DataFrame) -> pd.DataFrame:
    """Each injected press beside the logged one (same trial, same position in time order)."""
    rows = []
    by_trial = trials.set_index("trial")
    for trial, group in presses.groupby("trial"):
        row = by_trial.loc[trial]
        logged = [] if pd.isna(row["presses"]) else row["presses"].split()
        for k, (key, at) in enumerate(zip(group["key"], group["t_injected"], strict=True)):
            rating = int(key.removeprefix("num_"))
            if k < len(logged):
                logged_rating, offset = logged[k].split("@")
                error = row["onset_monotonic"] + float(offset) - at
                rows.append((trial, rating, int(logged_rating) == rating, error))
            else:
                rows.append((trial, rating, False, np.nan))
        final = int(group["key"].iloc[-1].removeprefix("num_"))
        rows[-1] = (*rows[-1][:2], rows[-1][2] and row["rating"] == final, rows[-1][3])
    return pd.DataFrame(rows, columns=["trial", "rating", "logged_right", "error"])


def summary(
    name: str,
    trials: pd.DataFrame,
    errors: pd.DataFrame,
    stimulus_s: float,
    blank_s: float,
    anchor_demo_s: float,
) -> dict:
    onset_error = (trials["onset"] - trials["onset_planned"]).to_numpy() * 1000
    shown = np.where(trials["phase"] == "anchor_demo", anchor_demo_s, stimulus_s)
    stim_error = (trials["stim_duration"].to_numpy() - shown) * 1000
    blank_error = (trials["blank_duration"].to_numpy() - blank_s) * 1000
    dropped = trials["dropped_frames"].to_numpy()
    clean = dropped == 0
    first, last = onset_error[:100], onset_error[-100:]
    slope = np.polyfit(np.arange(len(onset_error)), onset_error, 1)[0] * 1000
    press = errors["error"].to_numpy() * 1000
    return {
        "run": name,
        "trials": len(trials),
        "onset |err| median": np.median(np.abs(onset_error)),
        "onset |err| p95": np.percentile(np.abs(onset_error), 95),
        "onset |err| max (no drop)": np.abs(onset_error[clean]).max(),
        "onset |err| max (all)": np.abs(onset_error).max(),
        "trials with dropped frames": int((dropped > 0).sum()),
        "frames dropped": int(dropped.sum()),
        "onset err median, first 100": np.median(first),
        "onset err median, last 100": np.median(last),
        "onset err slope (ms per 1000 trials)": slope,
        "stim |err| median": np.median(np.abs(stim_error)),
        "stim |err| max": np.abs(stim_error).max(),
        "blank |err| median": np.median(np.abs(blank_error)),
        "blank |err| max": np.abs(blank_error).max(),
        "presses": len(errors),
        "presses logged right": int(errors["logged_right"].sum()),
        "press |err| median": np.nanmedian(np.abs(press)),
        "press |err| p99": np.nanpercentile(np.abs(press), 99),
        "press |err| max": np.nanmax(np.abs(press)),
    }


def write_costs(folder: Path, writes: int) -> dict[str, np.ndarray]:
    from psychopy import data as psychopy_data
    from psychopy import logging

    logging.console.setLevel(logging.ERROR)  # saveAsWideText warns at every overwrite

    order = [(k, "main", "s1", f"i{k}") for k in range(1, writes + 1)]
    recorder = SessionRecorder.open(
        folder / "bids",
        "01",
        task="bench",
        session={"Protocol": {}, "StimulusSetDigest": "", "Seed": 0},
        trial_order=order,
    )
    ours = []
    for k in range(1, writes + 1):
        row = {
            "participant": "01",
            "trial": k,
            "phase": "main",
            "sketch_id": "s1",
            "image_id": f"i{k}",
            "rating": k % 7 + 1,
            "rt": 0.8,
            "onset": 3.0 * k,
            "onset_monotonic": 100.0 + 3 * k,
            "stim_duration": 2.0,
            "blank_duration": 1.0,
            "n_presses": 1,
            "presses": "3@0.8",
            "paused_before": 0.0,
        }
        start = time.perf_counter()
        recorder.append(row)
        ours.append(time.perf_counter() - start)
    recorder.finish("complete")
    handler = psychopy_data.ExperimentHandler(
        name="bench", dataFileName=str(folder / "psychopy"), savePickle=False, saveWideText=False
    )
    theirs = []
    for k in range(1, writes + 1):
        start = time.perf_counter()
        for name, value in (
            ("trial", k),
            ("sketch_id", "s1"),
            ("image_id", f"i{k}"),
            ("rating", k % 7 + 1),
            ("rt", 0.8),
        ):
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
    parser.add_argument("--sketches", type=int, default=31)
    parser.add_argument("--images", type=int, default=40)
    parser.add_argument("--anchor-sketches", type=int, default=3)
    parser.add_argument("--load", type=int, default=2, help="busy processes in the loaded run")
    parser.add_argument(
        "--runs",
        default="quiet,loaded",
        help="runs in order: quiet, loaded, loaded-xrt (loaded, the X server at real-time "
        "priority)",
    )
    parser.add_argument("--writes", type=int, default=1240)
    parser.add_argument("--seed", type=int, default=2011)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    print(f"keyboard at real-time priority: {realtime()}; {platform.platform()}", flush=True)
    protocol = load_protocol(PROTOCOL)
    timing = protocol.timing
    results = []
    # Not under /tmp: an hour-long run must not lose its stimulus set to a cleaner of /tmp.
    (ROOT / "build").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-session-", dir=ROOT / "build") as folder:
        folder = Path(folder)
        design = SetDesign(
            sketches=args.sketches,
            images_per_sketch=args.images,
            anchor_sketches=args.anchor_sketches,
        )
        stimuli = generate_set(folder / "set", design, seed=args.seed)
        for name in args.runs.split(","):
            load = args.load if name.startswith("loaded") else 0
            x_nice = -10 if name.endswith("xrt") else 0
            started = time.strftime("%Y-%m-%d %H:%M")
            with open("/proc/loadavg") as handle:
                before = handle.read().split()[:3]
            machine = MachineLoad()
            trials, presses = session_run(folder / name, stimuli, load, args.seed, x_nice)
            during = machine.stop()
            errors = press_errors(trials, presses)
            if args.out:
                args.out.mkdir(parents=True, exist_ok=True)
                trials.to_csv(args.out / f"{name}_trials.csv", index=False)
                errors.assign(t_injected=presses["t_injected"].to_numpy()).to_csv(
                    args.out / f"{name}_presses.csv", index=False
                )
            result = summary(
                name, trials, errors, timing.stimulus_s, timing.blank_s, timing.anchor_demo_s
            )
            result["started"] = started
            result["load average before"] = " ".join(before)
            result.update(during)
            results.append(result)
            print(pd.Series(result).to_string(), flush=True)
        costs = write_costs(folder, args.writes)
    table = pd.DataFrame(results).set_index("run").T
    print()
    print(table.to_markdown(floatfmt=".2f") if hasattr(table, "to_markdown") else table)
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
