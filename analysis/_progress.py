"""Deprecated alias of :mod:`analysis.progress`, kept for old imports."""

import warnings

from .progress import *  # noqa: F403
from .progress import __all__  # noqa: F401

warnings.warn(
    "analysis._progress is deprecated; import analysis.progress instead",
    DeprecationWarning,
    stacklevel=2,
)
