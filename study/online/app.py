"""The HTTP side of the online study: a FastAPI app over :class:`~.service.OnlineStudy`.

Routes (all relative, so that the study can sit under a path behind a proxy):

=====================================  ==========================================================
``GET /``                              the experiment page
``GET /static/NAME``                   our page's script, plugin and style
``GET /vendor/NAME``                   jsPsych and its plugins, from ``web/node_modules``
``GET /stimuli/PATH``                  an image the set's manifest names (nothing else)
``GET /api/config``                    the protocol's settings for the page
``POST /api/participant-id``           whether a session can start under an id (first screen)
``POST /api/sessions``                 start a session (consent given): its trials and token
``GET /api/sessions/ID``               the session's state, to resume it (token)
``PUT /api/sessions/ID/trials/N``      store trial N once (token)
``POST /api/sessions/ID/finish``       complete, or end after the quit key (token)
``GET /api/admin/status``, ``/admin``  the experimenter's status and the live load (admin token)
``GET /admin/participants.csv``        one row per participant (admin token)
``GET /api/admin/export.zip``          the BIDS dataset so far (admin token)
``GET /healthz``                       ``ok`` (for a proxy's health check)
=====================================  ==========================================================

The routes live in :mod:`.page_routes`, :mod:`.participant_routes` and
:mod:`.admin_routes`, who may call them in :mod:`.deps`; :func:`create_app`
assembles them with the answers to errors and two middlewares; the outer one also
times every participant request for the status's live load (:mod:`.metrics`).

Every refusal is a 4xx answer with ``{"error": "<one line naming the field>"}``.
Request bodies above ``max_body`` bytes are refused (413) before they are read
whole. Every refusal of a request to the API is also written to serve's log (logger
``sbir_study.study.online``, one line with the method, path, status and that message), so that
the experimenter sees a participant's trial refused, not only the participant's page; a
refused trial of a session's own page is also kept in the database
(:meth:`~.service.OnlineStudy.record_refusal`), and counted with its reason on the status page.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections import Counter

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security.utils import get_authorization_scheme_param

# The path Starlette's router matches, the root path taken off: the middlewares match the
# same (a path under --root-path arrives whole in scope["path"]).
from starlette._utils import get_route_path
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import Scope

from . import admin_routes, page_routes, participant_routes, storage
from .deps import AdminLoginRequired, ask_for_admin_login
from .metrics import LoadWindow, counted
from .page_routes import render_index, web_assets
from .service import OnlineStudy, ServiceError
from .start_limit import StartLimit

__all__ = ["create_app", "web_assets"]

#: Where refusals are written (``sbir-study serve`` sends it to stderr with uvicorn's own).
LOG = logging.getLogger("sbir_study.study.online")
_REFUSED = "sbir_study.refused"  # in a request's scope once its refusal is logged
#: A trial's address (``PUT api/sessions/ID/trials/N``): the session and the trial it names.
_TRIAL_PATH = re.compile(r"/api/sessions/([^/]+)/trials/([^/]*)")
#: Refusals a page retries (it keeps the trial) or that no session's own page meets.
_NOT_KEPT = {401, 403, 404, 408, 425, 429}

_SECURITY = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data: blob:; "
    "style-src 'self' 'unsafe-inline'; script-src 'self'; connect-src 'self'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def create_app(study: OnlineStudy, admin_token: str, *, max_body: int = 65_536) -> FastAPI:
    """The app serving ``study``; ``admin_token`` opens the status and export routes."""
    app = FastAPI(
        title="sbir-study online session", docs_url=None, redoc_url=None, openapi_url=None
    )
    app.state.page_files = web_assets()
    app.state.index_html = render_index(app.state.page_files["index.html"], study.protocol.texts)
    app.state.admin_digest = hashlib.sha256(admin_token.encode("utf-8")).hexdigest()
    app.state.browser_config = study.browser_config()
    app.state.study = study
    app.state.load = LoadWindow()
    app.state.starts = StartLimit(study.protocol.online.starts_per_minute)
    # The refusals kept per session, as this process knows: past the cap none is written
    # (one entry per session whose own page was refused, so bounded by the sessions).
    app.state.refusals_kept = Counter()
    # Through the decorator: add_exception_handler's annotation takes handlers of Exception
    # only, not of the one class each handles.
    app.exception_handler(RequestValidationError)(_invalid)
    app.exception_handler(StarletteHTTPException)(_http)
    app.exception_handler(ServiceError)(_refused)
    app.exception_handler(AdminLoginRequired)(ask_for_admin_login)
    # The participants' routes first: a crowd's trials are most of the requests, and
    # FastAPI tries the routes in order.
    app.include_router(participant_routes.router)
    app.include_router(page_routes.router)
    app.include_router(admin_routes.api)
    app.include_router(admin_routes.page)
    app.add_middleware(_BodyLimit, limit=max_body)
    app.add_middleware(_Headers, load=app.state.load)
    return app


class _Headers:
    """Security headers on every answer, no caching of the API, and the time the server took
    (``Server-Timing: app;dur=MS``), so that a load test can tell it from the network's; the
    same time of a participant request goes to the live load (``load``)."""

    def __init__(self, app, load: LoadWindow) -> None:
        self.app, self.load = app, load

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        began = time.perf_counter()
        path = get_route_path(scope)
        private = path.startswith(("/api/", "/admin"))

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [(k.lower().encode(), v.encode()) for k, v in _SECURITY.items()]
                if private:
                    headers.append((b"cache-control", b"no-store"))
                took = time.perf_counter() - began
                headers.append((b"server-timing", f"app;dur={took * 1000.0:.2f}".encode()))
                if counted(path):
                    self.load.request(took)
                message = {**message, "headers": headers}
            await send(message)

        return await self.app(scope, receive, send_with_headers)


class _BodyLimit:
    """Refuse (413) a request body above ``limit`` bytes, declared or streamed.

    A streamed body that grows past the limit is answered at once; the app
    then sees the client gone, and whatever it would answer is dropped.
    """

    def __init__(self, app, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        message = f"request body: expected at most {self.limit} bytes"
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            return await _refuse(scope, send, 413, message)
        seen = 0
        refused = False

        async def limited():
            nonlocal seen, refused
            if refused:
                return {"type": "http.disconnect"}
            incoming = await receive()
            if incoming["type"] == "http.request":
                seen += len(incoming.get("body", b""))
                if seen > self.limit:
                    refused = True
                    await _refuse(scope, send, 413, message)
                    return {"type": "http.disconnect"}
            return incoming

        async def guarded(outgoing):
            if not refused:
                await send(outgoing)

        return await self.app(scope, limited, guarded)


def _log_refusal(scope: Scope, status: int, message: str) -> bool:
    """One line in serve's log for a refused API request (the page's files are not logged).

    Once, with what the client was told: after a body refused for its size, the app's own
    answer (it sees the client gone) is never sent, and is not logged either. Returns
    whether this call wrote it.
    """
    if scope.get(_REFUSED):
        return False
    scope[_REFUSED] = True
    if get_route_path(scope).startswith("/api/"):
        method, path = _quoted(scope.get("method", "")), _quoted(scope.get("path", ""))
        LOG.warning("refused %s %s (%d): %s", method, path, status, _quoted(message))
    return True


def _quoted(text: str) -> str:
    """Text a client sent, for a log line: as Python writes a string's escapes (a line break
    as ``\\n``), so that no client can forge a line; plain text stays as it is."""
    return text if text.isprintable() else repr(text)


async def _keep_refused_trial(scope: Scope, status: int, message: str) -> None:
    """Keep a refused trial (``PUT api/sessions/ID/trials/N``) for the experimenter's status,
    when its page will not send it again; the service keeps it only for the session's own
    token. In the thread pool: it writes to the database."""
    found = _TRIAL_PATH.fullmatch(get_route_path(scope))
    if scope.get("method") != "PUT" or found is None or status in _NOT_KEPT:
        return
    session_id, number = found.groups()
    # ASCII digits only: str.isdigit() also takes '²', which int() refuses.
    trial = int(number) if number.isascii() and number.isdigit() and len(number) < 10 else None
    headers = dict(scope.get("headers") or [])
    authorization = headers.get(b"authorization", b"").decode("latin-1")
    scheme, token = get_authorization_scheme_param(authorization)
    if scheme.lower() != "bearer" or not token:
        return
    state = scope["app"].state
    if state.refusals_kept[session_id] >= storage.MAX_REFUSALS_PER_SESSION:
        state.load.refusal_not_written()  # a page in a loop: no write transaction for it
        return
    try:
        args = (session_id, token, trial, status, message)
        outcome = await run_in_threadpool(state.study.record_refusal, *args)
        if outcome == "kept":
            state.refusals_kept[session_id] += 1
        elif outcome == "full":  # kept by other processes, or before a restart
            state.refusals_kept[session_id] = storage.MAX_REFUSALS_PER_SESSION
    except Exception:  # the refusal is answered and logged whatever the database says
        LOG.exception("could not keep the refusal of PUT %s", _quoted(scope.get("path", "")))


async def _refusal(request: Request, status: int, message: str, headers=None) -> JSONResponse:
    """The app's answer ``{"error": message}``; a 4xx is also written to serve's log as a
    refusal (and a refused trial kept), a 5xx (an image changed on disk) as an error."""
    if 400 <= status < 500:
        if _log_refusal(request.scope, status, message):
            await _keep_refused_trial(request.scope, status, message)
    elif status >= 500:
        LOG.error("%s", message)
    return JSONResponse({"error": message}, status_code=status, headers=headers)


async def _refuse(scope: dict, send, status: int, message: str) -> None:
    """Answer ``{"error": message}`` from the middleware, before the app; logged and kept
    as above."""
    if _log_refusal(scope, status, message):
        await _keep_refused_trial(scope, status, message)
    body = json.dumps({"error": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _where(location) -> str:
    parts = [str(p) for p in location if p != "body"]
    text = ""
    for part in parts:
        text += f"[{part}]" if part.isdigit() else (f".{part}" if text else part)
    return text or "body"


async def _invalid(request: Request, error: RequestValidationError) -> JSONResponse:
    first = error.errors()[0]
    message = f"{_where(first.get('loc', ()))}: {first.get('msg', 'invalid')}"
    if first.get("type") == "json_invalid":
        message = "request body: expected a JSON object"
    return await _refusal(request, 422, message)


async def _http(request: Request, error: StarletteHTTPException) -> JSONResponse:
    message = "no such page" if error.status_code == 404 else str(error.detail)
    return await _refusal(request, error.status_code, message, getattr(error, "headers", None))


async def _refused(request: Request, error: ServiceError) -> JSONResponse:
    return await _refusal(request, error.status, str(error))
