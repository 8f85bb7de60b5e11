"""The online study, without HTTP: one protocol on one checked stimulus set, registered in
the database.

:class:`OnlineStudy`'s methods are the server's operations, each in one database
transaction, so that a request changes everything it should or nothing; a refusal is a
:class:`ServiceError` carrying the HTTP status and one line naming the field at fault.
The study is put together from its parts: :mod:`.session_starts`, :mod:`.session_reads`,
:mod:`.trial_writes` and :mod:`.endings`; here are its set-up, what the page is configured
with, and the experimenter's view (computed in :mod:`.status`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from ..protocol import Protocol, protocol_dict
from ..responses import rating_key_map
from ..screens import instruction_texts
from . import queries, storage
from .assignment import list_manifest, split_lists
from .browser_keys import BROWSER_CODES
from .endings import ENDING_OF, ENDINGS, FINISH_STATUSES, Endings, FinishStatus
from .orders import OrderJson
from .scoring import LATE_FLIP_MAX_S
from .service_base import ServiceError
from .session_reads import SessionReads
from .session_starts import SessionStarts
from .status import participant_table, study_status
from .trial_writes import TrialWrites

if TYPE_CHECKING:
    import pandas as pd

    from sbir_study.stimuli import StimulusSet

__all__ = [
    "ENDINGS",
    "FINISH_STATUSES",
    "FinishStatus",
    "OnlineStudy",
    "ServiceError",
    "stimulus_pixels",
]


def stimulus_pixels(protocol: Protocol) -> tuple[int, int]:
    """Width of each stimulus and of the gap between them, in CSS pixels.

    ``online.stimulus_px`` when set; else the lab geometry of ``[display]``,
    converted as PsychoPy converts degrees (``deg2pix`` without flat-screen
    correction): cm = deg x distance x pi / 180, pixels = cm x resolution / width.

    Examples
    --------
    >>> stimulus_pixels(Protocol())
    (621, 52)
    """
    display = protocol.display
    per_cm = display.resolution[0] / display.width_cm

    def pixels(degrees: float) -> int:
        return round(math.radians(degrees) * display.distance_cm * per_cm)

    width = protocol.online.stimulus_px or pixels(display.stimulus_deg)
    gap = pixels(display.gap_deg)
    if protocol.online.stimulus_px:
        gap = round(gap * protocol.online.stimulus_px / pixels(display.stimulus_deg))
    return width, gap


@dataclass
class OnlineStudy(SessionStarts, SessionReads, TrialWrites, Endings):
    """A protocol on a stimulus set, served from one database (see the module docstring)."""

    protocol: Protocol
    stimulus_set: StimulusSet
    engine: Engine
    protocol_file: str = ""
    study_id: int = 0
    #: The images' largest height / width (the page sizes its area by it).
    max_aspect: float = 1.0
    #: Every image file the set's manifest names -> its SHA-256 (from ``SHA256SUMS``).
    stimulus_files: Mapping[str, str] = field(default_factory=dict)
    #: The manifest of each list's participants: the anchor pairs and the list's pairs.
    lists: tuple[pd.DataFrame, ...] = ()
    #: The number of main pairs of each list.
    list_pairs: tuple[int, ...] = ()
    _sessions: dict = field(default_factory=dict, repr=False)
    #: The trials' ``(phase, *pair)`` keys of every order the process keeps, one of each.
    _keys: dict = field(default_factory=dict, repr=False)
    _images: dict = field(default_factory=dict, repr=False)
    #: The trial write's statements on the driver's cursor (storage.Driver).
    _driver: storage.Driver = field(default_factory=storage.Driver, repr=False)
    #: JSON of each key's part of a stored order row and of a page's trial.
    _json: OrderJson = field(default_factory=OrderJson, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def open(
        cls,
        protocol: Protocol,
        stimulus_set: StimulusSet,
        engine: Engine,
        protocol_file: str = "",
        max_aspect: float | None = None,
    ) -> OnlineStudy:
        """Split the lists from the set, migrate the schema and register the study.

        ``max_aspect``, the images' largest height / width, is measured when not given.
        A set the protocol's lists cannot be split from is refused
        (:class:`~sbir_study.foundation.checks.InputError`) here, not at the first
        participant.
        """
        from sbir_study.stimuli.manifest import read_checksums

        from .setcheck import image_names, measured_aspect

        manifest = stimulus_set.manifest
        parts = split_lists(protocol, manifest)
        lists = []
        for index in range(len(parts)):
            pairs = list_manifest(manifest, parts, index).copy()
            # Without the manifest's line numbers (attrs["lines"], for the set's messages):
            # pandas deep-copies attrs at every step of build_trials.
            pairs.attrs = {}
            lists.append(pairs)
        checksums, _ = read_checksums(stimulus_set.folder)
        names = sorted(image_names(stimulus_set))
        study = cls(
            protocol,
            stimulus_set,
            engine,
            str(protocol_file),
            max_aspect=measured_aspect(stimulus_set) if max_aspect is None else float(max_aspect),
            stimulus_files={name: checksums[name] for name in names if name in checksums},
            lists=tuple(lists),
            list_pairs=tuple(len(part) for part in parts),
        )
        storage.migrate(engine)
        study.study_id = study._register()
        study.writer  # noqa: B018 - made once, before requests (threads) can race for it
        study._reads  # noqa: B018 - the same
        return study

    def warm(self) -> None:
        """Make now the JSON of every key of every list, as stored and as the page is sent.
        ``serve`` calls it before it forks its workers, so that every worker, one forked
        again after a crash too, starts with it made."""
        for index in range(len(self.lists)):
            keys = self._order_keys(index, 0)
            self._json.rows(keys)
            self._json.page_trials(keys)

    @cached_property
    def protocol_json(self) -> str:
        return storage.dumps(json.loads(json.dumps(protocol_dict(self.protocol))))

    def stimulus(self, path: str) -> bytes:
        """An image the set's manifest names, checked against its SHA-256 when first read.

        Any other path is refused (404); an image changed on disk since the set
        was checked is never served (500). A checked image is kept: it never changes.
        """
        expected = self.stimulus_files.get(path)
        if expected is None:
            raise ServiceError(404, f"no stimulus {path!r} in the set")
        data = self._images.get(path)
        if data is None:
            data = self.stimulus_set.path(path).read_bytes()
            if hashlib.sha256(data).hexdigest() != expected:
                raise ServiceError(
                    500,
                    f"stimulus {path!r} changed on disk since the set was checked; "
                    "it is not served",
                )
            self._images[path] = data
        return data

    def _register(self) -> int:
        digest = hashlib.sha256(self.protocol_json.encode("utf-8")).hexdigest()
        key = {"protocol_sha256": digest, "stimulus_digest": self.stimulus_set.digest}
        with self.engine.begin() as connection:
            found = connection.execute(queries.STUDY_OF_PROTOCOL_AND_SET, key).scalar()
            if found is not None:
                return int(found)
            try:
                with connection.begin_nested():
                    result = connection.execute(
                        queries.INSERT_STUDY,
                        {
                            "name": self.protocol.name,
                            "task": self.protocol.task,
                            "protocol_json": self.protocol_json,
                            "protocol_sha256": digest,
                            "protocol_file": self.protocol_file,
                            "stimulus_digest": self.stimulus_set.digest,
                            "stimulus_set": str(self.stimulus_set.folder),
                            "created_at": storage.now(),
                        },
                    )
                    inserted = result.inserted_primary_key
                    assert inserted is not None  # an INSERT's result has its key
                    return int(inserted[0])
            except IntegrityError:  # another server process registered it at the same moment
                return int(connection.execute(queries.STUDY_OF_PROTOCOL_AND_SET, key).scalar_one())

    def browser_config(self) -> dict:
        """The settings the experiment page runs with (public: no participant data)."""
        protocol = self.protocol
        width, gap = stimulus_pixels(protocol)
        aspect = self.max_aspect
        return {
            "study": protocol.name,
            "task": protocol.task,
            "timing": {
                "stimulus_s": protocol.timing.stimulus_s,
                "blank_s": protocol.timing.blank_s,
                "anchor_demo_s": protocol.timing.anchor_demo_s,
                "refresh_range_hz": list(protocol.timing.refresh_range_hz),
                # The page closes a window as the server does (scoring.window_end).
                "late_flip_max_s": LATE_FLIP_MAX_S,
            },
            "response": {
                "keys": list(protocol.response.keys),
                "keypad": protocol.response.keypad,
                "rating_keys": rating_key_map(
                    protocol.response.keys, keypad=protocol.response.keypad
                ),
                "pause_key": protocol.response.pause_key,
                "quit_key": protocol.response.quit_key,
                "key_names": BROWSER_CODES,
            },
            "pauses": {
                "allowed": protocol.pauses.allowed,
                "break_every": protocol.pauses.break_every,
            },
            "display": {
                "stimulus_px": width,
                "gap_px": gap,
                "max_aspect": aspect,
                "background": list(protocol.display.background),
                "minimum_width": 2 * width + gap + 40,
                "minimum_height": math.ceil(width * aspect) + 120,
            },
            "instructions": instruction_texts(protocol),
            # Every other word of the page, placeholders ({code}, ...) filled by the page.
            "texts": dataclasses.asdict(protocol.texts),
            "online": {
                "consent": protocol.online.consent,
                "details": protocol.online.details,
                "has_completion_code": bool(protocol.online.completion_code),
                "has_completion_url": bool(protocol.online.completion_url),
                # No session exists before consent: the page shows this ending by itself.
                "no_consent": self.ending("no_consent"),
            },
        }

    def status(self) -> dict:
        """The experimenter's view of the study (:func:`.status.study_status`)."""
        now = storage.now()
        key = {"study": self.study_id}
        with storage.reading(self.engine) as connection:
            sessions = connection.execute(
                queries.STATUS_SESSIONS,
                {**key, "cutoff": now - self.protocol.online.dropout_after_s},
            ).all()
            durations = connection.execute(queries.STATUS_TRIAL_DURATIONS, key).all()
            trials_stored = connection.execute(queries.STATUS_TRIAL_COUNT, key).scalar_one()
            refused = connection.execute(queries.STATUS_REFUSAL_COUNT, key).scalar_one()
            latest = connection.execute(queries.STATUS_REFUSALS, {**key, "limit": 20}).all()
        return study_status(
            self.protocol,
            self.study_id,
            list_pairs=list(self.list_pairs),
            sessions=sessions,
            durations=durations,
            trials_stored=trials_stored,
            trials_refused=refused,
            latest_refusals=latest,
        )

    def participants(self) -> pd.DataFrame:
        """One row per participant (:func:`.status.participant_table`)."""
        import pandas as pd

        key = {"study": self.study_id}

        def table(statement) -> pd.DataFrame:
            rows = connection.execute(statement, key).mappings().all()
            return pd.DataFrame(rows, columns=[c.name for c in statement.selected_columns])

        with storage.reading(self.engine) as connection:
            sessions = table(queries.PARTICIPANT_SESSIONS)
            trials = table(queries.PARTICIPANT_TRIALS)
            refusals = table(queries.PARTICIPANT_REFUSALS)
        return participant_table(
            self.protocol,
            sessions,
            trials,
            refusals=refusals,
            silent_since=storage.now() - self.protocol.online.dropout_after_s,
            code_of=lambda status: (
                self.ending(ENDING_OF[status])["code"] if status in ENDING_OF else None
            ),
        )
