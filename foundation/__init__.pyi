from . import (
    atomic as atomic,
    bids as bids,
    checks as checks,
    environment as environment,
    html as html,
    memory as memory,
    outputs as outputs,
    paper as paper,
    progress as progress,
    provenance as provenance,
    scale as scale,
    tables as tables,
    targets as targets,
    text as text,
    trial_order as trial_order,
)
from .checks import (
    InputError as InputError,
)
