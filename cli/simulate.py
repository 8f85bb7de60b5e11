"""``sbir-study simulate``: a BIDS dataset (or one table) of simulated participants."""

from __future__ import annotations

import argparse
from pathlib import Path

from sbir_study.foundation import paper
from sbir_study.foundation.progress import step

from .common import InputError, add_seed, count, positive_int

__all__ = ["COMMANDS", "register"]

#: This family's subcommands and their one-line help (what ``sbir-study --help`` lists).
COMMANDS = {
    "simulate": "write a BIDS dataset of simulated participants",
}


def register(commands) -> None:
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
    parser.add_argument("--participants", type=positive_int, default=paper.PARTICIPANTS,
                        help="simulated participants")  # fmt: skip
    parser.add_argument(
        "--stimuli",
        type=Path,
        default=None,
        help="a stimulus set whose pairs the participants rate (its latent similarity, when "
        "recorded, sets each pair's latent rating); replaces --sketches and --images "
        "(default: none, the paper's design without images)",
    )
    parser.add_argument("--sketches", type=positive_int, default=None,
                        help=f"sketches (default: {paper.SKETCHES})")  # fmt: skip
    parser.add_argument("--images", type=positive_int, default=None,
                        help=f"images per sketch (default: {paper.IMAGES_PER_SKETCH})")  # fmt: skip
    parser.add_argument(
        "--anchor-sketches",
        type=count,
        default=None,
        help=f"default: {paper.ANCHOR_SKETCHES}; with --stimuli only 0 is allowed (leave the "
        "set's anchors out, as in a pilot)",
    )
    parser.add_argument("--anchor-images", type=positive_int, default=None,
                        help=f"default: {paper.ANCHOR_IMAGES}")  # fmt: skip
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

    if args.flat and args.out.suffix.lower() not in (".csv", ".tsv"):
        raise InputError(
            f"--out: {args.out}: expected a table name ending in .csv or .tsv with --flat"
        )
    inputs = [args.stimuli] if args.stimuli is not None else []
    companions = [sidecar_name(args.out)] if args.flat else []
    check_target(args.out, "simulate", folder=not args.flat, companions=companions,
                 overwrite=args.overwrite, inputs=inputs)  # fmt: skip
    if args.miss_rate is not None and not 0.0 <= args.miss_rate < 1.0:
        raise InputError(f"--miss-rate: expected a share from 0 to below 1, got {args.miss_rate}")
    stimuli, digest = None, None
    if args.stimuli is not None:
        design, stimuli, digest = _set_design(args)
    else:
        design = StudyDesign(
            participants=args.participants,
            sketches=args.sketches or paper.SKETCHES,
            images_per_sketch=args.images or paper.IMAGES_PER_SKETCH,
            anchor_sketches=paper.ANCHOR_SKETCHES if args.anchor_sketches is None
            else args.anchor_sketches,
            anchor_images=args.anchor_images or paper.ANCHOR_IMAGES,
        )  # fmt: skip
    model = RaterModel() if args.miss_rate is None else RaterModel(miss_rate=args.miss_rate)
    with step(f"simulating {design.participants} participants"):
        path = write_simulated_dataset(
            args.out, design, model, args.seed, flat=args.flat, version=toolkit_version(),
            stimuli=stimuli, stimulus_digest=digest, overwrite=args.overwrite,
        )  # fmt: skip
    kind = "ratings table" if args.flat else "BIDS dataset"
    on = f" on {args.stimuli} (set digest {digest[:12]}...)" if digest else ""
    print(
        f"Simulated {design.participants} participants x {design.sketches} sketches x "
        f"{design.images_per_sketch} images{on} (seed {args.seed}); {kind} written to {path}"
    )
    return 0


def _set_design(args: argparse.Namespace):
    """The design of a simulation on a stimulus set: sizes from the set, not from flags."""
    from sbir_study.analysis.simulate import design_for_set
    from sbir_study.stimuli import load_set

    for flag, value in (("--sketches", args.sketches), ("--images", args.images),
                        ("--anchor-images", args.anchor_images)):  # fmt: skip
        if value is not None:
            raise InputError(f"{flag}: the stimulus set fixes the design; drop {flag}")
    if args.anchor_sketches not in (None, 0):
        raise InputError("--anchor-sketches: with --stimuli only 0 is allowed (no anchoring)")
    stimulus_set = load_set(args.stimuli)
    manifest = stimulus_set.manifest
    if args.anchor_sketches == 0:
        manifest = manifest[manifest["role"] != "anchor"]
    return design_for_set(manifest, args.participants), manifest, stimulus_set.digest
