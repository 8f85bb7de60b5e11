"""``sbir-study run``: one participant's rating session in a PsychoPy window."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import InputError, count

__all__ = ["register"]


def register(commands) -> None:
    parser = commands.add_parser(
        "run",
        help="run a rating session in a PsychoPy window",
        description="Run one participant's rating session (the paper's Sec. 2.3) in a PsychoPy "
        "window and record it as BIDS under --data: every trial is on disk as soon as its "
        "response window closes. An existing session is never overwritten; --resume continues "
        "it from the first unrecorded trial.",
    )
    parser.add_argument("--protocol", type=Path, required=True, help="protocol file (.toml)")
    parser.add_argument("--stimuli", type=Path, required=True, help="stimulus set folder")
    parser.add_argument("--participant", required=True, help="participant label (letters, digits)")
    parser.add_argument("--data", type=Path, required=True, help="BIDS dataset folder")
    parser.add_argument("--resume", action="store_true", help="continue the participant's session")
    parser.add_argument(
        "--simulate", action="store_true", help="a simulated participant answers (unattended)"
    )
    parser.add_argument("--windowed", action="store_true", help="a window, not the full screen")
    parser.add_argument(
        "--seed", type=count, default=None,
        help="the participant's order seed (default: drawn at random and recorded)",
    )  # fmt: skip
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from analysis.checks import check_input_file, check_participant
    from analysis.outputs import check_dataset_folder
    from study.protocol import load_protocol
    from study.session import run_session, stimulus_set_for

    # Every input is checked before a window opens.
    check_input_file(args.protocol, "a protocol (.toml)")
    protocol = load_protocol(args.protocol)
    stimulus_set = stimulus_set_for(args.stimuli, protocol)
    check_participant(args.participant, "--participant")
    check_dataset_folder(args.data, "run")
    if args.resume and args.seed is not None:
        raise InputError("--seed: a resumed session uses its recorded seed; drop --seed")
    outcome = run_session(
        protocol, stimulus_set, args.participant, args.data, protocol_file=args.protocol,
        resume=args.resume, simulate=args.simulate, windowed=args.windowed, seed=args.seed,
    )  # fmt: skip
    refresh = f"{outcome.refresh_hz:.1f} Hz" if outcome.refresh_hz else "unmeasurable"
    print(
        f"Session {outcome.status}: {outcome.recorded} of {outcome.planned} trials recorded in "
        f"{outcome.path} (refresh {refresh}; durations timed by {outcome.timing_mode})"
    )
    return 0
