from . import (
    arrays as arrays,
)
from . import (
    correlation as correlation,
)
from . import (
    shrec as shrec,
)
from . import (
    table as table,
)
from . import (
    trec as trec,
)
from . import (
    zhang as zhang,
)
from .correlation import (
    TauResult as TauResult,
)
from .correlation import (
    system_tau_b as system_tau_b,
)
from .shrec import (
    RECALL_LEVELS as RECALL_LEVELS,
)
from .shrec import (
    dcg_shrec as dcg_shrec,
)
from .shrec import (
    e_measure as e_measure,
)
from .shrec import (
    first_tier as first_tier,
)
from .shrec import (
    nearest_neighbor as nearest_neighbor,
)
from .shrec import (
    precision_at_recall as precision_at_recall,
)
from .shrec import (
    second_tier as second_tier,
)
from .table import (
    MEASURES as MEASURES,
)
from .table import (
    Measure as Measure,
)
from .table import (
    RunView as RunView,
)
from .table import (
    measure as measure,
)
from .table import (
    measure_direction as measure_direction,
)
from .table import (
    measure_values as measure_values,
)
from .table import (
    report_columns as report_columns,
)
from .trec import (
    average_precision as average_precision,
)
from .trec import (
    ndcg as ndcg,
)
from .trec import (
    precision_at_k as precision_at_k,
)
from .trec import (
    r_precision as r_precision,
)
from .zhang import (
    average_rank as average_rank,
)
from .zhang import (
    percentage_similarity_ranking as percentage_similarity_ranking,
)
from .zhang import (
    percentage_weighted_hits as percentage_weighted_hits,
)
