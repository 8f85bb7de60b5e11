"""The command line's paperwork: help texts that show their defaults, and the version."""

import argparse
import re
import tomllib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sbir_study.cli import build_parser
from sbir_study.cli.common import Parser
from tests.helpers import run_main

ROOT = Path(__file__).resolve().parents[2]


def _commands(parser, name="sbir-study"):
    yield name, parser
    if parser.subcommands is not None:
        for sub, subparser in parser.subcommands.choices.items():
            yield from _commands(subparser, f"{name} {sub}")


COMMANDS = dict(_commands(build_parser()))


def _options(parser):
    skip = (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)
    return [a for a in parser._actions if not isinstance(a, skip)]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_option_has_help_showing_its_default(name):
    parser = COMMANDS[name]
    text = parser.format_help()
    flat = " ".join(text.split())
    for action in _options(parser):
        assert action.help, (name, action.dest)
        flag = isinstance(action, argparse._StoreTrueAction | argparse._StoreFalseAction)
        if action.option_strings and not action.required and not flag:
            # Its help (as printed, line breaks undone) names the default.
            shown = " ".join(parser._get_formatter()._expand_help(action).split())
            assert "default" in shown, (name, action.option_strings)
            assert shown in flat, (name, action.option_strings)
            if action.default not in (None, "") and "%(default)" not in action.help:
                value = action.default
                value = ",".join(map(str, value)) if isinstance(value, tuple | list) else value
                if "default:" in shown and f"{value}" not in shown:
                    # Stated in words ("the rater model's", "as in the paper"): the number too.
                    assert re.search(r"\d", shown), (name, action.option_strings, shown)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_is_printed_as_written(name):
    # Descriptions are not %-formatted by argparse: a "%%" would be printed as it is.
    text = COMMANDS[name].format_help()
    assert "%%" not in text


def test_power_help_prints_95_percent():
    result = run_main("power", "--help")
    assert result.returncode == 0
    assert "95% range" in " ".join(result.stdout.split())
    assert "%%" not in result.stdout


@given(
    default=st.one_of(
        st.integers(),
        st.floats(allow_nan=False),
        st.text(min_size=1),
        st.tuples(st.integers(1, 99), st.integers(1, 99)),
    )
)
def test_any_default_is_shown_as_typed(default):
    # Whatever the default (a % in it included), the help line shows it and nothing breaks.
    parser = Parser(add_help=False)
    action = parser.add_argument("--option", default=default, help="an option")
    shown = parser._get_formatter()._expand_help(action)
    typed = ",".join(map(str, default)) if isinstance(default, tuple) else str(default)
    assert shown == f"an option (default: {typed})"


def test_version_comes_from_pyproject():
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    result = run_main("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"sbir-study {version}"
    # One place: no other file of the package writes the version number.
    folders = ("src", "foundation", "analysis", "stimuli", "study", "cli")
    for path in [p for folder in folders for p in (ROOT / folder).glob("**/*.py")]:
        assert f'"{version}"' not in path.read_text(encoding="utf-8"), path
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "## Unreleased" in changelog
    # CITATION.cff cites the toolkit without a version of its own (it would drift).
    citation = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    assert not re.search(r"^version:", citation, re.M)
