"""Wide exports of survey tools: one row per participant, one column per rated pair.

``sbir-study import wide`` (``docs/formats.md``): Qualtrics, Google Forms and
LimeSurvey exports with a mapping file (:func:`read_wide_mapping`), Qualtrics' two
extra header rows left out, each answer read by :func:`answer_rating`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from sbir_study.foundation.checks import InputError, did_you_mean
from sbir_study.foundation.scale import PAPER_SCALE, Scale
from sbir_study.foundation.tables import MISSING_VALUES

from .cells import ALIASES, cell_error, check_ids, find_columns
from .dataset import ImportedRatings
from .delimited import SourceTable, read_delimited

__all__ = ["WIDE_MAPPING_COLUMNS", "answer_rating", "read_wide", "read_wide_mapping"]

#: The columns of a wide export's mapping file: one row per rated pair.
WIDE_MAPPING_COLUMNS = ("column", "sketch_id", "image_id")
#: An answer's leading whole number (``1 - best match``, ``7 (worst)``, ``3``): not one
#: followed by a decimal part (``2.5``, ``2,5``).
_LEADING_NUMBER = re.compile(r"\s*(\d+)(?![\d.,]\d)")


def answer_rating(answer: str, answers: Mapping[str, int] | None = None) -> int | None:
    """An answer's rating: its label's (``answers``), else its leading number; None if missing.

    An answer without one raises ``ValueError``.

    Examples
    --------
    >>> answer_rating("1 - best match"), answer_rating("7 (worst)"), answer_rating("")
    (1, 7, None)
    >>> answer_rating("Good", {"Best": 1, "Good": 2})
    2
    """
    text = answer.strip()
    if text in MISSING_VALUES:
        return None
    if answers is not None:
        if text not in answers:
            raise ValueError(text)
        return answers[text]
    match = _LEADING_NUMBER.match(text)
    if match is None:
        raise ValueError(text)
    return int(match.group(1))


def _is_import_id(cell: str) -> bool:
    cell = cell.strip()
    if not cell.startswith("{"):
        return False
    try:
        value = json.loads(cell)
    except ValueError:
        return False
    return isinstance(value, dict) and "ImportId" in value


def _qualtrics_headers(table: SourceTable) -> bool:
    """Whether the table is a Qualtrics export: its second row holds the question texts and
    its third ``{"ImportId": ...}`` in every cell that is not empty."""
    if len(table.frame) < 2:
        return False
    cells = [str(c) for c in table.frame.iloc[1] if str(c).strip()]
    return bool(cells) and all(_is_import_id(c) for c in cells)


def read_wide_mapping(path: str | Path, *, encoding: str | None = None) -> tuple[pd.DataFrame, str]:
    """A wide export's mapping file: ``column, sketch_id, image_id`` (any case), a row a pair.

    Any separator :func:`~sbir_study.analysis.importers.delimited.sniff_separator` finds.
    Returns the mapping (with ``_line``) and its SHA-256; a column or pair twice is refused.
    """
    table = read_delimited(Path(path), sep=None, encoding=encoding)
    found = find_columns(table, {}, WIDE_MAPPING_COLUMNS, WIDE_MAPPING_COLUMNS)
    mapping = pd.DataFrame(
        {target: table.frame[found[target]].astype(str) for target in WIDE_MAPPING_COLUMNS}
    )
    for target in ("sketch_id", "image_id"):
        mapping[target] = mapping[target].str.strip()
        check_ids(table, mapping[target], found[target])
    blank = mapping["column"].str.strip().isin(MISSING_VALUES).to_numpy()
    if blank.any():
        raise cell_error(
            table,
            int(np.argmax(blank)),
            found["column"],
            "the export's column holding the pair's ratings",
            "",
        )
    mapping["column"] = mapping["column"].str.strip()
    for keys, what in ((["column"], "column"), (["sketch_id", "image_id"], "pair")):
        twice = mapping.duplicated(keys).to_numpy()
        if twice.any():
            row = int(np.argmax(twice))
            named = " ".join(mapping.loc[row, keys])
            raise InputError(
                f"{path}: line {table.lines[row]}: {what} {named!r} is mapped twice; "
                f"expected each {what} once"
            )
    mapping["_line"] = table.lines
    return mapping, table.sha256


def _participant_column(table: SourceTable, named: str | None) -> str:
    """The export's column of the participants' ids: as named, else found by its name."""
    if named is not None:
        if named not in table.names:
            hint = did_you_mean(named, table.names)
            raise InputError(
                f"{table.path}: line 1: no column {named!r} (--participant-column){hint}"
            )
        return named
    names = ("participant", *ALIASES["participant"])
    candidates = [name for name in table.names if name.lower() in names]
    if len(candidates) == 1:
        return candidates[0]
    found = f"columns {' and '.join(map(repr, candidates))}" if candidates else "no column"
    raise InputError(
        f"{table.path}: line 1: {found} named as a participant's id ({', '.join(names)}); "
        "name the column with --participant-column (ResponseId, PROLIFIC_PID, ...)"
    )


def read_wide(
    paths: Sequence[str | Path],
    *,
    mapping: pd.DataFrame,
    participant_column: str | None = None,
    answers: Mapping[str, int] | None = None,
    sep: str | None = None,
    encoding: str | None = None,
    scale: Scale = PAPER_SCALE,
    mapping_source: Mapping[str, str] | None = None,
) -> ImportedRatings:
    """Read wide exports: one row per participant, one column per rated pair.

    Parameters
    ----------
    paths
        The exports, each with a header; Qualtrics' two extra header rows are found by
        the third's ``{"ImportId": ...}`` cells and left out.
    mapping
        The column of each pair (:func:`read_wide_mapping`); other columns are not read.
    participant_column
        The participant's id column (``ResponseId``, ``PROLIFIC_PID``); default
        ``participant``, ``participant_id``, ``subject`` or ``subject_id``, any case.
    answers
        The rating of each answer label (``--answers``); default the leading number.
    sep, encoding, scale
        As :func:`~sbir_study.analysis.importers.long_table.read_long_table`.
    mapping_source
        What to record of the mapping file (its name and SHA-256).

    Returns
    -------
    ImportedRatings
        A row per participant and pair in the mapping's order; an empty answer (or
        ``n/a``, ``NA``, ``NaN``, ``nan``) is missing; ``trial`` and ``rt`` are missing.
        An answer off the scale is refused naming its line and column.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "survey.csv"
    >>> _ = path.write_text("id,Q1,Q2\\nP-1,1 - best match,\\nP-2,7 - worst match,3\\n")
    >>> pairs = pd.DataFrame({"column": ["Q1", "Q2"], "sketch_id": ["cat", "cat"],
    ...                       "image_id": ["a", "b"]})
    >>> read_wide([path], mapping=pairs, participant_column="id").ratings[
    ...     ["participant", "image_id", "rating"]]
      participant image_id  rating
    0         P-1        a       1
    1         P-1        b    <NA>
    2         P-2        a       7
    3         P-2        b       3
    """
    missing = [c for c in WIDE_MAPPING_COLUMNS if c not in mapping]
    if missing:
        raise InputError(
            f"mapping: no column {missing[0]!r}; expected {', '.join(WIDE_MAPPING_COLUMNS)}"
        )
    columns = mapping["column"].astype(str).tolist()
    frames: list[pd.DataFrame] = []
    sources: dict[str, str] = {}
    encodings: dict[str, str] = {}
    qualtrics_headers: dict[str, bool] = {}
    for path in map(Path, paths):
        table = read_delimited(path, sep=sep, encoding=encoding)
        participant = _participant_column(table, participant_column)
        _check_mapped(table, mapping, columns)
        qualtrics = _qualtrics_headers(table)
        rows = np.arange(2 if qualtrics else 0, len(table.frame))
        if not len(rows):
            raise InputError(f"{path}: no rows below the header; expected one per participant")
        given = table.frame[participant].astype(str).str.strip().iloc[rows]
        blank = given.isin(MISSING_VALUES).to_numpy()
        if blank.any():
            row = int(rows[np.argmax(blank)])
            raise cell_error(table, row, participant, "the participant's id", "")
        ratings = _answers(table, rows, columns, answers, scale)
        n, k = len(rows), len(columns)
        frames.append(
            pd.DataFrame(
                {
                    "participant": np.repeat(given.to_numpy(), k),
                    "sketch_id": np.tile(mapping["sketch_id"].to_numpy(), n),
                    "image_id": np.tile(mapping["image_id"].to_numpy(), n),
                    "phase": "main",
                    "rating": pd.array(ratings.ravel(), dtype="Int64"),
                    "rt": np.nan,
                    "trial": pd.array([pd.NA] * (n * k), dtype="Int64"),
                    "_source": str(path),
                    "_line": np.repeat(table.lines[rows], k),
                }
            )
        )
        if not sources:  # the first export's, as every sidecar records them
            first_participant, first_sep = participant, table.sep
        sources[str(path)] = table.sha256
        encodings[str(path)] = table.encoding
        qualtrics_headers[str(path)] = qualtrics
    settings = {
        "Format": "wide export",
        "Columns": {"participant": first_participant},
        "Mapping": dict(mapping_source or {}),
        "Pairs": len(columns),
        "Answers": dict(answers) if answers is not None else "the answer's leading whole number",
        "Separator": first_sep,
        "Encoding": encodings,
        "QualtricsHeaders": qualtrics_headers,
    }
    return ImportedRatings(pd.concat(frames, ignore_index=True), sources, settings)


def _check_mapped(table: SourceTable, mapping: pd.DataFrame, columns: list[str]) -> None:
    """Refuse an export without a column the mapping names, naming the mapping's line."""
    absent = [c for c in columns if c not in table.names]
    if absent:
        hint = did_you_mean(absent[0], table.names)
        line = mapping["_line"].iloc[columns.index(absent[0])] if "_line" in mapping else None
        where = f"; mapped on line {line} of the mapping" if line is not None else ""
        raise InputError(
            f"{table.path}: line 1: no column {absent[0]!r}{hint}{where}"
            + (f", and {len(absent) - 1} more mapped columns" if len(absent) > 1 else "")
        )


def _answers(
    table: SourceTable,
    rows: np.ndarray,
    columns: list[str],
    answers: Mapping[str, int] | None,
    scale: Scale,
) -> np.ndarray:
    """The rating of each answer, a row per participant (``rows`` of the export) and a
    column per pair; <NA> for a missing answer. Each distinct answer is read once."""
    ratings = np.empty((len(rows), len(columns)), dtype=object)
    expected = (
        f"an answer of --answers ({', '.join(answers)}) or a missing value"
        if answers is not None
        else f"an answer beginning with a rating {scale.low}..{scale.high} (as "
        f"'{scale.low} - best match') or a missing value; map labels with --answers"
    )
    for j, column in enumerate(columns):
        cells = table.frame[column].astype(str).iloc[rows]
        for distinct in pd.unique(cells):
            try:
                point = answer_rating(distinct, answers)
            except ValueError:
                point = scale.high + 1
            if point is not None and not scale.low <= point <= scale.high:
                row = int(rows[np.argmax((cells == distinct).to_numpy())])
                raise cell_error(table, row, column, expected, distinct)
            ratings[(cells == distinct).to_numpy(), j] = pd.NA if point is None else point
    return ratings
