"""Scoring retrieval engines against the consensus ground truth.

* :mod:`~sbir_study.analysis.retrieval.runs`: the ground truth and retrieval runs
  (TREC runs or tables), reduced to the judged images;
* :mod:`~sbir_study.analysis.retrieval.measures`: one function per measure, one module per
  family, and :data:`~sbir_study.analysis.retrieval.measures.MEASURES`, the table of
  every measure;
* :mod:`~sbir_study.analysis.retrieval.comparison`: bootstrap intervals and paired tests
  between systems;
* :mod:`~sbir_study.analysis.retrieval.evaluation`: the scoring of ``sbir-study evaluate``,
  :mod:`~sbir_study.analysis.retrieval.evaluation_inputs` its files read,
  :mod:`~sbir_study.analysis.retrieval.evaluation_outputs` its files written and lines
  printed, with :mod:`~sbir_study.analysis.retrieval.evaluation_figures` its figures and
  :mod:`~sbir_study.analysis.retrieval.evaluation_report` its page;
* :mod:`.distances` and :mod:`.baseline`:
  distance measures and a baseline engine;
* :mod:`~sbir_study.analysis.retrieval.hpatches`: the HPatches retrieval task.

This subpackage uses the study's core (:mod:`sbir_study.analysis.consensus`,
:mod:`sbir_study.analysis.ratings`, ...); the core never imports it.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submodules=[
        "baseline",
        "comparison",
        "distances",
        "evaluation",
        "evaluation_figures",
        "evaluation_inputs",
        "evaluation_outputs",
        "evaluation_report",
        "hpatches",
        "measures",
        "runs",
    ],
    submod_attrs={
        "baseline": [
            "baseline_scores",
            "edge_orientation_histogram",
            "write_trec_run",
        ],
        "comparison": [
            "BootstrapResult",
            "PermutationResult",
            "bootstrap_mean",
            "compare_systems",
            "paired_permutation_test",
            "permutation_p_value_floor",
        ],
        "distances": [
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
        ],
        "evaluation": [
            "HUMAN",
            "Evaluation",
            "EvaluationOptions",
            "evaluate_runs",
            "score_run",
        ],
        "evaluation_inputs": ["evaluate_files"],
        "evaluation_outputs": ["write_evaluation"],
        "hpatches": [
            "evaluate_hpatches",
            "hpatches_average_precision",
            "read_hpatches_task",
        ],
        "measures": [
            "MEASURES",
            "Measure",
            "TauResult",
            "average_precision",
            "average_rank",
            "dcg_shrec",
            "e_measure",
            "first_tier",
            "measure",
            "measure_direction",
            "ndcg",
            "nearest_neighbor",
            "percentage_similarity_ranking",
            "percentage_weighted_hits",
            "precision_at_k",
            "precision_at_recall",
            "r_precision",
            "second_tier",
            "system_tau_b",
        ],
        "runs": [
            "GroundTruth",
            "Run",
            "RunWarning",
            "ground_truth_from_frame",
            "load_ground_truth",
            "load_run",
            "run_from_scores",
        ],
    },
)
