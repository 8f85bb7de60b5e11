"""The experimenter's routes: the study's status (JSON and a page) with the live load of the
process that answers (:mod:`.metrics`), its participants (CSV) and its BIDS export.

Each needs the admin token, declared once per router: :data:`api` answers
without it as the rest of the API does (401, ``{"error": ...}``), :data:`page`
with the browser's login prompt (HTTP Basic; the token is the password).
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response

from .deps import StudyDep, require_admin, require_admin_login
from .status import participant_table_csv, status_page

__all__ = ["api", "page"]

api = APIRouter(prefix="/api/admin", dependencies=[Depends(require_admin)])
page = APIRouter(dependencies=[Depends(require_admin_login)])


@api.get("/status", response_model=None)
def status(request: Request, study: StudyDep) -> dict:
    return {**study.status(), "load": request.app.state.load.view()}


@api.get("/export.zip")
def export(study: StudyDep) -> Response:
    from .export import export_zip

    return Response(
        export_zip(study.engine, study.study_id),
        media_type="application/zip",
        headers={"Content-Disposition": f'attachment; filename="{study.protocol.task}-online.zip"'},
    )


@page.get("/admin")
def admin_page(request: Request, study: StudyDep) -> HTMLResponse:
    view = {**study.status(), "load": request.app.state.load.view()}
    return HTMLResponse(status_page(view, study.participants()))


@page.get("/admin/participants.csv")
def participants_csv(study: StudyDep) -> Response:
    return Response(
        participant_table_csv(study.participants()),
        media_type="text/csv; charset=utf-8",
        headers={
            "Content-Disposition": f'attachment; filename="{study.protocol.task}-participants.csv"'
        },
    )
