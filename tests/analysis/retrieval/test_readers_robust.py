"""Ground truths, runs and HPatches files: any bytes give a correct result or one clear message."""

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sbir_study.analysis.retrieval.baseline import write_trec_run
from sbir_study.analysis.retrieval.hpatches import evaluate_hpatches
from sbir_study.analysis.retrieval.runs import ground_truth_from_frame, load_ground_truth, load_run
from sbir_study.foundation.checks import InputError, bad_ids
from tests.helpers import reads_or_refuses, table_bytes

TRUTH = ground_truth_from_frame(
    pd.DataFrame(
        {
            "sketch_id": ["s1", "s1", "s1", "s2"],
            "image_id": ["a", "b", "c", "d"],
            "mean_rating": [1.0, 4.0, 6.5, 2.0],
        }
    )
)
TOKENS = [
    "sketch_id",
    "image_id",
    "mean_rating",
    "score",
    "s1",
    "s2",
    "a",
    "b",
    "c",
    "d",
    "Q0",
    "1",
    "2.5",
    "-3",
    "7",
    "8",
    "tag",
]


@settings(max_examples=150, deadline=3000)
@given(content=table_bytes(TOKENS, separators=(",", "\t")))
@example(content=b"image_id\timage_id\timage_id\t7")  # one line of four fields: qrels
def test_any_bytes_as_a_ground_truth(content):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "ground_truth.csv"
        path.write_bytes(content)
        truth = reads_or_refuses(load_ground_truth, path)
    if truth is not None:
        assert not bad_ids(truth.sketches).any()
        assert not bad_ids(np.concatenate(truth.images)).any()
        judged = truth.mean_rating[truth.judged]
        if truth.from_qrels:  # four fields without a comma: TREC qrels, read as grades
            grades = truth.grade[truth.judged]
            assert ((grades >= 0) & (grades == np.round(grades))).all()
            assert (judged == -grades).all()  # what tau_b correlates with: higher is better
        else:
            assert ((judged >= 1) & (judged <= 7)).all()


@settings(max_examples=150, deadline=3000)
@given(
    content=table_bytes(TOKENS, separators=(" ", "\t", ",", "  ")),
    lower=st.booleans(),
    suffix=st.sampled_from([".run", ".csv", ".tsv"]),
)
def test_any_bytes_as_a_run(content, lower, suffix):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"system{suffix}"
        path.write_bytes(content)
        run = reads_or_refuses(load_run, path, TRUTH, lower_is_better=lower)
    if run is not None:
        assert run.rank.shape == TRUTH.mean_rating.shape
        returned = ~np.isnan(run.rank)
        assert (run.rank[returned] >= 1).all()
        assert (run.rank[returned] <= run.n_returned.max()).all()


@settings(max_examples=100, deadline=3000)
@given(
    sketch=st.sampled_from(["s1", "s2"]),
    image=st.text(max_size=6),
    separator=st.sampled_from(["\t", ","]),
)
def test_a_run_id_is_read_only_when_it_follows_the_rule(sketch, image, separator):
    """A tab-separated run can carry spaces in a field: the id rule refuses them."""
    header = separator.join(["sketch_id", "image_id", "score"])
    cell = image if separator == "\t" else '"' + image.replace('"', '""') + '"'
    text = f"{header}\n{sketch}{separator}{cell}{separator}0.5\n"
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "system.tsv"
        path.write_text(text, encoding="utf-8", newline="")
        run = reads_or_refuses(load_run, path, TRUTH)
    if run is not None:
        assert not bad_ids([image.strip()])[0] or image.strip() == ""


POOL = "v_a.e1,v_a.e2,i_b.e1"
HP_TOKENS = ["v_a.e1.1", "v_a.e1.2", "v_a.e2.1", "i_b.e1.1", "i_b.e1.2", POOL]


@settings(max_examples=100, deadline=3000)
@given(
    benchmark=table_bytes(HP_TOKENS, separators=(",",)),
    labels=table_bytes(HP_TOKENS, separators=(",",)),
    results=table_bytes(HP_TOKENS, separators=(",",)),
    top=st.integers(1, 3),
)
def test_any_bytes_as_hpatches_files(benchmark, labels, results, top):
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "benchmarks").mkdir()
        (root / "results").mkdir()
        (root / "benchmarks" / "task.benchmark").write_bytes(benchmark)
        (root / "benchmarks" / "task.labels").write_bytes(labels)
        (root / "results" / "task.results").write_bytes(results)
        scored = reads_or_refuses(evaluate_hpatches, root / "benchmarks", root / "results", top=top)
    if scored is not None:
        per_query, _ = scored
        assert per_query["ap_patch"].between(0, 1).all()
        assert per_query["ap_image"].between(0, 1).all()


def test_a_well_formed_hpatches_task_still_scores():
    """The fuzzed readers above are the same as the hand-checked fixture's."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "b").mkdir()
        (root / "r").mkdir()
        (root / "b" / "t.benchmark").write_text(f"{POOL}\nv_a.e1.1\n")
        (root / "b" / "t.labels").write_text(f"{POOL}\nv_a.e1.1,v_a.e2.1\n")
        (root / "r" / "t.results").write_text(f"{POOL}\nv_a.e1.1,i_b.e1.1,v_a.e2.1\n")
        per_query, _ = evaluate_hpatches(root / "b", root / "r", top=2)
    # One positive (v_a.e2.1) at rank 2 of the list after the query: AP = 1/2 (hand-computed).
    assert per_query["ap_patch"].tolist() == [0.5]


@pytest.mark.parametrize(
    "column, bad", [("sketch_id", "s 1"), ("image_id", "a\tb"), ("image_id", "x\ny")]
)
def test_a_trec_run_never_carries_an_unchecked_id(tmp_path, column, bad):
    run = pd.DataFrame({"sketch_id": ["s1", "s1"], "image_id": ["a", "b"], "score": [1.0, 0.5]})
    run.loc[1, column] = bad
    with pytest.raises(InputError, match=f"{column}: expected an id"):
        write_trec_run(run, tmp_path / "x.run", tag="t")
    assert not (tmp_path / "x.run").exists()
