"""The one table reader: any bytes give a table or one clear message, and the rows and their
lines are those an independent parse finds.

The oracles know nothing of Arrow or of the reader's own line counting: Python's ``csv``
module over ``io.StringIO(text, newline="")`` (which ends a line at LF, CR LF or a lone CR,
and counts lines in ``line_num``) for CSV and TSV, a regular expression for the blanks of a
whitespace-separated file, ``bytes.decode`` for UTF-8 and ``hashlib`` for the digest.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sbir_study.foundation import provenance, tables
from sbir_study.foundation import text as text_file
from sbir_study.foundation.checks import InputError
from sbir_study.foundation.tables import (
    COLON,
    COMMA,
    MISSING_VALUES,
    Header,
    read_header,
    read_rows,
    read_table,
    read_text,
)
from tests.helpers import table_bytes

ENDS = ["\n", "\r\n", "\r"]
NOT_CLOSED = "a quoted field of this row is never closed; expected a closing '\"'"
BLANKS = " \t\x0b\x0c"


def _write(folder: str, content: bytes, name: str = "t.csv") -> Path:
    path = Path(folder) / name
    path.write_bytes(content)
    return path


def _read(path: Path, sep: str | None, *, quote: bool = True, names=None, stream=False, **options):
    """The reader's rows as lists of str, and their lines (the file held in memory, or read
    as a stream by Arrow)."""
    file = read_text(path, stream=stream)
    header = Header.none(file, names, sep) if names else read_header(file, sep, quote=quote)
    rows = read_rows([(file, header)], **options)
    frame = rows.frame
    cells = [[_cell(frame[c].iloc[k]) for c in frame.columns] for k in range(len(frame))]
    return header, cells, rows.lines.tolist()


def _cell(value):
    return value if isinstance(value, float) else str(value)


# --- oracles ---------------------------------------------------------------------------------


def _lines(text: str) -> list[str]:
    """The lines of ``text`` with their line ends, as an editor counts them."""
    return list(io.StringIO(text, newline=""))


def _without_end(line: str) -> str:
    return line.rstrip("\r\n")


def _oracle_table(content: bytes, sep: str, quote: bool):
    """``("rows", names, header_line, rows, lines)`` or ``("error", line, fragment)``."""
    text = content.decode("utf-8-sig")
    lines = _lines(text)
    header_at = next((k for k, line in enumerate(lines) if _without_end(line).strip(BLANKS)), None)
    if header_at is None:
        return ("error", 1, "empty; expected a header line")
    first = _without_end(lines[header_at])
    fields = (
        next(csv.reader([first], delimiter=sep)) if quote and '"' in first else first.split(sep)
    )
    names = [name.strip() for name in fields]
    for k, name in enumerate(names):
        if name in names[:k]:
            return ("error", header_at + 1, f"column {name!r} appears twice")
    body = "".join(lines[header_at + 1 :])
    # strict: the end of the text inside a quoted field is an error (the tables drawn here
    # put a separator or a line end after every closing quote, the other strict error).
    reader = csv.reader(
        io.StringIO(body, newline=""),
        delimiter=sep,
        quoting=csv.QUOTE_MINIMAL if quote else csv.QUOTE_NONE,
        strict=True,
    )
    rows, numbers, previous = [], [], 0
    while True:
        number = header_at + 2 + previous
        try:
            fields = next(reader)
        except StopIteration:
            break
        except csv.Error:
            return ("error", number, NOT_CLOSED)
        previous = reader.line_num
        if not fields:
            continue
        if len(fields) != len(names):
            return ("error", number, f"expected {len(names)} fields, found {len(fields)}")
        if all(f == "" for f in fields):
            continue
        rows.append(fields)
        numbers.append(number)
    return ("rows", tuple(names), header_at + 1, rows, numbers)


def _oracle_blanks(content: bytes, n_fields: int, numbers: dict[int, str]):
    """A whitespace-separated file: ``("rows", rows, lines)`` or ``("error", line, fragment)``."""
    text = content.decode("utf-8-sig")
    rows, found = [], []
    for number, line in enumerate(_lines(text), start=1):
        stripped = _without_end(line).strip(BLANKS)
        if not stripped:
            continue
        fields = re.split(f"[{BLANKS}]+", stripped)
        if len(fields) != n_fields:
            return ("error", number, f"expected {n_fields} fields, found {len(fields)}")
        for k, name in numbers.items():
            if fields[k] in MISSING_VALUES:
                fields[k] = np.nan
                continue
            try:
                fields[k] = float(fields[k])
            except ValueError:
                return ("error", number, f"{name}: got {fields[k]!r}; expected a number")
        rows.append(fields)
        found.append(number)
    return ("rows", rows, found)


def _single_blank_split(content: bytes, n_fields: int, used: dict[int, str]):
    """The rows as Arrow reads a run with one blank between fields, when it does: every line
    that is not empty splits on one separator (a tab if the first line has one, else a
    space) into ``n_fields``, and the fields of ``used`` (position -> "text" or "number")
    are neither empty nor hold another blank, and are numbers where they must be (as
    Arrow's CSV reader converts one cell); else None."""
    import pyarrow as pa
    from pyarrow import csv as arrow_csv

    text = content.decode("utf-8-sig")
    lines = [
        (n, _without_end(line))
        for n, line in enumerate(_lines(text), start=1)
        if _without_end(line)
    ]
    if not lines:
        return None
    sep = "\t" if "\t" in lines[0][1] else " "
    rows = []
    for _, line in lines:
        fields = line.split(sep)
        if len(fields) != n_fields:
            return None
        row = []
        for k, kind in used.items():
            cell = fields[k]
            if kind == "text":
                if not cell or re.search(f"[{BLANKS}]", cell):
                    return None
                row.append(cell)
                continue
            options = arrow_csv.ConvertOptions(
                column_types={"x": pa.float64()}, null_values=sorted(MISSING_VALUES)
            )
            try:
                value = (
                    arrow_csv.read_csv(
                        io.BytesIO(cell.encode() + b"\n"),
                        read_options=arrow_csv.ReadOptions(column_names=["x"]),
                        parse_options=arrow_csv.ParseOptions(delimiter="\x01", quote_char=False),
                        convert_options=options,
                    )
                    .column(0)[0]
                    .as_py()
                )
            except (pa.ArrowInvalid, IndexError):
                return None
            if value is None:
                return None
            row.append(value)
        rows.append(row)
    return rows, [n for n, _ in lines]


def _same(got, expected) -> bool:
    """Rows equal, NaN equal to NaN."""
    if len(got) != len(expected):
        return False
    for a, b in zip(got, expected, strict=True):
        for x, y in zip(a, b, strict=True):
            if isinstance(y, float):
                if not (isinstance(x, float) and (x == y or (np.isnan(x) and np.isnan(y)))):
                    return False
            elif x != y:
                return False
    return True


# --- strategies ------------------------------------------------------------------------------

plain_cells = st.one_of(
    st.sampled_from(
        [
            "01",
            "1",
            "",
            " ",
            " 2 ",
            "n/a",
            "NA",
            "NaN",
            "é",
            "s 1",
            "a'b",
            'a"b',
            "#",
            "\\",
            "\x00",
            "1e309",
            "\u2028",
        ]
    ),
    st.text(
        st.characters(blacklist_categories=("Cs",), blacklist_characters='\n\r\t,"'), max_size=4
    ),
)
quoted_content = st.lists(
    st.sampled_from(["a", "b", ",", "\t", '"', "\n", "\r\n", "\r", " ", "é"]), max_size=5
).map("".join)


@st.composite
def tables_text(draw, sep: str, quote: bool):
    """A table as a user's tool might write it: a header, rows of any field count, empty
    lines, lines of separators or blanks only, any line ends, quoted fields (CSV)."""
    n_names = draw(st.integers(1, 4))
    names = [f"c{k}" for k in range(n_names)]
    if draw(st.booleans()):
        names[0] = f'"{names[0]}"' if quote else f" {names[0]}"
    lines = [""] * draw(st.integers(0, 2)) + [sep.join(names)]
    for _ in range(draw(st.integers(0, 10))):
        kind = draw(
            st.sampled_from(["row", "row", "row", "empty", "short", "long", "blank", "separators"])
        )
        if kind == "empty":
            lines.append("")
        elif kind == "blank":
            lines.append(draw(st.sampled_from([" ", "\t", "  "])))
        elif kind == "separators":
            lines.append(sep * (n_names - 1))
        else:
            count = {"row": n_names, "short": n_names - 1, "long": n_names + 1}[kind]
            cells = []
            for _ in range(max(count, 0)):
                if quote and draw(st.integers(0, 3)) == 0:
                    content = draw(quoted_content)
                    cells.append('"' + content.replace('"', '""') + '"')
                else:
                    cell = draw(plain_cells)
                    cells.append(cell.replace(sep, "") if sep != "," else cell)
            lines.append(sep.join(cells))
    ends = [draw(st.sampled_from(ENDS)) for _ in lines]
    text = "".join(line + end for line, end in zip(lines, ends, strict=True))
    if draw(st.booleans()):
        text = text[: len(text) - len(ends[-1])]  # no line end after the last line
    bom = "\ufeff" if draw(st.booleans()) else ""
    return (bom + text).encode("utf-8")


# --- any bytes -------------------------------------------------------------------------------


def _table_or_one_message(read, *args, **kwargs):
    try:
        return read(*args, **kwargs)
    except InputError as error:
        message = str(error)
        assert message and "\n" not in message, message
        return None


@settings(max_examples=300, deadline=None)
@given(
    content=table_bytes(["a", "b", "1", "2.5", "n/a", '"', '"x\ny"', "Q0"]),
    sep=st.sampled_from([",", "\t", None]),
    quote=st.booleans(),
    stream=st.booleans(),
)
def test_any_bytes_give_a_table_or_one_message(content, sep, quote, stream):
    with tempfile.TemporaryDirectory() as folder:
        path = _write(folder, content)
        if sep is None:
            _table_or_one_message(
                _read,
                path,
                None,
                names=["a", "b", "c"],
                numbers=["c"],
                columns=["a", "c"],
                stream=stream,
            )
        else:
            _table_or_one_message(_read, path, sep, quote=quote, stream=stream)
            _table_or_one_message(lambda: read_table(read_text(path), sep, quote=quote))


# --- rows and lines against the csv module ---------------------------------------------------


def _check_against_csv(content: bytes, sep: str, quote: bool, stream: bool = False) -> None:
    expected = _oracle_table(content, sep, quote)
    with tempfile.TemporaryDirectory() as folder:
        path = _write(folder, content)
        if expected[0] == "error":
            _, line, fragment = expected
            with pytest.raises(InputError) as error:
                _read(path, sep, quote=quote, stream=stream)
            assert str(error.value) == f"{path}: line {line}: {fragment}"
            return
        header, rows, lines = _read(path, sep, quote=quote, stream=stream)
    _, names, header_line, expected_rows, expected_lines = expected
    assert (header.names, header.line) == (names, header_line)
    assert rows == expected_rows
    assert lines == expected_lines


@example(content=b'c0,c1\n"a\r\n\r\nb",x\r\n\r\n1,2', stream=True)  # over three lines
@example(content=b'c0,c1\n1,"x\n', stream=False)  # a quoted field never closed
@example(content=b'c0,c1\n1,"x', stream=True)
@settings(max_examples=300, deadline=None)
@given(content=tables_text(",", quote=True), stream=st.booleans())
def test_quoted_csv_against_the_csv_module(content, stream):
    _check_against_csv(content, ",", quote=True, stream=stream)


@example(content=b"c0\tc1\n\t\n \n", stream=False)  # separators only, then a blank
@settings(max_examples=200, deadline=None)
@given(content=tables_text("\t", quote=False), stream=st.booleans())
def test_tsv_without_quoting_against_the_csv_module(content, stream):
    _check_against_csv(content, "\t", quote=False, stream=stream)


@settings(max_examples=200, deadline=None)
@given(content=tables_text(",", quote=True), head=st.integers(1, 24))
def test_a_stream_whose_first_bytes_have_no_quote_reads_its_later_quotes(content, head):
    """A file read as a stream is parsed without quotes when its first bytes hold none; a
    quote further on sends it back to Arrow, with quotes."""
    original = text_file._HEAD
    text_file._HEAD = head
    try:
        _check_against_csv(content, ",", quote=True, stream=True)
    finally:
        text_file._HEAD = original


# A quoted "\r\n" across two of Arrow's blocks: Arrow drops the "\n" (apache/arrow#51368).
@example(
    content=b'c0,c1,c2\n\n"","",""\n"","",""\n"","",""\n"",0\xe0\xa0\x80,""\n\n"","","\r\n"\n',
    block=16,
)
@settings(max_examples=150, deadline=None)
@given(content=tables_text(",", quote=True), block=st.integers(16, 96))
def test_the_same_rows_when_arrow_reads_in_small_blocks(content, block):
    """Arrow parses blocks in parallel: a quoted line break or a row at a block's edge, and
    dictionaries that differ from block to block, read as in one block."""
    original = tables._ARROW_BLOCK
    tables._ARROW_BLOCK = block
    try:
        _check_against_csv(content, ",", quote=True)
    finally:
        tables._ARROW_BLOCK = original


# --- several files in one pass ---------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    bodies=st.lists(
        st.lists(
            st.sampled_from(
                ["s1,a,3", "s1,b,n/a", "", ",,", 's2,"x, y",1', 's2,"two\nlines",7', "s3,c"]
            ),
            max_size=5,
        ),
        min_size=1,
        max_size=4,
    ),
    ends=st.sampled_from(ENDS),
    last_end=st.booleans(),
)
def test_several_files_keep_their_own_rows_and_lines(bodies, ends, last_end):
    """Files of one header parsed in one pass: each row names its file and its line there, and
    a file's last line without a line end does not run into the next file."""
    with tempfile.TemporaryDirectory() as folder:
        contents = []
        for body in bodies:
            text = ends.join(["sketch_id,image_id,rating", *body])
            contents.append((text + (ends if last_end else "")).encode())
        paths = [_write(folder, c, f"f{k}.csv") for k, c in enumerate(contents)]
        expected_rows, expected_where, error = [], [], None
        for path, content in zip(paths, contents, strict=True):
            oracle = _oracle_table(content, ",", True)
            if oracle[0] == "error":
                error = f"{path}: line {oracle[1]}: {oracle[2]}"
                break
            expected_rows += oracle[3]
            expected_where += [(str(path), n) for n in oracle[4]]
        files = [read_text(p) for p in paths]
        pairs = [(f, read_header(f, ",")) for f in files]
        if error is not None:
            with pytest.raises(InputError) as caught:
                read_rows(pairs)
            assert str(caught.value) == error
            return
        rows = read_rows(pairs)
    frame = rows.frame
    assert [[str(frame[c].iloc[k]) for c in frame.columns] for k in range(len(frame))] == (
        expected_rows
    )
    assert [(str(paths[f]), n) for f, n in zip(rows.files, rows.lines, strict=True)] == (
        expected_where
    )


# --- whitespace-separated files (TREC runs) ---------------------------------------------------

run_fields = st.one_of(
    st.sampled_from(["s1", "Q0", "a", "1", "0.5", "-3", "nan", "NA", "", "1e309", "x.y", "1_0"]),
    st.text(st.characters(blacklist_categories=("Cs", "Zs", "Cc")), min_size=1, max_size=3),
)


@st.composite
def runs_text(draw):
    lines = []
    for _ in range(draw(st.integers(0, 8))):
        fields = draw(st.lists(run_fields, min_size=0, max_size=7))
        if draw(st.integers(0, 3)):
            separators = [" "] * max(len(fields) - 1, 0)  # the regular case: Arrow reads it
        else:
            separators = [
                draw(st.sampled_from([" ", "  ", "\t", " \t", "\x0c"]))
                for _ in range(max(len(fields) - 1, 0))
            ]
        line = "".join(s + f for s, f in zip(["", *separators], fields, strict=False))
        if not draw(st.integers(0, 5)):
            line = draw(st.sampled_from([" ", "\t"])) + line
        lines.append(line)
    ends = [draw(st.sampled_from(ENDS)) for _ in lines]
    text = "".join(line + end for line, end in zip(lines, ends, strict=True))
    return text.encode("utf-8")


TREC = ["query_id", "q0", "doc_id", "rank", "score", "tag"]


@example(content=b"s1 Q0 a 1 0.5 t\ns1  Q0 b 2 0.5\n", stream=True)  # five fields, two blanks
@example(content=b"s1 Q0 a 1 0.5 t\ns1 Q0 b  0.5 t\n", stream=False)
@example(content=b"s1 Q0 a 1 0.5 t \n", stream=True)
@example(content=b"s1\tQ0\ta\t1\t0.5\tt\ns1 Q0\tb\t2\t0.5\tt\n", stream=True)  # a blank in a field
@example(content=b"s1 Q0 a 1 0.5 t\ns1  b 2 0.5 t\n", stream=False)  # a doubled blank: runs
@settings(max_examples=400, deadline=None)
@given(content=runs_text(), stream=st.booleans())
def test_whitespace_separated_rows_are_split_on_runs_of_blanks(content, stream):
    """As trec_eval reads a run: fields split on runs of blanks, whether Arrow's split on one
    blank reads the file or the Python pass does; except that the fields a run's rows are
    made of (query, doc, score) are the only ones Arrow's split checks: a line of five fields
    with two blanks in a row where Arrow finds six is read as Arrow splits it."""
    arrow = _single_blank_split(content, 6, {0: "text", 2: "text", 4: "number"})
    expected = (
        ("rows", [[q, "", d, "", s] for q, d, s in arrow[0]], arrow[1])
        if arrow
        else (_oracle_blanks(content, 6, {4: "score"}))
    )
    with tempfile.TemporaryDirectory() as folder:
        path = _write(folder, content, "r.run")
        options = {
            "names": TREC,
            "numbers": ["score"],
            "columns": ["query_id", "doc_id", "score"],
            "stream": stream,
        }
        if expected[0] == "error":
            _, line, fragment = expected
            with pytest.raises(InputError) as error:
                _read(path, None, **options)
            assert str(error.value) == f"{path}: line {line}: {fragment}"
            return
        _, rows, lines = _read(path, None, **options)
    _, expected_rows, expected_lines = expected
    assert _same(rows, [[r[0], r[2], r[4]] for r in expected_rows])
    assert lines == expected_lines


# --- text ------------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    head=st.lists(st.sampled_from(["a", ",", "\n", "\r", "\r\n", "é", "€"]), max_size=12).map(
        "".join
    ),
    bad=st.sampled_from([b"\xff", b"\xe9", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\x80"]),
    tail=st.binary(max_size=8),
    bom=st.booleans(),
    step=st.integers(1, 9),
)
def test_a_file_that_is_not_utf8_is_named_on_the_line_of_its_first_bad_byte(
    head, bad, tail, bom, step
):
    """Checked in slices of any size (a character split between two)."""
    content = (b"\xef\xbb\xbf" if bom else b"") + head.encode() + bad + tail
    original = text_file._UTF8_SLICE
    text_file._UTF8_SLICE = step
    try:
        _check_utf8(content)
    finally:
        text_file._UTF8_SLICE = original


def _check_utf8(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = _write(folder, content)
        try:
            content.decode("utf-8")
        except UnicodeDecodeError as error:
            before = content[: error.start].decode("utf-8-sig")
            line = len(_lines(before + "x"))
            message = (
                f"{path}: line {line}: not UTF-8 (byte 0x{content[error.start]:02x}); "
                "expected a UTF-8 text file"
            )
            with pytest.raises(InputError) as caught:
                read_text(path)
            assert str(caught.value) == message
            with pytest.raises(InputError, match=rf"^{re.escape(str(path))}, line {line}: "):
                read_text(path, COMMA)
        else:
            assert read_text(path).text == content.decode("utf-8-sig").replace(
                "\r\n", "\n"
            ).replace("\r", "\n")


@settings(max_examples=300, deadline=None)
@given(
    content=st.binary(max_size=64)
    | st.text(st.sampled_from("ab\r\n"), max_size=40).map(str.encode),
    chunk=st.integers(1, 9),
)
def test_the_file_digest_counts_lines_as_an_editor_and_hashes_every_byte(content, chunk):
    """Streamed in chunks of any size (a CR LF split between two) or read whole."""
    with tempfile.TemporaryDirectory() as folder:
        path = _write(folder, content)
        original = provenance._CHUNK
        provenance._CHUNK = chunk
        try:
            streamed = provenance.file_digest(path)
        finally:
            provenance._CHUNK = original
        kept = provenance.file_digest(path, keep=True)
    # bytes.splitlines() breaks at LF, CR LF and a lone CR only (ASCII line boundaries).
    assert streamed.lines == kept.lines == len(content.splitlines())
    assert streamed.sha256 == kept.sha256 == hashlib.sha256(content).hexdigest()
    assert kept.data == content and streamed.data is None


def test_the_file_digest_can_flush_the_file(tmp_path, monkeypatch):
    flushed = []
    monkeypatch.setattr(provenance.os, "fsync", flushed.append)
    path = tmp_path / "a.csv"
    path.write_bytes(b"x\n")
    provenance.file_digest(path)
    assert flushed == []
    provenance.file_digest(path, sync=True)
    assert len(flushed) == 1


# --- the rules, case by case -----------------------------------------------------------------


@pytest.mark.parametrize(
    "content, message",
    [
        (b"a,b\n1,2,\n", "line 2: expected 2 fields, found 3"),  # a trailing separator
        (b"a,b\r1,2\r3\r", "line 3: expected 2 fields, found 1"),  # lone CR line ends
        (b'a,b\n1,"x\n2,3\n', f"line 2: {NOT_CLOSED}"),
        (b"a,b,a\n", "line 1: column 'a' appears twice"),
        (b" \n\t\n", "line 1: empty; expected a header line"),
    ],
)
def test_bad_tables_are_named_on_their_line(tmp_path, content, message):
    path = tmp_path / "t.csv"
    path.write_bytes(content)
    with pytest.raises(InputError) as error:
        read_table(read_text(path), ",")
    assert str(error.value) == f"{path}: {message}"


def test_a_caller_names_lines_and_words_problems_its_own_way(tmp_path):
    path = tmp_path / "r.run"
    path.write_bytes(b"s1 Q0 a 1 0.5 t\ns1 Q0 b 2 high t\n")
    wording = replace(COMMA, number="{column} is {text!r}")
    file = read_text(path, wording)
    with pytest.raises(InputError) as error:
        read_rows([(file, Header.none(file, TREC))], wording=wording, numbers=["score"])
    assert str(error.value) == f"{path}, line 2: score is 'high'"
    assert COLON.at(path, 7) == f"{path}: line 7"


def test_a_quoted_header_and_cells_as_r_writes_them(tmp_path):
    path = tmp_path / "r.csv"
    path.write_bytes(b'"participant","note, free"\r\n"01","x, ""y"""\r\n"02",NA\r\n')
    table = read_table(read_text(path), ",")
    assert list(table.columns) == ["participant", "note, free"]
    assert table["participant"].tolist() == ["01", "02"]  # text stays text
    assert table["note, free"].tolist() == ['x, "y"', "NA"]
    assert table.attrs["lines"] == (2, 3)


def test_missing_numbers_are_nan_spelled_as_everywhere(tmp_path):
    path = tmp_path / "r.tsv"
    spellings = sorted(MISSING_VALUES - {""})
    path.write_bytes(("score\n" + "\n".join(spellings) + "\n1.5\n").encode())
    file = read_text(path)
    rows = read_rows([(file, read_header(file, "\t"))], numbers=["score"])
    values = rows.frame["score"].to_numpy()
    assert np.isnan(values[:-1]).all() and values[-1] == 1.5


@pytest.mark.parametrize(
    ("bodies", "message"),
    [
        # The first bad line in file order, in the second file of three.
        ([b"1,2\n", b"3,4\n5\n", b"6\n"], "f1.csv: line 3: expected 2 fields, found 1"),
        # A number that is not one, after a file that only the line-by-line pass reads (a
        # carriage return inside a quoted value).
        ([b'1,"x\ry"\n', b"2,3\nlow,4\n"], "f1.csv: line 3: a: got 'low'; expected a number"),
        # A quoted field never closed, in the last file.
        ([b"1,2\n", b'3,"4\n'], f"f1.csv: line 2: {NOT_CLOSED}"),
    ],
)
def test_several_files_name_the_first_bad_line(tmp_path, bodies, message):
    paths = [_write(str(tmp_path), b"a,b\n" + body, f"f{k}.csv") for k, body in enumerate(bodies)]
    files = [read_text(p) for p in paths]
    with pytest.raises(InputError) as error:
        read_rows([(f, read_header(f, ",")) for f in files], numbers=["a"])
    assert str(error.value) == f"{tmp_path}/{message}"
