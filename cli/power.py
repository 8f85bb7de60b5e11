"""``sbir-study power``: how many participants a replication needs, by simulation."""

from __future__ import annotations

import argparse
from pathlib import Path

from sbir_study.foundation import paper
from sbir_study.foundation.progress import step

from .common import (
    Subcommands,
    add_alpha,
    add_figure_formats,
    add_overwrite,
    add_seed,
    options_from,
    positive_int,
    whole_numbers,
)

__all__ = ["COMMANDS", "register"]

#: This family's subcommands and their one-line help (what ``sbir-study --help`` lists).
COMMANDS = {
    "power": "how many participants a replication needs, by simulation",
}

_COUNTS = (5, 10, 15, 20, paper.PARTICIPANTS, 40)


def register(commands: Subcommands) -> None:
    parser = commands.add_parser(
        "power",
        help=COMMANDS["power"],
        description="Simulate studies with each number of participants (the rater model of "
        "sbir_study.analysis.simulate, the paper's design) and report the share of sketches with "
        "Kendall's W significant, tau_b between the consensus of that many participants and "
        "that of a large reference panel, and the share of significant inter-user "
        "correlations with its 95% range. Writes power.csv, power_runs.csv and "
        "power.png/.pdf to --out. With --pilot, also how many raters a consensus needs to "
        "reach --reliability, from the pilot's split-half reliability: power_reliability.csv.",
    )
    parser.add_argument("--out", type=Path, required=True, help="folder for the results")
    parser.add_argument(
        "--participants",
        type=whole_numbers(2, "counts"),
        default=_COUNTS,
        help=f"comma-separated participant counts (default: {','.join(map(str, _COUNTS))})",
    )
    parser.add_argument(
        "--replications",
        type=positive_int,
        default=100,
        help="simulated studies per participant count",
    )
    parser.add_argument(
        "--reference", type=positive_int, default=100, help="participants in the reference panel"
    )
    parser.add_argument(
        "--sketches", type=positive_int, default=paper.SKETCHES, help="sketches per simulated study"
    )
    parser.add_argument(
        "--images", type=positive_int, default=paper.IMAGES_PER_SKETCH, help="images per sketch"
    )
    add_alpha(parser)
    add_seed(parser)
    add_figure_formats(parser)
    parser.add_argument("--jobs", type=positive_int, default=1, help="worker processes")
    parser.add_argument(
        "--pilot",
        type=Path,
        default=None,
        help="ratings of a pilot study (BIDS folder or table): also answer how many raters a "
        "consensus needs to reach --reliability, from the pilot's split-half reliability "
        "(Spearman-Brown); writes power_reliability.csv (default: none)",
    )
    parser.add_argument(
        "--reliability",
        type=_reliability_target,
        default=0.8,
        metavar="R",
        help="the reliability the consensus should reach, between 0 and 1 (with --pilot; "
        "default: 0.8)",
    )
    parser.add_argument(
        "--reliability-splits",
        type=positive_int,
        default=1000,
        metavar="N",
        help="random splits of the pilot's participants into halves, from --seed (with "
        "--pilot; default: 1000)",
    )
    add_overwrite(parser)
    parser.set_defaults(handler=power)


def _reliability_target(text: str) -> float:
    """``--reliability``: a number strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a reliability between 0 and 1, got {text!r}")
    return value


def power(args: argparse.Namespace) -> int:
    from sbir_study.analysis.power import (
        PowerOptions,
        format_power,
        format_reliability,
        power_analysis,
        raters_for_reliability,
        summarize_power,
        write_power,
    )
    from sbir_study.analysis.simulate import StudyDesign
    from sbir_study.foundation.outputs import check_target

    check_target(
        args.out,
        "power",
        overwrite=args.overwrite,
        inputs=[args.pilot] if args.pilot is not None else [],
    )
    reliability = None
    if args.pilot is not None:
        from sbir_study.analysis import load_ratings

        with step("pilot: split-half reliability"):
            reliability = raters_for_reliability(
                load_ratings(args.pilot),
                target=args.reliability,
                n_splits=args.reliability_splits,
                seed=args.seed,
            )
    design = StudyDesign(sketches=args.sketches, images_per_sketch=args.images)
    options = options_from(PowerOptions, args, counts=args.participants, design=design)
    runs = power_analysis(options, jobs=args.jobs, progress=None)
    summary = summarize_power(runs)
    with step("writing"):
        write_power(
            runs,
            summary,
            args.out,
            overwrite=args.overwrite,
            reliability=reliability,
            figure_formats=args.figure_formats,
        )
    print(format_power(summary, options, args.out))
    if reliability is not None:
        print(format_reliability(reliability))
        print(f"Table: {args.out / 'power_reliability.csv'}")
    return 0
