"""``sbir-study run``: one participant's rating session in a PsychoPy window."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import Subcommands, count, options_from, require_extra

__all__ = ["COMMANDS", "register"]

#: This family's subcommands and their one-line help (what ``sbir-study --help`` lists).
COMMANDS = {
    "run": "run a rating session in a PsychoPy window",
}


def register(commands: Subcommands) -> None:
    parser = commands.add_parser(
        "run",
        help=COMMANDS["run"],
        description="Run one participant's rating session (the paper's Sec. 2.3) in a PsychoPy "
        "window and record it as BIDS under --data: every trial is on disk as soon as its "
        "response window closes. An existing session is never overwritten; --resume continues "
        "it from the first unrecorded trial.",
    )
    parser.add_argument("--protocol", type=Path, required=True, help="protocol file (.toml)")
    parser.add_argument("--stimuli", type=Path, required=True, help="stimulus set folder")
    parser.add_argument(
        "--participant",
        required=True,
        metavar="ID",
        help="the participant's id as a recruitment platform sends it or the lab's label; "
        "recorded under a BIDS label made of it (its letters and digits, see the README), the id "
        "as given in participants.tsv (source_id); the same id finds its label again on --resume",
    )
    parser.add_argument("--data", type=Path, required=True, help="BIDS dataset folder")
    parser.add_argument("--resume", action="store_true", help="continue the participant's session")
    parser.add_argument(
        "--simulate", action="store_true", help="a simulated participant answers (unattended)"
    )
    parser.add_argument("--windowed", action="store_true", help="a window, not the full screen")
    parser.add_argument(
        "--seed",
        type=count,
        default=None,
        help="the participant's order seed (default: drawn at random and recorded)",
    )
    parser.add_argument(
        "--list",
        type=count,
        default=None,
        metavar="N",
        help="the list of main pairs the participant rates, from 1, when the protocol splits "
        "them ([online] subset and lists); default: the list with the fewest sessions in --data "
        "(a resumed session keeps its list)",
    )
    details = parser.add_argument_group(
        "participant details",
        "those the protocol records ([participants] details) and these do not give are asked on "
        "screen before the instructions; written to participants.tsv ('n/a': prefer not to say)",
    )
    details.add_argument(
        "--age", default=None, help="whole years (default: asked on screen if recorded)"
    )
    details.add_argument(
        "--sex",
        default=None,
        help="F, M or O (female, male, other; default: asked on screen if recorded)",
    )
    details.add_argument(
        "--handedness",
        default=None,
        help="R, L or A (right, left, both; default: asked on screen if recorded)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    require_extra("lab", "run")
    from sbir_study.foundation.checks import check_input_file
    from sbir_study.study.session import SessionOptions, run_from_files

    # Every input (and the display) is checked before a window opens.
    check_input_file(args.protocol, "a protocol (.toml)")
    details = {"age": args.age, "sex": args.sex, "handedness": args.handedness}
    outcome = run_from_files(
        args.protocol,
        args.stimuli,
        args.participant,
        args.data,
        options_from(SessionOptions, args, details=details),
        progress=lambda line: print(line, flush=True),
    )
    refresh = f"{outcome.refresh_hz:.1f} Hz" if outcome.refresh_hz else "unmeasurable"
    print(
        f"Session {outcome.status}: {outcome.recorded} of {outcome.planned} trials recorded in "
        f"{outcome.path} (refresh {refresh}; durations timed by {outcome.timing_mode})"
    )
    return 0
