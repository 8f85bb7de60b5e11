"""``evaluate`` with the ratings of a study on another scale than the paper's.

The relevance cut defaults to the middle of the ratings' scale, and ratings of a scale whose
high end is best are read in the paper's orientation, as ``analyze`` wrote the ground truth:
pwh@k counts the participants whose own rating, turned, is below the cut (computed here with
pandas from the table).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sbir_study.analysis import load_ratings
from sbir_study.analysis.pipeline import AnalysisOptions, analyze_ratings
from sbir_study.analysis.retrieval.evaluation import EvaluationOptions
from sbir_study.analysis.retrieval.evaluation_inputs import evaluate_files
from sbir_study.analysis.simulate import StudyDesign, write_simulated_dataset
from sbir_study.foundation.scale import Scale

OPTIONS = EvaluationOptions(relevant_below=None, bootstrap=100, permutations=100)


@pytest.mark.parametrize("scale", [Scale(1, 5), Scale(1, 5, "high"), Scale(1, 2, "high")], ids=str)
def test_the_cut_is_the_middle_of_the_ratings_scale(tmp_path, scale):
    design = StudyDesign(
        participants=4, sketches=2, images_per_sketch=6, anchor_images=min(3, scale.k)
    )
    root = write_simulated_dataset(tmp_path / "data", design, seed=4, scale=scale)
    ratings = load_ratings(root)
    analyze_ratings(
        ratings, tmp_path / "analysis", AnalysisOptions(bootstrap=0, permutations=0), figures=False
    )
    truth = pd.read_csv(tmp_path / "analysis" / "ground_truth.csv", dtype=str)
    run = tmp_path / "engine.csv"
    # An engine that ranks each sketch's images by their id.
    truth.assign(score=-truth.groupby("sketch_id").cumcount())[
        ["sketch_id", "image_id", "score"]
    ].to_csv(run, index=False)
    evaluation = evaluate_files(
        tmp_path / "analysis" / "ground_truth.csv", [run], OPTIONS, ratings=root
    )
    assert evaluation.options.relevant_below == scale.relevant_below
    # pwh@5 of the engine (Zhang 2019, Eq. 12.26): per sketch, the participants whose rating
    # (in the paper's orientation) is below the cut, summed over its first 5 images, over the
    # sum over all its images.
    main = ratings[ratings["phase"] == "main"].astype({"sketch_id": str, "image_id": str})
    turned = main["rating"].astype(float)
    if scale.best == "high":
        turned = scale.low + scale.high - turned
    votes = (turned < scale.relevant_below).groupby([main["sketch_id"], main["image_id"]]).sum()
    table = evaluation.per_sketch
    got = table[(table["system"] == "engine") & (table["measure"] == "pwh@5")]
    for row in got.itertuples():
        images = truth[truth["sketch_id"] == row.sketch_id]["image_id"]
        weights = np.array([votes[(row.sketch_id, image)] for image in images])
        expected = weights[:5].sum() / weights.sum()
        assert row.value == pytest.approx(expected, rel=1e-12)
