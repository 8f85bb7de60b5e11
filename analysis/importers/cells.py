"""The cells of a source table: which column holds what, and its ids and numbers checked.

Each problem is an :class:`~sbir_study.foundation.checks.InputError` of one line naming
file, line and source column (:func:`cell_error`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from sbir_study.foundation.checks import ID_RULE, InputError, bad_ids, did_you_mean
from sbir_study.foundation.scale import Scale
from sbir_study.foundation.tables import MISSING_VALUES

from .delimited import SourceTable

__all__ = [
    "ALIASES",
    "IMPORT_COLUMNS",
    "REQUIRED_COLUMNS",
    "cell_error",
    "check_ids",
    "decimal_of",
    "find_columns",
    "numbers",
    "parse_number",
    "rt_factor",
    "scale_ratings",
]

#: The columns of the ratings table an import fills: the first four are required.
IMPORT_COLUMNS = (
    *("participant", "sketch_id", "image_id", "rating"),
    *("rt", "phase", "trial", "anchor_rating"),
)
REQUIRED_COLUMNS = IMPORT_COLUMNS[:4]
#: Other names under which a source's column is found without a mapping (in any case).
ALIASES = {"participant": ("participant_id", "subject", "subject_id")}
_DECIMAL_COMMA = re.compile(r"[+-]?\d*,\d+")
_RT_UNITS = {"s": 1.0, "ms": 0.001}


def parse_number(text: str, *, decimal: str = ".") -> float:
    """A number cell as a float (NaN: missing) with decimal mark ``decimal`` ("." or ",").

    A thousands separator or a cell that is no number raises ``ValueError``.

    Examples
    --------
    >>> parse_number("0,734", decimal=","), parse_number("NA")
    (0.734, nan)
    """
    text = text.strip()
    if text in MISSING_VALUES:
        return float("nan")
    if decimal == ",":
        if "." in text:
            raise ValueError(text)
        text = text.replace(",", ".", 1)
    elif "," in text:
        raise ValueError(text)
    value = float(text)
    if not np.isfinite(value):
        raise ValueError(text)
    return value


def find_columns(
    table: SourceTable,
    mapping: Mapping[str, str],
    targets: Sequence[str],
    required: Sequence[str],
) -> dict[str, str]:
    """Which source column holds each of ``targets``: ``mapping``'s, else its name or an alias.

    Names and :data:`ALIASES` match in any case; a ``required`` target must be found, and
    two candidates for one target are refused.
    """
    found: dict[str, str] = {}
    lower: dict[str, list[str]] = {}
    for name in table.names:
        lower.setdefault(name.lower(), []).append(name)
    for target in targets:
        if target in mapping:
            source = mapping[target]
            if source not in table.names:
                hint = did_you_mean(source, table.names)
                raise InputError(
                    f"{table.path}: line 1: no column {source!r} (mapped to {target}){hint}; "
                    f"found {', '.join(table.names)}"
                )
            found[target] = source
            continue
        candidates = [
            n for alias in (target, *ALIASES.get(target, ())) for n in lower.get(alias, [])
        ]
        if len(candidates) > 1:
            raise InputError(
                f"{table.path}: line 1: columns {' and '.join(map(repr, candidates))} "
                f"could both be {target}; name one with --columns {target}=..."
            )
        if candidates:
            found[target] = candidates[0]
        elif target in required:
            raise InputError(
                f"{table.path}: line 1: no column for {target}; expected one named {target} "
                f"or a mapping --columns {target}=COLUMN (found {', '.join(table.names)})"
            )
    return found


def cell_error(table: SourceTable, row: int, column: str, expected: str, value: str) -> InputError:
    """The one line naming the file, the line of ``row`` (and in JSON, whose trials may
    share a line, the trial) and the column (in JSON, the field) of a bad cell."""
    where = f"line {table.lines[row]}" if table.sep else f"line {table.lines[row]}, trial {row + 1}"
    word = "column" if table.sep else "field"
    return InputError(
        f"{table.path}: {where}: {word} {column!r}: expected {expected}, got {value!r}"
    )


def numbers(table: SourceTable, column: str, decimal: str, expected: str) -> np.ndarray:
    """A column's cells as numbers (NaN where missing), each distinct cell parsed once;
    a cell that is no number is refused as not ``expected``."""
    codes, distinct = pd.factorize(table.frame[column], use_na_sentinel=False)
    values = np.empty(len(distinct), dtype=float)
    for index, cell in enumerate(distinct):
        try:
            values[index] = parse_number(str(cell), decimal=decimal)
        except ValueError:
            raise cell_error(
                table, int(np.argmax(codes == index)), column, expected, str(cell)
            ) from None
    return values[codes]


def scale_ratings(table: SourceTable, column: str, values: np.ndarray, scale: Scale) -> pd.Series:
    """Ratings as whole points of ``scale`` (Int64; a missing one <NA>)."""
    given = ~np.isnan(values)
    bad = given & ((values != np.round(values)) | (values < scale.low) | (values > scale.high))
    if bad.any():
        row = int(np.argmax(bad))
        raise cell_error(
            table,
            row,
            column,
            f"a rating {scale.low}..{scale.high} (the scale {scale}) or a missing value",
            str(table.frame[column].iloc[row]),
        )
    return pd.Series(np.where(given, values, np.nan)).round().astype("Int64")


def check_ids(table: SourceTable, cells: pd.Series, column: str) -> None:
    """Refuse a sketch or image id off the id rule, naming its line and the source column."""
    distinct = pd.unique(cells)
    bad = bad_ids(distinct) | pd.Index(distinct).isin(list(MISSING_VALUES))
    if bad.any():
        row = int(np.argmax(cells.isin(distinct[bad]).to_numpy()))
        raise cell_error(table, row, column, ID_RULE, str(cells.iloc[row]))


def decimal_of(table: SourceTable, columns: Sequence[str], decimal: str | None) -> str:
    """The decimal mark: as given, else ``,`` when the table is not comma-separated and a
    number cell has a decimal comma (``0,734``), else ``.``."""
    if decimal is not None:
        if decimal == "," and table.sep == ",":
            raise InputError("--decimal: a decimal comma needs another separator than the comma")
        return decimal
    if table.sep == ",":
        return "."
    for column in columns:
        cells = pd.unique(table.frame[column].astype(str).str.strip())
        if any(_DECIMAL_COMMA.fullmatch(cell) for cell in cells):
            return ","
    return "."


def rt_factor(unit: str) -> float:
    """Seconds per unit of a response-time column: ``s`` or ``ms``."""
    if unit not in _RT_UNITS:
        raise InputError(f"--rt-unit: expected one of {', '.join(_RT_UNITS)}, got {unit!r}")
    return _RT_UNITS[unit]
