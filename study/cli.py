"""The ``sbir-study`` command line.

Exit status: 0 on success, 2 on bad input (one line on stderr naming the file,
line, field or option), 1 on an internal error (with a traceback to report).
Each subcommand imports what it needs when it runs, so ``--help`` and the
analysis never pay for PsychoPy.
"""

from __future__ import annotations

import argparse
import sys
import traceback
import warnings
from pathlib import Path

from analysis.checks import InputError
from analysis.provenance import toolkit_version

PROG = "sbir-study"


def _at_least(minimum: int):
    """An argparse type: a whole number of at least ``minimum``."""

    def whole_number(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected a whole number >= {minimum}, got {value}")
        return value

    return whole_number


_positive_int = _at_least(1)
_count = _at_least(0)
_count_min2 = _at_least(2)


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Run, simulate and analyse sketch/image rating studies (Eitz et al. 2011).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {toolkit_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="SUBCOMMAND")

    analyze = commands.add_parser(
        "analyze",
        help="statistics, ground truth and report from a BIDS dataset or a ratings table",
        description="Read a BIDS dataset (every sub-*/beh/*_beh.tsv) or a flat CSV/TSV ratings "
        "table and write the statistics tables, the consensus ground truth and summary.json "
        "to --out.",
    )
    analyze.add_argument("input", type=Path, help="BIDS dataset folder or ratings table")
    analyze.add_argument("--out", type=Path, required=True, help="folder for the results")
    analyze.add_argument(
        "--alternative",
        choices=("greater", "two-sided", "less"),
        default="greater",
        help="alternative hypothesis of the tau_b tests (default: greater, as in the paper: "
        "P(tau >= observed))",
    )
    analyze.add_argument(
        "--alpha", type=_probability, default=0.05, help="significance level (default: 0.05)"
    )
    analyze.add_argument(
        "--pairwise",
        choices=("auto", "full", "summary"),
        default="auto",
        help="inter-user table: every pair of participants (full) or per-sketch summaries; "
        "auto gives the full table up to 500 raters per sketch (default: auto)",
    )
    analyze.add_argument(
        "--no-figures",
        action="store_true",
        help="skip Figs. 4-9 (tables, summary.json and report.html are still written)",
    )
    analyze.add_argument(
        "--pilot",
        type=Path,
        default=None,
        help="ratings of a pilot study (BIDS folder or table), drawn beside the final "
        "study in fig7_distribution",
    )
    analyze.add_argument(
        "--stimuli",
        type=Path,
        default=None,
        help="stimulus set folder (with manifest.csv): adds thumbnails of the best and worst "
        "agreed sketches (fig9_extremes)",
    )
    analyze.set_defaults(handler=_analyze)

    simulate = commands.add_parser(
        "simulate",
        help="write a BIDS dataset of simulated participants",
        description="Simulate participants rating sketch/image pairs with the model documented "
        "in analysis.simulate, and write a BIDS dataset (or one flat table with --flat). The "
        "defaults are the paper's design: 28 participants, 31 sketches x 40 images, anchoring "
        "with 3 sketches x 7 images.",
    )
    simulate.add_argument(
        "--out", type=Path, required=True, help="dataset folder (or file with --flat)"
    )
    simulate.add_argument("--participants", type=_positive_int, default=28)
    simulate.add_argument(
        "--stimuli",
        type=Path,
        default=None,
        help="a stimulus set whose pairs the participants rate (its latent similarity, when "
        "recorded, sets each pair's latent rating); replaces --sketches and --images",
    )
    simulate.add_argument("--sketches", type=_positive_int, default=None, help="default: 31")
    simulate.add_argument(
        "--images", type=_positive_int, default=None, help="images per sketch (default: 40)"
    )
    simulate.add_argument(
        "--anchor-sketches",
        type=_count,
        default=None,
        help="default: 3; with --stimuli only 0 is allowed (leave the set's anchors out, as "
        "in a pilot)",
    )
    simulate.add_argument("--anchor-images", type=_positive_int, default=None, help="default: 7")
    simulate.add_argument("--miss-rate", type=float, default=None, help="share of missed responses")
    simulate.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    simulate.add_argument(
        "--flat", action="store_true", help="write one CSV/TSV ratings table instead of BIDS"
    )
    simulate.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing simulated dataset at --out (never a recorded one)",
    )
    simulate.set_defaults(handler=_simulate)

    power = commands.add_parser(
        "power",
        help="how many participants a replication needs, by simulation",
        description="Simulate studies with each number of participants (the rater model of "
        "analysis.simulate, the paper's design) and report the share of sketches with "
        "Kendall's W significant, tau_b between the consensus of that many participants and "
        "that of a large reference panel, and the share of significant inter-user "
        "correlations with its 95%% range. Writes power.csv, power_runs.csv and "
        "power.png/.pdf to --out.",
    )
    power.add_argument("--out", type=Path, required=True, help="folder for the results")
    power.add_argument(
        "--participants",
        type=_count_list,
        default=(5, 10, 15, 20, 28, 40),
        help="comma-separated participant counts (default: 5,10,15,20,28,40)",
    )
    power.add_argument("--replications", type=_positive_int, default=100)
    power.add_argument(
        "--reference", type=_positive_int, default=100, help="raters in the reference panel"
    )
    power.add_argument("--sketches", type=_positive_int, default=31)
    power.add_argument("--images", type=_positive_int, default=40, help="images per sketch")
    power.add_argument("--alpha", type=_probability, default=0.05)
    power.add_argument("--seed", type=int, default=0)
    power.add_argument("--jobs", type=_positive_int, default=1, help="worker processes")
    power.set_defaults(handler=_power)
    _add_stimuli(commands)
    _add_evaluate(commands)

    run = commands.add_parser(
        "run",
        help="run a rating session in a PsychoPy window",
        description="Run one participant's rating session (the paper's Sec. 2.3) in a PsychoPy "
        "window and record it as BIDS under --data: every trial is on disk as soon as its "
        "response window closes. An existing session is never overwritten; --resume continues "
        "it from the first unrecorded trial.",
    )
    run.add_argument("--protocol", type=Path, required=True, help="protocol file (.toml)")
    run.add_argument("--stimuli", type=Path, required=True, help="stimulus set folder")
    run.add_argument("--participant", required=True, help="participant label (letters, digits)")
    run.add_argument("--data", type=Path, required=True, help="BIDS dataset folder")
    run.add_argument("--resume", action="store_true", help="continue the participant's session")
    run.add_argument(
        "--simulate", action="store_true", help="a simulated participant answers (unattended)"
    )
    run.add_argument("--windowed", action="store_true", help="a window, not the full screen")
    run.add_argument(
        "--seed", type=_count, default=None,
        help="the participant's order seed (default: drawn at random and recorded)",
    )  # fmt: skip
    details = run.add_argument_group(
        "participant details",
        "those the protocol records (participants.details) and these do not give are asked on "
        "screen before the instructions; written to participants.tsv ('n/a': prefer not to say)",
    )
    details.add_argument("--age", default=None, help="whole years")
    details.add_argument("--sex", default=None, help="F, M or O (female, male, other)")
    details.add_argument("--handedness", default=None, help="R, L or A (right, left, both)")
    run.set_defaults(handler=_run)
    return parser


def _run(args: argparse.Namespace) -> int:
    from study.session import run_from_files

    outcome = run_from_files(
        args.protocol, args.stimuli, args.participant, args.data, resume=args.resume,
        simulate=args.simulate, windowed=args.windowed, seed=args.seed,
        details={"age": args.age, "sex": args.sex, "handedness": args.handedness},
        progress=lambda line: print(line, flush=True),
    )  # fmt: skip
    refresh = f"{outcome.refresh_hz:.1f} Hz" if outcome.refresh_hz else "unmeasurable"
    print(
        f"Session {outcome.status}: {outcome.recorded} of {outcome.planned} trials recorded in "
        f"{outcome.path} (refresh {refresh}; durations timed by {outcome.timing_mode})"
    )
    return 0


def _add_stimuli(commands) -> None:
    stimuli = commands.add_parser(
        "stimuli",
        help="stimulus sets: generate, validate, import, select",
        description="Stimulus sets: a folder with the images, manifest.csv (one row per "
        "sketch/image pair) and SHA256SUMS (check it with 'sha256sum -c SHA256SUMS').",
    )
    actions = stimuli.add_subparsers(dest="action", required=True, metavar="ACTION")

    anchor_options = argparse.ArgumentParser(add_help=False)
    anchor_options.add_argument(
        "--anchor-sketches",
        type=_count,
        default=3,
        help="anchor sketches a whole anchor block has; 0 for a study without anchoring "
        "(default: 3, as in the paper)",
    )
    anchor_options.add_argument(
        "--anchor-images",
        type=_positive_int,
        default=7,
        help="images per anchor sketch, with prescribed ratings spread over 1..7 (default: 7)",
    )

    validate = actions.add_parser(
        "validate",
        parents=[anchor_options],
        help="check a set: files, checksums, paths, pairs, anchor block",
        description="Check a stimulus set. Exit 0 with a one-line summary and the set digest "
        "for a good set; exit 2 with one line per problem otherwise.",
    )
    validate.add_argument("folder", type=Path, help="the set folder")
    validate.add_argument(
        "--no-open", action="store_true", help="do not open the images (checksums only)"
    )
    validate.set_defaults(handler=_stimuli_validate)

    generate = actions.add_parser(
        "generate",
        help="draw a procedural set with known similarity (no download needed)",
        description="Draw a stimulus set: line-drawing sketches and colour images derived from "
        "them with changes that grow as the recorded latent similarity falls. The defaults are "
        "the paper's design: 31 sketches x 40 images and 3 anchor sketches x 7 images rated "
        "1..7. The same seed gives the same bytes.",
    )
    generate.add_argument("--out", type=Path, required=True, help="new folder for the set")
    generate.add_argument("--sketches", type=_positive_int, default=31)
    generate.add_argument("--images", type=_count_min2, default=40, help="images per sketch")
    generate.add_argument("--anchor-sketches", type=_count, default=3)
    generate.add_argument("--anchor-images", type=_count_min2, default=7)
    generate.add_argument("--width", type=_positive_int, default=320, help="pixels (default 320)")
    generate.add_argument("--height", type=_positive_int, default=240, help="pixels (default 240)")
    generate.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    generate.add_argument(
        "--pool",
        action="store_true",
        help="a candidate pool for a pilot (role candidate, mostly poor matches) instead of "
        "a study set; 'stimuli select' chooses the study's pairs from it",
    )
    generate.set_defaults(handler=_stimuli_generate)

    import_ = actions.add_parser(
        "import",
        parents=[anchor_options],
        help="write manifest.csv and SHA256SUMS for a folder of your own images",
        description="Make a set of your own images without moving them: SET/sketches/"
        "<sketch_id>.<ext>, SET/images/<sketch_id>/<image_id>.<ext> and, optionally, "
        "SET/anchors.csv (sketch_id, image_id, anchor_rating). Writes SET/manifest.csv and "
        "SET/SHA256SUMS, then validates the set.",
    )
    import_.add_argument("folder", type=Path, help="the set folder")
    import_.add_argument(
        "--role",
        choices=("main", "candidate"),
        default="main",
        help="role of the pairs that are not anchors: main (a study set) or candidate (a "
        "pilot pool) (default: main)",
    )
    import_.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the manifest and checksums of an earlier import",
    )
    import_.set_defaults(handler=_stimuli_import)

    select = actions.add_parser(
        "select",
        parents=[anchor_options],
        help="choose the study's pairs from pilot ratings over a candidate pool (Sec. 2.2)",
        description="Keep the K sketches whose pilot ratings are closest to uniform and, for "
        "each, N images sub-sampled towards a uniform distribution of ratings (stratified by "
        "the pilot median; see the stimuli.select module). Writes the selected set (the same "
        "files, a new manifest) with selection_sketches.csv, selection_distribution.csv and "
        "selection.json to --out.",
    )
    select.add_argument("pool", type=Path, help="the candidate pool (a set with role candidate)")
    select.add_argument("pilot", type=Path, help="pilot ratings: BIDS dataset or ratings table")
    select.add_argument("--out", type=Path, required=True, help="new folder for the selected set")
    select.add_argument("--sketches", type=_positive_int, default=31, help="K (default: 31)")
    select.add_argument("--images", type=_positive_int, default=40, help="N (default: 40)")
    select.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    select.set_defaults(handler=_stimuli_select)


def _anchor_design(args: argparse.Namespace):
    from stimuli import AnchorDesign

    return AnchorDesign(sketches=args.anchor_sketches, images=args.anchor_images)


def _stimuli_validate(args: argparse.Namespace) -> int:
    from stimuli import validate_set

    report = validate_set(args.folder, _anchor_design(args), check_images=not args.no_open)
    if not report.ok:
        for problem in report.problems:
            print(f"{PROG}: error: {problem}", file=sys.stderr)
        return 2
    print(report.summary())
    return 0


def _stimuli_generate(args: argparse.Namespace) -> int:
    from stimuli import SetDesign, generate_set, validate_set

    design = SetDesign(
        sketches=args.sketches,
        images_per_sketch=args.images,
        anchor_sketches=args.anchor_sketches,
        anchor_images=args.anchor_images,
        width=args.width,
        height=args.height,
        role="candidate" if args.pool else "main",
    )
    folder = generate_set(args.out, design, args.seed, progress=sys.stderr.isatty(),
                          version=toolkit_version())  # fmt: skip
    from stimuli import AnchorDesign

    report = validate_set(folder, AnchorDesign(args.anchor_sketches, args.anchor_images))
    if not report.ok:
        raise RuntimeError(f"the generated set does not validate: {report.problems[0]}")
    print(f"Generated (seed {args.seed}) {report.summary()}")
    return 0


def _stimuli_import(args: argparse.Namespace) -> int:
    from stimuli import import_set, validate_set

    manifest = import_set(args.folder, role=args.role, overwrite=args.overwrite)
    report = validate_set(args.folder, _anchor_design(args))
    if not report.ok:
        for problem in report.problems:
            print(f"{PROG}: error: {problem}", file=sys.stderr)
        print(f"{PROG}: {manifest} was written, but the set does not validate", file=sys.stderr)
        return 2
    print(f"Imported {report.summary()}")
    return 0


def _stimuli_select(args: argparse.Namespace) -> int:
    from analysis import load_ratings
    from stimuli import distance_to_uniform, write_selection

    ratings = load_ratings(args.pilot)
    selection = write_selection(args.pool, ratings, args.out, sketches=args.sketches,
                                images_per_sketch=args.images, seed=args.seed,
                                anchors=_anchor_design(args))  # fmt: skip
    table = selection.distribution.pivot(index="rating", columns="dataset", values="share")
    dropped = int((~selection.sketches["selected"]).sum())
    print(
        f"Selected {args.sketches} sketches x {args.images} images (dropped {dropped} "
        f"sketches with the largest sigma; seed {args.seed}) into {args.out}"
    )
    print(
        "Distance to the uniform distribution (total variation): pool "
        f"{distance_to_uniform(table['pool']):.3f}, selection "
        f"{distance_to_uniform(table['selection']):.3f}"
    )
    print(f"Tables: {args.out / 'selection_sketches.csv'}, "
          f"{args.out / 'selection_distribution.csv'}")  # fmt: skip
    return 0


def _cutoff_list(text: str) -> tuple[int, ...]:
    try:
        cutoffs = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated whole numbers, got {text!r}"
        ) from None
    if not cutoffs or min(cutoffs) < 1:
        raise argparse.ArgumentTypeError(f"expected cut-offs of at least 1, got {text!r}")
    return tuple(dict.fromkeys(cutoffs))


def _rating_threshold(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 1.0 < value <= 7.0:
        raise argparse.ArgumentTypeError(
            f"expected a mean rating above 1 and at most 7, got {value}"
        )
    return value


def _add_evaluate(commands) -> None:
    evaluate = commands.add_parser(
        "evaluate",
        help="score retrieval runs against the consensus ground truth",
        description="Score one or more retrieval runs (TREC runs, or CSV/TSV tables "
        "sketch_id,image_id,score) against ground_truth.csv: tau_b with the consensus per "
        "sketch (the paper's benchmark), trec_eval's nDCG, P@k, AP and R-precision, SHREC's "
        "NN, FT, ST, E@32, DCG and precision-recall, and Zhang's average rank, PWH@k and PSR; "
        "means with bootstrap intervals, paired tests between the systems, and with --ratings "
        "the human ceiling. Writes per_sketch.csv, summary.csv, comparisons.csv, pr_curve.csv, "
        "evaluation.json, report.html and figures/ to --out.",
    )
    evaluate.add_argument("runs", type=Path, nargs="+", metavar="RUN", help="retrieval run files")
    evaluate.add_argument(
        "--ground-truth",
        type=Path,
        required=True,
        help="ground_truth.csv as sbir-study analyze writes it",
    )
    evaluate.add_argument("--out", type=Path, required=True, help="folder for the results")
    evaluate.add_argument(
        "--ratings",
        type=Path,
        default=None,
        help="the ratings the ground truth came from (BIDS dataset or table): adds the human "
        "ceiling (each participant against the others' consensus), pwh@k and psr",
    )
    evaluate.add_argument(
        "--name",
        action="append",
        default=None,
        metavar="NAME",
        help="a system's name, once per run in order (default: each file's name without its "
        "extension)",
    )
    evaluate.add_argument(
        "--lower-is-better",
        action="store_true",
        help="the runs' scores are distances: smaller means more similar",
    )
    evaluate.add_argument(
        "--relevant-below",
        type=_rating_threshold,
        default=3.5,
        help="binary relevance for P@k, AP, R-precision and SHREC's measures: a mean rating "
        "below this (default: 3.5)",
    )
    evaluate.add_argument(
        "--cutoffs",
        type=_cutoff_list,
        default=(5, 10, 20),
        help="k of ndcg@k, p@k and pwh@k (default: 5,10,20)",
    )
    evaluate.add_argument(
        "--alternative",
        choices=("greater", "two-sided", "less"),
        default="greater",
        help="alternative of the tau_b test (default: greater, as the paper)",
    )
    evaluate.add_argument(
        "--alpha",
        type=_probability,
        default=0.05,
        help="significance level of the comparisons (default: 0.05)",
    )
    evaluate.add_argument(
        "--bootstrap",
        type=_at_least(100),
        default=10_000,
        help="bootstrap resamples of the intervals (default: 10000)",
    )
    evaluate.add_argument(
        "--permutations",
        type=_at_least(100),
        default=10_000,
        help="sign flips of the paired permutation tests (default: 10000)",
    )
    evaluate.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    evaluate.add_argument("--no-figures", action="store_true", help="skip figures/")
    evaluate.set_defaults(handler=_evaluate)

    hpatches = commands.add_parser(
        "evaluate-hpatches",
        help="mAP of patch and image retrieval in the HPatches file formats",
        description="Score HPatches retrieval results: for every NAME.results in RESULTS_DIR "
        "(or in each of its subfolders, one per descriptor) against NAME.benchmark and "
        "NAME.labels in BENCHMARK_DIR, the average precision of each query over ranks 2 to "
        "top + 1, for patch retrieval and for the relaxed image (sequence) criterion, and the "
        "mAP per task.",
    )
    hpatches.add_argument("benchmark_dir", type=Path, help="folder of *.benchmark and *.labels")
    hpatches.add_argument("results_dir", type=Path, help="folder of *.results (or of folders)")
    hpatches.add_argument(
        "--top",
        type=_positive_int,
        default=50,
        help="patches listed after the query on each results line (default 50)",
    )
    hpatches.add_argument(
        "--out",
        type=Path,
        default=None,
        help="folder for hpatches_per_query.csv and hpatches_summary.csv",
    )
    hpatches.set_defaults(handler=_evaluate_hpatches)

    from analysis.distances import DISTANCES

    baseline = commands.add_parser(
        "baseline",
        help="rank a stimulus set's images with a simple descriptor under a distance",
        description="A baseline engine: edge-orientation histograms on a 4 x 4 grid (see "
        "analysis.baseline), compared under the chosen distance; writes a TREC run (score = "
        "-distance). With several distances (comma-separated, or 'all'), --out is a folder "
        f"with one NAME.run per distance. Distances: {', '.join(DISTANCES)}, or l<p> for any "
        "Minkowski exponent p > 0 (l3, l0.25).",
    )
    baseline.add_argument("--stimuli", type=Path, required=True, help="stimulus set folder")
    baseline.add_argument(
        "--distance", required=True, help="a distance name, comma-separated names, or all"
    )
    baseline.add_argument("--out", type=Path, required=True, help="run file (or folder)")
    baseline.add_argument(
        "--collection",
        choices=("own", "all"),
        default="own",
        help="own: each sketch ranks its own images (the benchmark's protocol); all: every "
        "image of the set (default: own)",
    )
    baseline.add_argument("--overwrite", action="store_true", help="replace existing run files")
    baseline.set_defaults(handler=_baseline)


def _evaluate(args: argparse.Namespace) -> int:
    from analysis import load_ratings
    from analysis.evaluation import HUMAN, EvaluationOptions, evaluate_rankings, write_evaluation
    from analysis.retrieval import load_ground_truth, load_run

    if args.name is not None and len(args.name) != len(args.runs):
        raise InputError(
            f"--name: given {len(args.name)} times for {len(args.runs)} runs; expected one name "
            "per run, in order"
        )
    options = EvaluationOptions(
        relevant_below=args.relevant_below,
        cutoffs=args.cutoffs,
        alternative=args.alternative,
        alpha=args.alpha,
        bootstrap=args.bootstrap,
        permutations=args.permutations,
        seed=args.seed,
    )
    truth = load_ground_truth(args.ground_truth)
    names = args.name or [None] * len(args.runs)
    rankings = [
        load_run(path, truth, lower_is_better=args.lower_is_better, name=name)
        for path, name in zip(args.runs, names, strict=True)
    ]
    ratings = load_ratings(args.ratings) if args.ratings is not None else None
    evaluation = evaluate_rankings(truth, rankings, options, ratings=ratings)
    files = [
        {
            "role": "ground truth",
            "name": "",
            "path": str(args.ground_truth),
            "sha256": truth.sha256,
            "lines": truth.lines,
        }
    ]
    files += [
        {"role": "run", "name": r.name, "path": r.source, "sha256": r.sha256, "lines": r.lines}
        for r in rankings
    ]
    if ratings is not None:
        provenance = ratings.attrs.get("provenance")
        for source in getattr(provenance, "sources", ()):
            files.append(
                {
                    "role": "ratings",
                    "name": "",
                    "path": source.path,
                    "sha256": source.sha256,
                    "lines": source.rows,
                }
            )
    evaluation.inputs = {
        "files": files,
        "lower_is_better": args.lower_is_better,
        "command": "sbir-study evaluate",
    }
    result = write_evaluation(evaluation, args.out, figures=not args.no_figures)
    summary = evaluation.summary.set_index(["system", "metric"])
    print(
        f"Scored {len(rankings)} system(s) on {result['n_sketches']} sketches "
        f"(relevant: mean rating below {args.relevant_below:g}):"
    )
    order = summary.xs("tau_b", level="metric")["mean"].sort_values(ascending=False).index
    for system in order:
        row = summary.loc[(system, "tau_b")]
        text = f"  {system:<24} tau_b {row['mean']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"
        if system != HUMAN:
            if (system, "tau_b_human_fraction") in summary.index:
                fraction = summary.loc[(system, "tau_b_human_fraction"), "mean"]
                text += f"  {fraction:.0%} of human"
            text += (
                f"  ndcg {summary.loc[(system, 'ndcg'), 'mean']:.3f}"
                f"  ap {summary.loc[(system, 'ap'), 'mean']:.3f}"
            )
        else:
            text += "  (participants, each against the others' consensus)"
        print(text)
    significant = evaluation.comparisons[
        (evaluation.comparisons["metric"] == "tau_b") & evaluation.comparisons["significant"]
    ]
    pairs = len(evaluation.comparisons[evaluation.comparisons["metric"] == "tau_b"])
    print(
        f"  {len(significant)} of {pairs} pairs of systems differ significantly in tau_b "
        f"(paired permutation test, Holm, alpha {args.alpha:g})"
    )
    print(
        f"Tables: {args.out / 'summary.csv'}, per_sketch.csv, comparisons.csv; "
        f"report: {args.out / 'report.html'}"
    )
    return 0


def _evaluate_hpatches(args: argparse.Namespace) -> int:
    from analysis.hpatches import evaluate_hpatches

    per_query, summary = evaluate_hpatches(args.benchmark_dir, args.results_dir, top=args.top)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        per_query.to_csv(args.out / "hpatches_per_query.csv", index=False)
        summary.to_csv(args.out / "hpatches_summary.csv", index=False)
    shown = summary.copy()
    shown[["map_patch", "map_image"]] = (100 * shown[["map_patch", "map_image"]]).round(2)
    print("mAP (%) over ranks 2 to", args.top + 1, "per task:")
    print(shown.to_string(index=False))
    if args.out is not None:
        print(f"Tables: {args.out / 'hpatches_summary.csv'}, hpatches_per_query.csv")
    return 0


def _baseline(args: argparse.Namespace) -> int:
    from analysis.baseline import baseline_scores, write_trec_run
    from analysis.distances import DISTANCES
    from stimuli import load_set

    if args.distance == "all":
        distances = list(DISTANCES)
    else:
        distances = [d.strip() for d in args.distance.split(",") if d.strip()]
    from analysis.distances import resolve_distance

    for name in distances:
        try:
            resolve_distance(name)
        except InputError as error:
            raise InputError(f"--{error}") from None
    single = len(distances) == 1 and not args.out.is_dir()
    targets = (
        {distances[0]: args.out}
        if single
        else {name: args.out / f"{name}.run" for name in distances}
    )
    for path in targets.values():
        if path.exists() and not args.overwrite:
            raise InputError(f"{path}: exists; pass --overwrite to replace it")
    stimulus_set = load_set(args.stimuli)
    from analysis.progress import progress_bar

    def progress(done: int, total: int) -> None:
        progress_bar("descriptors", done, total, show=sys.stderr.isatty())

    runs = baseline_scores(
        stimulus_set.manifest,
        stimulus_set.folder,
        distances,
        collection=args.collection,
        progress=progress,
    )
    if not single:
        args.out.mkdir(parents=True, exist_ok=True)
    for name, path in targets.items():
        write_trec_run(runs[name], path, tag=f"baseline-eoh-{name}")
    sketches = runs[distances[0]]["sketch_id"].nunique()
    print(
        f"Ranked {sketches} sketches' images ({args.collection} collection) under "
        f"{len(distances)} distance(s): {', '.join(str(p) for p in targets.values())}"
    )
    return 0


def _count_list(text: str) -> tuple[int, ...]:
    try:
        counts = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated whole numbers, got {text!r}"
        ) from None
    if not counts or min(counts) < 2:
        raise argparse.ArgumentTypeError(f"expected counts of at least 2, got {text!r}")
    return counts


def _power(args: argparse.Namespace) -> int:
    from analysis.figures import write_power_figure
    from analysis.power import PowerOptions, power_analysis, summarize_power
    from analysis.simulate import StudyDesign

    options = PowerOptions(
        counts=args.participants,
        replications=args.replications,
        reference=args.reference,
        alpha=args.alpha,
        seed=args.seed,
        design=StudyDesign(sketches=args.sketches, images_per_sketch=args.images),
    )
    args.out.mkdir(parents=True, exist_ok=True)
    runs = power_analysis(options, jobs=args.jobs, progress=sys.stderr.isatty())
    summary = summarize_power(runs)
    runs.to_csv(args.out / "power_runs.csv", index=False)
    summary.to_csv(args.out / "power.csv", index=False)
    write_power_figure(summary, args.out / "power")
    print(
        f"{args.replications} replications per count, reference panel of {args.reference}, "
        f"seed {args.seed}:"
    )
    shown = ["participants", "w_significant_share", "tau_median", "tau_p05", "interuser_share",
             "interuser_range_width"]  # fmt: skip
    print(summary[shown].round(3).to_string(index=False))
    print(f"Table: {args.out / 'power.csv'}; figure: {args.out / 'power.png'}")
    return 0


def _analyze(args: argparse.Namespace) -> int:
    from analysis import AnalysisOptions, analyze_ratings, load_ratings

    options = AnalysisOptions(
        alternative=args.alternative, alpha=args.alpha, pairwise=args.pairwise
    )
    ratings = load_ratings(args.input)
    pilot = load_ratings(args.pilot) if args.pilot is not None else None
    sketch_images = None
    if args.stimuli is not None:
        from stimuli.manifest import sketch_image_paths

        sketch_images = sketch_image_paths(args.stimuli)
    summary = analyze_ratings(
        ratings,
        args.out,
        options,
        figures=not args.no_figures,
        pilot=pilot,
        sketch_images=sketch_images,
    )
    label = " (simulated data)" if summary["simulated"] else ""
    print(
        f"Analysed {summary['n_participants']} participants, {summary['n_sketches']} sketches, "
        f"{summary['n_pairs']} pairs{label}; alternative {summary['alternative']}, "
        f"alpha {summary['alpha']}."
    )
    for family, name in (
        ("anchoring", "anchoring vs prescribed ratings"),
        ("pairwise", "inter-user"),
        ("consensus", "participant vs consensus"),
        ("consensus_loo", "participant vs consensus (leave-one-out)"),
    ):
        stats = summary[family]
        if stats["n_tests"]:
            print(
                f"  {name}: {stats['share_significant']:.1%} of {stats['n_tests']} tau_b "
                f"significant (95% CI {stats['wilson_low']:.1%}-{stats['wilson_high']:.1%})"
            )
    w = summary["kendall_w"]
    median = "n/a" if w["median"] is None else f"{w['median']:.3f}"
    print(
        f"  Kendall's W: {w['n_significant']} of {w['n_sketches']} sketches significant, "
        f"median W {median}"
    )
    print(f"Ground truth: {args.out / 'ground_truth.csv'}; tables and summary.json in {args.out}")
    if summary["figures"]:
        print(f"Figures: {args.out / 'figures'} ({', '.join(summary['figures'])})")
    print(f"Report: {args.out / 'report.html'} (open it in a browser)")
    return 0


def _simulate(args: argparse.Namespace) -> int:
    import json

    from analysis.simulate import RaterModel, StudyDesign, write_simulated_dataset

    stimuli, digest = None, None
    if args.stimuli is not None:
        design, stimuli, digest = _set_design(args)
    else:
        design = StudyDesign(
            participants=args.participants,
            sketches=args.sketches or 31,
            images_per_sketch=args.images or 40,
            anchor_sketches=3 if args.anchor_sketches is None else args.anchor_sketches,
            anchor_images=args.anchor_images or 7,
        )
    model = RaterModel() if args.miss_rate is None else RaterModel(miss_rate=args.miss_rate)
    out: Path = args.out
    if args.flat:
        if out.exists() and not args.overwrite:
            raise InputError(f"{out}: exists; choose another --out or pass --overwrite")
    elif out.exists() and any(out.iterdir()):
        if not args.overwrite:
            raise InputError(
                f"{out}: exists and is not empty; choose another --out or pass --overwrite"
            )
        if not _is_simulated_dataset(out, json):
            raise InputError(
                f"{out}: holds data that sbir-study simulate did not write; it is never "
                "overwritten, choose another --out"
            )
        import shutil

        shutil.rmtree(out)
    path = write_simulated_dataset(out, design, model, args.seed, flat=args.flat,
                                   version=toolkit_version(), stimuli=stimuli,
                                   stimulus_digest=digest)  # fmt: skip
    kind = "ratings table" if args.flat else "BIDS dataset"
    on = f" on {args.stimuli} (set digest {digest[:12]}...)" if digest else ""
    print(
        f"Simulated {design.participants} participants x {design.sketches} sketches x "
        f"{design.images_per_sketch} images{on} (seed {args.seed}); {kind} written to {path}"
    )
    return 0


def _set_design(args: argparse.Namespace):
    """The design of a simulation on a stimulus set: sizes from the set, not from flags."""
    from analysis.simulate import StudyDesign
    from stimuli import load_set

    for flag, value in (("--sketches", args.sketches), ("--images", args.images),
                        ("--anchor-images", args.anchor_images)):  # fmt: skip
        if value is not None:
            raise InputError(f"{flag}: the stimulus set fixes the design; drop {flag}")
    if args.anchor_sketches not in (None, 0):
        raise InputError("--anchor-sketches: with --stimuli only 0 (no anchoring) is allowed")
    stimulus_set = load_set(args.stimuli)
    manifest = stimulus_set.manifest
    if args.anchor_sketches == 0:
        manifest = manifest[manifest["role"] != "anchor"]
    rated = manifest[manifest["role"] != "anchor"]
    per_sketch = rated.groupby("sketch_id").size()
    anchor_rows = manifest[manifest["role"] == "anchor"]
    design = StudyDesign(
        participants=args.participants,
        sketches=int(per_sketch.size),
        images_per_sketch=max(int(per_sketch.max()), 2),
        anchor_sketches=int(anchor_rows["sketch_id"].nunique()),
        anchor_images=max(int(anchor_rows.groupby("sketch_id").size().max()), 2)
        if len(anchor_rows) else 7,
    )  # fmt: skip
    return design, manifest, stimulus_set.digest


def _is_simulated_dataset(root: Path, json) -> bool:
    try:
        description = json.loads((root / "dataset_description.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return any(
        "sbir-study simulate" in str(entry.get("Description", ""))
        for entry in description.get("GeneratedBy", [])
    )


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"{PROG}: warning: {message}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    warnings.showwarning = _show_warning
    try:
        return args.handler(args)
    except InputError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception:
        traceback.print_exc()
        print(f"{PROG}: internal error; please report it with the traceback above", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
