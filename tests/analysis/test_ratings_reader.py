"""The table reader gives every cell exactly as written, with the line it came from.

Every table is parsed by Arrow's CSV reader (``sbir_study.foundation.tables``). The
oracle for unquoted tables (every BIDS file, and CSV without a quote character) is
Python's own ``str.split`` of each line, which knows nothing of the reader; quoted CSV is
checked against the standard library's ``csv`` module.
"""

import csv
import io
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sbir_study.analysis.rating_files import _read_text
from sbir_study.analysis.rating_files import parse as _parse
from sbir_study.foundation.checks import InputError

HEADER = ["participant", "sketch_id", "image_id", "rating"]

# Cells as users write them: labels that look like numbers, blanks, n/a, spaces around a
# value, text that pandas or Arrow might be tempted to convert.
cells = st.one_of(
    st.sampled_from(
        [
            "01",
            "1",
            "1.0",
            "",
            " ",
            " 2 ",
            "n/a",
            "NA",
            "NaN",
            "true",
            "1e309",
            "é",
            "s 1",
            "a'b",
            "2024-01-01",
            "-0",
            "0x10",
            "#",
            "\\",
        ]
    ),
    st.text(
        st.characters(blacklist_categories=("Cs",), blacklist_characters='\n\r\t,"'), max_size=5
    ),
)


def _table(draw, sep):
    extra = draw(st.integers(0, 2))
    names = HEADER + [f"x{k}" for k in range(extra)]
    n_fields = len(names)
    lines = []
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["row", "row", "row", "empty", "short", "long"]))
        if kind == "empty":
            lines.append("")
            continue
        count = {"row": n_fields, "short": n_fields - 1, "long": n_fields + 1}[kind]
        fields = [draw(cells) for _ in range(count)]
        lines.append(sep.join(fields))
    return names, lines


@st.composite
def plain_tables(draw):
    sep = draw(st.sampled_from(["\t", ","]))
    names, lines = _table(draw, sep)
    if sep == "\t":  # TSV has no quoting: a quote is text
        lines = [line.replace("a'b", 'a"b') for line in lines]
    end = draw(st.sampled_from(["\n", "\r\n"]))
    last_end = draw(st.booleans())
    text = end.join([sep.join(names), *lines]) + (end if last_end else "")
    return sep, names, lines, text


def _expected(names, lines, sep):
    """Rows and their line numbers by str.split, or the first line with a wrong count."""
    rows, numbers = [], []
    for number, line in enumerate(lines, start=2):
        if line == "":
            continue
        fields = line.split(sep)
        if len(fields) != len(names):
            return None, (number, len(fields))
        if all(f == "" for f in fields):
            continue  # a line of separators only is a blank row
        rows.append(fields)
        numbers.append(number)
    return (rows, numbers), None


# Only blank lines below the header, one of them short: the short line is named, not
# "no rows" (found by this test in a CI run).
@example(("\t", HEADER, ["\t\t"], "participant\tsketch_id\timage_id\trating\n\t\t"))
@example(("\t", HEADER, ["\t\t\t", " "], "participant\tsketch_id\timage_id\trating\n\t\t\t\n \n"))
@settings(max_examples=300, deadline=None)
@given(plain_tables())
def test_unquoted_tables_read_cell_for_cell_with_their_line_numbers(table):
    sep, names, lines, text = table
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / ("r.tsv" if sep == "\t" else "r.csv")
        path.write_bytes(text.encode("utf-8"))
        expected, wrong = _expected(names, lines, sep)
        if expected is not None and not "".join(lines).strip():
            with pytest.raises(InputError, match="no rows"):
                _read_text(path, bids=False)
            return
        if wrong is not None:
            number, found = wrong
            with pytest.raises(InputError) as error:
                _parse([_read_text(path, bids=False)])
            assert str(error.value) == (
                f"{path}: line {number}: expected {len(names)} fields, found {found}"
            )
            return
        raw = _read_text(path, bids=False)
        assert raw.plain
        frame = _parse([raw])
        rows, numbers = expected
        assert list(frame.columns[: len(names)]) == names
        got = [[str(frame[c].iloc[k]) for c in names] for k in range(len(frame))]
        assert got == rows
        assert frame["_line"].tolist() == numbers
        assert set(frame["_source"].astype(str)) <= {str(path)}


def test_several_files_keep_their_own_lines_and_names(tmp_path):
    """Files parsed in one pass: each row keeps its file and line, empty lines aside."""
    first = tmp_path / "sub-01" / "beh" / "sub-01_task-x_beh.tsv"
    second = tmp_path / "sub-02" / "beh" / "sub-02_task-x_beh.tsv"
    for path in (first, second):
        path.parent.mkdir(parents=True)
    first.write_bytes(b"sketch_id\timage_id\trating\n\ns1\ta\t3\ns1\tb\tn/a\n")
    second.write_bytes(b"sketch_id\timage_id\trating\r\ns1\ta\t 7\r\n\r\n\r\ns1\tb\t1\r\n")
    files = [_read_text(p, bids=True, label=p.name[4:6]) for p in (first, second)]
    frame = _parse(files)
    assert frame["rating"].tolist() == ["3", "n/a", " 7", "1"]
    assert frame["_line"].tolist() == [3, 4, 2, 5]
    assert frame["_source"].astype(str).tolist() == [str(first)] * 2 + [str(second)] * 2
    assert frame["_label"].astype(str).tolist() == ["01", "01", "02", "02"]


def test_a_wrong_field_count_names_its_file_and_line_among_many(tmp_path):
    paths = []
    for k in range(1, 4):
        path = tmp_path / f"sub-0{k}" / "beh" / f"sub-0{k}_task-x_beh.tsv"
        path.parent.mkdir(parents=True)
        body = "s1\ta\t3\n" * 5 + ("s1\tb\t3\textra\n" if k == 2 else "")
        path.write_text("sketch_id\timage_id\trating\n" + body)
        paths.append(path)
    files = [_read_text(p, bids=True, label=p.name[4:6]) for p in paths]
    with pytest.raises(InputError) as error:
        _parse(files)
    assert str(error.value) == f"{paths[1]}: line 7: expected 3 fields, found 4"


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.lists(
            st.one_of(cells, st.sampled_from(['"', "a,b", 'say "hi"', ""])), min_size=4, max_size=4
        ),
        min_size=1,
        max_size=8,
    )
)
def test_quoted_csv_reads_as_the_csv_module_writes_it(rows):
    """CSV with quotes against the standard library's writer."""
    rows = [r for r in rows if any(r)] or [["01", "s", "a", "3"]]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_ALL)
    writer.writerow(HEADER)
    writer.writerows(rows)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "r.csv"
        path.write_text(out.getvalue(), encoding="utf-8")
        raw = _read_text(path, bids=False)
        assert not raw.plain
        frame = _parse([raw])
    expected = [r for r in csv.reader(io.StringIO(out.getvalue()))][1:]
    assert [[str(frame[c].iloc[k]) for c in HEADER] for k in range(len(frame))] == expected


def test_a_header_quoted_as_r_writes_it(tmp_path):
    """R's write.csv quotes every name and text cell; a name may hold the separator."""
    path = tmp_path / "r.csv"
    path.write_text(
        '"participant","sketch_id","image_id","rating","note, free"\n'
        '"01","s1","a",3,"x, y"\n"01","s1","b",NA,""\n',
        encoding="utf-8",
    )
    frame = _parse([_read_text(path, bids=False)])
    assert list(frame.columns[:5]) == [*HEADER, "note, free"]
    assert frame["participant"].tolist() == ["01", "01"]
    assert frame["note, free"].tolist() == ["x, y", ""]
    assert frame["rating"].tolist() == ["3", "NA"]


@pytest.mark.parametrize("sep, suffix", [(",", ".csv"), ("\t", ".tsv")])
def test_a_trailing_separator_on_every_row_is_refused_not_shifted(tmp_path, sep, suffix):
    """pandas reads a table whose every row has one field more than its header with the
    first column as the index: every label moves one column left and the ratings are lost.
    The reader refuses it on its first line."""
    path = tmp_path / f"r{suffix}"
    rows = ["participant", "sketch_id", "image_id", "rating"], ["01", "s1", "a", "3", ""]
    path.write_text("\n".join(sep.join(r) for r in (*rows, rows[1])) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as error:
        _parse([_read_text(path, bids=False)])
    assert str(error.value) == f"{path}: line 2: expected 4 fields, found 5"


# A ratings table with a session's extra columns, any of them empty, some rows blank (the
# separators only), written plain or quoted by the csv module (a quote, a separator or a
# line break inside an extra cell).
_EXTRA = ["onset", "presses", "note"]
_CELLS = {
    "participant": st.sampled_from(["01", "02", " 03", ""]),
    "sketch_id": st.sampled_from(["s1", "s2", ""]),
    "image_id": st.sampled_from(["a", "b", "c", "d", ""]),
    "rating": st.sampled_from(["1", "4", "7", "n/a", "", "9"]),
    "phase": st.sampled_from(["main", "anchor_repeat", ""]),
    "onset": st.sampled_from(["", "0.0", "3.25"]),
    "presses": st.sampled_from(["", "2@0.51 3@0.9", 'said "2"', "a,b"]),
    "note": st.sampled_from(["", "x", "two\nlines", "cr\r\nlf"]),
}


@st.composite
def _tables_with_extras(draw):
    more = draw(st.sets(st.sampled_from(["phase", *_EXTRA])))
    names = draw(st.permutations(["participant", "sketch_id", "image_id", "rating", *more]))
    # A row: blank, every field of it; or any cells; or the rating columns' blank and the
    # extra ones' any (a blank row only to a reader that looked at the rating columns).
    cells = st.fixed_dictionaries({name: _CELLS[name] for name in names})
    only_extra = st.fixed_dictionaries(
        {name: _CELLS[name] if name in _EXTRA else st.just("") for name in names}
    )
    rows = draw(st.lists(st.one_of(st.just(None), cells, only_extra), min_size=1, max_size=8))
    quoted = draw(st.booleans())
    text = io.StringIO()
    writer = csv.writer(
        text,
        lineterminator="\n",
        quoting=csv.QUOTE_MINIMAL if quoted else csv.QUOTE_NONE,
        escapechar=None if quoted else "\\",
    )
    writer.writerow(names)
    for row in rows:
        cells = [""] * len(names) if row is None else [row[n] for n in names]
        if not quoted:
            cells = [
                c.replace('"', "").replace(",", ";").replace("\r", "").replace("\n", " ")
                for c in cells
            ]
        writer.writerow(cells)
    return text.getvalue()


@settings(max_examples=150, deadline=None)
@given(table=_tables_with_extras())
def test_a_table_read_without_its_extra_columns_is_the_same_table_without_them(table):
    """``analyze`` reads the rating columns only (``extra_columns=False``): the extra
    columns are parsed as text and not kept. Every table reads to the rating columns of
    the whole table, or is refused with the same message: a row is blank only when every
    field is, extra ones included, and a quote or a line break in an extra cell counts."""
    from sbir_study.analysis import load_ratings

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "ratings.csv"
        path.write_text(table, encoding="utf-8", newline="")
        outcomes = []
        for extra in (True, False):
            try:
                frame = load_ratings(path, extra_columns=extra)
            except InputError as error:
                outcomes.append(("refused", str(error)))
            else:
                outcomes.append(("read", frame[[c for c in frame if c not in _EXTRA]]))
        (whole, whole_value), (rating_only, rating_value) = outcomes
        assert whole == rating_only, (whole_value, rating_value)
        if whole == "refused":
            assert whole_value == rating_value
        else:
            assert not set(_EXTRA) & set(rating_value.columns)
            pd.testing.assert_frame_equal(whole_value, rating_value)
