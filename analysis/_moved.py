"""Old import paths of modules that moved: each still works, with a DeprecationWarning."""

from __future__ import annotations

import importlib
import sys
import warnings
from types import ModuleType


def moved(old: str, new: str) -> ModuleType:
    """Make ``import old`` give the module ``new`` itself, and warn the importer.

    The warning is attributed to the line that imported the old path, so
    Python shows it there (``warnings`` itself skips the import machinery's
    frames; the old module's own frame is skipped here).
    """
    # stacklevel 3: this function, the old module, then the line importing it.
    warnings.warn(f"{old} is deprecated; import {new} instead", DeprecationWarning, stacklevel=3)
    module = importlib.import_module(new)
    sys.modules[old] = module
    return module


def renamed(module: str, names: dict[str, str], namespace: dict):
    """A module ``__getattr__`` that still answers to old names, with a DeprecationWarning.

    ``names`` maps each old name to its new one in ``namespace`` (the module's globals).
    """

    def __getattr__(name: str):
        if name in names:
            warnings.warn(f"{module}.{name} is deprecated; use {module}.{names[name]}",
                          DeprecationWarning, stacklevel=2)  # fmt: skip
            return namespace[names[name]]
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
