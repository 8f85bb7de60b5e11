"""``sbir-study simulate``: a BIDS dataset (or one table) of simulated participants."""

from __future__ import annotations

import argparse
from pathlib import Path

from sbir_study.foundation import paper
from sbir_study.foundation.progress import step

from .common import InputError, Subcommands, add_scale, add_seed, count, positive_int

__all__ = ["COMMANDS", "register"]

#: This family's subcommands and their one-line help (what ``sbir-study --help`` lists).
COMMANDS = {
    "simulate": "write a BIDS dataset of simulated participants",
}


#: The sizes of a design without --stimuli: (option, type, the paper's value, help). Not
#: given, an option takes the paper's value; with --stimuli, the set fixes the design.
_DESIGN_OPTIONS = (
    ("--sketches", positive_int, paper.SKETCHES, "sketches (default: {})"),
    ("--images", positive_int, paper.IMAGES_PER_SKETCH, "images per sketch (default: {})"),
    (
        "--anchor-sketches",
        count,
        paper.ANCHOR_SKETCHES,
        "default: {}; with --stimuli only 0 is allowed "
        "(leave the set's anchors out, as in a pilot)",
    ),
    ("--anchor-images", positive_int, paper.ANCHOR_IMAGES, "default: {}"),
)


def register(commands: Subcommands) -> None:
    from sbir_study.analysis.simulate import (
        RaterModel,  # already loaded with sbir_study.foundation.paper
    )

    parser = commands.add_parser(
        "simulate",
        help=COMMANDS["simulate"],
        description="Simulate participants rating sketch/image pairs with the model documented "
        "in docs/simulation.md, and write a BIDS dataset (or one flat table with --flat). The "
        f"defaults are the paper's design: {paper.PARTICIPANTS} participants, "
        f"{paper.SKETCHES} sketches x {paper.IMAGES_PER_SKETCH} images, anchoring with "
        f"{paper.ANCHOR_SKETCHES} sketches x {paper.ANCHOR_IMAGES} images.",
    )
    parser.add_argument(
        "--out", type=Path, required=True, help="dataset folder (or file with --flat)"
    )
    parser.add_argument(
        "--participants",
        type=positive_int,
        default=paper.PARTICIPANTS,
        help="simulated participants",
    )
    parser.add_argument(
        "--stimuli",
        type=Path,
        default=None,
        help="a stimulus set whose pairs the participants rate (its latent similarity, when "
        "recorded, sets each pair's latent rating); replaces --sketches and --images "
        "(default: none, the paper's design without images)",
    )
    for flag, kind, paper_value, words in _DESIGN_OPTIONS:
        parser.add_argument(flag, type=kind, default=None, help=words.format(paper_value))
    add_scale(
        parser,
        "the rating scale",
        "; recorded in every sidecar. The rater model is calibrated on the paper's 1-7 and its "
        "responses are mapped onto another scale (docs/simulation.md); --anchor-images defaults "
        "to at most one per point (default: 1-7, 1 the best match)",
        default="1-7",
    )
    parser.add_argument(
        "--miss-rate",
        type=float,
        default=None,
        help=f"share of missed responses (default: the rater model's, {RaterModel().miss_rate:g})",
    )
    add_seed(parser)
    parser.add_argument(
        "--flat",
        action="store_true",
        help="write one ratings table (--out ending in .csv or .tsv) and its .json sidecar "
        "instead of a BIDS dataset",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a dataset (or table) that an earlier simulate wrote at --out; never a "
        "recorded one, nor a file simulate did not write",
    )
    parser.set_defaults(handler=simulate)


def simulate(args: argparse.Namespace) -> int:
    from sbir_study.analysis.simulate import (
        RaterModel,
        StudyDesign,
        sidecar_name,
        write_simulated_dataset,
    )
    from sbir_study.foundation.outputs import check_target
    from sbir_study.foundation.provenance import toolkit_version
    from sbir_study.foundation.scale import Scale

    if args.flat and args.out.suffix.lower() not in (".csv", ".tsv"):
        raise InputError(
            f"--out: {args.out}: expected a table name ending in .csv or .tsv with --flat"
        )
    inputs = [args.stimuli] if args.stimuli is not None else []
    companions = [sidecar_name(args.out)] if args.flat else []
    check_target(
        args.out,
        "simulate",
        folder=not args.flat,
        companions=companions,
        overwrite=args.overwrite,
        inputs=inputs,
    )
    scale = Scale.parse(args.scale)
    if args.miss_rate is not None and not 0.0 <= args.miss_rate < 1.0:
        raise InputError(f"--miss-rate: expected a share from 0 to below 1, got {args.miss_rate}")
    stimuli, digest = None, None
    if args.stimuli is not None:
        design, stimuli, digest = _set_design(args)
    else:
        size = _design_sizes(args)
        design = StudyDesign(
            participants=args.participants,
            sketches=size["--sketches"],
            images_per_sketch=size["--images"],
            anchor_sketches=size["--anchor-sketches"],
            anchor_images=args.anchor_images or min(size["--anchor-images"], scale.k),
        )
    model = RaterModel() if args.miss_rate is None else RaterModel(miss_rate=args.miss_rate)
    with step(f"simulating {design.participants} participants"):
        path = write_simulated_dataset(
            args.out,
            design,
            model,
            args.seed,
            flat=args.flat,
            version=toolkit_version(),
            stimuli=stimuli,
            stimulus_digest=digest,
            overwrite=args.overwrite,
            scale=scale,
        )
    kind = "ratings table" if args.flat else "BIDS dataset"
    on = f" on {args.stimuli} (set digest {digest[:12]}...)" if digest else ""
    print(
        f"Simulated {design.participants} participants x {design.sketches} sketches x "
        f"{design.images_per_sketch} images{on} (seed {args.seed}"
        + ("" if str(scale) == "1-7" else f", scale {scale}")
        + f"); {kind} written to {path}"
    )
    return 0


def _design_sizes(args: argparse.Namespace) -> dict[str, int]:
    """Each option of :data:`_DESIGN_OPTIONS` as given, else the paper's value."""
    sizes = {}
    for flag, _, paper_value, _ in _DESIGN_OPTIONS:
        given = getattr(args, flag.removeprefix("--").replace("-", "_"))
        sizes[flag] = paper_value if given is None else given
    return sizes


def _set_design(args: argparse.Namespace):
    """The design of a simulation on a stimulus set: sizes from the set, not from flags."""
    from sbir_study.analysis.simulate import design_for_set
    from sbir_study.stimuli import load_set

    for flag, value in (
        ("--sketches", args.sketches),
        ("--images", args.images),
        ("--anchor-images", args.anchor_images),
    ):
        if value is not None:
            raise InputError(f"{flag}: the stimulus set fixes the design; drop {flag}")
    if args.anchor_sketches not in (None, 0):
        raise InputError("--anchor-sketches: with --stimuli only 0 is allowed (no anchoring)")
    stimulus_set = load_set(args.stimuli)
    manifest = stimulus_set.manifest
    if args.anchor_sketches == 0:
        manifest = manifest[manifest["role"] != "anchor"]
    return design_for_set(manifest, args.participants), manifest, stimulus_set.digest
