"""Long tables: one row per rated pair, from a spreadsheet, R, SPSS or a survey's long export.

``sbir-study import table`` (``docs/formats.md``, "Ratings collected elsewhere").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from sbir_study.foundation.checks import InputError
from sbir_study.foundation.scale import PAPER_SCALE, Scale

from .cells import (
    IMPORT_COLUMNS,
    REQUIRED_COLUMNS,
    cell_error,
    check_ids,
    decimal_of,
    find_columns,
    numbers,
    rt_factor,
    scale_ratings,
)
from .dataset import ImportedRatings
from .delimited import SourceTable, read_delimited

__all__ = ["read_long_table"]


def read_long_table(
    paths: Sequence[str | Path],
    *,
    columns: Mapping[str, str] | None = None,
    sep: str | None = None,
    encoding: str | None = None,
    decimal: str | None = None,
    rt_unit: str = "s",
    scale: Scale = PAPER_SCALE,
) -> ImportedRatings:
    """Read long tables: one row per rated pair, each file with a header naming the same columns.

    Parameters
    ----------
    columns
        Ratings-table column -> source column (``--columns``). Others are found by their
        name in any case (``participant`` also as ``participant_id``, ``subject``,
        ``subject_id``); ``participant, sketch_id, image_id, rating`` must be found,
        ``rt, phase, trial, anchor_rating`` are read when they are.
    sep
        The field separator; None sniffs it
        (:func:`~sbir_study.analysis.importers.delimited.sniff_separator`).
    decimal
        ``"."`` or ``","``; None: ``","`` when a number cell of a table not
        comma-separated has a decimal comma.
    rt_unit
        ``"s"`` or ``"ms"`` (written in seconds).

    Returns
    -------
    ImportedRatings
        ``trial`` the mapped column, else the row's place among the participant's rows
        (from 1); ``phase`` ``main`` unless mapped; an R row-names column is left out.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "export.csv"
    >>> _ = path.write_text("Subject;Sketch;Image;Response;RT\\nP-7;s1;a;3;0,734\\n")
    >>> found = read_long_table([path], columns={"participant": "Subject",
    ...     "sketch_id": "Sketch", "image_id": "Image", "rating": "Response"})
    >>> found.ratings[["participant", "sketch_id", "rating", "rt"]]
      participant sketch_id  rating     rt
    0         P-7        s1       3  0.734
    >>> found.settings["Separator"], found.settings["Decimal"]
    (';', ',')
    """
    columns = dict(columns or {})
    factor = rt_factor(rt_unit)
    frames: list[pd.DataFrame] = []
    sources: dict[str, str] = {}
    encodings: dict[str, str] = {}
    settings: dict[str, object] = {}
    for path in paths:
        table = read_delimited(
            Path(path), sep=sep, encoding=encoding, expected=list(columns.values())
        )
        found = find_columns(table, columns, IMPORT_COLUMNS, REQUIRED_COLUMNS)
        if settings and found != settings["Columns"]:
            raise InputError(
                f"{path}: line 1: its columns differ from those of the first file; "
                "expected files of one table"
            )
        number_columns = [found[c] for c in ("rating", "rt", "anchor_rating") if c in found]
        mark = decimal_of(table, number_columns, decimal)
        frame = _rows(table, found, mark, factor, scale)
        frame["_source"] = str(path)
        frame["_line"] = table.lines
        frames.append(frame)
        sources[str(path)] = table.sha256
        encodings[str(path)] = table.encoding
        if not settings:  # the first file's decisions, as every sidecar records them
            settings = {
                "Format": "long table",
                "Columns": found,
                "Separator": table.sep,
                "Encoding": encodings,
                "Decimal": mark,
                "RtUnit": rt_unit,
            }
    ratings = pd.concat(frames, ignore_index=True)
    if "trial" not in ratings:
        ratings["trial"] = ratings.groupby(["_source", "participant"], sort=False).cumcount() + 1
    return ImportedRatings(ratings, sources, settings)


def _rows(
    table: SourceTable, found: Mapping[str, str], mark: str, factor: float, scale: Scale
) -> pd.DataFrame:
    """One file's rows as ratings-table rows, cells checked (``factor``: seconds per rt unit)."""
    frame = pd.DataFrame(
        {
            target: table.frame[found[target]].astype(str).str.strip()
            for target in ("participant", "sketch_id", "image_id")
        }
    )
    for target in ("sketch_id", "image_id"):
        check_ids(table, frame[target], found[target])
    point = f"a rating {scale.low}..{scale.high} or a missing value"
    for target in ("rating", "anchor_rating"):
        if target in found:
            values = numbers(table, found[target], mark, point)
            frame[target] = scale_ratings(table, found[target], values, scale)
    frame["rt"] = _times(table, found["rt"], mark, factor) if "rt" in found else np.nan
    frame["phase"] = (
        table.frame[found["phase"]].astype(str).str.strip() if "phase" in found else "main"
    )
    if "trial" in found:
        frame["trial"] = table.frame[found["trial"]].astype(str).str.strip()
    return frame


def _times(table: SourceTable, column: str, mark: str, factor: float) -> np.ndarray:
    """The response times of ``column`` in seconds (NaN where missing), none below 0."""
    times = numbers(table, column, mark, "a time or a missing value") * factor
    if (times < 0).any():
        row = int(np.argmax(times < 0))
        raise cell_error(
            table, row, column, "a time of 0 or more", str(table.frame[column].iloc[row])
        )
    return times
