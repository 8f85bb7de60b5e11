"""``sbir-study evaluate``, ``evaluate-hpatches`` and ``baseline``: scoring retrieval engines."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from sbir_study.foundation.progress import counter, step

from .common import (
    InputError,
    Parser,
    Subcommands,
    add_alpha,
    add_alternative,
    add_figure_formats,
    add_overwrite,
    add_scale,
    add_seed,
    at_least,
    options_from,
    positive_int,
    whole_numbers,
)

__all__ = ["COMMANDS", "register"]

#: This family's subcommands and their one-line help (what ``sbir-study --help`` lists).
COMMANDS = {
    "evaluate": "score retrieval runs against the consensus ground truth",
    "evaluate-hpatches": "mAP of patch and image retrieval in the HPatches file formats",
    "baseline": "rank a stimulus set's images with a simple descriptor under a distance",
}


def _rating_threshold(text: str) -> float:
    # Its range is the ground truth's scale, known once the files are read.
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a mean rating, got {text!r}")
    return value


def register(commands: Subcommands) -> None:
    """Add ``evaluate``, ``evaluate-hpatches`` and ``baseline`` to the subcommands."""
    _register_evaluate(commands)
    _register_hpatches(commands)
    _register_baseline(commands)


def _register_evaluate(commands: Subcommands) -> None:
    parser = commands.add_parser(
        "evaluate",
        help=COMMANDS["evaluate"],
        description="Score one or more retrieval runs (TREC runs, or CSV/TSV tables "
        "sketch_id,image_id,score) against ground_truth.csv (or TREC qrels): tau_b with the "
        "consensus per "
        "sketch (the paper's benchmark), trec_eval's nDCG, P@k, AP and R-precision, SHREC's "
        "NN, FT, ST, E@32, DCG and precision-recall, and Zhang's average rank, PWH@k and PSR; "
        "means with bootstrap intervals, paired tests between the systems, and with --ratings "
        "the human ceiling. Writes per_sketch.csv, summary.csv, comparisons.csv, pr_curve.csv, "
        "per_sketch_trec/ (trec_eval -q files), evaluation.json, report.html and figures/ to "
        "--out.",
    )
    _evaluate_inputs(parser)
    _evaluate_measures(parser)
    _evaluate_comparisons(parser)
    parser.add_argument("--no-figures", action="store_true", help="skip figures/")
    add_figure_formats(parser)
    add_overwrite(parser)
    parser.set_defaults(handler=evaluate)


def _evaluate_inputs(parser: Parser) -> None:
    parser.add_argument("runs", type=Path, nargs="+", metavar="RUN", help="retrieval run files")
    parser.add_argument(
        "--ground-truth",
        type=Path,
        required=True,
        help="ground_truth.csv as sbir-study analyze writes it, or TREC qrels "
        "(sketch_id 0 image_id grade, graded or binary)",
    )
    parser.add_argument("--out", type=Path, required=True, help="folder for the results")
    parser.add_argument(
        "--ratings",
        type=Path,
        default=None,
        help="the ratings the ground truth came from (BIDS dataset or table): adds the human "
        "ceiling (each participant against the others' consensus), pwh@k and psr (default: "
        "none, no human ceiling)",
    )
    parser.add_argument(
        "--name",
        action="append",
        default=None,
        metavar="NAME",
        help="a system's name, once per run in order (default: each file's name without its "
        "extension)",
    )
    parser.add_argument(
        "--lower-is-better",
        action="store_true",
        help="the runs' scores are distances: smaller means more similar",
    )


def _evaluate_measures(parser: Parser) -> None:
    parser.add_argument(
        "--relevant-below",
        type=_rating_threshold,
        default=None,
        help="binary relevance for P@k, AP, R-precision and SHREC's measures: a mean rating "
        "below this, in the paper's orientation (default: the middle of the ground truth's "
        "scale, 3.5 on 1-7, 2.5 on 1-5); written to --out as ground_truth_binary.qrels",
    )
    add_scale(
        parser,
        "the ground truth's rating scale",
        ", and that of a flat --ratings table; needed only where neither the ratings nor the "
        "summary.json of the analyze that wrote the ground truth record it, and refused if it "
        "differs from them (default: the recorded one, else 1-7 with 1 the best match)",
    )
    parser.add_argument(
        "--score-precision",
        choices=("float32", "float64"),
        default="float32",
        help="how scores are compared when a run is put in order: float32 as trec_eval 9 and "
        "pytrec_eval read them (default), float64 as trec_eval 10",
    )
    parser.add_argument(
        "--cutoffs",
        type=whole_numbers(1, "cut-offs"),
        default=(5, 10, 20),
        help="k of ndcg@k, p@k and pwh@k (default: 5,10,20)",
    )


def _evaluate_comparisons(parser: Parser) -> None:
    add_alternative(parser)
    add_alpha(parser, "significance level of the comparisons")
    parser.add_argument(
        "--bootstrap",
        type=at_least(100),
        default=10_000,
        help="bootstrap resamples of the intervals (default: 10000)",
    )
    parser.add_argument(
        "--permutations",
        type=at_least(100),
        default=10_000,
        help="sign flips of the paired permutation tests (default: 10000)",
    )
    parser.add_argument(
        "--missing",
        choices=("zero", "skip"),
        default="zero",
        help="a ground-truth sketch a run leaves out (or for which it returns no judged "
        "image): zero scores it 0 on every measure, as trec_eval -c and benchmark tables do "
        "(default); skip leaves it out of that run's means, which favours a system that "
        "abstains on hard sketches",
    )
    parser.add_argument(
        "--correct",
        choices=("pairs", "across-measures"),
        default="pairs",
        help="Holm's family of the comparisons: the pairs of systems of each measure "
        "(default), or every pair x measure",
    )
    parser.add_argument(
        "--baseline",
        default=None,
        metavar="NAME",
        help="compare every system with this one only (a system name; default: none, every "
        "pair of systems)",
    )
    add_seed(parser)


def _register_hpatches(commands: Subcommands) -> None:
    parser = commands.add_parser(
        "evaluate-hpatches",
        help=COMMANDS["evaluate-hpatches"],
        description="Score HPatches retrieval results: for every NAME.results in RESULTS_DIR "
        "(or in each of its subfolders, one per descriptor) against NAME.benchmark and "
        "NAME.labels in BENCHMARK_DIR, the average precision of each query over ranks 2 to "
        "top + 1, for patch retrieval and for the relaxed image (sequence) criterion, and the "
        "mAP per task.",
    )
    parser.add_argument("benchmark_dir", type=Path, help="folder of *.benchmark and *.labels")
    parser.add_argument("results_dir", type=Path, help="folder of *.results (or of folders)")
    parser.add_argument(
        "--top",
        type=positive_int,
        default=50,
        help="patches listed after the query on each results line (default 50)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="folder for hpatches_per_query.csv and hpatches_summary.csv (default: none, "
        "the mAP is only printed)",
    )
    add_overwrite(parser, "tables")
    parser.set_defaults(handler=evaluate_hpatches)


def _register_baseline(commands: Subcommands) -> None:
    from sbir_study.analysis.retrieval.distances import DISTANCES

    parser = commands.add_parser(
        "baseline",
        help=COMMANDS["baseline"],
        description="A baseline engine: edge-orientation histograms on a 4 x 4 grid (see "
        "docs/evaluation.md), compared under the chosen distance; writes a TREC run "
        "(score = -distance). With several distances (comma-separated, or 'all'), --out is a "
        f"folder with one NAME.run per distance. Distances: {', '.join(DISTANCES)}, or l<p> "
        "for any Minkowski exponent p > 0 (l3, l0.25).",
    )
    parser.add_argument("--stimuli", type=Path, required=True, help="stimulus set folder")
    parser.add_argument(
        "--distance", required=True, help="a distance name, comma-separated names, or all"
    )
    parser.add_argument("--out", type=Path, required=True, help="run file (or folder)")
    parser.add_argument(
        "--collection",
        choices=("own", "all"),
        default="own",
        help="own: each sketch ranks its own images (the benchmark's protocol); all: every "
        "image of the set (default: own)",
    )
    add_overwrite(parser, "runs")
    parser.set_defaults(handler=baseline)


def evaluate(args: argparse.Namespace) -> int:
    from sbir_study.analysis.retrieval.evaluation import EvaluationOptions
    from sbir_study.analysis.retrieval.evaluation_inputs import evaluate_files
    from sbir_study.analysis.retrieval.evaluation_outputs import format_evaluation, write_evaluation
    from sbir_study.foundation.outputs import check_target
    from sbir_study.foundation.scale import Scale

    options = options_from(EvaluationOptions, args)
    scale = Scale.parse(args.scale) if args.scale is not None else None
    inputs = [args.ground_truth, *args.runs, *([args.ratings] if args.ratings else [])]
    check_target(args.out, "evaluate", overwrite=args.overwrite, inputs=inputs)
    with step(f"scoring {len(args.runs)} run(s)"):
        evaluation = evaluate_files(
            args.ground_truth,
            args.runs,
            options,
            names=args.name,
            ratings=args.ratings,
            lower_is_better=args.lower_is_better,
            score_precision=args.score_precision,
            scale=scale,
        )
    with step("writing tables, figures and report"):
        write_evaluation(
            evaluation,
            args.out,
            figures=not args.no_figures,
            figure_formats=args.figure_formats,
            overwrite=args.overwrite,
        )
    print(format_evaluation(evaluation, args.out))
    return 0


def evaluate_hpatches(args: argparse.Namespace) -> int:
    from sbir_study.analysis.retrieval.hpatches import (
        evaluate_hpatches,
        format_hpatches,
        write_hpatches,
    )
    from sbir_study.foundation.outputs import check_target

    inputs = [args.benchmark_dir, args.results_dir]
    if args.out is not None:
        check_target(args.out, "evaluate-hpatches", overwrite=args.overwrite, inputs=inputs)
    elif args.overwrite:
        raise InputError("--overwrite: there is no --out to overwrite; drop --overwrite")
    with step("scoring HPatches results"):
        per_query, summary = evaluate_hpatches(args.benchmark_dir, args.results_dir, top=args.top)
    if args.out is not None:
        write_hpatches(per_query, summary, args.out, overwrite=args.overwrite, inputs=inputs)
    print(format_hpatches(summary, args.top))
    if args.out is not None:
        print(f"Tables: {args.out / 'hpatches_summary.csv'}, hpatches_per_query.csv")
    return 0


def baseline(args: argparse.Namespace) -> int:
    from sbir_study.analysis.retrieval.baseline import parse_distances, write_baseline_runs
    from sbir_study.foundation.outputs import check_target
    from sbir_study.stimuli import load_set

    distances = parse_distances(args.distance)
    single = len(distances) == 1 and not args.out.is_dir()
    check_target(
        args.out, "baseline", folder=not single, overwrite=args.overwrite, inputs=[args.stimuli]
    )
    with step("checking the stimulus set"):
        stimulus_set = load_set(args.stimuli)
    targets = write_baseline_runs(
        stimulus_set,
        distances,
        args.out,
        collection=args.collection,
        overwrite=args.overwrite,
        progress=counter("descriptors"),
    )
    sketches = stimulus_set.manifest.loc[
        stimulus_set.manifest["role"].isin(["main", "candidate"]), "sketch_id"
    ].nunique()
    print(
        f"Ranked {sketches} sketches' images ({args.collection} collection) under "
        f"{len(distances)} distance(s): {', '.join(str(p) for p in targets.values())}"
    )
    return 0
