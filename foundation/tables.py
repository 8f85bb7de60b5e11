"""The one reader of text tables: CSV and TSV with a header, and whitespace-separated runs.

Every table a user gives the toolkit comes through here: ratings tables and BIDS
``_beh.tsv`` files, ground truths, retrieval runs (TREC runs and tables), stimulus
manifests and ``anchors.csv``, ``analyze --catch`` files, and the ``participants.tsv`` of a
dataset that ``run`` appends to or ``export-online --with-lab`` copies. The session
recorder reads back the session file it writes (``pandas.read_csv``): its own file, in its
own format, which no user wrote. The rules (``docs/formats.md``; the text itself is
:mod:`.text`'s):

* **Header.** The first line that is not blank names the columns (surrounding
  blanks dropped); a name given twice is refused.
* **Rows.** Every line has as many fields as the header: a row with fewer or
  more is refused on its line, never padded or shifted. Empty lines, and lines
  whose every field is empty, are no rows. A field may be quoted (``"a, b"``,
  ``""`` for a quote) and then hold separators and line breaks; a quoted field
  that is never closed is refused on the line of its row. Whether a TSV quotes is
  the caller's (a BIDS file does not); a whitespace-separated file never does.
  Cells are read as written (``01`` stays ``01``); :data:`MISSING_VALUES` are the
  spellings of a missing value, for the callers that convert cells to numbers.
* **Whitespace-separated files** (TREC runs) split a line on runs of spaces and
  tabs, as trec_eval does. One with one blank between fields is read by Arrow in
  the columns asked for only, which are checked (none empty or holding another
  blank, numbers where asked); the others are only counted, so that a line of
  five fields with two blanks in a row may pass as six there.

Every row keeps the line it came from, for messages about it, named as the caller's
:class:`~sbir_study.foundation.text.Wording` says (``"x.csv: line 3"`` for ratings and
manifests, ``"x.run, line 3"`` for runs and ground truths).

Tables are parsed by Apache Arrow's CSV reader, straight into dictionary-encoded
columns (categoricals): at crowd size a table repeats a few thousand distinct
cells over millions of rows, and a Python string per cell would cost more than
the parse. The files of one header are parsed in one pass, their rows joined into
one buffer. When Arrow refuses the rows, a line-by-line pass with Python's :mod:`csv`
module (or :meth:`bytes.split` for whitespace) names the first bad line, going first
through the files that Arrow refuses on their own, or reads the table that Arrow
could not.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .checks import InputError
from .memory import release_freed
from .text import _HEAD, COLON, COMMA, TextFile, Wording, _line_ends, read_text

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

__all__ = [
    "COLON",
    "COMMA",
    "MISSING_VALUES",
    "Header",
    "LineNumbers",
    "Rows",
    "TextFile",
    "Wording",
    "read_header",
    "read_rows",
    "read_table",
    "read_text",
]

#: The cells that mean "no value" wherever a cell is converted to a number: the empty
#: cell and ``n/a`` (BIDS), ``NA`` (R), ``NaN`` and ``nan`` (pandas, NumPy).
MISSING_VALUES = frozenset({"", "n/a", "NA", "NaN", "nan"})

_ARROW_BLOCK = 1 << 24
# A field of a whitespace-separated file that Arrow's split on one blank gave but the split
# on runs of blanks would not: empty, or holding another blank.
_ODD_FIELD = "^$|[ \t\x0b\x0c]"
# Appended after a quoted file's last line when Python's csv module re-reads it: outside
# quotes it is a record of its own; inside a quoted field that was never closed, it is not.
_SENTINEL = "\ue000sbir-study\ue000"


# --- the header ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Header:
    """The columns of a table and where its rows begin.

    ``sep`` is the field separator (None: runs of blanks, as in a TREC run),
    ``quote`` whether fields may be quoted, ``line`` the header's line (0 for a
    file without one), ``end`` the offset in the file's data where the rows begin.
    """

    names: tuple[str, ...]
    sep: str | None
    quote: bool
    line: int
    end: int

    @classmethod
    def none(cls, file: TextFile, names: Sequence[str], sep: str | None = None) -> Header:
        """A file without a header whose columns are ``names`` (a TREC run)."""
        return cls(tuple(names), sep, False, 0, file.start)


def read_header(
    file: TextFile, sep: str, *, quote: bool = True, wording: Wording = COLON
) -> Header:
    """The header of a table: its first line that is not blank.

    Names are stripped of surrounding blanks; in a CSV (``quote``) a name may be
    quoted, as R's ``write.csv`` writes them. A blank file and a name given twice
    raise :class:`~sbir_study.foundation.checks.InputError`.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "r.csv"
    >>> _ = path.write_bytes(b'\\n"participant", rating\\n01,3\\n')
    >>> read_header(read_text(path), ",")
    Header(names=('participant', 'rating'), sep=',', quote=True, line=2, end=23)
    """
    first = file._first()
    if first is None:
        raise InputError(f"{wording.at(file.path, 1)}: empty; expected a header line")
    number, line, after = first
    fields = next(csv.reader([line], delimiter=sep)) if quote and '"' in line else line.split(sep)
    names = tuple(name.strip() for name in fields)
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise InputError(f"{wording.at(file.path, number)}: {wording.twice.format(name=name)}")
        seen.add(name)
    return Header(names, sep, quote, number, after)


# --- rows ----------------------------------------------------------------------------------------


class Rows(NamedTuple):
    """A parsed table: its rows, the file each came from and its line there."""

    #: One column per name of the header (text as categoricals, or str with
    #: ``categorical=False``; the ``numbers`` columns float64).
    frame: pd.DataFrame
    #: The line of each row in its file.
    lines: np.ndarray
    #: The index (into the files given) of each row's file.
    files: np.ndarray


@dataclass
class _Piece:
    """The rows part of one file."""

    file: TextFile
    header: Header

    @property
    def first(self) -> int:
        """The line number of the rows' first line."""
        return self.header.line + 1

    @property
    def body(self) -> memoryview:
        return memoryview(self.file.data)[self.header.end : self.file.end]

    @property
    def n_lines(self) -> int:
        return self.file.lines - self.header.line

    def ends(self) -> bool:
        """Whether the last row has its line end."""
        return self.file.complete or self.header.end >= self.file.end

    def holds(self, characters: bytes) -> bool:
        """Whether the rows hold ``characters`` (a search in the file's bytes, no copy)."""
        return self.file.data.find(characters, self.header.end, self.file.end) >= 0

    def sample(self) -> bytes:
        """The first bytes of the rows (from the head of a file read as a stream)."""
        if self.file.streamed:
            return self.file.head[self.header.end : self.header.end + _HEAD]
        return bytes(self.body[:_HEAD])


def read_rows(
    files: Sequence[tuple[TextFile, Header]],
    *,
    wording: Wording = COLON,
    numbers: Sequence[str] = (),
    columns: Sequence[str] | None = None,
    categorical: bool = True,
) -> Rows:
    """The rows of one or more files with the same header, parsed in one pass.

    Parameters
    ----------
    files
        Each file with its header (:func:`read_header`, or :meth:`Header.none`);
        every header must have the same names, separator and quoting.
    wording
        How messages name a line and word a problem.
    numbers
        Columns read as float64 (a missing value as NaN); a cell that is not a
        number raises :class:`~sbir_study.foundation.checks.InputError` naming it.
    columns
        The columns to return (default: all).
    categorical
        Text columns as categoricals (else as str).

    Raises
    ------
    InputError
        On the first line (in file order) with another number of fields than the
        header, a quoted field never closed, or a number that is not one.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "r.tsv"
    >>> _ = path.write_bytes(b"sketch_id\\tscore\\n\\ns1\\t0.5\\r\\n\\t\\ns2\\t1\\n")
    >>> file = read_text(path)
    >>> rows = read_rows([(file, read_header(file, "\\t"))], numbers=["score"])
    >>> rows.frame["sketch_id"].tolist(), rows.frame["score"].tolist(), rows.lines.tolist()
    (['s1', 's2'], [0.5, 1.0], [3, 5])
    """
    pieces = [_Piece(file, header) for file, header in files]
    header = pieces[0].header
    wanted = list(header.names if columns is None else columns)
    numbers = [n for n in numbers if n in wanted]
    parsed = _arrow(pieces, wanted, numbers, categorical)
    if parsed is None:
        if len(pieces) > 1:
            _refuse_first(pieces, wanted, numbers, categorical, wording)
        return Rows(*_python(pieces, wanted, numbers, categorical, wording))
    table, spans = parsed
    blank = _blank_rows(table) if header.sep is not None else np.zeros(table.num_rows, bool)
    frame, n_rows = _frame(table.select(wanted)), table.num_rows
    del table
    release_freed()  # Arrow's parse buffers, before the lines are counted
    lines, owner = _row_lines(pieces, n_rows, spans, wording)
    if blank.any():
        frame = frame[~blank].reset_index(drop=True)
        lines, owner = lines[~blank], owner[~blank]
    return Rows(frame, lines, owner)


class LineNumbers(tuple):
    """Each row's line in its file (``DataFrame.attrs["lines"]``): a tuple that pandas
    shares from frame to frame instead of copying it.

    pandas deep-copies a frame's ``attrs`` into every frame an operation makes
    (``NDFrame.__finalize__``), which would copy a list of a table's line numbers, number
    by number, at each step of every command that reads the table. The numbers never
    change, so a copy is the same object.
    """

    __slots__ = ()

    def __deepcopy__(self, memo) -> LineNumbers:
        return self


def read_table(
    file: TextFile, sep: str, *, wording: Wording = COLON, quote: bool = True
) -> pd.DataFrame:
    """A small table (a ground truth, a manifest) as a DataFrame of str cells.

    ``DataFrame.attrs["lines"]`` holds each row's line in the file (the header
    is the first line that is not blank, usually line 1), for messages about
    the rows, as :class:`LineNumbers`. Errors as :func:`read_header` and
    :func:`read_rows`.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
    >>> _ = path.write_bytes(b'a,b\\n1,"x, y"\\n\\n,\\n3,4\\n')
    >>> table = read_table(read_text(path), ",")
    >>> table["b"].tolist(), table.attrs["lines"]
    (['x, y', '4'], (2, 5))
    >>> table[["b"]].attrs["lines"] is table.attrs["lines"]  # shared, not copied
    True
    """
    header = read_header(file, sep, quote=quote, wording=wording)
    rows = read_rows([(file, header)], wording=wording, categorical=False)
    table = rows.frame
    table.attrs["lines"] = LineNumbers(rows.lines.tolist())
    return table


# --- the fast path: Arrow ------------------------------------------------------------------------


def _arrow(pieces: list[_Piece], wanted: list[str], numbers: list[str], categorical: bool):
    """Parse with Arrow: ``(table, spans)``, ``spans`` whether a quoted field holds a line
    break; None when Arrow refuses the rows, when a quoted value holds a carriage return,
    or when a whitespace-separated file is not one blank between fields (the Python pass
    then reads it, or names the bad line)."""
    header = pieces[0].header
    whitespace = header.sep is None
    streamed = len(pieces) == 1 and pieces[0].file.streamed
    if whitespace:
        first = next((line for line in pieces[0].sample().splitlines() if line), b"")
        sep = "\t" if b"\t" in first else " "
    else:
        sep = str(header.sep)
    # Parsing with quotes costs more: a file is parsed so only when it holds a quote. A file
    # read as a stream shows it in its first bytes (R quotes every text cell) or else when
    # a value holds one or Arrow refuses it; then it is parsed again, with quotes.
    if not header.quote:
        attempts = [False]
    elif streamed:
        attempts = [True] if b'"' in pieces[0].file.head else [False, True]
    else:
        attempts = [any(p.holds(b'"') for p in pieces)]
    # A whitespace-separated file is read in the columns asked for only (no one reads a
    # TREC run's rank and tag); Arrow still sees the number of fields on every line. The
    # other columns of a table are parsed (a blank row, a quote or a line end in them
    # counts) as plain text: no categorical of a column no one reads (a session's key
    # presses, a distinct value on nearly every row).
    kept = wanted if whitespace else list(header.names)
    types = {n: _arrow_type(n in numbers, categorical and n in wanted) for n in kept}
    text = [n for n in kept if n not in numbers]
    for attempt, quoted in enumerate(attempts, start=1):
        last = attempt == len(attempts)
        table = _read_csv(pieces, types, sep, quoted, streamed)
        if table is None:
            if last:
                return None
            continue
        # Arrow drops the "\n" of a quoted "\r\n" that straddles two of its blocks, without
        # a word (apache/arrow#51368, open at 26.0): a file with a carriage return inside a
        # quoted value is read by the Python pass. Line ends outside quotes are not values.
        if quoted and _holds(table, text, "\r"):
            return None
        # In a whitespace-separated file, an empty field (two blanks in a row, or one at
        # either end of a line) or one holding another blank is where Arrow's split on one
        # blank and the split on runs of blanks differ: the Python pass reads it (a missing
        # number may be an empty field too).
        if whitespace and (
            any(table.column(n).null_count for n in numbers) or _holds(table, text, _ODD_FIELD)
        ):
            return None
        if not last and _holds(table, text, '"'):
            continue
        return table, quoted and _holds(table, text, "[\r\n]")
    return None


def _read_csv(pieces: list[_Piece], types: dict, sep: str, quoted: bool, streamed: bool):
    """Arrow's parse of the rows of ``pieces``: a table of the columns of ``types``, or
    None."""
    import pyarrow as pa
    from pyarrow import csv as arrow_csv

    # A file read as a stream is read by Arrow itself, from the offset of its rows; one
    # whose quoted field may run to its end without a line end is read whole (see spans).
    if streamed and not (quoted and not pieces[0].ends()):
        file, start = pieces[0].file, pieces[0].header.end
        if start >= file.size:
            return pa.table({n: pa.array([], t) for n, t in types.items()})
        source = pa.OSFile(str(file.path))
        source.seek(start)
    else:
        parts = []
        for piece in pieces:
            if len(piece.body):
                parts.append(piece.body)
                if not piece.ends():  # a file's last row must not run into the next file's
                    parts.append(memoryview(b"\n"))
        if not parts:
            return pa.table({n: pa.array([], t) for n, t in types.items()})
        source = _joined(parts)
    try:
        return arrow_csv.read_csv(
            source,
            read_options=arrow_csv.ReadOptions(
                column_names=list(pieces[0].header.names), block_size=_ARROW_BLOCK
            ),
            parse_options=arrow_csv.ParseOptions(
                delimiter=sep,
                quote_char='"' if quoted else False,
                escape_char=False,
                newlines_in_values=quoted,
                ignore_empty_lines=True,
            ),
            convert_options=arrow_csv.ConvertOptions(
                column_types=types,
                include_columns=list(types),
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
                null_values=sorted(MISSING_VALUES),  # in number columns only
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowKeyError):
        return None
    finally:
        source.close()


def _joined(parts: list[memoryview]) -> pa.BufferReader:
    """The files' rows as one buffer for Arrow (a copy of them when there are several)."""
    import pyarrow as pa

    return pa.BufferReader(parts[0] if len(parts) == 1 else b"".join(parts))


def _arrow_type(number: bool, categorical: bool):
    import pyarrow as pa

    if number:
        return pa.float64()
    return pa.dictionary(pa.int32(), pa.string()) if categorical else pa.string()


def _frame(table) -> pd.DataFrame:
    """An Arrow table as a DataFrame, a dictionary column as a categorical.

    Column by column, the chunks' dictionaries made one and their indices taken as
    the codes: never more than one column's codes twice in memory.
    """
    import pandas as pd
    import pyarrow as pa

    columns = {}
    for name in table.column_names:
        column = table.column(name)
        if pa.types.is_dictionary(column.type):
            chunks = pa.table({name: column}).unify_dictionaries().column(0).chunks
            codes = [c.indices.to_numpy(zero_copy_only=False) for c in chunks]
            values = chunks[0].dictionary if chunks else pa.array([], pa.string())
            columns[name] = pd.Categorical.from_codes(
                np.concatenate(codes) if codes else np.empty(0, dtype=np.int32),
                pd.Index(values.to_pandas()),
            )
        else:
            columns[name] = column.to_pandas()
    return pd.DataFrame(columns, index=pd.RangeIndex(table.num_rows))


def _holds(table, names: Sequence[str], pattern: str) -> bool:
    """Whether a text column of ``names`` holds a value matching ``pattern`` (a dictionary
    column's checked once per distinct value of each chunk)."""
    import pyarrow.compute as pc

    for name in names:
        for chunk in table.column(name).chunks:
            values = chunk.dictionary if hasattr(chunk, "dictionary") else chunk
            if len(values) and pc.any(pc.match_substring_regex(values, pattern)).as_py():
                return True
    return False


def _blank_rows(table) -> np.ndarray:
    """Rows whose every field is empty (a line of separators only; a missing number counts
    as empty).

    Only rows whose first field is empty can be one, so the other fields are
    compared on those rows alone.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    def empty(column) -> np.ndarray:
        found = pc.is_null(column) if pa.types.is_floating(column.type) else pc.equal(column, "")
        return np.asarray(found.to_numpy(zero_copy_only=False), dtype=bool)

    blank = empty(table.column(0))
    rows = np.flatnonzero(blank)
    for column in table.columns[1:]:
        if not rows.size:
            break
        blank[rows] = empty(column.take(rows))
        rows = rows[blank[rows]]
    return blank


# --- lines ---------------------------------------------------------------------------------------


def _nonempty_lines(piece: _Piece) -> np.ndarray:
    """The line numbers of a piece's lines that are not empty (each one of Arrow's rows)."""
    array = np.frombuffer(piece.body, dtype=np.uint8)
    if not array.size:
        return np.empty(0, dtype=np.int64)
    ends = _line_ends(array)
    starts = np.concatenate(([0], ends + 1))
    stops = np.append(ends, array.size)  # where each line's content stops
    crlf = (array[ends] == 10) & (ends > 0)
    crlf[crlf] = array[ends[crlf] - 1] == 13
    stops[:-1][crlf] -= 1
    return piece.first + np.flatnonzero(stops > starts)


def _row_lines(pieces: list[_Piece], n_rows: int, spans: bool, wording: Wording):
    """Each Arrow row's line and file: a row is a non-empty line, unless a quoted field
    holds a line break, when Python's csv module finds where each record begins."""
    counts = [p.n_lines for p in pieces]
    if not spans and n_rows == sum(counts):  # no empty line anywhere: the common case
        lines = [
            np.arange(p.first, p.first + n, dtype=np.int64)
            for p, n in zip(pieces, counts, strict=True)
        ]
    else:
        lines = [
            np.asarray([number for number, _ in _records(p, wording)], dtype=np.int64)
            if spans and p.holds(b'"')
            else _nonempty_lines(p)
            for p in pieces
        ]
    sizes = [len(n) for n in lines]
    if sum(sizes) != n_rows:
        raise InputError(
            f"{pieces[0].file.path}: cannot be parsed as a table (rows do not match lines)"
        )
    owner = np.repeat(np.arange(len(pieces), dtype=np.int32), sizes)
    return (np.concatenate(lines) if lines else np.empty(0, dtype=np.int64)), owner


# --- the slow path: Python -----------------------------------------------------------------------


def _refuse_first(
    pieces: list[_Piece], wanted: list[str], numbers: list[str], categorical: bool, wording: Wording
) -> None:
    """Raise on the first bad line, in file order, of the files that Arrow does not read on
    their own: only those need the line-by-line pass to find it."""
    for piece in pieces:
        if _arrow([piece], wanted, numbers, categorical) is None:
            _python([piece], wanted, numbers, categorical, wording)


def _records(piece: _Piece, wording: Wording):
    """``(line, fields)`` of every record of a delimited piece that is not an empty line
    (Python's csv module), refusing a quoted field that is never closed."""
    header = piece.header
    text = bytes(piece.body).decode("utf-8")
    check_closed = header.quote and '"' in text
    if check_closed:
        text += ("" if piece.ends() else "\n") + _SENTINEL + "\n"
    reader = csv.reader(
        io.StringIO(text, newline=""),
        delimiter=str(header.sep),
        quoting=csv.QUOTE_MINIMAL if header.quote else csv.QUOTE_NONE,
        strict=False,
    )
    previous = 0
    while True:
        number = piece.first + previous
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            where = wording.at(piece.file.path, number)
            raise InputError(f"{where}: cannot be read as a table ({error})") from None
        previous = reader.line_num
        if not fields or (check_closed and fields == [_SENTINEL]):
            continue
        if check_closed and fields[-1].endswith(_SENTINEL + "\n"):
            raise InputError(
                f"{wording.at(piece.file.path, number)}: a quoted field of this row is never "
                "closed; expected a closing '\"'"
            )
        yield number, fields


def _split_blanks(piece: _Piece):
    """``(line, fields)`` of every line that is not blank, split on runs of blanks."""
    for offset, line in enumerate(bytes(piece.body).splitlines()):
        fields = line.split()
        if fields:
            yield piece.first + offset, [f.decode("utf-8") for f in fields]


def _python(pieces: list[_Piece], wanted, numbers, categorical: bool, wording: Wording):
    """Parse line by line: name the first bad line, or read what Arrow could not."""
    import pandas as pd

    header = pieces[0].header
    names = header.names
    positions = [names.index(n) for n in wanted]
    is_number = [n in numbers for n in wanted]
    values: list[list] = [[] for _ in wanted]
    lines: list[int] = []
    owner: list[int] = []
    for index, piece in enumerate(pieces):
        rows = _split_blanks(piece) if header.sep is None else _records(piece, wording)
        for line, fields in rows:
            if len(fields) != len(names):
                message = wording.field_count.format(expected=len(names), found=len(fields))
                raise InputError(f"{wording.at(piece.file.path, line)}: {message}")
            if header.sep is not None and not any(fields):
                continue  # a line of separators only
            for column, position, number in zip(values, positions, is_number, strict=True):
                text = fields[position]
                if number:
                    try:
                        column.append(np.nan if text in MISSING_VALUES else float(text))
                    except ValueError:
                        problem = wording.number.format(column=names[position], text=text)
                        raise InputError(
                            f"{wording.at(piece.file.path, line)}: {problem}"
                        ) from None
                else:
                    column.append(text)
            lines.append(line)
            owner.append(index)
    frame = pd.DataFrame(
        {
            name: np.asarray(column, dtype=np.float64)
            if number
            else pd.Categorical(column)
            if categorical
            else pd.array(column, dtype="str")
            for name, column, number in zip(wanted, values, is_number, strict=True)
        },
        index=pd.RangeIndex(len(lines)),
    )
    return frame, np.asarray(lines, dtype=np.int64), np.asarray(owner, dtype=np.int32)
