from . import (
    baseline as baseline,
)
from . import (
    comparison as comparison,
)
from . import (
    distances as distances,
)
from . import (
    evaluation as evaluation,
)
from . import (
    evaluation_figures as evaluation_figures,
)
from . import (
    evaluation_inputs as evaluation_inputs,
)
from . import (
    evaluation_outputs as evaluation_outputs,
)
from . import (
    evaluation_report as evaluation_report,
)
from . import (
    hpatches as hpatches,
)
from . import (
    measures as measures,
)
from . import (
    runs as runs,
)
from .baseline import (
    baseline_scores as baseline_scores,
)
from .baseline import (
    edge_orientation_histogram as edge_orientation_histogram,
)
from .baseline import (
    write_trec_run as write_trec_run,
)
from .comparison import (
    BootstrapResult as BootstrapResult,
)
from .comparison import (
    PermutationResult as PermutationResult,
)
from .comparison import (
    bootstrap_mean as bootstrap_mean,
)
from .comparison import (
    compare_systems as compare_systems,
)
from .comparison import (
    paired_permutation_test as paired_permutation_test,
)
from .comparison import (
    permutation_p_value_floor as permutation_p_value_floor,
)
from .distances import (
    DISTANCES as DISTANCES,
)
from .distances import (
    bin_similarity as bin_similarity,
)
from .distances import (
    chi_square as chi_square,
)
from .distances import (
    cosine as cosine,
)
from .distances import (
    distance_matrix as distance_matrix,
)
from .distances import (
    histogram_intersection as histogram_intersection,
)
from .distances import (
    hybrid_mass as hybrid_mass,
)
from .distances import (
    mahalanobis as mahalanobis,
)
from .distances import (
    mass_based as mass_based,
)
from .distances import (
    mass_counts as mass_counts,
)
from .distances import (
    minkowski as minkowski,
)
from .distances import (
    quadratic_form as quadratic_form,
)
from .distances import (
    resolve_distance as resolve_distance,
)
from .evaluation import (
    HUMAN as HUMAN,
)
from .evaluation import (
    Evaluation as Evaluation,
)
from .evaluation import (
    EvaluationOptions as EvaluationOptions,
)
from .evaluation import (
    evaluate_runs as evaluate_runs,
)
from .evaluation import (
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
)
from .hpatches import (
    hpatches_average_precision as hpatches_average_precision,
)
from .hpatches import (
    read_hpatches_task as read_hpatches_task,
)
from .measures import (
    MEASURES as MEASURES,
)
from .measures import (
    Measure as Measure,
)
from .measures import (
    TauResult as TauResult,
)
from .measures import (
    average_precision as average_precision,
)
from .measures import (
    average_rank as average_rank,
)
from .measures import (
    dcg_shrec as dcg_shrec,
)
from .measures import (
    e_measure as e_measure,
)
from .measures import (
    first_tier as first_tier,
)
from .measures import (
    measure as measure,
)
from .measures import (
    measure_direction as measure_direction,
)
from .measures import (
    ndcg as ndcg,
)
from .measures import (
    nearest_neighbor as nearest_neighbor,
)
from .measures import (
    percentage_similarity_ranking as percentage_similarity_ranking,
)
from .measures import (
    percentage_weighted_hits as percentage_weighted_hits,
)
from .measures import (
    precision_at_k as precision_at_k,
)
from .measures import (
    precision_at_recall as precision_at_recall,
)
from .measures import (
    r_precision as r_precision,
)
from .measures import (
    second_tier as second_tier,
)
from .measures import (
    system_tau_b as system_tau_b,
)
from .runs import (
    GroundTruth as GroundTruth,
)
from .runs import (
    Run as Run,
)
from .runs import (
    RunWarning as RunWarning,
)
from .runs import (
    ground_truth_from_frame as ground_truth_from_frame,
)
from .runs import (
    load_ground_truth as load_ground_truth,
)
from .runs import (
    load_run as load_run,
)
from .runs import (
    run_from_scores as run_from_scores,
)
