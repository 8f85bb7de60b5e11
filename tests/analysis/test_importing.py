"""Ratings from other tools (sbir_study.analysis.importers): the parsing decisions (separator,
decimal comma) by property, and each format's round trip, the imported dataset's ratings
compared with the source read independently with pandas. The option parsers (--columns,
--keys, --select, --answers) are tested in tests/cli/test_import_options.py."""

from __future__ import annotations

import ast
import csv
import io
import string
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sbir_study.analysis import load_ratings
from sbir_study.analysis.importers import (
    ImportedRatingsWarning,
    read_jspsych,
    read_long_table,
    read_psychopy,
    read_wide,
    read_wide_mapping,
    write_imported_dataset,
)
from sbir_study.analysis.importers.cells import parse_number
from sbir_study.analysis.importers.delimited import SEPARATORS, decode_text, sniff_separator
from sbir_study.analysis.importers.jspsych import stimulus_paths
from sbir_study.analysis.importers.wide import answer_rating
from sbir_study.foundation.checks import InputError
from sbir_study.foundation.scale import Scale

DATA = Path(__file__).parents[1] / "data"
EXAMPLES = Path(__file__).parents[2] / "docs" / "examples"
#: The keys 1..7 for the points of the paper's scale.
_KEYS7 = {str(point): point for point in range(1, 8)}

# Cells that hold none of the candidate separators, nor quotes.
_PLAIN = st.text(alphabet=string.ascii_letters + string.digits + " .-_", min_size=1, max_size=8)


def _rows(draw, n_columns):
    names = draw(
        st.lists(
            _PLAIN.map(str.strip).filter(bool), min_size=n_columns, max_size=n_columns, unique=True
        )
    )
    rows = draw(st.lists(st.lists(_PLAIN, min_size=n_columns, max_size=n_columns), max_size=8))
    return names, rows


@st.composite
def _tables(draw):
    sep = draw(st.sampled_from(SEPARATORS))
    names, rows = _rows(draw, draw(st.integers(2, 6)))
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=sep, lineterminator="\n")
    writer.writerow(names)
    writer.writerows(rows)
    return sep, names, buffer.getvalue().splitlines()


@settings(max_examples=300, deadline=None)
@given(_tables())
def test_the_separator_of_a_table_whose_cells_hold_no_other_separator_is_found(table):
    sep, names, lines = table
    assert sniff_separator(lines) == sep
    assert sniff_separator(lines, expected=names[:2]) == sep


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=',;\t|ab" ', max_size=12), min_size=1, max_size=6))
def test_a_sniffed_separator_splits_every_line_alike_or_none_is_chosen(lines):
    try:
        sep = sniff_separator(lines)
    except InputError as error:
        assert "--sep" in str(error) or "empty" in str(error)
        return
    counts = {len(row) for row in csv.reader([x for x in lines if x.strip()], delimiter=sep)}
    assert len(counts) == 1 and counts.pop() >= 2


def test_a_table_two_separators_split_alike_is_refused_not_guessed():
    with pytest.raises(InputError, match="could be comma and semicolon; pass --sep"):
        sniff_separator(["a,b;c", "1,2;3"])


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), st.integers(0, 6))
def test_a_decimal_comma_reads_as_the_same_number_with_a_point(value, places):
    written = f"{value:.{places}f}"
    assert parse_number(written.replace(".", ","), decimal=",") == float(written)
    assert parse_number(written, decimal=".") == float(written)


@pytest.mark.parametrize("cell", ["", "n/a", "NA", "NaN", "nan", " NA "])
def test_every_missing_value_spelling_is_missing(cell):
    assert np.isnan(parse_number(cell)) and np.isnan(parse_number(cell, decimal=","))


@pytest.mark.parametrize(
    "cell, decimal",
    [("1.234,5", ","), ("1,234.5", "."), ("0,5", "."), ("inf", "."), ("3 ", ","), ("x", ".")],
)
def test_a_number_with_a_thousands_separator_or_the_other_mark_is_refused(cell, decimal):
    if cell == "3 ":
        assert parse_number(cell, decimal=decimal) == 3.0
        return
    with pytest.raises(ValueError):
        parse_number(cell, decimal=decimal)


# --- long tables: a round trip per encoding and dialect ---------------------------------------

_IDS = ["P-7", "R_3kVq9x", "Jürgen", "01", "1a"]


def _source_ratings(seed: int, scale: Scale) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for participant in _IDS:
        for sketch in ("s1", "s2"):
            for image in ("a.png", "b.png", "c.png"):
                rating = rng.integers(scale.low, scale.high + 1)
                missing = rng.random() < 0.15
                rows.append(
                    {
                        "Subject": participant,
                        "Sketch": sketch,
                        "Image": image,
                        "Response": np.nan if missing else float(rating),
                        "RT": np.nan if missing else round(float(rng.uniform(0.2, 3)), 3),
                    }
                )
    return pd.DataFrame(rows)


def _dataset_ratings(root: Path) -> pd.DataFrame:
    """The imported dataset read back with pandas alone, its labels turned into source ids."""
    participants = pd.read_csv(root / "participants.tsv", sep="\t", dtype=str)
    source_of = dict(
        zip(
            participants["participant_id"].str.removeprefix("sub-"),
            participants["source_id"],
            strict=True,
        )
    )
    frames = [
        pd.read_csv(path, sep="\t", dtype={"participant": str}, na_values=["n/a"])
        for path in sorted(root.glob("sub-*/beh/*_beh.tsv"))
    ]
    table = pd.concat(frames, ignore_index=True)
    table["participant"] = table["participant"].map(source_of)
    return table


def _same_ratings(imported: pd.DataFrame, source: pd.DataFrame) -> None:
    keys = ["participant", "sketch_id", "image_id"]
    source = source.rename(
        columns={
            "Subject": "participant",
            "Sketch": "sketch_id",
            "Image": "image_id",
            "Response": "rating",
            "RT": "rt",
        }
    )
    merged = imported.merge(source, on=keys, suffixes=("", "_source"), validate="1:1")
    assert len(merged) == len(source) == len(imported)
    np.testing.assert_array_equal(merged["rating"], merged["rating_source"])
    np.testing.assert_allclose(merged["rt"], merged["rt_source"], rtol=0, atol=1e-9)


MAPPING = {
    "participant": "Subject",
    "sketch_id": "Sketch",
    "image_id": "Image",
    "rating": "Response",
    "rt": "RT",
}


@pytest.mark.parametrize(
    "dialect",
    [
        dict(sep=";", decimal=",", encoding="utf-8-sig"),  # a German spreadsheet's CSV
        dict(sep="\t", decimal=".", encoding="utf-16"),  # Excel's "Unicode text"
        dict(sep=",", decimal=".", encoding="cp1252"),  # Windows' ANSI, named by --encoding
        dict(sep="|", decimal=",", encoding="utf-8"),
    ],
)
def test_a_long_table_round_trips_in_every_dialect(tmp_path, dialect):
    scale = Scale(1, 5)
    source = _source_ratings(3, scale)
    path = tmp_path / "export.csv"
    source.to_csv(path, index=False, na_rep="NA", **dialect)
    named = "cp1252" if dialect["encoding"] == "cp1252" else None
    imported = read_long_table([path], columns=MAPPING, encoding=named, scale=scale)
    assert imported.settings["Separator"] == dialect["sep"]
    assert imported.settings["Decimal"] == dialect["decimal"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ImportedRatingsWarning)  # every id is rated by all
        write_imported_dataset(imported, tmp_path / "data", scale=scale, inputs=[path])
    independent = pd.read_csv(
        path,
        sep=dialect["sep"],
        decimal=dialect["decimal"],
        encoding=dialect["encoding"],
        dtype={"Subject": str},
    )
    _same_ratings(_dataset_ratings(tmp_path / "data"), independent)
    assert load_ratings(tmp_path / "data").attrs["scale"] == scale


def test_r_write_csv_output_reads_as_written_row_names_left_out(tmp_path):
    path = DATA / "r_write_csv.csv"
    imported = read_long_table([path])
    assert imported.settings["Columns"] == {
        c: c for c in ("participant", "sketch_id", "image_id", "rating", "rt")
    }
    write_imported_dataset(imported, tmp_path / "data", inputs=[path])
    independent = pd.read_csv(path, index_col=0, dtype={"participant": str})
    table = _dataset_ratings(tmp_path / "data")
    assert sorted(table["participant"].unique()) == ["01", "02"]  # 01 stays text
    _same_ratings(
        table,
        independent.rename(
            columns={
                "participant": "Subject",
                "sketch_id": "Sketch",
                "image_id": "Image",
                "rating": "Response",
                "rt": "RT",
            }
        ),
    )


def test_the_sidecar_records_the_sources_sha256_and_the_mapping(tmp_path):
    import hashlib
    import json

    path = EXAMPLES / "long_table.csv"
    imported = read_long_table([path], columns=MAPPING)
    write_imported_dataset(imported, tmp_path / "data", inputs=[path])
    sidecar = json.loads(next((tmp_path / "data").glob("sub-P7/beh/*.json")).read_text())
    record = sidecar["Imported"]
    assert record["Sources"] == [
        {"File": str(path), "SHA256": hashlib.sha256(path.read_bytes()).hexdigest()}
    ]
    assert record["Columns"] == {
        "participant": "Subject",
        "sketch_id": "Sketch",
        "image_id": "Image",
        "rating": "Response",
        "rt": "RT",
    }
    assert record["Separator"] == ";" and record["Decimal"] == ","
    assert record["SourceId"] == "P-7"
    assert sidecar["RatingScale"] == {"Low": 1, "High": 7, "Best": "low"}


@pytest.mark.parametrize(
    "content, fragments",
    [
        (
            "Subject;Sketch;Image;Response\nP1;s1;a;8\n",
            ["line 2", "column 'Response'", "a rating 1..7", "'8'"],
        ),
        ("Subject;Sketch;Image;Response\nP1;s1;a;2,5\n", ["line 2", "column 'Response'", "'2,5'"]),
        ("Subject;Sketch;Image;Response\nP1;s1;a b;2\n", ["line 2", "column 'Image'", "'a b'"]),
        ("Subject;Sketch;Image;Response\nP1;s1;a;2\nP1;s1;a;3\n", ["line 3", "twice"]),
        ("Subject;Sketch;Image;Response\n;s1;a;2\n", ["line 2", "missing"]),
        (
            "Subject;Sketch;Image;Answer\nP1;s1;a;2\n",
            ["line 1", "no column 'Response'", "found Subject, Sketch, Image, Answer"],
        ),
        ("Subject;Sketch;Image;Response\nP1;s1;a\n", ["line 2", "expected 4 fields, found 3"]),
    ],
)
def test_a_bad_long_table_is_one_line_naming_file_line_and_column(tmp_path, content, fragments):
    path = tmp_path / "bad.csv"
    path.write_text(content, encoding="utf-8")
    mapping = {k: v for k, v in MAPPING.items() if k != "rt"}
    with pytest.raises(InputError) as error:
        imported = read_long_table([path], columns=mapping, sep=";")
        write_imported_dataset(imported, tmp_path / "data", inputs=[path])
    message = str(error.value)
    assert "\n" not in message and str(path) in message
    for fragment in fragments:
        assert fragment in message, message
    assert not (tmp_path / "data").exists()


def test_a_file_not_in_utf8_names_its_line_and_the_option(tmp_path):
    path = tmp_path / "ansi.csv"
    path.write_bytes("participant,sketch_id,image_id,rating\nJürgen,s1,a,2\n".encode("cp1252"))
    with pytest.raises(
        InputError,
        match=r"line 2: byte 0xfc is not utf-8; name its encoding "
        r"with --encoding",
    ):
        decode_text(path)
    assert decode_text(path, "cp1252")[0].splitlines()[1] == "Jürgen,s1,a,2"


def test_typos_are_warned_about_with_the_closest_id_others_rated(tmp_path):
    path = tmp_path / "typo.csv"
    rows = ["participant,sketch_id,image_id,rating"]
    for participant in ("p1", "p2", "p3"):
        for image in ("cat_01", "cat_02", "cat_03"):
            rows.append(f"{participant},cat,{image},3")
    rows += ["p3,cat,cat_o1,2", "p2,caat,cat_01,4"]
    path.write_text("\n".join(rows) + "\n")
    with pytest.warns(ImportedRatingsWarning) as caught:
        write_imported_dataset(read_long_table([path]), tmp_path / "data", inputs=[path])
    messages = [str(w.message) for w in caught]
    assert any(
        "'caat'" in m and "closest rated by others: 'cat'" in m and "line 12" in m for m in messages
    ), messages
    assert any("'cat_o1'" in m and "closest rated by others: 'cat_01'" in m for m in messages)


# --- PsychoPy Builder -------------------------------------------------------------------------


def test_a_psychopy_builder_file_round_trips_the_last_press_rating(tmp_path):
    path = EXAMPLES / "psychopy_builder_P-7.csv"
    scale = Scale(1, 5)
    imported = read_psychopy(
        [path],
        keys={"1": 1, "2": 2, "3": 3, "4": 4, "5": 5},
        columns={"sketch_id": "sketch", "image_id": "image"},
        scale=scale,
    )
    write_imported_dataset(imported, tmp_path / "data", scale=scale, inputs=[path])
    # Independently: pandas reads Builder's file, ast its lists; the last press rates.
    source = pd.read_csv(path, dtype=str, keep_default_na=False)
    source = source[source["sketch"] != ""]

    def last(cell):
        if cell in ("", "None"):
            return np.nan
        value = ast.literal_eval(cell) if cell.startswith("[") else cell
        return float(value[-1] if isinstance(value, list) else value)

    expected = pd.DataFrame(
        {
            "Subject": source["participant"],
            "Sketch": source["sketch"],
            "Image": source["image"],
            "Response": source["key_resp.keys"].map(last),
            "RT": source["key_resp.rt"].map(last),
        }
    )
    table = _dataset_ratings(tmp_path / "data")
    _same_ratings(table, expected)
    assert table["presses"].tolist()[1] == "4@0.912 5@1.377"
    assert load_ratings(tmp_path / "data").attrs["scale"] == scale


def test_psychopy_keys_of_a_protocol_map_letters_to_the_scale(tmp_path):
    path = tmp_path / "builder.csv"
    path.write_text(
        "sketch_id,image_id,rate.keys,rate.rt,participant,\n"
        "s1,a,d,0.5,7,\ns1,b,\"['a', 'g']\",\"[0.3, 0.9]\",7,\n"
    )
    scale = Scale(1, 5, "high")
    imported = read_psychopy([path], keys={"a": 1, "s": 2, "d": 3, "f": 4, "g": 5}, scale=scale)
    assert imported.ratings["rating"].tolist() == [3, 5]
    assert imported.ratings["n_presses"].tolist() == [1, 2]


@pytest.mark.parametrize(
    "keys_cell, rt_cell, fragment",
    [
        ("x", "0.5", "column 'key_resp.keys': expected rating keys"),
        ("\"['1'\"", "0.5", "column 'key_resp.keys': expected a key or a list of keys"),
        ("\"['1', '2']\"", "0.5", "column 'key_resp.rt': expected one time of 0 or more per key"),
    ],
)
def test_a_bad_psychopy_cell_names_file_line_and_column(tmp_path, keys_cell, rt_cell, fragment):
    path = tmp_path / "builder.csv"
    path.write_text(
        "sketch_id,image_id,key_resp.keys,key_resp.rt,participant\n"
        f"s1,a,1,0.4,7\ns1,b,{keys_cell},{rt_cell},7\n"
    )
    with pytest.raises(InputError, match=rf"builder.csv: line 3: {fragment}"):
        read_psychopy([path], keys=_KEYS7)


# --- jsPsych ----------------------------------------------------------------------------------

_EXAMPLE_FIELDS = {"participant": "subject_id", "sketch_id": "sketch", "image_id": "image"}


def _jspsych_expected(trials: list[dict]) -> pd.DataFrame:
    """Independently of the reader: the example's rating trials picked, keyed and timed by hand."""
    rows = [
        {
            "Subject": t["subject_id"],
            "Sketch": t["sketch"],
            "Image": t["image"],
            "Response": np.nan if t["response"] is None else float(t["response"]),
            "RT": np.nan if t["rt"] is None else t["rt"] / 1000,
        }
        for t in trials
        if t["trial_type"] == "html-keyboard-response" and t.get("sketch")
    ]
    return pd.DataFrame(rows)


def test_the_jspsych_json_example_round_trips(tmp_path):
    import json

    path = EXAMPLES / "jspsych_P-7.json"
    imported = read_jspsych([path], keys=_KEYS7, columns=_EXAMPLE_FIELDS)
    write_imported_dataset(imported, tmp_path / "data", inputs=[path])
    expected = _jspsych_expected(json.loads(path.read_text(encoding="utf-8")))
    table = _dataset_ratings(tmp_path / "data")
    _same_ratings(table, expected)
    assert table["trial"].tolist() == [1, 2, 3, 4]


def test_the_jspsych_csv_example_round_trips_and_matches_the_json(tmp_path):
    path = EXAMPLES / "jspsych_P-7.csv"
    imported = read_jspsych([path], keys=_KEYS7, columns=_EXAMPLE_FIELDS)
    write_imported_dataset(imported, tmp_path / "csv", inputs=[path])
    # pandas reads jsPsych's CSV, where null is written "null"
    source = pd.read_csv(path, dtype=str, keep_default_na=False)
    source = source[source["sketch"] != ""]
    expected = pd.DataFrame(
        {
            "Subject": source["subject_id"],
            "Sketch": source["sketch"],
            "Image": source["image"],
            "Response": pd.to_numeric(source["response"].replace("null", np.nan)),
            "RT": pd.to_numeric(source["rt"].replace("null", np.nan)) / 1000,
        }
    )
    _same_ratings(_dataset_ratings(tmp_path / "csv"), expected)
    json_path = EXAMPLES / "jspsych_P-7.json"
    imported = read_jspsych([json_path], keys=_KEYS7, columns=_EXAMPLE_FIELDS)
    write_imported_dataset(imported, tmp_path / "json", inputs=[json_path])
    beh = "sub-5f3a9c1e2b7d4e0012ab34cd/beh/sub-5f3a9c1e2b7d4e0012ab34cd_task-sbirrating_beh.tsv"
    assert (tmp_path / "csv" / beh).read_text() == (tmp_path / "json" / beh).read_text()


_MANIFEST = pd.DataFrame(
    {
        "sketch_id": ["cat", "cat", "cat", "dog", "dog"],
        "image_id": ["c1", "c2", "c3", "d1", "d2"],
        "sketch_path": ["sketches/cat.png"] * 3 + ["sketches/dog.png"] * 2,
        "image_path": [
            "images/cat/c1.jpg",
            "images/cat/c2.jpg",
            "images/cat/c3.jpg",
            "images/dog/d1.jpg",
            "images/dog/d 2.jpg",
        ],
        "role": ["anchor", "main", "main", "main", "main"],
        "anchor_rating": pd.array([2, None, None, None, None], dtype="Int64"),
    }
)


def _write_json(path: Path, trials: list[dict]) -> Path:
    import json

    # One line, as jsPsych.data.get().json() writes it.
    path.write_text(json.dumps(trials), encoding="utf-8")
    return path


def _trial(stimulus, response="3", rt=812.5, kind="html-keyboard-response", **data):
    return {"rt": rt, "stimulus": stimulus, "response": response, "trial_type": kind, **data}


def _pair_html(sketch_path: str, image_path: str, prefix: str = "") -> str:
    return f'<div><img src="{prefix}{sketch_path}"><img src="{prefix}{image_path}"></div>'


def test_jspsych_stimuli_are_matched_to_the_pairs_of_the_set(tmp_path):
    trials = [
        _trial("<p>Welcome</p>", response=" "),
        _trial({"x": 1}, kind="preload"),
        _trial(_pair_html("sketches/cat.png", "images/cat/c1.jpg"), phase="anchor_repeat"),
        # an address the server gave, a query and an encoded space; a plain image path
        _trial(_pair_html("sketches/dog.png", "images/dog/d%202.jpg?v=3", "https://x.org/s/")),
        _trial("stim/images/cat/c3.jpg", response=None, rt=None, kind="image-keyboard-response"),
        _trial(_pair_html("./sketches/cat.png", "images/cat/c2.jpg"), response="7", rt=2003),
    ]
    for trial in trials:
        trial.setdefault("phase", "main")
    path = _write_json(tmp_path / "P-9.json", trials)
    imported = read_jspsych([path], keys=_KEYS7, manifest=_MANIFEST, columns={"phase": "phase"})
    ratings = imported.ratings
    assert ratings["participant"].unique().tolist() == ["P-9"]  # the file's name
    assert list(zip(ratings["sketch_id"], ratings["image_id"], strict=True)) == [
        ("cat", "c1"),
        ("dog", "d2"),
        ("cat", "c3"),
        ("cat", "c2"),
    ]
    assert ratings["rating"].tolist() == [3, 3, pd.NA, 7]
    np.testing.assert_allclose(ratings["rt"], [0.8125, 0.8125, np.nan, 2.003])
    write_imported_dataset(imported, tmp_path / "data", inputs=[path])
    table = load_ratings(tmp_path / "data")
    anchor = table[table["phase"] == "anchor_repeat"]
    assert anchor["anchor_rating"].tolist() == [2]  # the set's prescribed rating


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(range(len(_MANIFEST))),
    st.sampled_from(["", "./", "/", "stimuli/", "https://lab.example.org/study/v2/", "a/b/c/"]),
    st.sampled_from(["", "?v=1", "#top"]),
    st.booleans(),
    st.booleans(),
)
def test_any_address_ending_in_a_set_s_path_names_that_file(row, prefix, suffix, quote, single):
    import html
    import urllib.parse

    pair = _MANIFEST.iloc[row]
    paths = [pair["sketch_path"], pair["image_path"]]
    if quote:
        paths = [urllib.parse.quote(p) for p in paths]
    shown = [html.escape(prefix + p + suffix) for p in paths]
    stimulus = "".join(f"<img src='{s}'>" if single else f'<img src="{s}">' for s in shown)
    assert stimulus_paths(stimulus) == [html.unescape(s) for s in shown]
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = _write_json(Path(folder) / "p.json", [_trial(stimulus)])
        ratings = read_jspsych([path], keys=_KEYS7, manifest=_MANIFEST).ratings
    assert (ratings["sketch_id"].iloc[0], ratings["image_id"].iloc[0]) == (
        pair["sketch_id"],
        pair["image_id"],
    )


def test_jspsych_keys_are_found_in_lower_case_as_jspsych_records_them(tmp_path):
    path = _write_json(
        tmp_path / "p.json",
        [
            _trial("images/cat/c2.jpg", response="arrowright", kind="image-keyboard-response"),
            _trial("images/cat/c3.jpg", response="ArrowLeft", kind="image-keyboard-response"),
        ],
    )
    keys = dict(zip(["ArrowLeft", "ArrowRight"], Scale(1, 2, "high").points, strict=True))
    ratings = read_jspsych([path], keys=keys, manifest=_MANIFEST).ratings
    assert ratings["rating"].tolist() == [2, 1]


@pytest.mark.parametrize(
    "trials, fragments",
    [
        (
            [
                _trial("images/cat/c2.jpg", kind="image-keyboard-response"),
                _trial("images/cat/c3.jpg", response="x", kind="image-keyboard-response"),
            ],
            ["line 1, trial 2", "field 'response'", "a rating key (1, 2", "'x'"],
        ),
        (
            [_trial(_pair_html("sketches/cat.png", "images/cat/c9.jpg"))],
            ["trial 1", "field 'stimulus'", "its files are no image of the stimulus set"],
        ),
        (
            [_trial(_pair_html("sketches/dog.png", "images/cat/c2.jpg"))],
            ["field 'stimulus'", "its sketch and image are no pair of the stimulus set"],
        ),
        (
            [_trial("images/cat/c2.jpg", rt=-4, kind="image-keyboard-response")],
            ["field 'rt'", "a time in ms of 0 or more", "'-4'"],
        ),
        ([_trial("<p>Hello</p>")], ["no rating trials", "whose stimulus names a file"]),
        (
            [{"trial_type": "sbir-rating", "trial": 1, "onset": 3.2}],
            ["no rating trials", "sbir-rating", "export-online"],
        ),
        ([{"rt": 1}], ["line 1", "no field 'trial_type'"]),
    ],
)
def test_a_bad_jspsych_trial_is_one_line_naming_file_line_and_field(tmp_path, trials, fragments):
    path = _write_json(tmp_path / "p.json", trials)
    with pytest.raises(InputError) as error:
        read_jspsych([path], keys=_KEYS7, manifest=_MANIFEST)
    message = str(error.value)
    assert "\n" not in message and str(path) in message
    for fragment in fragments:
        assert fragment in message, message


@pytest.mark.parametrize(
    "text, fragment",
    [
        ('[\n  {"rt": 1,\n   "response": }\n]', "line 3: not JSON"),
        ('{"trials": []}', "line 1: a JSON dict; expected a list of trials"),
        ('[\n {"trial_type": "x"},\n 3\n]', "line 3: a JSON int; expected a trial object"),
    ],
)
def test_a_jspsych_file_that_is_not_jspsych_s_json_names_its_line(tmp_path, text, fragment):
    path = tmp_path / "p.json"
    path.write_text(text)
    with pytest.raises(InputError, match=fragment):
        read_jspsych([path], keys=_KEYS7, manifest=_MANIFEST)


def test_an_image_in_two_pairs_shown_without_its_sketch_is_refused_not_guessed(tmp_path):
    manifest = pd.concat(
        [_MANIFEST, _MANIFEST.iloc[[1]].assign(sketch_id="lion", sketch_path="sketches/lion.png")]
    )
    path = _write_json(
        tmp_path / "p.json", [_trial("images/cat/c2.jpg", kind="image-keyboard-response")]
    )
    with pytest.raises(InputError, match=r"its image is in 2 pairs of the set \(cat, lion\)"):
        read_jspsych([path], keys=_KEYS7, manifest=manifest)
    path = _write_json(
        tmp_path / "q.json", [_trial(_pair_html("sketches/lion.png", "images/cat/c2.jpg"))]
    )
    ratings = read_jspsych([path], keys=_KEYS7, manifest=manifest).ratings
    assert ratings["sketch_id"].tolist() == ["lion"]


def test_jspsych_select_names_the_rating_trials(tmp_path):
    trials = [
        _trial(_pair_html("sketches/cat.png", "images/cat/c2.jpg"), task="example"),
        _trial(_pair_html("sketches/cat.png", "images/cat/c3.jpg"), task="rating"),
    ]
    path = _write_json(tmp_path / "p.json", trials)
    imported = read_jspsych([path], keys=_KEYS7, manifest=_MANIFEST, select={"task": "rating"})
    assert imported.ratings["image_id"].tolist() == ["c3"]
    assert imported.settings["Select"] == {"task": "rating"}


# --- wide exports -----------------------------------------------------------------------------


def _wide_expected(export: pd.DataFrame, mapping: pd.DataFrame, participant: str) -> pd.DataFrame:
    """Independently of the reader: pandas melts the export by the mapping and takes each
    answer's leading digits with a regular expression."""
    long = export.melt(
        id_vars=[participant],
        value_vars=list(mapping["column"]),
        var_name="column",
        value_name="answer",
    )
    long = long.merge(mapping, on="column", validate="m:1")
    return pd.DataFrame(
        {
            "Subject": long[participant].str.strip(),
            "Sketch": long["sketch_id"],
            "Image": long["image_id"],
            "Response": pd.to_numeric(long["answer"].str.extract(r"^\s*(\d+)")[0]),
            "RT": np.nan,
        }
    )


def test_the_qualtrics_example_round_trips_its_two_more_header_rows_left_out(tmp_path):
    path, mapping_path = EXAMPLES / "qualtrics_wide.csv", EXAMPLES / "wide_mapping.csv"
    mapping, _ = read_wide_mapping(mapping_path)
    imported = read_wide([path], mapping=mapping, participant_column="ResponseId")
    assert imported.settings["QualtricsHeaders"] == {str(path): True}
    write_imported_dataset(imported, tmp_path / "data", inputs=[path])
    # pandas, told which rows Qualtrics adds (the question texts and the ImportIds)
    export = pd.read_csv(path, skiprows=[1, 2], dtype=str, encoding="utf-8-sig")
    expected = _wide_expected(export, pd.read_csv(mapping_path, dtype=str), "ResponseId")
    table = _dataset_ratings(tmp_path / "data")
    _same_ratings(table, expected)
    assert table["rating"].isna().sum() == 4  # empty answers are missing ratings
    assert load_ratings(tmp_path / "data")["trial"].isna().all()  # a survey records no order


def test_google_forms_and_limesurvey_exports_round_trip(tmp_path):
    mapping = pd.DataFrame(
        {
            "column": ["Sketch 1: image A", "Sketch 1: image B", "Sketch 2: image A"],
            "sketch_id": ["s1", "s1", "s2"],
            "image_id": ["a", "b", "a"],
        }
    )
    forms = pd.DataFrame(
        {
            "Timestamp": ["2024/03/05 10:12:33 AM GMT+1", "2024/03/05 10:40:02 AM GMT+1"],
            "participant": ["P-1", "P-2"],
            "Sketch 1: image A": ["Very similar", "Not similar"],
            "Sketch 1: image B": ["Similar", ""],
            "Sketch 2: image A": ["Not similar", "Very similar"],
        }
    )
    path = tmp_path / "forms.csv"
    forms.to_csv(path, index=False)
    answers = {"Very similar": 1, "Similar": 2, "Not similar": 3}
    imported = read_wide([path], mapping=mapping, answers=answers, scale=Scale(1, 3))
    assert imported.settings["QualtricsHeaders"] == {str(path): False}
    got = imported.ratings.set_index(["participant", "sketch_id", "image_id"])["rating"]
    assert got.to_dict() == {
        ("P-1", "s1", "a"): 1,
        ("P-1", "s1", "b"): 2,
        ("P-1", "s2", "a"): 3,
        ("P-2", "s1", "a"): 3,
        ("P-2", "s1", "b"): None,
        ("P-2", "s2", "a"): 1,
    }
    assert got.dtype == "Int64"  # the empty answer a missing rating (None in to_dict)
    lime = pd.DataFrame(
        {
            "id": ["7", "8"],
            "submitdate": ["2024-03-05", ""],
            "Sketch 1: image A": ["1", "4"],
            "Sketch 1: image B": ["2", "NA"],
            "Sketch 2: image A": ["3", "5"],
        }
    )
    path = tmp_path / "lime.csv"
    lime.to_csv(path, index=False, sep=";")
    imported = read_wide([path], mapping=mapping, participant_column="id", scale=Scale(1, 5))
    write_imported_dataset(imported, tmp_path / "lime", scale=Scale(1, 5), inputs=[path])
    export = pd.read_csv(path, sep=";", dtype=str, keep_default_na=False)
    _same_ratings(_dataset_ratings(tmp_path / "lime"), _wide_expected(export, mapping, "id"))


_LABEL_TAIL = st.text(alphabet=string.ascii_letters + " -()", max_size=12).filter(
    lambda t: not t[:1].isdigit()
)


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 99),
    st.sampled_from(["", " ", " - ", ": ", ". ", ") ", " (", "-"]),
    _LABEL_TAIL,
    st.sampled_from(["", " ", "  "]),
)
def test_an_answer_s_leading_whole_number_is_its_rating(point, joint, label, blank):
    answer = f"{blank}{point}{joint}{label}" if joint else f"{blank}{point}"
    assert answer_rating(answer) == point
    # Independently: the digits before the first character that is not one.
    assert answer_rating(answer) == int(answer.strip().split()[0].rstrip(".-:)(").split("-")[0])


@pytest.mark.parametrize("answer", ["2.5", "2,5", "best match", "- 3", "x1"])
def test_an_answer_without_a_leading_whole_number_is_refused(answer):
    with pytest.raises(ValueError):
        answer_rating(answer)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.lists(
            st.sampled_from(["", "1", "7 - worst", '{"a": 1}', "{x", "NA"]), min_size=3, max_size=3
        ),
        min_size=1,
        max_size=4,
    ),
    st.booleans(),
)
def test_only_a_third_row_of_import_ids_makes_a_qualtrics_export(rows, qualtrics):
    import tempfile

    header = ["ResponseId", "Q1", "Q2"]
    rows = [[f"R_{i}", *row[1:]] for i, row in enumerate(rows)]
    if qualtrics:
        rows = [
            ["Response ID", "Sketch 1", "Sketch 2"],
            ['{"ImportId":"_recordId"}', '{"ImportId":"QID1"}', ""],
            *rows,
        ]
    mapping = pd.DataFrame(
        {"column": ["Q1", "Q2"], "sketch_id": ["s", "s"], "image_id": ["a", "b"]}
    )
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "export.csv"
        with path.open("w", newline="") as file:
            csv.writer(file).writerows([header, *rows])
        try:
            imported = read_wide([path], mapping=mapping, participant_column="ResponseId")
        except InputError as error:
            assert not qualtrics or ("line 2" not in str(error) and "line 3" not in str(error))
            return
    assert imported.settings["QualtricsHeaders"][str(path)] == qualtrics
    assert imported.ratings["participant"].nunique() == len(rows) - 2 * qualtrics


@pytest.mark.parametrize(
    "export, mapping, options, fragments",
    [
        (
            "ResponseId,Q1,Q2\nR_1,Best,2\n",
            None,
            {},
            [
                "line 2",
                "column 'Q1'",
                "an answer beginning with a rating 1..7",
                "--answers",
                "'Best'",
            ],
        ),
        ("ResponseId,Q1,Q2\nR_1,1,2\nR_2,2.5,3\n", None, {}, ["line 3", "column 'Q1'", "'2.5'"]),
        ("ResponseId,Q1,Q2\nR_1,9 - worst,2\n", None, {}, ["line 2", "'9 - worst'"]),
        (
            "ResponseId,Q1,Q2\nR_1,Good,2\n",
            None,
            {"answers": {"Best": 1}},
            ["column 'Q1'", "an answer of --answers (Best)", "'Good'"],
        ),
        (
            "ResponseId,Q1,Q3\nR_1,1,2\n",
            None,
            {},
            ["line 1", "no column 'Q2'", "line 3 of the mapping"],
        ),
        ("ResponseId,Q1,Q2\nR_1,1,2\nR_1,3,4\n", None, {}, ["line 3", "twice"]),
        ("ResponseId,Q1,Q2\n,1,2\n", None, {}, ["line 2", "column 'ResponseId'", "id"]),
        (
            "Id,Q1,Q2\nR_1,1,2\n",
            None,
            {"participant_column": None},
            ["line 1", "no column named as a participant's id", "--participant-column"],
        ),
        (
            "ResponseId,Q1,Q2\nR_1,1,2\n",
            "column,sketch_id,image_id\nQ1,s,a\nQ2,s,a\n",
            {},
            ["mapping.csv: line 3", "pair 's a' is mapped twice"],
        ),
        (
            "ResponseId,Q1,Q2\nR_1,1,2\n",
            "column,sketch_id,image_id\nQ1,s,a\nQ1,s,b\n",
            {},
            ["mapping.csv: line 3", "column 'Q1' is mapped twice"],
        ),
        (
            "ResponseId,Q1,Q2\nR_1,1,2\n",
            "column,sketch,image_id\nQ1,s,a\n",
            {},
            ["mapping.csv: line 1", "no column for sketch_id"],
        ),
    ],
)
def test_a_bad_wide_export_is_one_line_naming_file_line_and_column(
    tmp_path, export, mapping, options, fragments
):
    path, mapping_path = tmp_path / "export.csv", tmp_path / "mapping.csv"
    path.write_text(export)
    mapping_path.write_text(mapping or "column,sketch_id,image_id\nQ1,s,a\nQ2,s,b\n")
    options = {"participant_column": "ResponseId", **options}
    with pytest.raises(InputError) as error:
        pairs, _ = read_wide_mapping(mapping_path)
        imported = read_wide([path], mapping=pairs, **options)
        write_imported_dataset(imported, tmp_path / "data", inputs=[path])
    message = str(error.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message
