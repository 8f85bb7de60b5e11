"""The table of every measure (:data:`MEASURES`), as ``sbir-study evaluate`` reports them,
and the view of one run that the table's rows compute from."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from sbir_study.foundation.checks import InputError, check_option

from ... import _kernels
from .correlation import TauResult, system_tau_b, unreturned_tied_last
from .shrec import dcg_shrec, e_measure, first_tier, nearest_neighbor, second_tier
from .trec import average_precision, ndcg, precision_at_k, r_precision
from .zhang import average_rank, percentage_similarity_ranking, percentage_weighted_hits

__all__ = [
    "MEASURES",
    "Measure",
    "RunView",
    "measure",
    "measure_direction",
    "measure_values",
    "report_columns",
]


@dataclass(frozen=True)
class RunView:
    """One run as the measures see it, arrays of (sketches, judged images): from the run,
    the ground truth and (``weight``, ``ratings``) the participants' ratings."""

    rank: np.ndarray
    score: np.ndarray
    n_returned: np.ndarray
    mean_rating: np.ndarray
    grade: np.ndarray
    relevant: np.ndarray
    judged: np.ndarray
    alternative: str = "greater"
    weight: np.ndarray | None = None
    ratings: np.ndarray | None = None

    @cached_property
    def tau(self) -> TauResult:
        """tau_b and its p-value, computed once for the two measures."""
        return system_tau_b(self.score, self.mean_rating, alternative=self.alternative)

    @property
    def judged_ranks(self) -> np.ndarray:
        """Each judged image's rank among its sketch's judged images (1 = highest score,
        ties averaged, those not returned tied last)."""
        filled = unreturned_tied_last(self.score, self.judged)
        ranks = _kernels.average_ranks(np.where(self.judged, -filled, np.inf))
        return np.where(self.judged, ranks, np.nan)


def _given(array: np.ndarray | None, name: str) -> np.ndarray:
    """The view's ``weight`` or ``ratings``, refused when not given."""
    if array is None:
        raise InputError(f"{name}: the measure needs the participants' ratings (--ratings)")
    return array


@dataclass(frozen=True)
class Measure:
    """One measure as ``sbir-study evaluate`` reports it.

    ``name`` is its value in ``per_sketch.csv`` (with ``@k`` per cut-off when ``at_k``);
    ``needs`` what it uses beyond the ranks: ``"scores"``, ``"grades"``, ``"relevance"``
    (binary), ``"weight"`` or ``"ratings"`` (only with ``--ratings``), or ``"systems"``
    (derived in the summary from other measures, neither ``values`` nor ``values_at``).
    """

    name: str
    label: str
    better: str
    needs: str
    reference: str
    #: The values per sketch, from the run's view.
    values: Callable[[RunView], np.ndarray] | None = None
    #: The values per sketch at a cut-off k, for a measure reported at each cut-off.
    values_at: Callable[[RunView, int], np.ndarray] | None = None
    #: Averaged over the sketches in the summary (a mean p-value would mean nothing).
    summarised: bool = True
    #: A column of the report's comparison table (cut-off measures at k = 10).
    in_report: bool = True
    #: A headline number in ``evaluation.json``.
    headline: bool = False

    @property
    def at_k(self) -> bool:
        """Whether the measure is reported at each cut-off."""
        return self.values_at is not None


def _binary(
    function: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> Callable[[RunView], np.ndarray]:
    """A measure of the run's ranks and the binary relevance."""
    return lambda view: function(view.rank, view.relevant)


#: Every measure, in the order of ``per_sketch.csv``: adding a measure is adding a row.
MEASURES: tuple[Measure, ...] = (
    Measure(
        "tau_b",
        "tau_b",
        "higher",
        "scores",
        "Eitz et al. 2011, Sec. 3.2",
        headline=True,
        values=lambda v: v.tau.statistic,
    ),
    Measure(
        "tau_b_p_value",
        "p of tau_b",
        "lower",
        "scores",
        "Eitz et al. 2011, Sec. 3.1.2",
        values=lambda v: v.tau.pvalue,
        summarised=False,
        in_report=False,
    ),
    Measure(
        "tau_b_human_fraction",
        "of human",
        "higher",
        "systems",
        "Eitz et al. 2011, Sec. 3.2 (an ideal system performs like people)",
        headline=True,
    ),
    Measure(
        "ndcg",
        "nDCG",
        "higher",
        "grades",
        "trec_eval ndcg",
        headline=True,
        values=lambda v: ndcg(v.rank, v.grade),
    ),
    Measure(
        "ndcg",
        "nDCG",
        "higher",
        "grades",
        "trec_eval ndcg_cut",
        values_at=lambda v, k: ndcg(v.rank, v.grade, k=k),
    ),
    Measure(
        "p",
        "P",
        "higher",
        "relevance",
        "trec_eval P",
        values_at=lambda v, k: precision_at_k(v.rank, v.relevant, k=k),
    ),
    Measure(
        "ap",
        "AP",
        "higher",
        "relevance",
        "trec_eval map",
        _binary(average_precision),
        headline=True,
    ),
    Measure(
        "r_precision",
        "R-prec",
        "higher",
        "relevance",
        "trec_eval Rprec",
        _binary(r_precision),
        in_report=False,
    ),
    Measure("nn", "NN", "higher", "relevance", "SHREC 2018", _binary(nearest_neighbor)),
    Measure("ft", "FT", "higher", "relevance", "SHREC 2018", _binary(first_tier), headline=True),
    Measure("st", "ST", "higher", "relevance", "SHREC 2018", _binary(second_tier)),
    Measure(
        "e@32",
        "E@32",
        "higher",
        "relevance",
        "SHREC 2018",
        values=lambda v: e_measure(v.rank, v.relevant, k=32),
    ),
    Measure("dcg_shrec", "DCG (SHREC)", "higher", "relevance", "SHREC 2018", _binary(dcg_shrec)),
    Measure(
        "avg_rank",
        "avg rank",
        "lower",
        "relevance",
        "Zhang 2019, Sec. 12.3.5",
        values=lambda v: average_rank(v.rank, v.relevant, n_returned=v.n_returned, judged=v.judged),
    ),
    Measure(
        "pwh",
        "PWH",
        "higher",
        "weight",
        "Zhang 2019, Sec. 12.3",
        values_at=lambda v, k: percentage_weighted_hits(v.rank, _given(v.weight, "weight"), k=k),
    ),
    Measure(
        "psr",
        "PSR",
        "higher",
        "ratings",
        "Zhang 2019, Sec. 12.3",
        values=lambda v: percentage_similarity_ranking(
            v.judged_ranks, _given(v.ratings, "ratings")
        ),
    ),
)

_REPORT_CUTOFF = 10


def measure(name: str) -> Measure:
    """The :data:`MEASURES` row of a measure name (``"p@10"`` finds ``p``).

    Examples
    --------
    >>> measure("avg_rank").better, measure("ndcg@5").at_k, measure("ndcg").at_k
    ('lower', True, False)
    """
    base, _, k = name.partition("@")
    for row in MEASURES:
        if row.name == name and not row.at_k:
            return row
        if row.at_k and row.name == base and k.isdigit():
            return row
    check_option("measure", name, [m.name + ("@k" if m.at_k else "") for m in MEASURES])
    raise AssertionError("unreachable")  # check_option raised


def measure_direction(name: str) -> str:
    """``"higher"`` or ``"lower"``: which values of the measure ``name`` are better."""
    return measure(name).better


def measure_values(view: RunView, cutoffs: Sequence[int]) -> dict[str, np.ndarray]:
    """Every per-sketch measure of one run that its inputs allow, in :data:`MEASURES` order."""
    available = {"scores", "grades", "relevance"}
    if view.weight is not None:
        available.add("weight")
    if view.ratings is not None:
        available.add("ratings")
    values = {}
    for row in MEASURES:
        if row.needs not in available:
            continue
        if row.values_at is not None:
            for k in cutoffs:
                values[f"{row.name}@{k}"] = row.values_at(view, k)
        elif row.values is not None:
            values[row.name] = row.values(view)
    return values


def report_columns(cutoffs: Sequence[int]) -> list[tuple[str, str]]:
    """(measure, heading) of the report's comparison table, cut-off measures at k = 10 (or
    the first cut-off)."""
    k = _REPORT_CUTOFF if _REPORT_CUTOFF in cutoffs else (cutoffs[0] if cutoffs else None)
    columns = []
    for row in MEASURES:
        if not row.in_report:
            continue
        if row.at_k:
            if k is not None:
                columns.append((f"{row.name}@{k}", f"{row.label}@{k}"))
        else:
            columns.append((row.name, row.label))
    return columns
