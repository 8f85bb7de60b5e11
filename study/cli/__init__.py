"""The ``sbir-study`` command line: one module per command family.

============================  ===========================================
module                        subcommands
============================  ===========================================
:mod:`study.cli.run`          ``run`` (a rating session in a window)
:mod:`study.cli.simulate`     ``simulate``
:mod:`study.cli.analyze`      ``analyze``
:mod:`study.cli.evaluate`     ``evaluate``, ``evaluate-hpatches``, ``baseline``
:mod:`study.cli.stimuli`      ``stimuli generate | validate | import | select``
:mod:`study.cli.power`        ``power``
:mod:`study.cli.serve`        ``serve``, ``export-online`` (the session in a browser)
:mod:`study.cli.common`       what they share: option types, messages, progress
============================  ===========================================

Each handler parses, calls the library, and reports. Exit status: 0 on
success, 2 on bad input (one line on stderr naming the file, line, field or
option), 1 on an internal error (with a traceback to report). Each subcommand
imports what it needs when it runs, so ``--help`` and the analysis never pay
for PsychoPy.
"""

from __future__ import annotations

import argparse
import sys
import traceback
import warnings

from analysis.checks import InputError
from analysis.provenance import toolkit_version

from . import analyze, evaluate, power, run, serve, simulate, stimuli
from .common import PROG, error

__all__ = ["build_parser", "main"]

#: The command families, in the order ``--help`` lists them.
_FAMILIES = (analyze, simulate, power, stimuli, evaluate, run, serve)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Run, simulate and analyse sketch/image rating studies (Eitz et al. 2011).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {toolkit_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="SUBCOMMAND")
    for family in _FAMILIES:
        family.register(commands)
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"{PROG}: warning: {message}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    warnings.showwarning = _show_warning
    try:
        return args.handler(args)
    except InputError as problem:
        error(str(problem))
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
