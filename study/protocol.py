"""Study protocols: one typed object, loaded from TOML and checked once at load.

A protocol has top-level keys (``name``, ``task``, ``description``, ``main_roles``) and one
table per topic (:mod:`sbir_study.study.protocol_settings`, whose names this module gives
too; ``[texts]``: :mod:`sbir_study.study.texts`). The session reads only the
:class:`Protocol`, never the TOML. A problem is an
:class:`~sbir_study.foundation.checks.InputError`, one line naming the file and the setting
(:mod:`sbir_study.study.protocol_errors`): an unknown key (with the closest valid one), a
wrong type, a value out of bounds, a key name the keyboard cannot report
(:mod:`sbir_study.study.key_names`), a key given two jobs.
"""

from __future__ import annotations

import dataclasses
import tomllib
import warnings
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, StrictStr, TypeAdapter, ValidationError, model_validator
from pydantic.dataclasses import dataclass

from sbir_study.foundation.checks import InputError
from sbir_study.foundation.scale import Scale

from .key_names import key_name_tables
from .participants import DETAILS
from .protocol_errors import Expects, refusal, refusal_line
from .protocol_settings import (
    CONTINUE_KEY,
    DURATION_RANGE_S,
    TABLE,
    Anchoring,
    CatchPair,
    Dataset,
    Display,
    Instructions,
    Online,
    Participants,
    Pauses,
    Practice,
    Response,
    Timing,
)
from .responses import rating_key_map
from .texts import Texts, rating_keys_unnamed

__all__ = [
    "CONTINUE_KEY",
    "DURATION_RANGE_S",
    "Anchoring",
    "CatchPair",
    "Dataset",
    "Display",
    "Instructions",
    "Online",
    "Participants",
    "Pauses",
    "Practice",
    "Protocol",
    "Response",
    "Timing",
    "load_protocol",
    "protocol_dict",
]

#: The roles of a stimulus set's pairs that may make the main block.
Role = Literal["main", "candidate"]


@dataclass(frozen=True, config=TABLE)
class Protocol:
    """A study protocol: every setting of a session, lab or online, checked at load."""

    name: StrictStr = "eitz2011"
    """Short name of the protocol, recorded with every session."""
    task: Annotated[
        StrictStr,
        Field(pattern=r"^[A-Za-z0-9]+$"),
        Expects("a BIDS label of letters and digits"),
    ] = "sbirrating"
    """The BIDS task label: files are sub-<label>_task-<task>_beh.tsv."""
    description: StrictStr = ""
    """Free text, recorded with the session."""
    main_roles: Annotated[
        tuple[Role, ...], Field(min_length=1), Expects("a list of main and/or candidate")
    ] = ("main",)
    """Roles of the stimulus set's pairs that make the main block (candidate for a pilot)."""
    timing: Timing = Field(default_factory=Timing, description=Timing.__doc__)
    response: Response = Field(default_factory=Response, description=Response.__doc__)
    anchoring: Anchoring = Field(default_factory=Anchoring, description=Anchoring.__doc__)
    practice: Practice = Field(default_factory=Practice, description=Practice.__doc__)
    pauses: Pauses = Field(default_factory=Pauses, description=Pauses.__doc__)
    display: Display = Field(default_factory=Display, description=Display.__doc__)
    participants: Participants = Field(
        default_factory=Participants, description=Participants.__doc__
    )
    dataset: Dataset = Field(default_factory=Dataset, description=Dataset.__doc__)
    instructions: Instructions = Field(
        default_factory=Instructions, description=Instructions.__doc__
    )
    online: Online = Field(default_factory=Online, description=Online.__doc__)
    texts: Texts = Field(default_factory=Texts, description=Texts.__doc__)
    catch: tuple[CatchPair, ...] = ()
    """Catch pairs ([[catch]] tables): pairs of the stimulus set's main block with the ratings that
    pass; recorded in every session's sidecar (with the protocol) and scored by analyze. [] for
    none."""

    @model_validator(mode="after")
    def _catch_pairs_fit_the_scale(self) -> Protocol:
        seen = set()
        for number, pair in enumerate(self.catch):
            if not 1 <= pair.lowest <= pair.highest <= len(self.response.keys):
                raise refusal(
                    f"expected ratings LOW-HIGH with 1 <= LOW <= HIGH <= {len(self.response.keys)} "
                    f"(the rating keys), got {pair.ratings!r}",
                    field=f"catch[{number}].ratings",
                )
            if (pair.sketch_id, pair.image_id) in seen:
                raise refusal(
                    f"expected each pair once, got {pair.sketch_id}/{pair.image_id} twice",
                    field=f"catch[{number}]",
                )
            seen.add((pair.sketch_id, pair.image_id))
        return self

    @model_validator(mode="after")
    def _answer_keys_are_not_the_quit_key(self) -> Protocol:
        # On the details form the quit key ends the session: an answer key cannot be it.
        quit_key = self.response.quit_key
        for name in self.participants.details:
            for field in DETAILS[name].keys or ():
                if getattr(self.texts, field) == quit_key:
                    raise refusal(
                        f"{quit_key!r} is already the quit key; expected another answer key "
                        f"for {name}_question",
                        field=f"texts.{field}",
                    )
        return self

    @property
    def scale(self) -> Scale:
        """The rating scale: 1 .. the number of rating keys, its best end ``response.best``."""
        return Scale(1, len(self.response.keys), self.response.best)

    @property
    def key_map(self) -> dict[str, int]:
        """Rating key name -> rating, the keypad's digits included when ``keypad`` is on."""
        return rating_key_map(self.response.keys, keypad=self.response.keypad)


_PROTOCOL = TypeAdapter(Protocol)


def load_protocol(path: str | Path, *, online: bool = False) -> Protocol:
    """Read and check a protocol file; InputError, one line naming the file and the setting.

    ``online``: the protocol is served to browsers, so its keys must also be names a browser
    can send (:func:`~sbir_study.study.key_names.browser_key_names`).

    >>> protocol = load_protocol("protocols/eitz2011.toml")
    >>> protocol.timing.stimulus_s, str(protocol.scale)
    (2.0, '1-7')
    """
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: no such file; expected a protocol (.toml)") from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: cannot be read ({error})") from None
    except tomllib.TOMLDecodeError as error:
        raise InputError(f"{path}: not valid TOML ({error})") from None
    try:
        protocol = _PROTOCOL.validate_python(
            raw, context={"key_names": key_name_tables(online=online)}
        )
    except ValidationError as error:
        raise InputError(f"{path}: {refusal_line(error.errors()[0], raw, Protocol)}") from None
    if unnamed := rating_keys_unnamed(protocol.instructions.main, protocol.response.keys):
        warnings.warn(f"{path}: {unnamed}", stacklevel=2)
    return protocol


def protocol_dict(protocol: Protocol) -> dict:
    """The protocol as plain data for the sidecar, ``catch`` left out when empty."""
    recorded = dataclasses.asdict(protocol)
    if not recorded["catch"]:
        del recorded["catch"]
    return recorded
