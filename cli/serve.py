"""``sbir-study serve`` and ``export-online``: the rating session in participants' browsers."""

from __future__ import annotations

import argparse
from pathlib import Path

from sbir_study.foundation.progress import step

from .common import Subcommands, positive_int, require_extra

__all__ = ["COMMANDS", "register"]

#: This family's subcommands and their one-line help (what ``sbir-study --help`` lists).
COMMANDS = {
    "serve": "serve the protocol's rating session to browsers (online study)",
    "export-online": "write the online sessions as a BIDS dataset",
}


def register(commands: Subcommands) -> None:
    _register_serve(commands)
    _register_export(commands)


def _register_serve(commands: Subcommands) -> None:
    serve = commands.add_parser(
        "serve",
        help=COMMANDS["serve"],
        description="Serve the protocol's rating session as a jsPsych experiment: the same trial "
        "list, timing and scoring as `run`, every trial stored once in the database as soon as "
        "its window closes. Participants open http://HOST:PORT/ (with ?PROLIFIC_PID=... or "
        "?participant=LABEL); the experimenter's status page is /admin. See the README's "
        "'Running the study online'.",
    )
    serve.add_argument("--protocol", type=Path, required=True, help="protocol file (.toml)")
    serve.add_argument("--stimuli", type=Path, required=True, help="stimulus set folder")
    serve.add_argument(
        "--data",
        type=Path,
        required=True,
        help="folder for the SQLite database (online.sqlite3) and the admin token",
    )
    serve.add_argument(
        "--db",
        default=None,
        help="database address (default: sqlite:///DATA/online.sqlite3); postgresql://USER@HOST:"
        "PORT/NAME lets several servers share one study",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=positive_int, default=8000, help="TCP port to listen on")
    serve.add_argument("--workers", type=positive_int, default=1, help="server processes")
    serve.add_argument(
        "--admin-token-file",
        type=Path,
        default=None,
        help="file holding the admin token (default: $SBIR_STUDY_ADMIN_TOKEN, else DATA/"
        "admin-token, created on first start)",
    )
    serve.add_argument(
        "--proxy-headers",
        action="store_true",
        help="trust X-Forwarded-* headers from --forwarded-allow-ips (behind a proxy)",
    )
    serve.add_argument(
        "--forwarded-allow-ips",
        default="127.0.0.1",
        help="comma-separated addresses of the proxies trusted with --proxy-headers",
    )
    serve.add_argument(
        "--root-path", default="", help="path prefix the proxy serves under (default: none: /)"
    )
    serve.set_defaults(handler=serve_command)


def _register_export(commands: Subcommands) -> None:
    export = commands.add_parser(
        "export-online",
        help=COMMANDS["export-online"],
        description="Write the sessions stored by `serve` as the BIDS dataset that `analyze` "
        "reads (the lab session's columns; browser, screen and refresh in the sidecars). The "
        "dataset holds no id of the recruitment platform: its labels are keyed hashes of them, "
        "and the link from label to platform ids is written beside it, to OUT.linkage.tsv.",
    )
    export.add_argument(
        "--db", required=True, help="database address (sqlite:///FILE or postgresql://...)"
    )
    export.add_argument("--out", type=Path, required=True, help="BIDS dataset folder to write")
    export.add_argument(
        "--study",
        type=positive_int,
        default=None,
        help="the study's id, when the database holds several (default: the only one)",
    )
    export.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an earlier export-online of --out (nothing else)",
    )
    export.add_argument(
        "--with-lab",
        type=Path,
        action="append",
        default=[],
        metavar="DATASET",
        help="a BIDS dataset of lab sessions (sbir-study run) to copy in beside the online ones "
        "(repeatable; read only)",
    )
    export.add_argument(
        "--label-key",
        type=Path,
        default=None,
        metavar="FILE",
        help="the key of the labels, made (mode 0600) when missing; keep it to keep the labels "
        "(default: label-key beside a SQLite database; needed for PostgreSQL)",
    )
    export.add_argument(
        "--keep-platform-ids",
        action="store_true",
        help="keep the server's labels and the platform's ids (source_id, CrowdPlatform) and the "
        "user agents in the dataset, for a dataset that stays in the lab; no linkage file",
    )
    export.set_defaults(handler=export_command)


def serve_command(args: argparse.Namespace) -> int:
    require_extra("online", "serve")
    from sbir_study.study.online import serve

    serve(
        args.protocol,
        args.stimuli,
        args.data,
        db=args.db,
        host=args.host,
        port=args.port,
        workers=args.workers,
        admin_token_file=args.admin_token_file,
        proxy_headers=args.proxy_headers,
        forwarded_allow_ips=args.forwarded_allow_ips,
        root_path=args.root_path,
    )
    return 0


def export_command(args: argparse.Namespace) -> int:
    require_extra("online", "export-online")
    from sbir_study.study.online import export_online

    with step("exporting sessions"):
        done = export_online(
            args.db,
            args.out,
            study=args.study,
            overwrite=args.overwrite,
            with_lab=args.with_lab,
            keep_platform_ids=args.keep_platform_ids,
            label_key=args.label_key,
        )
    left_out = (
        f"; {done.skipped_empty} sessions without a trial, in participants.tsv only"
        if done.skipped_empty
        else ""
    )
    print(
        f"Exported {done.participants} participants ({done.complete} complete), {done.trials} "
        f"trials of {done.study!r} to {done.out}{left_out}"
    )
    if done.linkage is not None:
        print(
            f"The labels' platform ids, for paying participants (keep it private): {done.linkage}"
        )
    return 0
