from . import (
    baseline as baseline,
    comparison as comparison,
    distances as distances,
    evaluation as evaluation,
    evaluation_figures as evaluation_figures,
    evaluation_inputs as evaluation_inputs,
    evaluation_outputs as evaluation_outputs,
    evaluation_report as evaluation_report,
    hpatches as hpatches,
    measures as measures,
    runs as runs,
)
from .baseline import (
    baseline_scores as baseline_scores,
    edge_orientation_histogram as edge_orientation_histogram,
    write_trec_run as write_trec_run,
)
from .comparison import (
    BootstrapResult as BootstrapResult,
    PermutationResult as PermutationResult,
    bootstrap_mean as bootstrap_mean,
    compare_systems as compare_systems,
    paired_permutation_test as paired_permutation_test,
    permutation_p_value_floor as permutation_p_value_floor,
)
from .distances import (
    DISTANCES as DISTANCES,
    bin_similarity as bin_similarity,
    chi_square as chi_square,
    cosine as cosine,
    distance_matrix as distance_matrix,
    histogram_intersection as histogram_intersection,
    hybrid_mass as hybrid_mass,
    mahalanobis as mahalanobis,
    mass_based as mass_based,
    mass_counts as mass_counts,
    minkowski as minkowski,
    quadratic_form as quadratic_form,
    resolve_distance as resolve_distance,
)
from .evaluation import (
    HUMAN as HUMAN,
    Evaluation as Evaluation,
    EvaluationOptions as EvaluationOptions,
    evaluate_runs as evaluate_runs,
    score_run as score_run,
)
from .evaluation_inputs import (
    evaluate_files as evaluate_files,
)
from .evaluation_outputs import (
    write_evaluation as write_evaluation,
)
from .hpatches import (
    evaluate_hpatches as evaluate_hpatches,
    hpatches_average_precision as hpatches_average_precision,
    read_hpatches_task as read_hpatches_task,
)
from .measures import (
    MEASURES as MEASURES,
    Measure as Measure,
    TauResult as TauResult,
    average_precision as average_precision,
    average_rank as average_rank,
    dcg_shrec as dcg_shrec,
    e_measure as e_measure,
    first_tier as first_tier,
    measure as measure,
    measure_direction as measure_direction,
    ndcg as ndcg,
    nearest_neighbor as nearest_neighbor,
    percentage_similarity_ranking as percentage_similarity_ranking,
    percentage_weighted_hits as percentage_weighted_hits,
    precision_at_k as precision_at_k,
    precision_at_recall as precision_at_recall,
    r_precision as r_precision,
    second_tier as second_tier,
    system_tau_b as system_tau_b,
)
from .runs import (
    GroundTruth as GroundTruth,
    Run as Run,
    RunWarning as RunWarning,
    ground_truth_from_frame as ground_truth_from_frame,
    load_ground_truth as load_ground_truth,
    load_run as load_run,
    run_from_scores as run_from_scores,
)
