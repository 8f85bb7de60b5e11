"""Stimulus sets of sketch/image pairs: manifest and integrity, generation, import, selection.

A set is a folder with the image files, ``manifest.csv`` and ``SHA256SUMS``
(see :mod:`stimuli.manifest`). :func:`validate_set` checks one,
:func:`generate_set` draws a procedural one with known similarity,
:func:`import_set` makes one of a lab's own images, and
:func:`write_selection` chooses the study's pairs from a pilot over a
candidate pool (the paper's Sec. 2.2).
"""

from .generate import SetDesign, generate_set, latent_rating
from .importing import import_set
from .manifest import (
    CHECKSUMS,
    MANIFEST,
    MANIFEST_COLUMNS,
    read_manifest,
    set_digest,
    sketch_image_paths,
    write_checksums,
    write_manifest,
)
from .select import Selection, distance_to_uniform, select_pairs, write_selection
from .validate import AnchorDesign, SetReport, StimulusSet, load_set, validate_set

__all__ = [
    "CHECKSUMS",
    "MANIFEST",
    "MANIFEST_COLUMNS",
    "AnchorDesign",
    "Selection",
    "SetDesign",
    "SetReport",
    "StimulusSet",
    "distance_to_uniform",
    "generate_set",
    "import_set",
    "latent_rating",
    "load_set",
    "read_manifest",
    "select_pairs",
    "set_digest",
    "sketch_image_paths",
    "validate_set",
    "write_checksums",
    "write_manifest",
    "write_selection",
]
