"""analyze --exclude: the pre-registered rules, decided on each participant's own ratings,
applied before every statistic; the outputs equal those of the dataset without the
excluded participants' folders."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import kendalltau

from sbir_study.analysis import load_ratings
from sbir_study.analysis.exclusion import decide_exclusions, parse_exclusion_rule
from sbir_study.analysis.simulate import RaterModel, StudyDesign, write_simulated_dataset
from sbir_study.foundation.checks import InputError
from tests.helpers import assert_input_error, run_main

DESIGN = StudyDesign(
    participants=6, sketches=3, images_per_sketch=7, anchor_sketches=2, anchor_images=4
)
# Noisy raters who miss windows, so that the rules' thresholds split them.
MODEL = RaterModel(miss_rate=0.15)
QUICK = ("--no-figures", "--bootstrap", "0", "--permutations", "20")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("exclusion") / "data"
    write_simulated_dataset(root, DESIGN, MODEL, seed=11)
    return root


def _rules(*texts):
    return [parse_exclusion_rule(text) for text in texts]


@given(st.floats(min_value=0, max_value=1, allow_nan=False))
def test_a_share_or_tau_reads_back(value):
    assert parse_exclusion_rule(f"missed-above={value!r}").value == value
    assert parse_exclusion_rule(f" anchoring-tau-below = {-value!r}").value == -value


@given(st.text(max_size=30))
def test_any_other_text_is_refused_naming_the_option(text):
    try:
        rule = parse_exclusion_rule(text)
    except InputError as error:
        assert str(error).startswith("--exclude: expected one of anchoring-tau-below=V")
        return
    assert rule.kind in (
        "anchoring-tau-below",
        "missed-above",
        "incomplete",
        "catch-failed",
        "labels",
    )
    if rule.kind in ("anchoring-tau-below", "missed-above"):
        assert -1 <= rule.value <= 1
    if rule.kind == "catch-failed":
        assert type(rule.value) is int and rule.value >= 0


def _beh_tables(root):
    """Every session file as pandas reads it on its own (the oracle's view)."""
    return pd.concat(
        [
            pd.read_csv(p, sep="\t", na_values=["n/a"], dtype={"participant": str})
            for p in sorted(root.glob("sub-*/beh/*_beh.tsv"))
        ]
    )


def test_missed_above_is_the_share_of_main_trials_without_a_rating(dataset):
    main = _beh_tables(dataset).query("phase == 'main'")
    share = main["rating"].isna().groupby(main["participant"]).mean()  # pandas, on the files
    cut = float(np.median(share))
    expected = sorted(share.index[share > cut])
    assert expected, "the design should leave someone above the median"
    decided = decide_exclusions(load_ratings(dataset), _rules(f"missed-above={cut!r}"))
    assert sorted(decided) == expected


def test_anchoring_tau_below_is_the_median_over_anchor_sketches_of_scipys_tau_b(dataset):
    repeats = _beh_tables(dataset).query("phase == 'anchor_repeat'").dropna(subset=["rating"])
    # scipy.stats.kendalltau (tau-b) of each participant's repeated vs prescribed ratings,
    # per anchor sketch, where it is a test (three shared images or more, docs/agreement.md:
    # "Undefined is not a result"); the participant's value is the median over their sketches.
    per_sketch = repeats.groupby(["participant", "sketch_id"]).apply(
        lambda g: kendalltau(g["rating"], g["anchor_rating"]).statistic if len(g) >= 3 else np.nan,
        include_groups=False,
    )
    tau = per_sketch.groupby(level="participant").median()
    cut = float(tau.dropna().sort_values().iloc[2])
    decided = decide_exclusions(load_ratings(dataset), _rules(f"anchoring-tau-below={cut!r}"))
    assert sorted(decided) == sorted(tau.index[tau < cut])


def test_incomplete_reads_the_sidecars_status(tmp_path, dataset):
    data = tmp_path / "data"
    shutil.copytree(dataset, data)
    for label, status in (("02", "incomplete"), ("05", "complete"), ("06", "timed_out")):
        (path,) = data.glob(f"sub-{label}/beh/*_beh.json")
        path.write_text(json.dumps({**json.loads(path.read_text()), "SessionStatus": status}))
    decided = decide_exclusions(
        load_ratings(data), _rules("incomplete", "labels=" + str(_labels(tmp_path, "02")))
    )
    assert decided == {
        "02": ["incomplete", f"labels={tmp_path / 'labels.txt'}"],
        "06": ["incomplete"],
    }


def _labels(tmp_path, *labels):
    path = tmp_path / "labels.txt"
    path.write_text("# pre-registered exclusions\n\n" + "\n".join(labels) + "\n")
    return path


def _analyze(data, out, *options):
    result = run_main("analyze", str(data), "--out", str(out), *QUICK, *options)
    assert result.returncode == 0, result.stderr
    return out


def test_excluding_by_labels_equals_the_dataset_without_their_folders(tmp_path, dataset):
    excluded = ["02", "05"]
    with_rule = _analyze(
        dataset, tmp_path / "excluded", "--exclude", f"labels={_labels(tmp_path, 'sub-02', '05')}"
    )
    smaller = tmp_path / "smaller"
    shutil.copytree(dataset, smaller)
    for label in excluded:
        shutil.rmtree(smaller / f"sub-{label}")
    without = _analyze(smaller, tmp_path / "without")

    names = sorted(p.name for p in without.iterdir() if p.suffix in (".csv", ".qrels"))
    assert "ground_truth.csv" in names and "kendall_w.csv" in names
    for name in names:
        if name != "participants.csv":
            assert (with_rule / name).read_bytes() == (without / name).read_bytes(), name
    listed = pd.read_csv(with_rule / "participants.csv", dtype=str, keep_default_na=False)
    assert listed.loc[listed["excluded"] == "True", "participant"].tolist() == excluded
    assert set(listed.loc[listed["excluded"] == "True", "exclusion_rule"]) == {
        f"labels={tmp_path / 'labels.txt'}"
    }
    kept = listed[listed["excluded"] == "False"].drop(columns=["excluded", "exclusion_rule"])
    plain = pd.read_csv(without / "participants.csv", dtype=str, keep_default_na=False)
    assert kept.to_csv(index=False) == plain.drop(columns=["excluded", "exclusion_rule"]).to_csv(
        index=False
    )

    summary, plain_summary = (
        json.loads((o / "summary.json").read_text()) for o in (with_rule, without)
    )
    assert summary["excluded"] == [
        {"participant": label, "rules": [f"labels={tmp_path / 'labels.txt'}"]} for label in excluded
    ]
    assert plain_summary["excluded"] == []
    for key in ("excluded", "sources"):
        del summary[key], plain_summary[key]
    assert summary == plain_summary
    page = (with_rule / "report.html").read_text()
    assert "4 of 6 participants, 2 excluded" in page and "Excluded participants" in page
    assert "this study: 4 of 6 participants, 2 excluded" in page  # the headline column


def test_rules_that_exclude_everyone_are_one_line(tmp_path, dataset):
    labels = _labels(tmp_path, *[f"{k:02d}" for k in range(1, 7)])
    assert_input_error(
        run_main(
            "analyze", str(dataset), "--out", str(tmp_path / "o"), "--exclude", f"labels={labels}"
        ),
        "--exclude: the rules exclude all 6 participants",
    )
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "rule, fragment",
    [
        ("missed-above=1.5", "argument --exclude: expected one of anchoring-tau-below=V"),
        ("sometimes", "got 'sometimes'"),
        ("labels=", "got 'labels='"),
    ],
)
def test_bad_rule_text_is_one_line_naming_the_option(tmp_path, dataset, rule, fragment):
    assert_input_error(
        run_main("analyze", str(dataset), "--out", str(tmp_path / "o"), "--exclude", rule), fragment
    )


def test_a_label_not_in_the_study_names_file_and_line(tmp_path, dataset):
    labels = _labels(tmp_path, "02", "99")
    assert_input_error(
        run_main(
            "analyze", str(dataset), "--out", str(tmp_path / "o"), "--exclude", f"labels={labels}"
        ),
        f"{labels}: line 4: participant '99' is not in the ratings",
    )
