"""The sizes at which ``analyze`` changes what it computes or writes.

Each limit is stated once, here, where the statistics, the report and the command
line's ``--help`` read it; this module imports nothing, so that ``sbir-study analyze
--help`` can name the limits without loading the statistics.
"""

__all__ = ["PAIRWISE_FULL_ROWS", "PAIRWISE_MODES", "PAIRWISE_RATERS", "PERMUTATION_RATERS_LIMIT"]

#: Above this many raters of a sketch the Skillings-Mack test gives only its chi-square
#: p-value: the approximation is good there, and each permutation costs raters x images.
PERMUTATION_RATERS_LIMIT = 50

#: ``--pairwise auto`` writes the inter-user table while it has at most this many rows
#: (raters^2 / 2 a sketch: about 800 raters of 31 sketches); above, only the per-sketch
#: summary, which is always written. The bound keeps the file's time and size small
#: (``benchmarks/RESULTS.md``).
PAIRWISE_FULL_ROWS = 10_000_000
#: What ``--pairwise`` takes: the table while it is small enough, always, or never.
PAIRWISE_MODES = ("auto", "full", "summary")

#: Above this many raters of a sketch, its inter-user tau_b is over the pairs among this
#: many drawn at random (:func:`~sbir_study.analysis.agreement_tables.inter_user_tau_pairs`):
#: 1,999,000 pairs a sketch at most. Below, every pair enters, as in the paper; how far a
#: sample lies from every pair is in ``benchmarks/RESULTS.md``. ``None``: every pair always.
PAIRWISE_RATERS = 2000
