"""Distance measures between feature vectors (Zhang 2019, ch. 12.2).

Every function takes ``x`` (m x d, the queries) and ``y`` (n x d, the collection) and
returns the m x n distances, smaller meaning more similar. SciPy's
:func:`~scipy.spatial.distance.cdist` computes the measures it has; the histogram and
mass-based measures, which it lacks, are written here and tested against SciPy and
worked examples. :data:`DISTANCES` maps the command line's names to the functions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import numpy as np
from numpy.typing import ArrayLike

from sbir_study.foundation.checks import InputError, check_option

__all__ = [
    "DISTANCES",
    "bin_similarity",
    "chi_square",
    "cosine",
    "distance_matrix",
    "histogram_intersection",
    "hybrid_mass",
    "mahalanobis",
    "mass_based",
    "mass_counts",
    "minkowski",
    "quadratic_form",
    "resolve_distance",
]


def _cdist(x: np.ndarray, y: np.ndarray, metric: str, **options: float) -> np.ndarray:
    # Imported when used, so that importing the package does not load scipy.spatial.
    from scipy.spatial.distance import cdist

    return cdist(x, y, metric, **options)


def _pair(x: ArrayLike, y: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """``x`` and ``y`` as checked 2-D float arrays of one width."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim == 1:
        x = x[None, :]
    if y.ndim == 1:
        y = y[None, :]
    if x.ndim != 2 or y.ndim != 2 or x.shape[1] != y.shape[1]:
        raise InputError(
            f"x, y: expected two 2-D arrays with the same number of columns (dimensions), "
            f"got shapes {x.shape} and {y.shape}"
        )
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise InputError("x, y: expected finite feature values, found NaN or infinity")
    return x, y


def _blocks(n_rows: int, n_cols: int, width: int, budget: int = 32 * 2**20) -> Iterator[slice]:
    """Row blocks of ``x`` whose (rows, n, d) intermediate stays near ``budget`` bytes."""
    step = max(1, budget // max(1, n_cols * width * 8))
    for start in range(0, n_rows, step):
        yield slice(start, min(start + step, n_rows))


def minkowski(x: ArrayLike, y: ArrayLike, *, p: float = 2.0) -> np.ndarray:
    """Minkowski distance L_p = (sum_i |x_i - y_i|^p)^(1/p), L_inf = max_i |x_i - y_i|
    (Zhang 2019, Sec. 12.2.2, Eqs. 12.1-12.4; SciPy's cdist). p < 1 is not a metric (the
    triangle inequality fails, Zhang's Fig. 12.1a).

    Examples
    --------
    >>> minkowski([[0, 0]], [[3, 4], [1, 1]], p=2)
    array([[5.        , 1.41421356]])
    >>> minkowski([[0, 0]], [[3, 4]], p=np.inf)
    array([[4.]])
    """
    x, y = _pair(x, y)
    if not (isinstance(p, int | float) and p > 0):
        raise InputError(f"p: expected a number > 0 or inf, got {p!r}")
    if np.isinf(p):
        return _cdist(x, y, "chebyshev")
    return _cdist(x, y, "minkowski", p=float(p))


def cosine(x: ArrayLike, y: ArrayLike) -> np.ndarray:
    """Cosine distance 1 - x.y / (|x| |y|) (Zhang 2019, Eq. 12.9); NaN for a zero vector,
    which has no direction.

    Examples
    --------
    >>> cosine([[1, 0]], [[2, 0], [0, 3], [1, 1]]).round(6)
    array([[0.      , 1.      , 0.292893]])
    """
    x, y = _pair(x, y)
    with np.errstate(invalid="ignore", divide="ignore"):
        result = _cdist(x, y, "cosine")
    zero = (np.linalg.norm(x, axis=1) == 0)[:, None] | (np.linalg.norm(y, axis=1) == 0)[None, :]
    result[zero] = np.nan
    return result


def chi_square(x: ArrayLike, y: ArrayLike) -> np.ndarray:
    """Chi-square statistic sum_i (x_i - m_i)^2 / m_i, m_i = (x_i + y_i) / 2, between
    histograms (Zhang 2019, Sec. 12.2.5, Eq. 12.11; ``scipy.stats.chisquare(x, f_exp=m)``
    for equal sums); bins empty in both add nothing.

    Examples
    --------
    >>> chi_square([[0.5, 0.5, 0.0]], [[0.25, 0.25, 0.5], [0.5, 0.5, 0.0]])
    array([[0.33333333, 0.        ]])
    """
    x, y = _pair(x, y)
    _non_negative(x, y, "chi_square")
    result = np.empty((x.shape[0], y.shape[0]))
    for rows in _blocks(x.shape[0], y.shape[0], x.shape[1]):
        a = x[rows, None, :]
        b = y[None, :, :]
        total = a + b
        with np.errstate(invalid="ignore", divide="ignore"):
            terms = np.where(total > 0, (a - b) ** 2 / (2.0 * total), 0.0)
        result[rows] = terms.sum(axis=2)
    return result


def histogram_intersection(x: ArrayLike, y: ArrayLike) -> np.ndarray:
    """Histogram intersection distance 1 - sum_i min(x_i, y_i) / min(|x|, |y|) (Zhang 2019,
    Sec. 12.2.6, Eqs. 12.12, 12.14): 0 for identical histograms, 1 for disjoint ones.

    Examples
    --------
    >>> histogram_intersection([[0.5, 0.5, 0.0]], [[0.25, 0.25, 0.5]])
    array([[0.5]])
    """
    x, y = _pair(x, y)
    _non_negative(x, y, "histogram_intersection")
    common = np.empty((x.shape[0], y.shape[0]))
    for rows in _blocks(x.shape[0], y.shape[0], x.shape[1]):
        common[rows] = np.minimum(x[rows, None, :], y[None, :, :]).sum(axis=2)
    smaller = np.minimum(x.sum(axis=1)[:, None], y.sum(axis=1)[None, :])
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(smaller > 0, 1.0 - common / smaller, np.nan)


def quadratic_form(x: ArrayLike, y: ArrayLike, *, similarity: ArrayLike) -> np.ndarray:
    """Quadratic-form distance sqrt((x - y)^T A (x - y)) (Zhang 2019, Eq. 12.15), A the
    ``similarity`` of every two bins (symmetric, positive semi-definite: see
    :func:`bin_similarity`). SciPy's cdist "mahalanobis" with VI=A, but a squared
    distance rounded below 0 is 0, not NaN.

    Examples
    --------
    >>> quadratic_form([[1, 0]], [[0, 1]], similarity=np.eye(2))
    array([[1.41421356]])
    """
    x, y = _pair(x, y)
    a = np.asarray(similarity, dtype=np.float64)
    d = x.shape[1]
    if a.shape != (d, d):
        raise InputError(f"similarity: expected a {d} x {d} matrix, got shape {a.shape}")
    if not np.allclose(a, a.T):
        raise InputError("similarity: expected a symmetric matrix")
    return _quadratic(x, y, a, "similarity")


def _quadratic(x: np.ndarray, y: np.ndarray, a: np.ndarray, name: str) -> np.ndarray:
    """sqrt((x - y)^T a (x - y)) in row blocks; ``name`` names ``a`` in the error."""
    squared = np.empty((x.shape[0], y.shape[0]))
    for rows in _blocks(x.shape[0], y.shape[0], x.shape[1]):
        difference = x[rows, None, :] - y[None, :, :]
        squared[rows] = np.einsum("mnd,mnd->mn", difference @ a, difference)
    tolerance = (
        1e-9
        * max(1.0, float(np.abs(a).max()))
        * max(1.0, float(np.abs(x).max()), float(np.abs(y).max())) ** 2
    )
    if (squared < -tolerance).any():
        raise InputError(
            f"{name}: not positive semi-definite (a squared distance came out negative)"
        )
    return np.sqrt(np.maximum(squared, 0.0))


def bin_similarity(centres: ArrayLike, *, period: float | None = None) -> np.ndarray:
    """Zhang's bin similarity a_ij = 1 - d_ij / d_max from the bins' ``centres``, (d,) or
    (d, k); with ``period`` (a circular quantity: orientation, hue) d_ij is the shorter
    way round.

    Examples
    --------
    >>> bin_similarity([0.0, 1.0, 2.0])
    array([[1. , 0.5, 0. ],
           [0.5, 1. , 0.5],
           [0. , 0.5, 1. ]])
    """
    centres = np.asarray(centres, dtype=np.float64)
    if centres.ndim == 1:
        centres = centres[:, None]
    if period is not None:
        if centres.shape[1] != 1:
            raise InputError("period: only for one-dimensional bin centres")
        gap = np.abs(centres - centres.T) % period
        distances = np.minimum(gap, period - gap)
    else:
        distances = _cdist(centres, centres, "euclidean")
    largest = distances.max()
    if largest == 0:
        return np.ones_like(distances)
    return 1.0 - distances / largest


def mahalanobis(x: ArrayLike, y: ArrayLike, *, reference: ArrayLike) -> np.ndarray:
    """Mahalanobis distance sqrt((x - y) Sigma^-1 (x - y)^T), Sigma the covariance of
    ``reference`` (N x d) (Zhang 2019, Sec. 12.2.8, Eq. 12.19; SciPy's cdist "mahalanobis").
    Sigma^-1 is the pseudo-inverse: histograms that sum to one have a singular covariance.
    """
    x, y = _pair(x, y)
    reference = np.asarray(reference, dtype=np.float64)
    if reference.ndim != 2 or reference.shape[1] != x.shape[1] or reference.shape[0] < 2:
        raise InputError(
            f"reference: expected at least 2 vectors of {x.shape[1]} dimensions, got shape "
            f"{reference.shape}"
        )
    inverse = np.linalg.pinv(np.cov(reference, rowvar=False), hermitian=True)
    return _quadratic(x, y, (inverse + inverse.T) / 2.0, "reference covariance")


def _positions(columns: np.ndarray, v: np.ndarray, sigma: float) -> tuple[np.ndarray, ...]:
    """Per row of ``v`` and dimension i, the reference values below v_i - sigma and those at
    most v_i + sigma: two binary searches in the sorted ``columns`` (d x N), not a scan."""
    lower = np.empty(v.shape, dtype=np.int64)
    upper = np.empty(v.shape, dtype=np.int64)
    for i, column in enumerate(columns):
        lower[:, i] = np.searchsorted(column, v[:, i] - sigma, side="left")
        upper[:, i] = np.searchsorted(column, v[:, i] + sigma, side="right")
    return lower, upper


def _mass_blocks(
    x: np.ndarray, y: np.ndarray, reference: ArrayLike, sigma: float
) -> Iterator[tuple[slice, np.ndarray, int]]:
    """(rows of x, their (rows, n, d) data mass, N), block by block: the whole (m, n, d)
    mass array never exists at once."""
    columns = _sorted_reference(reference, x.shape[1])
    sigma = _sigma(sigma)
    x_lower, x_upper = _positions(columns, x, sigma)
    y_lower, y_upper = _positions(columns, y, sigma)
    for rows in _blocks(x.shape[0], y.shape[0], x.shape[1]):
        mass = np.maximum(x_upper[rows, None, :], y_upper[None, :, :]) - np.minimum(
            x_lower[rows, None, :], y_lower[None, :, :]
        )
        yield rows, mass, columns.shape[1]


def mass_counts(
    x: ArrayLike, y: ArrayLike, *, reference: ArrayLike, sigma: float = 0.0
) -> np.ndarray:
    """Data mass |R_i(x, y)| of every pair and dimension, (m, n, d): the reference vectors
    whose i-th value lies in [min(x_i, y_i) - sigma, max(x_i, y_i) + sigma], counted as
    max(upper(x_i), upper(y_i)) - min(lower(x_i), lower(y_i)) (both positions grow with
    the value).

    Examples
    --------
    >>> reference = np.array([[0.0], [1.0], [2.0], [3.0], [3.0]])
    >>> mass_counts([[1.0]], [[3.0], [1.0]], reference=reference)[..., 0]
    array([[4, 1]])
    """
    x, y = _pair(x, y)
    return np.concatenate([mass for _, mass, _ in _mass_blocks(x, y, reference, sigma)], axis=0)


def mass_based(
    x: ArrayLike, y: ArrayLike, *, reference: ArrayLike, p: float = 2.0, sigma: float = 0.0
) -> np.ndarray:
    """Mass-based dissimilarity m_p = ((1/d) sum_i (|R_i(x, y)| / N)^p)^(1/p), |R_i| the
    data mass of :func:`mass_counts` in ``reference`` (N x d, usually the collection,
    queries included), each interval widened by ``sigma`` (Zhang 2019, Sec. 12.2.3,
    Eq. 12.5; Aryal et al. 2017, Knowl. Inf. Syst. 53(2)).

    Examples
    --------
    >>> reference = np.array([[0.0], [1.0], [2.0], [3.0], [3.0]])
    >>> mass_based([[1.0]], [[3.0], [1.0]], reference=reference, p=1)
    array([[0.8, 0.2]])
    """
    x, y = _pair(x, y)
    p = _exponent(p)
    result = np.empty((x.shape[0], y.shape[0]))
    for rows, mass, size in _mass_blocks(x, y, reference, sigma):
        result[rows] = np.mean((mass / size) ** p, axis=2) ** (1.0 / p)
    return result


def hybrid_mass(
    x: ArrayLike,
    y: ArrayLike,
    *,
    reference: ArrayLike,
    p: float = 2.0,
    sigma: float = 0.0,
    log_mass: bool = False,
) -> np.ndarray:
    """Hybrid measure h_p = (sum_i (|x_i - y_i| |R_i(x, y)|)^p)^(1/p), each difference
    weighted by the data mass between the values; ``log_mass``: h'_p, weighted by
    log |R_i| (an empty interval by log 1 = 0) (Zhang 2019, Sec. 12.2.3, Eqs. 12.6-12.7).

    Examples
    --------
    >>> reference = np.array([[0.0], [1.0], [2.0], [3.0], [3.0]])
    >>> hybrid_mass([[1.0]], [[3.0]], reference=reference, p=1)
    array([[8.]])
    """
    x, y = _pair(x, y)
    p = _exponent(p)
    result = np.empty((x.shape[0], y.shape[0]))
    for rows, mass, _ in _mass_blocks(x, y, reference, sigma):
        weight = np.log(np.maximum(mass, 1)) if log_mass else mass
        terms = np.abs(x[rows, None, :] - y[None, :, :]) * weight
        result[rows] = (terms**p).sum(axis=2) ** (1.0 / p)
    return result


def _sorted_reference(reference: ArrayLike, dimensions: int) -> np.ndarray:
    """The checked reference set's columns, each sorted once (d x N)."""
    reference = np.asarray(reference, dtype=np.float64)
    if reference.ndim != 2 or reference.shape[1] != dimensions or reference.shape[0] < 1:
        raise InputError(
            f"reference: expected an N x {dimensions} array of at least one vector, got shape "
            f"{reference.shape}"
        )
    if not np.isfinite(reference).all():
        raise InputError("reference: expected finite values, found NaN or infinity")
    return np.sort(reference, axis=0).T


def _sigma(sigma: object) -> float:
    if not (isinstance(sigma, int | float) and sigma >= 0 and np.isfinite(sigma)):
        raise InputError(f"sigma: expected a number >= 0, got {sigma!r}")
    return float(sigma)


def _exponent(p: object) -> float:
    if not (isinstance(p, int | float) and p > 0 and np.isfinite(p)):
        raise InputError(f"p: expected a finite number > 0, got {p!r}")
    return float(p)


def _non_negative(x: np.ndarray, y: np.ndarray, name: str) -> None:
    if (x < 0).any() or (y < 0).any():
        raise InputError(f"{name}: expected histograms (values >= 0), found a negative value")


#: The distances by their command-line names, with their fixed options.
DISTANCES: dict[str, tuple[Callable[..., np.ndarray], dict[str, object]]] = {
    "l1": (minkowski, {"p": 1.0}),
    "l2": (minkowski, {"p": 2.0}),
    "linf": (minkowski, {"p": np.inf}),
    "l0.5": (minkowski, {"p": 0.5}),
    "cosine": (cosine, {}),
    "chi2": (chi_square, {}),
    "hi": (histogram_intersection, {}),
    "quadratic": (quadratic_form, {}),
    "mahalanobis": (mahalanobis, {}),
    "mp": (mass_based, {"p": 2.0}),
    "hp": (hybrid_mass, {"p": 2.0}),
    "hp_log": (hybrid_mass, {"p": 2.0, "log_mass": True}),
}


def resolve_distance(name: str) -> tuple[Callable[..., np.ndarray], dict[str, object]]:
    """The function and fixed options of a distance name (see :func:`distance_matrix`)."""
    if name not in DISTANCES and re.fullmatch(r"l\d+(\.\d+)?", str(name)):
        p = float(name[1:])
        if p > 0:
            return minkowski, {"p": p}
    check_option("distance", name, DISTANCES)
    return DISTANCES[name]


def distance_matrix(
    x: ArrayLike,
    y: ArrayLike,
    name: str,
    *,
    reference: ArrayLike | None = None,
    similarity: ArrayLike | None = None,
    p: float | None = None,
) -> np.ndarray:
    """The distances between the rows of ``x`` and ``y`` under ``name``: a key of
    :data:`DISTANCES`, or ``l<p>`` for any Minkowski exponent p > 0 (``l3``, ``l0.25``).
    ``mahalanobis``, ``mp``, ``hp`` and ``hp_log`` need ``reference``, ``quadratic``
    ``similarity``; ``p`` overrides the exponent of the Minkowski and mass measures.

    Examples
    --------
    >>> distance_matrix([[0, 0]], [[3, 4]], "l1")
    array([[7.]])
    >>> distance_matrix([[0, 0]], [[3, 4]], "l3").round(4)
    array([[4.4979]])
    """
    function, fixed = resolve_distance(name)
    options = dict(fixed)
    if p is not None:
        if "p" not in options:
            raise InputError(f"p: the distance {name!r} has no exponent")
        options["p"] = p
    if function in (mahalanobis, mass_based, hybrid_mass):
        if reference is None:
            raise InputError(f"reference: the distance {name!r} needs a reference set")
        options["reference"] = reference
    if function is quadratic_form:
        if similarity is None:
            raise InputError(f"similarity: the distance {name!r} needs a bin-similarity matrix")
        options["similarity"] = similarity
    return function(x, y, **options)
