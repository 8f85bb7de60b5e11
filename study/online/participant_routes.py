"""The participant's API: the page's settings, and a session from start to finish.

Every route but ``config`` belongs to one session, and takes its token
(:data:`~.deps.SessionToken`); each only calls the service, in FastAPI's thread
pool (plain ``def``), but a trial's, the route a crowd sends most: it waits for its group
commit in the event loop (``async def``), with no thread of the pool held per trial.
The request bodies are the models below, strict: a value of
another JSON type than the field's (``true`` or ``"3"`` for a rating, ``"5"`` for a
time; an integer is taken for a number), unknown fields, strings past their length,
lists past theirs and numbers that are not finite or out of range are refused (422,
naming the field) before the service is asked. Whether a trial's times are plausible
(within the session's life, after the previous trial's) is the service's check
(:func:`.plausibility.check_trial_times`).
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from .deps import SessionToken, StudyDep
from .service import FinishStatus, ServiceError

__all__ = [
    "DetailsIn",
    "EnvironmentIn",
    "FinishIn",
    "KeyEventIn",
    "ParticipantIdIn",
    "ScreenKeyIn",
    "SessionIn",
    "TrialIn",
    "UrlParametersIn",
    "router",
]

Time = Annotated[float, Field(allow_inf_nan=False, ge=0.0, le=1e9)]
Text = Annotated[str, Field(max_length=200)]


class _Model(BaseModel):
    # Strict: pydantic's lax mode would store a rating sent as true or "3" as 1 or 3.
    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)


#: The page's screens a key can be pressed on (``window.sbir.phase`` in experiment.js): a
#: pair and its blank (``trial``), the instructions, a pause or scheduled break, the quit
#: question, another message, and the last screen while the session is saved.
Screen = Literal["trial", "instructions", "message", "pause", "quit", "saving"]


class KeyEventIn(_Model):
    code: Annotated[str, Field(max_length=32)]
    key: Annotated[str, Field(max_length=32)]
    t: Time
    # The screen on view when the key went down, for the key log (a page of an earlier
    # version sends none).
    screen: Screen | None = None


class ScreenKeyIn(KeyEventIn):
    """A key-down on one of the page's screens between the pairs, and which screen it was."""

    screen: Screen


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
    # Keys pressed since the previous pair's report, before this pair's onset (the key log's).
    screen_events: Annotated[list[ScreenKeyIn], Field(max_length=500)] = []
    paused_before: Annotated[float, Field(allow_inf_nan=False, ge=0.0, le=1e7)]
    rating: int | None
    # Trials the page holds behind this one, not yet acknowledged: for the status's live load
    # only, neither stored nor part of the trial (a retry may carry another count).
    queued: Annotated[int, Field(strict=True, ge=0, le=100_000)] | None = None


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


class ParticipantIdIn(_Model):
    # Longer than any id is taken here so that the service refuses it in its own words.
    participant: Annotated[str, Field(max_length=1000)]


class SessionIn(_Model):
    # The id as the page was given it (the service makes its label).
    participant: Annotated[str, Field(min_length=1, max_length=64)]
    token: Annotated[str, Field(min_length=32, max_length=128, pattern=r"^[A-Za-z0-9_-]+$")]
    url_parameters: UrlParametersIn = UrlParametersIn()
    details: DetailsIn = DetailsIn()
    environment: EnvironmentIn = EnvironmentIn()


class FinishIn(_Model):
    status: FinishStatus
    # The keys of the last screens (the quit question answered, the end), for the key log;
    # on the page's clock, whose session began at session_start.
    events: Annotated[list[ScreenKeyIn], Field(max_length=500)] = []
    session_start: Annotated[float, Field(allow_inf_nan=False, ge=-1e9, le=1e9)] | None = None


router = APIRouter(prefix="/api")


@router.get("/config", response_model=None)
async def config(request: Request) -> dict:
    # Built once by create_app.
    return request.app.state.browser_config


@router.post("/participant-id", response_model=None)
def check_participant_id(body: ParticipantIdIn, study: StudyDep) -> dict:
    """Whether a session can start under this id (asked on the page's first screen)."""
    study.check_participant_id(body.participant)
    return {"participant": body.participant, "accepted": True}


@router.post("/sessions")
def start(request: Request, body: SessionIn, study: StudyDep) -> Response:
    client = request.client.host if request.client else ""
    if not request.app.state.starts.take(client):
        raise ServiceError(429, study.protocol.texts.too_many_starts)
    session_id, created = study.start_session(
        body.participant,
        body.token,
        details=body.details.model_dump(),
        environment=body.environment.model_dump(),
        url_parameters=body.url_parameters.model_dump(exclude_none=True),
    )
    state = study.session_state_json(session_id, body.token)
    return Response(state, status_code=201 if created else 200, media_type="application/json")


@router.get("/sessions/{session_id}")
def resume(session_id: str, token: SessionToken, study: StudyDep) -> Response:
    return Response(study.session_state_json(session_id, token), media_type="application/json")


#: A trial's number in its address, as the page writes it: ASCII digits (not ``1.0``,
#: ``+1`` or another script's digits, which ``int`` would also read).
TrialNumber = Annotated[str, Path(pattern=r"^[0-9]{1,9}$")]


@router.put("/sessions/{session_id}/trials/{trial}")
async def put_trial(
    request: Request,
    session_id: str,
    trial: TrialNumber,
    body: TrialIn,
    token: SessionToken,
    study: StudyDep,
) -> JSONResponse:
    # As sent: a field the page left out (an earlier version's) is not stored as its default.
    report = body.model_dump(exclude={"queued"}, exclude_unset=True)
    created = await study.store_trial_async(session_id, token, int(trial), report)
    if body.queued is not None:  # a page's report counts once its trial is accepted
        request.app.state.load.page_queue(session_id, body.queued)
    return JSONResponse(
        {"trial": int(trial), "stored": True, "duplicate": not created},
        status_code=201 if created else 200,
    )


@router.post("/sessions/{session_id}/finish", response_model=None)
def finish(session_id: str, body: FinishIn, token: SessionToken, study: StudyDep) -> dict:
    final = {
        "session_start": body.session_start,
        "events": [event.model_dump() for event in body.events],
    }
    return study.finish(session_id, token, body.status, final_events=final)
