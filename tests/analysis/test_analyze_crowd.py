"""``analyze`` on 2-, 5-, 9-point and reversed scales, against an independent computation.

Every expectation is computed here from the ratings table itself with pandas, SciPy
(``scipy.stats.kendalltau``, ``scipy.stats.rankdata``) and Python's ``decimal`` rounding,
not with the project's statistics: the shares against 1/k, one bin per point of the
scale (Eq. 3), the mean ratings and ranks, the qrels grades k - 1 (best) .. 0, the binary
qrels (a mean rounding to a point of the better half of the scale), the inter-user and
anchoring tau_b. A scale whose high end is the best match is read in the paper's
orientation, a recorded r as low + high - r, the anchors' prescribed ratings too.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from sbir_study.analysis import AnalysisOptions, analyze_ratings, load_ratings
from sbir_study.analysis.consensus import write_binary_qrels, write_qrels
from sbir_study.analysis.orientation import in_paper_orientation
from sbir_study.analysis.simulate import StudyDesign, write_simulated_dataset
from sbir_study.foundation.checks import InputError
from sbir_study.foundation.scale import PAPER_SCALE, SCALE_POINTS, Scale

SCALES = [
    Scale(1, 2),
    Scale(1, 5),
    Scale(1, 9),
    Scale(1, 9, "high"),
    Scale(1, 5, "high"),
    Scale(0, 6, "high"),
]
OPTIONS = AnalysisOptions(bootstrap=0, permutations=0, pairwise="full")
PAIR = ["sketch_id", "image_id"]


def _dataset(tmp_path, scale: Scale, seed: int = 5):
    design = StudyDesign(
        participants=5, sketches=3, images_per_sketch=8, anchor_images=min(5, scale.k)
    )
    return load_ratings(write_simulated_dataset(tmp_path / "data", design, seed=seed, scale=scale))


def _in_paper_orientation(values: pd.Series, scale: Scale) -> pd.Series:
    values = values.astype("float64")
    return values if scale.best == "low" else (scale.low + scale.high) - values


def _round_half_up(mean: float) -> int:
    """A mean rounded to the nearest point, a half to the worse (higher) one."""
    return int(Decimal(repr(float(mean))).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def _qrels(path) -> pd.DataFrame:
    return pd.read_csv(
        path,
        sep=" ",
        header=None,
        names=["sketch_id", "q0", "image_id", "grade"],
        dtype={"sketch_id": str, "image_id": str},
    )


@pytest.fixture(scope="module", params=SCALES, ids=str)
def analysed(request, tmp_path_factory):
    scale = request.param
    tmp_path = tmp_path_factory.mktemp("scale")
    ratings = _dataset(tmp_path, scale)
    out = tmp_path / "analysis"
    analyze_ratings(ratings, out, OPTIONS, figures=False)
    table = ratings.assign(
        rating=_in_paper_orientation(ratings["rating"], scale),
        anchor_rating=_in_paper_orientation(ratings["anchor_rating"], scale),
    )
    for column in ("participant", "sketch_id", "image_id", "phase"):
        table[column] = table[column].astype(str)
    return scale, table, out


def test_the_ratings_lie_on_the_scale_s_points(analysed):
    scale, table, _ = analysed
    assert table["rating"].dropna().between(scale.low, scale.high).all()
    assert table["rating"].dropna().nunique() > 1


def test_the_distribution_lists_the_scale_s_points_against_1_over_k(analysed):
    scale, table, out = analysed
    written = pd.read_csv(out / "rating_distribution.csv")
    assert set(written["dataset"]) == {"final"}
    for phase, rows in table.groupby("phase"):
        got = written[written["phase"] == phase]
        assert got["rating"].tolist() == list(scale.points)
        given_ = rows["rating"].dropna()
        counts = pd.Categorical(given_, categories=scale.points).value_counts()
        np.testing.assert_array_equal(got["count"], counts.to_numpy())
        with np.errstate(invalid="ignore"):  # a phase not rated by design: no share, NaN
            share = counts.to_numpy() / len(given_)
        np.testing.assert_allclose(got["share"], share, rtol=1e-12)
        np.testing.assert_allclose(got["uniform_share"], 1 / scale.k, rtol=1e-15)
        assert (got["n_missing"] == rows["rating"].isna().sum()).all()


def test_one_bin_per_point_of_the_scale(analysed):
    scale, table, out = analysed
    bins = pd.read_csv(out / "bins.csv")
    assert bins["bin"].tolist() == list(scale.points)
    assert [c for c in bins if c.startswith("n_rating_")] == [f"n_rating_{p}" for p in scale.points]
    main = table[table["phase"] == "main"].dropna(subset=["rating"])
    median = main.groupby(PAIR)["rating"].transform("median")
    main = main.assign(bin=np.floor(median))
    for row in bins.itertuples():
        members = main.loc[main["bin"] == row.bin, "rating"]
        assert row.n_ratings == len(members)
        if len(members):
            assert row.mean == pytest.approx(members.mean(), rel=1e-12)
        if len(members) > 1:
            assert row.sd == pytest.approx(members.std(ddof=1), rel=1e-12)
        for point in scale.points:
            assert getattr(row, f"n_rating_{point}") == (members == point).sum()
    assert bins["n_ratings"].sum() == len(main)


def test_the_ground_truth_ranks_by_mean_rating_best_first(analysed):
    _scale, table, out = analysed
    truth = pd.read_csv(out / "ground_truth.csv", dtype={"sketch_id": str, "image_id": str})
    main = table[table["phase"] == "main"]
    mean = main.groupby(PAIR)["rating"].mean().rename("expected").reset_index()
    merged = truth.merge(mean, on=PAIR, validate="one_to_one")
    assert len(merged) == len(truth) == len(mean)
    np.testing.assert_allclose(merged["mean_rating"], merged["expected"], rtol=1e-12)
    for _, rows in merged.groupby("sketch_id"):
        np.testing.assert_array_equal(rows["rank"], scipy.stats.rankdata(rows["expected"]))


def test_qrels_grade_k_minus_1_for_the_best_down_to_0(analysed):
    scale, _table, out = analysed
    truth = pd.read_csv(out / "ground_truth.csv", dtype={"sketch_id": str, "image_id": str})
    graded = _qrels(out / "ground_truth.qrels").merge(truth, on=PAIR, validate="one_to_one")
    assert len(graded) == truth["mean_rating"].notna().sum()
    expected = [scale.high - _round_half_up(m) for m in graded["mean_rating"]]
    assert graded["grade"].tolist() == expected
    assert graded["grade"].between(0, scale.k - 1).all()
    binary = _qrels(out / "ground_truth_binary.qrels").merge(truth, on=PAIR)
    better_half = scale.low + scale.k // 2 - 1  # the last point of the better half
    assert binary["grade"].tolist() == [
        int(_round_half_up(m) <= better_half) for m in binary["mean_rating"]
    ]


def test_inter_user_tau_b_is_scipy_s(analysed):
    _scale, table, out = analysed
    pairs = pd.read_parquet(out / "pairwise_tau.parquet")
    main = table[table["phase"] == "main"]
    wide = main.pivot_table(
        index=["sketch_id", "participant"],
        columns="image_id",
        values="rating",
        aggfunc="first",
        dropna=False,
    )
    assert len(pairs) == 3 * 10  # 3 sketches x 5 participants choose 2
    for row in pairs.astype(
        {"sketch_id": str, "participant_a": str, "participant_b": str}
    ).itertuples():
        a = wide.loc[(row.sketch_id, row.participant_a)]
        b = wide.loc[(row.sketch_id, row.participant_b)]
        both = a.notna() & b.notna()
        assert row.n_items == both.sum()
        tau, p = scipy.stats.kendalltau(
            a[both], b[both], alternative="greater", method="asymptotic"
        )
        if math.isnan(tau):
            assert math.isnan(row.tau_b) and math.isnan(row.p_value)
        else:
            assert row.tau_b == pytest.approx(tau, rel=1e-12, abs=1e-15)
            assert row.p_value == pytest.approx(p, rel=1e-9, abs=1e-15)


def test_anchoring_tau_b_is_scipy_s_between_ratings_and_prescribed_ratings(analysed):
    _scale, table, out = analysed
    anchoring = pd.read_csv(out / "anchoring.csv", dtype={"participant": str, "sketch_id": str})
    repeats = table[table["phase"] == "anchor_repeat"]
    assert len(anchoring) == repeats.groupby(["participant", "sketch_id"]).ngroups > 0
    for row in anchoring.itertuples():
        rows = repeats[
            (repeats["participant"] == row.participant) & (repeats["sketch_id"] == row.sketch_id)
        ].dropna(subset=["rating"])
        tau, _ = scipy.stats.kendalltau(rows["rating"], rows["anchor_rating"])
        if len(rows) < 3:  # a tau_b without a test is no result (docs/agreement.md)
            assert math.isnan(row.tau_b) and row.reason == "fewer than 3 shared images"
        elif math.isnan(tau):
            assert math.isnan(row.tau_b) and row.reason.startswith("constant: ")
        else:
            assert row.tau_b == pytest.approx(tau, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("scale", [Scale(1, 5, "high"), Scale(1, 9, "high")], ids=str)
def test_a_reversed_scale_gives_the_tables_of_its_mirror_image(tmp_path, scale):
    # The same ratings recorded as low + high - r on a low-is-best scale: every table the same.
    ratings = _dataset(tmp_path, scale)
    mirrored = ratings.assign(
        rating=(scale.low + scale.high) - ratings["rating"],
        anchor_rating=(scale.low + scale.high) - ratings["anchor_rating"],
    )
    mirrored.attrs = {**ratings.attrs, "scale": Scale(scale.low, scale.high, "low")}
    analyze_ratings(ratings, tmp_path / "reversed", OPTIONS, figures=False)
    analyze_ratings(mirrored, tmp_path / "mirror", OPTIONS, figures=False)
    written = sorted(
        p.name for p in (tmp_path / "mirror").iterdir() if p.suffix in (".csv", ".qrels")
    )
    assert "ground_truth.qrels" in written and "rating_distribution.csv" in written
    for name in written:
        assert (tmp_path / "reversed" / name).read_bytes() == (
            tmp_path / "mirror" / name
        ).read_bytes(), name
    page = (tmp_path / "reversed" / "report.html").read_text(encoding="utf-8")
    assert f"{scale.high} the best match" in page
    assert f"a recorded rating r as {scale.low + scale.high} - r" in page


def test_the_paper_s_scale_is_named_nowhere_on_the_report(tmp_path):
    # The paper's own scale adds no sentence: its report reads as before.
    ratings = _dataset(tmp_path, PAPER_SCALE)
    analyze_ratings(ratings, tmp_path / "out", OPTIONS, figures=False)
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "Ratings on a " not in page and "ties of a 7-point scale" in page


def test_a_pilot_on_another_scale_is_refused(tmp_path):
    ratings = _dataset(tmp_path, Scale(1, 5))
    pilot = _dataset(tmp_path / "pilot", PAPER_SCALE)
    with pytest.raises(
        InputError,
        match=r"^pilot: its rating scale 1-7 differs from the "
        r"study's 1-5; expected the same scale$",
    ):
        analyze_ratings(ratings, tmp_path / "out", OPTIONS, figures=False, pilot=pilot)


_scales = st.builds(
    lambda low, k, best: Scale(low, low + k - 1, best),
    st.integers(0, 3),
    st.integers(*SCALE_POINTS),
    st.sampled_from(["low", "high"]),
)


@given(scale=_scales, data=st.data())
@settings(max_examples=200, deadline=None)
def test_qrels_decide_grade_and_relevance_by_the_nearest_point(tmp_path_factory, scale, data):
    # Means as a study gives them: sums of ratings over up to 40 participants.
    n = data.draw(st.integers(1, 40))
    sums = data.draw(st.lists(st.integers(scale.low * n, scale.high * n), min_size=1, max_size=12))
    means = [s / n for s in sums]
    truth = pd.DataFrame(
        {"sketch_id": "s", "image_id": [f"i{j}" for j in range(len(means))], "mean_rating": means}
    )
    folder = tmp_path_factory.mktemp("qrels")
    write_qrels(truth, folder / "graded", scale=scale)
    write_binary_qrels(truth, folder / "binary", scale=scale)
    nearest = [_round_half_up(m) for m in means]
    assert _qrels(folder / "graded")["grade"].tolist() == [scale.high - p for p in nearest]
    assert _qrels(folder / "binary")["grade"].tolist() == [
        int(p - scale.low < scale.k // 2) for p in nearest
    ]
    # --relevant-below overrides the scale's cut.
    write_binary_qrels(truth, folder / "cut", scale=scale, relevant_below=scale.high + 1)
    assert set(_qrels(folder / "cut")["grade"]) == {1}


@given(scale=_scales, data=st.data())
@settings(max_examples=100, deadline=None)
def test_turning_into_the_paper_s_orientation_keeps_the_points_and_is_done_once(scale, data):
    points = st.one_of(st.none(), st.integers(scale.low, scale.high))
    values = data.draw(st.lists(points, min_size=1, max_size=20))
    table = pd.DataFrame(
        {
            "rating": pd.array(values, dtype="Int64"),
            "anchor_rating": pd.array(values[::-1], dtype="Int64"),
        }
    )
    table.attrs["scale"] = scale
    turned = in_paper_orientation(table)
    for column in ("rating", "anchor_rating"):
        expected = [
            None if v is None else (v if scale.best == "low" else scale.low + scale.high - v)
            for v in table[column].astype(object).where(table[column].notna(), None)
        ]
        assert (
            turned[column].astype(object).where(turned[column].notna(), None).tolist() == expected
        )
    assert in_paper_orientation(turned) is turned
    assert turned.attrs["scale"] == scale
