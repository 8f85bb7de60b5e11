"""Loading a ratings table, the one link between a study and its analysis.

A ratings table has a row per presented sketch/image pair (``docs/formats.md``):
``participant, sketch_id, image_id, phase, rating, rt, anchor_rating, trial`` and any
extra columns. :func:`load_ratings` reads a flat CSV/TSV or a BIDS dataset
(:mod:`~sbir_study.analysis.rating_files`), validates it
(:mod:`~sbir_study.analysis.validation`) and attaches its :class:`Provenance`. Every
problem is an :class:`~sbir_study.foundation.checks.InputError` naming file, line and
field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from sbir_study.foundation import progress
from sbir_study.foundation.checks import InputError
from sbir_study.foundation.memory import release_freed
from sbir_study.foundation.scale import PAPER_SCALE, Scale

from .hashing import FileHasher
from .rating_files import participant_of, read_bids, read_table_file
from .validation import PHASES, RATING_COLUMNS, RatingsWarning, _fail_where, validate_ratings

__all__ = [
    "ORIGINS",
    "PHASES",
    "RATING_COLUMNS",
    "RECORDED_ORIGINS",
    "SIMULATED_ORIGINS",
    "Provenance",
    "RatingsWarning",
    "SourceFile",
    "load_ratings",
    "participant_origins",
    "sidecar_origin",
    "validate_ratings",
]

#: Where a session's ratings came from, as its sidecar records it (``Origin``): a lab
#: session, a browser session (``export-online``), ``run --simulate``, ``simulate``,
#: ``import``.
RECORDED_ORIGINS = ("lab", "online", "run-simulate", "simulate", "imported")
#: Every origin a participant can have: also ``table`` (a flat table that names none) and
#: ``unknown`` (a session file whose sidecar records none, or is missing).
ORIGINS = (*RECORDED_ORIGINS, "table", "unknown")
#: The origins whose ratings no person gave.
SIMULATED_ORIGINS = ("run-simulate", "simulate")


@dataclass(frozen=True)
class SourceFile:
    """One file a ratings table was read from."""

    path: str
    sha256: str
    rows: int


@dataclass(frozen=True)
class Provenance:
    """Where a ratings table came from."""

    sources: tuple[SourceFile, ...] = ()
    simulated: bool = False
    #: The libraries that ran the sessions, as their sidecars record them (``Software``):
    #: (package, its versions over the sessions, comma-separated), for the ones an analysis
    #: does not itself use (PsychoPy, Psychtoolbox, Pillow).
    session_software: tuple[tuple[str, str], ...] = ()
    #: Where each participant's ratings came from: (participant, one of :data:`ORIGINS`),
    #: by label (see :func:`sidecar_origin`).
    origins: tuple[tuple[str, str], ...] = ()
    #: Each session's ``SessionStatus`` as its sidecar records it: (participant, status),
    #: one per session that records one (``complete``, ``incomplete``, ``timed_out``, ...).
    statuses: tuple[tuple[str, str], ...] = ()
    #: The catch pairs the sessions' protocols name (``Protocol.catch`` in each sidecar):
    #: (sketch_id, image_id, lowest, highest), the ratings that pass as pressed.
    catch: tuple[tuple[str, str, int, int], ...] = ()

    def __deepcopy__(self, memo: dict[int, object]) -> Provenance:
        # Immutable: pandas deep-copies attrs on every operation, sharing is enough.
        return self


def load_ratings(
    path: str | Path, *, scale: Scale | None = None, extra_columns: bool = True
) -> pd.DataFrame:
    """Read and validate a flat ratings table (``.csv``/``.tsv``) or a BIDS dataset.

    Parameters
    ----------
    scale
        A flat table's scale (``None``: its JSON sidecar's, else the paper's 1..7, 1
        best). A dataset's is what its ``_beh.json`` sidecars record (``RatingScale``, or
        an older session's number of protocol keys); a ``scale`` given must equal it.
    extra_columns
        Keep the columns beyond :data:`RATING_COLUMNS`; with ``False`` they are parsed
        and checked but not converted (``analyze`` reads the ratings only).

    Returns
    -------
    pandas.DataFrame
        :data:`RATING_COLUMNS` first (``participant, sketch_id, image_id, phase`` as
        sorted categoricals, stripped; ``phase`` defaults to ``"main"``; ``rating`` and
        ``anchor_rating`` nullable integers, ``rt`` float), then any extra columns as
        categoricals of their text. ``attrs["provenance"]`` is a :class:`Provenance`,
        ``attrs["scale"]`` the :class:`~sbir_study.foundation.scale.Scale` of every rating.

    Raises
    ------
    InputError
        For an unreadable, empty or non-UTF-8 file, a missing column, a malformed
        value, a rating off the scale, a pair rated twice in a phase (naming file, line
        and field), or sidecars that record two scales (naming a file of each).

    Examples
    --------
    >>> import io, tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "r.csv").write_text(
    ...     "participant,sketch_id,image_id,rating\\n01,s1,a,2\\n01,s1,b,n/a\\n")
    >>> table = load_ratings(folder / "r.csv")
    >>> table[["participant", "image_id", "phase", "rating"]]
      participant image_id phase  rating
    0          01        a  main       2
    1          01        b  main    <NA>
    """
    path = Path(path)
    columns = None if extra_columns else RATING_COLUMNS
    with FileHasher() as hasher:
        return _load_ratings(path, scale, hasher, columns)


def _load_ratings(
    path: Path, scale: Scale | None, hasher: FileHasher, columns: tuple[str, ...] | None
) -> pd.DataFrame:
    if path.is_dir():
        frame, sources = read_bids(path, hasher, columns)
        sidecars = _read_sidecars(Path(s.path).with_suffix(".json") for s in sources)
        simulated = any(_says_simulated(sidecar) for sidecar in sidecars.values())
        scale = _dataset_scale(sidecars, scale)
        origins = _session_origins(path, sidecars)
        statuses = _session_statuses(path, sidecars)
        catch = _recorded_catch_pairs(sidecars)
    elif path.is_file():
        with progress.step(f"reading {path.name}"):
            frame, source = read_table_file(path, hasher, columns)
        sources = [source]
        sidecars = _read_sidecars([path.with_suffix(".json")])
        ((sidecar_path, sidecar),) = sidecars.items()
        simulated = _says_simulated(sidecar)
        if scale is None:
            scale = _recorded_scale(sidecar, sidecar_path, protocol=False) or PAPER_SCALE
        table_origin = sidecar_origin(sidecar, sidecar_path) or "table"
        statuses = ()
        catch = _recorded_catch_pairs(sidecars)
    elif path.exists():
        raise InputError(
            f"{path}: is not a regular file; expected a ratings table or a BIDS dataset"
        )
    else:
        raise InputError(
            f"{path}: no such file or folder; expected a ratings table or a BIDS dataset"
        )
    with progress.step("checking ratings"):
        ratings = validate_ratings(frame, scale=scale)
        if not path.is_dir():
            origins = _table_origins(frame, table_origin)
    del frame
    hashed = tuple(SourceFile(s.path, str(s.digest.result()), s.rows) for s in sources)
    release_freed()  # the files' text and the raw table, given back to the system
    ratings.attrs["provenance"] = Provenance(
        hashed,
        simulated,
        _session_software(sidecars.values()),
        origins,
        statuses,
        catch,
    )
    return ratings


def _read_sidecars(paths: Iterable[Path]) -> dict[Path, object]:
    """Each sidecar's JSON, read once for all that load_ratings takes from it (None where
    it is missing or no JSON: it then records nothing)."""
    sidecars = {}
    for path in paths:
        try:
            sidecars[path] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            sidecars[path] = None
    return sidecars


def _session_software(sidecars: Iterable[object]) -> tuple[tuple[str, str], ...]:
    """The session libraries the sidecars record (see :attr:`Provenance.session_software`)."""
    from sbir_study.foundation.provenance import ANALYSIS_PACKAGES, SESSION_PACKAGES

    versions: dict[str, set[str]] = {}
    for sidecar in sidecars:
        recorded = sidecar.get("Software") if isinstance(sidecar, dict) else None
        if not isinstance(recorded, dict):
            continue
        for package in SESSION_PACKAGES:
            if package not in ANALYSIS_PACKAGES and isinstance(recorded.get(package), str):
                versions.setdefault(package, set()).add(recorded[package])
    return tuple((p, ", ".join(sorted(versions[p]))) for p in SESSION_PACKAGES if p in versions)


def _recorded_scale(sidecar: object, path: Path, *, protocol: bool = True) -> Scale | None:
    """The scale a sidecar (read from ``path``) records: its ``RatingScale``, else
    (``protocol``) one point per key of the ``Protocol`` it records; ``None`` when it
    records neither."""
    if not isinstance(sidecar, dict):
        return None
    if "RatingScale" in sidecar:
        return Scale.from_sidecar(sidecar["RatingScale"], what=str(path))
    keys = (sidecar.get("Protocol") or {}).get("response", {}).get("keys") if protocol else None
    if isinstance(keys, list) and 2 <= len(keys) <= 9:
        return Scale(1, len(keys))
    return None


def _dataset_scale(sidecars: dict[Path, object], given: Scale | None) -> Scale:
    """The one scale of a BIDS dataset's sessions; two are refused, naming a file of each."""
    found: dict[Scale, Path] = {}
    for path, sidecar in sidecars.items():
        scale = _recorded_scale(sidecar, path) or PAPER_SCALE
        found.setdefault(scale, path)
        if len(found) > 1:
            (first, one), (second, other) = found.items()
            raise InputError(
                f"{other}: the rating scale {second} differs from {first} of {one}; expected "
                "one scale in a dataset (analyse its sessions of each scale apart)"
            )
    ((scale, path),) = found.items()
    if given is not None and given != scale:
        raise InputError(f"scale: {given} differs from the scale {scale} that {path} records")
    return scale


def sidecar_origin(sidecar: object, path: str | Path = "sidecar") -> str | None:
    """Where the session a sidecar describes came from: one of :data:`ORIGINS`, or ``None``.

    ``Origin`` where recorded; else what only its writer records (``docs/formats.md``):
    ``Imported`` (``imported``), ``"Mode": "online"``, ``SimulationSeed`` or a
    ``GeneratedBy`` of ``sbir-study simulate`` (``simulate``), ``"Simulated": true``
    (``run-simulate``), ``KeyboardBackend`` (``lab``). ``None`` where none is (or no
    sidecar): the caller says ``unknown`` or ``table``. An unknown ``Origin`` raises
    :class:`InputError` naming ``path``.

    Examples
    --------
    >>> sidecar_origin({"Simulated": True, "KeyboardBackend": "ptb"})
    'run-simulate'
    >>> sidecar_origin({"Origin": "online"}), sidecar_origin({"TaskName": "x"})
    ('online', None)
    """
    if not isinstance(sidecar, dict):
        return None
    if "Origin" in sidecar:
        origin = sidecar["Origin"]
        if origin not in RECORDED_ORIGINS:
            raise InputError(
                f"{path}: field 'Origin': expected one of "
                f"{', '.join(RECORDED_ORIGINS)}, got {origin!r}"
            )
        return origin
    if "Imported" in sidecar:
        return "imported"
    if sidecar.get("Mode") == "online":
        return "online"
    generated = sidecar.get("GeneratedBy")
    if "SimulationSeed" in sidecar or (
        isinstance(generated, str) and generated.startswith("sbir-study simulate")
    ):
        return "simulate"
    if sidecar.get("Simulated") is True:
        return "run-simulate"
    if "KeyboardBackend" in sidecar:
        return "lab"
    return None


def _session_origins(root: Path, sidecars: dict[Path, object]) -> tuple[tuple[str, str], ...]:
    """Each participant's origin from their sessions' sidecars; sessions of two origins
    (a lab and an online session, say) give them joined by ``+``."""
    found: dict[str, set[str]] = {}
    for path, sidecar in sidecars.items():
        label = participant_of(root, path.with_suffix(".tsv"))
        found.setdefault(label, set()).add(sidecar_origin(sidecar, path) or "unknown")
    return tuple((label, "+".join(sorted(found[label]))) for label in sorted(found))


def _session_statuses(root: Path, sidecars: dict[Path, object]) -> tuple[tuple[str, str], ...]:
    """Each session's recorded ``SessionStatus`` (see :attr:`Provenance.statuses`)."""
    return tuple(
        sorted(
            (participant_of(root, path.with_suffix(".tsv")), str(sidecar["SessionStatus"]))
            for path, sidecar in sidecars.items()
            if isinstance(sidecar, dict) and sidecar.get("SessionStatus") is not None
        )
    )


def _recorded_catch_pairs(sidecars: dict[Path, object]) -> tuple[tuple[str, str, int, int], ...]:
    """The catch pairs the sidecars' protocols name (``Protocol.catch``: ``sketch_id``,
    ``image_id``, ``ratings`` "LOW-HIGH"), over every session; one pair with two ranges
    is refused, naming a sidecar."""
    found: dict[tuple[str, str], tuple[int, int]] = {}
    for path, sidecar in sidecars.items():
        protocol = sidecar.get("Protocol") if isinstance(sidecar, dict) else None
        for pair in (protocol or {}).get("catch") or () if isinstance(protocol, dict) else ():
            try:
                key = (str(pair["sketch_id"]), str(pair["image_id"]))
                low, _, high = str(pair["ratings"]).partition("-")
                bounds = (int(low), int(high or low))
            except (KeyError, TypeError, ValueError):
                raise InputError(
                    f"{path}: field 'Protocol.catch': expected sketch_id, image_id "
                    f"and ratings LOW-HIGH, got {pair!r}"
                ) from None
            if found.setdefault(key, bounds) != bounds:
                raise InputError(
                    f"{path}: field 'Protocol.catch': the pair {key[0]}/{key[1]} "
                    f"passes {bounds[0]}-{bounds[1]} here, {found[key][0]}-"
                    f"{found[key][1]} in another session; expected one range"
                )
    return tuple((*key, *bounds) for key, bounds in sorted(found.items()))


def _table_origins(frame: pd.DataFrame, default: str) -> tuple[tuple[str, str], ...]:
    """Each participant's origin in a flat table: its ``origin`` column where it has one
    (one of :data:`RECORDED_ORIGINS` or ``table``, one per participant), else ``default``."""
    if "origin" not in frame:  # the distinct labels' text only, not a string per row
        distinct = pd.Series(frame["participant"].unique()).astype(str).str.strip()
        return tuple((label, default) for label in sorted(distinct.unique()))
    labels = frame["participant"].astype(str).str.strip()
    given = frame.assign(_origin=frame["origin"].astype(str).str.strip(), _label=labels)
    allowed = (*RECORDED_ORIGINS, "table")
    _fail_where(given, ~given["_origin"].isin(allowed), "origin", f"one of {', '.join(allowed)}")
    first = given.drop_duplicates("_label").set_index("_label")["_origin"]
    differs = given["_origin"].to_numpy() != first.reindex(given["_label"]).to_numpy()
    _fail_where(
        given,
        pd.Series(differs, index=given.index),
        "origin",
        "one origin per participant (as on the participant's first row)",
    )
    return tuple(sorted(first.items()))


def participant_origins(ratings: pd.DataFrame) -> pd.Series:
    """Each participant's origin (:attr:`Provenance.origins`), by label; ``table`` for a
    participant that the ratings' provenance does not name (a table built in code)."""
    provenance = ratings.attrs.get("provenance", Provenance())
    # The distinct labels first, then their text: not a string for each of millions of rows.
    distinct = pd.Series(ratings["participant"].unique())
    labels = pd.Index(distinct.astype(str).unique(), name="participant")
    return pd.Series(dict(provenance.origins), dtype=object).reindex(labels).fillna("table")


def _says_simulated(sidecar: object) -> bool:
    return isinstance(sidecar, dict) and bool(sidecar.get("Simulated", False))
