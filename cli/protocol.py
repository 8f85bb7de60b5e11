"""``sbir-study protocol show``: every screen's text of a protocol, as the participant sees it."""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path
from typing import Literal

from .common import Subcommands

__all__ = ["COMMANDS", "register"]

#: This family's subcommands and their one-line help (what ``sbir-study --help`` lists).
COMMANDS = {
    "protocol": "protocols: show every screen's text, lab and online",
}

_WIDTH = 78


def register(commands: Subcommands) -> None:
    parser = commands.add_parser(
        "protocol",
        help=COMMANDS["protocol"],
        description="Protocol files (protocols/README.md): check them and proofread their texts.",
    )
    actions = parser.add_subcommands(dest="action", required=True, metavar="ACTION")
    show = actions.add_parser(
        "show",
        help="print every screen's text, lab and online, in the order a participant meets them",
        description="Check the protocol, then print the text of every screen of the lab session "
        "(sbir-study run) and of the online page (sbir-study serve), in the order a participant "
        "meets them and in the protocol's words ([texts], [instructions], and the instruction "
        "texts written from its settings where it gives none), so that they can be proofread "
        "before anyone sits down. Buttons are in brackets; a number known only when the screen "
        "is shown (the window's size, say) is an example.",
    )
    show.add_argument("file", type=Path, metavar="FILE", help="protocol file (.toml)")
    show.add_argument(
        "--session",
        choices=("lab", "online", "both"),
        default="both",
        help="which session's screens to print (default: both)",
    )
    show.set_defaults(handler=show_command)


def show_command(args: argparse.Namespace) -> int:
    from sbir_study.study.protocol import load_protocol
    from sbir_study.study.screens import screens

    protocol = load_protocol(args.file, online=args.session != "lab")
    sessions: tuple[Literal["lab", "online"], ...] = (
        ("lab", "online") if args.session == "both" else (args.session,)
    )
    titles = {"lab": "Lab session (sbir-study run)", "online": "Online page (sbir-study serve)"}
    blocks = []
    for session in sessions:
        lines = [f"{titles[session]}: {args.file}", "=" * _WIDTH]
        for number, screen in enumerate(screens(protocol, session), start=1):
            lines += ["", f"{number}. {screen.when}", "-" * _WIDTH]
            for paragraph in screen.text.split("\n"):
                lines += textwrap.wrap(paragraph, _WIDTH, break_on_hyphens=False) or [""]
        blocks.append("\n".join(lines))
    print("\n\n\n".join(blocks))
    return 0
