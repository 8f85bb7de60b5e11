"""sbir-study import: the examples in docs/examples import, analyze reads what it writes (its
ground truth checked against pandas on the source), bad inputs are one line, and the output
policy holds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.helpers import assert_input_error, run_main

EXAMPLES = Path(__file__).parents[2] / "docs" / "examples"
LONG_MAPPING = "participant=Subject,sketch_id=Sketch,image_id=Image,rating=Response,rt=RT"
#: The columns of the semicolon-separated exports the tests write.
EXPORT_COLUMNS = "participant=Subject,sketch_id=Sketch,image_id=Image,rating=Response"


def run_import(kind: str, sources: Path | list[Path], out: Path, *options: str):
    """``sbir-study import KIND SOURCES --out OUT OPTIONS``, in this process."""
    sources = sources if isinstance(sources, list) else [sources]
    return run_main("import", kind, *map(str, sources), "--out", str(out), *options)


def analyzed_ground_truth(data: Path, out: Path, **read_csv) -> pd.DataFrame:
    """``sbir-study analyze DATA --out OUT --no-figures``; the ground_truth.csv it writes."""
    result = run_main("analyze", str(data), "--out", str(out), "--no-figures")
    assert result.returncode == 0, result.stderr
    return pd.read_csv(out / "ground_truth.csv", **read_csv)


def assert_pair_means(truth: pd.DataFrame, expected: pd.DataFrame) -> None:
    """ground_truth.csv holds every pair of ``expected`` (pandas' ``mean`` and ``count`` by
    sketch and image) and no other, with that mean rating and number of ratings."""
    merged = truth.merge(
        expected, left_on=["sketch_id", "image_id"], right_index=True, validate="1:1"
    )
    assert len(merged) == len(expected) == len(truth)
    np.testing.assert_allclose(merged["mean_rating"], merged["mean"], rtol=1e-12)
    np.testing.assert_array_equal(merged["n_ratings"], merged["count"])


def test_the_long_table_example_imports_as_the_readme_says(tmp_path):
    result = run_import(
        "table",
        EXAMPLES / "long_table.csv",
        tmp_path / "data",
        "--columns",
        LONG_MAPPING,
    )
    assert result.returncode == 0, result.stderr
    assert "Imported 8 rows (7 ratings) of 2 participants" in result.stdout
    participants = (tmp_path / "data" / "participants.tsv").read_text()
    assert participants == "participant_id\tsource_id\nsub-P7\tP-7\nsub-R3kVq9x\tR_3kVq9x\n"


def test_the_psychopy_example_imports_as_the_readme_says(tmp_path):
    result = run_import(
        "psychopy",
        EXAMPLES / "psychopy_builder_P-7.csv",
        tmp_path / "data",
        "--columns",
        "sketch_id=sketch,image_id=image",
        "--scale",
        "1-5",
    )
    assert result.returncode == 0, result.stderr
    assert "Imported 4 rows (3 ratings) of 1 participant from 1 PsychoPy Builder file" in (
        result.stdout
    )


def test_analyze_reads_an_imported_dataset_its_ground_truth_that_of_pandas(tmp_path):
    rng = np.random.default_rng(5)
    rows = [
        (
            participant,
            f"s{sketch}",
            f"s{sketch}_{image}.png",
            rng.integers(1, 6) if rng.random() > 0.1 else np.nan,
        )
        for participant in ("P-1", "P-2", "R_3", "Jürgen", "05")
        for sketch in range(3)
        for image in range(6)
    ]
    source = pd.DataFrame(rows, columns=["Subject", "Sketch", "Image", "Response"])
    path = tmp_path / "export.csv"
    source.to_csv(path, sep=";", index=False, na_rep="", encoding="cp1252")
    result = run_import(
        "table",
        path,
        tmp_path / "data",
        "--columns",
        EXPORT_COLUMNS,
        "--encoding",
        "cp1252",
        "--scale",
        "1-5",
    )
    assert result.returncode == 0, result.stderr
    truth = analyzed_ground_truth(tmp_path / "data", tmp_path / "out")
    # Independently: pandas' mean of each pair's ratings in the source, missing left out.
    expected = source.groupby(["Sketch", "Image"])["Response"].agg(["mean", "count"])
    assert_pair_means(truth, expected)


def test_a_rating_off_the_scale_is_exit_2_naming_file_line_and_column(tmp_path):
    path = tmp_path / "export.csv"
    path.write_text("Subject;Sketch;Image;Response\nP1;s1;a;3\nP1;s1;b;6\n")
    result = run_import(
        "table",
        path,
        tmp_path / "data",
        "--columns",
        EXPORT_COLUMNS,
        "--scale",
        "1-5",
    )
    assert_input_error(result, str(path), "line 3", "column 'Response'", "1..5", "'6'")
    assert not (tmp_path / "data").exists()


def test_an_earlier_import_is_replaced_only_with_overwrite_and_nothing_else(tmp_path):
    arguments = [
        "import",
        "table",
        str(EXAMPLES / "long_table.csv"),
        "--out",
        str(tmp_path / "data"),
        "--columns",
        LONG_MAPPING,
    ]
    assert run_main(*arguments).returncode == 0
    assert_input_error(run_main(*arguments), "--overwrite")
    assert run_main(*arguments, "--overwrite").returncode == 0
    simulated = run_main(
        "simulate",
        "--out",
        str(tmp_path / "sim"),
        "--participants",
        "2",
        "--sketches",
        "2",
        "--images",
        "3",
    )
    assert simulated.returncode == 0, simulated.stderr
    arguments[4] = str(tmp_path / "sim")
    assert_input_error(run_main(*arguments, "--overwrite"), "simulate")


@pytest.mark.parametrize(
    "option, value, fragment",
    [
        ("--sep", "colon", "--sep: expected comma, semicolon, tab or bar"),
        ("--columns", "rater=Subject", "'rater' is not a column of the ratings table"),
        ("--encoding", "klingon", "--encoding: 'klingon' is not an encoding"),
        ("--scale", "1-12", "--scale: expected 2 to 9 points"),
    ],
)
def test_a_bad_option_is_one_line(tmp_path, option, value, fragment):
    result = run_import(
        "table",
        EXAMPLES / "long_table.csv",
        tmp_path / "data",
        option,
        value,
    )
    assert_input_error(result, fragment)


JSPSYCH_FIELDS = "participant=subject_id,sketch_id=sketch,image_id=image"


@pytest.mark.parametrize("name", ["jspsych_P-7.json", "jspsych_P-7.csv"])
def test_the_jspsych_examples_import_as_the_readme_says(tmp_path, name):
    result = run_import(
        "jspsych",
        EXAMPLES / name,
        tmp_path / "data",
        "--columns",
        JSPSYCH_FIELDS,
    )
    assert result.returncode == 0, result.stderr
    assert "Imported 4 rows (3 ratings) of 1 participant from 1 jsPsych file" in result.stdout
    participants = pd.read_csv(tmp_path / "data" / "participants.tsv", sep="\t", dtype=str)
    assert participants["source_id"].tolist() == ["5f3a9c1e2b7d4e0012ab34cd"]


def test_jspsych_trials_on_a_stimulus_set_are_analysed_as_pandas_averages_them(tmp_path, small_set):
    import json

    # The set's manifest read by pandas: the pairs the trials show, served under stimuli/.
    manifest = pd.read_csv(small_set / "manifest.csv", dtype=str)
    manifest = manifest[manifest["role"] == "main"]
    rng = np.random.default_rng(11)
    expected = []
    files = []
    for participant in ("PROLIFIC-a", "PROLIFIC-b", "PROLIFIC-c"):
        trials = [
            {
                "trial_type": "html-keyboard-response",
                "stimulus": "<p>Ready?</p>",
                "response": " ",
                "rt": 900,
            }
        ]
        for pair in manifest.sample(frac=1, random_state=rng.integers(1 << 31)).itertuples():
            rating = int(rng.integers(1, 8))
            trials.append(
                {
                    "trial_type": "html-keyboard-response",
                    "stimulus": f'<img src="stimuli/{pair.sketch_path}">'
                    f'<img src="stimuli/{pair.image_path}">',
                    "response": str(rating),
                    "rt": 650.25,
                    "subject_id": participant,
                }
            )
            expected.append((pair.sketch_id, pair.image_id, rating))
        path = tmp_path / f"{participant}.json"
        path.write_text(json.dumps(trials))
        files.append(path)
    result = run_import(
        "jspsych",
        files,
        tmp_path / "data",
        "--stimuli",
        str(small_set),
        "--columns",
        "participant=subject_id",
    )
    assert result.returncode == 0, result.stderr
    sidecar = json.loads(next((tmp_path / "data").glob("sub-*/beh/*_beh.json")).read_text())
    assert sidecar["Imported"]["StimulusSet"]["Folder"] == str(small_set)
    assert sidecar["Origin"] == "imported"
    truth = analyzed_ground_truth(tmp_path / "data", tmp_path / "out", dtype={"sketch_id": str})
    means = (
        pd.DataFrame(expected, columns=["sketch_id", "image_id", "rating"])
        .groupby(["sketch_id", "image_id"])["rating"]
        .mean()
    )
    merged = truth.merge(means, left_on=["sketch_id", "image_id"], right_index=True, validate="1:1")
    assert len(merged) == len(means) == len(manifest)
    np.testing.assert_allclose(merged["mean_rating"], merged["rating"], rtol=1e-12)


@pytest.mark.parametrize(
    "options, fragment",
    [
        (["--columns", JSPSYCH_FIELDS, "--stimuli", "somewhere"], "--stimuli: the set and"),
        ([], "--stimuli: expected the stimulus set the trials showed"),
        (["--columns", JSPSYCH_FIELDS, "--select", "task"], "--select: expected FIELD=VALUE"),
        (["--columns", JSPSYCH_FIELDS, "--keys", "1,2,3"], "--keys: expected 7 keys"),
    ],
)
def test_a_bad_jspsych_option_is_one_line(tmp_path, options, fragment):
    result = run_import(
        "jspsych",
        EXAMPLES / "jspsych_P-7.json",
        tmp_path / "data",
        *options,
    )
    assert_input_error(result, fragment)


def test_the_qualtrics_example_imports_and_analyze_averages_it_as_pandas_does(tmp_path):
    export, mapping = EXAMPLES / "qualtrics_wide.csv", EXAMPLES / "wide_mapping.csv"
    result = run_import(
        "wide",
        export,
        tmp_path / "data",
        "--mapping",
        str(mapping),
        "--participant-column",
        "ResponseId",
    )
    assert result.returncode == 0, result.stderr
    assert "Imported 12 rows (8 ratings) of 3 participants from 1 wide export file" in (
        result.stdout
    )
    participants = pd.read_csv(tmp_path / "data" / "participants.tsv", sep="\t", dtype=str)
    assert participants["source_id"].str.startswith("R_").all()
    truth = analyzed_ground_truth(tmp_path / "data", tmp_path / "out")
    # Independently: pandas skips Qualtrics' two rows, melts by the mapping, reads the digits.
    table = pd.read_csv(export, skiprows=[1, 2], dtype=str, encoding="utf-8-sig")
    pairs = pd.read_csv(mapping, dtype=str)
    long = table.melt(value_vars=list(pairs["column"]), var_name="column").merge(pairs)
    long["rating"] = pd.to_numeric(long["value"].str.extract(r"^\s*(\d+)")[0])
    expected = long.groupby(["sketch_id", "image_id"])["rating"].agg(["mean", "count"])
    assert_pair_means(truth, expected)
    assert len(expected) == 4


@pytest.mark.parametrize(
    "options, fragment",
    [
        (["--answers", "Best=1,Best=2"], "--answers: label 'Best' is given twice"),
        (["--answers", "Best=9"], "--answers: 'Best' is given 9; expected a rating 1..7"),
        (["--participant-column", "ResponseID"], "did you mean 'ResponseId'?"),
        (["--sep", "colon"], "--sep: expected comma, semicolon, tab or bar"),
    ],
)
def test_a_bad_wide_option_is_one_line(tmp_path, options, fragment):
    result = run_import(
        "wide",
        EXAMPLES / "qualtrics_wide.csv",
        tmp_path / "data",
        "--mapping",
        str(EXAMPLES / "wide_mapping.csv"),
        *options,
    )
    assert_input_error(result, fragment)
