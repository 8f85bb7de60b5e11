"""Scoring retrieval systems against the ground truth: the work of ``sbir-study evaluate``.

Every measure per system and sketch, each mean with a bootstrap interval, paired tests
between the systems (:mod:`.comparison`) and, with the participants' ratings, the human
ceiling: each participant's tau_b against the others' consensus, the level "an ideal
system would perform similar to" (Eitz et al. 2011, Sec. 3.2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from sbir_study.foundation.checks import InputError, check_option

from .. import _kernels
from ..consensus import consensus_ground_truth, participant_vs_consensus
from ..cube import RatingCube, main_phase_cube, rating_cube
from ..orientation import in_paper_orientation, ratings_scale
from .comparison import CORRECTIONS, bootstrap_mean, compare_systems
from .measures.shrec import RECALL_LEVELS, precision_at_recall
from .measures.table import RunView, measure, measure_direction, measure_values
from .runs import GroundTruth, Run

__all__ = [
    "HUMAN",
    "MISSING",
    "Evaluation",
    "EvaluationOptions",
    "evaluate_runs",
    "ratings_name",
    "score_run",
]

#: The name under which the participants (leave-one-out) appear beside the systems.
HUMAN = "human"
#: What a sketch a run leaves out scores (``--missing``): 0, as trec_eval -c, or nothing.
MISSING = ("zero", "skip")


@dataclass(frozen=True)
class EvaluationOptions:
    """Options of :func:`evaluate_runs`, as ``docs/evaluation.md`` gives them.

    ``relevant_below`` None is the middle of the ground truth's scale. ``missing``
    ``"zero"`` (trec_eval's ``-c``) keeps a system that abstains on a sketch from a mean
    over fewer, easier ones. ``correct`` is Holm's family, ``baseline`` a system to
    compare every other one with, instead of every pair.
    """

    relevant_below: float | None = None
    cutoffs: tuple[int, ...] = (5, 10, 20)
    alternative: str = "greater"
    alpha: float = 0.05
    bootstrap: int = 10_000
    permutations: int = 10_000
    seed: int = 0
    missing: str = "zero"
    correct: str = "pairs"
    baseline: str | None = None

    def __post_init__(self) -> None:
        check_option("alternative", self.alternative, _kernels.ALTERNATIVES)
        check_option("missing", self.missing, MISSING)
        check_option("correct", self.correct, CORRECTIONS)
        # The cut's range is the ground truth's scale, checked when the runs are scored.
        below = self.relevant_below
        if below is not None and (
            isinstance(below, bool)
            or not isinstance(below, int | float)
            or not math.isfinite(below)
        ):
            raise InputError(f"relevant_below: expected a mean rating, got {below!r}")
        if not self.cutoffs or any(not isinstance(k, int) or k < 1 for k in self.cutoffs):
            raise InputError(f"cutoffs: expected whole numbers >= 1, got {self.cutoffs!r}")
        if not 0.0 < self.alpha < 1.0:
            raise InputError(f"alpha: expected a level between 0 and 1, got {self.alpha!r}")
        for name in ("bootstrap", "permutations"):
            if getattr(self, name) < 100:
                raise InputError(f"{name}: expected at least 100 resamples")


@dataclass
class Evaluation:
    """The tables of one evaluation (the files of :func:`write_evaluation`)."""

    per_sketch: pd.DataFrame
    summary: pd.DataFrame
    comparisons: pd.DataFrame
    pr_curve: pd.DataFrame
    human: pd.DataFrame | None
    options: EvaluationOptions
    inputs: dict = field(default_factory=dict)
    truth: GroundTruth | None = None
    #: Per system, the ground truth's sketches for which its run returns no judged image.
    missing: dict[str, list[str]] = field(default_factory=dict)


def _ratings_layout(
    ratings: pd.DataFrame, truth: GroundTruth, relevant_below: float, cube: RatingCube | None
) -> tuple[np.ndarray, np.ndarray]:
    """The main-phase ratings as (sketches, participants, images) aligned with ``truth``,
    and the participants who judged each image relevant, once their consensus is checked
    to be the ground truth."""
    consensus = consensus_ground_truth(ratings).dropna(subset=["mean_rating"])
    mine = truth.table()
    merged = mine.merge(
        consensus[["sketch_id", "image_id", "mean_rating"]].astype(
            {"sketch_id": str, "image_id": str}
        ),
        on=["sketch_id", "image_id"],
        how="outer",
        suffixes=("_truth", "_ratings"),
        indicator=True,
    )
    only = merged[merged["_merge"] != "both"]
    if not only.empty:
        row = only.iloc[0]
        where = "the ground truth" if row["_merge"] == "left_only" else "the ratings"
        other = "the ratings" if row["_merge"] == "left_only" else "the ground truth"
        pair = f"({row['sketch_id']}, {row['image_id']})"
        raise InputError(
            f"{ratings_name(ratings)}: the pair {pair} is in {where} but not in {other}; expected "
            "the ratings the ground truth was computed from"
        )
    off = (merged["mean_rating_truth"] - merged["mean_rating_ratings"]).abs() > 1e-6
    if off.any():
        row = merged[off].iloc[0]
        raise InputError(
            f"{ratings_name(ratings)}: the pair ({row['sketch_id']}, {row['image_id']}) has mean "
            f"rating {row['mean_rating_ratings']:.6g} in the ratings but "
            f"{row['mean_rating_truth']:.6g} in the ground truth; expected the ratings the "
            "ground truth was computed from"
        )
    if cube is None:  # no main-phase rows: an empty cube
        cube = rating_cube(ratings[ratings["phase"] == "main"])
    cube_sketch = pd.Index(np.asarray(cube.sketches, dtype=str))
    width = truth.mean_rating.shape[1]
    given = np.full((len(truth.sketches), len(cube.participants), width), np.nan)
    for s, (sketch, images) in enumerate(zip(truth.sketches, truth.images, strict=True)):
        c = cube_sketch.get_loc(str(sketch))
        at = pd.Index(np.asarray(cube.images[c], dtype=str)).get_indexer(images.astype(str))
        given[s, :, : len(images)] = cube.values[c][:, at]
    with np.errstate(invalid="ignore"):
        weight = (given < relevant_below).sum(axis=1).astype(np.float64)
    weight[~truth.judged] = np.nan
    return given, weight


def ratings_name(ratings: pd.DataFrame) -> str:
    """The ratings as messages name them: their file, or their BIDS dataset's folder."""
    sources = list(getattr(ratings.attrs.get("provenance"), "sources", ()))
    if len(sources) == 1:
        return sources[0].path
    for folder in Path(sources[0].path).parents if sources else ():
        if folder.name.startswith("sub-"):
            return str(folder.parent)
    return "ratings"


def score_run(
    truth: GroundTruth,
    run: Run,
    options: EvaluationOptions = EvaluationOptions(),
    *,
    ratings: np.ndarray | None = None,
    weight: np.ndarray | None = None,
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Every measure of one run per sketch, and its precision at :data:`RECALL_LEVELS`
    per sketch; ``ratings`` and ``weight`` (of :func:`evaluate_runs`) add ``pwh@k`` and
    ``psr``."""
    relevant = truth.relevant(options.relevant_below)
    view = RunView(
        rank=run.rank,
        score=run.score,
        n_returned=run.n_returned,
        mean_rating=truth.mean_rating,
        grade=truth.grade,
        relevant=relevant,
        judged=truth.judged,
        alternative=options.alternative,
        weight=weight,
        ratings=ratings,
    )
    values = measure_values(view, options.cutoffs)
    return values, precision_at_recall(run.rank, relevant, RECALL_LEVELS)


def evaluate_runs(
    truth: GroundTruth,
    runs: list[Run],
    options: EvaluationOptions = EvaluationOptions(),
    *,
    ratings: pd.DataFrame | None = None,
) -> Evaluation:
    """Score every run, summarise, compare, and (with ``ratings``) set the human ceiling.

    Parameters
    ----------
    runs
        One per system, with distinct names (``"human"`` is reserved).
    ratings
        The validated ratings the ground truth was computed from, on its scale (both
        checked): they give the human ceiling, ``pwh@k`` and ``psr``.

    The relevance cut must lie above the scale's low end and at most at its high end;
    the evaluation's options hold the cut used.
    """
    _check_names([r.name for r in runs], options.baseline)
    options = _with_relevance_cut(truth, options, ratings)
    given = weight = human = None
    if ratings is not None:
        ratings = in_paper_orientation(ratings)
        # One cube for the layout and the human level: the largest array evaluate holds.
        cube = main_phase_cube(ratings)
        # With ratings the ground truth holds mean ratings, and the options a cut of them.
        cut = options.relevant_below if options.relevant_below is not None else math.nan
        given, weight = _ratings_layout(ratings, truth, cut, cube)
        human = participant_vs_consensus(ratings, alternative=options.alternative, cube=cube)
        human = human[["participant", "sketch_id", "tau_b_loo", "p_value_loo", "n_items"]]
    sketches = np.asarray(truth.sketches, dtype=object)
    frames, curves, missing = [], [], {}
    for run in runs:
        values, curve = score_run(truth, run, options, ratings=given, weight=weight)
        absent = _absent_sketches(truth, run)
        values, curve = _score_absent(values, curve, absent, truth, options.missing)
        missing[run.name] = [str(s) for s in sketches[absent]]
        frames += [_long(run.name, sketches, name, value) for name, value in values.items()]
        curves.append(_mean_curve(run.name, curve))
    if human is not None:
        per_sketch_human = human.groupby("sketch_id", observed=True)["tau_b_loo"].mean()
        per_sketch_human.index = per_sketch_human.index.astype(str)
        per_sketch_human = per_sketch_human.reindex(pd.Index(sketches).astype(str))
        frames.append(_long(HUMAN, sketches, "tau_b", per_sketch_human.to_numpy()))
    per_sketch = pd.concat(frames, ignore_index=True)
    summary = _summarise(per_sketch, [r.name for r in runs], options)
    summarised = [m for m in dict.fromkeys(per_sketch["measure"]) if measure(m).summarised]
    comparisons = compare_systems(
        per_sketch[per_sketch["system"] != HUMAN],
        measures=summarised,
        alpha=options.alpha,
        n_resamples=options.permutations,
        seed=options.seed,
        bootstrap=options.bootstrap,
        correct=options.correct,
        baseline=options.baseline,
    )
    summary = _mark_significant(summary, comparisons)
    summary = _mark_missing(summary, missing, len(sketches))
    return Evaluation(
        per_sketch,
        summary,
        comparisons,
        pd.concat(curves, ignore_index=True),
        human,
        options,
        truth=truth,
        missing=missing,
    )


def _check_names(names: list[str], baseline: str | None) -> None:
    """The run names are distinct, not the participants', fit to name a file, and name the
    baseline."""
    if not names:
        raise InputError("runs: expected at least one retrieval run")
    for name in names:
        if name == HUMAN:
            raise InputError(f"run name {HUMAN!r}: reserved for the participants; pass --name")
        if names.count(name) > 1:
            raise InputError(f"run name {name!r}: given to two runs; name them apart with --name")
        if not name or name in (".", "..") or any(c in name for c in "/\\\0"):
            raise InputError(
                f"run name {name!r}: expected a name without a path separator (it names the "
                "file per_sketch_trec/<name>.txt); pass --name"
            )
    if baseline is not None and baseline not in names:
        raise InputError(
            f"--baseline {baseline}: no run has that name; expected one of {', '.join(names)}"
        )


def _with_relevance_cut(
    truth: GroundTruth, options: EvaluationOptions, ratings: pd.DataFrame | None
) -> EvaluationOptions:
    """``options`` with the relevance cut (the scale's middle unless given; none for qrels),
    once the cut and the ratings are checked to fit the ground truth."""
    scale = truth.scale
    if ratings is not None and ratings_scale(ratings) != scale:
        raise InputError(
            f"{ratings_name(ratings)}: on the scale {ratings_scale(ratings)}, the ground truth on "
            f"{scale}; expected the ratings the ground truth was computed from"
        )
    if truth.from_qrels:
        # Grades: relevance is grade >= 1, and there is no consensus to check ratings against.
        if ratings is not None:
            raise InputError(
                f"--ratings: the ground truth {truth.source} is TREC qrels, which hold no mean "
                "ratings to check the ratings against; expected the ground_truth.csv of the "
                "analyze of those ratings"
            )
        if options.relevant_below is not None:
            raise InputError(
                f"--relevant-below {options.relevant_below:g}: a cut of mean ratings, but the "
                f"ground truth {truth.source} is TREC qrels (relevant: grade >= 1); drop it"
            )
        return options
    below = scale.relevant_below if options.relevant_below is None else options.relevant_below
    if not scale.low < below <= scale.high:
        raise InputError(
            f"--relevant-below {below:g}: expected a mean rating above "
            f"{scale.low} and at most {scale.high} (the ground truth's scale {scale})"
        )
    return replace(options, relevant_below=below)


def _long(system: str, sketches: np.ndarray, name: str, values: np.ndarray) -> pd.DataFrame:
    """One system's values of one measure as rows of ``per_sketch.csv``."""
    return pd.DataFrame({"system": system, "sketch_id": sketches, "measure": name, "value": values})


def _mean_curve(system: str, curve: np.ndarray) -> pd.DataFrame:
    """One system's rows of ``pr_curve.csv``: its mean precision at each recall level."""
    finite = np.isfinite(curve)
    return pd.DataFrame(
        {
            "system": system,
            "recall": RECALL_LEVELS,
            "precision": np.nanmean(curve, axis=0)
            if finite.any()
            else np.full(RECALL_LEVELS.size, np.nan),
            "n_sketches": finite.sum(axis=0),
        }
    )


def _absent_sketches(truth: GroundTruth, run: Run) -> np.ndarray:
    """The sketches for which ``run`` returns no judged image; a run without any sketch
    left is refused."""
    absent = ~np.isfinite(run.rank).any(axis=1)
    if absent.all():
        raise InputError(
            f"{run.source or run.name}: returns no judged image of any of the "
            f"{len(truth.sketches)} sketches of the ground truth ({truth.source}); expected a "
            "run of the same sketches and images"
        )
    return absent


def _score_absent(
    values: dict[str, np.ndarray],
    curve: np.ndarray,
    absent: np.ndarray,
    truth: GroundTruth,
    missing: str,
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The measures of the sketches a run leaves out, by ``--missing`` as
    ``docs/evaluation.md`` gives it: ``"zero"`` sets tau_b and PSR (undefined without a
    ranking) to 0, where the other measures are 0 or worst as computed; ``"skip"`` NaN."""
    if not absent.any():
        return values, curve
    values = {name: value.copy() for name, value in values.items()}
    if missing == "skip":
        for value in values.values():
            value[absent] = np.nan
        curve = curve.copy()
        curve[absent] = np.nan
        return values, curve
    with np.errstate(invalid="ignore"):
        ranked = np.nanmax(truth.mean_rating, axis=1) > np.nanmin(truth.mean_rating, axis=1)
    values["tau_b"][absent & ranked] = 0.0
    if "psr" in values:  # undefined where no participant rated every image: stays so
        values["psr"][absent & np.isfinite(values["psr"])] = 0.0
    if "tau_b_p_value" in values:
        values["tau_b_p_value"][absent] = np.nan
    return values, curve


def _mark_missing(summary: pd.DataFrame, missing: dict[str, list[str]], total: int) -> pd.DataFrame:
    """The summary with ``sketches_in_ground_truth``, ``sketches_ranked`` and
    ``missing_sketches`` (``;``-separated) of each system."""
    summary = summary.copy()
    gone = summary["system"].map(lambda system: missing.get(system, []))
    summary["sketches_in_ground_truth"] = total
    summary["sketches_ranked"] = total - gone.map(len)
    summary["missing_sketches"] = gone.map(";".join)
    return summary


def _summarise(
    per_sketch: pd.DataFrame, names: list[str], options: EvaluationOptions
) -> pd.DataFrame:
    """``summary.csv``: each mean with its bootstrap interval, and each system's tau_b as a
    fraction of the participants'."""
    from scipy import stats

    rows = []
    for (system, name), group in per_sketch.groupby(["system", "measure"], sort=False):
        if not measure(name).summarised:
            continue
        result = bootstrap_mean(group["value"], n_resamples=options.bootstrap, seed=options.seed)
        rows.append(_summary_row(system, name, *result))
    tau = per_sketch[per_sketch["measure"] == "tau_b"].pivot(
        index="sketch_id", columns="system", values="value"
    )
    if HUMAN not in tau.columns:
        return pd.DataFrame(rows)
    for system in names:
        pair = tau[[system, HUMAN]].dropna()
        mean = low = high = math.nan
        if len(pair) >= 1 and pair[HUMAN].mean() != 0:
            mean = pair[system].mean() / pair[HUMAN].mean()
        if len(pair) >= 2 and np.ptp(pair[system]) + np.ptp(pair[HUMAN]) > 0:
            interval = stats.bootstrap(
                (pair[system].to_numpy(), pair[HUMAN].to_numpy()),
                lambda a, b, axis: np.mean(a, axis=axis) / np.mean(b, axis=axis),
                paired=True,
                vectorized=True,
                method="percentile",
                n_resamples=options.bootstrap,
                rng=np.random.default_rng(options.seed),
            ).confidence_interval
            low, high = float(interval.low), float(interval.high)
        rows.append(_summary_row(system, "tau_b_human_fraction", mean, low, high, len(pair)))
    return pd.DataFrame(rows)


def _summary_row(
    system: str, name: str, mean: float, low: float, high: float, n: int
) -> dict[str, object]:
    """A row of ``summary.csv``."""
    keys = ("system", "measure", "mean", "ci_low", "ci_high", "n_sketches", "better")
    return dict(zip(keys, (system, name, mean, low, high, n, measure_direction(name)), strict=True))


def _mark_significant(summary: pd.DataFrame, comparisons: pd.DataFrame) -> pd.DataFrame:
    """The summary with ``significantly_better_than``: the systems each one beats on the
    measure by the Holm-corrected permutation test."""
    beats: dict[tuple[str, str], list[str]] = {}
    for row in comparisons[comparisons["significant"].astype(bool)].itertuples(index=False):
        a_better = row.mean_difference > 0
        if measure_direction(row.measure) == "lower":
            a_better = not a_better
        winner, loser = (row.system_a, row.system_b) if a_better else (row.system_b, row.system_a)
        beats.setdefault((winner, row.measure), []).append(loser)
    summary = summary.copy()
    pairs = zip(summary["system"], summary["measure"], strict=True)
    summary["significantly_better_than"] = [";".join(beats.get(pair, [])) for pair in pairs]
    return summary
