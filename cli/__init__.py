"""The ``sbir-study`` command line: one module per command family.

=====================================  ==================================================
module                                 subcommands
=====================================  ==================================================
:mod:`sbir_study.cli.run`              ``run`` (a rating session in a window)
:mod:`sbir_study.cli.simulate`         ``simulate``
:mod:`sbir_study.cli.analyze`          ``analyze``
:mod:`sbir_study.cli.evaluate`         ``evaluate``, ``evaluate-hpatches``, ``baseline``
:mod:`sbir_study.cli.stimuli`          ``stimuli generate | validate | import | select``
:mod:`sbir_study.cli.power`            ``power``
:mod:`sbir_study.cli.serve`            ``serve``, ``export-online`` (the browser session)
:mod:`sbir_study.cli.protocol`         ``protocol show`` (every screen's text)
:mod:`sbir_study.cli.import_ratings`   ``import table | psychopy | jspsych | wide``
:mod:`sbir_study.cli.common`           the parser, option types, messages, the log
=====================================  ==================================================

Every failure is one line on stderr (``docs/outputs.md``): exit 2 for bad input (an option
or its value, with the closest valid option suggested; a file, row or field,
:class:`~sbir_study.foundation.checks.InputError`; an operating-system error naming a path),
1 for an internal error (the line names the log holding the traceback), and 130, 143 or 129
for SIGINT, SIGTERM or SIGHUP (what was being written is removed). Each subcommand imports
what it needs when it runs, so ``--help`` never pays for PsychoPy.
"""

from __future__ import annotations

import sys  # built into the interpreter: importing it runs no code an interrupt could stop

try:
    # Every import of the module, the standard library's included: on a busy machine an
    # interrupt may reach one (``import threading``).
    import os
    import signal
    import threading
    import warnings
    from typing import TYPE_CHECKING

    from sbir_study.foundation.provenance import DISTRIBUTION as PROG
except KeyboardInterrupt:
    # Ctrl-C while the command line loads, before main() handles interrupts: nothing has
    # been written, and the user gets the one line, not a traceback through the imports.
    print("sbir-study: interrupted (SIGINT) while starting; nothing was written", file=sys.stderr)
    raise SystemExit(130) from None

if TYPE_CHECKING:
    from .common import Parser

__all__ = ["FAMILIES", "build_parser", "main"]

#: Signals that end a command cleanly (its temporary output removed), with their exit status.
_ENDING = {
    getattr(signal, name): status
    for name, status in (("SIGTERM", 143), ("SIGHUP", 129))
    if hasattr(signal, name)
}


class Interrupted(BaseException):
    """SIGTERM or SIGHUP, raised where the program is so that every ``finally`` runs."""

    def __init__(self, number: int) -> None:
        super().__init__(number)
        self.number = number


#: The command families, in the order ``--help`` lists them (each a module of this package).
FAMILIES = (
    "analyze",
    "simulate",
    "power",
    "stimuli",
    "evaluate",
    "run",
    "serve",
    "protocol",
    "import_ratings",
)


def build_parser(command: str | None = None) -> Parser:
    """The ``sbir-study`` parser with every subcommand.

    With ``command`` (the one a command line names), only its family is built whole, the others
    listed by name and help: building a family may load what its defaults come from (the rater
    model of ``simulate``), which ``--version`` and another command's ``--help`` need not pay for.
    """
    import importlib

    from sbir_study.foundation.provenance import toolkit_version

    from .common import Parser

    parser = Parser(
        prog=PROG,
        description="Run, simulate and analyse sketch/image rating studies (Eitz et al. 2011).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {toolkit_version()}")
    commands = parser.add_subcommands(dest="command", required=True, metavar="SUBCOMMAND")
    for name in FAMILIES:
        family = importlib.import_module(f"{__name__}.{name}")
        if command is None or command in family.COMMANDS:
            family.register(commands)
        else:
            for subcommand, summary in family.COMMANDS.items():
                commands.add_parser(subcommand, help=summary)
    return parser


def _named_command(argv: list[str]) -> str:
    """The command line's first word that is not an option (the top-level options take no value),
    or ``""``.
    """
    return next((word for word in argv if not word.startswith("-")), "")


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"{PROG}: warning: {message}", file=sys.stderr)


def _raise_interrupted(number, frame) -> None:
    raise Interrupted(number)


def main(argv: list[str] | None = None) -> int:
    environment: dict[str, str] | None = None
    previous = {}
    # Everything from here, the handlers and imports included: an interrupt at any moment
    # is one line.
    try:
        environment = dict(os.environ)
        # Only the main thread may set handlers (a program calling main() from another
        # keeps its own).
        ending = _ENDING if threading.current_thread() is threading.main_thread() else {}
        previous = {number: signal.getsignal(number) for number in ending}
        for number in ending:
            signal.signal(number, _raise_interrupted)
        from .common import unrecognized

        parser = build_parser(_named_command(sys.argv[1:] if argv is None else argv))
        args, extra = parser.parse_known_args(argv)
        if extra:
            unrecognized(parser, args, extra)
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return args.handler(args)
    except (KeyboardInterrupt, Interrupted) as interrupted:
        return _interrupted(interrupted)
    except Exception as problem:
        # An interrupt while an extension module initialises comes out as that module's
        # ImportError ("initialization failed", pybind11), the interrupt as its cause.
        if (interrupt := _interrupt_behind(problem)) is not None:
            return _interrupted(interrupt)
        return _failed(problem, argv)
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        if environment is not None:
            _restore_environment(environment)


def _interrupted(interrupt: BaseException) -> int:
    """The one line and exit status of a command ended by SIGINT, SIGTERM or SIGHUP."""
    number = interrupt.number if isinstance(interrupt, Interrupted) else signal.SIGINT
    name = signal.Signals(number).name
    print(f"{PROG}: interrupted ({name}); nothing half-written was kept", file=sys.stderr)
    return _ENDING.get(number, 130)


def _interrupt_behind(problem: BaseException) -> BaseException | None:
    """The interrupt among the causes and contexts of ``problem``, if one is."""
    from sbir_study.foundation.checks import causes

    return next(
        (c for c in causes(problem) if isinstance(c, (KeyboardInterrupt, Interrupted))), None
    )


def _restore_environment(saved: dict[str, str]) -> None:
    """Undo what a command changed in ``os.environ`` (importing PsychoPy adds to ``PATH``,
    ``PYTHONPATH`` and ``PYTHONUSERBASE``), so a program calling :func:`main` keeps its own.
    """
    for name in set(os.environ) - set(saved):
        del os.environ[name]
    for name, value in saved.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


def _failed(problem: Exception, argv: list[str] | None) -> int:
    """The one line and exit status of a failed command (called while handling ``problem``)."""
    from sbir_study.foundation.checks import InputError

    from .common import error, internal_error

    if isinstance(problem, InputError):
        error(str(problem))
        return 2
    if isinstance(problem, OSError) and problem.filename is not None:
        # The operating system refused a path: exists, not a folder, read-only, no space...
        where = problem.filename
        if problem.filename2 is not None:
            where = f"{where} -> {problem.filename2}"
        error(f"{where}: {problem.strerror or problem}")
        return 2
    return internal_error(argv)


if __name__ == "__main__":
    sys.exit(main())
