"""Analysis of sketch/image rating studies (Eitz et al. 2011, Sec. 3).

Loading and validating ratings, rank agreement (Kendall's tau_b and W), the
consensus ground truth, anchoring consistency, the distribution of ratings,
significance summaries of test families, and simulated raters; and scoring
retrieval runs against the ground truth: the runs and their measures, distance
measures between descriptors, a baseline engine, comparisons between systems,
and HPatches-format scoring. Nothing here imports PsychoPy, and only
``analysis.figures`` imports matplotlib, when figures are drawn.
"""

from ._moved import renamed
from .agreement import (
    KendallTauResult,
    KendallWResult,
    PairwiseTauResult,
    inter_user_tau,
    inter_user_tau_by_sketch,
    kendall_tau_b,
    kendall_w,
    kendall_w_by_sketch,
    pairwise_kendall_tau,
)
from .checks import InputError, check_option
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
from .retrieval.baseline import baseline_scores, edge_orientation_histogram, write_trec_run
from .retrieval.comparison import (
    BootstrapResult,
    PermutationResult,
    bootstrap_mean,
    compare_systems,
    paired_permutation_test,
)
from .retrieval.distances import (
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
    resolve_distance,
)
from .retrieval.evaluation import (
    HUMAN,
    Evaluation,
    EvaluationOptions,
    evaluate_runs,
    score_run,
    write_evaluation,
)
from .retrieval.hpatches import evaluate_hpatches, hpatches_average_precision, read_hpatches_task
from .retrieval.metrics import (
    TauResult,
    average_precision,
    average_rank,
    dcg_shrec,
    e_measure,
    first_tier,
    metric_direction,
    ndcg,
    nearest_neighbor,
    percentage_similarity_ranking,
    percentage_weighted_hits,
    precision_at_k,
    precision_at_recall,
    r_precision,
    second_tier,
    system_tau_b,
)
from .retrieval.runs import (
    GroundTruth,
    Run,
    RunWarning,
    ground_truth_from_frame,
    load_ground_truth,
    load_run,
    run_from_scores,
)
from .significance import (
    FamilySummary,
    benjamini_hochberg_count,
    summarize_family,
    wilson_interval,
)
from .simulate import RaterModel, StudyDesign, simulate_study, write_simulated_dataset

__all__ = [
    "DISTANCES",
    "HUMAN",
    "PHASES",
    "RATING_COLUMNS",
    "AnalysisOptions",
    "BootstrapResult",
    "Evaluation",
    "EvaluationOptions",
    "FamilySummary",
    "GroundTruth",
    "InputError",
    "KendallTauResult",
    "KendallWResult",
    "PairwiseTauResult",
    "PermutationResult",
    "Provenance",
    "RaterModel",
    "RatingCube",
    "RatingsWarning",
    "Run",
    "RunWarning",
    "SourceFile",
    "StudyDesign",
    "TauResult",
    "analyze_ratings",
    "anchoring_consistency",
    "average_precision",
    "average_rank",
    "baseline_scores",
    "benjamini_hochberg_count",
    "bin_similarity",
    "binned_medians",
    "bootstrap_mean",
    "check_option",
    "chi_square",
    "compare_systems",
    "consensus_ground_truth",
    "cosine",
    "dcg_shrec",
    "distance_matrix",
    "e_measure",
    "edge_orientation_histogram",
    "evaluate_hpatches",
    "evaluate_runs",
    "first_tier",
    "ground_truth_from_frame",
    "histogram_intersection",
    "hpatches_average_precision",
    "hybrid_mass",
    "inter_user_tau",
    "inter_user_tau_by_sketch",
    "kendall_tau_b",
    "kendall_w",
    "kendall_w_by_sketch",
    "load_ground_truth",
    "load_ratings",
    "load_run",
    "mahalanobis",
    "mass_based",
    "mass_counts",
    "metric_direction",
    "minkowski",
    "ndcg",
    "nearest_neighbor",
    "paired_permutation_test",
    "pairwise_kendall_tau",
    "percentage_similarity_ranking",
    "percentage_weighted_hits",
    "precision_at_k",
    "precision_at_recall",
    "quadratic_form",
    "r_precision",
    "rater_vs_consensus",
    "rating_cube",
    "rating_distribution",
    "read_hpatches_task",
    "resolve_distance",
    "run_from_scores",
    "score_run",
    "second_tier",
    "simulate_study",
    "summarize_family",
    "system_tau_b",
    "validate_ratings",
    "wilson_interval",
    "write_evaluation",
    "write_qrels",
    "write_simulated_dataset",
    "write_trec_run",
]


# Old names, still answering with a DeprecationWarning.
__getattr__ = renamed(
    "analysis",
    {
        "inter_rater_tau": "inter_user_tau",
        "inter_rater_tau_by_sketch": "inter_user_tau_by_sketch",
        "consensus_tau_b": "system_tau_b",
        "Ranking": "Run",
        "ranking_from_scores": "run_from_scores",
        "evaluate_rankings": "evaluate_runs",
        "score_ranking": "score_run",
    },
    globals(),
)
