"""Docstring examples of the source folders, run as tests under the modules' installed names.

The folders ``foundation/``, ``analysis/``, ``stimuli/``, ``study/`` and ``cli/``
are the subpackages of ``sbir_study`` (``[tool.setuptools.package-dir]`` in
``pyproject.toml``). pytest's own ``--doctest-modules`` would import
``analysis/ratings.py`` as a top-level ``analysis.ratings``, a second copy of the
module beside ``sbir_study.analysis.ratings``; this collector imports each file by
its installed name instead, and otherwise runs its examples as pytest does
(``doctest_optionflags``).
"""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path

from _pytest.doctest import DoctestModule

ROOT = Path(__file__).parent


def _package_folders() -> dict[Path, str]:
    """Each source folder and the package installed from it."""
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    mapping = settings["tool"]["setuptools"]["package-dir"]
    return {(ROOT / folder).resolve(): package for package, folder in mapping.items()}


_FOLDERS = _package_folders()


def module_name(path: Path) -> str | None:
    """The installed name of the module at ``path``, or None outside the packages."""
    path = path.resolve()
    for folder, package in _FOLDERS.items():
        if path.is_relative_to(folder):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            return ".".join((package, *parts))
    return None


class InstalledDoctestModule(DoctestModule):
    """A source file's docstring examples, the file imported by its installed name."""

    def _getobj(self):
        return importlib.import_module(module_name(self.path))


def pytest_collect_file(file_path: Path, parent):
    # (A __main__.py runs its program when imported, as pytest's own collector knows.)
    if file_path.suffix == ".py" and file_path.name != "__main__.py" and module_name(file_path):
        return InstalledDoctestModule.from_parent(parent, path=file_path)
    return None
