"""The HTTP side of the online study: a FastAPI app over :class:`~.service.OnlineStudy`.

Routes (all relative, so that the study can sit under a path behind a proxy):

=====================================  ==========================================================
``GET /``                              the experiment page
``GET /static/NAME``                   our page's script, plugin and style
``GET /vendor/NAME``                   jsPsych and its plugins, from ``web/node_modules``
``GET /stimuli/PATH``                  an image the set's manifest names (nothing else)
``GET /api/config``                    the protocol's settings for the page
``POST /api/sessions``                 start a session (consent given): its trials and token
``GET /api/sessions/ID``               the session's state, to resume it (token)
``PUT /api/sessions/ID/trials/N``      store trial N once (token)
``POST /api/sessions/ID/finish``       complete, or end after the quit key (token)
``GET /api/admin/status``, ``/admin``  the experimenter's status, JSON and page (admin token)
``GET /api/admin/export.zip``          the BIDS dataset so far (admin token)
``GET /healthz``                       ``ok`` (for a proxy's health check)
=====================================  ==========================================================

Every refusal is a 4xx answer with ``{"error": "<one line naming the field>"}``.
Request bodies above ``max_body`` bytes are refused (413) before they are read
whole. Every refusal of a request to the API is also written to serve's log (logger
``sbir_study.study.online``, one line with the method, path, status and that message), so that
the experimenter sees a participant's trial refused, not only the participant's page.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import time
from pathlib import Path
from typing import Annotated, Literal

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from .service import OnlineStudy, ServiceError

__all__ = ["VENDOR", "WEB", "create_app", "web_assets"]

WEB = Path(__file__).parent / "web"

#: Where refusals are written (``sbir-study serve`` sends it to stderr with uvicorn's own).
LOG = logging.getLogger("sbir_study.study.online")
_REFUSED = "sbir_study.refused"  # in a request's scope once its refusal is logged

#: The page's third-party scripts: served name -> file under ``web/node_modules`` (npm ci).
VENDOR = {
    "jspsych.js": "jspsych/dist/index.browser.min.js",
    "jspsych.css": "jspsych/css/jspsych.css",
    **{
        f"plugin-{name}.js": f"@jspsych/plugin-{name}/dist/index.browser.min.js"
        for name in (
            "preload",
            "fullscreen",
            "browser-check",
            "html-keyboard-response",
            "html-button-response",
            "survey-html-form",
        )
    },
}

#: Our own files of the page.
OWN = {
    "experiment.js": "experiment.js",
    "plugin-sbir-rating.js": "plugin-sbir-rating.js",
    "style.css": "style.css",
}

_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
_SECURITY = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data: blob:; "
    "style-src 'self' 'unsafe-inline'; script-src 'self'; connect-src 'self'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

Time = Annotated[float, Field(allow_inf_nan=False, ge=0.0, le=1e9)]
Text = Annotated[str, Field(max_length=200)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class KeyEventIn(_Model):
    code: Annotated[str, Field(max_length=32)]
    key: Annotated[str, Field(max_length=32)]
    t: Time


class TrialIn(_Model):
    sketch_id: Text
    image_id: Text
    onset: Time
    blank_onset: Time
    next_onset: Time
    # The page's clock restarts with a reload: a resumed session began before its zero.
    session_start: Annotated[float, Field(allow_inf_nan=False, ge=-1e9, le=1e9)]
    frames: Annotated[list[Time], Field(max_length=5000)]
    events: Annotated[list[KeyEventIn], Field(max_length=500)]
    paused_before: Annotated[float, Field(allow_inf_nan=False, ge=0.0, le=1e7)]
    rating: int | None


class UrlParametersIn(_Model):
    PROLIFIC_PID: Annotated[str, Field(max_length=64)] | None = None
    STUDY_ID: Annotated[str, Field(max_length=64)] | None = None
    SESSION_ID: Annotated[str, Field(max_length=64)] | None = None
    participant: Annotated[str, Field(max_length=64)] | None = None


class DetailsIn(_Model):
    age: Annotated[int, Field(ge=5, le=120)] | None = None
    sex: Literal["male", "female", "other"] | None = None
    handedness: Literal["right", "left", "ambidextrous"] | None = None


class EnvironmentIn(_Model):
    user_agent: Annotated[str, Field(max_length=512)] = ""
    browser: Annotated[str, Field(max_length=64)] = ""
    browser_version: Annotated[str, Field(max_length=64)] = ""
    os: Annotated[str, Field(max_length=64)] = ""
    mobile: bool = False
    screen_width: Annotated[int, Field(ge=0, le=100_000)] = 0
    screen_height: Annotated[int, Field(ge=0, le=100_000)] = 0
    window_width: Annotated[int, Field(ge=0, le=100_000)] = 0
    window_height: Annotated[int, Field(ge=0, le=100_000)] = 0
    device_pixel_ratio: Annotated[float, Field(ge=0, le=100)] = 1.0
    refresh_hz: Annotated[float, Field(ge=0, le=1000)] | None = None
    fullscreen: bool = False


class SessionIn(_Model):
    participant: Annotated[str, Field(min_length=1, max_length=64)]
    token: Annotated[str, Field(min_length=32, max_length=128, pattern=r"^[A-Za-z0-9_-]+$")]
    url_parameters: UrlParametersIn = UrlParametersIn()
    details: DetailsIn = DetailsIn()
    environment: EnvironmentIn = EnvironmentIn()


class FinishIn(_Model):
    status: Literal["complete", "incomplete"]


def web_assets() -> dict[str, Path]:
    """Every file the page needs -> its path; refuses to start when npm's files are missing."""
    from sbir_study.foundation.checks import InputError

    files = {f"vendor/{n}": WEB / "node_modules" / r for n, r in VENDOR.items()}
    files |= {f"static/{name}": WEB / relative for name, relative in OWN.items()}
    files["index.html"] = WEB / "index.html"
    missing = [path for path in files.values() if not path.is_file()]
    if missing:
        raise InputError(
            f"{missing[0]}: missing; the page's scripts are installed by `make install` "
            f"(npm ci --prefix {WEB})"
        )
    return files


class _Headers:
    """Security headers on every answer, no caching of the API, and the time the server took
    (``Server-Timing: app;dur=MS``), so that a load test can tell it from the network's."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        began = time.perf_counter()
        path = scope.get("path", "")
        private = path.startswith(("/api/", "/admin"))

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [(k.lower().encode(), v.encode()) for k, v in _SECURITY.items()]
                if private:
                    headers.append((b"cache-control", b"no-store"))
                took = (time.perf_counter() - began) * 1000.0
                headers.append((b"server-timing", f"app;dur={took:.2f}".encode()))
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


def _log_refusal(scope: dict, status: int, message: str) -> None:
    """One line in serve's log for a refused API request (the page's files are not logged).

    Once, with what the client was told: after a body refused for its size, the app's own
    answer (it sees the client gone) is never sent, and is not logged either.
    """
    if scope.get(_REFUSED):
        return
    scope[_REFUSED] = True
    path = scope.get("path", "")
    if path.startswith("/api/"):
        LOG.warning("refused %s %s (%d): %s", scope.get("method", ""), path, status, message)


def _refusal(request: Request, status: int, message: str, headers=None) -> JSONResponse:
    """The app's answer ``{"error": message}``; a 4xx is also written to serve's log."""
    if 400 <= status < 500:
        _log_refusal(request.scope, status, message)
    return JSONResponse({"error": message}, status_code=status, headers=headers)


async def _refuse(scope: dict, send, status: int, message: str) -> None:
    """Answer ``{"error": message}`` from the middleware, before the app; logged as above."""
    _log_refusal(scope, status, message)
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


def create_app(study: OnlineStudy, admin_token: str, *, max_body: int = 65_536) -> FastAPI:
    """The app serving ``study``; ``admin_token`` opens the status and export routes."""
    files = web_assets()
    admin_digest = hashlib.sha256(admin_token.encode("utf-8")).hexdigest()
    config = study.browser_config()
    stimulus_files = study.stimulus_files
    cache: dict[str, bytes] = {}
    scale_high = study.protocol.scale[1]
    app = FastAPI(
        title="sbir-study online session", docs_url=None, redoc_url=None, openapi_url=None
    )

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, error: RequestValidationError):
        first = error.errors()[0]
        message = f"{_where(first.get('loc', ()))}: {first.get('msg', 'invalid')}"
        if first.get("type") == "json_invalid":
            message = "request body: expected a JSON object"
        return _refusal(request, 422, message)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, error: StarletteHTTPException):
        message = "no such page" if error.status_code == 404 else str(error.detail)
        return _refusal(request, error.status_code, message, getattr(error, "headers", None))

    @app.exception_handler(ServiceError)
    async def _refused(request: Request, error: ServiceError):
        return _refusal(request, error.status, str(error))

    def _file(name: str) -> Response:
        path = files.get(name)
        if path is None:
            return JSONResponse({"error": f"no file {name!r}"}, status_code=404)
        media = _TYPES.get(path.suffix, "text/html; charset=utf-8")
        return FileResponse(path, media_type=media, headers={"Cache-Control": "no-cache"})

    @app.get("/", include_in_schema=False)
    async def index():
        return _file("index.html")

    @app.get("/healthz", include_in_schema=False)
    async def healthz():
        return Response("ok", media_type="text/plain")

    @app.get("/static/{name}")
    async def static(name: str):
        return _file(f"static/{name}")

    @app.get("/vendor/{name}")
    async def vendor(name: str):
        return _file(f"vendor/{name}")

    @app.get("/stimuli/{path:path}")
    async def stimulus(path: str):
        expected = stimulus_files.get(path)
        if expected is None:
            return JSONResponse({"error": f"no stimulus {path!r} in the set"}, status_code=404)
        data = cache.get(path)
        if data is None:
            data = await run_in_threadpool(study.stimulus_set.path(path).read_bytes)
            if hashlib.sha256(data).hexdigest() != expected:
                message = (
                    f"stimulus {path!r} changed on disk since the set was checked; it is not served"
                )
                LOG.error("%s", message)
                return JSONResponse({"error": message}, status_code=500)
            cache[path] = data
        media = "image/png" if path.lower().endswith(".png") else "image/jpeg"
        return Response(
            data,
            media_type=media,
            headers={"Cache-Control": "private, max-age=86400", "ETag": f'"{expected}"'},
        )

    @app.get("/api/config")
    async def api_config():
        return config

    @app.post("/api/sessions")
    async def start(body: SessionIn):
        state, created = await run_in_threadpool(
            study.create_session,
            body.participant,
            body.token,
            details=body.details.model_dump(),
            environment=body.environment.model_dump(),
            url_parameters=body.url_parameters.model_dump(exclude_none=True),
        )
        return JSONResponse(state, status_code=201 if created else 200)

    @app.get("/api/sessions/{session_id}")
    async def resume(session_id: str, request: Request):
        return await run_in_threadpool(study.session_state, session_id, _bearer(request))

    @app.put("/api/sessions/{session_id}/trials/{trial}")
    async def put_trial(session_id: str, trial: int, body: TrialIn, request: Request):
        if body.rating is not None and not 1 <= body.rating <= scale_high:
            raise ServiceError(422, f"rating: expected 1..{scale_high} or null, got {body.rating}")
        report = body.model_dump()
        created = await run_in_threadpool(
            study.store_trial, session_id, _bearer(request), trial, report
        )
        return JSONResponse(
            {"trial": trial, "stored": True, "duplicate": not created},
            status_code=201 if created else 200,
        )

    @app.post("/api/sessions/{session_id}/finish")
    async def finish(session_id: str, body: FinishIn, request: Request):
        return await run_in_threadpool(study.finish, session_id, _bearer(request), body.status)

    def _admin(request: Request) -> None:
        given = _bearer(request) or _basic_password(request)
        digest = hashlib.sha256((given or "").encode("utf-8")).hexdigest()
        if not given or not hmac.compare_digest(digest, admin_digest):
            raise ServiceError(401, "this route needs the admin token given to sbir-study serve")

    @app.get("/api/admin/status")
    async def admin_status(request: Request):
        _admin(request)
        return await run_in_threadpool(study.status)

    @app.get("/admin")
    async def admin_page(request: Request):
        try:
            _admin(request)
        except ServiceError:
            return Response(
                "admin token required",
                status_code=401,
                headers={"WWW-Authenticate": 'Basic realm="sbir-study"'},
            )
        from .status import status_page

        return HTMLResponse(status_page(await run_in_threadpool(study.status)))

    @app.get("/api/admin/export.zip")
    async def admin_export(request: Request):
        _admin(request)
        from .export import export_zip

        data = await run_in_threadpool(export_zip, study.engine, study.study_id)
        return Response(
            data,
            media_type="application/zip",
            headers={
                "Content-Disposition": f'attachment; filename="{study.protocol.task}-online.zip"'
            },
        )

    app.state.study = study
    app.add_middleware(_BodyLimit, limit=max_body)
    app.add_middleware(_Headers)
    return app


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    return value.strip() or None if scheme.lower() == "bearer" else None


def _basic_password(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return None
    return decoded.partition(":")[2] or None
