"""``sbir-study power``: how many participants a replication needs, by simulation."""

from __future__ import annotations

import argparse
from pathlib import Path

from sbir_study.foundation import paper
from sbir_study.foundation.progress import step

from .common import add_alpha, add_overwrite, add_seed, options_from, positive_int, whole_numbers

__all__ = ["COMMANDS", "register"]

#: This family's subcommands and their one-line help (what ``sbir-study --help`` lists).
COMMANDS = {
    "power": "how many participants a replication needs, by simulation",
}

_COUNTS = (5, 10, 15, 20, paper.PARTICIPANTS, 40)


def register(commands) -> None:
    parser = commands.add_parser(
        "power",
        help=COMMANDS["power"],
        description="Simulate studies with each number of participants (the rater model of "
        "sbir_study.analysis.simulate, the paper's design) and report the share of sketches with "
        "Kendall's W significant, tau_b between the consensus of that many participants and "
        "that of a large reference panel, and the share of significant inter-user "
        "correlations with its 95% range. Writes power.csv, power_runs.csv and "
        "power.png/.pdf to --out.",
    )
    parser.add_argument("--out", type=Path, required=True, help="folder for the results")
    parser.add_argument(
        "--participants",
        type=whole_numbers(2, "counts"),
        default=_COUNTS,
        help=f"comma-separated participant counts (default: {','.join(map(str, _COUNTS))})",
    )
    parser.add_argument("--replications", type=positive_int, default=100,
                        help="simulated studies per participant count")  # fmt: skip
    parser.add_argument(
        "--reference", type=positive_int, default=100, help="participants in the reference panel"
    )
    parser.add_argument("--sketches", type=positive_int, default=paper.SKETCHES,
                        help="sketches per simulated study")  # fmt: skip
    parser.add_argument("--images", type=positive_int, default=paper.IMAGES_PER_SKETCH,
                        help="images per sketch")  # fmt: skip
    add_alpha(parser)
    add_seed(parser)
    parser.add_argument("--jobs", type=positive_int, default=1, help="worker processes")
    add_overwrite(parser)
    parser.set_defaults(handler=power)


def power(args: argparse.Namespace) -> int:
    from sbir_study.analysis.power import (
        PowerOptions,
        format_power,
        power_analysis,
        summarize_power,
        write_power,
    )
    from sbir_study.analysis.simulate import StudyDesign
    from sbir_study.foundation.outputs import check_target

    check_target(args.out, "power", overwrite=args.overwrite)
    design = StudyDesign(sketches=args.sketches, images_per_sketch=args.images)
    options = options_from(PowerOptions, args, counts=args.participants, design=design)
    runs = power_analysis(options, jobs=args.jobs, progress=None)
    summary = summarize_power(runs)
    with step("writing"):
        write_power(runs, summary, args.out, overwrite=args.overwrite)
    print(format_power(summary, options, args.out))
    return 0
