"""Scoring retrieval systems against the ground truth: the work of ``sbir-study evaluate``.

For each system (one run) and sketch, every measure of
:mod:`.measures`; per system and measure, the mean over the
sketches with a bootstrap interval; between every two systems, paired tests
over the sketches (:mod:`.comparison`); and, from the participants'
ratings when given, the human ceiling: each participant's tau_b against the
consensus of the others, the level "an ideal system would perform similar
to" (Eitz et al. 2011, Sec. 3.2), against which each system's tau_b is also
given as a fraction.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from sbir_study.foundation.checks import InputError, check_option
from sbir_study.foundation.html import DEFAULT_FIGURE_FORMATS
from sbir_study.foundation.html import figure_formats as checked_figure_formats
from sbir_study.foundation.outputs import output_folder
from sbir_study.foundation.provenance import software_versions
from sbir_study.foundation.scale import Scale

from .. import _kernels
from ..consensus import consensus_ground_truth, participant_vs_consensus, write_binary_qrels
from ..cube import RatingCube, main_phase_cube, rating_cube
from .comparison import CORRECTIONS, bootstrap_mean, compare_systems
from .measures import (
    MEASURES,
    RECALL_LEVELS,
    RunView,
    measure,
    measure_direction,
    measure_values,
    precision_at_recall,
)
from .runs import GroundTruth, Run

__all__ = [
    "HUMAN",
    "Evaluation",
    "EvaluationOptions",
    "evaluate_files",
    "evaluate_runs",
    "format_evaluation",
    "score_run",
    "trec_eval_q",
    "trec_measure_name",
    "write_evaluation",
]

#: The name under which the participants (leave-one-out) appear beside the systems.
HUMAN = "human"
#: What a sketch a run leaves out scores (``--missing``): 0 on every measure, as trec_eval -c
#: scores a query of the qrels the run does not have, or nothing (left out of the mean).
MISSING = ("zero", "skip")
#: The measures of each system that ``evaluation.json`` lists.
_HEADLINE = tuple(m.name for m in MEASURES if m.headline)


@dataclass(frozen=True)
class EvaluationOptions:
    """Options of :func:`evaluate_runs`.

    ``relevant_below`` ``None`` (the default) is the middle of the ground truth's scale,
    3.5 on the paper's. ``missing`` is what a sketch a run leaves out scores
    (:data:`MISSING`; default ``"zero"``, trec_eval's ``-c``: a system that abstains on a
    sketch is not rewarded by a mean over fewer, easier sketches). ``correct`` is Holm's
    family in the comparisons (``"pairs"`` of one measure, or ``"across-measures"``);
    ``baseline`` a system to compare every other one with, instead of every pair.
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
    """The tables of one evaluation (see :func:`write_evaluation` for the files)."""

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
):
    """The main-phase ratings as (sketches, participants, images) aligned with ``truth``,
    after checking that their consensus is the ground truth; ``cube`` is their
    :func:`~sbir_study.analysis.ratings.main_phase_cube`."""
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
            f"{_named(ratings)}: the pair {pair} is in {where} but not in {other}; expected "
            "the ratings the ground truth was computed from"
        )
    off = (merged["mean_rating_truth"] - merged["mean_rating_ratings"]).abs() > 1e-6
    if off.any():
        row = merged[off].iloc[0]
        raise InputError(
            f"{_named(ratings)}: the pair ({row['sketch_id']}, {row['image_id']}) has mean rating "
            f"{row['mean_rating_ratings']:.6g} in the ratings but {row['mean_rating_truth']:.6g} "
            "in the ground truth; expected the ratings the ground truth was computed from"
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


def _named(ratings: pd.DataFrame) -> str:
    """The ratings as messages name them: their file, or their BIDS dataset's folder."""
    sources = getattr(ratings.attrs.get("provenance"), "sources", ())
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
    """Every measure of one run, per sketch; and its precision-recall curve.

    Returns ``({measure: values per sketch}, precision at RECALL_LEVELS per sketch)``.
    ``ratings`` (sketches x participants x images) and ``weight`` (participants
    judging each image relevant) add ``pwh@k`` and ``psr``.
    """
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
    truth : GroundTruth
    runs : list of Run
        One per system, with distinct names (``"human"`` is reserved).
    ratings : DataFrame, optional
        The validated ratings the ground truth was computed from (checked):
        they give the human ceiling, ``pwh@k`` and ``psr``. On a scale whose high
        end is best they are read in the paper's orientation, as ``analyze``
        reads them (:func:`~sbir_study.analysis.orientation.in_paper_orientation`).

    ``options.relevant_below`` ``None`` is the middle of the ground truth's scale
    (:attr:`~sbir_study.foundation.scale.Scale.relevant_below`: 3.5 on the paper's
    1..7); a cut must lie above the scale's low end and at most at its high end.
    The returned evaluation's options hold the cut used. ``ratings`` on another
    scale than ``truth.scale`` are refused.
    """
    if not runs:
        raise InputError("runs: expected at least one retrieval run")
    names = [r.name for r in runs]
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
    if options.baseline is not None and options.baseline not in names:
        raise InputError(
            f"--baseline {options.baseline}: no run has that name; expected one of "
            f"{', '.join(names)}"
        )
    from ..orientation import in_paper_orientation, ratings_scale

    scale = truth.scale
    if ratings is not None and ratings_scale(ratings) != scale:
        raise InputError(
            f"{_named(ratings)}: on the scale {ratings_scale(ratings)}, the ground truth on "
            f"{scale}; expected the ratings the ground truth was computed from"
        )
    if truth.from_qrels:
        # Grades, not mean ratings: relevance is grade >= 1 as trec_eval's, and there is no
        # consensus to check ratings against.
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
    elif options.relevant_below is None:
        options = replace(options, relevant_below=scale.relevant_below)
    if not truth.from_qrels and not scale.low < options.relevant_below <= scale.high:
        raise InputError(
            f"--relevant-below {options.relevant_below:g}: expected a mean rating above "
            f"{scale.low} and at most {scale.high} (the ground truth's scale {scale})"
        )
    given = weight = None
    human = None
    if ratings is not None:
        ratings = in_paper_orientation(ratings)
        # One cube of the main phase for the layout and the human level: at crowd size
        # it is the largest array evaluate holds.
        cube = main_phase_cube(ratings)
        given, weight = _ratings_layout(ratings, truth, options.relevant_below, cube)
        human = participant_vs_consensus(ratings, alternative=options.alternative, cube=cube)
        human = human[["participant", "sketch_id", "tau_b_loo", "p_value_loo", "n_items"]]

    frames, curves = [], []
    missing = {}
    sketches = np.asarray(truth.sketches, dtype=object)
    for run in runs:
        values, curve = score_run(truth, run, options, ratings=given, weight=weight)
        absent = _absent_sketches(truth, run)
        values, curve = _score_absent(values, curve, absent, truth, options.missing)
        missing[run.name] = [str(s) for s in sketches[absent]]
        for name, per_sketch in values.items():
            frames.append(
                pd.DataFrame(
                    {
                        "system": run.name,
                        "sketch_id": sketches,
                        "measure": name,
                        "value": per_sketch,
                    }
                )
            )
        curves.append(
            pd.DataFrame(
                {
                    "system": run.name,
                    "recall": RECALL_LEVELS,
                    "precision": np.nanmean(curve, axis=0)
                    if np.isfinite(curve).any()
                    else np.full(RECALL_LEVELS.size, np.nan),
                    "n_sketches": np.isfinite(curve).sum(axis=0),
                }
            )
        )
    if human is not None:
        per_sketch_human = human.groupby("sketch_id", observed=True)["tau_b_loo"].mean()
        per_sketch_human.index = per_sketch_human.index.astype(str)
        per_sketch_human = per_sketch_human.reindex(pd.Index(sketches).astype(str))
        frames.append(
            pd.DataFrame(
                {
                    "system": HUMAN,
                    "sketch_id": sketches,
                    "measure": "tau_b",
                    "value": per_sketch_human.to_numpy(),
                }
            )
        )
    per_sketch = pd.concat(frames, ignore_index=True)
    summary = _summarise(per_sketch, names, options)
    summarised = [m for m in dict.fromkeys(per_sketch["measure"]) if measure(m).summarised]
    systems_only = per_sketch[per_sketch["system"] != HUMAN]
    comparisons = compare_systems(
        systems_only,
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


def _absent_sketches(truth: GroundTruth, run: Run) -> np.ndarray:
    """The sketches for which ``run`` returns none of the judged images (it leaves the
    sketch out, or ranks only images nobody rated for it). A run with no sketch left is
    refused: it shares nothing with the ground truth."""
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
    """Each measure's value for the sketches a run leaves out, by ``--missing``.

    ``"zero"`` is trec_eval's ``-c``: the run ranks none of the sketch's relevant images,
    so nDCG, P@k, AP and the SHREC measures are 0 as computed; tau_b, undefined without a
    ranking (one tie), and PSR are set to 0 too, so that every measure averages over the
    same sketches; the average rank keeps its value (the relevant images tied after every
    returned one, the worst it can be); measures the ground truth leaves undefined for the
    sketch (AP without relevant images) stay undefined. ``"skip"`` leaves the sketch out
    of every measure (NaN), as pytrec_eval and trec_eval without ``-c`` do.
    """
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


def _mark_missing(summary: pd.DataFrame, missing: dict[str, list[str]], total: int):
    """Add ``sketches_ranked`` (of ``sketches_in_ground_truth``) and ``missing_sketches`` (the
    sketches each system's run leaves out, ``;``-separated) to every row of the summary."""
    summary = summary.copy()
    gone = summary["system"].map(lambda system: missing.get(system, []))
    summary["sketches_in_ground_truth"] = total
    summary["sketches_ranked"] = total - gone.map(len)
    summary["missing_sketches"] = gone.map(";".join)
    return summary


def _summarise(per_sketch: pd.DataFrame, names: list[str], options) -> pd.DataFrame:
    from scipy import stats

    rows = []
    for (system, name), group in per_sketch.groupby(["system", "measure"], sort=False):
        if not measure(name).summarised:
            continue
        result = bootstrap_mean(group["value"], n_resamples=options.bootstrap, seed=options.seed)
        rows.append(
            {
                "system": system,
                "measure": name,
                "mean": result.mean,
                "ci_low": result.ci_low,
                "ci_high": result.ci_high,
                "n_sketches": result.n,
                "better": measure_direction(name),
            }
        )
    tau = per_sketch[per_sketch["measure"] == "tau_b"].pivot(
        index="sketch_id", columns="system", values="value"
    )
    if HUMAN in tau.columns:
        for system in names:
            pair = tau[[system, HUMAN]].dropna()
            row = {
                "system": system,
                "measure": "tau_b_human_fraction",
                "mean": np.nan,
                "ci_low": np.nan,
                "ci_high": np.nan,
                "n_sketches": len(pair),
                "better": measure_direction("tau_b_human_fraction"),
            }
            if len(pair) >= 1 and pair[HUMAN].mean() != 0:
                row["mean"] = pair[system].mean() / pair[HUMAN].mean()
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
                row["ci_low"], row["ci_high"] = float(interval.low), float(interval.high)
            rows.append(row)
    return pd.DataFrame(rows)


def _mark_significant(summary: pd.DataFrame, comparisons: pd.DataFrame) -> pd.DataFrame:
    """Add ``significantly_better_than``: the systems each one beats on the measure, by the
    Holm-corrected paired permutation test."""
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


def write_evaluation(
    evaluation: Evaluation,
    out: str | Path,
    *,
    figures: bool = True,
    figure_formats: Sequence[str] = DEFAULT_FIGURE_FORMATS,
    overwrite: bool = False,
) -> dict:
    """Write the evaluation to ``out``; returns the headline numbers (``evaluation.json``).

    Files: ``per_sketch.csv`` (``system, sketch_id, measure, value``),
    ``summary.csv`` (``system, measure, mean, ci_low, ci_high, n_sketches, better,
    significantly_better_than``), ``comparisons.csv`` (paired tests),
    ``pr_curve.csv`` (mean precision at each recall level), ``human_ceiling.csv``
    (with ratings: each participant's leave-one-out tau_b per sketch),
    ``ground_truth_binary.qrels`` (the binary relevance of this evaluation, for
    trec_eval, ranx and ir_measures),
    ``evaluation.json`` (inputs with SHA-256, options, software, headline per
    system), ``report.html`` and, with ``figures``, ``figures/`` (per-sketch
    tau_b and the precision-recall curves, each as PNG and PDF or in ``figure_formats``:
    :func:`~sbir_study.foundation.html.figure_formats`).

    ``out`` is written as every output is (``docs/outputs.md``): aside, then
    moved into place when complete; an existing ``out`` only with
    ``overwrite``, and only when an earlier ``evaluate`` wrote it.
    """
    formats = checked_figure_formats(figure_formats) if figures else ()
    inputs = [entry["path"] for entry in evaluation.inputs.get("files", [])]
    with output_folder(out, "evaluate", overwrite=overwrite, inputs=inputs) as folder:
        return _write_evaluation_into(evaluation, folder, figures=formats)


def _write_evaluation_into(evaluation: Evaluation, out: Path, *, figures: tuple[str, ...]) -> dict:
    evaluation.per_sketch.to_csv(out / "per_sketch.csv", index=False)
    evaluation.summary.to_csv(out / "summary.csv", index=False)
    evaluation.comparisons.to_csv(out / "comparisons.csv", index=False)
    evaluation.pr_curve.to_csv(out / "pr_curve.csv", index=False)
    if evaluation.human is not None:
        evaluation.human.to_csv(out / "human_ceiling.csv", index=False)
    (out / "per_sketch_trec").mkdir()
    for system in dict.fromkeys(evaluation.per_sketch["system"]):
        if system != HUMAN:
            path = out / "per_sketch_trec" / f"{system}.txt"
            path.write_text(
                trec_eval_q(evaluation.per_sketch, evaluation.summary, system), encoding="utf-8"
            )
    if evaluation.truth is not None and evaluation.truth.from_qrels:
        truth = evaluation.truth
        relevant = truth.relevant(None)[truth.judged].astype(int)
        table = truth.table()
        lines = [
            f"{s} 0 {i} {r}"
            for s, i, r in zip(table["sketch_id"], table["image_id"], relevant, strict=True)
        ]
        (out / "ground_truth_binary.qrels").write_text("\n".join(lines) + "\n", encoding="utf-8")
    elif evaluation.truth is not None:
        write_binary_qrels(
            evaluation.truth.table(),
            out / "ground_truth_binary.qrels",
            relevant_below=evaluation.options.relevant_below,
        )
    summary = evaluation.summary
    headline = {}
    for system in dict.fromkeys(summary["system"]):
        rows = summary[summary["system"] == system].set_index("measure")
        entry = {}
        for name in _HEADLINE:
            if name in rows.index:
                entry[name] = {
                    k: _plain(rows.loc[name, k])
                    for k in ("mean", "ci_low", "ci_high", "n_sketches")
                }
        if "tau_b" in rows.index and system != HUMAN:
            entry["tau_b"]["significantly_better_than"] = [
                s for s in str(rows.loc["tau_b", "significantly_better_than"]).split(";") if s
            ]
        headline[system] = entry
    result = {
        "systems": [s for s in dict.fromkeys(summary["system"]) if s != HUMAN],
        "n_sketches": int(evaluation.per_sketch["sketch_id"].nunique()),
        # The ground truth's scale, as analyze's summary.json records it: the grades and the
        # cut of the options are on it.
        "scale": str(evaluation.truth.scale) if evaluation.truth is not None else None,
        "human_ceiling": evaluation.human is not None,
        # Per system, the sketches its run leaves out (scored by options.missing).
        "missing_sketches": {system: list(gone) for system, gone in evaluation.missing.items()},
        "simulated": bool(evaluation.inputs.get("simulated", False)),
        "options": asdict(evaluation.options),
        "inputs": evaluation.inputs,
        "software": software_versions(),
        "headline": headline,
    }
    written = {}
    if figures:
        from .evaluation_figures import write_evaluation_figures  # matplotlib only when drawing

        written = write_evaluation_figures(
            out / "figures",
            evaluation.per_sketch,
            evaluation.pr_curve,
            evaluation.summary,
            formats=figures,
        )
    result["figures"] = sorted(written)
    (out / "evaluation.json").write_text(
        json.dumps(result, indent=2, allow_nan=False) + "\n", encoding="utf-8"
    )
    from .evaluation_report import write_evaluation_report

    scale = evaluation.truth.scale if evaluation.truth is not None else None
    write_evaluation_report(
        out / "report.html",
        result,
        evaluation.summary,
        evaluation.comparisons,
        written,
        scale=scale,
    )
    return result


#: trec_eval's names of the measures it shares with evaluate (``trec_eval -q`` lines).
_TREC_NAMES = {"ap": "map", "r_precision": "Rprec"}


def trec_measure_name(name: str) -> str:
    """The name trec_eval prints for a measure of ours, else ours: ``ndcg@10`` is
    ``ndcg_cut_10``, ``p@5`` ``P_5``, ``ap`` ``map``, ``r_precision`` ``Rprec``.

    Examples
    --------
    >>> [trec_measure_name(m) for m in ("ndcg", "ndcg@10", "p@5", "ap", "tau_b", "pwh@5")]
    ['ndcg', 'ndcg_cut_10', 'P_5', 'map', 'tau_b', 'pwh@5']
    """
    base, _, k = name.partition("@")
    if base == "ndcg" and k:
        return f"ndcg_cut_{k}"
    if base == "p" and k:
        return f"P_{k}"
    return _TREC_NAMES.get(name, name)


def trec_eval_q(per_sketch: pd.DataFrame, summary: pd.DataFrame, system: str) -> str:
    """One system's per-sketch values as ``trec_eval -q`` prints them.

    Per sketch (in the ground truth's order) a line ``measure<TAB>sketch<TAB>value``
    for each measure, then the ``all`` lines with the mean over the sketches: the layout
    of ``trec_eval -q`` (the measure name padded to 22 characters, four decimals),
    so that the tools that read trec_eval's output read this. The measures trec_eval
    has carry its names (:func:`trec_measure_name`); the others ours. A sketch on
    which a measure is undefined (AP without relevant images; a sketch left out under
    ``--missing skip``) has no line for it, as trec_eval prints none for a query it
    does not score.
    """
    mine = per_sketch[per_sketch["system"] == system]
    means = summary[summary["system"] == system].set_index("measure")["mean"]
    lines = []
    for sketch, group in mine.groupby("sketch_id", sort=False):
        for name, value in zip(group["measure"], group["value"], strict=True):
            if np.isfinite(value):
                lines.append(f"{trec_measure_name(name):<22}\t{sketch}\t{value:.4f}")
    for name in dict.fromkeys(mine["measure"]):
        if name in means.index and np.isfinite(means[name]):
            lines.append(f"{trec_measure_name(name):<22}\tall\t{means[name]:.4f}")
    return "\n".join(lines) + "\n"


def _relevance_text(options: EvaluationOptions) -> str:
    """What counts as relevant, in words: a mean-rating cut, or (qrels) grade >= 1."""
    if options.relevant_below is None:
        return "qrels grade >= 1"
    return f"mean rating below {options.relevant_below:g}"


def _missing_text(missing: list[str], total: int, mode: str) -> str:
    """`` on 30 of 31 sketches (missing s07, scored 0)`` for a run that leaves sketches out,
    else nothing."""
    if not missing:
        return ""
    shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
    how = "scored 0" if mode == "zero" else "left out"
    return f"  on {total - len(missing)} of {total} sketches (missing {shown}, {how})"


def _plain(value):
    if isinstance(value, np.integer | int):
        return int(value)
    value = float(value)
    return None if np.isnan(value) else value


def evaluate_files(
    ground_truth: str | Path,
    run_files: Sequence[str | Path],
    options: EvaluationOptions = EvaluationOptions(),
    *,
    names: Sequence[str] | None = None,
    ratings: str | Path | None = None,
    lower_is_better: bool = False,
    score_precision: str = "float32",
    scale: Scale | None = None,
) -> Evaluation:
    """Load a ground truth, runs and (optionally) ratings from files and score the runs.

    The files read are recorded in ``Evaluation.inputs`` with their SHA-256
    and line counts (``evaluation.json`` lists them). ``names`` gives each
    run's system name, in order (default: each file's name without its
    extension). ``score_precision`` is how scores are compared when a run is
    put in order (:func:`~sbir_study.analysis.retrieval.runs.load_run`).

    The ground truth's rating scale (its range, qrels grades and default
    relevance cut) is the scale of ``ratings`` when given, else the one the
    ``summary.json`` of the ``analyze`` that wrote the ground truth records, else
    ``scale`` (which is also the scale of a flat ratings table), else the paper's
    1..7. Two of these that differ are refused.
    """
    from ..ratings import load_ratings
    from .runs import load_ground_truth, load_run

    if names is not None and len(names) != len(run_files):
        raise InputError(
            f"--name: given {len(names)} times for {len(run_files)} runs; expected one name "
            "per run, in order"
        )
    table = load_ratings(ratings, scale=scale) if ratings is not None else None
    summary = _analyze_summary(ground_truth)
    truth = load_ground_truth(ground_truth, scale=_ground_truth_scale(table, summary, scale))
    runs = [
        load_run(
            path, truth, lower_is_better=lower_is_better, name=name, score_precision=score_precision
        )
        for path, name in zip(run_files, names or [None] * len(run_files), strict=True)
    ]
    evaluation = evaluate_runs(truth, runs, options, ratings=table)
    files = [
        {
            "role": "ground truth",
            "name": "",
            "path": str(ground_truth),
            "sha256": truth.sha256,
            "lines": truth.lines,
        }
    ]
    files += [
        {"role": "run", "name": r.name, "path": r.source, "sha256": r.sha256, "lines": r.lines}
        for r in runs
    ]
    if table is not None:
        for source in getattr(table.attrs.get("provenance"), "sources", ()):
            files.append(
                {
                    "role": "ratings",
                    "name": "",
                    "path": source.path,
                    "sha256": source.sha256,
                    "lines": source.rows,
                }
            )
    provenance = table.attrs.get("provenance") if table is not None else None
    simulated = bool(getattr(provenance, "simulated", False))
    evaluation.inputs = {
        "files": files,
        "lower_is_better": lower_is_better,
        "score_precision": score_precision,
        "simulated": simulated or bool(summary and summary[1].get("simulated")),
        "command": "sbir-study evaluate",
    }
    return evaluation


def _analyze_summary(path: str | Path) -> tuple[Path, dict] | None:
    """The ``summary.json`` of the ``analyze`` that wrote this ground truth, by its own
    records: the output record of its folder lists this very file (same SHA-256).
    Returns the summary's path and contents, or None (another file, or no summary)."""
    from sbir_study.foundation.outputs import read_record
    from sbir_study.foundation.provenance import file_digest

    path = Path(path)
    record = read_record(path.parent)
    if record is None or record.command != "analyze":
        return None
    try:
        if record.files.get(path.name) != file_digest(path).sha256:
            return None
        summary_path = path.parent / "summary.json"
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return (summary_path, summary) if isinstance(summary, dict) else None


def _ground_truth_scale(
    ratings: pd.DataFrame | None, summary: tuple[Path, dict] | None, given: Scale | None
) -> Scale:
    """The ground truth's scale: that of the ratings, else of analyze's summary.json, else
    ``given`` (``--scale``), else the paper's; two that differ are refused."""
    from sbir_study.foundation.scale import PAPER_SCALE

    from ..orientation import ratings_scale

    known = []
    if ratings is not None:
        known.append((f"the ratings {_named(ratings)}", ratings_scale(ratings)))
    if summary is not None and summary[1].get("scale") is not None:
        path, recorded = summary
        known.append((str(path), Scale.parse(recorded["scale"], what=f"{path}: scale")))
    if given is not None:
        known.append(("--scale", given))
    for name, scale in known[1:]:
        if scale != known[0][1]:
            raise InputError(
                f"{name}: the scale {scale}, where {known[0][0]} is on {known[0][1]}; expected "
                "the one scale of the ground truth"
            )
    return known[0][1] if known else PAPER_SCALE


def format_evaluation(evaluation: Evaluation, out: str | Path) -> str:
    """The lines ``sbir-study evaluate`` prints: each system's tau_b and headline measures."""
    out = Path(out)
    options = evaluation.options
    summary = evaluation.summary.set_index(["system", "measure"])
    n_systems = evaluation.summary.loc[evaluation.summary["system"] != HUMAN, "system"].nunique()
    simulated = (
        " against a ground truth from simulated ratings"
        if evaluation.inputs.get("simulated")
        else ""
    )
    n_sketches = evaluation.per_sketch["sketch_id"].nunique()
    lines = [
        f"Scored {n_systems} system{'s' if n_systems != 1 else ''} on {n_sketches} "
        f"sketches{simulated} (relevant: {_relevance_text(options)}):"
    ]
    order = summary.xs("tau_b", level="measure")["mean"].sort_values(ascending=False).index
    for system in order:
        row = summary.loc[(system, "tau_b")]
        text = f"  {system:<24} tau_b {row['mean']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"
        if system == HUMAN:
            text += "  (participants, each against the others' consensus)"
        else:
            if (system, "tau_b_human_fraction") in summary.index:
                text += f"  {summary.loc[(system, 'tau_b_human_fraction'), 'mean']:.0%} of human"
            text += (
                f"  ndcg {summary.loc[(system, 'ndcg'), 'mean']:.3f}"
                f"  ap {summary.loc[(system, 'ap'), 'mean']:.3f}"
            )
            text += _missing_text(evaluation.missing.get(system, []), n_sketches, options.missing)
        lines.append(text)
    tau = evaluation.comparisons[evaluation.comparisons["measure"] == "tau_b"]
    if n_systems < 2:
        lines.append("  one system: nothing to compare")
    else:
        against = f" with {options.baseline}" if options.baseline else ""
        family = "across the measures" if options.correct == "across-measures" else ""
        lines.append(
            f"  {int(tau['significant'].sum())} of {len(tau)} pairs of systems{against} differ "
            f"significantly in tau_b (paired permutation test, Holm{' ' + family if family else ''}"
            f", alpha {options.alpha:g})"
        )
        disagree = int(evaluation.comparisons["tests_disagree"].astype(bool).sum())
        if disagree:
            lines.append(
                f"  the t, Wilcoxon and permutation tests disagree at alpha {options.alpha:g} on "
                f"{disagree} comparison(s): see tests_disagree in comparisons.csv"
            )
    lines.append(
        f"Tables: {out / 'summary.csv'}, per_sketch.csv, comparisons.csv; "
        f"report: {out / 'report.html'}"
    )
    return "\n".join(lines)
