"""Scoring retrieval engines against the consensus ground truth.

* :mod:`~analysis.retrieval.runs`: the ground truth and retrieval runs
  (TREC runs or tables), reduced to the judged images;
* :mod:`~analysis.retrieval.metrics`: one function per measure and
  :data:`~analysis.retrieval.metrics.MEASURES`, the table of every measure;
* :mod:`~analysis.retrieval.comparison`: bootstrap intervals and paired tests
  between systems;
* :mod:`~analysis.retrieval.evaluation`: the pipeline of ``sbir-study evaluate``,
  with :mod:`~analysis.retrieval.report` its page;
* :mod:`~analysis.retrieval.distances` and :mod:`~analysis.retrieval.baseline`:
  distance measures and a baseline engine;
* :mod:`~analysis.retrieval.hpatches`: the HPatches retrieval task.

This subpackage uses the study's core (:mod:`analysis.consensus`,
:mod:`analysis.ratings`, ...); the core never imports it.
"""

from .._moved import renamed
from .baseline import baseline_scores, edge_orientation_histogram, write_trec_run
from .comparison import (
    BootstrapResult,
    PermutationResult,
    bootstrap_mean,
    compare_systems,
    paired_permutation_test,
    permutation_p_value_floor,
)
from .distances import (
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
from .evaluation import (
    HUMAN,
    Evaluation,
    EvaluationOptions,
    evaluate_runs,
    score_run,
    write_evaluation,
)
from .hpatches import evaluate_hpatches, hpatches_average_precision, read_hpatches_task
from .metrics import (
    MEASURES,
    Measure,
    TauResult,
    average_precision,
    average_rank,
    dcg_shrec,
    e_measure,
    first_tier,
    measure,
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
from .runs import (
    GroundTruth,
    Run,
    RunWarning,
    ground_truth_from_frame,
    load_ground_truth,
    load_run,
    run_from_scores,
)

__all__ = [
    "DISTANCES",
    "HUMAN",
    "MEASURES",
    "BootstrapResult",
    "Evaluation",
    "EvaluationOptions",
    "GroundTruth",
    "Measure",
    "PermutationResult",
    "Run",
    "RunWarning",
    "TauResult",
    "average_precision",
    "average_rank",
    "baseline_scores",
    "bin_similarity",
    "bootstrap_mean",
    "chi_square",
    "compare_systems",
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
    "load_ground_truth",
    "load_run",
    "mahalanobis",
    "mass_based",
    "mass_counts",
    "measure",
    "metric_direction",
    "minkowski",
    "ndcg",
    "nearest_neighbor",
    "paired_permutation_test",
    "percentage_similarity_ranking",
    "percentage_weighted_hits",
    "permutation_p_value_floor",
    "precision_at_k",
    "precision_at_recall",
    "quadratic_form",
    "r_precision",
    "read_hpatches_task",
    "resolve_distance",
    "run_from_scores",
    "score_run",
    "second_tier",
    "system_tau_b",
    "write_evaluation",
    "write_trec_run",
]


# Old names, still answering with a DeprecationWarning.
__getattr__ = renamed(
    "analysis.retrieval",
    {
        "consensus_tau_b": "system_tau_b",
        "Ranking": "Run",
        "ranking_from_scores": "run_from_scores",
        "evaluate_rankings": "evaluate_runs",
        "score_ranking": "score_run",
    },
    globals(),
)
