"""Stimulus sets of sketch/image pairs: manifest and integrity, generation, import, selection.

A set is a folder with the image files, ``manifest.csv`` and ``SHA256SUMS``
(see :mod:`sbir_study.stimuli.manifest`). :func:`validate_set` checks one,
:func:`generate_set` draws a procedural one with known similarity,
:func:`import_set` makes one of a lab's own images, and
:func:`write_selection` chooses the study's pairs from a pilot over a
candidate pool (the paper's Sec. 2.2).
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
