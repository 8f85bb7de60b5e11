"""Choosing the study's pairs from a pilot over a candidate pool (the paper's Sec. 2.2).

The paper kept the 31 sketches whose pilot ratings were closest to uniform and, for each,
sub-sampled 40 images "biasing the sub-sample towards a uniform distribution of ratings":

1. **Sketch spread.** With n_sk the sketch's pilot ratings at point k, c_sk = N n_sk /
   sum_k n_sk is the count at k of an N-image sample rated like its candidates, and sigma_s
   = sqrt(mean_k (c_sk - N/7)^2) their spread around the uniform N/7. The counts are scaled
   to N so that sigma ranks uniformity, not pool size. The sketches with the largest sigma
   are dropped until K remain (ties: the earlier id stays); sketches with fewer than N rated
   candidates are dropped first.
2. **Images, stratified by pilot median.** Each candidate sits at the point nearest its
   median pilot rating (a half goes to the worse point). The N images are shared out over
   the points as evenly as the candidates allow (:func:`quotas`), and drawn at random
   within a point.

Equal quotas per point make the ratings as uniform as the pool allows while the choice
within a point stays random, so no other property of the candidates biases the sample. A
draw weighted by 1 / frequency is uniform only in expectation, often several images off
per point at N = 40.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd

from sbir_study.foundation import paper
from sbir_study.foundation.checks import InputError
from sbir_study.foundation.scale import PAPER_SCALE

from .manifest import MANIFEST, write_checksums, write_manifest
from .validate import AnchorDesign, load_set

__all__ = [
    "Selection",
    "distance_to_uniform",
    "quotas",
    "rating_counts",
    "select_pairs",
    "sketch_spread",
    "write_selection",
]


def _levels(ratings: pd.DataFrame) -> np.ndarray:
    """The points of the pilot's recorded scale (``attrs["scale"]``, else the paper's 1..7)."""
    return np.array(ratings.attrs.get("scale", PAPER_SCALE).points)


def _count_levels(counts: pd.DataFrame) -> np.ndarray:
    return np.array(
        [int(c.removeprefix("count_")) for c in counts.columns if c.startswith("count_")]
    )


@dataclass(frozen=True)
class Selection:
    """The result of :func:`select_pairs`.

    Attributes
    ----------
    pairs : DataFrame
        The chosen candidate rows of the pool's manifest (role ``main``), with
        ``pilot_median`` and ``pilot_level``.
    sketches : DataFrame
        One row per pool sketch: ``sketch_id, n_candidates, n_rated, n_pilot_raters, sigma,
        selected, sigma_selected`` and the pool's counts ``count_1 .. count_7``.
    distribution : DataFrame
        ``dataset, rating, count, share`` for ``pool``, ``selection`` and ``uniform``: the
        data of the paper's Fig. 7.
    """

    pairs: pd.DataFrame
    sketches: pd.DataFrame
    distribution: pd.DataFrame


def rating_counts(
    ratings: pd.DataFrame, images_per_sketch: int, *, points: np.ndarray | None = None
) -> pd.DataFrame:
    """Per sketch, the counts c_k of an N-image sample rated like the pilot.

    Columns ``count_<k>`` per point of ``points`` (else of ``attrs["scale"]``) and
    ``n_pilot_raters``, the participants who rated any image of the sketch; indexed by
    ``sketch_id``.

    Examples
    --------
    Eight ratings of one sketch, two of them 7; scaled to N = 40 images:

    >>> pilot = pd.DataFrame({"participant": "1", "sketch_id": "s1",
    ...                       "rating": [1, 2, 3, 4, 5, 6, 7, 7]})
    >>> rating_counts(pilot, 40).iloc[0].tolist()
    [5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 10.0, 1.0]
    """
    levels = _levels(ratings) if points is None else np.asarray(points)
    given = ratings.dropna(subset=["rating"])
    table = pd.crosstab(given["sketch_id"], given["rating"].astype(int))
    table = table.reindex(columns=levels, fill_value=0)
    participants = given.groupby("sketch_id", observed=True)["participant"].nunique()
    counts = table.div(table.sum(axis=1), axis=0) * images_per_sketch
    counts.columns = [f"count_{k}" for k in levels]
    counts["n_pilot_raters"] = participants.reindex(table.index).to_numpy()
    counts.index = counts.index.astype(str)
    return counts


def sketch_spread(counts: pd.DataFrame, images_per_sketch: int) -> pd.Series:
    """sigma_s: the root-mean-square deviation of :func:`rating_counts`' counts from N / k.

    Examples
    --------
    Four ratings at 1, two at 7 and one at each other point, scaled to N = 7: deviations
    (17, -4, -4, -4, -4, -4, 3) / 11 from the target 1.

    >>> counts = pd.DataFrame([np.array([4, 1, 1, 1, 1, 1, 2]) * 7 / 11], index=["s1"],
    ...                       columns=[f"count_{k}" for k in range(1, 8)])
    >>> round(float(sketch_spread(counts, 7)["s1"]), 6)  # sqrt(378 / (7 * 121))
    0.668043
    """
    levels = _count_levels(counts)
    values = counts[[f"count_{k}" for k in levels]].to_numpy(dtype=float)
    target = images_per_sketch / len(levels)
    return pd.Series(
        np.sqrt(((values - target) ** 2).mean(axis=1)), index=counts.index, name="sigma"
    )


def quotas(available: np.ndarray, total: int, rng: np.random.Generator) -> np.ndarray:
    """How many images to take at each point, as even as ``available`` allows (water-filling).

    Each point gets min(available, L) for the largest level L that does not exceed ``total``;
    the rest go one each to points with more than L candidates, drawn at random.

    >>> int(quotas(np.array([10, 10, 10, 10, 10, 10, 10]), 40, np.random.default_rng(0)).sum())
    40
    >>> q = quotas(np.array([1, 0, 2, 30, 30, 30, 30]), 40, np.random.default_rng(0))
    >>> q[:3].tolist(), int(q[3:].min()), int(q[3:].max())  # 37 over four points: 9, 9, 9, 10
    ([1, 0, 2], 9, 10)
    """
    available = np.asarray(available, dtype=int)
    if total > available.sum():
        raise ValueError(f"cannot take {total} of {available.sum()} images")
    # The water level: the largest L with sum(min(available, L)) <= total.
    level = 0
    while np.minimum(available, level + 1).sum() <= total and level < available.max():
        level += 1
    taken = np.minimum(available, level)
    # What is left goes one each to points that have more than L, drawn at random.
    more = np.flatnonzero(available > level)
    extra = rng.choice(more, size=total - taken.sum(), replace=False)
    taken[extra] += 1
    return taken


def distance_to_uniform(shares: npt.ArrayLike) -> float:
    """Total variation distance from the uniform distribution over the scale's points:
    0 for uniform shares, at most (k - 1) / k.

    >>> distance_to_uniform([1 / 7] * 7)
    0.0
    >>> round(distance_to_uniform([1, 0, 0, 0, 0, 0, 0]), 4)
    0.8571
    """
    shares = np.asarray(shares, dtype=float)
    return float(0.5 * np.abs(shares - 1.0 / len(shares)).sum())


def select_pairs(
    pool: pd.DataFrame,
    ratings: pd.DataFrame,
    *,
    sketches: int = paper.SKETCHES,
    images_per_sketch: int = paper.IMAGES_PER_SKETCH,
    seed: int = 0,
) -> Selection:
    """Choose K sketches and N images each from a pilot over the candidate pool.

    Parameters
    ----------
    pool
        The pool's manifest (its rows of role ``candidate``).
    ratings
        The pilot's ratings as :func:`sbir_study.analysis.load_ratings` returns them (its
        ``main`` rows); their ``attrs["scale"]`` gives the points.
    sketches, images_per_sketch
        K and N (the paper: 31 and 40).
    seed
        Seed of the quotas' and the images' draws.
    """
    for name, value in (("sketches", sketches), ("images_per_sketch", images_per_sketch)):
        if value < 1:
            raise InputError(f"{name}: expected a whole number >= 1, got {value}")
    candidates, pilot = _candidates_and_pilot(pool, ratings)
    levels_all = _levels(ratings)
    medians = pilot.groupby(["sketch_id", "image_id"])["rating"].median().dropna()
    level = np.clip(
        np.floor(medians.to_numpy(dtype=float) + 0.5), levels_all[0], levels_all[-1]
    ).astype(int)
    levels = pd.Series(level, index=medians.index, name="pilot_level")
    table = _sketch_table(candidates, pilot, levels, images_per_sketch, levels_all)
    kept = _closest_to_uniform(table, sketches, images_per_sketch)
    chosen_index = _choose_images(kept, levels, images_per_sketch, seed, levels_all)

    pairs = candidates.set_index(["sketch_id", "image_id"]).loc[chosen_index].reset_index()
    pairs = pairs[list(candidates.columns)].assign(role="main")
    pairs["pilot_median"] = medians.reindex(chosen_index).to_numpy()
    pairs["pilot_level"] = levels.reindex(chosen_index).to_numpy()
    order = pd.Index(sorted(kept))
    pairs = (
        pairs.assign(_s=order.get_indexer(pairs["sketch_id"]))
        .sort_values(["_s", "image_id"], kind="stable")
        .drop(columns="_s")
        .reset_index(drop=True)
    )

    in_selection = pd.MultiIndex.from_frame(pilot[["sketch_id", "image_id"]]).isin(chosen_index)
    selected_counts = rating_counts(pilot[in_selection], images_per_sketch, points=levels_all)
    table["selected"] = table.index.isin(kept)
    table["sigma_selected"] = sketch_spread(selected_counts, images_per_sketch).reindex(table.index)
    table = table.reset_index()[
        [
            "sketch_id",
            "n_candidates",
            "n_rated",
            "n_pilot_raters",
            "sigma",
            "selected",
            "sigma_selected",
            *(f"count_{k}" for k in levels_all),
        ]
    ]
    distribution = pd.concat(
        [
            _distribution("pool", pilot["rating"], levels_all),
            _distribution("selection", pilot.loc[in_selection, "rating"], levels_all),
            _distribution(
                "uniform", None, levels_all, total=int(pilot.loc[in_selection, "rating"].count())
            ),
        ],
        ignore_index=True,
    )
    return Selection(pairs=pairs, sketches=table, distribution=distribution)


def _candidates_and_pilot(pool: pd.DataFrame, ratings: pd.DataFrame):
    """The pool's candidates and the pilot's main ratings of them (of another pair: an error)."""
    candidates = pool[pool["role"] == "candidate"]
    if candidates.empty:
        raise InputError("stimulus set: no pairs with role 'candidate'; expected a pilot pool")
    pilot = ratings[ratings["phase"].astype(str) == "main"]
    pilot = pilot.assign(
        sketch_id=pilot["sketch_id"].astype(str), image_id=pilot["image_id"].astype(str)
    )
    known = pd.MultiIndex.from_frame(candidates[["sketch_id", "image_id"]])
    rated = pd.MultiIndex.from_frame(pilot[["sketch_id", "image_id"]])
    unknown = ~rated.isin(known)
    if unknown.any():
        sketch_id, image_id = rated[unknown][0]
        raise InputError(
            f"pilot ratings: pair ({sketch_id}, {image_id}) is not a candidate pair of the "
            "stimulus set; expected ratings of the pool's candidates"
        )
    return candidates, pilot


def _sketch_table(
    candidates, pilot, levels: pd.Series, images_per_sketch: int, points: np.ndarray
) -> pd.DataFrame:
    """Per candidate sketch: its pilot rating counts, candidates, rated images and spread."""
    counts = rating_counts(pilot, images_per_sketch, points=points).reindex(
        candidates["sketch_id"].unique()
    )
    spread = sketch_spread(counts.fillna(0.0), images_per_sketch)
    table = counts.assign(
        n_candidates=candidates.groupby("sketch_id").size(),
        n_rated=levels.groupby(level=0).size(),
        sigma=spread,
    )
    table = table.fillna({"n_rated": 0, "n_pilot_raters": 0}).astype(
        {"n_rated": int, "n_pilot_raters": int}
    )
    table.index.name = "sketch_id"
    return table


def _closest_to_uniform(table: pd.DataFrame, sketches: int, images_per_sketch: int) -> list:
    """The K sketches with enough rated candidates whose ratings are closest to uniform."""
    eligible = table[table["n_rated"] >= images_per_sketch]
    if len(eligible) < sketches:
        raise InputError(
            f"pilot ratings: {len(eligible)} sketches have at least {images_per_sketch} rated "
            f"candidate images; expected {sketches} (lower --sketches or --images, or rate "
            "more candidates)"
        )
    ranked = eligible.assign(_id=eligible.index).sort_values(["sigma", "_id"], kind="stable")
    return list(ranked.index[:sketches])


def _choose_images(
    kept: list, levels: pd.Series, images_per_sketch: int, seed: int, points: np.ndarray
):
    """N images of each kept sketch by the quotas, from one seeded stream in sketch order."""
    rng = np.random.default_rng(seed)
    chosen: list[tuple[str, str]] = []
    for sketch_id in sorted(kept):
        sketch_levels = levels.loc[sketch_id]
        available = np.array([(sketch_levels == k).sum() for k in points])
        take = quotas(available, images_per_sketch, rng)
        for k, n in zip(points, take, strict=True):
            if n:
                at_k = sketch_levels.index[sketch_levels.to_numpy() == k].to_numpy()
                chosen.extend(
                    (sketch_id, image_id) for image_id in rng.choice(at_k, n, replace=False)
                )
    return pd.MultiIndex.from_tuples(chosen, names=["sketch_id", "image_id"])


def _distribution(
    name: str, rating: pd.Series | None, points: np.ndarray, total: int = 0
) -> pd.DataFrame:
    if rating is None:
        count = np.full(len(points), total / len(points))
    else:
        given = rating.dropna().astype(int)
        count = given.value_counts().reindex(points, fill_value=0).to_numpy(dtype=float)
    share = count / count.sum() if count.sum() else np.full(len(points), np.nan)
    return pd.DataFrame({"dataset": name, "rating": points, "count": count, "share": share})


def write_selection(
    pool_folder: str | Path,
    ratings: pd.DataFrame,
    out: str | Path,
    *,
    sketches: int = paper.SKETCHES,
    images_per_sketch: int = paper.IMAGES_PER_SKETCH,
    seed: int = 0,
    anchors: AnchorDesign | None = None,
    overwrite: bool = False,
) -> Selection:
    """Select from the pool in ``pool_folder`` and write the selected set to ``out``.

    ``out`` gets the pool's files (hard links, else copies), a manifest of the selected and the
    anchor pairs, ``SHA256SUMS``, ``selection_sketches.csv``, ``selection_distribution.csv`` and
    ``selection.json`` (the pool's digest, K, N, the seed), written as every output is
    (``docs/outputs.md``).
    """
    from sbir_study.foundation.outputs import check_target, output_folder

    inputs = [
        pool_folder,
        *(s.path for s in getattr(ratings.attrs.get("provenance"), "sources", ())),
    ]
    check_target(out, "stimuli select", overwrite=overwrite, inputs=inputs)
    pool = load_set(pool_folder, anchors or AnchorDesign())
    selection = select_pairs(
        pool.manifest, ratings, sketches=sketches, images_per_sketch=images_per_sketch, seed=seed
    )
    with output_folder(out, "stimuli select", overwrite=overwrite, inputs=inputs) as folder:
        _write_selected(
            pool,
            pool_folder,
            selection,
            folder,
            sketches=sketches,
            images_per_sketch=images_per_sketch,
            seed=seed,
        )
    return selection


def _write_selected(
    pool,
    pool_folder,
    selection: Selection,
    out: Path,
    *,
    sketches: int,
    images_per_sketch: int,
    seed: int,
) -> None:
    import json

    manifest = pd.concat([pool.pairs("anchor"), selection.pairs], ignore_index=True)
    manifest = manifest.fillna({"pilot_median": "", "pilot_level": ""})
    files = sorted(set(manifest["sketch_path"]) | set(manifest["image_path"]))
    for relative in files:
        _link(pool.path(relative), out / relative)
    write_manifest(out, manifest)
    selection.sketches.to_csv(out / "selection_sketches.csv", index=False, lineterminator="\n")
    selection.distribution.to_csv(
        out / "selection_distribution.csv", index=False, lineterminator="\n"
    )
    about = {
        "Pool": str(Path(pool_folder).resolve()),
        "PoolDigest": pool.digest,
        "Sketches": sketches,
        "ImagesPerSketch": images_per_sketch,
        "Seed": seed,
        "PoolDistanceToUniform": distance_to_uniform(_shares(selection, "pool")),
        "SelectionDistanceToUniform": distance_to_uniform(_shares(selection, "selection")),
    }
    (out / "selection.json").write_text(json.dumps(about, indent=2) + "\n", encoding="utf-8")
    write_checksums(
        out,
        [
            *files,
            MANIFEST,
            "selection_sketches.csv",
            "selection_distribution.csv",
            "selection.json",
        ],
    )


def _shares(selection: Selection, dataset: str) -> np.ndarray:
    table = selection.distribution
    return table.loc[table["dataset"] == dataset, "share"].to_numpy()


def _link(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)
