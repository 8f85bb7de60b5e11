"""Ratings can never be misattributed, and no bytes make the reader fail with a traceback."""

import hashlib
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sbir_study.analysis import load_ratings
from sbir_study.foundation.checks import InputError, bad_ids
from sbir_study.foundation.environment import environment_variables
from sbir_study.foundation.threads import THREADS_VARIABLE
from tests.helpers import reads_or_refuses, table_bytes

COLUMNS = ["participant", "sketch_id", "image_id", "phase", "rating", "rt", "trial"]


def _write_session(root, label, rows, columns, *, with_participant, line_end="\n"):
    """One BIDS _beh.tsv with the columns in the given order (``participant`` optional)."""
    columns = [c for c in columns if with_participant or c != "participant"]
    path = root / f"sub-{label}" / "beh" / f"sub-{label}_task-sbirrating_beh.tsv"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["\t".join(columns)] + ["\t".join(str(row[c]) for c in columns) for row in rows]
    path.write_bytes((line_end.join(lines) + line_end).encode())
    return path


def _rows(label, ratings):
    return [
        {
            "participant": label,
            "sketch_id": "s1",
            "image_id": f"i{k}",
            "phase": "main",
            "rating": r,
            "rt": "1.0",
            "trial": k + 1,
            "extra": "x",
        }
        for k, r in enumerate(ratings)
    ]


def _given(ratings):
    table = ratings[ratings["phase"] == "main"]
    return {
        (str(p), str(i)): (None if pd.isna(r) else int(r))
        for p, i, r in zip(table["participant"], table["image_id"], table["rating"], strict=True)
    }


@pytest.mark.parametrize("with_participant", [False, True])
def test_columns_in_different_orders_keep_each_rating_with_its_participant(
    tmp_path, with_participant
):
    """Files grouped by header are parsed out of file order: labels must travel with rows."""
    layouts = {
        "01": COLUMNS,
        "02": ["image_id", "sketch_id", "rating", "participant", "phase", "rt", "trial"],
        "03": [*COLUMNS, "extra"],
        "04": COLUMNS,
    }
    written = {"01": [1, 2, 3], "02": [7, 6, 5], "03": [4, 4, 1], "04": [2, 7, 7]}
    for label, columns in layouts.items():
        _write_session(
            tmp_path,
            label,
            _rows(label, written[label]),
            columns,
            with_participant=with_participant,
        )
    expected = {(p, f"i{k}"): r for p, rs in written.items() for k, r in enumerate(rs)}
    assert _given(load_ratings(tmp_path)) == expected


def test_a_participant_column_that_contradicts_the_file_name_is_named(tmp_path):
    _write_session(tmp_path, "01", _rows("01", [1, 2]), COLUMNS, with_participant=True)
    path = _write_session(tmp_path, "02", _rows("01", [3, 4]), COLUMNS[::-1], with_participant=True)
    with pytest.raises(InputError, match=rf"{path}: line 2: field 'participant': expected '02'"):
        load_ratings(tmp_path)


# A participant cell of a BIDS file: the file's own label (blanks around it are
# stripped), or not: another label, another spelling, an empty cell, n/a (a file from
# another tool leaves the column out, and each of its rows takes the file's label).
CELLS = st.sampled_from(["own", " own", "own  ", "other", "OWN", "", "n/a"])


@settings(max_examples=80, deadline=5000)
@given(
    files=st.lists(
        st.tuples(
            st.sampled_from([COLUMNS, COLUMNS[::-1]]),
            st.booleans(),
            st.lists(CELLS, min_size=1, max_size=5),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_a_participant_column_is_read_against_the_file_name_cell_by_cell(files):
    """Every cell that names the file's own participant (blanks around it stripped), and
    every row of a file without the column, is read as that participant; any other cell,
    in any of the files, is refused, naming its file, line, the expected label and the
    stripped value."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        wrong, expected = [], {}
        for number, (columns, with_participant, cells) in enumerate(files):
            label, other = f"p{number}", f"p{number + 1}" if number else "x9"
            spelled = {
                "own": label,
                " own": f" {label}",
                "own  ": f"{label}  ",
                "other": other,
                "OWN": label.upper(),
                "": "",
                "n/a": "n/a",
            }
            rows = _rows(label, [1 + k % 7 for k in range(len(cells))])
            for row, cell in zip(rows, cells, strict=True):
                row["participant"] = spelled[cell]
            path = _write_session(root, label, rows, columns, with_participant=with_participant)
            if with_participant:
                wrong += [
                    (str(path), line, label, spelled[cell].strip())
                    for line, cell in enumerate(cells, start=2)
                    if cell in ("other", "OWN", "", "n/a")
                ]
            expected |= {(label, row["image_id"]): row["rating"] for row in rows}
        if not wrong:
            assert _given(load_ratings(root)) == expected
            return
        with pytest.raises(InputError) as refused:
            load_ratings(root)
        message = str(refused.value)
        assert any(
            message == f"{path}: line {line}: field 'participant': expected {label!r} (the "
            f"file's sub- label), got {value!r}"
            for path, line, label, value in wrong
        ), (message, wrong)


def test_a_file_in_another_participants_folder_is_refused(tmp_path):
    path = tmp_path / "sub-01" / "beh" / "sub-02_task-sbirrating_beh.tsv"
    path.parent.mkdir(parents=True)
    path.write_text("sketch_id\timage_id\trating\ns1\ta\t1\n")
    with pytest.raises(InputError, match="says participant '02' but it is in sub-01/"):
        load_ratings(tmp_path)
    path.rename(path.with_name("notes_beh.tsv"))
    with pytest.raises(InputError, match="does not start with sub-<label>_"):
        load_ratings(tmp_path)


labels = st.text("abcXYZ0123456789", min_size=1, max_size=4)
# A few layouts shared between files (the reader parses files of one header together, so
# the order of the parsed rows is not the files' order), and any other.
FIXED = [COLUMNS, COLUMNS[::-1], [*COLUMNS, "extra"]]
layouts = st.one_of(
    st.sampled_from(FIXED),
    st.permutations([*COLUMNS, "extra"]).map(
        lambda columns: columns[: len(columns) - 1] if columns[-1] == "extra" else columns
    ),
)


@settings(max_examples=60, deadline=3000)
@given(
    sessions=st.dictionaries(
        labels,
        st.tuples(
            layouts,
            st.lists(st.one_of(st.integers(1, 7), st.just("n/a")), min_size=1, max_size=6),
            st.booleans(),
            st.sampled_from(["\n", "\r\n", "\r"]),
        ),
        min_size=1,
        max_size=6,
    ),
    threads=st.sampled_from(["1", "2", "3"]),
)
def test_every_rating_is_read_back_as_written(sessions, threads):
    """Any layouts, any mix of files with and without a participant column, any line ends;
    and each file's SHA-256, taken on a thread beside the parse (``threads`` above 1) or in
    this one, is the file's as ``hashlib`` takes it."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        expected = {}
        for label, (columns, ratings, with_participant, end) in sessions.items():
            rows = _rows(label, ratings)
            _write_session(
                root, label, rows, columns, with_participant=with_participant, line_end=end
            )
            expected |= {
                (label, row["image_id"]): None if row["rating"] == "n/a" else row["rating"]
                for row in rows
            }
        with environment_variables({THREADS_VARIABLE: threads}):
            read = load_ratings(root)
        assert _given(read) == expected
        hashed = {source.path: source.sha256 for source in read.attrs["provenance"].sources}
        assert hashed == {
            str(path): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in root.glob("sub-*/beh/*_beh.tsv")
        }


#: A session file that reads: two rows, the second cut off (a session that stopped).
VALID_SESSION = b"sketch_id\timage_id\trating\ns1\ti1\t2\ns1\ti2\t5\ns1\ti3"

IDS = [
    "participant",
    "sketch_id",
    "image_id",
    "phase",
    "rating",
    "rt",
    "anchor_rating",
    "trial",
    "01",
    "s1",
    "a",
    "main",
    "anchor_repeat",
    "3",
    "n/a",
]


def _check_result(ratings):
    """What every table the reader accepts holds: valid ids, ratings on the scale."""
    if ratings is None:
        return
    assert not bad_ids(ratings["participant"].astype(str), participant=True).any()
    for column in ("sketch_id", "image_id"):
        assert not bad_ids(ratings[column].astype(str)).any()
    given = ratings["rating"].dropna()
    assert ((given >= 1) & (given <= 7)).all()
    assert np.isin(
        ratings["phase"].astype(str), ["anchor_demo", "anchor_repeat", "main", "practice"]
    ).all()


@settings(max_examples=150, deadline=3000)
@given(content=table_bytes(IDS), suffix=st.sampled_from([".csv", ".tsv", ".txt"]))
def test_any_bytes_as_a_flat_table(content, suffix):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"ratings{suffix}"
        path.write_bytes(content)
        _check_result(reads_or_refuses(load_ratings, path))


@settings(max_examples=100, deadline=3000)
@given(
    first=table_bytes(IDS, separators=("\t",)),
    second=table_bytes(IDS, separators=("\t",)),
    name=st.sampled_from(
        [
            "sub-01_task-x_beh.tsv",
            "sub-1 2_task-x_beh.tsv",
            "x_beh.tsv",
            "sub-01_beh.tsv",
            "sub-.._beh.tsv",
        ]
    ),
)
def test_any_bytes_in_a_bids_dataset(first, second, name):
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        good = root / "sub-01" / "beh" / "sub-01_task-x_beh.tsv"
        good.parent.mkdir(parents=True)
        good.write_bytes(first)
        other = root / "sub-02" / "beh" / name
        other.parent.mkdir(parents=True)
        other.write_bytes(second)
        _check_result(reads_or_refuses(load_ratings, root))


def _read_recording(root: Path, threads: str):
    """What reading a dataset gives: the table (or the refusal's message) and the warnings'
    messages, in order."""
    with (
        environment_variables({THREADS_VARIABLE: threads}),
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always")
        try:
            outcome = load_ratings(root)
        except InputError as error:
            outcome = str(error)
    return outcome, [str(w.message) for w in caught]


@settings(max_examples=100, deadline=None)
@given(
    files=st.lists(
        st.one_of(table_bytes(IDS, separators=("\t",)), st.just(VALID_SESSION)),
        min_size=2,
        max_size=5,
    ),
    misnamed=st.one_of(st.none(), st.integers(0, 4)),
)
def test_files_hashed_on_a_thread_give_what_one_thread_gives(files, misnamed):
    """The same table, or the same first refusal, and the same warnings in the same order,
    whichever files are bad (bytes, headers, cut-off lines, a name that is not sub-<label>)."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for k, content in enumerate(files):
            name = "x_beh.tsv" if k == misnamed else f"sub-{k:02d}_task-x_beh.tsv"
            path = root / f"sub-{k:02d}" / "beh" / name
            path.parent.mkdir(parents=True)
            path.write_bytes(content)
        # Oracle: the files read and hashed in this thread alone.
        expected, expected_warnings = _read_recording(root, "1")
        got, got_warnings = _read_recording(root, "2")
    if isinstance(expected, str):
        assert got == expected
    else:
        pd.testing.assert_frame_equal(got, expected)
        assert got.attrs["provenance"] == expected.attrs["provenance"]
    assert got_warnings == expected_warnings


@settings(max_examples=100, deadline=3000)
@given(
    column=st.sampled_from(["participant", "sketch_id", "image_id"]),
    value=st.text(max_size=8),
)
def test_an_id_is_read_only_when_it_follows_the_rule(column, value):
    """Spaces, tabs, line breaks, NULs, slashes and dots can forge lines or paths."""
    row = {"participant": "01", "sketch_id": "s1", "image_id": "a", "rating": "3"}
    row[column] = value
    text = (
        "participant,sketch_id,image_id,rating\n"
        + ",".join('"' + row[c].replace('"', '""') + '"' for c in row)
        + "\n"
    )
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "ratings.csv"
        path.write_text(text, encoding="utf-8", newline="")
        ratings = reads_or_refuses(load_ratings, path)
    stripped = value.strip()
    valid = not bad_ids([stripped], participant=column == "participant")[0]
    # docs/formats.md: a participant label a table reads as missing is refused, in any case.
    if column == "participant" and stripped.lower() in {"na", "n/a", "nan", "none", "null"}:
        valid = False
    assert (ratings is not None) == valid
    if ratings is not None:
        assert ratings[column].astype(str).tolist() == [stripped]
