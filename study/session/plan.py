"""Design: everything the session needs that no window does, checked before one opens.

In order: the ``--data`` folder, the participant's label
(:func:`sbir_study.study.recorder.label_of`), an existing session (never overwritten; on
resume its seed), the details given (on resume they must agree with those recorded); then
the seed, the list of main pairs (:mod:`.lists`), the trial list and a simulated
participant's answers; last the display, so that without one the session stops with one
line before PsychoPy opens anything.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from sbir_study.foundation.checks import InputError

from ..participants import MISSING, check_details
from ..protocol import Protocol
from ..recorder import check_dataset_folder, label_of, recorded_details, refuse_recorded
from ..trials import build_trials, draw_seed
from .lists import PairList, choose_pair_list
from .simulated import simulated_answers

if TYPE_CHECKING:
    from sbir_study.stimuli import StimulusSet

__all__ = ["SessionPlan", "plan_session"]


@dataclass(frozen=True)
class SessionPlan:
    """One participant's session as decided before its window opens."""

    protocol: Protocol
    stimulus_set: StimulusSet
    data: str | Path  # the BIDS dataset folder
    label: str  # the participant's BIDS label
    source_id: str  # the participant's id as given, of which the label is made
    path: Path  # the session's _beh.tsv
    resume: bool
    simulate: bool
    given: dict[str, str]  # participant details given on the command line, checked
    seed: int
    pair_list: PairList  # the list of main pairs the participant rates
    trials: pd.DataFrame
    answers: pd.DataFrame | None  # the simulated participant's, when simulated


def plan_session(
    protocol: Protocol,
    stimulus_set: StimulusSet,
    participant: str,
    data: str | Path,
    *,
    resume: bool,
    simulate: bool,
    seed: int | None,
    details: Mapping[str, str | None] | None,
    pair_list: int | None = None,
) -> SessionPlan:
    """Check every input that needs no window, then the display; the session's plan."""
    from sbir_study.foundation import bids

    check_dataset_folder(data)
    label = label_of(data, participant)
    path = bids.beh_path(data, label, protocol.task)
    if resume:
        seed = _recorded_seed(path)
    else:
        refuse_recorded(path, label)
    given = check_details(dict(details or {}), protocol.participants.details)
    if resume:
        given = _details_on_resume(data, label, given)
    if seed is None:
        seed = draw_seed()
    manifest = stimulus_set.manifest
    chosen = choose_pair_list(
        protocol,
        manifest,
        data,
        requested=pair_list,
        resumed=path.with_suffix(".json") if resume else None,
    )
    trials = build_trials(protocol, chosen.manifest, seed, practice=True, practice_set=manifest)
    answers = simulated_answers(protocol, stimulus_set, trials, seed) if simulate else None

    from ..display import require_display

    require_display()
    if not protocol.dataset.authors and not (Path(data) / "dataset_description.json").exists():
        warnings.warn(
            f"the protocol {protocol.name!r} names no authors ([dataset] authors); the new "
            "dataset's dataset_description.json will name none",
            stacklevel=3,  # the caller of run_session
        )
    return SessionPlan(
        protocol=protocol,
        stimulus_set=stimulus_set,
        data=data,
        label=label,
        source_id=participant,
        path=path,
        resume=resume,
        simulate=simulate,
        given=given,
        seed=seed,
        pair_list=chosen,
        trials=trials,
        answers=answers,
    )


def _recorded_seed(path: Path) -> int:
    sidecar = path.with_suffix(".json")
    if not path.exists():
        raise InputError(f"{path}: no session to resume")
    try:
        return int(json.loads(sidecar.read_text(encoding="utf-8"))["Seed"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise InputError(f"{sidecar}: Seed: cannot be read ({error}); cannot resume") from None


def _details_on_resume(data, label: str, given: dict[str, str]) -> dict[str, str]:
    """Details were recorded when the session began; given again, they must agree."""
    recorded = recorded_details(data, label)
    for name, value in given.items():
        if recorded.get(name, MISSING) != value:
            raise InputError(
                f"--{name}: participants.tsv records {recorded.get(name, MISSING)!r} for "
                f"sub-{label}, not {value!r}; a resumed session keeps what was recorded (leave "
                f"--{name} out, or correct participants.tsv by hand)"
            )
    return {}
