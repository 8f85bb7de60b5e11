"""The experiment page and its files: our scripts, jsPsych's, and the set's images.

Public routes (no token): the page, what it loads, and ``healthz`` for a proxy.
The page itself is rendered once, in the protocol's words (:func:`render_index`).
Only the files listed here and the images the set's manifest names are served,
each checked: the page's files exist at start (:func:`web_assets`), an image's
SHA-256 is compared with the set's ``SHA256SUMS`` when it is first read
(:meth:`~.service.OnlineStudy.stimulus`).
"""

from __future__ import annotations

import html
import string
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, Response

from ..texts import Texts
from .deps import StudyDep
from .service import ServiceError

__all__ = ["OWN", "VENDOR", "WEB", "render_index", "router", "web_assets"]

WEB = Path(__file__).parent / "web"

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

router = APIRouter()


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


# The words the page shows before (or without) the settings it asks the server for:
# filled into index.html, as $name, when the app is made.
_INDEX_TEXTS = ("language", "page_title", "needs_javascript", "went_wrong", "settings_failed")


def render_index(path: Path, texts: Texts) -> bytes:
    """index.html in the protocol's words: its language and title, the line shown without
    JavaScript, and what the page says when it cannot load the study's settings."""
    values = {name: html.escape(getattr(texts, name), quote=True) for name in _INDEX_TEXTS}
    return string.Template(path.read_text(encoding="utf-8")).substitute(values).encode("utf-8")


def _file(request: Request, name: str) -> Response:
    path = request.app.state.page_files.get(name)
    if path is None:
        raise ServiceError(404, f"no file {name!r}")
    media = _TYPES.get(path.suffix, "text/html; charset=utf-8")
    return FileResponse(path, media_type=media, headers={"Cache-Control": "no-cache"})


@router.get("/")
async def index(request: Request) -> Response:
    return Response(
        request.app.state.index_html,
        media_type="text/html; charset=utf-8",
        headers={"Cache-Control": "no-cache"},
    )


@router.get("/healthz")
async def healthz() -> Response:
    return Response("ok", media_type="text/plain")


@router.get("/static/{name}")
async def static(name: str, request: Request) -> Response:
    return _file(request, f"static/{name}")


@router.get("/vendor/{name}")
async def vendor(name: str, request: Request) -> Response:
    return _file(request, f"vendor/{name}")


@router.get("/stimuli/{path:path}")
def stimulus(path: str, study: StudyDep) -> Response:
    data = study.stimulus(path)
    media = "image/png" if path.lower().endswith(".png") else "image/jpeg"
    return Response(
        data,
        media_type=media,
        headers={
            "Cache-Control": "private, max-age=86400",
            "ETag": f'"{study.stimulus_files[path]}"',
        },
    )
