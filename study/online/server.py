"""``sbir-study serve``: check the protocol and the set, migrate the database, serve.

``serve`` checks everything and builds the app once, in its main process, then
forks the processes that answer (gunicorn's arbiter, with uvicorn's worker):
``workers`` of them, one for the embedded SQLite database. Each starts from the
built app, so a worker that dies (a crash, ``kill -9``, the kernel's
out-of-memory killer) is forked again at once and answers within a second; only a
start of ``serve`` itself imports and builds everything. Several hosts behind a
proxy each run ``serve`` against the same PostgreSQL database.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import logging.config
import os
import secrets
import string
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from sbir_study.foundation.checks import InputError

from .secret_files import secret_text

if TYPE_CHECKING:
    from fastapi import FastAPI

    from .service import OnlineStudy

__all__ = ["ServeSettings", "build_app", "serve"]

TOKEN_VARIABLE = "SBIR_STUDY_ADMIN_TOKEN"


@dataclass(frozen=True)
class ServeSettings:
    """What a server process needs to build the app."""

    protocol: str
    stimuli: str
    db: str
    admin_token: str
    max_body: int = 65_536
    #: The data folder, where the set's check is kept between starts ("": not kept).
    data: str = ""


def build_app(settings: ServeSettings) -> tuple[FastAPI, OnlineStudy]:
    """Load and check everything, migrate the schema, and return the app (and the study)."""
    from ..protocol import load_protocol
    from .app import create_app, web_assets
    from .service import OnlineStudy
    from .setcheck import checked_set
    from .storage import open_database

    protocol = load_protocol(settings.protocol, online=True)
    # Checked whole at the first start; at a restart when nothing changed, the kept check
    # is reused (setcheck).
    checked = checked_set(settings.stimuli, protocol, settings.data or None)
    web_assets()
    engine = open_database(settings.db)
    study = OnlineStudy.open(
        protocol,
        checked.stimulus_set,
        engine,
        protocol_file=settings.protocol,
        max_aspect=checked.max_aspect,
    )
    return create_app(study, settings.admin_token, max_body=settings.max_body), study


#: How often a running server's garbage collector walks everything it holds (seconds).
FULL_COLLECTION_EVERY_S = 300.0


def set_aside() -> None:
    """Set what the process built aside from the garbage collector's walks (before forking).

    Under a crowd's load, the short-lived objects of the requests in flight soon pass the
    oldest generation's threshold, and each full collection walks everything the process
    holds for good (the modules, the study, the app) while every request waits. So what
    is built is frozen (``gc.freeze``; forked workers inherit it, and their pages of it
    stay shared), and full collections come only on a clock
    (:func:`collect_now_and_then`); the younger generations are collected as usual.

    Nothing is collected first: :func:`serve` builds with the collector paused
    (:func:`collector_paused`) and freezes what it built as it stands, as Python's
    documentation of ``gc.freeze`` advises for a process that forks without exec (a
    collection would leave holes in the pages the workers share).
    """
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, 1_000_000)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the block (and on again after it, as it was).

    ``serve``'s start makes objects that are kept for good (the modules, the study, the
    app); a collection triggered while they pile up walks them all, and finds no garbage.
    :func:`set_aside` then freezes them.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def collect_now_and_then(every_s: float = FULL_COLLECTION_EVERY_S) -> threading.Thread:
    """A thread that makes a full collection every ``every_s`` seconds (in each worker):
    cyclic garbage that outlived the younger collections still goes, within minutes."""

    def now_and_then() -> None:
        while True:
            time.sleep(every_s)
            gc.collect()

    thread = threading.Thread(target=now_and_then, name="sbir-full-collection", daemon=True)
    thread.start()
    return thread


def admin_token(data: Path, token_file: Path | None) -> tuple[str, str]:
    """The admin token and where it came from: a file, the environment, or a new one.

    A token is at least 128 bits (:func:`check_admin_token`); a file holding one is
    readable by its owner alone (mode 0600), as the one ``serve`` creates is.
    """
    if token_file is None and os.environ.get(TOKEN_VARIABLE):
        return check_admin_token(os.environ[TOKEN_VARIABLE].strip(), TOKEN_VARIABLE), TOKEN_VARIABLE
    path = token_file or data / "admin-token"
    new = None if token_file else lambda: secrets.token_urlsafe(24)
    token = secret_text(path, new)
    return check_admin_token(token, str(path)), str(path)


#: The fewest characters of a token of 128 bits: 32 hex digits, or 22 of any other
#: alphabet at least as rich as base64's (6 bits each).
_MIN_HEX, _MIN_TEXT = 32, 22


def check_admin_token(token: str, where: str) -> str:
    """``token`` if it can hold 128 bits: 32 hex digits (``openssl rand -hex 16``), or 22
    characters of another alphabet (``openssl rand -base64 16``).

    >>> check_admin_token("0123456789abcdef" * 2, "env")
    '0123456789abcdef0123456789abcdef'
    >>> try:
    ...     check_admin_token("0123456789abcdef", "env")
    ... except InputError as error:
    ...     print(error)  # doctest: +ELLIPSIS
    env: expected an admin token of 128 bits or more (...), got 16 characters
    """
    hexadecimal = all(c in string.hexdigits for c in token)
    if len(token) < (_MIN_HEX if hexadecimal else _MIN_TEXT):
        raise InputError(
            f"{where}: expected an admin token of 128 bits or more (32 hex digits or 22 other "
            f"characters, as openssl rand -hex 16 writes), got {len(token)} characters"
        )
    return token


def log_config() -> dict:
    """uvicorn's logging set-up, plus the app's refusals (logger ``sbir_study.study.online``) beside
    uvicorn's own warnings on stderr, in every worker."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config["loggers"]["sbir_study.study.online"] = {
        "handlers": ["default"],
        "level": "INFO",
        "propagate": False,
    }
    return config


def serve(
    protocol: str | Path,
    stimuli: str | Path,
    data: str | Path,
    *,
    db: str | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
    workers: int = 1,
    admin_token_file: str | Path | None = None,
    max_body: int = 65_536,
    proxy_headers: bool = False,
    forwarded_allow_ips: str = "127.0.0.1",
    root_path: str = "",
) -> None:
    """Serve the protocol's browser session until interrupted (see ``sbir-study serve --help``).

    Runs until stopped. SIGTERM lets the workers finish the requests they hold (for up
    to 10 s); SIGINT (Ctrl-C) stops them at once. A trial not yet answered is not lost:
    its page sends it again until a server stores it.
    """
    # The start makes what is kept for good; nothing to collect until it is frozen.
    with collector_paused():
        from .storage import default_url

        _check_address(host, port)
        data = Path(data)
        if data.exists() and not data.is_dir():
            raise InputError(f"--data: {data} is not a folder")
        data.mkdir(parents=True, exist_ok=True)
        token, token_source = admin_token(
            data, Path(admin_token_file) if admin_token_file else None
        )
        settings = ServeSettings(
            protocol=str(protocol),
            stimuli=str(stimuli),
            db=db or default_url(data),
            admin_token=token,
            max_body=max_body,
            data=str(data.resolve()),
        )
        app, study = build_app(settings)  # checks everything (and migrates) before any fork
        study.warm()
        # No database connection and no thread crosses the fork: each worker opens its own.
        study.engine.dispose()
        set_aside()
    where = f"http://{host}:{port}{root_path}/"
    print(
        f"Serving {study.protocol.name!r} on the set {study.stimulus_set.folder} (digest "
        f"{study.stimulus_set.digest[:12]}...), {len(study.lists)} list(s), database "
        f"{study.engine.url.render_as_string()}",
        flush=True,
    )
    print(f"Participants: {where}  (add ?PROLIFIC_PID=... or ?participant=LABEL)", flush=True)
    print(f"Status: {where}admin (admin token in {token_source})", flush=True)
    uvicorn_options = uvicorn_settings(proxy_headers=proxy_headers, root_path=root_path)
    options = {
        "bind": f"[{host}]:{port}" if ":" in host else f"{host}:{port}",
        "workers": workers,
        "preload_app": True,
        "loglevel": "warning",
        # A page sends a trial every few seconds (the paper's 3 s) over one connection; kept
        # open 30 s between requests, a pause or a slow trial does not cost a new connection.
        "keepalive": 30,
        "graceful_timeout": _GRACEFUL_S,
        # A worker whose event loop has not come round for a minute is stuck: it is killed
        # and forked again (the trials it held unanswered are sent again by their pages).
        "timeout": 60,
        "forwarded_allow_ips": forwarded_allow_ips,
    }
    logging.config.dictConfig(log_config())
    _arbiter(app, study.engine, uvicorn_options, options).run()


def uvicorn_settings(*, proxy_headers: bool, root_path: str) -> dict:
    """What each worker's uvicorn is configured with, beside gunicorn's settings."""
    from .request_deadline import RequestDeadlineProtocol

    return {
        "proxy_headers": proxy_headers,
        "root_path": root_path,
        "timeout_graceful_shutdown": _GRACEFUL_S,
        # No websockets are served: their protocol's modules are not imported.
        "ws": "none",
        # A request not received whole within REQUEST_DEADLINE_S closes its connection.
        "http": RequestDeadlineProtocol,
        # Connections and requests a worker holds at once; past it, 503 at once. Thousands
        # of pages fit (each holds one connection, idle most of the time), and a flood of
        # slow clients cannot hold the worker's memory or file descriptors.
        "limit_concurrency": CONNECTIONS_PER_WORKER,
    }


#: Seconds a stopped worker has to finish the requests it holds.
_GRACEFUL_S = 10
#: uvicorn's ``limit_concurrency`` per worker.
CONNECTIONS_PER_WORKER = 2048


def _check_address(host: str, port: int) -> None:
    """Refuse, before anything is checked or built, an address ``serve`` cannot listen on (a
    port in use, a host not of this machine): gunicorn would try it for 5 s and stop with
    a dozen lines. Bound as gunicorn binds it (``SO_REUSEADDR``), then closed at once."""
    import socket

    try:
        family, kind, protocol, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM
        )[0]
        with socket.socket(family, kind, protocol) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)
    except OSError as error:
        raise InputError(
            f"--host {host} --port {port}: cannot listen there ({error.strerror or error}); "
            "expected a free port on an address of this machine"
        ) from None


def _arbiter(app, engine, uvicorn_options: dict, options: dict):
    """gunicorn's arbiter over ``app``, built here: ``workers`` forked uvicorn workers, each
    forked again at once when it dies."""
    from gunicorn.app.base import BaseApplication
    from uvicorn_worker import UvicornWorker

    class Worker(UvicornWorker):
        CONFIG_KWARGS: ClassVar[dict] = {"loop": "auto", **uvicorn_options}

    def post_fork(arbiter, worker) -> None:
        engine.dispose(close=False)  # the pool starts empty in the worker (SQLAlchemy's advice)
        collect_now_and_then()

    class Application(BaseApplication):
        def load_config(self) -> None:
            for name, value in {**options, "worker_class": Worker, "post_fork": post_fork}.items():
                self.cfg.set(name, value)

        def load(self):
            return app

    return Application()
