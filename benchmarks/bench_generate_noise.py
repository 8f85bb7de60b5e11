"""``stimuli generate``'s sensor noise in arrays kept from image to image, against the
plain way, fresh arrays per image, side by side in one run: the paper's set
(seed 0), each in a process of its own, as every ``stimuli generate`` is, the two ways
alternated three times; wall, user and system time, minor page faults, and the set's
digest (the same bytes both ways).

    python benchmarks/bench_generate_noise.py
"""

from __future__ import annotations

import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

from sbir_study.stimuli import generate, generate_set, set_digest

KEPT = generate._SensorNoise.added_to


def fresh(self, canvas: Image.Image, rng: np.random.Generator) -> Image.Image:
    """The noise added the plain way: new arrays for every image."""
    noise = rng.normal(0.0, 3.0, self._pixels.shape).astype(np.float32)
    noisy = np.asarray(canvas, dtype=np.float32) + noise
    return Image.fromarray(np.clip(np.rint(noisy), 0, 255).astype(np.uint8))


def usage() -> tuple[float, float, int]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime, own.ru_stime, own.ru_minflt


def one(kind: str) -> None:
    """Draw the set the ``kind`` way in this process; print its row."""
    generate._SensorNoise.added_to = fresh if kind.startswith("fresh") else KEPT
    with tempfile.TemporaryDirectory() as folder:
        user, system, faults = usage()
        started = time.perf_counter()
        made = generate_set(Path(folder) / "set", seed=0)
        wall = time.perf_counter() - started
        user_end, system_end, faults_end = usage()
        digest = set_digest(made)[:8]
    print(
        f"| {kind} | {wall:.2f} | {user_end - user:.2f} | {system_end - system:.2f} "
        f"| {faults_end - faults:,} | {digest} |",
        flush=True,
    )


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        one(sys.argv[2])
        return
    print("| noise arrays | wall s | user s | system s | minor faults | set digest |")
    print("|---|---|---|---|---|---|")
    for kind in ["fresh (before)", "kept (after)"] * 3:
        subprocess.run([sys.executable, __file__, "--one", kind], check=True)


if __name__ == "__main__":
    main()
