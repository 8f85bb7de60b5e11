"""Analysis of sketch/image rating studies (Eitz et al. 2011, Sec. 3).

Loading and validating ratings, rank agreement (Kendall's tau_b and W), the
consensus ground truth, anchoring consistency, the distribution of ratings,
significance summaries of test families, and simulated raters. Nothing here
imports PsychoPy or matplotlib.
"""

from ._checks import InputError, check_option
from .agreement import (
    KendallTauResult,
    KendallWResult,
    PairwiseTauResult,
    inter_rater_tau,
    inter_rater_tau_by_sketch,
    kendall_tau_b,
    kendall_w,
    kendall_w_by_sketch,
    pairwise_kendall_tau,
)
from .consensus import (
    anchoring_consistency,
    consensus_ground_truth,
    rater_vs_consensus,
    write_qrels,
)
from .distribution import binned_medians, rating_distribution
from .pipeline import AnalysisOptions, analyze_ratings
from .ratings import (
    PHASES,
    RATING_COLUMNS,
    Provenance,
    RatingCube,
    RatingsWarning,
    SourceFile,
    load_ratings,
    rating_cube,
    validate_ratings,
)
from .significance import (
    FamilySummary,
    benjamini_hochberg_count,
    summarize_family,
    wilson_interval,
)
from .simulate import RaterModel, StudyDesign, simulate_study, write_simulated_dataset

__all__ = [
    "PHASES",
    "RATING_COLUMNS",
    "AnalysisOptions",
    "FamilySummary",
    "InputError",
    "KendallTauResult",
    "KendallWResult",
    "PairwiseTauResult",
    "Provenance",
    "RaterModel",
    "RatingCube",
    "RatingsWarning",
    "SourceFile",
    "StudyDesign",
    "analyze_ratings",
    "anchoring_consistency",
    "benjamini_hochberg_count",
    "binned_medians",
    "check_option",
    "consensus_ground_truth",
    "inter_rater_tau",
    "inter_rater_tau_by_sketch",
    "kendall_tau_b",
    "kendall_w",
    "kendall_w_by_sketch",
    "load_ratings",
    "pairwise_kendall_tau",
    "rater_vs_consensus",
    "rating_cube",
    "rating_distribution",
    "simulate_study",
    "summarize_family",
    "validate_ratings",
    "wilson_interval",
    "write_qrels",
    "write_simulated_dataset",
]
