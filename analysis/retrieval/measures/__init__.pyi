from . import (
    arrays as arrays,
    correlation as correlation,
    shrec as shrec,
    table as table,
    trec as trec,
    zhang as zhang,
)
from .correlation import (
    TauResult as TauResult,
    system_tau_b as system_tau_b,
)
from .shrec import (
    RECALL_LEVELS as RECALL_LEVELS,
    dcg_shrec as dcg_shrec,
    e_measure as e_measure,
    first_tier as first_tier,
    nearest_neighbor as nearest_neighbor,
    precision_at_recall as precision_at_recall,
    second_tier as second_tier,
)
from .table import (
    MEASURES as MEASURES,
    Measure as Measure,
    RunView as RunView,
    measure as measure,
    measure_direction as measure_direction,
    measure_values as measure_values,
    report_columns as report_columns,
)
from .trec import (
    average_precision as average_precision,
    ndcg as ndcg,
    precision_at_k as precision_at_k,
    r_precision as r_precision,
)
from .zhang import (
    average_rank as average_rank,
    percentage_similarity_ranking as percentage_similarity_ranking,
    percentage_weighted_hits as percentage_weighted_hits,
)
