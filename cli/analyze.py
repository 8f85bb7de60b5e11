"""``sbir-study analyze``: the paper's statistics, the ground truth, figures and report."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import (
    Parser,
    Subcommands,
    add_alpha,
    add_alternative,
    add_figure_formats,
    add_overwrite,
    add_scale,
    add_seed,
    count,
    count_min2,
    options_from,
    positive_int,
)

__all__ = ["COMMANDS", "register"]

#: This family's subcommands and their one-line help (what ``sbir-study --help`` lists).
COMMANDS = {
    "analyze": "statistics, ground truth and report from a BIDS dataset or a ratings table",
}


def register(commands: Subcommands) -> None:
    """Add ``analyze`` to the subcommands."""
    parser = commands.add_parser(
        "analyze",
        help=COMMANDS["analyze"],
        description="Read a BIDS dataset (every sub-*/beh/*_beh.tsv) or a flat CSV/TSV ratings "
        "table and write the statistics tables, the consensus ground truth and summary.json "
        "to --out.",
    )
    _input_options(parser)
    _statistics_options(parser)
    _figure_options(parser)
    _participant_options(parser)
    add_overwrite(parser)
    parser.set_defaults(handler=analyze)


def _input_options(parser: Parser) -> None:
    parser.add_argument("input", type=Path, help="BIDS dataset folder or ratings table")
    parser.add_argument("--out", type=Path, required=True, help="folder for the results")
    add_scale(
        parser,
        "the rating scale of a flat table",
        "; a BIDS dataset's is the one its sidecars record (default: the recorded one, else 1-7 "
        "with 1 the best match)",
    )


def _statistics_options(parser: Parser) -> None:
    from sbir_study.analysis.limits import (
        PAIRWISE_FULL_ROWS,
        PAIRWISE_RATERS,
        PERMUTATION_RATERS_LIMIT,
    )

    add_alternative(parser)
    add_alpha(parser)
    parser.add_argument(
        "--pairwise",
        choices=("auto", "full", "summary"),
        default="auto",
        help="inter-user table of every pair of participants, pairwise_tau.parquet: always "
        f"(full), never (summary), or while it has at most {PAIRWISE_FULL_ROWS:,} rows, about "
        "800 raters on 31 sketches (auto); pairwise_tau_summary.csv is always written. The "
        "table is zstd-compressed Parquet, every value exact (pandas.read_parquet reads it): "
        "about 15 bytes a row, so 20 MiB at 300 raters of 31 sketches, 890 MiB at 2,000 "
        "(62 million rows) (default: auto)",
    )
    parser.add_argument(
        "--pairwise-raters",
        type=_raters_or_all,
        default=PAIRWISE_RATERS,
        metavar="N|all",
        help="a sketch rated by more than N participants gets its inter-user tau_b from the "
        "pairs among N of them drawn at random (from --seed; the numbers drawn are in "
        "pairwise_tau_summary.csv and summary.json); all: every pair at any size "
        f"(default: {PAIRWISE_RATERS})",
    )
    parser.add_argument(
        "--bootstrap",
        type=count,
        default=1000,
        help="bootstrap resamples of the intervals of Krippendorff's alpha, sketch/image "
        "pairs drawn with replacement; 0 for none (default: 1000)",
    )
    parser.add_argument(
        "--permutations",
        type=count,
        default=1000,
        help="permutations of the Skillings-Mack permutation p-value, for sketches with at "
        f"most {PERMUTATION_RATERS_LIMIT} raters; 0 for none (default: 1000)",
    )
    parser.add_argument(
        "--reliability-splits",
        type=positive_int,
        default=1000,
        metavar="N",
        help="random splits of the participants into two halves for the split-half "
        "reliability of the consensus, reliability.csv (from --seed; default: 1000)",
    )
    add_seed(parser)


def _figure_options(parser: Parser) -> None:
    parser.add_argument(
        "--no-figures",
        action="store_true",
        help="skip Figs. 4-9 (tables, summary.json and report.html are still written)",
    )
    add_figure_formats(parser)
    parser.add_argument(
        "--pilot",
        type=Path,
        default=None,
        help="ratings of a pilot study (BIDS folder or table), drawn beside the final "
        "study in fig7_distribution (default: none, the final study alone)",
    )
    parser.add_argument(
        "--stimuli",
        type=Path,
        default=None,
        help="stimulus set folder (with manifest.csv): adds thumbnails of the best and worst "
        "agreed sketches (fig9_extremes); the set is validated first (default: none, no "
        "Fig. 9)",
    )


def _participant_options(parser: Parser) -> None:
    parser.add_argument(
        "--exclude",
        action="append",
        type=_exclusion_rule,
        default=[],
        metavar="RULE",
        help="leave out the participants a pre-registered rule names, before every statistic "
        "(repeatable): anchoring-tau-below=V (median tau_b of their repeated anchor ratings "
        "against the prescribed ones below V), missed-above=V (share of main-block trials "
        "without a rating above V), incomplete (a session whose sidecar records a status "
        "other than complete), catch-failed=N (more than N catch pairs failed), labels=FILE "
        "(one participant label per line); they are "
        "listed with their rules in participants.csv, summary.json and the report "
        "(default: none)",
    )
    parser.add_argument(
        "--catch",
        type=Path,
        default=None,
        metavar="FILE.csv",
        help="catch pairs, a CSV with sketch_id,image_id,lowest,highest (the ratings that "
        "pass, as pressed), scored per participant into participants.csv; for a flat table, "
        "or instead of those a dataset's protocol names (default: those the sessions' "
        "sidecars record, else none)",
    )


def _exclusion_rule(text: str):
    """``--exclude``: one rule (:func:`~sbir_study.analysis.exclusion.parse_exclusion_rule`)."""
    from sbir_study.analysis.exclusion import parse_exclusion_rule
    from sbir_study.foundation.checks import InputError

    try:
        return parse_exclusion_rule(text)
    except InputError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("--exclude: ")) from None


def _raters_or_all(text: str) -> int | None:
    """``--pairwise-raters``: a whole number >= 2, or ``all`` (no cap)."""
    if text.strip().lower() == "all":
        return None
    try:
        return count_min2(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"expected a whole number >= 2 or 'all', got {text!r}"
        ) from None


def analyze(args: argparse.Namespace) -> int:
    from sbir_study.analysis import AnalysisOptions, analyze_ratings, load_ratings
    from sbir_study.analysis.summary import format_summary
    from sbir_study.foundation.outputs import check_target

    options = options_from(AnalysisOptions, args)
    inputs = [p for p in (args.input, args.pilot, args.stimuli) if p is not None]
    check_target(args.out, "analyze", overwrite=args.overwrite, inputs=inputs)
    from sbir_study.foundation.scale import Scale

    scale = Scale.parse(args.scale) if args.scale is not None else None
    # The statistics read the rating columns only: a session's timing and key presses are
    # parsed (their lines checked) but not kept.
    ratings = load_ratings(args.input, scale=scale, extra_columns=False)
    catch = None
    if args.catch is not None:
        from sbir_study.analysis.catch import read_catch_pairs

        catch = read_catch_pairs(args.catch)
    exclusions = None
    if args.exclude:
        from sbir_study.analysis.exclusion import decide_exclusions

        exclusions = decide_exclusions(
            ratings, args.exclude, alternative=args.alternative, catch=catch
        )
    pilot = load_ratings(args.pilot, extra_columns=False) if args.pilot is not None else None
    sketch_images = None
    if args.stimuli is not None:
        from sbir_study.stimuli import load_set

        sketch_images = load_set(args.stimuli).sketch_paths()
    summary = analyze_ratings(
        ratings,
        args.out,
        options,
        figures=not args.no_figures,
        figure_formats=args.figure_formats,
        pilot=pilot,
        sketch_images=sketch_images,
        overwrite=args.overwrite,
        exclusions=exclusions,
        catch=catch,
    )
    print(format_summary(summary, args.out))
    return 0
