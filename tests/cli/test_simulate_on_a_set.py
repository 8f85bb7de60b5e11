"""sbir-study simulate --stimuli: simulated participants rate a stimulus set's pairs."""

import json

from scipy import stats

from sbir_study.analysis import load_ratings
from sbir_study.stimuli import read_manifest, set_digest
from tests.helpers import assert_input_error, run_main


def test_simulate_on_a_set_rates_its_pairs_and_records_its_digest(small_set, tmp_path):
    result = run_main(
        "simulate",
        "--stimuli",
        str(small_set),
        "--participants",
        "4",
        "--out",
        str(tmp_path / "data"),
        "--seed",
        "1",
    )
    assert result.returncode == 0, result.stderr
    ratings = load_ratings(tmp_path / "data")
    manifest = read_manifest(small_set)
    shown = set(zip(ratings["sketch_id"].astype(str), ratings["image_id"].astype(str), strict=True))
    assert shown == set(zip(manifest["sketch_id"], manifest["image_id"], strict=True))
    sidecar = next((tmp_path / "data").rglob("*_beh.json"))
    assert json.loads(sidecar.read_text())["StimulusSetDigest"] == set_digest(small_set)
    # Latent similarity drives the ratings: more similar pairs are rated better.
    main = ratings[ratings["phase"] == "main"].merge(
        manifest.astype({"latent_similarity": float}), on=["sketch_id", "image_id"]
    )
    rho = stats.spearmanr(main["latent_similarity"], main["rating"], nan_policy="omit").statistic
    assert rho < -0.5
    assert_input_error(
        run_main(
            "simulate", "--stimuli", str(small_set), "--sketches", "4", "--out", str(tmp_path / "x")
        ),
        "--sketches",
    )
