"""A baseline engine: edge-orientation histograms on a grid, ranked by a distance.

It gives the toolkit a system to score out of the box and, with every distance of
:mod:`.distances` on the same descriptor, repeats the comparison of distances of Zhang
(2019, ch. 12). The descriptor is a global-layout one in the spirit of the paper's HoG
baseline (Eitz et al. 2011, Sec. 4), far simpler, and works on sketches and photographs
alike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd

from sbir_study.foundation.checks import InputError, bad_ids, check_id, check_option, open_image
from sbir_study.foundation.outputs import output_files, output_folder

from .distances import DISTANCES, bin_similarity, distance_matrix, resolve_distance

__all__ = [
    "EDGE_SHARE",
    "SIDE",
    "StimulusSetLike",
    "baseline_scores",
    "descriptor_similarity",
    "edge_orientation_histogram",
    "parse_distances",
    "write_baseline_runs",
    "write_trec_run",
]


class StimulusSetLike(Protocol):
    """What the baseline reads of a checked set (``sbir_study.stimuli.load_set``)."""

    @property
    def folder(self) -> Path: ...

    @property
    def manifest(self) -> pd.DataFrame: ...


#: The longer side, in pixels, that every picture is scaled to before its edges are found.
SIDE = 192
#: The share of a picture's pixels, by gradient magnitude, that count as edges.
EDGE_SHARE = 0.08


def edge_orientation_histogram(path: str | Path, *, grid: int = 4, bins: int = 8) -> np.ndarray:
    """The descriptor of one picture, a (grid * grid * bins,) histogram summing to 1.

    The picture, grey, scaled to :data:`SIDE` pixels and smoothed, has its edge pixels
    in the top :data:`EDGE_SHARE` of Sobel gradient magnitudes (and at least 5% of the
    largest: the borders of a stroke, a photograph's strongest contours); each votes for
    its grid cell and one of ``bins`` unsigned orientations. No edge: the uniform
    histogram.
    """
    from PIL import Image
    from scipy import ndimage

    try:
        with open_image(path) as picture:  # its size checked before decoding
            picture = picture.convert("L")
            scale = SIDE / max(picture.size)
            size = (max(1, round(picture.width * scale)), max(1, round(picture.height * scale)))
            grey = np.asarray(picture.resize(size, Image.Resampling.BILINEAR), dtype=np.float64)
    except (OSError, SyntaxError, ValueError) as error:
        raise InputError(f"{path}: cannot be read as an image ({error})") from None
    grey = ndimage.gaussian_filter(grey / 255.0, 1.0)
    gx = ndimage.sobel(grey, axis=1)
    gy = ndimage.sobel(grey, axis=0)
    magnitude = np.hypot(gx, gy)
    threshold = max(np.quantile(magnitude, 1.0 - EDGE_SHARE), 0.05 * magnitude.max(), 1e-12)
    edge = magnitude >= threshold
    orientation = np.mod(np.arctan2(gy, gx), np.pi)
    height, width = grey.shape
    rows = np.minimum((np.arange(height) * grid) // height, grid - 1)
    columns = np.minimum((np.arange(width) * grid) // width, grid - 1)
    cell = rows[:, None] * grid + columns[None, :]
    direction = np.minimum((orientation / np.pi * bins).astype(np.int64), bins - 1)
    index = (cell * bins + direction)[edge]
    histogram = np.bincount(index, minlength=grid * grid * bins).astype(np.float64)
    total = histogram.sum()
    if total == 0:
        return np.full(grid * grid * bins, 1.0 / (grid * grid * bins))
    return histogram / total


def descriptor_similarity(*, grid: int = 4, bins: int = 8) -> np.ndarray:
    """The quadratic-form distance's bin similarity for this descriptor: bins of a cell by
    their orientations' distance the short way round (:func:`bin_similarity`), bins of
    different cells 0."""
    centres = (np.arange(bins) + 0.5) * np.pi / bins
    return np.kron(np.eye(grid * grid), bin_similarity(centres, period=np.pi))


def baseline_scores(
    manifest: pd.DataFrame,
    folder: str | Path,
    distances: Sequence[str],
    *,
    collection: str = "own",
    grid: int = 4,
    bins: int = 8,
    progress: Callable[[int, int], object] | None = None,
) -> dict[str, pd.DataFrame]:
    """Score each sketch's images under each distance.

    Parameters
    ----------
    manifest
        A stimulus set's manifest; its ``main`` and ``candidate`` pairs are scored (the
        anchors are not part of the ground truth).
    folder
        The set's folder, against which the manifest's paths are relative.
    distances
        Names of :data:`.distances.DISTANCES`, or ``l<p>``.
    collection
        ``"own"``: each sketch ranks its own images (the benchmark's protocol, Sec. 3.2);
        ``"all"``: every image of the set.
    progress
        Called with (done, total) as descriptors are computed.

    Returns
    -------
    dict of DataFrame
        Per distance, ``sketch_id, image_id, score``, score = -distance. The reference
        set of the Mahalanobis and mass-based distances is every descriptor scored.
    """
    check_option("collection", collection, ("own", "all"))
    for name in distances:
        resolve_distance(name)
    folder = Path(folder)
    pairs = manifest[manifest["role"].isin(["main", "candidate"])]
    if pairs.empty:
        raise InputError(f"{folder}: no main or candidate pairs to score")
    sketches = pairs.drop_duplicates("sketch_id")[["sketch_id", "sketch_path"]]
    images = pairs.drop_duplicates(["sketch_id", "image_id"])[
        ["sketch_id", "image_id", "image_path"]
    ]
    paths = list(sketches["sketch_path"]) + list(images["image_path"])
    unique_paths = list(dict.fromkeys(paths))
    described: dict[str, np.ndarray] = {}
    for done, relative in enumerate(unique_paths, start=1):
        described[relative] = edge_orientation_histogram(folder / relative, grid=grid, bins=bins)
        if progress is not None:
            progress(done, len(unique_paths))
    sketch_vectors = np.vstack([described[p] for p in sketches["sketch_path"]])
    image_vectors = np.vstack([described[p] for p in images["image_path"]])
    reference = np.vstack([described[p] for p in unique_paths])
    similarity = descriptor_similarity(grid=grid, bins=bins)
    sketch_ids = sketches["sketch_id"].to_numpy(dtype=object)
    image_sketch = images["sketch_id"].to_numpy(dtype=object)
    # "own": each sketch's own images; "all": every image of the set.
    keep = (sketch_ids[:, None] == image_sketch[None, :]) | (collection == "all")
    s_index, i_index = np.nonzero(keep)
    pairs = {
        "sketch_id": sketch_ids[s_index],
        "image_id": images["image_id"].to_numpy(dtype=object)[i_index],
    }
    runs = {}
    for name in distances:
        d = distance_matrix(
            sketch_vectors, image_vectors, name, reference=reference, similarity=similarity
        )
        runs[name] = pd.DataFrame({**pairs, "score": -d[s_index, i_index]})
    return runs


def write_trec_run(run: pd.DataFrame, path: str | Path, tag: str) -> Path:
    """Write ``sketch_id, image_id, score`` as a TREC run in trec_eval's order (decreasing
    score, ties by decreasing image id), scores to 17 digits so that they read back
    exactly. The ids and tag are checked first: a blank in one would forge fields."""
    path = Path(path)
    for column in ("sketch_id", "image_id"):
        bad = bad_ids(run[column])
        if bad.any():
            check_id(run[column].to_numpy()[bad][0], f"{path}: {column}")
    check_id(tag, f"{path}: tag")
    frame = run.copy()
    frame["_id"] = frame["image_id"].astype(str)
    frame = frame.sort_values(
        ["sketch_id", "score", "_id"], ascending=[True, False, False], kind="stable"
    )
    rank = frame.groupby("sketch_id", sort=False).cumcount() + 1
    lines = [
        f"{s} Q0 {i} {r} {score:.17g} {tag}\n"
        for s, i, r, score in zip(
            frame["sketch_id"], frame["image_id"], rank, frame["score"], strict=True
        )
    ]
    path.write_text("".join(lines), encoding="utf-8")
    return path


def parse_distances(text: str) -> list[str]:
    """Distance names from ``--distance``: one name, comma-separated names, or ``all``."""
    if text == "all":
        return list(DISTANCES)
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise InputError(f"--distance: got {text!r}; expected a distance name, names, or all")
    for name in names:
        try:
            resolve_distance(name)
        except InputError as error:
            raise InputError(f"--{error}") from None
    return names


def write_baseline_runs(
    stimulus_set: StimulusSetLike,
    distances: list[str],
    out: str | Path,
    *,
    collection: str = "own",
    overwrite: bool = False,
    progress: Callable[[int, int], object] | None = None,
) -> dict[str, Path]:
    """Rank a checked stimulus set's images under each distance and write a TREC run each:
    ``out`` itself for one distance when it is not a folder, else ``out/<distance>.run``,
    as every output is written (``docs/outputs.md``). Returns ``{distance: path}``."""
    out = Path(out)
    inputs = [stimulus_set.folder]

    def write(paths: dict[str, Path]) -> None:
        runs = baseline_scores(
            stimulus_set.manifest,
            stimulus_set.folder,
            list(paths),
            collection=collection,
            progress=progress,
        )
        for name, path in paths.items():
            write_trec_run(runs[name], path, tag=f"baseline-eoh-{_tag(name)}")

    if len(distances) == 1 and not out.is_dir():
        with output_files(out, "baseline", overwrite=overwrite, inputs=inputs) as written:
            write({distances[0]: written[0]})
        return {distances[0]: out}
    with output_folder(out, "baseline", overwrite=overwrite, inputs=inputs) as folder:
        write({name: folder / f"{name}.run" for name in distances})
    return {name: out / f"{name}.run" for name in distances}


def _tag(distance: str) -> str:
    """The distance's name as a TREC run tag (no spaces)."""
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in distance)
