"""sbir-study: run, replicate and analyse controlled rating studies of sketch/image pairs.

After Eitz, Hildebrand, Boubekeur and Alexa, *Sketch-Based Image Retrieval:
Benchmark and Bag-of-Features Descriptors* (IEEE TVCG 2011). The subpackages,
each loaded when first used:

* :mod:`sbir_study.foundation`: what every part shares (checks, outputs, provenance,
  the paper's constants, BIDS files, the table reader); it imports nothing else
  of the project;
* :mod:`sbir_study.analysis`: the study's statistics and ground truth, and in
  :mod:`sbir_study.analysis.retrieval` the scoring of retrieval engines;
* :mod:`sbir_study.stimuli`: stimulus sets;
* :mod:`sbir_study.study`: the lab session (PsychoPy, ``pip install 'sbir-study[lab]'``)
  and the online session (``pip install 'sbir-study[online]'``);
* :mod:`sbir_study.cli`: the ``sbir-study`` command line.
"""

import lazy_loader

_subpackage, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)


def __getattr__(name: str):
    if name == "__version__":
        from sbir_study.foundation.provenance import toolkit_version

        return toolkit_version()
    return _subpackage(name)
