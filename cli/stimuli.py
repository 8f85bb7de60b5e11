"""``sbir-study stimuli``: generate, validate, import and select stimulus sets."""

from __future__ import annotations

import argparse
from pathlib import Path

from sbir_study.foundation import paper
from sbir_study.foundation.progress import step

from .common import (
    InputError,
    Subcommands,
    add_anchor_design,
    add_overwrite,
    add_scale,
    add_seed,
    between,
    error,
    options_from,
    positive_int,
)

__all__ = ["COMMANDS", "register"]

#: This family's subcommands and their one-line help (what ``sbir-study --help`` lists).
COMMANDS = {
    "stimuli": "stimulus sets: generate, validate, import, select",
}


def register(commands: Subcommands) -> None:
    parser = commands.add_parser(
        "stimuli",
        help=COMMANDS["stimuli"],
        description="Stimulus sets: a folder with the images, manifest.csv (one row per "
        "sketch/image pair) and SHA256SUMS (check it with 'sha256sum -c SHA256SUMS').",
    )
    actions = parser.add_subcommands(dest="action", required=True, metavar="ACTION")
    for action in (_register_validate, _register_generate, _register_import, _register_select):
        action(actions)


def _register_validate(actions: Subcommands) -> None:
    validate = actions.add_parser(
        "validate",
        help="check a set: files, checksums, paths, pairs, anchor block",
        description="Check a stimulus set. Exit 0 with a one-line summary and the set digest "
        "for a good set; exit 2 with one line per problem otherwise.",
    )
    validate.add_argument("folder", type=Path, help="the set folder")
    add_anchor_design(validate)
    validate.add_argument(
        "--no-open", action="store_true", help="do not open the images (checksums only)"
    )
    validate.set_defaults(handler=validate_command)


def _register_generate(actions: Subcommands) -> None:
    generate = actions.add_parser(
        "generate",
        help="draw a procedural set with known similarity (no download needed)",
        description="Draw a stimulus set: line-drawing sketches and colour images derived from "
        "them with changes that grow as the recorded latent similarity falls. The defaults are "
        f"the paper's design: {paper.SKETCHES} sketches x {paper.IMAGES_PER_SKETCH} images and "
        f"{paper.ANCHOR_SKETCHES} anchor sketches x {paper.ANCHOR_IMAGES} images rated "
        f"{paper.SCALE[0]}..{paper.SCALE[1]}. The same seed gives the same bytes.",
    )
    generate.add_argument("--out", type=Path, required=True, help="new folder for the set")
    # The bounds of sbir_study.stimuli.SetDesign, checked here so that a message names the option.
    generate.add_argument(
        "--sketches",
        type=between(1, 10_000),
        default=paper.SKETCHES,
        help="sketches of the main block",
    )
    generate.add_argument(
        "--images",
        type=between(2, 10_000),
        default=paper.IMAGES_PER_SKETCH,
        help="images per sketch",
    )
    generate.add_argument(
        "--anchor-sketches",
        type=between(0, 100),
        default=paper.ANCHOR_SKETCHES,
        help="anchor sketches; 0 for a set without anchoring",
    )
    generate.add_argument(
        "--anchor-images",
        type=between(2, 9),
        default=paper.ANCHOR_IMAGES,
        help="images per anchor sketch, prescribed ratings spread over the "
        "scale, at most one per point",
    )
    add_scale(
        generate,
        "the rating scale the anchors' prescribed ratings are spread over",
        "; that of the protocol the set will be rated under (default: 1-7)",
        default="1-7",
    )
    generate.add_argument(
        "--width", type=between(64, 4096), default=320, help="pixels (default 320)"
    )
    generate.add_argument(
        "--height", type=between(64, 4096), default=240, help="pixels (default 240)"
    )
    add_seed(generate)
    generate.add_argument(
        "--pool",
        action="store_true",
        help="a candidate pool for a pilot (role candidate, mostly poor matches) instead of "
        "a study set; 'stimuli select' chooses the study's pairs from it",
    )
    add_overwrite(generate, "set")
    generate.set_defaults(handler=generate_command)


def _register_import(actions: Subcommands) -> None:
    import_ = actions.add_parser(
        "import",
        help="write manifest.csv and SHA256SUMS for a folder of your own images",
        description="Make a set of your own images without moving them: SET/sketches/"
        "<sketch_id>.<ext>, SET/images/<sketch_id>/<image_id>.<ext> and, optionally, "
        "SET/anchors.csv (sketch_id, image_id, anchor_rating). Writes SET/manifest.csv and "
        "SET/SHA256SUMS, then validates the set.",
    )
    import_.add_argument("folder", type=Path, help="the set folder")
    add_anchor_design(import_)
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
        help="replace the manifest and checksums of an earlier import (never a manifest "
        "that stimuli import did not write)",
    )
    import_.set_defaults(handler=import_command)


def _register_select(actions: Subcommands) -> None:
    select = actions.add_parser(
        "select",
        help="choose the study's pairs from pilot ratings over a candidate pool (Sec. 2.2)",
        description="Keep the K sketches whose pilot ratings are closest to uniform and, for "
        "each, N images sub-sampled towards a uniform distribution of ratings (stratified by "
        "the pilot median; see docs/stimuli.md). Writes the selected set (the same "
        "files, a new manifest) with selection_sketches.csv, selection_distribution.csv and "
        "selection.json to --out.",
    )
    select.add_argument("pool", type=Path, help="the candidate pool (a set with role candidate)")
    select.add_argument("pilot", type=Path, help="pilot ratings: BIDS dataset or ratings table")
    add_scale(
        select,
        "the rating scale of a flat pilot table",
        "; a BIDS dataset's is the one its sidecars record (default: the recorded one, else 1-7)",
    )
    add_anchor_design(select)
    select.add_argument("--out", type=Path, required=True, help="new folder for the selected set")
    select.add_argument(
        "--sketches",
        type=positive_int,
        default=paper.SKETCHES,
        help=f"K (default: {paper.SKETCHES})",
    )
    select.add_argument(
        "--images",
        type=positive_int,
        default=paper.IMAGES_PER_SKETCH,
        help=f"N (default: {paper.IMAGES_PER_SKETCH})",
    )
    add_seed(select)
    add_overwrite(select, "selected set")
    select.set_defaults(handler=select_command)


def _anchor_design(args: argparse.Namespace):
    from sbir_study.stimuli import AnchorDesign

    return AnchorDesign(sketches=args.anchor_sketches, images=args.anchor_images)


def _report_problems(report) -> int:
    for problem in report.problems:
        error(problem)
    return 2


def validate_command(args: argparse.Namespace) -> int:
    from sbir_study.stimuli import validate_set

    with step("validating the stimulus set"):
        report = validate_set(args.folder, _anchor_design(args), check_images=not args.no_open)
    if not report.ok:
        return _report_problems(report)
    print(report.summary())
    return 0


def generate_command(args: argparse.Namespace) -> int:
    from sbir_study.foundation.provenance import toolkit_version
    from sbir_study.foundation.scale import Scale
    from sbir_study.stimuli import SetDesign, generate_set, validate_set

    scale = Scale.parse(args.scale)
    if args.anchor_sketches and args.anchor_images > scale.k:
        raise InputError(
            f"--anchor-images {args.anchor_images}: expected 2..{scale.k}, at most "
            f"one image per point of the scale {scale}"
        )
    design = options_from(
        SetDesign, args, images_per_sketch=args.images, role="candidate" if args.pool else "main"
    )
    folder = generate_set(
        args.out,
        design,
        args.seed,
        progress=None,
        version=toolkit_version(),
        overwrite=args.overwrite,
        scale=scale,
    )
    with step("validating the stimulus set"):
        report = validate_set(folder, _anchor_design(args))
    if not report.ok:
        raise RuntimeError(f"the generated set does not validate: {report.problems[0]}")
    print(f"Generated (seed {args.seed}) {report.summary()}")
    return 0


def import_command(args: argparse.Namespace) -> int:
    from sbir_study.stimuli import import_set, validate_set

    with step("importing the stimulus set"):
        import_set(
            args.folder, role=args.role, overwrite=args.overwrite, anchors=_anchor_design(args)
        )
        report = validate_set(args.folder, _anchor_design(args), check_images=False)
    print(f"Imported {report.summary()}")
    return 0


def select_command(args: argparse.Namespace) -> int:
    from sbir_study.analysis import load_ratings
    from sbir_study.foundation.outputs import check_target
    from sbir_study.foundation.scale import Scale
    from sbir_study.stimuli import distance_to_uniform, write_selection

    check_target(
        args.out, "stimuli select", overwrite=args.overwrite, inputs=[args.pool, args.pilot]
    )
    scale = Scale.parse(args.scale) if args.scale is not None else None
    ratings = load_ratings(args.pilot, scale=scale)
    with step("selecting pairs"):
        selection = write_selection(
            args.pool,
            ratings,
            args.out,
            sketches=args.sketches,
            images_per_sketch=args.images,
            seed=args.seed,
            anchors=_anchor_design(args),
            overwrite=args.overwrite,
        )
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
    print(
        f"Tables: {args.out / 'selection_sketches.csv'}, {args.out / 'selection_distribution.csv'}"
    )
    return 0
