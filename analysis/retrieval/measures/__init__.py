"""Measures of a retrieval run against the ground truth, one function per measure.

Every measure takes the run reduced to the judged images (see
:mod:`sbir_study.analysis.retrieval`): arrays of shape (sketches, judged images) holding
each judged image's ``rank`` (1-based position in the run, NaN where the run
does not return it, and for padding) and its relevance, and returns one value
per sketch. Nothing here loops over the run's other images, so the cost does
not grow with the size of the collection a run ranks.

One module per family:

* :mod:`.correlation`, rank correlation with people (the paper's Sec. 3.2):
  :func:`system_tau_b`;
* :mod:`.trec`, trec_eval's measures: :func:`ndcg`, :func:`precision_at_k`,
  :func:`average_precision`, :func:`r_precision`;
* :mod:`.shrec`, SHREC's measures: :func:`nearest_neighbor`, :func:`first_tier`,
  :func:`second_tier`, :func:`e_measure`, :func:`dcg_shrec`, :func:`precision_at_recall`;
* :mod:`.zhang`, Zhang (2019) ch. 12.3: :func:`average_rank`,
  :func:`percentage_weighted_hits`, :func:`percentage_similarity_ranking`;

and :mod:`.table`, :data:`MEASURES`, the table of every measure ``evaluate`` reports;
:mod:`.arrays` checks the arrays they take.

A measure that needs relevant images is NaN for a sketch without any
(recall, AP, the tiers and nDCG are undefined there); precision-like
measures (p@k, NN) are 0.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
