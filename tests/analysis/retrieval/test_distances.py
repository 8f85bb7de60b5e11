"""Distance measures against SciPy, direct counts and worked examples (Zhang 2019, ch. 12.2)."""

import numpy as np
import pytest
import scipy.stats
from scipy.spatial import distance as sd

from sbir_study.analysis.retrieval.baseline import descriptor_similarity
from sbir_study.analysis.retrieval.distances import (
    DISTANCES,
    bin_similarity,
    chi_square,
    cosine,
    distance_matrix,
    histogram_intersection,
    hybrid_mass,
    mahalanobis,
    mass_based,
    mass_counts,
    minkowski,
    quadratic_form,
)
from sbir_study.foundation.checks import InputError


@pytest.fixture(scope="module")
def histograms():
    rng = np.random.default_rng(5)
    x = rng.random((6, 12)) ** 3
    y = rng.random((9, 12)) ** 3
    x[0, :4] = 0.0  # empty bins, in one histogram and in both
    y[0, :2] = 0.0
    return x / x.sum(axis=1, keepdims=True), y / y.sum(axis=1, keepdims=True)


def loop(function, x, y, **options):
    return np.array([[function(a, b, **options) for b in y] for a in x])


@pytest.mark.parametrize("p", [1, 2, 3, 1.5, np.inf])
def test_minkowski_equals_scipy(histograms, p):
    x, y = histograms
    expected = loop(sd.chebyshev, x, y) if np.isinf(p) else loop(sd.minkowski, x, y, p=p)
    np.testing.assert_allclose(minkowski(x, y, p=p), expected, rtol=1e-12)


def test_minkowski_below_one_is_the_formula():
    # Zhang's Eq. 12.1 with p = 1/2: (sqrt 1 + sqrt 4)^2 = 9.
    assert minkowski([[0.0, 0.0]], [[1.0, 4.0]], p=0.5)[0, 0] == pytest.approx(9.0)


def test_cosine_equals_scipy(histograms):
    x, y = histograms
    np.testing.assert_allclose(cosine(x, y), loop(sd.cosine, x, y), rtol=1e-12, atol=1e-15)
    assert np.isnan(cosine([[0.0, 0.0]], [[1.0, 2.0]])[0, 0])


def test_chi_square_is_scipys_statistic_with_the_mean_as_expected(histograms):
    x, y = histograms
    expected = np.array(
        [
            [
                scipy.stats.chisquare(a[(a + b) > 0], f_exp=((a + b) / 2)[(a + b) > 0]).statistic
                for b in y
            ]
            for a in x
        ]
    )
    np.testing.assert_allclose(chi_square(x, y), expected, rtol=1e-12)


def test_histogram_intersection(histograms):
    x, y = histograms
    # For histograms summing to one, 1 - sum min = half the city-block distance (SciPy).
    np.testing.assert_allclose(
        histogram_intersection(x, y), loop(sd.cityblock, x, y) / 2, rtol=1e-12, atol=1e-15
    )
    # Unnormalised, Eq. 12.12 divides by the smaller mass: min sums 3, common 2 -> 1 - 2/3.
    assert histogram_intersection([[1.0, 2.0, 0.0]], [[0.0, 2.0, 3.0]])[0, 0] == pytest.approx(
        1 - 2 / 3
    )


def test_quadratic_form_equals_scipy_mahalanobis_with_the_same_matrix(histograms):
    x, y = histograms
    rng = np.random.default_rng(2)
    root = rng.normal(size=(12, 12))
    a = root @ root.T + np.eye(12)
    np.testing.assert_allclose(
        quadratic_form(x, y, similarity=a), loop(sd.mahalanobis, x, y, VI=a), rtol=1e-10
    )
    # The identity matrix gives the Euclidean distance.
    np.testing.assert_allclose(
        quadratic_form(x, y, similarity=np.eye(12)), loop(sd.euclidean, x, y), rtol=1e-10
    )


def test_quadratic_form_with_the_descriptors_semidefinite_matrix_has_no_nan():
    a = descriptor_similarity(grid=2, bins=8)
    assert np.linalg.eigvalsh(a).min() > -1e-12  # semi-definite, with zero eigenvalues
    rng = np.random.default_rng(0)
    x = rng.random((5, 32))
    result = quadratic_form(x, x, similarity=a)
    assert np.isfinite(result).all()
    np.testing.assert_allclose(np.diag(result), 0.0, atol=1e-7)


def test_bin_similarity_is_zhangs_matrix():
    # Four orientations on a half circle, 45 degrees apart: distances 0, 1, 2, 1 steps,
    # the largest 2 steps; a_ij = 1 - d/2.
    a = bin_similarity(np.arange(4) * np.pi / 4, period=np.pi)
    np.testing.assert_allclose(a[0], [1.0, 0.5, 0.0, 0.5])
    with pytest.raises(InputError, match="not positive semi-definite"):
        quadratic_form([[1.0, 0.0]], [[0.0, 1.0]], similarity=[[1.0, 2.0], [2.0, 1.0]])


def test_mahalanobis_equals_scipy_with_the_reference_covariance():
    rng = np.random.default_rng(3)
    reference = rng.normal(size=(200, 5)) @ rng.normal(size=(5, 5))
    x, y = reference[:4], reference[10:17]
    inverse = np.linalg.inv(np.cov(reference, rowvar=False))
    np.testing.assert_allclose(
        mahalanobis(x, y, reference=reference), loop(sd.mahalanobis, x, y, VI=inverse), rtol=1e-8
    )


def direct_mass(x, y, reference, sigma):
    """The definition, counted point by point: reference values in each interval."""
    mass = np.empty((len(x), len(y), x.shape[1]), dtype=np.int64)
    for i, a in enumerate(x):
        for j, b in enumerate(y):
            low = np.minimum(a, b) - sigma
            high = np.maximum(a, b) + sigma
            mass[i, j] = ((reference >= low) & (reference <= high)).sum(axis=0)
    return mass


@pytest.mark.parametrize("sigma", [0.0, 0.05])
def test_mass_counts_equal_a_direct_count(sigma):
    rng = np.random.default_rng(4)
    reference = np.round(rng.random((300, 7)), 2)  # many equal values
    x, y = reference[:5], np.round(rng.random((8, 7)), 2)  # y not in the reference
    counts = mass_counts(x, y, reference=reference, sigma=sigma)
    expected = direct_mass(x, y, reference, sigma)
    np.testing.assert_array_equal(counts, expected)
    share = expected / len(reference)
    for p in (1.0, 2.0, 0.5):
        np.testing.assert_allclose(
            mass_based(x, y, reference=reference, p=p, sigma=sigma),
            np.mean(share**p, axis=2) ** (1 / p),
            rtol=1e-12,
        )
        difference = np.abs(x[:, None, :] - y[None, :, :])
        np.testing.assert_allclose(
            hybrid_mass(x, y, reference=reference, p=p, sigma=sigma),
            ((difference * expected) ** p).sum(axis=2) ** (1 / p),
            rtol=1e-12,
        )
        logged = difference * np.log(np.maximum(expected, 1))
        np.testing.assert_allclose(
            hybrid_mass(x, y, reference=reference, p=p, sigma=sigma, log_mass=True),
            (logged**p).sum(axis=2) ** (1 / p),
            rtol=1e-12,
        )


def test_mass_based_worked_example():
    # One dimension, data 0, 1, 2, 3, 3 (N = 5): between 1 and 3 lie 1, 2, 3, 3 (mass 4),
    # at 1 alone lies 1 (mass 1). m_1 = 4/5 and 1/5; h_1 = |1 - 3| * 4 = 8.
    reference = np.array([[0.0], [1.0], [2.0], [3.0], [3.0]])
    np.testing.assert_allclose(
        mass_based([[1.0]], [[3.0], [1.0]], reference=reference, p=1), [[0.8, 0.2]]
    )
    assert hybrid_mass([[1.0]], [[3.0]], reference=reference, p=1)[0, 0] == pytest.approx(8.0)


def test_distance_matrix_dispatches_every_name(histograms):
    x, y = histograms
    reference = np.vstack([x, y])
    for name in DISTANCES:
        result = distance_matrix(x, y, name, reference=reference, similarity=np.eye(12))
        assert result.shape == (6, 9), name
        assert np.isfinite(result).all(), name
    np.testing.assert_allclose(distance_matrix(x, y, "l2", p=3), minkowski(x, y, p=3))
    # Any Minkowski exponent by name: l3 is SciPy's minkowski with p = 3.
    np.testing.assert_allclose(
        distance_matrix(x, y, "l3"), loop(sd.minkowski, x, y, p=3), rtol=1e-12
    )
    with pytest.raises(InputError, match="distance: got 'l0'"):
        distance_matrix(x, y, "l0")


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: minkowski([[1.0]], [[1.0, 2.0]]), "same number of columns"),
        (lambda: minkowski([[1.0]], [[2.0]], p=0), "p: expected a number > 0"),
        (lambda: chi_square([[-1.0]], [[1.0]]), "values >= 0"),
        (lambda: mass_based([[1.0]], [[2.0]], reference=np.ones((3, 2))), "reference"),
        (lambda: mass_based([[1.0]], [[2.0]], reference=[[1.0]], sigma=-1), "sigma"),
        (lambda: distance_matrix([[1.0]], [[2.0]], "mp"), "needs a reference set"),
        (lambda: distance_matrix([[1.0]], [[2.0]], "quadratic"), "needs a bin-similarity"),
        (lambda: distance_matrix([[1.0]], [[2.0]], "chi2", p=2), "has no exponent"),
        (lambda: distance_matrix([[1.0]], [[2.0]], "cosin"), "did you mean .cosine."),
        (lambda: minkowski([[np.nan]], [[1.0]]), "finite"),
    ],
)
def test_bad_input_names_the_parameter(call, message):
    with pytest.raises(InputError, match=message):
        call()
