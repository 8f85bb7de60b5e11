"""pytest configuration for the whole checkout (the test suite's fixtures are in tests/)."""

# Old module paths that only forward to their new home: importing them warns, and their
# doctests are the new modules' own, collected there.
collect_ignore = [
    "analysis/_checks.py",
    "analysis/_progress.py",
    "analysis/baseline.py",
    "analysis/comparison.py",
    "analysis/distances.py",
    "analysis/evaluation.py",
    "analysis/hpatches.py",
    "analysis/retrieval_metrics.py",
]
