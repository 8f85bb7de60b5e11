"""Who may call the server's routes, declared once as FastAPI dependencies, and the study.

A participant's routes take :data:`SessionToken`, the session's token from
``Authorization: Bearer TOKEN`` (:class:`fastapi.security.HTTPBearer`); the service
checks it against the session (401 when missing, 403 another session's, 404 no
such session). That check is the service's, not a dependency's: a dependency
answers before the request body is validated, and a malformed body or a rating
off the scale is answered 422 first, whatever the token.

The experimenter's routes need the admin token given to ``sbir-study serve``, as a
Bearer token or as the password of HTTP Basic auth with any user name, which is
what a browser asks for (:class:`fastapi.security.HTTPBasic`, the credentials read
by :func:`basic_credentials`). :func:`require_admin` guards the JSON API (401 with
``{"error": ...}``, in serve's log), :func:`require_admin_login` the status page
(401 with the browser's login prompt, :func:`ask_for_admin_login`). Both schemes run
with ``auto_error=False``, so that their own answer (``{"detail": "Not
authenticated"}``) never reaches a client.
"""

# No ``from __future__ import annotations``: FastAPI reads these signatures at run time, and
# the annotations of a callable object's ``__call__`` cannot be resolved from strings.
import asyncio
import base64
import hashlib
import hmac
import logging
from typing import Annotated

from fastapi import Depends, Request
from fastapi.requests import HTTPConnection
from fastapi.responses import Response
from fastapi.security import (
    HTTPAuthorizationCredentials,
    HTTPBasic,
    HTTPBasicCredentials,
    HTTPBearer,
)
from fastapi.security.utils import get_authorization_scheme_param

from .service import OnlineStudy, ServiceError

LOG = logging.getLogger("sbir_study.study.online")

__all__ = [
    "AdminLoginRequired",
    "SessionToken",
    "StudyDep",
    "admin_token_given",
    "ask_for_admin_login",
    "basic_credentials",
    "get_study",
    "require_admin",
    "require_admin_login",
    "session_token",
]


def basic_credentials(authorization: str | None) -> HTTPBasicCredentials | None:
    """The credentials of an ``Authorization: Basic ...`` header, read as UTF-8; None for
    another scheme or a malformed header (not base64, not UTF-8, no ``:``).

    Hand-written because :class:`~fastapi.security.HTTPBasic` reads ASCII only
    (fastapi/fastapi#3235), where browsers send UTF-8 (RFC 7617), and refuses a
    malformed header itself, in its own words, even with ``auto_error=False``.
    It reads an ASCII header as HTTPBasic does.

    Examples
    --------
    >>> import asyncio, base64
    >>> from starlette.requests import Request
    >>> def basic(text: str) -> str:
    ...     return "Basic " + base64.b64encode(text.encode("utf-8")).decode("ascii")
    >>> basic_credentials(basic("lab:geheim-für-das-labor")).password
    'geheim-für-das-labor'
    >>> [basic_credentials(h) for h in ("Basic !!!", basic("no-colon"), "Bearer x", None)]
    [None, None, None, None]
    >>> header = basic("lab:admin:token")
    >>> request = Request({"type": "http", "headers": [(b"authorization", header.encode())]})
    >>> asyncio.run(HTTPBasic()(request)) == basic_credentials(header)
    True
    """
    scheme, param = get_authorization_scheme_param(authorization)
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(param, validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return None
    username, separator, password = decoded.partition(":")
    return HTTPBasicCredentials(username=username, password=password) if separator else None


class _HTTPBasic(HTTPBasic):
    """HTTP Basic whose credentials are read by :func:`basic_credentials`."""

    # fastapi's HTTPBasic narrows HTTPBase's return type itself; this keeps HTTPBasic's.
    async def __call__(  # type: ignore[override]
        self, request: HTTPConnection
    ) -> HTTPBasicCredentials | None:
        return basic_credentials(request.headers.get("Authorization"))


_bearer = HTTPBearer(auto_error=False)
_basic = _HTTPBasic(realm="sbir-study", auto_error=False)

BearerCredentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
BasicCredentials = Annotated[HTTPBasicCredentials | None, Depends(_basic)]


async def get_study(request: Request) -> OnlineStudy:
    """The study the app serves (set by :func:`~.app.create_app`)."""
    return request.app.state.study


StudyDep = Annotated[OnlineStudy, Depends(get_study)]


async def session_token(credentials: BearerCredentials) -> str | None:
    """The Bearer token of the request, or None (the service answers 401 for none)."""
    return credentials.credentials if credentials else None


SessionToken = Annotated[str | None, Depends(session_token)]


#: Seconds a wrong admin token waits for its answer: a guess a second per connection.
FAILED_LOGIN_DELAY_S = 1.0
#: What a browser's ``Sec-Fetch-Site`` says of a request the experimenter made: from the
#: status page itself, or typed in or bookmarked (``none``); a client that sends none is no
#: browser.
_OWN_SITE = ("same-origin", "none")


def _from_another_site(request: Request) -> bool:
    """Whether a browser sent the request for a page of another site (Fetch Metadata's
    resource isolation policy): anything but a link followed from it to one of our pages
    (a top-level GET navigation, whose answer that site cannot read)."""
    site = request.headers.get("sec-fetch-site")
    if site is None or site in _OWN_SITE:
        return False
    followed = request.headers.get("sec-fetch-mode") == "navigate" and request.method == "GET"
    return not (followed and request.headers.get("sec-fetch-dest", "document") == "document")


async def admin_token_given(
    request: Request, bearer: BearerCredentials, basic: BasicCredentials
) -> bool:
    """Whether the request carries the admin token, as a Bearer token or a Basic password.

    A request a page of another site made (``Sec-Fetch-Site``; a link followed from it
    apart) is refused (403) whatever it carries: a page elsewhere cannot make the
    experimenter's browser fetch, post to or embed the study's routes. A wrong token is
    written to serve's log with the client's address and answered only after
    :data:`FAILED_LOGIN_DELAY_S`.
    """
    if _from_another_site(request):
        raise ServiceError(403, "the experimenter's routes refuse requests from other sites")
    given = (bearer.credentials if bearer else None) or (basic.password if basic else None)
    digest = hashlib.sha256((given or "").encode("utf-8")).hexdigest()
    if given and hmac.compare_digest(digest, request.app.state.admin_digest):
        return True
    if given:
        client = request.client.host if request.client else "unknown"
        LOG.warning("failed admin login from %s to %r", client, request.url.path)
        await asyncio.sleep(FAILED_LOGIN_DELAY_S)
    return False


AdminTokenGiven = Annotated[bool, Depends(admin_token_given)]


async def require_admin(given: AdminTokenGiven) -> None:
    """The experimenter's API: without the admin token, 401 ``{"error": ...}``."""
    if not given:
        raise ServiceError(401, "this route needs the admin token given to sbir-study serve")


class AdminLoginRequired(Exception):
    """The status page was asked for without the admin token."""


async def require_admin_login(given: AdminTokenGiven) -> None:
    """The status page: without the admin token, the browser's login prompt."""
    if not given:
        raise AdminLoginRequired


async def ask_for_admin_login(request: Request, error: AdminLoginRequired) -> Response:
    """The answer to :class:`AdminLoginRequired`: 401 asking for HTTP Basic credentials."""
    return Response(
        "admin token required", status_code=401, headers=_basic.make_authenticate_headers()
    )
