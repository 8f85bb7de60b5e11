"""Split-half reliability, Spearman-Brown, raters needed and the ICCs against SciPy,
pingouin and R's psych."""

import json
import shutil
import subprocess

import numpy as np
import pandas as pd
import pingouin
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sbir_study.analysis import _kernels, reliability
from sbir_study.analysis.cube import RatingCube
from sbir_study.foundation.checks import InputError


def _cube(values: np.ndarray) -> RatingCube:
    sketches, participants, images = values.shape
    return RatingCube(
        np.array([f"s{i}" for i in range(sketches)], dtype=object),
        np.array([f"{p:02d}" for p in range(participants)], dtype=object),
        tuple(np.array([f"i{j}" for j in range(images)], dtype=object) for _ in range(sketches)),
        values,
    )


@pytest.fixture(scope="module")
def sparse_cube() -> RatingCube:
    """3 sketches x 9 participants x 8 images: scattered missed ratings, participants who did
    not rate a sketch at all, and a sketch with 3 raters (its halves cannot have 2 each)."""
    rng = np.random.default_rng(7)
    latent = rng.normal(size=(3, 1, 8))
    values = np.clip(np.round(4 + 1.5 * latent + rng.normal(size=(3, 9, 8))), 1, 7)
    values[rng.random(values.shape) < 0.08] = np.nan
    values[0, [2, 5], :] = np.nan  # sketch s0: 7 raters, an odd number
    values[2, 3:, :] = np.nan  # sketch s2: 3 raters
    return _cube(values)


class _ScipyStatsF:
    """The F distribution's functions that the ICC calls, as scipy.stats computes them."""

    @staticmethod
    def fdtrc(dfn, dfd, x):
        return scipy.stats.f.sf(x, dfn, dfd)

    @staticmethod
    def fdtri(dfn, dfd, q):
        return scipy.stats.f.ppf(q, dfn, dfd)


_CELLS = st.one_of(st.sampled_from([1.0, 2.0, 2.0, 7.0, 0.5]), st.floats(-5, 5))


@st.composite
def _icc_matrices(draw):
    """Targets x raters matrices: any values, constant ones, and additive ones (target plus
    rater effect, whose error mean square rounds to 0 or just below it)."""
    n, k = draw(st.integers(2, 7)), draw(st.integers(2, 5))
    kind = draw(st.sampled_from(["any", "constant", "additive"]))
    if kind == "constant":
        return np.full((n, k), draw(_CELLS))
    if kind == "additive":
        targets = np.array(draw(st.lists(_CELLS, min_size=n, max_size=n)))
        raters = np.array(draw(st.lists(_CELLS, min_size=k, max_size=k)))
        return targets[:, None] + raters[None, :] / 3.0
    return draw(arrays(np.float64, (n, k), elements=_CELLS))


@settings(max_examples=300, deadline=None)
@given(_icc_matrices(), st.one_of(st.sampled_from([0.95, 0.99, 0.5]), st.floats(0.01, 0.99)))
def test_icc_p_values_and_intervals_are_those_of_scipy_stats_f_to_the_bit(y, confidence):
    # Reference: the same ICC with its F survival function and quantiles from
    # scipy.stats.f.sf and scipy.stats.f.ppf in place of scipy.special's fdtrc and fdtri.
    with np.errstate(all="ignore"):
        ours = reliability._icc_from_matrix(y, confidence)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(reliability, "special", _ScipyStatsF)
            theirs = reliability._icc_from_matrix(y, confidence)
    for mine, reference in zip(ours, theirs, strict=True):
        assert mine.keys() == reference.keys()
        values = [mine[key] for key in mine if key != "type"]
        expected = [reference[key] for key in mine if key != "type"]
        np.testing.assert_array_equal(values, expected)


@settings(max_examples=200, deadline=None)
@given(
    arrays(
        np.float64,
        st.tuples(st.integers(1, 5), st.integers(1, 12)),
        elements=st.one_of(
            st.sampled_from([1.0, 2.0, 2.0, 7.0, np.nan, -0.0, 0.0]), st.floats(-5, 5)
        ),
    )
)
def test_average_ranks_are_scipy_rankdata_omitting_missing_values(x):
    # Reference: scipy.stats.rankdata(x, axis=1, nan_policy="omit"), bit for bit.
    np.testing.assert_array_equal(
        _kernels.average_ranks(x), scipy.stats.rankdata(x, axis=1, nan_policy="omit")
    )


def test_split_half_values_match_scipy_on_the_same_halves(sparse_cube):
    # Reference: scipy.stats.kendalltau and spearmanr between the halves' mean ratings, the
    # halves drawn again here from the same seed: per sketch, its raters in order of their key,
    # the first n // 2 one half.
    n_splits, seed = 25, 3
    table = reliability.split_half_reliability(sparse_cube, n_splits=n_splits, seed=seed)
    keys = np.random.default_rng(seed).random((n_splits, len(sparse_cube.participants)))
    _, per_split_tau, per_split_rho = reliability._split_correlations(
        sparse_cube, reliability.split_halves(len(sparse_cube.participants), n_splits, seed)
    )
    for index in range(2):
        values = sparse_cube.sketch(index)
        raters = np.flatnonzero(~np.isnan(values).all(axis=1))
        taus, rhos = [], []
        for split in range(n_splits):
            ordered = raters[np.argsort(keys[split, raters])]
            first, second = ordered[: len(raters) // 2], ordered[len(raters) // 2 :]
            a = pd.DataFrame(values[first]).mean(axis=0)  # pandas skips the missing
            b = pd.DataFrame(values[second]).mean(axis=0)
            both = a.notna() & b.notna()
            taus.append(scipy.stats.kendalltau(a[both], b[both]).statistic)
            rhos.append(scipy.stats.spearmanr(a[both], b[both]).statistic)
        np.testing.assert_allclose(per_split_tau[index], taus, rtol=1e-12)
        np.testing.assert_allclose(per_split_rho[index], rhos, rtol=1e-12)
        row = table.iloc[index]
        assert row["n_raters"] == len(raters)
        np.testing.assert_allclose(row["tau_b_half"], np.mean(taus), rtol=1e-12)
        np.testing.assert_allclose(row["rho_half"], np.mean(rhos), rtol=1e-12)
        low, high = np.quantile(taus, [0.025, 0.975])
        np.testing.assert_allclose([row["tau_b_half_low"], row["tau_b_half_high"]], [low, high])
        sb = 2 * np.mean(rhos) / (1 + np.mean(rhos))
        np.testing.assert_allclose(row["rho_sb"], sb, rtol=1e-12)
        n_half = len(raters) / 2
        r1 = np.mean(rhos) / (n_half - (n_half - 1) * np.mean(rhos))
        np.testing.assert_allclose(row["r1"], r1, rtol=1e-12)


def test_a_sketch_with_fewer_than_two_raters_per_half_is_undefined_not_zero(sparse_cube):
    table = reliability.split_half_reliability(sparse_cube, n_splits=10, seed=0)
    row = table.set_index("sketch_id").loc["s2"]
    assert row["n_raters"] == 3
    assert row["n_undefined"] == 10
    assert np.isnan(row["tau_b_half"]) and np.isnan(row["rho_sb"])
    # The overall row averages over the sketches defined in each split: s0 and s1.
    per_split = table.set_index("sketch_id").loc["all"]
    assert per_split["n_undefined"] == 0
    assert np.isfinite(per_split["tau_b_half"])


def test_same_seed_same_table_other_seed_other_halves(sparse_cube):
    first = reliability.split_half_reliability(sparse_cube, n_splits=20, seed=5)
    again = reliability.split_half_reliability(sparse_cube, n_splits=20, seed=5)
    other = reliability.split_half_reliability(sparse_cube, n_splits=20, seed=6)
    pd.testing.assert_frame_equal(first, again)
    assert not np.allclose(first["tau_b_half"].iloc[:2], other["tau_b_half"].iloc[:2])


@pytest.mark.parametrize(
    ("r", "factor", "expected"),
    [
        # The split-half correction 2r / (1 + r) and the general prophecy
        # n r / (1 + (n - 1) r), Spearman (1910) and Brown (1910), evaluated by hand.
        (0.80, 2, 1.6 / 1.8),
        (0.50, 2, 1.0 / 1.5),
        (0.30, 10, 3.0 / 3.7),
        (0.60, 0.5, 0.3 / 0.7),
    ],
)
def test_spearman_brown_formula(r, factor, expected):
    np.testing.assert_allclose(reliability.spearman_brown(r, factor), expected, rtol=1e-12)


def test_spearman_brown_reproduces_the_published_icc_of_k_judges():
    # Shrout & Fleiss (1979)'s example of 6 targets rated by 4 judges (the data of
    # test_icc_on_the_shrout_fleiss_example): ICC(3,1) = .71 for one judge and ICC(3,4) = .91
    # for the mean of 4, which R's psych::ICC prints as 0.7148407 and 0.9093155 (Rscript,
    # psych 2.2.9); ICC(3,k) is the Spearman-Brown prophecy of ICC(3,1) for k judges.
    np.testing.assert_allclose(reliability.spearman_brown(0.7148, 4), 0.9093, atol=2e-4)
    np.testing.assert_allclose(reliability.single_rater_reliability(0.9093, 4), 0.7148, atol=2e-4)


@settings(max_examples=200, deadline=None)
@given(r1=st.floats(0.01, 0.99), target=st.floats(0.05, 0.95))
def test_raters_needed_is_the_fewest_that_reach_the_target(r1, target):
    # The inverted prophecy m = r (1 - r1) / (r1 (1 - r)) checked against the forward formula,
    # written out here: m raters reach the target, m - 1 do not.
    m = reliability.raters_needed(target, r1)
    assert m >= 1
    forward = lambda k: k * r1 / (1 + (k - 1) * r1)  # noqa: E731
    assert forward(m) >= target - 1e-9
    if m > 1:
        assert forward(m - 1) < target


def test_raters_needed_known_values_and_bad_input():
    # r1 = 0.2, target 0.8: 0.8 * 0.8 / (0.2 * 0.2) = 16 raters exactly.
    assert reliability.raters_needed(0.8, 0.2) == 16
    # r1 = 0.25, target 0.9: 0.9 * 0.75 / (0.25 * 0.1) = 27.
    assert reliability.raters_needed(0.9, 0.25) == 27
    assert np.isnan(reliability.raters_needed(0.8, -0.1))
    with pytest.raises(InputError, match="reliability"):
        reliability.raters_needed(1.2, 0.3)


def test_single_rater_reliability_round_trip():
    r1 = reliability.single_rater_reliability(0.9, 14)
    np.testing.assert_allclose(reliability.spearman_brown(r1, 14), 0.9)
    predicted = reliability.predicted_reliability(
        pd.DataFrame({"sketch_id": ["s"], "r1": [r1]}), [1, 14, 28]
    )
    np.testing.assert_allclose(predicted["predicted"], [r1, 0.9, 28 * r1 / (1 + 27 * r1)])


def _pingouin_icc(matrix: np.ndarray) -> pd.DataFrame:
    """pingouin's ICC2, ICC2k, ICC3, ICC3k of a targets x raters matrix (missing: NaN)."""
    long = pd.DataFrame(matrix).rename_axis("target").reset_index()
    long = long.melt(id_vars="target", var_name="rater", value_name="rating")
    table = pingouin.intraclass_corr(
        long, targets="target", raters="rater", ratings="rating", nan_policy="omit"
    )
    return table.set_index("Type").loc[["ICC(A,1)", "ICC(A,k)", "ICC(C,1)", "ICC(C,k)"]]


# pingouin's own call of DataFrame.dropna(inplace=True), deprecated by pandas 3.1.
@pytest.mark.filterwarnings("ignore:The inplace keyword")
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_icc_matches_pingouin(seed):
    # Reference: pingouin.intraclass_corr (ICC2 = ICC(A,1), ICC2k, ICC3 = ICC(C,1), ICC3k):
    # values, F, df, p; its CI95 is rounded to 2 decimals, so the intervals to 0.005.
    rng = np.random.default_rng(seed)
    values = np.clip(
        np.round(
            4
            + 1.2 * rng.normal(size=(1, 1, 12))
            + rng.normal(size=(1, 6, 12))
            + rng.normal(size=(1, 6, 1))
        ),
        1,
        7,
    )
    values[0, 2, 3] = values[0, 4, 7] = np.nan  # two images leave the complete cases
    ours = reliability.intraclass_correlations(_cube(values))
    ours = ours[ours["sketch_id"] == "s0"]
    reference = _pingouin_icc(values[0].T)
    assert (ours["n_images"] == 10).all() and (ours["n_raters"] == 6).all()
    np.testing.assert_allclose(ours["icc"], reference["ICC"], rtol=1e-10)
    np.testing.assert_allclose(ours["f"], reference["F"], rtol=1e-10)
    np.testing.assert_array_equal(ours["df1"], reference["df1"])
    np.testing.assert_array_equal(ours["df2"], reference["df2"])
    np.testing.assert_allclose(ours["p_value"], reference["pval"], rtol=1e-8)
    ci = np.vstack(reference["CI95"].to_numpy())
    np.testing.assert_allclose(ours["ci_low"], ci[:, 0], atol=0.005 + 1e-12)
    np.testing.assert_allclose(ours["ci_high"], ci[:, 1], atol=0.005 + 1e-12)


def test_icc_on_the_shrout_fleiss_example():
    # Shrout & Fleiss (1979)'s example, 6 targets x 4 judges: ICC(2,1) = .29, ICC(2,4) = .62,
    # ICC(3,1) = .71, ICC(3,4) = .91 as the paper reports them (psych::ICC reproduces them).
    judges = np.array(
        [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]],
        dtype=float,
    )
    table = reliability.intraclass_correlations(_cube(judges.T[None, :, :]))
    icc = table[table["sketch_id"] == "s0"].set_index("type")["icc"]
    np.testing.assert_allclose(icc.to_numpy(), [0.29, 0.62, 0.71, 0.91], atol=0.005)


def test_overall_icc_is_undefined_without_a_complete_pair():
    values = np.full((2, 4, 5), np.nan)
    values[0, :2] = [[1, 2, 3, 4, 5], [2, 1, 3, 5, 4]]
    values[1, 2:] = [[1, 2, 3, 4, 5], [1, 3, 2, 4, 5]]
    table = reliability.intraclass_correlations(_cube(values))
    overall = table[table["sketch_id"] == "all"]
    assert overall["icc"].isna().all() and (overall["n_images"] == 0).all()
    assert table[table["sketch_id"] == "s0"]["icc"].notna().all()


_R_ICC = """
m <- as.matrix(read.csv(commandArgs(TRUE)[1], header = FALSE))
r <- psych::ICC(m, lmer = FALSE)$results
r <- r[match(c("ICC2", "ICC2k", "ICC3", "ICC3k"), r$type), ]
write.csv(data.frame(icc = r$ICC, f = r$F, df1 = r$df1, df2 = r$df2, p = r$p,
                     low = r[["lower bound"]], high = r[["upper bound"]]),
          stdout(), row.names = FALSE)
"""


@pytest.mark.skipif(
    shutil.which("Rscript") is None,
    reason="Rscript is not installed (the "
    "Makefile's APT_PACKAGES install r-base-core and r-cran-psych)",
)
def test_icc_matches_r_psych(tmp_path):
    # Reference: R psych::ICC(m, lmer = FALSE), rows ICC2, ICC2k, ICC3, ICC3k, run here.
    rng = np.random.default_rng(11)
    values = np.clip(np.round(4 + rng.normal(size=(1, 1, 15)) + rng.normal(size=(1, 7, 15))), 1, 7)
    path = tmp_path / "m.csv"
    np.savetxt(path, values[0].T, delimiter=",", fmt="%g")
    script = tmp_path / "icc.R"
    script.write_text(_R_ICC)
    result = subprocess.run(
        ["Rscript", str(script), str(path)], capture_output=True, text=True, check=True, timeout=120
    )
    reference = pd.read_csv(pd.io.common.StringIO(result.stdout))
    ours = reliability.intraclass_correlations(_cube(values))
    ours = ours[ours["sketch_id"] == "s0"]
    np.testing.assert_allclose(ours["icc"], reference["icc"], rtol=1e-7)
    np.testing.assert_allclose(ours["f"], reference["f"], rtol=1e-7)
    np.testing.assert_array_equal(ours["df2"], reference["df2"])
    np.testing.assert_allclose(ours["p_value"], reference["p"], rtol=1e-6)
    np.testing.assert_allclose(ours["ci_low"], reference["low"], rtol=1e-6)
    np.testing.assert_allclose(ours["ci_high"], reference["high"], rtol=1e-6)


@pytest.fixture(scope="module")
def noisy_sketch_table(tmp_path_factory):
    """8 participants rate 3 sketches x 10 images: s0 and s1 follow one order closely, s2 is
    mostly noise, so its consensus falls short of 0.8 with 8 raters."""
    rng = np.random.default_rng(12)
    rows = []
    for sketch, noise in (("s0", 0.6), ("s1", 0.6), ("s2", 6.0)):
        order = rng.permutation(10)
        for p in range(8):
            ratings = np.clip(np.round(1 + order * 0.65 + rng.normal(0, noise, 10)), 1, 7)
            rows += [(f"p{p}", sketch, f"i{i}", int(r)) for i, r in enumerate(ratings)]
    path = tmp_path_factory.mktemp("reliability") / "ratings.csv"
    pd.DataFrame(rows, columns=["participant", "sketch_id", "image_id", "rating"]).to_csv(
        path, index=False
    )
    return path


def test_analyze_writes_the_reliability_tables_summary_and_report(noisy_sketch_table, tmp_path):
    from tests.helpers import run_main

    out = tmp_path / "analysis"
    # The figure is drawn in test_figures_report.py; here the tables, summary and report.
    options = ["--no-figures", "--bootstrap", "0", "--permutations", "0"]
    result = run_main(
        "analyze",
        str(noisy_sketch_table),
        "--out",
        str(out),
        *options,
        "--reliability-splits",
        "200",
    )
    assert result.returncode == 0, result.stderr
    assert "Reliability of the consensus (split halves, Spearman-Brown): tau_b" in result.stdout
    split_half = pd.read_csv(out / "reliability.csv")
    assert split_half["sketch_id"].tolist() == ["s0", "s1", "s2", "all"]
    assert (split_half["n_splits"] == 200).all()
    icc = pd.read_csv(out / "icc.csv")
    assert set(icc["type"]) == set(reliability.ICC_TYPES) and len(icc) == 16
    prophecy = pd.read_csv(out / "reliability_prophecy.csv")
    assert set(prophecy["sketch_id"]) == {"s0", "s1", "s2", "all"}
    summary = json.loads((out / "summary.json").read_text())["reliability"]
    overall = split_half.set_index("sketch_id").loc["all"]
    assert summary["tau_b_sb"] == pytest.approx(overall["tau_b_sb"])
    assert summary["icc2k"] == pytest.approx(
        icc.set_index(["sketch_id", "type"]).loc[("all", "ICC(2,k)"), "icc"]
    )
    noisy = split_half.set_index("sketch_id").loc["s2"]
    assert noisy["rho_sb"] < 0.8 < split_half.set_index("sketch_id").loc["s0", "rho_sb"]
    needed = reliability.raters_needed(0.8, noisy["r1"])
    assert summary["below_target"] == [
        {"sketch_id": "s2", "rho_sb": pytest.approx(noisy["rho_sb"]), "raters_needed": needed}
    ]
    assert needed > 8
    page = (out / "report.html").read_text(encoding="utf-8")
    assert f"With {needed} raters the consensus of sketch s2 would reach 0.8." in page


def test_analyze_refuses_zero_splits(noisy_sketch_table, tmp_path):
    from tests.helpers import assert_input_error, run_main

    result = run_main(
        "analyze",
        str(noisy_sketch_table),
        "--out",
        str(tmp_path / "a"),
        "--reliability-splits",
        "0",
    )
    assert_input_error(result, "--reliability-splits")


@settings(max_examples=60, deadline=None)
@given(
    n_raters=st.integers(1, 7),
    n_images=st.integers(2, 6),
    missing=st.floats(0.0, 0.4),
    seed=st.integers(0, 2**16),
)
def test_split_half_is_undefined_exactly_where_a_half_lacks_two_raters(
    n_raters, n_images, missing, seed
):
    # Decided from the ratings alone: a sketch is undefined in every split when it has fewer
    # than 4 raters, and otherwise only where a half's consensus leaves fewer than 2 images
    # untied; every defined value is a correlation, and Spearman-Brown keeps it in [-1, 1].
    rng = np.random.default_rng(seed)
    values = rng.integers(1, 8, size=(1, 7, n_images)).astype(float)
    values[rng.random(values.shape) < missing] = np.nan
    values[0, n_raters:, :] = np.nan
    table = reliability.split_half_reliability(_cube(values), n_splits=8, seed=seed)
    row = table.iloc[0]
    raters = int((~np.isnan(values[0])).any(axis=1).sum())
    assert row["n_raters"] == raters
    if raters < 4:
        assert row["n_undefined"] == 8 and np.isnan(row["rho_half"])
    for column in ("tau_b_half", "rho_half", "tau_b_sb", "rho_sb"):
        assert np.isnan(row[column]) or -1.0 <= row[column] <= 1.0
    assert 0 <= row["n_undefined"] <= 8
    assert np.isnan(row["rho_half"]) == (row["n_undefined"] == 8)
