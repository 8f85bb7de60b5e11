"""Old import paths and names keep working, with a DeprecationWarning naming the new one."""

import importlib
import subprocess
import sys

import pytest

MOVED_MODULES = [
    ("analysis._checks", "analysis.checks"),
    ("analysis._progress", "analysis.progress"),
    ("analysis.retrieval_metrics", "analysis.retrieval.metrics"),
    ("analysis.comparison", "analysis.retrieval.comparison"),
    ("analysis.distances", "analysis.retrieval.distances"),
    ("analysis.baseline", "analysis.retrieval.baseline"),
    ("analysis.hpatches", "analysis.retrieval.hpatches"),
    ("analysis.evaluation", "analysis.retrieval.evaluation"),
]


@pytest.mark.parametrize("old, new", MOVED_MODULES)
def test_an_old_module_path_is_the_new_module_and_warns(old, new):
    # A fresh interpreter: the warning is given once, when the old path is first imported.
    code = f"import warnings; warnings.simplefilter('error'); import {old}"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 1
    assert f"DeprecationWarning: {old} is deprecated; import {new} instead" in result.stderr
    code = f"import {old} as o, {new} as n; assert o is n"
    assert subprocess.run([sys.executable, "-W", "ignore", "-c", code]).returncode == 0


@pytest.mark.parametrize(
    "module, old, new",
    [
        ("analysis", "inter_rater_tau", "inter_user_tau"),
        ("analysis", "consensus_tau_b", "system_tau_b"),
        ("analysis", "Ranking", "Run"),
        ("analysis.agreement", "inter_rater_tau_by_sketch", "inter_user_tau_by_sketch"),
        ("analysis.retrieval", "ranking_from_scores", "run_from_scores"),
        ("analysis.retrieval.evaluation", "evaluate_rankings", "evaluate_runs"),
        ("analysis.retrieval.runs", "Ranking", "Run"),
    ],
)
def test_an_old_name_is_the_new_object_and_warns(module, old, new):
    namespace = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=f"{old} is deprecated; use {module}.{new}"):
        value = getattr(namespace, old)
    assert value is getattr(namespace, new)


def test_an_unknown_name_is_still_an_attribute_error():
    import analysis

    with pytest.raises(AttributeError, match="no attribute 'no_such_thing'"):
        analysis.no_such_thing  # noqa: B018
