"""Practice and the other parts of a real experiment in other tools' data
(sbir_study.analysis.importers): PsychoPy Builder files with a practice loop, a blocks loop
around the trials and a trials loop repeated with nReps = 2, written as Builder's
ExperimentHandler writes them (a row per loop iteration, the loop columns of every loop
running, a trailing comma, None for no press, "store all keys" lists, letter keys); and
jsPsych data whose practice block is told apart by a field. Each import is compared pair by
pair with an independent reading of the same file by pandas (and ast for Builder's lists)."""

from __future__ import annotations

import ast
import json
import string
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sbir_study.analysis.importers import (
    ImportedRatingsWarning,
    read_jspsych,
    read_psychopy,
    write_imported_dataset,
)
from sbir_study.foundation.checks import InputError
from sbir_study.foundation.scale import Scale
from tests.helpers import assert_input_error, run_main

EXAMPLES = Path(__file__).parents[2] / "docs" / "examples"
#: A 5-point study's keys, a..g as the lab's keyboard has them.
KEYS = {"a": 1, "s": 2, "d": 3, "f": 4, "g": 5}
SCALE = Scale(1, 5)
COLUMNS = {"sketch_id": "sketch", "image_id": "image"}
_LOOP_FIELDS = ("thisRepN", "thisTrialN", "thisN", "thisIndex", "ran")
#: The keys 1..7 of the paper's scale, as jsPsych records them.
_KEYS7 = {str(point): point for point in range(1, 8)}
_INFO = {"participant": "", "session": "001", "date": "2024-03-06_14h02.11.904"}


def _press_cells(presses: list[tuple[str, float]]) -> dict[str, str]:
    """``key_resp.keys`` and ``.rt`` as Builder writes them with "store all keys"."""
    if not presses:
        return {"key_resp.keys": "None", "key_resp.rt": "None"}
    if len(presses) == 1:
        return {"key_resp.keys": presses[0][0], "key_resp.rt": repr(presses[0][1])}
    return {
        "key_resp.keys": repr([k for k, _ in presses]),
        "key_resp.rt": repr([t for _, t in presses]),
    }


def _loop_cells(name: str, rep: int, trial: int, n: int, index: int) -> dict[str, str]:
    return {
        f"{name}.{f}": str(v) for f, v in zip(_LOOP_FIELDS, (rep, trial, n, index, 1), strict=True)
    }


def _write_builder(path: Path, entries: list[dict[str, str]], participant: str) -> None:
    """The rows of one session as Builder's CSV: the names in the order first recorded,
    the expInfo fields last, every line ending in a comma, lists quoted."""
    names: dict[str, None] = {"thisRow.t": None, "notes": None}
    for entry in entries:
        names.update(dict.fromkeys(entry))
    names.update(dict.fromkeys(_INFO))
    info = {**_INFO, "participant": participant}
    lines = [",".join(names) + ","]
    for number, entry in enumerate(entries):
        cells = {"thisRow.t": f"{3.0 * number + 1.25:.4f}", **entry, **info}
        row = [cells.get(name, "") for name in names]
        lines.append(",".join(f'"{c}"' if "," in c else c for c in row) + ",")
    path.write_text("\n".join(lines) + "\n")


def _builder_session(
    path: Path, participant: str, practice: list, blocks: list[list], reps: int
) -> None:
    """An instructions routine, a practice loop over ``practice`` (omitted when empty), a
    second instructions routine, then the trials loop over each block's pairs ``reps``
    times; with several blocks, inside a ``blocks`` loop. A pair is (sketch, image,
    presses of each showing)."""
    entries: list[dict[str, str]] = [{"instr.keys": "space", "instr.rt": "4.1203"}]
    for n, (sketch, image, presses) in enumerate(practice):
        entries.append(
            {**_loop_cells("practice", 0, n, n, n), "sketch": sketch, "image": image}
            | _press_cells(presses[0])
        )
    entries.append({"instr.keys": "space", "instr.rt": "3.3962"})
    nested = len(blocks) > 1
    for b, pairs in enumerate(blocks):
        outer = _loop_cells("blocks", 0, b, b, b) if nested else {}
        n = 0
        for rep in range(reps):
            for index, (sketch, image, presses) in enumerate(pairs):
                entries.append(
                    outer
                    | _loop_cells("trials", rep, index, n, index)
                    | {"sketch": sketch, "image": image}
                    | _press_cells(presses[rep])
                )
                n += 1
        if nested:  # Builder's row at the end of each iteration of the outer loop
            entries.append(outer | {"condsFile": f"block{b + 1}.csv"})
    _write_builder(path, entries, participant)


def _last(cell: str) -> tuple[float, float]:
    """The independent reading of a keys or rt cell: its last value (NaN for no press)."""
    if cell in ("", "None"):
        return np.nan
    value = ast.literal_eval(cell) if cell.startswith("[") else cell
    return value[-1] if isinstance(value, list) else value


def _pandas_reading(path: Path, loop: str, practice: str | None = None) -> pd.DataFrame:
    """The rows of ``loop`` (and ``practice``) read by pandas: Builder fills
    ``LOOP.thisN`` on each row of the loop's iterations."""
    source = pd.read_csv(path, dtype=str, keep_default_na=False)
    parts = []
    for name, phase in ((loop, "main"), (practice, "practice")):
        if name is None:
            continue
        rows = source[source[f"{name}.thisN"] != ""].copy()
        rows["phase"] = phase
        parts.append(rows)
    rows = pd.concat(parts).sort_index()
    expected = pd.DataFrame(
        {
            "participant": rows["participant"],
            "sketch_id": rows["sketch"],
            "image_id": rows["image"],
            "phase": rows["phase"],
            "rating": rows["key_resp.keys"].map(_last).map(KEYS, na_action="ignore"),
            "rt": rows["key_resp.rt"].map(_last).astype(float),
            "line": rows.index + 2,
        }
    )
    if "blocks.thisN" in rows:
        expected["block"] = pd.to_numeric(rows["blocks.thisN"]) + 1
    return expected.reset_index(drop=True)


def _imported(tmp_path: Path, paths: list[Path], **options) -> pd.DataFrame:
    imported = read_psychopy(paths, keys=KEYS, columns=COLUMNS, scale=SCALE, **options)
    write_imported_dataset(imported, tmp_path / "data", scale=SCALE, inputs=paths)
    beh = sorted((tmp_path / "data").glob("sub-*/beh/*_beh.tsv"))
    return pd.concat(
        [pd.read_csv(p, sep="\t", dtype={"participant": str}, na_values=["n/a"]) for p in beh],
        ignore_index=True,
    )


def _assert_same(table: pd.DataFrame, expected: pd.DataFrame) -> None:
    """The dataset's rows are the expected rows, pair by pair (participant and phase)."""
    keys = ["sketch_id", "image_id", "phase"]
    merged = table.merge(expected, on=keys, suffixes=("", "_pandas"), validate="1:1")
    assert len(merged) == len(table) == len(expected)
    np.testing.assert_array_equal(merged["rating"], merged["rating_pandas"])
    np.testing.assert_allclose(merged["rt"], merged["rt_pandas"], rtol=0, atol=1e-9)
    if "block" in expected:
        np.testing.assert_array_equal(merged["block"], merged["block_pandas"])


_SKETCHES = ("car", "house", "tree", "cup")


def _pair(draw, sketch: str, image: int, showings: int):
    presses = draw(
        st.lists(
            st.lists(
                st.tuples(
                    st.sampled_from(list(KEYS)), st.floats(0.05, 2.9).map(lambda t: round(t, 4))
                ),
                max_size=3,
            ),
            min_size=showings,
            max_size=showings,
        )
    )
    return (sketch, f"{sketch}_{image:02d}.png", presses)


@st.composite
def _designs(draw):
    """A practice loop (maybe none), 1-3 blocks of distinct pairs, nReps 1 or 2."""
    reps = draw(st.integers(1, 2))
    n_blocks = draw(st.integers(1, 3))
    images = draw(st.lists(st.integers(0, 40), min_size=n_blocks * 2, max_size=12, unique=True))
    pairs = [
        _pair(draw, _SKETCHES[i % len(_SKETCHES)], image, reps) for i, image in enumerate(images)
    ]
    blocks = [pairs[b::n_blocks] for b in range(n_blocks)]
    practice = [_pair(draw, "demo", i, 1) for i in range(draw(st.integers(0, 3)))]
    return practice, blocks, reps


@settings(max_examples=40, deadline=None)
@given(_designs(), st.sampled_from(["keep-last", "keep-first"]))
def test_the_trials_loop_and_practice_read_as_pandas_reads_them(tmp_path_factory, design, keep):
    practice, blocks, reps = design
    tmp_path = tmp_path_factory.mktemp("builder")
    path = tmp_path / "P-8_sbir_rating_2024-03-06_14h02.11.904.csv"
    _builder_session(path, "P-8", practice, blocks, reps)
    options = {"practice_loop": "practice"} if practice else {}
    if reps > 1:
        options["repeats"] = keep
    table = _imported(tmp_path, [path], **options)
    expected = _pandas_reading(path, "trials", "practice" if practice else None)
    if reps > 1:  # each pair once: the showing --repeats keeps
        main = expected["phase"] == "main"
        keep_rows = ~expected[main].duplicated(
            ["sketch_id", "image_id"], keep="first" if keep == "keep-first" else "last"
        )
        expected = pd.concat([expected[~main], expected[main][keep_rows]])
    _assert_same(table, expected)
    assert (table["phase"] == "practice").sum() == len(practice)


def test_the_example_with_a_practice_loop_reads_its_loops_as_pandas_does(tmp_path):
    path = EXAMPLES / "psychopy_builder_practice_P-8.csv"
    with pytest.raises(InputError, match=r"found loops practice \(2 rows\) and trials \(6 rows\)"):
        read_psychopy([path], keys=KEYS, columns=COLUMNS, scale=SCALE)
    table = _imported(tmp_path, [path], loop="trials", practice_loop="practice")
    _assert_same(table, _pandas_reading(path, "trials", "practice"))
    # The practice pair car_12.png comes back in the main block: once in each phase.
    assert table.loc[table["image_id"] == "car_12.png", "phase"].tolist() == ["practice", "main"]
    only_trials = _imported(tmp_path / "again", [path], loop="trials")
    _assert_same(only_trials, _pandas_reading(path, "trials"))


def test_the_sidecar_records_the_loops_and_the_rows_of_each(tmp_path):
    path = tmp_path / "P-1.csv"
    pairs = [("car", f"car_{i}.png", [[("a", 0.5)], [("g", 0.7)]]) for i in range(3)]
    _builder_session(path, "P-1", [("demo", "demo_1.png", [[("s", 0.4)]])], [pairs], reps=2)
    imported = read_psychopy(
        [path],
        keys=KEYS,
        columns=COLUMNS,
        scale=SCALE,
        practice_loop="practice",
        repeats="keep-last",
    )
    settings = imported.settings
    assert (settings["Loop"], settings["PracticeLoop"], settings["Repeats"]) == (
        None,
        "practice",
        "keep-last",
    )
    assert settings["Loops"] == {
        str(path): {
            "practice": {"ReadAs": "practice", "Rows": 1},
            "trials": {"ReadAs": "main", "Rows": 6, "Kept": 3},
        }
    }
    # keep-last: the second showing's key g, rated 5, on trials 5, 6 and 7 of the rows read.
    main = imported.ratings[imported.ratings["phase"] == "main"]
    assert main["rating"].tolist() == [5, 5, 5]
    assert main["trial"].tolist() == [5, 6, 7]


def test_a_repeated_loop_is_refused_naming_thisrepn(tmp_path):
    path = tmp_path / "P-1.csv"
    pairs = [("car", f"car_{i}.png", [[("a", 0.5)], [("d", 0.7)]]) for i in range(2)]
    _builder_session(path, "P-1", [], [pairs], reps=2)
    result = run_main(
        "import", "psychopy", str(path), "--out", str(tmp_path / "data"),
        "--columns", "sketch_id=sketch,image_id=image", "--keys", "a,s,d,f,g", "--scale", "1-5",
    )  # fmt: skip
    assert_input_error(
        result, "P-1.csv: line 6: column 'trials.thisRepN' is 1", "--repeats keep-last"
    )
    assert not (tmp_path / "data").exists()


def test_two_loops_with_pairs_stop_the_import_naming_both(tmp_path):
    path = EXAMPLES / "psychopy_builder_practice_P-8.csv"
    out = tmp_path / "data"
    result = run_main(
        "import", "psychopy", str(path), "--out", str(out),
        "--columns", "sketch_id=sketch,image_id=image", "--keys", "a,s,d,f,g", "--scale", "1-5",
    )  # fmt: skip
    assert_input_error(
        result,
        "found loops practice (2 rows) and trials (6 rows): name the one holding the "
        "ratings with --loop",
    )
    assert not out.exists()
    result = run_main(
        "import", "psychopy", str(path), "--out", str(out), "--loop", "blocks",
        "--columns", "sketch_id=sketch,image_id=image", "--keys", "a,s,d,f,g", "--scale", "1-5",
    )  # fmt: skip
    assert_input_error(result, "--loop: no loop 'blocks'", "practice (2 rows) and trials (6 rows)")


def test_the_instructions_keyboard_is_not_taken_for_the_ratings(tmp_path):
    path = tmp_path / "P-2.csv"
    _builder_session(path, "P-2", [], [[("car", "car_1.png", [[("f", 0.9)]])]], reps=1)
    imported = read_psychopy([path], keys=KEYS, columns=COLUMNS, scale=SCALE)
    assert imported.settings["Keyboard"] == ["key_resp"]
    assert imported.ratings["rating"].tolist() == [4]


@pytest.mark.parametrize("ending", ["\n", "\r\n"])
def test_a_nested_loop_keeps_its_outer_loops_iteration_as_the_block(tmp_path, ending):
    path = tmp_path / "P-3.csv"
    blocks = [
        [(s, f"{s}_{i}.png", [[(k, 0.5 + i / 10)]]) for i, k in enumerate("asd")]
        for s in ("car", "cup")
    ]
    _builder_session(path, "P-3", [], blocks, reps=1)
    path.write_bytes(path.read_text().replace("\n", ending).encode())
    table = _imported(tmp_path, [path])
    _assert_same(table, _pandas_reading(path, "trials"))
    assert table["block"].tolist() == [1, 1, 1, 2, 2, 2]
    assert table["trial"].tolist() == list(range(1, 7))


def test_a_letter_of_no_rating_key_in_a_loop_row_is_refused(tmp_path):
    path = tmp_path / "P-4.csv"
    _builder_session(path, "P-4", [], [[("car", "car_1.png", [[("q", 0.9)]])]], reps=1)
    with pytest.raises(InputError, match=r"P-4.csv: line 4: column 'key_resp.keys'"):
        read_psychopy([path], keys=KEYS, columns=COLUMNS, scale=SCALE)


def test_ids_with_odd_characters_pass_through_a_loop(tmp_path):
    path = tmp_path / "P-5.csv"
    odd = [(f"s-{c}", f"img_{c}.v2.png", [[("a", 0.3)]]) for c in string.digits[:3]]
    _builder_session(path, "Jürgen-05", [], [odd], reps=1)
    table = _imported(tmp_path, [path])
    assert table["image_id"].tolist() == ["img_0.v2.png", "img_1.v2.png", "img_2.v2.png"]


# --- jsPsych: a practice block of the same plugin, told apart by a field ----------------------


def _jspsych_session(path: Path) -> None:
    """A welcome screen, 2 practice trials (task: practice), 45 rating trials (task: rate),
    as jsPsych.data.get().json() writes them; every 9th rating trial missed."""
    trials = [{"trial_type": "html-keyboard-response", "stimulus": "<p>Welcome</p>", "rt": 2811,
               "response": " ", "trial_index": 0, "time_elapsed": 2815}]  # fmt: skip
    pairs = [("demo", f"demo_{i}.jpg", "practice") for i in range(2)]
    pairs += [(f"s{i % 5}", f"s{i % 5}_{i:02d}.jpg", "rate") for i in range(45)]
    for index, (sketch, image, task) in enumerate(pairs, start=1):
        missed = task == "rate" and index % 9 == 0
        trials.append(
            {
                "trial_type": "html-keyboard-response",
                "stimulus": f'<img src="sketches/{sketch}.png"><img src="images/{image}">',
                "response": None if missed else str(index % 7 + 1),
                "rt": None if missed else 400.5 + index,
                "trial_index": index,
                "time_elapsed": 3000 * index,
                "internal_node_id": f"0.0-{index}.0",
                "plugin_version": "1.1.3",
                "task": task,
                "correct": index % 2 == 0,
                "sketch": sketch,
                "image": image,
                "subject_id": "5f3a9c1e2b7d4e0012ab34cd",
            }
        )
    path.write_text(json.dumps(trials, indent=2))


_FIELDS = {"participant": "subject_id", "sketch_id": "sketch", "image_id": "image"}


def test_a_practice_block_told_apart_by_a_field_is_named_once(tmp_path):
    path = tmp_path / "p.json"
    _jspsych_session(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        read_jspsych([path, path], keys=_KEYS7, columns=_FIELDS)
    said = [str(w.message) for w in caught if issubclass(w.category, ImportedRatingsWarning)]
    assert said == [
        "field 'task' takes 2 values on the rating trials: practice (4), rate (90); pass "
        "--select task=rate to keep one"
    ]


def test_select_keeps_the_rating_trials_as_pandas_selects_them(tmp_path):
    path = tmp_path / "p.json"
    _jspsych_session(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ImportedRatingsWarning)
        imported = read_jspsych([path], keys=_KEYS7, columns=_FIELDS, select={"task": "rate"})
    ratings = imported.ratings
    # Independently: pandas reads the JSON, keeps task == rate, keys 1..7 are the ratings.
    source = pd.read_json(path, dtype={"response": str})
    rate = source[source["task"] == "rate"]
    assert ratings["image_id"].tolist() == rate["image"].tolist()
    expected = pd.to_numeric(rate["response"], errors="coerce").to_numpy()
    np.testing.assert_array_equal(
        ratings["rating"].to_numpy(dtype=float, na_value=np.nan), expected
    )
    np.testing.assert_allclose(ratings["rt"], rate["rt"].to_numpy() / 1000, rtol=0, atol=1e-12)


def test_the_cli_prints_the_practice_warning_and_reads_with_select(tmp_path):
    path = tmp_path / "p.json"
    _jspsych_session(path)
    common = ["--columns", "participant=subject_id,sketch_id=sketch,image_id=image"]
    result = run_main("import", "jspsych", str(path), "--out", str(tmp_path / "a"), *common)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("--select task=rate") == 1, result.stderr
    result = run_main(
        "import",
        "jspsych",
        str(path),
        "--out",
        str(tmp_path / "b"),
        *common,
        "--select",
        "task=rate",
    )
    assert result.returncode == 0, result.stderr
    assert "Imported 45 rows (40 ratings)" in result.stdout
    assert "--select" not in result.stderr


def test_the_practice_example_imports_as_formats_md_says(tmp_path):
    out = tmp_path / "imported"
    result = run_main(
        "import", "psychopy", str(EXAMPLES / "psychopy_builder_practice_P-8.csv"),
        "--out", str(out), "--columns", "sketch_id=sketch,image_id=image",
        "--keys", "a,s,d,f,g", "--scale", "1-5", "--loop", "trials", "--practice-loop", "practice",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Imported 8 rows (7 ratings) of 1 participant" in result.stdout
    analyzed = run_main("analyze", str(out), "--out", str(tmp_path / "a"), "--no-figures")
    assert analyzed.returncode == 0, analyzed.stderr
    truth = pd.read_csv(tmp_path / "a" / "ground_truth.csv")
    # The practice ratings are in no statistic: the main block's 5 ratings only.
    assert truth["n_ratings"].sum() == 5


def test_a_pair_in_two_blocks_is_refused_naming_both_lines_unless_repeats_says(tmp_path):
    path = tmp_path / "P-6.csv"
    blocks = [[("car", "car_1.png", [[("a", 0.5)]])], [("car", "car_1.png", [[("g", 0.6)]])]]
    _builder_session(path, "P-6", [], blocks, reps=1)
    # Lines: header, two instructions, block 1's trial (4) and end (5), block 2's trial (6).
    with pytest.raises(InputError, match=r"line 6: loop 'trials' shows sketch 'car' image "
                       r"'car_1.png' again \(first at line 4\); say which rating to keep with "
                       r"--repeats"):  # fmt: skip
        read_psychopy([path], keys=KEYS, columns=COLUMNS, scale=SCALE)
    kept = read_psychopy([path], keys=KEYS, columns=COLUMNS, scale=SCALE, repeats="keep-first")
    assert kept.ratings[["rating", "block"]].values.tolist() == [[1, 1]]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(["practice", "rate", "rest", "demo", "main", "extra", "x1"]),
             min_size=1, max_size=30),
    st.booleans(),
)  # fmt: skip
def test_a_field_is_named_only_when_it_takes_a_few_text_values(tmp_path_factory, tags, numeric):
    """The rule of docs/formats.md, decided here from the tags alone: 2 to 5 distinct text
    values, at most one per two rating trials; a number is never a tag."""
    values = [str(len(t)) for t in tags] if numeric else tags
    trials = [
        {"trial_type": "html-keyboard-response", "stimulus": "<img src='a.png'>", "rt": 500,
         "response": "3", "sketch": "s", "image": f"i{i}", "task": value}
        for i, value in enumerate(values)
    ]  # fmt: skip
    path = tmp_path_factory.mktemp("tags") / "p.json"
    path.write_text(json.dumps(trials))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        read_jspsych([path], keys=_KEYS7, columns={"sketch_id": "sketch", "image_id": "image"})
    said = [str(w.message) for w in caught if issubclass(w.category, ImportedRatingsWarning)]
    distinct = set(values)
    expected = not numeric and 2 <= len(distinct) <= min(5, len(values) / 2)
    assert bool(said) == expected, said
    if expected:
        assert said[0].startswith(f"field 'task' takes {len(distinct)} values")
