from . import (
    forms as forms,
    keyboard as keyboard,
    lists as lists,
    loop as loop,
    plan as plan,
    procedure as procedure,
    record as record,
    simulated as simulated,
    window as window,
)
from .procedure import (
    SessionOptions as SessionOptions,
    SessionOutcome as SessionOutcome,
    run_from_files as run_from_files,
    run_session as run_session,
)
