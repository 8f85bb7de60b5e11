"""Deprecated alias of :mod:`analysis.checks`, kept for old imports."""

import warnings

from .checks import *  # noqa: F403
from .checks import __all__  # noqa: F401

warnings.warn(
    "analysis._checks is deprecated; import analysis.checks instead",
    DeprecationWarning,
    stacklevel=2,
)
