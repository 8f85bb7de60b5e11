"""The options of ``analyze`` (:func:`~sbir_study.analysis.pipeline.analyze_ratings`),
checked when they are made."""

from __future__ import annotations

from dataclasses import dataclass

from sbir_study.foundation.checks import InputError, check_option, check_whole_number

from . import _kernels
from .limits import PAIRWISE_MODES, PAIRWISE_RATERS

__all__ = ["AnalysisOptions"]


@dataclass(frozen=True)
class AnalysisOptions:
    """Options of :func:`analyze_ratings`.

    ``bootstrap`` resamples give the intervals of Krippendorff's alpha,
    ``permutations`` the Skillings-Mack permutation p-values (sketches with at
    most :data:`~sbir_study.analysis.limits.PERMUTATION_RATERS_LIMIT` raters);
    ``pairwise_raters`` caps the raters of a sketch whose pairs enter the
    inter-user tau_b (:data:`~.limits.PAIRWISE_RATERS`; ``None``: every pair);
    ``reliability_splits`` random halves of the participants give the split-half
    reliability of the consensus. All four draw from ``seed``, so the same ratings give
    the same files.
    """

    alternative: str = "greater"
    alpha: float = 0.05
    pairwise: str = "auto"
    bootstrap: int = 1000
    permutations: int = 1000
    seed: int = 0
    pairwise_raters: int | None = PAIRWISE_RATERS
    reliability_splits: int = 1000

    def __post_init__(self) -> None:
        check_option("alternative", self.alternative, _kernels.ALTERNATIVES)
        check_option("pairwise", self.pairwise, PAIRWISE_MODES)
        if not (isinstance(self.alpha, float | int) and 0.0 < self.alpha < 1.0):
            raise InputError(
                f"alpha: expected a significance level between 0 and 1, got {self.alpha!r}"
            )
        for name in ("bootstrap", "permutations", "seed"):
            check_whole_number(name, getattr(self, name), 0)
        check_whole_number("pairwise_raters", self.pairwise_raters, 2, none_ok=True)
        check_whole_number("reliability_splits", self.reliability_splits, 1)
        _kernels.threads()  # a bad $SBIR_STUDY_THREADS is refused before the ratings are read
