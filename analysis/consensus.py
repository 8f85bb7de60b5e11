"""The consensus ground truth and each participant's agreement with it.

Eitz et al. (2011), Sec. 3.2: per sketch, the images ordered by mean rating are the
benchmark retrieval systems are scored against, and each participant's tau_b against
it shows how well it represents people. Sec. 3.3.2: anchoring consistency, the
repeated anchor ratings against the prescribed ones.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from sbir_study.foundation.checks import bad_ids, check_id, check_option
from sbir_study.foundation.scale import PAPER_SCALE, Scale

from . import _kernels
from .agreement import undefined_tau_reasons
from .cube import RatingCube, main_phase_cube, rating_cube
from .orientation import ratings_scale

__all__ = [
    "RELEVANT_BELOW",
    "anchoring_consistency",
    "consensus_ground_truth",
    "participant_vs_consensus",
    "write_binary_qrels",
    "write_qrels",
]

#: Binary relevance on the paper's scale: an image is relevant to its sketch when its mean
#: rating is below this, the middle of the 7-point scale. Equivalent to a qrels grade of at
#: least 4. Another scale's cut is its :attr:`~sbir_study.foundation.scale.Scale.relevant_below`.
RELEVANT_BELOW = PAPER_SCALE.relevant_below


def consensus_ground_truth(ratings: pd.DataFrame) -> pd.DataFrame:
    """Per sketch, the images of the main phase ordered by mean rating (missing left out).

    Returns ``sketch_id, image_id, mean_rating, median_rating, sd_rating (ddof 1),
    n_ratings, rank``, by sketch then rank; rank 1 is the best match, ties share their
    average rank, a pair nobody rated has no rank. Ratings are read as they are (turn a
    high-is-best scale first: :func:`~sbir_study.analysis.orientation.in_paper_orientation`);
    ``attrs["scale"]`` carries their scale for :func:`write_qrels`. Eitz et al. (2011),
    Sec. 3.2.

    Examples
    --------
    >>> table = pd.DataFrame({"participant": ["1", "2", "1", "2"], "sketch_id": "s",
    ...                       "image_id": ["a", "a", "b", "b"], "phase": "main",
    ...                       "rating": [2, 4, 1, 2]})
    >>> consensus_ground_truth(table)
      sketch_id image_id  mean_rating  median_rating  sd_rating  n_ratings  rank
    0         s        b          1.5            1.5   0.707107          2   1.0
    1         s        a          3.0            3.0   1.414214          2   2.0
    """
    main = ratings.loc[ratings["phase"] == "main", ["sketch_id", "image_id", "rating"]]
    rating = main["rating"].astype("float64")
    grouped = rating.groupby([main["sketch_id"], main["image_id"]], sort=True)
    table = pd.DataFrame(
        {
            "mean_rating": grouped.mean(),
            "median_rating": grouped.median(),
            "sd_rating": grouped.std(ddof=1),
            "n_ratings": grouped.count().astype("int64"),
        }
    ).reset_index()
    table["rank"] = table.groupby("sketch_id")["mean_rating"].rank(method="average")
    table = table.sort_values(["sketch_id", "rank"], na_position="last", kind="stable")
    table = table.reset_index(drop=True)
    table.attrs["scale"] = ratings_scale(ratings)
    return table


def write_qrels(
    ground_truth: pd.DataFrame, path: str | Path, *, scale: Scale | None = None
) -> None:
    """Write the ground truth as TREC qrels: ``sketch_id 0 image_id grade``.

    grade = high - round(mean_rating) in the paper's orientation
    (:meth:`~sbir_study.foundation.scale.Scale.grade`): k - 1 is the best match, 0 the
    worst, and a mean halfway between rounds to the worse (3.5 -> 4). ``scale`` defaults
    to ``ground_truth.attrs["scale"]``, else the paper's. Unrated pairs are left out;
    nothing is written if an id is bad (:func:`~sbir_study.foundation.checks.check_id`).
    """
    rated = ground_truth.dropna(subset=["mean_rating"])
    for column in ("sketch_id", "image_id"):
        # A space or a line break in an id would forge fields or lines of the qrels.
        bad = bad_ids(rated[column].astype(str))
        if bad.any():
            check_id(rated[column].astype(str).to_numpy()[bad][0], f"{path}: {column}")
    grade = (scale or ratings_scale(ground_truth)).grade(rated["mean_rating"].to_numpy())
    _write_qrels_lines(path, rated, grade)


def _write_qrels_lines(path: str | Path, rated: pd.DataFrame, grades: np.ndarray) -> None:
    lines = zip(rated["sketch_id"], rated["image_id"], grades, strict=True)
    Path(path).write_text("".join(f"{s} 0 {i} {g}\n" for s, i, g in lines), encoding="utf-8")


def write_binary_qrels(
    ground_truth: pd.DataFrame,
    path: str | Path,
    *,
    relevant_below: float | None = None,
    scale: Scale | None = None,
) -> None:
    """Write binary TREC qrels: ``sketch_id 0 image_id 1`` for a relevant image, else 0.

    Relevant: mean rating (paper's orientation) below ``relevant_below``, by default the
    middle of ``scale`` (:attr:`~sbir_study.foundation.scale.Scale.relevant_below`: 3.5 on
    1..7, 2.5 on 1..5 and 1..4, 1.5 on 1..2). ``sbir-study evaluate`` judges P@k, AP,
    R-precision and SHREC's measures so; trec_eval, ranx and ir_measures count
    relevance >= 1 as relevant, so they agree on this file. Unrated pairs are left out.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "binary.qrels"
    >>> truth = pd.DataFrame({"sketch_id": "s", "image_id": ["a", "b", "c"],
    ...                       "mean_rating": [1.5, 3.5, 6.0]})
    >>> write_binary_qrels(truth, path)
    >>> print(path.read_text(), end="")
    s 0 a 1
    s 0 b 0
    s 0 c 0
    """
    if relevant_below is None:
        relevant_below = (scale or ratings_scale(ground_truth)).relevant_below
    rated = ground_truth.dropna(subset=["mean_rating"])
    relevant = (rated["mean_rating"].to_numpy(dtype=np.float64) < relevant_below).astype(int)
    _write_qrels_lines(path, rated, relevant)


def participant_vs_consensus(
    ratings: pd.DataFrame, *, alternative: str = "greater", cube: RatingCube | None = None
) -> pd.DataFrame:
    """Each participant's tau_b against the consensus, per sketch of the main phase.

    Returns
    -------
    DataFrame
        ``participant, sketch_id, tau_b, p_value, tau_b_loo, p_value_loo, n_items, reason,
        reason_loo``. ``tau_b`` is against the mean over all participants (as in the
        paper), ``tau_b_loo`` over the others only, which does not reward agreeing with
        one's own share. An image has an inclusive consensus where two participants rated
        it, a leave-one-out one where another did: else a tau_b would be against one's own
        ratings. An undefined test has empty tau_b and p-value, and ``reason``
        (``reason_loo``) says why: ``one rater``, ``no consensus``, ``fewer than 3 shared
        images``, ``constant: <participant>`` or ``constant: consensus``.

    Eitz et al. (2011), Sec. 3.3.2 (third analysis, Fig. 6).
    """
    check_option("alternative", alternative, _kernels.ALTERNATIVES)
    cube = main_phase_cube(ratings, cube)
    if cube is None or cube.values.size == 0:
        columns = ["participant", "sketch_id", "tau_b", "p_value", "tau_b_loo", "p_value_loo"]
        return pd.DataFrame(columns=[*columns, "n_items", "reason", "reason_loo"])
    values = cube.values  # sketches x participants x images
    rated = ~np.isnan(values)
    total = np.nansum(values, axis=1, keepdims=True)
    count = rated.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        # An image one participant rated has no consensus: its mean is that one rating.
        inclusive = np.broadcast_to(np.where(count >= 2, total / count, np.nan), values.shape)
        others = np.where(rated, (total - np.nan_to_num(values)) / (count - 1), total / count)
    rows = values.reshape(-1, values.shape[2])
    inclusive, others = inclusive.reshape(rows.shape), others.reshape(rows.shape)
    # Each participant's item-pair signs once for both consensuses: where the participant
    # rated, the two leave out the same images (those no one else rated).
    (tau, p, n), (tau_loo, p_loo, _) = _kernels.paired_rows_tau_b_each(
        rows, [inclusive, others], alternative
    )
    participant = np.tile(cube.participants, len(cube.sketches))
    raters = np.repeat(rated.any(axis=2).sum(axis=1), len(cube.participants))
    reason = _consensus_reasons(rows, inclusive, p, participant, raters)
    reason_loo = _consensus_reasons(rows, others, p_loo, participant, raters)
    # A tau_b with no test (two shared images) is no result either.
    tau[np.isnan(p)] = np.nan
    tau_loo[np.isnan(p_loo)] = np.nan
    return _per_participant_and_sketch(
        cube,
        rated.any(axis=2),
        tau_b=tau,
        p_value=p,
        tau_b_loo=tau_loo,
        p_value_loo=p_loo,
        n_items=n,
        reason=reason,
        reason_loo=reason_loo,
    )


def _consensus_reasons(rows, consensus, p, participant, raters) -> np.ndarray:
    """Why each undefined participant-vs-consensus test is undefined; "" where defined."""
    reason = np.full(p.size, "", dtype=object)
    undefined = np.flatnonzero(np.isnan(p))
    if undefined.size:
        reason[undefined] = undefined_tau_reasons(
            rows[undefined],
            consensus[undefined],
            participant[undefined],
            ["consensus"] * undefined.size,
        )
        shared = (~np.isnan(rows[undefined]) & ~np.isnan(consensus[undefined])).sum(axis=1)
        reason[undefined[shared == 0]] = "no consensus"
        reason[undefined[raters[undefined] < 2]] = "one rater"
    return reason


def anchoring_consistency(ratings: pd.DataFrame, *, alternative: str = "greater") -> pd.DataFrame:
    """tau_b between each participant's repeated anchor ratings and the prescribed ones.

    Returns ``participant, sketch_id, tau_b, p_value, n_items, reason``, one row per
    participant and anchor sketch; an undefined test (``constant: <participant>``) has
    empty tau_b and p-value. Eitz et al. (2011), Sec. 2.3.1 and 3.3.2 (Fig. 4): 77.4% of
    these correlations were significant.
    """
    check_option("alternative", alternative, _kernels.ALTERNATIVES)
    repeats = ratings[ratings["phase"] == "anchor_repeat"]
    columns = ["participant", "sketch_id", "tau_b", "p_value", "n_items", "reason"]
    if repeats.empty:
        return pd.DataFrame(columns=columns)
    given = rating_cube(repeats, "rating")
    prescribed = rating_cube(repeats, "anchor_rating")
    rows = given.values.reshape(-1, given.values.shape[2])
    expected = prescribed.values.reshape(rows.shape)
    tau, p, n = _kernels.paired_rows_tau_b(rows, expected, alternative)
    reason = np.full(p.size, "", dtype=object)
    undefined = np.flatnonzero(np.isnan(p))
    if undefined.size:
        participant = np.tile(given.participants, len(given.sketches))[undefined]
        reason[undefined] = undefined_tau_reasons(
            rows[undefined], expected[undefined], participant, ["prescribed"] * undefined.size
        )
        tau[undefined] = np.nan
    shown = (~np.isnan(prescribed.values)).any(axis=2)
    return _per_participant_and_sketch(given, shown, tau_b=tau, p_value=p, n_items=n, reason=reason)


def _per_participant_and_sketch(cube, kept: np.ndarray, **columns) -> pd.DataFrame:
    """Per-(sketch, participant) values in the cube's order, rows ``kept``, by participant."""
    sketch_index, participant_index = np.divmod(np.arange(kept.size), len(cube.participants))
    table = pd.DataFrame(
        {
            "participant": cube.participants[participant_index],
            "sketch_id": cube.sketches[sketch_index],
            **columns,
        }
    )
    table = table[kept.reshape(-1)]
    return table.sort_values(["participant", "sketch_id"], kind="stable").reset_index(drop=True)
