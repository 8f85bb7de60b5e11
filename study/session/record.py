"""The session's record: opened once the window is up, completed at the end.

The sidecar holds what the session ran with (protocol, the instruction texts shown, stimulus
set, seed, refresh and timing mode, keyboard, software); at the end, the status, the trials
recorded, the rating keys too late for their trial, and what stopped an interrupted session.
"""

from __future__ import annotations

from pathlib import Path

from sbir_study.foundation import bids
from sbir_study.foundation.checks import InputError
from sbir_study.foundation.provenance import SESSION_PACKAGES, software_versions

from ..protocol import protocol_dict
from ..recorder import SessionRecorder
from ..screens import instruction_texts
from .loop import TrialLoop
from .plan import SessionPlan
from .window import DisplayTiming

__all__ = ["finish_record", "open_record"]


def open_record(
    plan: SessionPlan,
    timing: DisplayTiming,
    *,
    realtime: bool,
    details: dict[str, str],
    protocol_file: str | Path,
) -> SessionRecorder:
    """Start (or, on resume, reopen) the session's BIDS record with its sidecar."""
    protocol, stimulus_set = plan.protocol, plan.stimulus_set
    session = {
        "TaskName": protocol.task,
        "Protocol": protocol_dict(protocol),
        # The words this participant read, whatever a later release would write.
        "InstructionTexts": instruction_texts(protocol),
        "ProtocolFile": str(protocol_file),
        "StimulusSet": str(stimulus_set.folder),
        "StimulusSetDigest": stimulus_set.digest,
        "Seed": int(plan.seed),
        **plan.pair_list.sidecar(),
        "MeasuredRefreshRate": timing.refresh_hz,
        "FramePeriodJitterMs": timing.jitter_ms,
        "TimingMode": timing.mode,
        "KeyboardBackend": "ptb",
        "RealtimePriority": realtime,
        "Simulated": bool(plan.simulate),
        "Origin": "run-simulate" if plan.simulate else "lab",
        "Software": software_versions(SESSION_PACKAGES),
        **bids.scale_sidecar(protocol.scale),
    }
    order = plan.trials[["trial", "phase", "sketch_id", "image_id"]].itertuples(index=False)
    dataset = {"Name": protocol.dataset.name, "Authors": list(protocol.dataset.authors)}
    return SessionRecorder.open(
        plan.data,
        plan.label,
        task=protocol.task,
        session=session,
        trial_order=list(order),
        resume=plan.resume,
        details={**plan.given, **details},
        dataset=dataset,
        source_id=plan.source_id,
    )


def finish_record(
    recorder: SessionRecorder,
    loop: TrialLoop,
    status: str,
    error: BaseException | None = None,
) -> None:
    """Complete the sidecar: ``status``, the trials recorded, the late rating keys, and ``error``,
    what stopped the session. A file gone is raised as InputError; the caller raises any other.
    """
    stopped = {"StoppedBy": f"{type(error).__name__}: {error}"} if error is not None else {}
    recorder.finish(
        status, TrialsRecorded=loop.recorded, RatingKeysReceivedLate=loop.late_keys, **stopped
    )
    if isinstance(error, OSError) and getattr(error, "filename", None):
        raise InputError(
            f"{error.filename}: {error.strerror or error} during the session; its "
            f"{loop.recorded} trials so far are recorded in {recorder.path} (continue "
            "with --resume once the file is back)"
        ) from None
