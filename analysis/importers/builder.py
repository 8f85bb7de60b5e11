"""PsychoPy Builder's per-participant CSV files (``sbir-study import psychopy``).

The rows of the trials loop, the last key a keyboard component recorded the rating,
as the lab session's rule is (``docs/formats.md``, "Ratings collected elsewhere").
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from sbir_study.foundation.checks import InputError
from sbir_study.foundation.scale import PAPER_SCALE, Scale
from sbir_study.foundation.tables import MISSING_VALUES

from .cells import cell_error, check_ids, find_columns, numbers, parse_number
from .dataset import ImportedRatings
from .delimited import SourceTable, read_delimited

__all__ = ["REPEATS", "read_psychopy"]


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


#: The columns Builder writes for each loop ``L`` on the rows of its iterations.
_LOOP_FIELDS = ("thisN", "thisTrialN", "thisRepN", "thisIndex")
#: What ``--repeats`` may say of a pair a loop showed more than once.
REPEATS = ("keep-last", "keep-first")


def read_psychopy(
    paths: Sequence[str | Path],
    *,
    keys: Mapping[str, int],
    columns: Mapping[str, str] | None = None,
    keyboard: str | None = None,
    encoding: str | None = None,
    scale: Scale = PAPER_SCALE,
    loop: str | None = None,
    practice_loop: str | None = None,
    repeats: str | None = None,
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
    loop
        The loop whose rows are the trials (``--loop``; default: the one loop whose rows
        name pairs). A row belongs to the innermost loop whose ``L.thisN`` it fills.
    practice_loop
        A loop whose rows are read as phase ``practice`` (``--practice-loop``).
    repeats
        What to keep of a pair the trials loop showed more than once (``thisRepN`` above
        0, Builder's ``nReps`` above 1): the rating of its last showing (``keep-last``) or
        its first (``keep-first``), missing if no key was pressed then; without it such a
        loop is refused. The other showings are left out: the ratings table holds one rating
        per participant and pair, a point of the scale.

    Returns
    -------
    ImportedRatings
        A row per row read, in file order (``trial`` from 1 over the rows read); a row
        with empty sketch and image cells belongs to another routine and is left out. The
        rating is the last key; ``n_presses`` and ``presses`` (``rating@seconds``) keep
        every press. A key that is no rating key is refused. A loop around the trials
        loop gives the ``block`` column (its ``thisN`` plus 1).
    """
    if repeats is not None and repeats not in REPEATS:
        raise InputError(f"--repeats: expected one of {', '.join(REPEATS)}, got {repeats!r}")
    if loop is not None and loop == practice_loop:
        raise InputError(f"--practice-loop: {loop!r} is the trials loop (--loop) too")
    columns = dict(columns or {})
    frames, sources, used_keyboards, loops = [], {}, set(), {}
    for path in paths:
        table = read_delimited(Path(path), sep=",", encoding=encoding)
        found = find_columns(
            table,
            columns,
            ("participant", "sketch_id", "image_id", "phase"),
            ("participant", "sketch_id", "image_id"),
        )
        chosen = _read_loops(table, found, loop, practice_loop)
        component = keyboard or _keyboard_of(table, chosen)
        frame = _loop_trials(table, str(path), found, component, keys, chosen)
        frame, loops[str(path)] = _resolve_repeats(table, frame, chosen, repeats)
        frames.append(frame)
        used_keyboards.add(component)
        sources[str(path)] = table.sha256
    settings: dict[str, object] = {
        "Format": "PsychoPy Builder",
        "Columns": {k: v for k, v in found.items()},
        "Keyboard": sorted(used_keyboards),
        "Keys": dict(keys),
        "Rule": "the last key pressed is the rating",
        "Loop": loop,
        "PracticeLoop": practice_loop,
        "Repeats": repeats,
        "Loops": loops,
    }
    return ImportedRatings(pd.concat(frames, ignore_index=True), sources, settings)


@dataclass(frozen=True)
class _FileLoops:
    """The loops of one Builder file and which of its rows are read.

    ``innermost`` and ``around`` name each row's innermost loop and the loop directly
    around it (``""``: none); ``pairs`` is whether the row names a pair; ``main`` and
    ``practice`` are the loops read as the trials and as practice (None: not given, or a
    file without loop columns, whose rows naming a pair are all read).
    """

    names: tuple[str, ...]
    innermost: np.ndarray
    around: np.ndarray
    pairs: np.ndarray
    main: str | None
    practice: str | None

    @property
    def read(self) -> np.ndarray:
        """The rows read: those naming a pair of the trials and practice loops (of a file
        without loop columns, every row naming a pair)."""
        if not self.names:
            return self.pairs
        return self.pairs & np.isin(self.innermost, [n for n in (self.main, self.practice) if n])

    def rows(self, name: str) -> int:
        """The rows of loop ``name`` that name a pair."""
        return int((self.pairs & (self.innermost == name)).sum())


def _loop_names(table: SourceTable) -> tuple[str, ...]:
    """The loops of a file, in header order: each ``L`` with a column ``L.thisN`` (or
    another of :data:`_LOOP_FIELDS`)."""
    names: dict[str, None] = {}
    for column in table.names:
        name, dot, field = column.rpartition(".")
        if dot and name and field in _LOOP_FIELDS:
            names[name] = None
    return tuple(names)


def _filled(table: SourceTable, name: str) -> np.ndarray:
    """The rows of loop ``name``: those filling any of its loop columns."""
    filled = np.zeros(len(table.frame), dtype=bool)
    for field in _LOOP_FIELDS:
        column = f"{name}.{field}"
        if column in table.names:
            filled |= ~table.frame[column].astype(str).str.strip().isin(MISSING_VALUES).to_numpy()
    return filled


def _read_loops(
    table: SourceTable, found: Mapping[str, str], main: str | None, practice: str | None
) -> _FileLoops:
    """Which loop's rows are the trials and which the practice, checked against the file.

    A loop inside another fills fewer rows than it (Builder also writes a row at the end
    of each outer iteration), so a row's innermost loop is the one of fewest rows among
    those it fills; of equals, the later in the header, as Builder adds an inner loop
    after the loop around it.
    """
    frame = table.frame
    sketch = frame[found["sketch_id"]].astype(str).str.strip()
    image = frame[found["image_id"]].astype(str).str.strip()
    pairs = ~(sketch.isin(MISSING_VALUES) & image.isin(MISSING_VALUES)).to_numpy()
    names = _loop_names(table)
    filled = {name: _filled(table, name) for name in names}
    order = sorted(names, key=lambda n: (filled[n].sum(), -names.index(n)))
    innermost = np.full(len(frame), "", dtype=object)
    around = np.full(len(frame), "", dtype=object)
    for name in order:
        around[filled[name] & (innermost != "") & (around == "")] = name
        innermost[filled[name] & (innermost == "")] = name
    loops = _FileLoops(names, innermost, around, pairs, None, None)
    if not names:
        if main is not None or practice is not None:
            option = "--loop" if main is not None else "--practice-loop"
            raise InputError(
                f"{table.path}: line 1: no loop columns (none ending in .thisN); {option} "
                "expects Builder's data file, which names each loop's rows"
            )
        return loops
    with_pairs = [name for name in names if loops.rows(name)]
    listed = _listed(loops, with_pairs)
    for option, given in (("--loop", main), ("--practice-loop", practice)):
        if given is not None and given not in with_pairs:
            what = "no loop" if given not in names else "no row naming a pair in loop"
            raise InputError(
                f"{table.path}: {option}: {what} {given!r}; the loops with pairs are {listed}"
            )
    if main is None:
        others = [name for name in with_pairs if name != practice]
        if len(others) > 1:
            raise InputError(
                f"{table.path}: found loops {_listed(loops, others)}: name the one holding "
                "the ratings with --loop (and a practice loop with --practice-loop)"
            )
        main = others[0] if others else None
    return dataclasses.replace(loops, main=main, practice=practice)


def _listed(loops: _FileLoops, names: Sequence[str]) -> str:
    """``practice (2 rows) and trials (15 rows)``."""
    named = [
        f"{name} ({loops.rows(name)} row{'' if loops.rows(name) == 1 else 's'})" for name in names
    ]
    if len(named) < 2:
        return "".join(named) or "none"
    return f"{', '.join(named[:-1])} and {named[-1]}"


def _loop_trials(
    table: SourceTable,
    source: str,
    found: Mapping[str, str],
    component: str,
    keys: Mapping[str, int],
    loops: _FileLoops,
) -> pd.DataFrame:
    """The rows read of one file as rows of the ratings table, each rated by the keyboard
    ``component``'s last press: those of the trials and practice loops that name a pair
    (in a file without loop columns, every row naming a pair)."""
    keys_column, rt_column = f"{component}.keys", f"{component}.rt"
    for name in (keys_column, rt_column):
        if name not in table.names:
            raise InputError(
                f"{source}: line 1: no column {name!r}; expected the keyboard "
                f"component's .keys and .rt (found {', '.join(table.names)})"
            )
    kept = loops.read
    practice = kept & (loops.innermost == loops.practice)
    sketch = table.frame[found["sketch_id"]].astype(str).str.strip()
    image = table.frame[found["image_id"]].astype(str).str.strip()
    check_ids(table, sketch.where(kept, "x"), found["sketch_id"])
    check_ids(table, image.where(kept, "x"), found["image_id"])
    rows = [
        _builder_trial(table, int(row), keys_column, rt_column, keys)
        for row in np.flatnonzero(kept)
    ]
    part = table.frame.loc[kept]
    phase = (
        part[found["phase"]].astype(str).str.strip().to_numpy()
        if "phase" in found
        else np.full(len(part), "main", dtype=object)
    )
    phase[practice[kept]] = "practice"
    frame = pd.DataFrame(
        {
            "participant": part[found["participant"]].astype(str).str.strip().to_numpy(),
            "sketch_id": sketch[kept].to_numpy(),
            "image_id": image[kept].to_numpy(),
            "phase": phase,
        }
    )
    rating, rt, n_presses, presses = zip(*rows, strict=True) if rows else ([], [], [], [])
    frame["rating"] = pd.array(rating, dtype="Int64")
    frame["rt"] = np.asarray(rt, dtype=float)
    frame["trial"] = np.arange(1, len(frame) + 1)
    block = _blocks(table, loops)[kept]
    if block.notna().any():
        frame["block"] = block.to_numpy()
    frame["n_presses"] = np.asarray(n_presses, dtype=int)
    frame["presses"] = list(presses)
    frame["_source"] = source
    frame["_line"] = table.lines[kept]
    frame["_loop"] = loops.innermost[kept] if loops.names else ""
    if not (kept & ~practice).any():
        raise InputError(
            f"{source}: no rows of a trials loop (every {found['sketch_id']!r} and "
            f"{found['image_id']!r} cell is empty); expected one row per pair"
        )
    return frame


def _blocks(table: SourceTable, loops: _FileLoops) -> pd.Series:
    """Each row's block: the ``thisN`` plus 1 of the loop directly around its loop (<NA>:
    none)."""
    block = pd.Series(pd.NA, index=table.frame.index, dtype="Int64")
    for name in pd.unique(loops.around[loops.around != ""]):
        column = f"{name}.thisN"
        if column not in table.names:
            continue
        rows = loops.around == name
        values = numbers(table, column, ".", "a loop's iteration number (0, 1, ...)")
        bad = rows & ~((values >= 0) & (values == np.round(values)))
        if bad.any():
            row = int(np.argmax(bad))
            raise cell_error(
                table,
                row,
                column,
                "a loop's iteration number (0, 1, ...)",
                str(table.frame[column].iloc[row]),
            )
        block[rows] = values[rows].astype(np.int64) + 1
    return block


def _resolve_repeats(
    table: SourceTable, frame: pd.DataFrame, loops: _FileLoops, repeats: str | None
) -> tuple[pd.DataFrame, dict[str, dict[str, object]]]:
    """The rows of one file with each repeated pair of the trials loop kept as ``repeats``
    says, and what the sidecar records of the file's loops.

    A pair is repeated when a participant's trials loop shows it again; Builder's
    ``thisRepN`` above 0 says the loop ran more than once (``nReps``). Practice may repeat
    its pairs: it is never analysed.
    """
    main = frame["phase"].ne("practice") & frame["_loop"].eq(loops.main or "")
    key = ["participant", "sketch_id", "image_id", "phase"]
    again = main & frame.duplicated(key, keep=False)
    if again.any() and repeats is None:
        column = f"{loops.main}.thisRepN"
        if column in table.names:
            reps = numbers(table, column, ".", "a loop's repetition number (0, 1, ...)")
            rows = np.flatnonzero(reps > 0)
            if len(rows):
                row = int(rows[0])
                raise InputError(
                    f"{table.path}: line {table.lines[row]}: column {column!r} is "
                    f"{table.frame[column].iloc[row].strip()}: loop {loops.main!r} ran more "
                    "than once (nReps above 1) and showed its pairs again; say which rating "
                    "to keep with --repeats keep-last or keep-first"
                )
        second = frame[main & frame.duplicated(key)].iloc[0]
        first = frame[main & (frame[key] == second[key]).all(axis=1)].iloc[0]
        where = f"loop {loops.main!r}" if loops.main else "the file"
        raise InputError(
            f"{table.path}: line {second['_line']}: {where} shows sketch "
            f"{second['sketch_id']!r} image {second['image_id']!r} again (first at line "
            f"{first['_line']}); say which rating to keep with --repeats keep-last or keep-first"
        )
    if repeats is not None and again.any():
        frame = _kept_repeats(frame, main, key, repeats)
    read = {}
    for name in loops.names:
        if loops.rows(name):
            role = {loops.main: "main", loops.practice: "practice"}.get(name, "left out")
            entry: dict[str, object] = {"ReadAs": role, "Rows": loops.rows(name)}
            if role == "main":
                entry["Kept"] = int((frame["_loop"] == name).sum())
            read[name] = entry
    return frame.drop(columns="_loop"), read


def _kept_repeats(
    frame: pd.DataFrame, main: pd.Series, key: list[str], repeats: str
) -> pd.DataFrame:
    """One row per pair of the trials loop: its last showing, or its first."""
    drop = main & frame.duplicated(key, keep="first" if repeats == "keep-first" else "last")
    return frame[~drop].reset_index(drop=True)


def _keyboard_of(table: SourceTable, loops: _FileLoops) -> str:
    """The keyboard component of a Builder file (a column ``<name>.keys``) holding the
    ratings: the only one, else the only one that ran on the rows read (Builder writes
    ``None`` for a component that ran with no press, nothing for one of another routine)."""
    components = [name.removesuffix(".keys") for name in table.names if name.endswith(".keys")]
    if not components:
        raise InputError(
            f"{table.path}: line 1: no keyboard component (no column ending in "
            ".keys); expected Builder's data file of the rating routine"
        )
    ran = [
        name
        for name in components
        if (~table.frame[f"{name}.keys"][loops.read].str.strip().isin(MISSING_VALUES)).any()
    ]
    if len(components) == 1 or len(ran) == 1:
        return components[0] if len(components) == 1 else ran[0]
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
