"""HPatches retrieval scoring against a small fixture checked by hand.

tests/data/hpatches holds one task of three queries, scored with --top 5 (the
query, then five retrieved patches). The APs below are worked out by hand from
the definition of the benchmark's 2016 scoring code (ranks 2 to 6; divided by
the positives retrieved there, not by all true correspondences; an image is
correct when it is the image of a labelled patch). The reference code itself is
run in test_hpatches_reference.py:

query i_a.ref.1 (labels i_a.e1.1, i_a.e2.1, i_a.e3.1)
  retrieved  i_a.e1.1  v_b.ref.3  i_a.e1.5  i_a.e2.1  v_b.e1.7
  patch      +         -          -         +         -    AP = (1/1 + 2/4) / 2 = 0.75
             (i_a.e3.1 is never retrieved: dividing by all 3 matches would give 0.5)
  image      +         -          +         +         -    AP = (1/1 + 2/3 + 3/4) / 3
query v_b.ref.7 (label v_b.e1.7)
  retrieved  i_a.ref.1  v_b.ref.2  i_a.e1.3  i_a.e1.4  v_b.e1.7
  patch      -          -          -         -         +   AP = (1/5) / 1 = 0.2
  image      -          +          -         -         +   AP = (1/2 + 2/5) / 2 = 0.45
query i_a.ref.2: nothing of sequence i_a retrieved: AP 0 for both.
"""

import shutil

import numpy as np
import pytest

from sbir_study.analysis.retrieval.hpatches import evaluate_hpatches, hpatches_average_precision
from sbir_study.foundation.checks import InputError
from tests.helpers import HPATCHES as DATA

AP_PATCH = [0.75, 0.2, 0.0]


AP_IMAGE = [(1 + 2 / 3 + 3 / 4) / 3, 0.45, 0.0]


def test_average_precision_of_the_fixture():
    per_query, summary = evaluate_hpatches(DATA / "benchmarks", DATA / "results", top=5)
    assert per_query["descriptor"].unique().tolist() == ["desc_a"]
    np.testing.assert_allclose(per_query["ap_patch"], AP_PATCH)
    np.testing.assert_allclose(per_query["ap_image"], AP_IMAGE)
    assert per_query["n_positive_patch"].tolist() == [2, 1, 0]
    row = summary.iloc[0]
    assert (row["task"], row["n_queries"]) == ("tiny_easy_2s_00", 3)
    assert row["map_patch"] == pytest.approx(np.mean(AP_PATCH))
    assert row["map_image"] == pytest.approx(np.mean(AP_IMAGE))


def test_a_results_folder_of_one_descriptor_scores_the_same():
    per_query, _ = evaluate_hpatches(DATA / "benchmarks", DATA / "results" / "desc_a", top=5)
    np.testing.assert_allclose(per_query["ap_patch"], AP_PATCH)


def test_average_precision_kernel():
    # Positives at ranks 1 and 3 of four: (1/1 + 2/3) / 2.
    np.testing.assert_allclose(
        hpatches_average_precision([[True, False, True, False]]), [(1 + 2 / 3) / 2]
    )


def test_results_for_an_unknown_task_and_missing_folders(tmp_path):
    results = shutil.copytree(DATA / "results" / "desc_a", tmp_path / "results")
    (results / "tiny_easy_2s_00.results").rename(results / "other_task.results")
    with pytest.raises(InputError, match=r"no task other_task\.benchmark"):
        evaluate_hpatches(DATA / "benchmarks", results, top=5)
    with pytest.raises(InputError, match="not a folder"):
        evaluate_hpatches(tmp_path / "nowhere", results, top=5)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match=r"no \*\.results files"):
        evaluate_hpatches(DATA / "benchmarks", empty, top=5)
