"""The paper's Figs. 4-9, drawn from the tables of an analysis.

Every ``plot_*`` function draws on the matplotlib ``Axes`` it is given and
returns it, so the figures can be composed, restyled or embedded; they take the
tables :func:`sbir_study.analysis.analyze_ratings` writes, not raw ratings.
:func:`write_figures` lays out the standard files (``.png`` and ``.pdf``).

* :mod:`.participants`: Figs. 4 and 6, each participant (or, in a crowd, their
  distribution) against the anchors' prescribed ratings and against the consensus;
* :mod:`.inter_user`: Figs. 5 and 9, the agreement between participants per sketch;
* :mod:`.distribution`: Figs. 7 and 8, the ratings over the scale and by bin;
* :mod:`.crowd_size`: how the statistics grow with the participants (the power
  simulation), and the reliability of the consensus with m raters;
* :mod:`.layout`: the files of ``analyze`` (:func:`write_figures`);
* :mod:`.style`: the markers, labels and ranges every figure shares, and the one way
  each is saved, which :mod:`sbir_study.analysis.retrieval.evaluation_figures` (the
  figures of ``evaluate``) shares too.

These and :mod:`~sbir_study.analysis.retrieval.evaluation_figures` are the only
modules of :mod:`sbir_study.analysis` that import matplotlib. They use its
object-oriented API (:class:`matplotlib.figure.Figure`), never ``pyplot``, so
drawing needs no display and leaves no global state behind.

References: Eitz et al. (2011), Sec. 3.3 and the captions of Figs. 4-9.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
