"""The replicated study's design and published results, once for the whole toolkit.

M. Eitz, K. Hildebrand, T. Boubekeur, M. Alexa, "Sketch-Based Image Retrieval: Benchmark
and Bag-of-Features Descriptors", IEEE TVCG 17(11), 2011.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

__all__ = [
    "ANCHOR_IMAGES",
    "ANCHOR_SKETCHES",
    "BLANK_S",
    "IMAGES_PER_SKETCH",
    "PARTICIPANTS",
    "PUBLISHED",
    "PUBLISHED_DESCRIPTOR_TAU",
    "SCALE",
    "SKETCHES",
    "STIMULUS_S",
    "PairDesign",
]

#: Participants of the final study (Sec. 3.3).
PARTICIPANTS = 28
#: Sketches of the final study and images per sketch (Sec. 2.2): 1,240 pairs.
SKETCHES = 31
IMAGES_PER_SKETCH = 40
#: The anchoring block: 3 sketches with 7 images each, rated 1..7 (Sec. 2.3.1, Fig. 2).
ANCHOR_SKETCHES = 3
ANCHOR_IMAGES = 7
#: The rating scale: 1 = best match, 7 = worst (Sec. 2.3).
SCALE = (1, 7)
#: Seconds a pair is shown, then seconds of black; the rating may change until the end (Sec. 2.3).
STIMULUS_S = 2.0
BLANK_S = 1.0

#: The published results of the study (Sec. 3.3): shares of significant tau_b
#: (one-sided, alpha 0.05) per test family, and the largest bin standard deviation (Eq. 3).
PUBLISHED = {
    "anchoring": 0.774,
    "pairwise": 0.86,
    "consensus": 0.99,
    "bin4_sd": 1.4692,
    "n_sketches": SKETCHES,
    "n_participants": PARTICIPANTS,
}

#: Mean tau_b against the benchmark of the best setting of each descriptor (Sec. 5.1).
PUBLISHED_DESCRIPTOR_TAU = {
    "global (Tensor, HoG)": 0.223,
    "shape context": 0.161,
    "histogram of oriented gradients": 0.175,
    "spark": 0.217,
    "SHoG": 0.277,
}


@dataclass(frozen=True)
class PairDesign:
    """The pairs of a study (the paper's sizes), which :class:`sbir_study.stimuli.SetDesign` and
    :class:`sbir_study.analysis.simulate.StudyDesign` extend; a size out of range raises.

    >>> PairDesign().sketches * PairDesign().images_per_sketch
    1240
    >>> from sbir_study.foundation.checks import InputError
    >>> try:
    ...     PairDesign(anchor_images=10)
    ... except InputError as error:
    ...     print(error)
    anchor_images: expected a whole number 2..9, got 10
    """

    sketches: int = SKETCHES
    images_per_sketch: int = IMAGES_PER_SKETCH
    anchor_sketches: int = ANCHOR_SKETCHES
    #: Anchor images per anchor sketch: at most one per point of the largest scale, 1..9
    #: (a design on a smaller scale checks it against its own).
    anchor_images: int = ANCHOR_IMAGES

    def __post_init__(self) -> None:
        from .checks import InputError

        for name, low, high in (
            ("sketches", 1, 10_000),
            ("images_per_sketch", 2, 10_000),
            ("anchor_sketches", 0, 100),
            ("anchor_images", 2, 9),
        ):
            value = getattr(self, name)
            whole = isinstance(value, numbers.Integral) and not isinstance(value, bool)
            if not whole or not low <= value <= high:
                raise InputError(f"{name}: expected a whole number {low}..{high}, got {value!r}")
