"""What every subcommand shares: the parser, option types, common options, messages, the log.

Handlers raise :class:`~sbir_study.foundation.checks.InputError` for bad input, which
:func:`sbir_study.cli.main` turns into one line and exit status 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
import re
import sys
import tempfile
import textwrap
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeAlias, TypeVar

from sbir_study.foundation.checks import InputError, did_you_mean
from sbir_study.foundation.provenance import DISTRIBUTION as PROG

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "PROG",
    "HelpFormatter",
    "InputError",
    "Parser",
    "Subcommands",
    "add_alpha",
    "add_alternative",
    "add_anchor_design",
    "add_figure_formats",
    "add_overwrite",
    "add_scale",
    "add_seed",
    "at_least",
    "between",
    "count",
    "count_min2",
    "error",
    "help_with_default",
    "internal_error",
    "log_folder",
    "options_from",
    "positive_int",
    "probability",
    "require_extra",
    "unrecognized",
    "whole_numbers",
]


class HelpFormatter(argparse.HelpFormatter):
    """``--help`` whose lines break at spaces only, so option names, scales (``1-9:high-is-best``)
    and ranges can be copied as typed.
    """

    # argparse wraps help lines in this private method only: no public setting keeps a
    # hyphenated word whole.
    def _split_lines(self, text: str, width: int) -> list[str]:
        text = re.sub(r"\s+", " ", text, flags=re.ASCII).strip()
        return textwrap.wrap(text, width, break_on_hyphens=False)


#: What ``add_subparsers`` returns (argparse's class for it is private; only annotations name it).
Subcommands: TypeAlias = "argparse._SubParsersAction[Parser]"
#: An options dataclass (:func:`options_from`).
Options = TypeVar("Options", bound="DataclassInstance")


class Parser(argparse.ArgumentParser):
    """argparse without abbreviations (``--part`` is not ``--participants``), whose errors are one
    line with a suggestion and no usage block, and whose ``--help`` shows every option's
    default (:func:`help_with_default`; an argument group's options state theirs in their help).
    """

    subcommands: Subcommands | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        """:meth:`argparse.ArgumentParser.add_argument`, its help showing the default."""
        action = super().add_argument(*args, **kwargs)
        action.help = help_with_default(action)
        return action

    def add_subcommands(self, **kwargs: Any) -> Subcommands:
        """:meth:`~argparse.ArgumentParser.add_subparsers`, kept for :func:`unrecognized`."""
        self.subcommands = self.add_subparsers(**kwargs)
        return self.subcommands

    def error(self, message: str) -> NoReturn:
        choice = re.search(r"invalid choice: '(.*?)' \(choose from (.*)\)$", message)
        if choice:
            allowed = re.findall(r"'(.*?)'", choice.group(2))
            message += did_you_mean(choice.group(1), allowed)
        self.exit(2, f"{self.prog}: error: {message}\n")


def help_with_default(action: argparse.Action) -> str | None:
    """An option's help with ``(default: ...)``, as :class:`argparse.ArgumentDefaultsHelpFormatter`
    adds it, but a help that states its default in words left as written, several values shown
    as typed, and flags, required options and options without a default left alone.

    >>> parser = argparse.ArgumentParser()
    >>> help_with_default(parser.add_argument("--cutoffs", default=(5, 10), help="k"))
    'k (default: 5,10)'
    """
    text = action.help
    default = action.default
    if (
        text == argparse.SUPPRESS
        or "default" in (text or "")
        or not action.option_strings
        or action.required
        or default is None
        or default is False
        or default == ""
        or default is argparse.SUPPRESS
    ):
        return text
    shown = ",".join(map(str, default)) if isinstance(default, tuple | list) else str(default)
    # argparse %-formats the help: a literal % in a default must be doubled.
    shown = shown.replace("%", "%%")
    return f"{text} (default: {shown})" if text else f"(default: {shown})"


def _chosen(parser: Parser, args: argparse.Namespace) -> Parser:
    """The (sub)parser that the parsed command line ended in."""
    while parser.subcommands is not None:
        name = getattr(args, parser.subcommands.dest, None)
        if name not in parser.subcommands.choices:
            break
        parser = parser.subcommands.choices[name]
    return parser


#: The optional installs, the packages each brings that a command imports, and what for.
EXTRAS = {
    "lab": (("psychopy", "PsychoPy"),),
    "online": (
        ("fastapi", "FastAPI"),
        ("uvicorn", "uvicorn"),
        ("sqlalchemy", "SQLAlchemy"),
        ("alembic", "Alembic"),
        ("gunicorn", "gunicorn"),
        ("uvicorn_worker", "uvicorn-worker"),
    ),
}


def require_extra(extra: str, command: str) -> None:
    """Raise :class:`InputError` naming the install (``[lab]`` for ``run``, ``[online]`` for
    ``serve`` and ``export-online``) when a package of ``extra`` that ``command`` needs is missing.
    """
    import importlib.util

    missing = [name for module, name in EXTRAS[extra] if importlib.util.find_spec(module) is None]
    if missing:
        raise InputError(
            f"{command}: needs {', '.join(missing)}, which this install does not have; "
            f"install it with: pip install 'sbir-study[{extra}]'"
        )


def unrecognized(parser: Parser, args: argparse.Namespace, extra: list[str]) -> NoReturn:
    """Exit 2 with one line naming the first argument nobody takes (and the closest option)."""
    chosen = _chosen(parser, args)
    # Only the private _actions lists a parser's options, its argument groups' included.
    options = [s for a in chosen._actions for s in a.option_strings if s.startswith("--")]
    flags = [a for a in extra if a.startswith("-") and not _is_number(a)]
    if flags:
        given = flags[0].split("=", 1)[0]
        chosen.error(f"unrecognized option {given!r}{did_you_mean(given, options)}")
    chosen.error(f"unexpected argument {extra[0]!r}")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def log_folder() -> Path:
    """Where internal errors are logged, never a folder of the user's data: ``$SBIR_STUDY_LOG_DIR``,
    else ``$XDG_STATE_HOME/sbir-study/logs`` (``~/.local/state/sbir-study/logs``).
    """
    given = os.environ.get("SBIR_STUDY_LOG_DIR")
    if given:
        return Path(given)
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(Path.home(), ".local", "state")
    return Path(state) / PROG / "logs"


def internal_error(argv: Sequence[str] | None) -> int:
    """Log the exception being handled with its traceback, say where in one line; returns 1."""
    kind, value, _ = sys.exc_info()
    from sbir_study.foundation.provenance import toolkit_version

    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    arguments = list(argv if argv is not None else sys.argv[1:])
    text = (
        f"sbir-study {toolkit_version()}, Python {sys.version.split()[0]}\n"
        f"command: {PROG} {' '.join(map(str, arguments))}\n\n{traceback.format_exc()}"
    )
    log: Path | str = "the traceback above"
    for folder in (log_folder(), Path(tempfile.gettempdir()) / "sbir-study-logs"):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"internal-error-{stamp}-{os.getpid()}.log"
            path.write_text(text, encoding="utf-8")
            log = path
            break
        except OSError:
            continue
    else:
        print(text, file=sys.stderr, end="")
    summary = str(value).strip().splitlines()[0][:200] if str(value).strip() else ""
    name = kind.__name__ if kind else "error"
    print(
        f"{PROG}: internal error ({name}{': ' + summary if summary else ''}); the traceback is in "
        f"{log}; please report it",
        file=sys.stderr,
    )
    return 1


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


def between(minimum: int, maximum: int) -> Callable[[str], int]:
    """An option type: a whole number from ``minimum`` to ``maximum``."""
    whole_number = at_least(minimum)

    def bounded(text: str) -> int:
        try:
            value = whole_number(text)
        except argparse.ArgumentTypeError:
            value = None
        if value is None or value > maximum:
            raise argparse.ArgumentTypeError(
                f"expected a whole number {minimum}..{maximum}, got {text!r}"
            )
        return value

    return bounded


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


def add_overwrite(parser: argparse.ArgumentParser, what: str = "results") -> None:
    """``--overwrite``: replace an earlier output of the same command (docs/outputs.md)."""
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help=f"replace the {what} an earlier run of this command wrote at --out; never "
        "anything else (another command's output, a file it did not write)",
    )


def _figure_formats(text: str) -> tuple[str, ...]:
    from sbir_study.foundation.html import figure_formats

    try:
        return figure_formats(text)
    except InputError as problem:
        raise argparse.ArgumentTypeError(str(problem).removeprefix("figure formats: ")) from None


def add_figure_formats(parser: argparse.ArgumentParser) -> None:
    """``--figure-formats``: the files each figure is written as (png among them)."""
    from sbir_study.foundation.html import DEFAULT_FIGURE_FORMATS, FIGURE_FORMATS

    parser.add_argument(
        "--figure-formats",
        type=_figure_formats,
        default=DEFAULT_FIGURE_FORMATS,
        metavar="LIST",
        help=f"comma-separated formats each figure is written in, from "
        f"{', '.join(FIGURE_FORMATS)}; png is always among them, as the report embeds it "
        f"(default: {','.join(DEFAULT_FIGURE_FORMATS)}: the PDF with TrueType fonts, as "
        "journals take it)",
    )


#: How a rating scale is written on the command line (``Scale.parse``).
SCALE_FORMAT = (
    "LOW-HIGH with 2 to 9 points, :high-is-best when the high end is the best match (1-5, "
    "1-9:high-is-best)"
)


def add_scale(
    parser: argparse.ArgumentParser, what: str, more: str, default: str | None = None
) -> None:
    """``--scale``: ``what`` it is, how it is written (:data:`SCALE_FORMAT`), then ``more``."""
    parser.add_argument("--scale", default=default, help=f"{what}, {SCALE_FORMAT}{more}")


def add_seed(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=count, default=0, help="random seed (default: 0)")


def add_anchor_design(parser: argparse.ArgumentParser, *, minimum_images: int = 1) -> None:
    """``--anchor-sketches`` and ``--anchor-images``: the anchor block a set has."""
    from sbir_study.foundation import paper

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


def options_from(cls: type[Options], args: argparse.Namespace, **given: object) -> Options:
    """An options dataclass whose fields come from the options of the same name; ``given`` sets
    the others.
    """
    names = [f.name for f in dataclasses.fields(cls) if f.name not in given]
    return cls(**{name: getattr(args, name) for name in names if hasattr(args, name)}, **given)


def error(message: str) -> None:
    """One line on stderr, as every bad input is reported."""
    print(f"{PROG}: error: {message}", file=sys.stderr)
