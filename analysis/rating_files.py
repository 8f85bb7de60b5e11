"""Reading ratings files into a raw table: every cell text, each row with its file and line.

A flat CSV/TSV or every ``sub-*/[ses-*/]beh/*_beh.tsv`` of a BIDS dataset, checked as
UTF-8 up to its header, its rows parsed by
:func:`~sbir_study.foundation.tables.read_rows` (files of one header in one pass). A
BIDS file whose last line has no line end (a crashed session) loses that partial row
with a warning.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from sbir_study.foundation import progress
from sbir_study.foundation.checks import PARTICIPANT_RULE, InputError, bad_ids
from sbir_study.foundation.tables import (
    COLON,
    Header,
    TextFile,
    read_header,
    read_rows,
    read_text,
)

from .hashing import FileHasher
from .validation import REQUIRED_COLUMNS, RatingsWarning

__all__ = ["PendingSource", "parse", "participant_of", "read_bids", "read_table_file"]

# How a message names a line of a ratings file, and a column named twice in its header.
_WORDING = replace(COLON, twice="column {name!r} appears twice in the header")
_BIDS_PATTERNS = ("sub-*/beh/*_beh.tsv", "sub-*/ses-*/beh/*_beh.tsv")


def read_bids(
    root: Path, hasher: FileHasher, columns: Sequence[str] | None = None
) -> tuple[pd.DataFrame, list[PendingSource]]:
    """Every session file of the BIDS dataset at ``root`` parsed into one raw table (text
    cells, as categoricals; :func:`parse`), and each file read."""
    paths = sorted({f for pattern in _BIDS_PATTERNS for f in root.glob(pattern)})
    if not paths:
        raise InputError(
            f"{root}: no sub-*/beh/*_beh.tsv files; expected a BIDS dataset of rating sessions"
        )
    files = [
        _read_text(path, hasher, bids=True, label=participant_of(root, path))
        for path in progress.track(paths, "reading session files", unit="file")
    ]
    with progress.step("parsing session files"):
        frame = parse(files, columns)
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
    """A BIDS file's participant cells, where given, must name the participant of its name."""
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


def participant_of(root: Path, path: Path) -> str:
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


@dataclass(frozen=True)
class PendingSource:
    """A file read: its path, its rows and its SHA-256, perhaps still being taken
    (:class:`~sbir_study.analysis.hashing.FileHasher`)."""

    path: str
    digest: Future[str | None]
    rows: int


@dataclass(frozen=True)
class _RawFile:
    """A ratings file read and checked up to its header."""

    file: TextFile
    header: Header
    source: PendingSource
    label: str | None = None  # a BIDS file's participant, from its name

    @property
    def path(self) -> Path:
        return self.file.path

    @property
    def plain(self) -> bool:
        """No quoting to honour (TSV, or CSV without a quote character): one row a line."""
        return not self.header.quote or self.file.data.find(b'"', self.header.end) < 0


def read_table_file(
    path: Path, hasher: FileHasher, columns: Sequence[str] | None = None
) -> tuple[pd.DataFrame, PendingSource]:
    """A flat ratings table parsed into a raw table (text cells; :func:`parse`), and the file."""
    raw = _read_text(path, hasher, bids=False)
    return parse([raw], columns), raw.source


def _read_text(
    path: Path, hasher: FileHasher | None = None, *, bids: bool, label: str | None = None
) -> _RawFile:
    """Read, decode and check one file up to its header; its SHA-256 is taken by ``hasher``
    (here, when none is given)."""
    file = read_text(path, _WORDING, hashed=False)
    digest = (hasher or FileHasher(threaded=False)).submit(file.data)
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
    raw = _RawFile(file, header, PendingSource(str(path), digest, file.lines - header.line), label)
    if file.is_blank(header.end):
        # Only blanks below the header: a line with the wrong count is named first.
        read_rows([(file, header)], wording=_WORDING)
        raise InputError(f"{path}: has a header but no rows; expected one row per presented pair")
    return raw


def parse(files: list[_RawFile], columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Parse files as text categoricals, those of one header in one pass (only ``columns``).

    Adds ``_source``, ``_line`` and ``_label`` (the participant of a BIDS file's name).
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
