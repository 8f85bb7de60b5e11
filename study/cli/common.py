"""What every subcommand shares: option types, common options, messages and progress.

Exit status: 0 on success, 2 on bad input (one line on stderr naming the file,
line, field or option), 1 on an internal error. Handlers raise
:class:`~analysis.checks.InputError` for bad input; :func:`study.cli.main`
turns it into the one line and exit status 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable

from analysis.checks import InputError

__all__ = [
    "PROG",
    "InputError",
    "add_alpha",
    "add_alternative",
    "add_anchor_design",
    "add_seed",
    "at_least",
    "count",
    "count_min2",
    "error",
    "options_from",
    "positive_int",
    "probability",
    "progress_callback",
    "whole_numbers",
]

PROG = "sbir-study"


def at_least(minimum: int) -> Callable[[str], int]:
    """An option type: a whole number of at least ``minimum``."""

    def whole_number(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected a whole number >= {minimum}, got {value}")
        return value

    return whole_number


positive_int = at_least(1)
count = at_least(0)
count_min2 = at_least(2)


def probability(text: str) -> float:
    """An option type: a number strictly between 0 and 1 (a significance level)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {value}")
    return value


def whole_numbers(minimum: int, what: str) -> Callable[[str], tuple[int, ...]]:
    """An option type: comma-separated whole numbers of at least ``minimum``, each once."""

    def numbers(text: str) -> tuple[int, ...]:
        try:
            values = tuple(int(part) for part in text.split(",") if part.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected comma-separated whole numbers, got {text!r}"
            ) from None
        if not values or min(values) < minimum:
            raise argparse.ArgumentTypeError(f"expected {what} of at least {minimum}, got {text!r}")
        return tuple(dict.fromkeys(values))

    return numbers


def add_alternative(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--alternative",
        choices=("greater", "two-sided", "less"),
        default="greater",
        help="alternative hypothesis of the tau_b tests (default: greater, as in the paper: "
        "P(tau >= observed))",
    )


def add_alpha(parser: argparse.ArgumentParser, what: str = "significance level") -> None:
    parser.add_argument("--alpha", type=probability, default=0.05, help=f"{what} (default: 0.05)")


def add_seed(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=count, default=0, help="random seed (default: 0)")


def add_anchor_design(parser: argparse.ArgumentParser, *, minimum_images: int = 1) -> None:
    """``--anchor-sketches`` and ``--anchor-images``: the anchor block a set has."""
    from analysis import paper

    parser.add_argument(
        "--anchor-sketches",
        type=count,
        default=paper.ANCHOR_SKETCHES,
        help="anchor sketches a whole anchor block has; 0 for a study without anchoring "
        f"(default: {paper.ANCHOR_SKETCHES}, as in the paper)",
    )
    parser.add_argument(
        "--anchor-images",
        type=at_least(minimum_images),
        default=paper.ANCHOR_IMAGES,
        help="images per anchor sketch, with prescribed ratings spread over the scale "
        f"(default: {paper.ANCHOR_IMAGES})",
    )


def options_from(cls, args: argparse.Namespace, **given):
    """An options dataclass whose fields come from the options of the same name.

    ``given`` sets the fields whose option has another name (or none).
    """
    names = [f.name for f in dataclasses.fields(cls) if f.name not in given]
    return cls(**{name: getattr(args, name) for name in names if hasattr(args, name)}, **given)


def error(message: str) -> None:
    """One line on stderr, as every bad input is reported."""
    print(f"{PROG}: error: {message}", file=sys.stderr)


def progress_callback(label: str) -> Callable[[int, int], None]:
    """A ``progress(done, total)`` callback that draws a bar on a terminal, else nothing."""
    from analysis.progress import progress_bar

    show = sys.stderr.isatty()

    def progress(done: int, total: int) -> None:
        progress_bar(label, done, total, show=show)

    return progress
