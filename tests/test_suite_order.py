"""The suite's own lists of modules (tests/conftest.py, tests/timed.txt) name modules that
exist: a module renamed or removed would otherwise drop out of make test's order or timed
pass without a word."""

from tests.conftest import LONGEST_FIRST, TIMED_MODULES
from tests.helpers import ROOT


def test_the_longest_modules_listed_exist_once_each():
    missing = [name for name in LONGEST_FIRST if not (ROOT / name).is_file()]
    assert missing == []
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)


def test_the_timed_modules_listed_exist():
    assert sorted(name for name in TIMED_MODULES if not (ROOT / name).is_file()) == []
