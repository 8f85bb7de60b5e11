"""``sbir-study serve``: check the protocol and the set, migrate the database, run uvicorn.

One process serves the embedded SQLite database; ``workers`` > 1 starts
several uvicorn worker processes, each building the same app from the
settings passed in the environment (:func:`app_from_environment`). Several
hosts behind a proxy each run ``serve`` against the same PostgreSQL database.
"""

from __future__ import annotations

import copy
import gc
import json
import os
import secrets
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from sbir_study.foundation.checks import InputError

__all__ = ["ServeSettings", "app_from_environment", "build_app", "serve"]

_ENVIRONMENT = "SBIR_STUDY_ONLINE_SETTINGS"
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


def build_app(settings: ServeSettings):
    """Load and check everything, migrate the schema, and return the app (and the study)."""
    from ..protocol import load_protocol
    from .app import create_app, web_assets
    from .service import OnlineStudy
    from .setcheck import checked_set
    from .storage import open_database

    protocol = load_protocol(settings.protocol, online=True)
    # Checked whole at the first start; reused at a restart when nothing changed (setcheck).
    stimulus_set, aspect, _ = checked_set(settings.stimuli, protocol, settings.data or None)
    web_assets()
    engine = open_database(settings.db)
    study = OnlineStudy.open(
        protocol, stimulus_set, engine, protocol_file=settings.protocol, max_aspect=aspect
    )
    return create_app(study, settings.admin_token, max_body=settings.max_body), study


def app_from_environment():
    """The app of a uvicorn worker process (settings from the parent's environment)."""
    settings = ServeSettings(**json.loads(os.environ[_ENVIRONMENT]))
    return settled(build_app(settings)[0])


#: How often a running server's garbage collector walks everything it holds (seconds).
FULL_COLLECTION_EVERY_S = 300.0


def settled(app, every_s: float = FULL_COLLECTION_EVERY_S):
    """``app``, in a process whose garbage collector no longer holds requests for long.

    Under a crowd's load the collector's full collections came every second or two and
    held every request meanwhile, for 0.05-0.5 s each: each walked what the process holds
    for good (the modules, the study, the app: a few hundred thousand objects) and the
    thousand participants' open connections, because the short-lived objects of the
    requests in flight, promoted at each younger collection, soon pass its threshold
    (a quarter of the objects it holds). So what is built is set aside (``gc.freeze``),
    full collections no longer come by themselves, and a thread makes one every
    ``every_s`` seconds instead: cyclic garbage still goes, within minutes, and the
    younger generations are collected as before (they free the requests' cycles).
    """
    gc.collect()
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, 1_000_000)

    def now_and_then() -> None:
        while True:
            time.sleep(every_s)
            gc.collect()

    threading.Thread(target=now_and_then, name="sbir-full-collection", daemon=True).start()
    return app


def admin_token(data: Path, token_file: Path | None) -> tuple[str, str]:
    """The admin token and where it came from: a file, the environment, or a new one."""
    if token_file is not None:
        try:
            token = token_file.read_text(encoding="utf-8").strip()
        except OSError as error:
            raise InputError(f"{token_file}: cannot be read ({error.strerror})") from None
        if len(token) < 16:
            raise InputError(f"{token_file}: expected an admin token of at least 16 characters")
        return token, str(token_file)
    if os.environ.get(TOKEN_VARIABLE):
        token = os.environ[TOKEN_VARIABLE].strip()
        if len(token) < 16:
            raise InputError(f"{TOKEN_VARIABLE}: expected at least 16 characters")
        return token, TOKEN_VARIABLE
    path = data / "admin-token"
    if path.exists():
        return path.read_text(encoding="utf-8").strip(), str(path)
    token = secrets.token_urlsafe(24)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(token + "\n")
    return token, str(path)


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
    """Serve the protocol's browser session until interrupted (see ``sbir-study serve --help``)."""
    import uvicorn

    from .storage import default_url

    data = Path(data)
    if data.exists() and not data.is_dir():
        raise InputError(f"--data: {data} is not a folder")
    data.mkdir(parents=True, exist_ok=True)
    token, token_source = admin_token(data, Path(admin_token_file) if admin_token_file else None)
    settings = ServeSettings(
        protocol=str(protocol),
        stimuli=str(stimuli),
        db=db or default_url(data),
        admin_token=token,
        max_body=max_body,
        data=str(data.resolve()),
    )
    app, study = build_app(settings)  # checks everything (and migrates) before any worker starts
    where = f"http://{host}:{port}{root_path}/"
    print(
        f"Serving {study.protocol.name!r} on the set {study.stimulus_set.folder} (digest "
        f"{study.stimulus_set.digest[:12]}...), {len(study.lists)} list(s), database "
        f"{study.engine.url.render_as_string()}",
        flush=True,
    )
    print(f"Participants: {where}  (add ?PROLIFIC_PID=... or ?participant=LABEL)", flush=True)
    print(f"Status: {where}admin (admin token in {token_source})", flush=True)
    options = {
        "host": host,
        "port": port,
        "proxy_headers": proxy_headers,
        "forwarded_allow_ips": forwarded_allow_ips,
        "root_path": root_path,
        "log_level": "warning",
        "log_config": log_config(),
        "timeout_graceful_shutdown": 10,
        # A page sends a trial every few seconds (the paper's 3 s) over one connection; kept
        # open 30 s between requests (uvicorn's default is 5 s), a pause or a slow trial does
        # not cost a new connection.
        "timeout_keep_alive": 30,
        # No websockets are served: their protocol's modules are not imported at start.
        "ws": "none",
    }
    if workers > 1:
        study.engine.dispose()
        os.environ[_ENVIRONMENT] = json.dumps(asdict(settings))
        uvicorn.run(
            "sbir_study.study.online.server:app_from_environment",
            factory=True,
            workers=workers,
            **options,
        )
    else:
        uvicorn.run(settled(app), **options)
