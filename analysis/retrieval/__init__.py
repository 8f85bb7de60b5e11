"""Scoring retrieval engines against the consensus ground truth.

* :mod:`~sbir_study.analysis.retrieval.runs`: the ground truth and retrieval runs
  (TREC runs or tables), reduced to the judged images;
* :mod:`~sbir_study.analysis.retrieval.measures`: one function per measure, one module per
  family, and :data:`~sbir_study.analysis.retrieval.measures.MEASURES`, the table of
  every measure;
* :mod:`~sbir_study.analysis.retrieval.comparison`: bootstrap intervals and paired tests
  between systems;
* :mod:`~sbir_study.analysis.retrieval.evaluation`: the scoring of ``sbir-study evaluate``,
  :mod:`~sbir_study.analysis.retrieval.evaluation_inputs` its files read,
  :mod:`~sbir_study.analysis.retrieval.evaluation_outputs` its files written and lines
  printed, with :mod:`~sbir_study.analysis.retrieval.evaluation_figures` its figures and
  :mod:`~sbir_study.analysis.retrieval.evaluation_report` its page;
* :mod:`.distances` and :mod:`.baseline`:
  distance measures and a baseline engine;
* :mod:`~sbir_study.analysis.retrieval.hpatches`: the HPatches retrieval task.

This subpackage uses the study's core (:mod:`sbir_study.analysis.consensus`,
:mod:`sbir_study.analysis.ratings`, ...); the core never imports it.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
