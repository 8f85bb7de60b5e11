"""Reading and validating the ratings table, the one link between a study and its analysis.

A ratings table has one row per presented sketch/image pair (``docs/formats.md``):
``participant, sketch_id, image_id, phase, rating, rt, anchor_rating, trial``
plus any extra columns, which are kept. It comes from one flat CSV/TSV file or
from a BIDS dataset, every ``sub-*/beh/*_beh.tsv`` (and ``sub-*/ses-*/beh/``)
under its root.

Every problem is reported as an :class:`~sbir_study.foundation.checks.InputError` naming the file,
the line and the field. One exception is tolerated with a warning: a BIDS file
whose last line has no line end, which is what a session that crashed while
writing leaves behind; that partial row is dropped, the complete ones kept.
"""

from __future__ import annotations

import collections
import itertools
import json
import queue
import threading
import warnings
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from sbir_study.foundation import progress
from sbir_study.foundation.checks import (
    ID_RULE,
    MISSING_LABELS,
    PARTICIPANT_RULE,
    InputError,
    bad_ids,
)
from sbir_study.foundation.memory import release_freed
from sbir_study.foundation.provenance import data_sha256
from sbir_study.foundation.scale import PAPER_SCALE, Scale
from sbir_study.foundation.tables import (
    COLON,
    MISSING_VALUES,
    Header,
    TextFile,
    read_header,
    read_rows,
    read_text,
)
from sbir_study.foundation.threads import threads

__all__ = [
    "ORIGINS",
    "PHASES",
    "RATING_COLUMNS",
    "RECORDED_ORIGINS",
    "SIMULATED_ORIGINS",
    "Provenance",
    "RatingCube",
    "RatingsWarning",
    "SourceFile",
    "check_text_labels",
    "load_ratings",
    "main_phase_cube",
    "participant_origins",
    "rating_cube",
    "sidecar_origin",
    "validate_ratings",
]

#: The columns of the ratings table, in the order they are written.
RATING_COLUMNS = (
    "participant",
    "sketch_id",
    "image_id",
    "phase",
    "rating",
    "rt",
    "anchor_rating",
    "trial",
)
REQUIRED_COLUMNS = ("participant", "sketch_id", "image_id", "rating")
PHASES = ("anchor_demo", "anchor_repeat", "main", "practice")
# Phases in which a participant rates each pair at most once.
_ONCE_PER_PHASE = ("main", "anchor_repeat")
# How a message names a line of a ratings file, and a column named twice in its header.
_WORDING = replace(COLON, twice="column {name!r} appears twice in the header")
_BIDS_PATTERNS = ("sub-*/beh/*_beh.tsv", "sub-*/ses-*/beh/*_beh.tsv")


#: Where a session's ratings came from, as its sidecar records it (``Origin``): a lab
#: session, a browser session (``export-online``), ``run --simulate``, ``simulate``,
#: ``import``.
RECORDED_ORIGINS = ("lab", "online", "run-simulate", "simulate", "imported")
#: Every origin a participant can have: also ``table`` (a flat table that names none) and
#: ``unknown`` (a session file whose sidecar records none, or is missing).
ORIGINS = (*RECORDED_ORIGINS, "table", "unknown")
#: The origins whose ratings no person gave.
SIMULATED_ORIGINS = ("run-simulate", "simulate")
#: Groups of labels alike but for leading zeros that one warning names (then a count).
_LEADING_ZERO_GROUPS_SHOWN = 5


class RatingsWarning(UserWarning):
    """A ratings file was read, but something in it deserves attention."""


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

    def __deepcopy__(self, memo) -> Provenance:
        # Immutable: pandas deep-copies attrs on every operation, sharing is enough.
        return self


def load_ratings(
    path: str | Path, *, scale: Scale | None = None, extra_columns: bool = True
) -> pd.DataFrame:
    """Read and validate a flat ratings table or a BIDS dataset.

    Parameters
    ----------
    path
        A ``.csv`` or ``.tsv`` file with a header, or the root folder of a BIDS
        dataset.
    scale
        The rating scale of a flat table (``None``: the one its JSON sidecar
        records, else the paper's 1..7, 1 best). A BIDS dataset's scale is the
        one its ``_beh.json`` sidecars record (``RatingScale``; for a session
        recorded before the scale was, the number of its protocol's keys); a
        ``scale`` given for it must be the same.
    extra_columns
        Keep the columns beyond :data:`RATING_COLUMNS` (a session's timing and key
        presses). ``False`` leaves them out, for a caller that reads the ratings only
        (``analyze``): they are still parsed and their lines checked, not converted.

    Returns
    -------
    pandas.DataFrame
        One row per presented pair, with the columns of :data:`RATING_COLUMNS`
        first (``participant``, ``sketch_id``, ``image_id`` and ``phase`` are
        categoricals with sorted categories, stripped of surrounding blanks;
        ``phase`` defaults to ``"main"``; ``rating`` and ``anchor_rating`` are
        nullable integers, ``rt`` float) followed by any extra columns (their
        text, as categoricals: a session's timing columns repeat few values).
        ``DataFrame.attrs["provenance"]`` is a :class:`Provenance`: each file's
        path, SHA-256 and row count, whether the data's metadata says ``sbir-study
        simulate`` produced it, and the session libraries the sidecars record;
        ``DataFrame.attrs["scale"]`` the :class:`~sbir_study.foundation.scale.Scale`
        every rating and prescribed rating lies on.

    Raises
    ------
    InputError
        For an unreadable, empty or non-UTF-8 file, a missing required column,
        a malformed value, a rating off the scale or a pair rated twice in one
        phase, the message naming file, line and field; for a dataset whose
        sidecars record two scales, naming a file of each.

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
    with _Hasher() as hasher:
        return _load_ratings(path, scale, hasher, columns)


def _load_ratings(path: Path, scale: Scale | None, hasher: _Hasher, columns) -> pd.DataFrame:
    if path.is_dir():
        frame, sources = _read_bids(path, hasher, columns)
        sidecars = _read_sidecars(Path(s.path).with_suffix(".json") for s in sources)
        simulated = any(_says_simulated(sidecar) for sidecar in sidecars.values())
        scale = _dataset_scale(sidecars, scale)
        origins = _session_origins(path, sidecars)
        statuses = _session_statuses(path, sidecars)
        catch = _recorded_catch_pairs(sidecars)
    elif path.is_file():
        with progress.step(f"reading {path.name}"):
            frame, source = _read_file(path, hasher, columns)
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
    sources = [source.hashed() for source in sources]
    release_freed()  # the files' text and the raw table: half a GiB at 2,000 sessions
    ratings.attrs["provenance"] = Provenance(
        tuple(sources),
        simulated,
        _session_software(sidecars.values()),
        origins,
        statuses,
        catch,
    )
    return ratings


def validate_ratings(frame: pd.DataFrame, *, scale: Scale = PAPER_SCALE) -> pd.DataFrame:
    """Check a raw ratings table (all cells text) and return it typed.

    ``frame`` may carry ``_source`` and ``_line`` columns naming where each row
    came from; they are used in messages and dropped from the result. Ratings and
    prescribed ratings must be points of ``scale``, which the result carries in
    ``attrs["scale"]``.
    """
    check_text_labels(frame)
    frame = frame.copy()
    if "_source" not in frame:
        frame["_source"] = "<table>"
        frame["_line"] = np.arange(2, len(frame) + 2)
    for column in ("participant", "sketch_id", "image_id"):
        frame[column] = _labels(frame[column])
        if column == "participant":
            _refuse_missing_labels(frame)
        _fail_where(frame, frame[column].isin(("", "n/a")), column, "a non-empty label")
        # The id rule (docs/formats.md), checked once per distinct id.
        categories = frame[column].cat.categories
        bad = bad_ids(categories, participant=column == "participant")
        if bad.any():
            rule = PARTICIPANT_RULE if column == "participant" else ID_RULE
            _fail_where(frame, frame[column].isin(categories[bad]), column, rule)

    _warn_of_leading_zeros(frame)

    if "phase" not in frame:
        frame["phase"] = "main"
    frame["phase"] = _labels(frame["phase"])
    _fail_where(frame, ~frame["phase"].isin(PHASES), "phase", f"one of {', '.join(PHASES)}")

    bounds = (scale.low, scale.high)
    frame["rating"] = _integer_column(frame, "rating", bounds)
    frame["anchor_rating"] = _integer_column(frame, "anchor_rating", bounds)
    frame["trial"] = _integer_column(frame, "trial", None)
    frame["rt"] = _float_column(frame, "rt", non_negative=True)
    is_anchor = frame["phase"].isin(("anchor_demo", "anchor_repeat"))
    _fail_where(
        frame,
        is_anchor & frame["anchor_rating"].isna(),
        "anchor_rating",
        f"the prescribed rating ({scale.low}..{scale.high}) on every anchor_demo and "
        "anchor_repeat row",
    )
    _check_unique_pairs(frame)

    extra = [c for c in frame.columns if c not in RATING_COLUMNS and c not in ("_source", "_line")]
    for column in extra:
        frame[column] = _compact_text(frame[column])
    frame = frame[list(RATING_COLUMNS) + extra].reset_index(drop=True)
    frame.attrs["scale"] = scale
    return frame


def _refuse_missing_labels(frame: pd.DataFrame) -> None:
    """A participant label that R, pandas or BIDS read as a missing value is refused.

    ``NA``, ``n/a``, ``nan``, ``None`` and ``null`` (in any case) are a participant in this
    table but no one in the next tool's (R's ``read.csv``, ``pandas.read_csv``
    and a BIDS reader drop them as missing), so the study would lose them there.
    """
    labels = frame["participant"].cat.categories
    missing = labels.str.lower().isin(MISSING_LABELS)
    if missing.any():
        _fail_where(
            frame,
            frame["participant"].isin(labels[missing]),
            "participant",
            "a participant label that no table reads as a missing value (not NA, nan, "
            "none, null or n/a, in any case)",
        )


def _warn_of_leading_zeros(frame: pd.DataFrame) -> None:
    """Warn of participant labels that differ only by leading zeros (``01``, ``1``, ``001``).

    They are different participants here, as labels are text (``docs/formats.md``),
    but a spreadsheet that read them as numbers, or a hand that typed ``1`` for
    ``01``, makes one participant two: the warning names each such label and
    where it first occurs, so that the experimenter can tell which it is.
    """
    labels = pd.Series(frame["participant"].cat.categories)
    unpadded = labels.str.lstrip("0")
    # Grouped only where two labels meet: a group of each of 10,000 labels took 0.6 s.
    meet = unpadded.duplicated(keep=False).to_numpy()
    if not meet.any():
        return
    labels = labels[meet]
    alike = list(labels.groupby(unpadded[meet].to_numpy(), sort=True).agg(list))
    first = frame.drop_duplicates("participant").set_index("participant")
    named = [
        " and ".join(
            f"{label!r} ({first.at[label, '_source']}: line {first.at[label, '_line']})"
            for label in group
        )
        for group in alike[:_LEADING_ZERO_GROUPS_SHOWN]
    ]
    more = len(alike) - len(named)
    warnings.warn(
        f"participant labels that differ only by leading zeros: {'; '.join(named)}"
        f"{f'; and {more} more such groups' if more else ''}. They are analysed as different "
        "participants; if one person has two spellings, write the label one way",
        RatingsWarning,
        stacklevel=3,  # past validate_ratings
    )


def _compact_text(column: pd.Series) -> pd.Series:
    """An extra column, still text, as a categorical of its values.

    A session file's timing columns (onset, durations, press counts) repeat a few
    thousand values over millions of rows; as Python strings they held about a
    gigabyte of a 2,000-participant study. Every extra column is a categorical,
    whatever its values, so that two datasets with the same columns (a lab and an
    online arm, say) load with the same types.
    """
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    # Python strings as categories whichever reader gave the column (Arrow's gives str).
    categories = pd.Index(np.asarray(uniques, dtype=object), dtype=object)
    return pd.Series(
        pd.Categorical.from_codes(codes, categories), index=column.index, name=column.name
    )


def check_text_labels(frame: pd.DataFrame) -> None:
    """Refuse a table whose participant, sketch or image labels were read as numbers.

    A table read with ``pandas.read_csv`` and its default types has turned the
    label ``01`` into the number 1 (and ``01`` and ``1`` into one participant):
    what was written cannot be recovered, so such a table is an error, not a
    guess. Read it with :func:`load_ratings`, or with ``dtype=str``.

    Examples
    --------
    >>> check_text_labels(pd.DataFrame({"participant": ["01"], "sketch_id": ["s"]}))
    >>> check_text_labels(pd.DataFrame({"participant": [1], "sketch_id": ["s"]}))
    Traceback (most recent call last):
    ...
    sbir_study.foundation.checks.InputError: participant: the labels are numbers (int64), so 01 \
has already become 1; expected text labels: read the table with \
sbir_study.analysis.load_ratings, or pandas.read_csv(..., dtype=str)
    """
    for column in ("participant", "sketch_id", "image_id"):
        if column in frame and (
            pd.api.types.is_numeric_dtype(frame[column])
            or pd.api.types.is_bool_dtype(frame[column])
        ):
            raise InputError(
                f"{column}: the labels are numbers ({frame[column].dtype}), so 01 has already "
                "become 1; expected text labels: read the table with "
                "sbir_study.analysis.load_ratings, or pandas.read_csv(..., dtype=str)"
            )


def _labels(column: pd.Series) -> pd.Categorical:
    """Labels stripped of surrounding blanks, as a categorical with sorted categories.

    Each distinct label is stripped once, not each row: at crowd size the
    identifier columns hold millions of repeats of a few thousand labels, and
    every later grouping works on the integer codes.
    """
    codes, uniques = _distinct_cells(column)
    stripped = pd.Index(uniques).astype(str).str.strip()
    merged, categories = pd.factorize(stripped, sort=True)
    # The codes index the categories by construction: not checked again, row by row.
    return pd.Categorical.from_codes(merged[codes], categories=categories, validate=False)


def _sorted_cells(column: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize(column, sort=True)``, its distinct cells as an object array.

    ``factorize`` sorts a categorical's cells in the order of its categories (a validated
    label column's are sorted), which :func:`_occurring_categories` keeps.
    """
    found = _occurring_categories(column)
    codes, distinct = found if found is not None else pd.factorize(column, sort=True)
    return codes.astype(np.intp, copy=False), np.asarray(distinct, dtype=object)


def _distinct_cells(column: pd.Series) -> tuple[np.ndarray, object]:
    """``pd.factorize(column, use_na_sentinel=False)``, in any order of the distinct cells
    (:func:`_occurring_categories` where it can)."""
    found = _occurring_categories(column)
    return found if found is not None else pd.factorize(column, use_na_sentinel=False)


def _occurring_categories(column: pd.Series) -> tuple[np.ndarray, pd.Index] | None:
    """A categorical column's codes, renumbered over the categories that occur, and those
    categories in their order; None for a column that is not a categorical or has a
    missing cell (code -1).

    The reader gives every text column as a categorical: factorizing the codes of 12
    million rows again took 0.1 s a column at 10,000 participants.
    """
    if not isinstance(column.dtype, pd.CategoricalDtype):
        return None
    codes = column.cat.codes.to_numpy()
    if not codes.size or codes.min() < 0:
        return None
    categories = column.cat.categories
    occurs = np.bincount(codes, minlength=len(categories)) > 0
    if not occurs.all():
        codes = (np.cumsum(occurs) - 1)[codes]
        categories = categories[occurs]
    return codes, categories


@dataclass(frozen=True)
class RatingCube:
    """Ratings of one phase as a sketches x participants x images array.

    ``values[s, r, i]`` is participant ``participants[r]``'s rating of image
    ``images[s][i]`` of sketch ``sketches[s]``; NaN where not rated or where
    the sketch has fewer images than the widest one.
    """

    sketches: np.ndarray
    participants: np.ndarray
    images: tuple[np.ndarray, ...]
    values: np.ndarray

    def sketch(self, index: int) -> np.ndarray:
        """The participants x images matrix of sketch ``index``, without padding."""
        return self.values[index, :, : len(self.images[index])]


def rating_cube(ratings: pd.DataFrame, column: str = "rating") -> RatingCube:
    """Arrange ``ratings[column]`` as a :class:`RatingCube`.

    Sketches, participants and images are in sorted order. The table must hold
    each (participant, sketch, image) once, as one validated phase does.
    """
    sketch_code, sketches = _sorted_cells(ratings["sketch_id"])
    participant_code, participants = _sorted_cells(ratings["participant"])
    image_code, image_names = _sorted_cells(ratings["image_id"])
    # Pairs sorted by sketch, then image: a pair's position within its sketch is
    # its index among all pairs minus the index of its sketch's first pair. The keys are
    # small whole numbers, so the distinct ones and each row's index among them come from
    # one pass over a table of every possible key (what np.unique(..., return_inverse=True)
    # gives, without sorting millions of rows).
    key = sketch_code.astype(np.int64) * len(image_names) + image_code
    present = np.zeros(len(sketches) * len(image_names), dtype=bool)
    present[key] = True
    pairs = np.flatnonzero(present)
    pair_index = (np.cumsum(present) - 1)[key]
    starts = np.searchsorted(pairs, np.arange(len(sketches) + 1) * len(image_names))
    position = pair_index - starts[sketch_code]
    image_names = np.asarray(image_names, dtype=object)
    images = tuple(
        image_names[pairs[begin:end] % len(image_names)]
        for begin, end in itertools.pairwise(starts)
    )
    width = int(np.diff(starts).max(initial=0))
    values = np.full((len(sketches), len(participants), width), np.nan)
    values[sketch_code, participant_code, position] = ratings[column].to_numpy(
        dtype=np.float64, na_value=np.nan
    )
    return RatingCube(np.asarray(sketches), np.asarray(participants), images, values)


def main_phase_cube(ratings: pd.DataFrame, cube: RatingCube | None = None) -> RatingCube | None:
    """The :func:`rating_cube` of the main phase of ``ratings``; None when it has no rows.

    ``cube`` is that cube when the caller has it already (``analyze`` builds it once
    for every statistic that reads it); it is then returned as it is.
    """
    if cube is None:
        main = ratings[ratings["phase"] == "main"]
        cube = None if main.empty else rating_cube(main)
    return cube


# --- reading files ---------------------------------------------------------------------------


def _read_bids(root: Path, hasher: _Hasher, columns=None) -> tuple[pd.DataFrame, list[_Source]]:
    paths = sorted({f for pattern in _BIDS_PATTERNS for f in root.glob(pattern)})
    if not paths:
        raise InputError(
            f"{root}: no sub-*/beh/*_beh.tsv files; expected a BIDS dataset of rating sessions"
        )
    with _ReadAhead(paths, hasher) as ahead:
        files = [
            _read_text(
                path, hasher, bids=True, label=_participant_of(root, path), fetched=ahead.next()
            )
            for path in progress.track(paths, "reading session files", unit="file")
        ]
    with progress.step("parsing session files"):
        frame = _parse(files, columns)
    # Each row's label came with it through the parse (files are parsed grouped by header,
    # not in file order), as a categorical (files of several headers are concatenated as
    # text): the participant column is that label.
    labels = frame.pop("_label").astype("category")
    if "participant" in frame:
        _check_participant_labels(frame, labels)
        frame["participant"] = labels
    else:
        frame.insert(0, "participant", labels)
    return frame, [f.source for f in files]


def _check_participant_labels(frame: pd.DataFrame, labels: pd.Series) -> None:
    """A BIDS file's participant column, where given, must name the participant of the
    file's name (a missing cell, as in a file from another tool, takes it). Compared on
    the categoricals' codes: each distinct value is stripped and looked up once, not once
    per row."""
    given = frame["participant"].astype("category")
    distinct = given.cat.categories
    stripped = pd.Index([str(value).strip() for value in distinct], dtype=object)
    # The label code each distinct value names (-1: no file's label), and -2 for a
    # missing cell, which names the file's own label whatever it is.
    named = np.append(labels.cat.categories.get_indexer(stripped), -2)
    codes = given.cat.codes.to_numpy()
    own = labels.cat.codes.to_numpy()
    wrong = (named[codes] != own) & (codes >= 0)  # code -1 picks the -2 at the end
    if wrong.any():
        first = int(np.flatnonzero(wrong)[0])
        row = frame.iloc[first]
        raise InputError(
            f"{row['_source']}: line {row['_line']}: field 'participant': expected "
            f"{labels.iloc[first]!r} (the file's sub- label), "
            f"got {stripped[codes[first]]!r}"
        )


def _participant_of(root: Path, path: Path) -> str:
    """The participant label of a BIDS ``_beh.tsv`` file, from its name, which must agree
    with the ``sub-<label>`` folder it is in and follow the participant rule."""
    folder = path.relative_to(root).parts[0]
    name = path.name
    label = name.split("_", 1)[0].removeprefix("sub-")
    if not name.startswith("sub-") or bad_ids([label], participant=True)[0]:
        raise InputError(
            f"{path}: the file name does not start with sub-<label>_ ({PARTICIPANT_RULE}); "
            "expected sub-<label>_task-<task>_beh.tsv"
        )
    if folder != f"sub-{label}":
        raise InputError(
            f"{path}: the file name says participant {label!r} but it is in {folder}/; "
            "expected each session under its own participant's folder"
        )
    return label


#: A file at least this large is hashed on the reader's thread beside the parse; a smaller
#: one at once (2,000 session files of 0.3 MB each, 0.5 s of hashing in all, would pass the
#: interpreter lock between the two threads for every file).
_HASH_ASIDE_BYTES = 16 * 2**20


class _Hasher:
    """The SHA-256 of each large file read, taken on a thread of its own while the files
    are parsed and checked (``hashlib`` releases the interpreter lock over a file's
    bytes): 3 s of the reading of a 930 MB table. In the calling thread when
    ``$SBIR_STUDY_THREADS`` is 1. A refused file does not wait for the others' hashes."""

    def __init__(self, *, threaded: bool = True) -> None:
        self._queue: queue.SimpleQueue | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        if threaded and threads() > 1:
            self._queue = queue.SimpleQueue()
            self._thread = threading.Thread(target=self._run, name="sbir-sha256", daemon=True)
            self._thread.start()

    def __enter__(self) -> _Hasher:
        return self

    def __exit__(self, kind, *exc) -> None:
        """Done when the block is: the hashes it asked for are taken (it waited for them),
        or, when it failed, left (the one being taken stops within a slice)."""
        if self._thread is None:
            return
        if kind is not None:
            self._stop.set()
        self._queue.put(None)
        self._thread.join()

    def submit(self, data: bytes) -> Future:
        digest: Future = Future()
        if self._queue is None or len(data) < _HASH_ASIDE_BYTES:
            digest.set_result(data_sha256(data))
        else:
            self._queue.put((data, digest))
        return digest

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            data, digest = item
            try:
                found = data_sha256(data, stop=self._stop.is_set)
            except BaseException as error:  # handed to whoever asks for it
                digest.set_exception(error)
            else:
                if found is None:
                    digest.cancel()
                else:
                    digest.set_result(found)


@dataclass(frozen=True)
class _Source:
    """A file read, its SHA-256 still being taken (:class:`_Hasher`)."""

    path: str
    digest: Future
    rows: int

    def hashed(self) -> SourceFile:
        return SourceFile(self.path, self.digest.result(), self.rows)


@dataclass(frozen=True)
class _RawFile:
    """A ratings file read and checked up to its header."""

    file: TextFile
    header: Header
    source: _Source
    label: str | None = None  # a BIDS file's participant, from its name

    @property
    def path(self) -> Path:
        return self.file.path

    @property
    def plain(self) -> bool:
        """No quoting to honour (TSV, or CSV without a quote character): one row a line."""
        return not self.header.quote or self.file.data.find(b'"', self.header.end) < 0


def _read_file(path: Path, hasher: _Hasher, columns=None) -> tuple[pd.DataFrame, _Source]:
    raw = _read_text(path, hasher, bids=False)
    return _parse([raw], columns), raw.source


def _fetch(path: Path, hasher: _Hasher) -> tuple[TextFile, Future]:
    """A file's bytes, checked as UTF-8, and its SHA-256 (taken by ``hasher``)."""
    file = read_text(path, _WORDING, hashed=False)
    return file, hasher.submit(file.data)


#: From this many session files, :class:`_ReadAhead` reads them on the threads.
_READ_AHEAD_FILES = 64


class _ReadAhead:
    """The files of a dataset read (:func:`_fetch`) on threads, ahead of the checks of each
    one in order: reading and hashing release the interpreter lock (the loop over 2,000
    session files took 1.05 s instead of 1.39 s, in process under cProfile). Each file's
    result, or its error, is taken in the files' order (:meth:`next`), so the first file
    at fault is the one named, as when they are read one after the other. On leaving,
    reads not begun are not begun."""

    def __init__(self, paths: Sequence[Path], hasher: _Hasher) -> None:
        self._hasher = hasher
        self._paths = paths
        workers = threads()
        self._pool = (
            ThreadPoolExecutor(workers, thread_name_prefix="sbir-read")
            if workers > 1 and len(paths) >= _READ_AHEAD_FILES
            else None
        )
        self._ahead: collections.deque[Future] = collections.deque()

    def __enter__(self) -> _ReadAhead:
        if self._pool is not None:
            for path in self._paths:
                self._ahead.append(self._pool.submit(_fetch, path, self._hasher))
        return self

    def __exit__(self, *exc) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def next(self) -> tuple[TextFile, Future] | None:
        """The next file's bytes and hash (None when they are read in the caller's thread)."""
        return self._ahead.popleft().result() if self._pool is not None else None


def _read_text(
    path: Path,
    hasher: _Hasher | None = None,
    *,
    bids: bool,
    label: str | None = None,
    fetched: tuple[TextFile, Future] | None = None,
) -> _RawFile:
    """Read, decode and check one file up to its header; its SHA-256 is taken by ``hasher``
    (here, when none is given). ``fetched``: the file already read (:class:`_ReadAhead`)."""
    file, digest = fetched or _fetch(path, hasher or _Hasher(threaded=False))
    if file.is_blank():
        raise InputError(f"{path}: the file is empty; expected a header line and one row per pair")

    if bids and not file.complete:
        n_complete = file.lines - 1
        warnings.warn(
            f"{path}: line {n_complete + 1} is cut off (a session that stopped while writing); "
            f"that row is left out, the {max(n_complete - 1, 0)} complete rows are kept",
            RatingsWarning,
            stacklevel=4,
        )
        file = file.without_partial_line()

    first = file.first_line()
    sep = _separator(path, first[1] if first else "")
    # A CSV header may quote its names (R's write.csv does); TSV has no quoting.
    header = read_header(file, sep, quote=sep == ",", wording=_WORDING)
    names = header.names
    missing = [c for c in REQUIRED_COLUMNS if c not in names and not (bids and c == "participant")]
    if missing:
        raise InputError(
            f"{path}: line {header.line}: missing column {missing[0]!r}; "
            f"expected the columns {', '.join(REQUIRED_COLUMNS)} (found {', '.join(names)})"
        )
    raw = _RawFile(file, header, _Source(str(path), digest, file.lines - header.line), label)
    if file.is_blank(header.end):
        # Only blanks below the header: a line with the wrong count is named first.
        read_rows([(file, header)], wording=_WORDING)
        raise InputError(f"{path}: has a header but no rows; expected one row per presented pair")
    return raw


def _parse(files: list[_RawFile], columns=None) -> pd.DataFrame:
    """Parse files as tables, those with the same header in one pass; only ``columns``
    (those of them a file has) when given.

    Every column is read as text, as a categorical (:func:`~sbir_study.foundation.tables.read_rows`:
    a crowd-size study repeats a few thousand distinct cells over millions of rows).
    Adds ``_source`` (the file) and ``_line`` (the line in it) to every row, and
    ``_label`` (the participant of a BIDS file's name).
    """
    groups: dict[tuple, list[_RawFile]] = {}
    for raw in files:
        groups.setdefault((raw.header.sep, raw.header.quote, raw.header.names), []).append(raw)
    frames = []
    for members in groups.values():
        names = members[0].header.names
        rows = read_rows(
            [(m.file, m.header) for m in members],
            wording=_WORDING,
            columns=None if columns is None else [n for n in names if n in columns],
        )
        frame = rows.frame
        # Which file each row came from, as codes into the files: a text column of
        # millions of repeated paths costs more to build than the parse itself.
        frame["_source"] = pd.Categorical.from_codes(rows.files, [str(m.path) for m in members])
        frame["_line"] = rows.lines
        if members[0].label is not None:
            distinct = dict.fromkeys(m.label for m in members)
            code_of = {label: code for code, label in enumerate(distinct)}
            codes = np.array([code_of[m.label] for m in members])
            frame["_label"] = pd.Categorical.from_codes(codes[rows.files], list(code_of))
        frames.append(frame)
    return (
        pd.concat(frames, ignore_index=True)
        if len(frames) > 1
        else frames[0].reset_index(drop=True)
    )


def _separator(path: Path, header: str) -> str:
    suffix = path.suffix.lower()
    if suffix in (".tsv", ".tab"):
        return "\t"
    if suffix == ".csv":
        return ","
    return "\t" if "\t" in header else ","


def _read_sidecars(paths) -> dict[Path, object]:
    """Each sidecar's JSON, read once for all that load_ratings takes from it (None where
    it is missing or no JSON: it then records nothing)."""
    sidecars = {}
    for path in paths:
        try:
            sidecars[path] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            sidecars[path] = None
    return sidecars


def _session_software(sidecars) -> tuple[tuple[str, str], ...]:
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


def _recorded_scale(sidecar, path: Path, *, protocol: bool = True) -> Scale | None:
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


def sidecar_origin(sidecar, path: str | Path = "sidecar") -> str | None:
    """Where the session a sidecar describes came from: one of :data:`ORIGINS`, or ``None``.

    A sidecar written since origins were recorded says so itself (``Origin``); an
    older one is read by what only its writer records (docs/formats.md): ``Imported``
    (``sbir-study import``), ``"Mode": "online"`` (``export-online``), ``SimulationSeed``
    or a ``GeneratedBy`` of ``sbir-study simulate`` (``simulate``), ``"Simulated": true``
    otherwise (``run --simulate``, whose sidecar is the lab session's), and a lab
    session's ``KeyboardBackend`` (``lab``). A sidecar that records none of these, or no
    sidecar (``None``), gives ``None``: the caller decides (``unknown`` for a session
    file, ``table`` for a flat table).

    Raises
    ------
    InputError
        For an ``Origin`` that is not one of :data:`ORIGINS`, naming ``path``.

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
        label = _participant_of(root, path.with_suffix(".tsv"))
        found.setdefault(label, set()).add(sidecar_origin(sidecar, path) or "unknown")
    return tuple((label, "+".join(sorted(found[label]))) for label in sorted(found))


def _session_statuses(root: Path, sidecars: dict[Path, object]) -> tuple[tuple[str, str], ...]:
    """Each session's recorded ``SessionStatus`` (see :attr:`Provenance.statuses`)."""
    return tuple(
        sorted(
            (_participant_of(root, path.with_suffix(".tsv")), str(sidecar["SessionStatus"]))
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


def _says_simulated(sidecar) -> bool:
    return isinstance(sidecar, dict) and bool(sidecar.get("Simulated", False))


# --- field checks ----------------------------------------------------------------------------


def _fail_where(frame: pd.DataFrame, bad: pd.Series, column: str, expected: str) -> None:
    if not bad.any():
        return
    row = frame.loc[bad.to_numpy()].iloc[0]
    value = row.get(f"_raw_{column}", row[column])
    where = f"{row['_source']}: line {row['_line']}: field {column!r}"
    raise InputError(f"{where}: expected {expected}, got {value!r}")


@dataclass(frozen=True)
class _Distinct:
    """A text column as its distinct stripped values and a code per row.

    Each distinct cell is checked and converted once: a rating column holds
    millions of cells but a handful of distinct values.
    """

    codes: np.ndarray
    text: np.ndarray
    number: np.ndarray  # float64; NaN where missing or not a number
    missing: np.ndarray

    @classmethod
    def of(cls, column: pd.Series) -> _Distinct:
        codes, uniques = _distinct_cells(column)
        text = pd.Index(uniques).astype(str).str.strip()
        # A cell no file wrote (a column of one session file that another lacks, such as
        # anchor_rating beside an imported session) is missing too, not the text "nan".
        missing = text.isin(MISSING_VALUES) | text.isna()
        number = pd.to_numeric(pd.Series(text).where(~missing), errors="coerce")
        return cls(codes, np.asarray(text, dtype=object), number.to_numpy("float64"), missing)

    def fail_where(self, frame: pd.DataFrame, bad: np.ndarray, column: str, expected: str):
        """Raise for the first row whose distinct value is ``bad``, showing its text."""
        if bad.any():
            frame[f"_raw_{column}"] = self.text[self.codes]
            _fail_where(frame, pd.Series(bad[self.codes], index=frame.index), column, expected)

    def rows(self, values: np.ndarray, index: pd.Index, dtype: str) -> pd.Series:
        """``values`` (one per distinct cell; NaN: missing) spread over the rows, as ``dtype``.

        A nullable integer column is made from its numbers and its mask, each taken per
        distinct value and then spread: converting millions of floats with
        ``astype("Int64")`` took 0.25 s a column at 10,000 participants, to the same
        values. Whole numbers beyond int64 go through ``astype`` (which refuses them).
        """
        if dtype == "Int64":
            missing = np.isnan(values)
            if not (np.abs(values[~missing]) < 2.0**63).all():
                return pd.Series(values[self.codes], index=index).astype(dtype)
            whole = np.where(missing, 0.0, values).astype(np.int64)
            # Arrays of its own, not copied again (``pd.Series`` copies a NumPy array).
            return pd.Series(
                pd.arrays.IntegerArray(whole[self.codes], missing[self.codes]),
                index=index,
                copy=False,
            )
        return pd.Series(values[self.codes], index=index, copy=False).astype(dtype)


def _integer_column(frame: pd.DataFrame, column: str, bounds: tuple[int, int] | None) -> pd.Series:
    if column not in frame:
        return pd.Series(pd.NA, index=frame.index, dtype="Int64")
    values = _Distinct.of(frame[column])
    number, given = values.number, ~values.missing
    with np.errstate(invalid="ignore"):
        bad = given & (~np.isfinite(number) | (number != np.round(number)))
        if bounds is not None:
            bad |= given & ((number < bounds[0]) | (number > bounds[1]))
    expected = "an integer" if bounds is None else f"an integer {bounds[0]}..{bounds[1]}"
    if bounds is not None and bounds != (PAPER_SCALE.low, PAPER_SCALE.high):
        expected += f" (the scale {bounds[0]}-{bounds[1]})"
    values.fail_where(frame, bad, column, f"{expected} or n/a")
    return values.rows(np.round(number), frame.index, "Int64")


def _float_column(frame: pd.DataFrame, column: str, *, non_negative: bool) -> pd.Series:
    if column not in frame:
        return pd.Series(np.nan, index=frame.index, dtype="float64")
    values = _Distinct.of(frame[column])
    bad = ~values.missing & ~np.isfinite(values.number)
    if non_negative:
        bad |= values.number < 0
    expected = "a non-negative number" if non_negative else "a number"
    values.fail_where(frame, bad, column, f"{expected} or n/a")
    return values.rows(values.number, frame.index, "float64")


def _check_unique_pairs(frame: pd.DataFrame) -> None:
    key = ["participant", "sketch_id", "image_id", "phase"]
    if not _any_repeated(frame, key):
        return
    once = frame[frame["phase"].isin(_ONCE_PER_PHASE)]
    repeated = once.duplicated(key, keep=False)
    if not repeated.any():
        return
    rows = once[repeated]
    second = rows[rows.duplicated(key, keep="first")].iloc[0]
    first = rows[(rows[key] == second[key]).all(axis=1)].iloc[0]
    where_first = (
        f"line {first['_line']}"
        if first["_source"] == second["_source"]
        else f"{first['_source']} line {first['_line']}"
    )
    raise InputError(
        f"{second['_source']}: line {second['_line']}: participant {second['participant']!r} "
        f"rated sketch {second['sketch_id']!r} image {second['image_id']!r} twice in phase "
        f"{second['phase']!r} (first at {where_first}); expected each pair once per phase"
    )


def _any_repeated(frame: pd.DataFrame, key: list[str]) -> bool:
    """Whether a ``key`` of the rows of a once-per-phase phase is repeated: one whole number
    a row from the categoricals' codes (a missing label is code -1, equal to another missing
    one, as ``DataFrame.duplicated`` has it), sorted, equal neighbours or not.
    ``DataFrame.duplicated`` over the four columns took 5% of ``analyze`` at 10,000
    participants (1.1 s CPU at 2,000, this 0.15 s); it is left to name the rows of a
    repeated pair."""
    once = frame["phase"].isin(_ONCE_PER_PHASE).to_numpy()
    columns = [frame[name] for name in key]
    if not all(isinstance(column.dtype, pd.CategoricalDtype) for column in columns):
        return bool(frame[once].duplicated(key).any())
    combined = np.zeros(int(once.sum()), dtype=np.int64)
    span = 1
    for column in columns:
        size = len(column.cat.categories) + 1  # and code -1
        span *= size
        if span >= 2**62:  # no room for one number a row: as pandas does it
            return bool(frame[once].duplicated(key).any())
        combined *= size
        combined += column.cat.codes.to_numpy()[once]
        combined += 1
    combined.sort()  # a sort finds equal neighbours 10x faster than a hash table here
    return bool((combined[1:] == combined[:-1]).any())
