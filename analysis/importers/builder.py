"""PsychoPy Builder's per-participant CSV files (``sbir-study import psychopy``).

The rows of the trials loop, the last key a keyboard component recorded the rating,
as the lab session's rule is (``docs/formats.md``, "Ratings collected elsewhere").
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from sbir_study.foundation.checks import InputError
from sbir_study.foundation.scale import PAPER_SCALE, Scale
from sbir_study.foundation.tables import MISSING_VALUES

from .cells import cell_error, check_ids, find_columns, parse_number
from .dataset import ImportedRatings
from .delimited import SourceTable, read_delimited

__all__ = ["read_psychopy"]


def _builder_list(text: str) -> list[str]:
    """The values of one Builder cell: ``['2', '3']`` (a list, when every key is stored),
    ``2`` (one), or none (empty, ``None``, ``[]`` or a missing-value spelling)."""
    text = text.strip()
    if text in MISSING_VALUES or text in ("None", "[]"):
        return []
    if text.startswith("["):
        value = ast.literal_eval(text)  # a Python literal, as Builder writes it (repr)
        if not isinstance(value, list):
            raise ValueError(text)
        return [str(item) for item in value]
    return [text]


def read_psychopy(
    paths: Sequence[str | Path],
    *,
    keys: Mapping[str, int],
    columns: Mapping[str, str] | None = None,
    keyboard: str | None = None,
    encoding: str | None = None,
    scale: Scale = PAPER_SCALE,
) -> ImportedRatings:
    """Read PsychoPy Builder data files (``*.csv``, one per participant and session).

    Parameters
    ----------
    keys
        The rating of each key (``--keys``).
    columns
        Ratings-table column -> Builder column: the loop's conditions naming sketch and
        image (default ``sketch_id``, ``image_id``), the participant (default expInfo's
        ``participant``), optionally ``phase``.
    keyboard
        The component whose ``.keys`` and ``.rt`` hold the ratings (default: the one
        component with a ``.keys`` column).
    encoding
        The encoding of a file without a byte-order mark (default UTF-8).

    Returns
    -------
    ImportedRatings
        A row per row of the loop in file order (``trial`` from 1); a row with empty
        sketch and image cells belongs to another routine and is left out. The rating is
        the last key; ``n_presses`` and ``presses`` (``rating@seconds``) keep every press.
        A key that is no rating key is refused.
    """
    columns = dict(columns or {})
    frames, sources, used_keyboards = [], {}, set()
    for path in paths:
        table = read_delimited(Path(path), sep=",", encoding=encoding)
        found = find_columns(
            table,
            columns,
            ("participant", "sketch_id", "image_id", "phase"),
            ("participant", "sketch_id", "image_id"),
        )
        component = keyboard or _keyboard_of(table)
        frames.append(_loop_trials(table, str(path), found, component, keys))
        used_keyboards.add(component)
        sources[str(path)] = table.sha256
    settings: dict[str, object] = {
        "Format": "PsychoPy Builder",
        "Columns": {k: v for k, v in found.items()},
        "Keyboard": sorted(used_keyboards),
        "Keys": dict(keys),
        "Rule": "the last key pressed is the rating",
    }
    return ImportedRatings(pd.concat(frames, ignore_index=True), sources, settings)


def _loop_trials(
    table: SourceTable,
    source: str,
    found: Mapping[str, str],
    component: str,
    keys: Mapping[str, int],
) -> pd.DataFrame:
    """The rows of one file's trials loop as rows of the ratings table: those whose sketch
    or image cell is given, each rated by the keyboard ``component``'s last press."""
    keys_column, rt_column = f"{component}.keys", f"{component}.rt"
    for name in (keys_column, rt_column):
        if name not in table.names:
            raise InputError(
                f"{source}: line 1: no column {name!r}; expected the keyboard "
                f"component's .keys and .rt (found {', '.join(table.names)})"
            )
    sketch = table.frame[found["sketch_id"]].astype(str).str.strip()
    image = table.frame[found["image_id"]].astype(str).str.strip()
    kept = ~(sketch.isin(MISSING_VALUES) & image.isin(MISSING_VALUES)).to_numpy()
    check_ids(table, sketch.where(kept, "x"), found["sketch_id"])
    check_ids(table, image.where(kept, "x"), found["image_id"])
    rows = [
        _builder_trial(table, int(row), keys_column, rt_column, keys)
        for row in np.flatnonzero(kept)
    ]
    part = table.frame.loc[kept]
    frame = pd.DataFrame(
        {
            "participant": part[found["participant"]].astype(str).str.strip().to_numpy(),
            "sketch_id": sketch[kept].to_numpy(),
            "image_id": image[kept].to_numpy(),
            "phase": (
                part[found["phase"]].astype(str).str.strip().to_numpy()
                if "phase" in found
                else "main"
            ),
        }
    )
    rating, rt, n_presses, presses = zip(*rows, strict=True) if rows else ([], [], [], [])
    frame["rating"] = pd.array(rating, dtype="Int64")
    frame["rt"] = np.asarray(rt, dtype=float)
    frame["trial"] = np.arange(1, len(frame) + 1)
    frame["n_presses"] = np.asarray(n_presses, dtype=int)
    frame["presses"] = list(presses)
    frame["_source"] = source
    frame["_line"] = table.lines[kept]
    if frame.empty:
        raise InputError(
            f"{source}: no rows of a trials loop (every {found['sketch_id']!r} and "
            f"{found['image_id']!r} cell is empty); expected one row per pair"
        )
    return frame


def _keyboard_of(table: SourceTable) -> str:
    """The one keyboard component of a Builder file (a column ``<name>.keys``)."""
    components = [name.removesuffix(".keys") for name in table.names if name.endswith(".keys")]
    if len(components) == 1:
        return components[0]
    if not components:
        raise InputError(
            f"{table.path}: line 1: no keyboard component (no column ending in "
            ".keys); expected Builder's data file of the rating routine"
        )
    raise InputError(
        f"{table.path}: line 1: keyboard components {', '.join(components)}; name "
        "the one holding the ratings with --keyboard"
    )


def _builder_trial(
    table: SourceTable, row: int, keys_column: str, rt_column: str, keys: Mapping[str, int]
) -> tuple[object, float, int, str]:
    """``(rating, rt, n_presses, presses)`` of one Builder row: the last press rates."""
    cell_keys = str(table.frame[keys_column].iloc[row])
    cell_rt = str(table.frame[rt_column].iloc[row])
    try:
        pressed = _builder_list(cell_keys)
    except (ValueError, SyntaxError):
        raise cell_error(
            table,
            row,
            keys_column,
            "a key or a list of keys as Builder writes them (['2', '3'])",
            cell_keys,
        ) from None
    try:
        times = [parse_number(t) for t in _builder_list(cell_rt)]
    except (ValueError, SyntaxError):
        raise cell_error(
            table,
            row,
            rt_column,
            "a time or a list of times as Builder writes them ([0.51, 0.83])",
            cell_rt,
        ) from None
    if len(times) != len(pressed) or any(not t >= 0 for t in times):
        raise cell_error(
            table,
            row,
            rt_column,
            f"one time of 0 or more per key of {keys_column} ({len(pressed)})",
            cell_rt,
        )
    unknown = [key for key in pressed if key not in keys]
    if unknown:
        raise cell_error(
            table,
            row,
            keys_column,
            f"rating keys ({', '.join(keys)}); pass the study's keys with --keys",
            cell_keys,
        )
    if not pressed:
        return pd.NA, np.nan, 0, "n/a"
    ratings = [keys[key] for key in pressed]
    presses = " ".join(f"{r}@{t:g}" for r, t in zip(ratings, times, strict=True))
    return ratings[-1], times[-1], len(pressed), presses
