"""Ratings collected with other tools, turned into the BIDS dataset a session records.

``sbir-study import`` reads ratings that a lab collected elsewhere and writes the
same dataset ``sbir-study run`` records (``docs/formats.md``, "Ratings collected
elsewhere"): one ``sub-<label>/beh/sub-<label>_task-sbirrating_beh.tsv`` and its
sidecar per participant, ``participants.tsv`` with each participant's id as the
source gave it (``source_id``), and ``dataset_description.json``; ``sbir-study
analyze`` reads it as it reads a recorded one. Each sidecar records the rating
scale, and under ``Imported`` the format, the source files with their SHA-256, and
every decision taken in reading them (the column mapping, the separator, the text
encoding, the decimal mark, the unit of the response times, the keys).

Formats
-------
* **Long tables** (:func:`read_long_table`): one row per rated pair, its columns
  named by a mapping (``participant=Subject,sketch_id=Sketch,...``; a column
  named as the ratings table names it, in any case, is found by itself). The
  separator is sniffed (``,``, ``;``, tab or ``|``) unless given; numbers may
  use a decimal comma in a table that is not comma-separated; the text may be
  UTF-8 with or without a byte-order mark, UTF-16 with one, or any encoding
  Python knows when named. R's ``write.csv`` output (quoted cells, ``NA``, a
  first column of row names with an empty name) is read as written.
* **PsychoPy Builder** per-participant CSV files (:func:`read_psychopy`): the
  rows of the trials loop (its condition columns name the sketch and the image),
  a keyboard component's ``.keys`` and ``.rt`` (the last press is the rating,
  the lab's rule: with "all keys" stored, Builder writes ``['2', '3']``), keys
  mapped to the scale's points, the participant from the ``participant`` column
  of Builder's expInfo.
* **jsPsych** data (:func:`read_jspsych`), ``.json`` or ``.csv`` as
  ``jsPsych.data.get()`` writes them: the keyboard-response trials, the key
  (``response``) mapped to the scale's points, ``rt`` in milliseconds, each
  stimulus (a path, or the ``src`` of the images of its HTML) matched to a pair
  through a stimulus set's manifest, or fields naming the sketch and the image.
* **Wide exports** of survey tools (:func:`read_wide`; Qualtrics, Google Forms,
  LimeSurvey): one row per participant, one column per pair, a mapping file from
  column to pair (:func:`read_wide_mapping`), Qualtrics' two more header rows found
  and left out, answers read by their leading number (``1 - best match``) or labels.

Every problem with a source is an :class:`~sbir_study.foundation.checks.InputError`
of one line naming the file, the line (the header is line 1 of a file whose
first line is its header) and the column. A cell is missing when it is empty or
one of :data:`~sbir_study.foundation.tables.MISSING_VALUES` (``n/a``, ``NA``,
``NaN``, ``nan``), as in every reader of the toolkit. Participants' ids become
labels by the toolkit's one rule
(:func:`~sbir_study.foundation.checks.participant_label`).

Ratings that look like typos are warned about (:class:`ImportedRatingsWarning`),
with the closest id that others rated: an image rated once, by one participant,
that no one else rated, and a sketch rated by one participant only.
"""

from __future__ import annotations

import ast
import codecs
import csv
import json
import re
import urllib.parse
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd

from sbir_study.foundation import bids
from sbir_study.foundation.checks import (
    ID_RULE,
    InputError,
    bad_ids,
    closest,
    did_you_mean,
    participant_label,
)
from sbir_study.foundation.scale import PAPER_SCALE, Scale
from sbir_study.foundation.tables import (
    COLON,
    MISSING_VALUES,
    TextFile,
    read_header,
    read_rows,
)

from .validation import validate_ratings

__all__ = [
    "IMPORT_COLUMNS",
    "JSPSYCH_COLUMNS",
    "JSPSYCH_TRIAL_TYPES",
    "SEPARATORS",
    "WIDE_MAPPING_COLUMNS",
    "ImportedRatings",
    "ImportedRatingsWarning",
    "answer_rating",
    "decode_text",
    "parse_answers",
    "parse_columns",
    "parse_keys",
    "parse_number",
    "parse_select",
    "read_jspsych",
    "read_long_table",
    "read_psychopy",
    "read_wide",
    "read_wide_mapping",
    "sniff_separator",
    "stimulus_paths",
    "write_imported_dataset",
]

#: The columns of the ratings table an import fills: the first four are required.
IMPORT_COLUMNS = (
    "participant",
    "sketch_id",
    "image_id",
    "rating",
    "rt",
    "phase",
    "trial",
    "anchor_rating",
)
_REQUIRED = IMPORT_COLUMNS[:4]
#: Other names under which a source's column is found without a mapping (in any case).
_ALIASES = {"participant": ("participant_id", "subject", "subject_id")}
#: The separators :func:`sniff_separator` tells apart, in the order a tie is refused in.
SEPARATORS = (",", ";", "\t", "|")
_SEPARATOR_NAMES = {",": "comma", ";": "semicolon", "\t": "tab", "|": "vertical bar"}
#: Lines the sniffer looks at below the header.
_SNIFFED_LINES = 50
_DECIMAL_COMMA = re.compile(r"[+-]?\d*,\d+")
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_RT_UNITS = {"s": 1.0, "ms": 0.001}


class ImportedRatingsWarning(UserWarning):
    """Imported ratings were read, but something in them looks like a mistake."""


@dataclass
class ImportedRatings:
    """Ratings read from other tools' files, before they are written as a dataset.

    ``ratings`` holds one row per rated pair: ``participant`` (the id as the source
    gave it), ``sketch_id``, ``image_id``, ``phase``, ``rating`` (Int64), ``rt``
    (seconds), ``trial``, and where the row came from, ``_source`` and ``_line``;
    optionally ``anchor_rating``, ``n_presses`` and ``presses``. ``sources`` maps
    each file read to its SHA-256; ``settings`` records how they were read.
    """

    ratings: pd.DataFrame
    sources: dict[str, str]
    settings: dict = field(default_factory=dict)


# --- decisions: encoding, separator, numbers, mappings ---------------------------------------


def decode_text(path: str | Path, encoding: str | None = None) -> tuple[str, str, str]:
    """The text of a file, its SHA-256 and the encoding it was read in.

    A byte-order mark decides the encoding (UTF-8, UTF-16, UTF-32) and is dropped;
    without one the file is UTF-8 unless ``encoding`` names another (``cp1252``,
    ``latin-1``, ``utf-16-le``: any name Python's :mod:`codecs` knows). A byte that
    is not of the encoding is refused naming its line.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "r.csv"
    >>> _ = path.write_bytes("Teilnehmer;Bewertung\\r\\nJürgen;3\\r\\n".encode("utf-16"))
    >>> text, sha256, used = decode_text(path)
    >>> text.splitlines()[1], used
    ('Jürgen;3', 'utf-16')
    """
    import hashlib

    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path}: is a folder; expected a text file")
    try:
        data = path.read_bytes()
    except OSError as error:
        raise InputError(f"{path}: cannot be read ({error.strerror or error})") from None
    sha256 = hashlib.sha256(data).hexdigest()
    used = next((name for bom, name in _BOMS if data.startswith(bom)), None)
    if used is None:
        used = encoding or "utf-8"
        try:
            codecs.lookup(used)
        except LookupError:
            raise InputError(
                f"--encoding: {used!r} is not an encoding Python knows; expected "
                "a name such as utf-8, cp1252, latin-1 or utf-16"
            ) from None
    try:
        text = data.decode(used)
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        hint = "" if encoding else "; name its encoding with --encoding (cp1252, latin-1, ...)"
        raise InputError(
            f"{path}: line {line}: byte 0x{data[error.start]:02x} is not {used}{hint}"
        ) from None
    return text.removeprefix("\ufeff"), sha256, used


def sniff_separator(
    lines: Sequence[str], expected: Sequence[str] = (), *, what: str = "table"
) -> str:
    """The field separator of a table, from its header and first lines.

    A candidate (:data:`SEPARATORS`) fits when it splits the header into at least
    two names and every line below into as many fields (quoted fields honoured);
    with ``expected`` (column names a mapping asks for) it must also find those in
    the header. One fitting candidate is the separator; none, or more than one,
    is refused (pass ``--sep``): a guess could shift every cell.

    Examples
    --------
    >>> sniff_separator(["Subject;Sketch;Image;Response;RT", "P-7;s1;a.png;3;0,734"])
    ';'
    >>> sniff_separator(['"","participant","rating"', '"1","01",NA'])
    ','
    """
    lines = [line for line in lines if line.strip()][: _SNIFFED_LINES + 1]
    if not lines:
        raise InputError(f"{what}: line 1: empty; expected a header line")
    fitting = []
    for sep in SEPARATORS:
        rows = list(csv.reader(lines, delimiter=sep))
        header = [name.strip() for name in rows[0]]
        if len(header) < 2 or any(len(row) != len(header) for row in rows[1:]):
            continue
        if any(
            name not in header and name.lower() not in {h.lower() for h in header}
            for name in expected
        ):
            continue
        fitting.append(sep)
    if len(fitting) == 1:
        return fitting[0]
    if not fitting:
        raise InputError(
            f"{what}: cannot tell the separator (none of comma, semicolon, tab, "
            "vertical bar splits every line alike); pass --sep"
        )
    names = " and ".join(_SEPARATOR_NAMES[s] for s in fitting)
    raise InputError(f"{what}: the separator could be {names}; pass --sep")


def parse_number(text: str, *, decimal: str = ".") -> float:
    """A number cell as a float; NaN for a missing value.

    ``decimal`` is the decimal mark: ``"."`` or ``","`` (``0,734``). A cell with a
    thousands separator, or that is not a number, raises ``ValueError``.

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


def parse_columns(text: str | None, *, option: str = "--columns") -> dict[str, str]:
    """A column mapping from its text: ``participant=Subject,sketch_id=Sketch,...``.

    Each entry names a column of the ratings table (:data:`IMPORT_COLUMNS`) and the
    source's column that holds it; a source name may hold any character but ``,``
    and ``=`` (surrounding blanks dropped). A column of the ratings table named
    twice, or one it does not have, is refused.

    Examples
    --------
    >>> parse_columns("participant=Subject, rating = Response")
    {'participant': 'Subject', 'rating': 'Response'}
    """
    mapping: dict[str, str] = {}
    if text is None or not text.strip():
        return mapping
    for entry in text.split(","):
        target, equals, source = entry.partition("=")
        target, source = target.strip(), source.strip()
        if not equals or not target or not source:
            raise InputError(
                f"{option}: expected COLUMN=SOURCE entries separated by commas "
                f"(participant=Subject,rating=Response), got {entry.strip()!r}"
            )
        if target not in IMPORT_COLUMNS:
            hint = did_you_mean(target, IMPORT_COLUMNS)
            raise InputError(
                f"{option}: {target!r} is not a column of the ratings table"
                f"{hint}; expected one of {', '.join(IMPORT_COLUMNS)}"
            )
        if target in mapping:
            raise InputError(f"{option}: {target!r} is mapped twice; expected each column once")
        mapping[target] = source
    return mapping


def parse_keys(text: str, scale: Scale, *, option: str = "--keys") -> dict[str, int]:
    """The rating each key stands for: ``1,2,3,4,5`` gives the scale's points in order.

    The keys are named as the source records them (PsychoPy's ``1``, ``num_1``,
    ``a``; jsPsych's ``1``, ``ArrowLeft``), one per point of ``scale``, its low end
    first, separated by commas.

    Examples
    --------
    >>> parse_keys("a,s,d,f,g", Scale(1, 5))
    {'a': 1, 's': 2, 'd': 3, 'f': 4, 'g': 5}
    """
    keys = [key.strip() for key in text.split(",")]
    if len(keys) != scale.k or any(not key for key in keys):
        raise InputError(
            f"{option}: expected {scale.k} keys separated by commas, one per point "
            f"of the scale {scale} (low end first), got {text!r}"
        )
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:
        raise InputError(
            f"{option}: key {repeated[0]!r} is given twice; expected one key per point"
        )
    return dict(zip(keys, scale.points, strict=True))


# --- reading a delimited source ---------------------------------------------------------------


@dataclass(frozen=True)
class _Table:
    """A delimited source file read as text cells, with each row's line."""

    path: str
    sha256: str
    encoding: str
    sep: str
    names: tuple[str, ...]
    frame: pd.DataFrame
    lines: np.ndarray


def _read_delimited(
    path: Path, *, sep: str | None, encoding: str | None, expected: Sequence[str] = ()
) -> _Table:
    """A delimited file's cells as text (the toolkit's table reader on its decoded text)."""
    text, sha256, used = decode_text(path, encoding)
    return _parse_delimited(path, text, sha256, used, sep=sep, expected=expected)


def _parse_delimited(
    path: Path,
    text: str,
    sha256: str,
    used: str,
    *,
    sep: str | None,
    expected: Sequence[str] = (),
) -> _Table:
    """A delimited file's cells as text, from its text as :func:`decode_text` gave it."""
    if not text.strip():
        raise InputError(f"{path}: line 1: empty; expected a header line and one row per pair")
    if sep is None:
        sep = sniff_separator(text.splitlines()[: _SNIFFED_LINES + 1], expected, what=str(path))
    data = text.encode("utf-8")
    # The toolkit's reader takes UTF-8: it gets the decoded text, and names the source file.
    file = TextFile(
        Path(path),
        sha256,
        _count_lines(text),
        len(data),
        COLON,
        complete=text.endswith(("\n", "\r")),
        _data=data,
    )
    header = read_header(file, sep, quote=True)
    rows = read_rows([(file, header)], categorical=False)
    frame = rows.frame.astype(object)
    return _Table(str(path), sha256, used, sep, header.names, frame, rows.lines)


def _count_lines(text: str) -> int:
    """Lines as an editor shows them (LF, CR LF and a lone CR each end one)."""
    ends = text.count("\n") + text.count("\r") - text.count("\r\n")
    return ends + (not text.endswith(("\n", "\r")) and bool(text))


def _find_columns(
    table: _Table, mapping: Mapping[str, str], targets: Sequence[str], required: Sequence[str]
) -> dict[str, str]:
    """Which source column holds each column of the ratings table in ``targets``."""
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
            n for alias in (target, *_ALIASES.get(target, ())) for n in lower.get(alias, [])
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


def _cell_error(table: _Table, row: int, column: str, expected: str, value: str) -> InputError:
    return InputError(
        f"{table.path}: line {table.lines[row]}: column {column!r}: expected "
        f"{expected}, got {value!r}"
    )


def _numbers(table: _Table, column: str, decimal: str, expected: str) -> np.ndarray:
    """A column's cells as numbers (NaN where missing), each distinct cell parsed once."""
    codes, distinct = pd.factorize(table.frame[column], use_na_sentinel=False)
    values = np.empty(len(distinct), dtype=float)
    for index, cell in enumerate(distinct):
        try:
            values[index] = parse_number(str(cell), decimal=decimal)
        except ValueError:
            raise _cell_error(
                table, int(np.argmax(codes == index)), column, expected, str(cell)
            ) from None
    return values[codes]


def _ratings(table: _Table, column: str, values: np.ndarray, scale: Scale) -> pd.Series:
    """Ratings as whole points of ``scale`` (Int64; a missing one <NA>)."""
    given = ~np.isnan(values)
    bad = given & ((values != np.round(values)) | (values < scale.low) | (values > scale.high))
    if bad.any():
        row = int(np.argmax(bad))
        raise _cell_error(
            table,
            row,
            column,
            f"a rating {scale.low}..{scale.high} (the scale {scale}) or a missing value",
            str(table.frame[column].iloc[row]),
        )
    return pd.Series(np.where(given, values, np.nan)).round().astype("Int64")


def _check_ids(table: _Table, cells: pd.Series, column: str) -> None:
    """Refuse a sketch or image id off the id rule, naming its line and the source column."""
    distinct = pd.unique(cells)
    bad = bad_ids(distinct) | pd.Index(distinct).isin(list(MISSING_VALUES))
    if bad.any():
        row = int(np.argmax(cells.isin(distinct[bad]).to_numpy()))
        raise _cell_error(table, row, column, ID_RULE, str(cells.iloc[row]))


def _decimal_of(table: _Table, columns: Sequence[str], decimal: str | None) -> str:
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


def _rt_factor(unit: str) -> float:
    if unit not in _RT_UNITS:
        raise InputError(f"--rt-unit: expected one of {', '.join(_RT_UNITS)}, got {unit!r}")
    return _RT_UNITS[unit]


# --- long tables ----------------------------------------------------------------------------


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
    """Read long tables: one row per rated pair, columns named by ``columns``.

    Parameters
    ----------
    paths
        One or more files, each with a header naming the same columns.
    columns
        Column of the ratings table -> the source's column (:func:`parse_columns`).
        A column not mapped is found by its own name in any case (``participant``
        also as ``participant_id``, ``subject``, ``subject_id``); ``participant``,
        ``sketch_id``, ``image_id`` and ``rating`` must be found, ``rt``,
        ``phase``, ``trial`` and ``anchor_rating`` are read when they are.
    sep
        The field separator; None sniffs it (:func:`sniff_separator`).
    encoding
        The text encoding of a file without a byte-order mark (default UTF-8).
    decimal
        ``"."`` or ``","``; None: ``","`` when a number cell of a table that is not
        comma-separated has a decimal comma.
    rt_unit
        ``"s"`` or ``"ms"``: the unit of the ``rt`` column (written in seconds).
    scale
        The rating scale; a rating off it is refused naming its line.

    Returns
    -------
    ImportedRatings
        With a row's ``trial`` its own column when mapped, else its place among
        the participant's rows in the file (from 1); ``phase`` ``main`` unless
        mapped. An R row-names column (the first, with an empty name) is left out.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "export.csv"
    >>> _ = path.write_text("Subject;Sketch;Image;Response;RT\\nP-7;s1;a;3;0,734\\n")
    >>> found = read_long_table([path], columns=parse_columns(
    ...     "participant=Subject,sketch_id=Sketch,image_id=Image,rating=Response"))
    >>> found.ratings[["participant", "sketch_id", "rating", "rt"]]
      participant sketch_id  rating     rt
    0         P-7        s1       3  0.734
    >>> found.settings["Separator"], found.settings["Decimal"]
    (';', ',')
    """
    columns = dict(columns or {})
    factor = _rt_factor(rt_unit)
    frames, sources, used = [], {}, {}
    for path in paths:
        table = _read_delimited(
            Path(path), sep=sep, encoding=encoding, expected=list(columns.values())
        )
        found = _find_columns(table, columns, IMPORT_COLUMNS, _REQUIRED)
        if used and found != used["Columns"]:
            raise InputError(
                f"{path}: line 1: its columns differ from those of the first file; "
                "expected files of one table"
            )
        number_columns = [found[c] for c in ("rating", "rt", "anchor_rating") if c in found]
        mark = _decimal_of(table, number_columns, decimal)
        frame = pd.DataFrame(
            {
                target: table.frame[found[target]].astype(str).str.strip()
                for target in ("participant", "sketch_id", "image_id")
            }
        )
        for target in ("sketch_id", "image_id"):
            _check_ids(table, frame[target], found[target])
        point = f"a rating {scale.low}..{scale.high} or a missing value"
        frame["rating"] = _ratings(
            table, found["rating"], _numbers(table, found["rating"], mark, point), scale
        )
        if "anchor_rating" in found:
            frame["anchor_rating"] = _ratings(
                table,
                found["anchor_rating"],
                _numbers(table, found["anchor_rating"], mark, point),
                scale,
            )
        frame["rt"] = (
            _numbers(table, found["rt"], mark, "a time or a missing value") * factor
            if "rt" in found
            else np.nan
        )
        if "rt" in found and (frame["rt"] < 0).any():
            row = int(np.argmax((frame["rt"] < 0).to_numpy()))
            raise _cell_error(
                table,
                row,
                found["rt"],
                "a time of 0 or more",
                str(table.frame[found["rt"]].iloc[row]),
            )
        frame["phase"] = (
            table.frame[found["phase"]].astype(str).str.strip() if "phase" in found else "main"
        )
        if "trial" in found:
            frame["trial"] = table.frame[found["trial"]].astype(str).str.strip()
        frame["_source"] = str(path)
        frame["_line"] = table.lines
        frames.append(frame)
        sources[str(path)] = table.sha256
        used.setdefault("Columns", found)
        used.setdefault("Separator", table.sep)
        used.setdefault("Encoding", {})[str(path)] = table.encoding
        used.setdefault("Decimal", mark)
    ratings = pd.concat(frames, ignore_index=True)
    if "trial" not in ratings:
        ratings["trial"] = ratings.groupby(["_source", "participant"], sort=False).cumcount() + 1
    settings = {
        "Format": "long table",
        "Columns": used["Columns"],
        "Separator": used["Separator"],
        "Encoding": used["Encoding"],
        "Decimal": used["Decimal"],
        "RtUnit": rt_unit,
    }
    return ImportedRatings(ratings, sources, settings)


# --- PsychoPy Builder -----------------------------------------------------------------------


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
    paths
        Builder's CSV files (File > Preferences "Save csv file (trial-by-trial)").
    keys
        The rating of each key (:func:`parse_keys`).
    columns
        Columns of the ratings table -> Builder's columns: the loop's condition
        columns naming the sketch and the image (``sketch_id=sketch,...``;
        default ``sketch_id``, ``image_id``), the participant (default Builder's
        expInfo field ``participant``), optionally ``phase``.
    keyboard
        The keyboard component whose ``.keys`` and ``.rt`` hold the ratings
        (default: the one component with a ``.keys`` column).
    encoding
        The text encoding of a file without a byte-order mark (default UTF-8).
    scale
        The rating scale.

    Returns
    -------
    ImportedRatings
        One row per row of the loop (a row whose sketch and image cells are both
        empty belongs to another routine and is left out), in file order
        (``trial`` from 1). The rating is the last key pressed; ``n_presses`` and
        ``presses`` (``rating@seconds`` from the component's start) keep every
        press of a list Builder stored. A key that is not a rating key is refused.
    """
    columns = dict(columns or {})
    frames, sources, used_keyboards = [], {}, set()
    for path in paths:
        table = _read_delimited(Path(path), sep=",", encoding=encoding)
        found = _find_columns(
            table,
            columns,
            ("participant", "sketch_id", "image_id", "phase"),
            ("participant", "sketch_id", "image_id"),
        )
        component = keyboard or _keyboard_of(table)
        keys_column, rt_column = f"{component}.keys", f"{component}.rt"
        for name in (keys_column, rt_column):
            if name not in table.names:
                raise InputError(
                    f"{path}: line 1: no column {name!r}; expected the keyboard "
                    f"component's .keys and .rt (found {', '.join(table.names)})"
                )
        used_keyboards.add(component)
        sketch = table.frame[found["sketch_id"]].astype(str).str.strip()
        image = table.frame[found["image_id"]].astype(str).str.strip()
        blank = sketch.isin(MISSING_VALUES) & image.isin(MISSING_VALUES)
        kept = ~blank.to_numpy()
        _check_ids(table, sketch.where(kept, "x"), found["sketch_id"])
        _check_ids(table, image.where(kept, "x"), found["image_id"])
        rows = []
        for row in np.flatnonzero(kept):
            rows.append(_builder_trial(table, int(row), keys_column, rt_column, keys))
        part = table.frame.loc[~blank.to_numpy()]
        frame = pd.DataFrame(
            {
                "participant": part[found["participant"]].astype(str).str.strip().to_numpy(),
                "sketch_id": sketch[~blank].to_numpy(),
                "image_id": image[~blank].to_numpy(),
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
        frame["_source"] = str(path)
        frame["_line"] = table.lines[~blank.to_numpy()]
        if frame.empty:
            raise InputError(
                f"{path}: no rows of a trials loop (every {found['sketch_id']!r} and "
                f"{found['image_id']!r} cell is empty); expected one row per pair"
            )
        frames.append(frame)
        sources[str(path)] = table.sha256
    settings = {
        "Format": "PsychoPy Builder",
        "Columns": {k: v for k, v in found.items()},
        "Keyboard": sorted(used_keyboards),
        "Keys": dict(keys),
        "Rule": "the last key pressed is the rating",
    }
    return ImportedRatings(pd.concat(frames, ignore_index=True), sources, settings)


def _keyboard_of(table: _Table) -> str:
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
    table: _Table, row: int, keys_column: str, rt_column: str, keys: Mapping[str, int]
) -> tuple:
    """``(rating, rt, n_presses, presses)`` of one Builder row: the last press rates."""
    cell_keys = str(table.frame[keys_column].iloc[row])
    cell_rt = str(table.frame[rt_column].iloc[row])
    try:
        pressed = _builder_list(cell_keys)
    except (ValueError, SyntaxError):
        raise _cell_error(
            table,
            row,
            keys_column,
            "a key or a list of keys as Builder writes them (['2', '3'])",
            cell_keys,
        ) from None
    try:
        times = [parse_number(t) for t in _builder_list(cell_rt)]
    except (ValueError, SyntaxError):
        raise _cell_error(
            table,
            row,
            rt_column,
            "a time or a list of times as Builder writes them ([0.51, 0.83])",
            cell_rt,
        ) from None
    if len(times) != len(pressed) or any(not t >= 0 for t in times):
        raise _cell_error(
            table,
            row,
            rt_column,
            f"one time of 0 or more per key of {keys_column} ({len(pressed)})",
            cell_rt,
        )
    unknown = [key for key in pressed if key not in keys]
    if unknown:
        raise _cell_error(
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


# --- jsPsych ----------------------------------------------------------------------------------

#: jsPsych's plugins whose trials are ratings: a key pressed while a stimulus is shown.
JSPSYCH_TRIAL_TYPES = ("html-keyboard-response", "image-keyboard-response")
#: The plugin of ``sbir-study serve``'s page: its ratings are on the server, not in jsPsych's data.
_SBIR_PLUGIN = "sbir-rating"
#: The columns of the ratings table a jsPsych import reads, each from a field of the trials.
JSPSYCH_COLUMNS = ("participant", "sketch_id", "image_id", "phase", "rating", "rt")
#: The field of a keyboard trial holding the key (jsPsych 6.3 and later; ``key_press``
#: with a key code before).
_JSPSYCH_KEY_FIELDS = ("response", "key_press")
_ANCHOR_PHASES = ("anchor_demo", "anchor_repeat")
_JSON_GAP = re.compile(r"[\s,]*")


class _Sources(HTMLParser):
    """Every ``src`` of an HTML fragment, its character references resolved."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sources: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.sources += [value for name, value in attrs if name == "src" and value]


def stimulus_paths(stimulus: str, *, html: bool = True) -> list[str]:
    """The files a jsPsych stimulus names: every ``src`` of its HTML, or the path itself.

    An ``html-keyboard-response`` trial's stimulus is HTML, whose ``<img src="...">``
    (any element's ``src``) name the files, and a text without them none; an
    ``image-keyboard-response`` trial's (``html=False``) is the path of its image.

    Examples
    --------
    >>> stimulus_paths('<img src="sk/cat.png"><img src=\\'img/cat/a&amp;b.jpg\\'>')
    ['sk/cat.png', 'img/cat/a&b.jpg']
    >>> stimulus_paths("<p>Press a key</p>"), stimulus_paths("img/a.jpg", html=False)
    ([], ['img/a.jpg'])
    """
    text = stimulus.strip()
    if not html:
        return [text] if text else []
    parser = _Sources()
    parser.feed(text)
    parser.close()
    return parser.sources


def _path_parts(path: str) -> tuple[str, ...]:
    """A path or URL as its folder and file names (query, fragment and ``./`` dropped)."""
    parsed = urllib.parse.urlsplit(path.strip().replace("\\", "/"))
    if parsed.scheme in ("data", "blob"):
        return ()
    names = urllib.parse.unquote(parsed.path).split("/")
    return tuple(name for name in names if name not in ("", "."))


def _same_file(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Whether two paths may name one file: the shorter is the end of the longer."""
    n = min(len(a), len(b))
    return n > 0 and a[-n:] == b[-n:]


class _StimulusMatcher:
    """The pair a trial's stimulus shows, found through a stimulus set's manifest."""

    def __init__(self, manifest: pd.DataFrame) -> None:
        missing = [
            c for c in ("sketch_id", "image_id", "sketch_path", "image_path") if c not in manifest
        ]
        if missing:
            raise InputError(
                f"manifest: no column {missing[0]!r}; expected a stimulus set's "
                "manifest (sketch_id, image_id, sketch_path, image_path)"
            )
        self.manifest = manifest.reset_index(drop=True)
        # Each file of the set under its file name: (its parts, "sketch" or "image", its path).
        self.files: dict[str, list[tuple[tuple[str, ...], str, str]]] = {}
        for kind in ("sketch", "image"):
            for path in pd.unique(self.manifest[f"{kind}_path"].astype(str)):
                parts = _path_parts(path)
                if parts:
                    self.files.setdefault(parts[-1], []).append((parts, kind, path))
        self.cache: dict[tuple[str, bool], tuple[str, str] | str] = {}

    def names_a_file(self, stimulus: str, html: bool) -> bool:
        return any(_path_parts(path) for path in stimulus_paths(stimulus, html=html))

    def pair(self, stimulus: str, html: bool) -> tuple[str, str] | str:
        """``(sketch_id, image_id)``, or why the stimulus names no one pair of the set."""
        if (stimulus, html) not in self.cache:
            self.cache[stimulus, html] = self._pair(stimulus, html)
        return self.cache[stimulus, html]

    def _pair(self, stimulus: str, html: bool) -> tuple[str, str] | str:
        sketches: set[str] = set()
        images: set[str] = set()
        paths = stimulus_paths(stimulus, html=html)
        if not paths:
            return "it names no file"
        for path in paths:
            parts = _path_parts(path)
            found = [
                f for f in self.files.get(parts[-1] if parts else "", []) if _same_file(parts, f[0])
            ]
            if len({f[2] for f in found}) > 1:
                named = " and ".join(sorted({f"{f[1]} {f[2]!r}" for f in found}))
                return f"its file {path!r} could be the set's {named}; name the pair with --columns"
            for _, kind, listed in found:
                (sketches if kind == "sketch" else images).add(listed)
        rows = self.manifest[self.manifest["image_path"].astype(str).isin(images)]
        if sketches:
            rows = rows[rows["sketch_path"].astype(str).isin(sketches)]
        pairs = list(dict.fromkeys(zip(rows["sketch_id"], rows["image_id"], strict=True)))
        if len(pairs) == 1:
            return pairs[0]
        if not images:
            return "its files are no image of the stimulus set"
        if not pairs:
            return "its sketch and image are no pair of the stimulus set"
        return (
            f"its image is in {len(pairs)} pairs of the set ({pairs[0][0]}, {pairs[1][0]}"
            f"{', ...' if len(pairs) > 2 else ''}) and no sketch of the set is shown "
            "with it; name the pair with --columns"
        )


def _jspsych_records(path: Path, encoding: str | None) -> _Table:
    """The trials of a jsPsych data file as text cells (a missing value ``""``), one row each.

    ``.json`` (``jsPsych.data.get().json()``: a list of trial objects) or ``.csv``
    (``.csv()``: every cell quoted, ``null`` where the trial's value was null).
    """
    text, sha256, used = decode_text(path, encoding)
    stripped = text.lstrip()
    is_json = path.suffix.lower() == ".json" or (
        path.suffix.lower() != ".csv" and stripped.startswith(("[", "{"))
    )
    if not is_json:
        table = _parse_delimited(path, text, sha256, used, sep=",")
        return replace(table, frame=table.frame.astype(str).replace("null", ""))
    try:
        trials = json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(
            f"{path}: line {error.lineno}: not JSON ({error.msg} at column "
            f"{error.colno}); expected jsPsych's data as .json() writes it"
        ) from None
    if not isinstance(trials, list):
        raise InputError(
            f"{path}: line 1: a JSON {type(trials).__name__}; expected a list of "
            "trials, as jsPsych.data.get().json() writes it"
        )
    # Where each trial begins, for messages naming its line.
    decoder, starts, at = json.JSONDecoder(), [], text.index("[") + 1
    for _ in trials:
        at = _JSON_GAP.match(text, at).end()
        starts.append(at)
        at = decoder.raw_decode(text, at)[1]
    newlines = np.array([m.start() for m in re.finditer("\n", text)], dtype=np.int64)
    lines = np.searchsorted(newlines, np.asarray(starts, dtype=np.int64)) + 1
    names: dict[str, None] = {}
    for trial, line in zip(trials, lines, strict=True):
        if not isinstance(trial, dict):
            raise InputError(
                f"{path}: line {line}: a JSON {type(trial).__name__}; expected a trial object"
            )
        names.update(dict.fromkeys(trial))
    frame = pd.DataFrame(
        [[_json_cell(trial.get(name)) for name in names] for trial in trials],
        columns=list(names),
        dtype=object,
    )
    return _Table(str(path), sha256, used, "", tuple(names), frame, lines)


def _json_cell(value) -> str:
    """A JSON value as the text jsPsych's ``.csv()`` writes for it; null (and absent) ``""``."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _field_error(table: _Table, row: int, field: str, expected: str, value: str) -> InputError:
    """One line naming the file, the line (and in JSON, whose trials may share a line, the
    trial) and the column or field."""
    where = f"line {table.lines[row]}" if table.sep else f"line {table.lines[row]}, trial {row + 1}"
    word = "column" if table.sep else "field"
    return InputError(
        f"{table.path}: {where}: {word} {field!r}: expected {expected}, got {value!r}"
    )


def _key_lookup(keys: Mapping[str, int]) -> dict[str, int]:
    """The keys, and in lower case too where that is unambiguous (jsPsych records keys in
    lower case unless ``case_sensitive_responses``)."""
    lookup = dict(keys)
    lower: dict[str, list[str]] = {}
    for key in keys:
        lower.setdefault(key.lower(), []).append(key)
    for key, same in lower.items():
        if len(same) == 1:
            lookup.setdefault(key, keys[same[0]])
    return lookup


def parse_select(text: str | None, *, option: str = "--select") -> dict[str, str]:
    """Which trials are ratings, by the value of their fields: ``task=rating,block=main``.

    Examples
    --------
    >>> parse_select("task = rating")
    {'task': 'rating'}
    """
    chosen: dict[str, str] = {}
    for entry in (text or "").split(","):
        if not entry.strip() and not (text or "").strip():
            break
        field_name, equals, value = entry.partition("=")
        field_name, value = field_name.strip(), value.strip()
        if not equals or not field_name:
            raise InputError(
                f"{option}: expected FIELD=VALUE entries separated by commas "
                f"(task=rating), got {entry.strip()!r}"
            )
        if field_name in chosen:
            raise InputError(f"{option}: field {field_name!r} is named twice; expected each once")
        chosen[field_name] = value
    return chosen


def read_jspsych(
    paths: Sequence[str | Path],
    *,
    keys: Mapping[str, int],
    manifest: pd.DataFrame | None = None,
    columns: Mapping[str, str] | None = None,
    select: Mapping[str, str] | None = None,
    encoding: str | None = None,
    stimulus_set: Mapping[str, str] | None = None,
) -> ImportedRatings:
    """Read jsPsych data files of keyboard-response trials (``.json`` or ``.csv``).

    Parameters
    ----------
    paths
        Files as ``jsPsych.data.get().json()`` or ``.csv()`` writes them; a file
        named ``*.json`` (or beginning with ``[``) is JSON, any other CSV.
    keys
        The rating of each key as jsPsych records it (:func:`parse_keys`; a key is
        also found in lower case, as jsPsych records keys by default).
    manifest
        A stimulus set's manifest (``sketch_id``, ``image_id``, ``sketch_path``,
        ``image_path``; ``anchor_rating`` for anchor pairs): each trial's stimulus
        (a path, or the ``src`` of every ``<img>`` of its HTML) is matched to the
        set's files, a path naming a file when the shorter of the two is the end of
        the longer (``stimuli/sketches/cat.png`` names ``sketches/cat.png``; query
        and ``./`` dropped, ``%20`` decoded), and the pair is the one whose image (and
        sketch, where the stimulus shows one) it names.
    columns
        Columns of the ratings table -> fields of the trials: ``sketch_id`` and
        ``image_id`` (instead of ``manifest``: fields added with jsPsych's
        ``data``), ``participant`` (default a field named ``participant``,
        ``participant_id``, ``subject`` or ``subject_id``, else the file's name),
        ``phase``, ``rating`` (the key; default ``response``, or ``key_press`` in
        data of jsPsych before 6.3) and ``rt`` (milliseconds; default ``rt``).
    select
        Field -> value a rating trial has (``task=rating``). Without it the rating
        trials are the keyboard-response trials (:data:`JSPSYCH_TRIAL_TYPES`) whose
        stimulus names a file (with ``manifest``) or whose ``sketch_id`` or
        ``image_id`` field is given (with ``columns``); a text screen is not one.
    encoding
        The text encoding of a file without a byte-order mark (default UTF-8).
    stimulus_set
        What to record of the stimulus set (its folder and digest).

    Returns
    -------
    ImportedRatings
        One row per rating trial in file order (``trial`` from 1 per participant
        and file); ``rt`` in seconds; a trial without a key (``response`` null) a
        missing rating. A rating trial whose stimulus names no one pair of the set,
        or whose key is not a rating key, is refused naming its line and field.
    """
    columns = dict(columns or {})
    unknown = [c for c in columns if c not in JSPSYCH_COLUMNS]
    if unknown:
        raise InputError(
            f"--columns: {unknown[0]!r} is not read from jsPsych data; expected "
            f"one of {', '.join(JSPSYCH_COLUMNS)}"
        )
    by_fields = "sketch_id" in columns or "image_id" in columns
    if by_fields and not ("sketch_id" in columns and "image_id" in columns):
        raise InputError(
            "--columns: expected both sketch_id and image_id, the fields naming the pair"
        )
    if by_fields == (manifest is not None):
        raise InputError(
            "jsPsych: expected either a stimulus set (--stimuli) or the fields "
            "naming the pair (--columns sketch_id=...,image_id=...), one of them"
        )
    matcher = None if by_fields else _StimulusMatcher(manifest)
    select = dict(select or {})
    frames, sources, used = [], {}, {}
    for path in map(Path, paths):
        table = _jspsych_records(path, encoding)
        frame, found = _jspsych_ratings(table, columns, select, matcher, keys)
        frames.append(frame)
        sources[str(path)] = table.sha256
        used.setdefault("Fields", found)
        used.setdefault("Encoding", {})[str(path)] = table.encoding
    ratings = pd.concat(frames, ignore_index=True)
    ratings["trial"] = ratings.groupby(["_source", "participant"], sort=False).cumcount() + 1
    on_anchor = ratings["phase"].isin(_ANCHOR_PHASES)
    if matcher is not None and "anchor_rating" in matcher.manifest and on_anchor.any():
        prescribed = matcher.manifest.set_index(["sketch_id", "image_id"])["anchor_rating"]
        keys_of = pd.MultiIndex.from_frame(ratings.loc[on_anchor, ["sketch_id", "image_id"]])
        ratings["anchor_rating"] = pd.Series(pd.NA, index=ratings.index, dtype=object)
        ratings.loc[on_anchor, "anchor_rating"] = prescribed.reindex(keys_of).to_numpy()
    settings = {
        "Format": "jsPsych",
        "Columns": used["Fields"],
        "Pair": "fields" if by_fields else "stimulus paths matched to the stimulus set's files",
        "TrialTypes": list(JSPSYCH_TRIAL_TYPES),
        "Select": select,
        "Keys": dict(keys),
        "RtUnit": "ms",
        "Encoding": used["Encoding"],
    }
    if stimulus_set:
        settings["StimulusSet"] = dict(stimulus_set)
    return ImportedRatings(ratings, sources, settings)


def _jspsych_ratings(
    table: _Table,
    columns: Mapping[str, str],
    select: Mapping[str, str],
    matcher: _StimulusMatcher | None,
    keys: Mapping[str, int],
) -> tuple[pd.DataFrame, dict[str, str]]:
    """One file's rating trials as rows of the ratings table, and the fields they came from."""
    names = set(table.names)
    lookup = _key_lookup(keys)
    word = "column" if table.sep else "field"
    frame = table.frame

    def field_of(target: str, default: Sequence[str], required: bool) -> str | None:
        if target in columns:
            if columns[target] not in names:
                hint = did_you_mean(columns[target], table.names)
                raise InputError(
                    f"{table.path}: line 1: no {word} {columns[target]!r} (mapped "
                    f"to {target}) in any trial{hint}"
                )
            return columns[target]
        present = [name for name in default if name in names]
        if present:
            return present[0]
        if required:
            raise InputError(
                f"{table.path}: line 1: no {word} {default[0]!r} in any trial; "
                f"expected jsPsych's data of keyboard-response trials"
            )
        return None

    trial_type = field_of("trial_type", ("trial_type",), True)
    types = frame[trial_type].str.strip()
    chosen = types.isin(JSPSYCH_TRIAL_TYPES).to_numpy().copy()
    if not chosen.any() and (types == _SBIR_PLUGIN).any():
        raise InputError(
            f"{table.path}: no rating trials; its trials are {_SBIR_PLUGIN} trials, whose "
            "ratings the server stores: take the dataset of sbir-study export-online"
        )
    for name, value in select.items():
        if name not in names:
            raise InputError(f"{table.path}: line 1: no {word} {name!r} (--select) in any trial")
        chosen &= (frame[name].str.strip() == value).to_numpy()
    found: dict[str, str] = {}
    if matcher is None:
        for target in ("sketch_id", "image_id"):
            found[target] = field_of(target, (), True)
        if not select:
            named = frame[found["sketch_id"]].str.strip().ne("") | frame[
                found["image_id"]
            ].str.strip().ne("")
            chosen &= named.to_numpy()
    else:
        stimulus = field_of("stimulus", ("stimulus",), True)
        found.update(sketch_id=stimulus, image_id=stimulus)
        html = (types != "image-keyboard-response").to_numpy()
        if not select:
            named = [matcher.names_a_file(s, h) for s, h in zip(frame[stimulus], html, strict=True)]
            chosen &= np.array(named, dtype=bool)
    rows = np.flatnonzero(chosen)
    if not len(rows):
        why = f"expected {' or '.join(JSPSYCH_TRIAL_TYPES)} trials" + (
            " whose stimulus names a file of the stimulus set"
            if matcher
            else " whose fields name the sketch and the image"
        )
        if select:
            why += f" and {', '.join(f'{k}={v}' for k, v in select.items())}"
        raise InputError(f"{table.path}: no rating trials; {why}")
    participant = field_of("participant", ("participant", *_ALIASES["participant"]), False)
    key_field = field_of("rating", _JSPSYCH_KEY_FIELDS, True)
    rt_field = field_of("rt", ("rt",), True)
    phase_field = field_of("phase", (), False)
    if matcher is None:
        sketch = frame[found["sketch_id"]].str.strip().iloc[rows]
        image = frame[found["image_id"]].str.strip().iloc[rows]
        for target, cells in (("sketch_id", sketch), ("image_id", image)):
            _check_ids(table, cells.reindex(frame.index, fill_value="x"), found[target])
    else:
        pairs = []
        for row in rows:
            cell = frame[stimulus].iloc[row]
            pair = matcher.pair(cell, bool(html[row]))
            if isinstance(pair, str):
                raise _field_error(
                    table,
                    int(row),
                    stimulus,
                    f"a stimulus showing one pair of the stimulus set ({pair})",
                    _shortened(cell),
                )
            pairs.append(pair)
        sketch = pd.Series([p[0] for p in pairs], dtype=object)
        image = pd.Series([p[1] for p in pairs], dtype=object)
    if participant is None:
        given = pd.Series(Path(table.path).stem, index=rows, dtype=object)
        found["participant"] = "(the file's name)"
    else:
        given = frame[participant].str.strip().iloc[rows]
        found["participant"] = participant
        blank = given.isin(MISSING_VALUES).to_numpy()
        if blank.any():
            raise _field_error(
                table,
                int(rows[np.argmax(blank)]),
                participant,
                "the participant's id",
                given.iloc[int(np.argmax(blank))],
            )
    ratings, times = [], []
    for row in rows:
        key = frame[key_field].iloc[row].strip()
        cell = frame[rt_field].iloc[row]
        if key in MISSING_VALUES:
            ratings.append(pd.NA)
            times.append(np.nan)
            continue
        if key not in lookup:
            raise _field_error(
                table,
                int(row),
                key_field,
                f"a rating key ({', '.join(dict.fromkeys(keys))}) or null; pass "
                "the study's keys with --keys",
                key,
            )
        try:
            rt = parse_number(cell)
        except ValueError:
            rt = -1.0
        if not rt >= 0:
            raise _field_error(table, int(row), rt_field, "a time in ms of 0 or more", cell)
        ratings.append(lookup[key])
        times.append(rt / 1000)
    found.update({"rating": key_field, "rt": rt_field})
    phase = "main"
    if phase_field is not None:
        phase = frame[phase_field].str.strip().iloc[rows].to_numpy()
        found["phase"] = phase_field
    result = pd.DataFrame(
        {
            "participant": given.to_numpy(),
            "sketch_id": sketch.to_numpy(),
            "image_id": image.to_numpy(),
            "phase": phase,
            "rating": pd.array(ratings, dtype="Int64"),
            "rt": np.asarray(times, dtype=float),
            "_source": table.path,
            "_line": table.lines[rows],
        }
    )
    return result, found


def _shortened(text: str, limit: int = 120) -> str:
    """A long HTML stimulus cut for a one-line message."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- wide exports -----------------------------------------------------------------------------

#: The columns of a wide export's mapping file: one row per rated pair.
WIDE_MAPPING_COLUMNS = ("column", "sketch_id", "image_id")
#: An answer's leading whole number (``1 - best match``, ``7 (worst)``, ``3``): not one
#: followed by a decimal part (``2.5``, ``2,5``).
_LEADING_NUMBER = re.compile(r"\s*(\d+)(?![\d.,]\d)")


def parse_answers(text: str | None, scale: Scale, *, option: str = "--answers") -> dict[str, int]:
    """The rating each answer label stands for: ``Best match=1,Good=2,...,Worst=7``.

    Labels are compared with an answer's text stripped of surrounding blanks; a label
    may hold any character but ``,`` (the rating follows its last ``=``). A point off
    ``scale``, or a label given twice, is refused.

    Examples
    --------
    >>> parse_answers("very similar = 1, similar=2, not similar=3", Scale(1, 3))
    {'very similar': 1, 'similar': 2, 'not similar': 3}
    """
    answers: dict[str, int] = {}
    for entry in (text or "").split(","):
        label, equals, point = entry.rpartition("=")[0], "=" in entry, entry.rpartition("=")[2]
        label, point = label.strip(), point.strip()
        if not equals or not label or not re.fullmatch(r"[+-]?\d+", point):
            raise InputError(
                f"{option}: expected LABEL=RATING entries separated by commas "
                f"(Best match=1,Good=2), got {entry.strip()!r}"
            )
        if not scale.low <= int(point) <= scale.high:
            raise InputError(
                f"{option}: {label!r} is given {point}; expected a rating {scale.low}.."
                f"{scale.high} (the scale {scale})"
            )
        if label in answers:
            raise InputError(f"{option}: label {label!r} is given twice; expected each once")
        answers[label] = int(point)
    return answers


def answer_rating(answer: str, answers: Mapping[str, int] | None = None) -> int | None:
    """The rating an answer of a survey gives: its label's (``answers``), else its leading
    whole number; None for a missing answer. An answer without one raises ``ValueError``.

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


def _qualtrics_headers(table: _Table) -> bool:
    """Whether the table is a Qualtrics export: its second row holds the question texts and
    its third ``{"ImportId": ...}`` in every cell that is not empty."""
    if len(table.frame) < 2:
        return False
    cells = [str(c) for c in table.frame.iloc[1] if str(c).strip()]
    return bool(cells) and all(_is_import_id(c) for c in cells)


def read_wide_mapping(path: str | Path, *, encoding: str | None = None) -> tuple[pd.DataFrame, str]:
    """A wide export's mapping file: which column holds the ratings of which pair.

    A table (CSV or any separator :func:`sniff_separator` finds) with the columns
    ``column``, ``sketch_id``, ``image_id`` (in any case): one row per pair, ``column``
    the export's column name as its header writes it. Returns the mapping (with
    ``_line``) and the file's SHA-256. A column or pair named twice is refused.
    """
    table = _read_delimited(Path(path), sep=None, encoding=encoding)
    found = _find_columns(table, {}, WIDE_MAPPING_COLUMNS, WIDE_MAPPING_COLUMNS)
    mapping = pd.DataFrame(
        {target: table.frame[found[target]].astype(str) for target in WIDE_MAPPING_COLUMNS}
    )
    for target in ("sketch_id", "image_id"):
        mapping[target] = mapping[target].str.strip()
        _check_ids(table, mapping[target], found[target])
    blank = mapping["column"].str.strip().isin(MISSING_VALUES).to_numpy()
    if blank.any():
        raise _cell_error(
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


def _participant_column(table: _Table, named: str | None) -> str:
    """The export's column of the participants' ids: as named, else found by its name."""
    if named is not None:
        if named not in table.names:
            hint = did_you_mean(named, table.names)
            raise InputError(
                f"{table.path}: line 1: no column {named!r} (--participant-column){hint}"
            )
        return named
    names = ("participant", *_ALIASES["participant"])
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

    Survey tools (Qualtrics, Google Forms, LimeSurvey) export a survey so.

    Parameters
    ----------
    paths
        The exports, each with a header naming its columns. A Qualtrics export's two
        more header rows (question texts, then ``{"ImportId": ...}`` in every cell)
        are found by that third row and left out.
    mapping
        The export's column of each pair (:func:`read_wide_mapping`): columns
        ``column``, ``sketch_id``, ``image_id``. Other columns of the export are not
        read.
    participant_column
        The column holding the participant's id (Qualtrics' ``ResponseId``, a
        ``PROLIFIC_PID`` field); default one named ``participant``,
        ``participant_id``, ``subject`` or ``subject_id``, in any case.
    answers
        The rating of each answer label (:func:`parse_answers`); default an answer's
        leading whole number (``1 - best match``, ``7 (worst)``, ``3``).
    sep, encoding, scale
        As :func:`read_long_table`.
    mapping_source
        What to record of the mapping file (its name and SHA-256).

    Returns
    -------
    ImportedRatings
        One row per participant and pair, in the mapping's order; an empty answer (or
        ``n/a``, ``NA``, ``NaN``, ``nan``) is a missing rating. A wide export records
        neither the order of presentation nor response times: ``trial`` and ``rt``
        are missing. An answer that gives no rating of the scale is refused naming
        its line and column.

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
    frames, sources, used = [], {}, {}
    for path in map(Path, paths):
        table = _read_delimited(path, sep=sep, encoding=encoding)
        found = {"participant": _participant_column(table, participant_column)}
        absent = [c for c in columns if c not in table.names]
        if absent:
            hint = did_you_mean(absent[0], table.names)
            line = mapping["_line"].iloc[columns.index(absent[0])] if "_line" in mapping else None
            where = f"; mapped on line {line} of the mapping" if line is not None else ""
            raise InputError(
                f"{path}: line 1: no column {absent[0]!r}{hint}{where}"
                + (f", and {len(absent) - 1} more mapped columns" if len(absent) > 1 else "")
            )
        qualtrics = _qualtrics_headers(table)
        rows = np.arange(2 if qualtrics else 0, len(table.frame))
        if not len(rows):
            raise InputError(f"{path}: no rows below the header; expected one per participant")
        given = table.frame[found["participant"]].astype(str).str.strip().iloc[rows]
        blank = given.isin(MISSING_VALUES).to_numpy()
        if blank.any():
            row = int(rows[np.argmax(blank)])
            raise _cell_error(table, row, found["participant"], "the participant's id", "")
        ratings = np.empty((len(rows), len(columns)), dtype=object)
        expected_answer = (
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
                    raise _cell_error(table, row, column, expected_answer, distinct)
                ratings[(cells == distinct).to_numpy(), j] = pd.NA if point is None else point
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
        sources[str(path)] = table.sha256
        used.setdefault("Participant", found["participant"])
        used.setdefault("Separator", table.sep)
        used.setdefault("Encoding", {})[str(path)] = table.encoding
        used.setdefault("QualtricsHeaders", {})[str(path)] = qualtrics
    settings = {
        "Format": "wide export",
        "Columns": {"participant": used["Participant"]},
        "Mapping": dict(mapping_source or {}),
        "Pairs": len(columns),
        "Answers": dict(answers) if answers is not None else "the answer's leading whole number",
        "Separator": used["Separator"],
        "Encoding": used["Encoding"],
        "QualtricsHeaders": used["QualtricsHeaders"],
    }
    return ImportedRatings(pd.concat(frames, ignore_index=True), sources, settings)


# --- the dataset ----------------------------------------------------------------------------

_SOURCE_ID = {
    "Description": "The participant's id as the imported files gave it, of which the label is "
    "made (sbir_study.foundation.checks.participant_label)."
}
_README = """Ratings of sketch/image pairs collected with another tool and imported with
sbir-study import ({format}). One _beh.tsv per participant: one row per rated pair,
columns described in its _beh.json sidecar, which also records the rating scale
(RatingScale) and, under Imported, the source files with their SHA-256 and how they
were read (column mapping, separator, encoding, decimal mark, keys). participants.tsv
keeps each participant's id as the source gave it (source_id).
"""


def write_imported_dataset(
    imported: ImportedRatings,
    root: str | Path,
    *,
    scale: Scale = PAPER_SCALE,
    overwrite: bool = False,
    version: str = "",
    inputs: Sequence[str | Path] = (),
) -> pd.DataFrame:
    """Check imported ratings and write them as a BIDS dataset at ``root``.

    Each participant's id becomes a label (in order of first appearance, by
    :func:`~sbir_study.foundation.checks.participant_label`), kept with the id in
    ``participants.tsv``. The ratings are checked as :func:`load_ratings` checks a
    table (ids, phases, a pair rated twice in one phase; the message naming the
    source file and line), ratings that look like typos are warned about, and the
    dataset is written as every output is (``docs/outputs.md``): aside, moved into
    place when complete, an earlier one replaced only with ``overwrite`` and only
    when ``sbir-study import`` wrote it. ``inputs`` are never a target.

    Returns the ratings as checked (:func:`~sbir_study.analysis.validate_ratings`).
    """
    from sbir_study.foundation.outputs import output_folder

    ratings = imported.ratings.copy()
    given = pd.unique(ratings["participant"])
    missing = [g for g in given if g in MISSING_VALUES]
    if missing:
        row = ratings[ratings["participant"] == missing[0]].iloc[0]
        raise InputError(
            f"{row['_source']}: line {row['_line']}: the participant's id is "
            f"missing ({missing[0]!r}); expected an id on every row"
        )
    labels: dict[str, str] = {}
    for source_id in given:
        try:
            labels[source_id] = participant_label(source_id, set(labels.values()))
        except InputError as error:
            row = ratings[ratings["participant"] == source_id].iloc[0]
            raise InputError(f"{row['_source']}: line {row['_line']}: {error}") from None
    ratings["source_id"] = ratings["participant"]
    ratings["participant"] = ratings["participant"].map(labels)
    # Checked as a table read from a file is: every cell text, a missing one n/a.
    as_text = ratings.drop(columns=["source_id"])
    for column in ("rating", "anchor_rating", "trial", "rt"):
        if column in as_text:
            values = as_text[column].astype("string")
            as_text[column] = values.fillna("n/a").astype(object)
    checked = validate_ratings(as_text, scale=scale)
    _warn_of_typos(ratings)
    root = Path(root)
    with output_folder(root, "import", overwrite=overwrite, inputs=inputs) as folder:
        _write(folder, ratings, imported, labels, scale, version)
    return checked


def _write(
    root: Path,
    ratings: pd.DataFrame,
    imported: ImportedRatings,
    labels: Mapping[str, str],
    scale: Scale,
    version: str,
) -> None:
    form = imported.settings.get("Format", "ratings")
    bids.write_dataset_description(
        root,
        name=f"Ratings imported from {form} files",
        generated_by={
            "Name": "sbir-study",
            "Version": version or "unknown",
            "Description": f"ratings imported from {form} files (sbir-study import)",
        },
        readme=_README.format(format=form),
    )
    bids.write_participants(
        root,
        pd.DataFrame(
            {
                "participant_id": ["sub-" + label for label in labels.values()],
                "source_id": list(labels),
            }
        ),
        {"participant_id": {"Description": "Participant label."}, "source_id": _SOURCE_ID},
    )
    written = [
        c
        for c in (
            "participant",
            "trial",
            "phase",
            "sketch_id",
            "image_id",
            "rating",
            "rt",
            "anchor_rating",
            "n_presses",
            "presses",
        )
        if c in ratings
    ]
    for label, rows in ratings.groupby("participant", sort=False):
        files = list(dict.fromkeys(rows["_source"]))
        sidecar = {
            "GeneratedBy": f"sbir-study import {version}".strip(),
            "Origin": "imported",
            "Imported": {
                **imported.settings,
                "Sources": [{"File": f, "SHA256": imported.sources[f]} for f in files],
                "SourceId": str(rows["source_id"].iloc[0]),
            },
        }
        trials = rows[written].copy()
        trials["rt"] = trials["rt"].round(6)
        bids.write_beh(root, str(label), trials, sidecar, scale=scale)


#: Ids listed in one warning before the rest are counted.
_SHOWN = 5


def _warn_of_typos(ratings: pd.DataFrame) -> None:
    """Warn of ids that look like typos: an image rated once that no one else rated, a
    sketch rated by one participant, each with the closest id that others rated."""
    if ratings["participant"].nunique() < 2:
        return
    main = ratings[ratings["phase"] == "main"]
    raters = main.groupby("sketch_id", sort=False)["participant"].nunique()
    lonely = [s for s in raters.index[raters == 1]]
    _warn_ids(
        main, "sketch_id", lonely, list(raters.index[raters > 1]), "rated by one participant only"
    )
    counts = main.groupby("image_id", sort=False).size()
    once = [i for i in counts.index[counts == 1]]
    _warn_ids(
        main,
        "image_id",
        once,
        list(counts.index[counts > 1]),
        "rated once, by one participant, and by no one else",
    )


def _warn_ids(rows: pd.DataFrame, column: str, odd: list[str], others: list[str], why: str) -> None:
    if not odd or not others:
        return
    named = []
    for value in odd[:_SHOWN]:
        row = rows[rows[column] == value].iloc[0]
        # The most similar, however far; of equals, the first others rated.
        close = closest(value, others, cutoff=0)
        named.append(
            f"{value!r} ({row['_source']}: line {row['_line']}; closest rated by others: {close!r})"
        )
    more = f", and {len(odd) - _SHOWN} more" if len(odd) > _SHOWN else ""
    what = "sketch" if column == "sketch_id" else "image"
    warnings.warn(
        f"{what} ids {why}, perhaps typos: {', '.join(named)}{more}",
        ImportedRatingsWarning,
        stacklevel=3,
    )
