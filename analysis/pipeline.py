"""The whole analysis of a study, from the ratings table to the files of ``analyze --out``:
what is computed, on which thread, and in which order."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sbir_study.foundation import progress
from sbir_study.foundation.checks import InputError
from sbir_study.foundation.html import DEFAULT_FIGURE_FORMATS
from sbir_study.foundation.html import figure_formats as checked_figure_formats
from sbir_study.foundation.outputs import output_folder
from sbir_study.foundation.scale import Scale

from . import _kernels
from .agreement_tables import agreement_by_sketch, alpha_at_levels
from .consensus import (
    anchoring_consistency,
    consensus_ground_truth,
    participant_vs_consensus,
    write_binary_qrels,
    write_qrels,
)
from .cube import RatingCube, rating_cube
from .distribution import binned_medians, rating_distribution
from .limits import PAIRWISE_FULL_ROWS
from .options import AnalysisOptions
from .orientation import in_paper_orientation, ratings_scale
from .participant_table import (
    participant_table,
    with_catch_scores,
    with_exclusions,
    with_origins,
    with_session_status,
    without_excluded,
)
from .ratings import Provenance
from .report import write_report
from .summary import study_summary
from .table_writers import sketch_agreement, write_csv, write_pairwise
from .validation import RATING_COLUMNS, check_text_labels

__all__ = ["analyze_ratings"]

#: From this many rows (a study of about 800 participants of the paper's design) the ground
#: truth is computed on a thread of its own, beside the cube.
_GROUND_TRUTH_ASIDE_ROWS = 1_000_000
#: From this many inter-user pairs they are computed on a thread beside the other statistics.
_PAIRS_BESIDE = 5_000_000
#: Threads of the pool at crowd size: the ground truth first (beside the cube), then the
#: inter-user pairs on one and the other statistics on the other; whichever ends first takes
#: the next statistic. More threads would only contend for the interpreter lock and memory.
_WORKERS = 2


def analyze_ratings(
    ratings: pd.DataFrame,
    out: str | Path,
    options: AnalysisOptions = AnalysisOptions(),  # noqa: B008 (frozen: immutable)
    *,
    figures: bool = True,
    figure_formats: Sequence[str] = DEFAULT_FIGURE_FORMATS,
    pilot: pd.DataFrame | None = None,
    sketch_images: dict[str, Path] | None = None,
    overwrite: bool = False,
    exclusions: Mapping[str, Sequence[str]] | None = None,
    catch: pd.DataFrame | None = None,
) -> dict:
    """Compute every statistic of the paper's Sec. 3 and write the tables to ``out``.

    Writes ``ground_truth.csv``, ``ground_truth.qrels`` (graded: k - 1 best .. 0),
    ``ground_truth_binary.qrels`` (relevant: mean rating below the middle of the
    scale, 3.5 on the paper's), ``pairwise_tau.parquet``
    (with ``options.pairwise == "full"``, or ``"auto"`` while it has at most
    :data:`~.limits.PAIRWISE_FULL_ROWS` rows),
    ``pairwise_tau_summary.csv``, ``sketch_agreement.csv`` (sketches ranked by
    their median inter-user tau_b, the best and worst marked: the paper's
    Fig. 9), ``kendall_w.csv``, ``consensus_tau.csv``, ``anchoring.csv``,
    ``bins.csv``, ``rating_distribution.csv``, ``reliability.csv``,
    ``reliability_prophecy.csv`` and ``icc.csv`` (how reliable the consensus is:
    ``docs/reliability.md``), ``summary.json`` (``docs/formats.md`` lists their columns)
    and ``report.html``. With ``figures``, also Figs. 4-8 and ``reliability_prophecy``
    in ``figures/`` (Fig. 9 as thumbnails when ``sketch_images`` maps sketch
    ids to image files), each as PNG and PDF or in ``figure_formats``
    (:func:`~sbir_study.foundation.html.figure_formats`: png among them, as the report
    embeds it); ``pilot``, the ratings of a pilot study, is drawn
    beside the final study in Fig. 7. Returns the summary.

    ``out`` is written as every output is (``docs/outputs.md``): aside, then
    moved into place when complete; an existing ``out`` only with
    ``overwrite``, and only when an earlier ``analyze`` wrote it.

    The ratings' scale is the one ``ratings.attrs`` carries
    (:func:`~sbir_study.analysis.orientation.ratings_scale`: the recorded one, else
    the paper's 1..7, 1 best). On a scale whose high end is the best match,
    every rating and prescribed rating is first turned into the paper's
    orientation, r -> low + high - r
    (:func:`~sbir_study.analysis.orientation.in_paper_orientation`), and every table
    and figure is in that orientation: the scale's low end is the best match, the
    ground truth ranks by ascending mean rating. ``pilot`` must be on the same scale.

    ``exclusions`` maps the participants to leave out to the rules that exclude them
    (:func:`~sbir_study.analysis.exclusion.decide_exclusions`): every statistic is
    computed without their ratings, as if their files were not there, and
    ``participants.csv``, ``summary.json`` and the report list them with their rules.
    ``catch``, the catch pairs (:func:`~sbir_study.analysis.catch.read_catch_pairs`;
    ``None``: those the sessions recorded), are scored per participant into
    ``participants.csv`` and stay in every statistic as the pairs they are.
    """
    check_text_labels(ratings)
    formats = checked_figure_formats(figure_formats)
    inputs = [
        s.path
        for t in (ratings, pilot)
        if t is not None
        for s in t.attrs.get("provenance", Provenance()).sources
    ]
    inputs += list((sketch_images or {}).values())
    with output_folder(out, "analyze", overwrite=overwrite, inputs=inputs) as folder:
        return _analyze_into(
            folder,
            ratings,
            options,
            figures=formats if figures else (),
            pilot=pilot,
            sketch_images=sketch_images,
            exclusions=exclusions or {},
            catch=catch,
        )


def _analyze_into(
    out: Path,
    ratings: pd.DataFrame,
    options: AnalysisOptions,
    *,
    figures: tuple[str, ...],
    pilot: pd.DataFrame | None,
    sketch_images: dict[str, Path] | None,
    exclusions: Mapping[str, Sequence[str]],
    catch: pd.DataFrame | None = None,
) -> dict:
    everyone, ratings = ratings, without_excluded(ratings, exclusions)
    scale = ratings_scale(ratings)
    if pilot is not None and ratings_scale(pilot) != scale:
        raise InputError(
            f"pilot: its rating scale {ratings_scale(pilot)} differs from the "
            f"study's {scale}; expected the same scale"
        )
    # The statistics read the rating columns only: a session's extra columns (timing,
    # presses) would be copied along by every selection of rows. Practice trials are
    # recorded to learn the keys on, and no statistic counts them.
    ratings = in_paper_orientation(ratings)[[c for c in RATING_COLUMNS if c in ratings]]
    practice = (ratings["phase"] == "practice").to_numpy()
    if practice.any():  # else no copy of the whole table
        ratings = ratings[~practice]
    if pilot is not None:
        pilot = in_paper_orientation(pilot)
    done = _computed(out, ratings, options, pilot, scale, everyone, exclusions, catch)
    participants = done["participants"]
    pairwise, w_table = done["pairwise"], done["kendall_w"]
    extremes = sketch_agreement(pairwise.summary, w_table)
    extremes.to_csv(out / "sketch_agreement.csv", index=False)
    with progress.step("significance summaries"):
        summary = study_summary(ratings, done, options, scale)
        summary["excluded"] = [
            {"participant": label, "rules": list(rules)} for label, rules in exclusions.items()
        ]
    figure_files = {}
    if figures:
        from .figures import write_figures  # matplotlib only when drawing

        with progress.step("figures"):
            figure_files = write_figures(
                out / "figures",
                anchoring=done["anchoring"],
                boxes=pairwise.boxes,
                kendall_w=w_table,
                consensus=done["consensus"],
                distributions=done["distributions"],
                bins=done["bins"],
                alpha=options.alpha,
                alternative=options.alternative,
                extremes=extremes[extremes["group"] != ""],
                sketch_images=sketch_images,
                scale=scale,
                formats=figures,
            )
        figure_files.update(
            _reliability_figure(out / "figures", done["prophecy"], summary, figures)
        )
    summary["reliability"] = done["reliability"][1]
    summary["figures"] = sorted(figure_files)
    with progress.step("summary.json, report.html"):
        (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        write_report(
            out / "report.html",
            summary,
            w_table,
            extremes,
            figure_files,
            participants,
            scale=scale,
            anchoring=done["anchoring"],
        )
    return summary


def _computed(
    out: Path,
    ratings: pd.DataFrame,
    options: AnalysisOptions,
    pilot,
    scale: Scale,
    everyone: pd.DataFrame,
    exclusions: Mapping[str, Sequence[str]],
    catch: pd.DataFrame | None,
) -> dict[str, Any]:
    """Every statistic, its tables written: the results of :func:`_statistics` by name, and
    ``main`` (the main phase), ``ground_truth``, ``participants`` (the table of every
    participant, ``everyone`` with the excluded), ``pairwise`` (:func:`write_pairwise`) and
    ``full`` (whether ``pairwise_tau.parquet`` is written).

    At crowd size the work runs on a pool (``$SBIR_STUDY_THREADS=1``: all in this thread):
    the ground truth, which reads the table alone, beside the selection of the main phase
    and its cube; then the inter-user pairs beside the other statistics. The results are
    taken in a fixed order, so the first error raised is the same on any number of
    threads; on an error, the work not yet begun is cancelled.
    """
    threaded = _kernels.threads() > 1
    with ThreadPoolExecutor(_WORKERS, thread_name_prefix="sbir-analyze") as pool:
        try:
            aside = threaded and len(ratings) >= _GROUND_TRUTH_ASIDE_ROWS
            truth = (pool.submit if aside else _now)(_ground_truth_files, out, ratings, scale)
            if not aside:
                truth.result()  # a refusal before anything else, as one expects
            main = ratings[ratings["phase"] == "main"]
            if main.empty:
                raise InputError(
                    "ratings: no rows of phase 'main'; expected the main block of a study"
                )
            raters = _raters_by_sketch(main)
            if options.pairwise_raters is not None:
                raters = np.minimum(raters, options.pairwise_raters)
            pairs = int((raters * (raters - 1) // 2).sum())
            full = options.pairwise == "full" or (
                options.pairwise == "auto" and pairs <= PAIRWISE_FULL_ROWS
            )
            # The main phase as sketches x participants x images, built once for every
            # statistic that reads it.
            cube = rating_cube(main)
            submit = pool.submit if threaded and pairs >= _PAIRS_BESIDE else _now
            pairwise = submit(write_pairwise, ratings, cube, out, options, full)
            statistics = _statistics(submit, out, ratings, cube, options, pilot, scale)
            del cube  # freed when the work ends, not held through the figures
            done = {"main": main, "ground_truth": truth.result(), "full": full}
            done.update((name, future.result()) for name, future in statistics.items())
            consensus, participants = done["consensus"]
            participants = with_exclusions(participants, everyone, consensus, exclusions)
            participants = with_catch_scores(participants, everyone, catch)
            write_csv(participants, out / "participants.csv")
            done.update(consensus=consensus, participants=participants)
            done["pairwise"] = pairwise.result()
        except BaseException:
            pool.shutdown(cancel_futures=True)
            raise
    return done


def _statistics(
    submit: Callable[..., Future],
    out: Path,
    ratings: pd.DataFrame,
    cube: RatingCube,
    options: AnalysisOptions,
    pilot,
    scale: Scale,
) -> dict[str, Future]:
    """Every statistic but the inter-user pairs, submitted with ``submit`` (a pool's, or
    :func:`_now`) in the order a pool starts them, the longest first. Each writes its tables
    as it is computed, and is the same whichever thread computes it."""
    statistics = {
        "consensus": submit(_consensus_tables, out, ratings, cube, options),
        "reliability": submit(_reliability_tables, out, cube, options),
        "kendall_w": submit(_agreement_tables, out, ratings, cube, options, scale),
        # Apart from the sketches' table, so that the two run side by side.
        "krippendorff_alpha": submit(_overall_alpha, ratings, options, scale),
        "anchoring": submit(_anchoring_table, out, ratings, options),
        "bins": submit(_bins_table, out, ratings, cube, scale),
        "distributions": submit(_distribution_table, out, ratings, pilot, scale),
    }
    # Last: it waits for the split halves, which a pool has begun by then.
    statistics["prophecy"] = submit(_prophecy_table, out, cube, statistics["reliability"])
    return statistics


def _agreement_tables(out: Path, ratings, cube, options: AnalysisOptions, scale):
    with progress.step("Kendall's W, Krippendorff's alpha, Skillings-Mack"):
        w_table = agreement_by_sketch(
            ratings,
            n_resamples=options.bootstrap,
            permutations=options.permutations,
            seed=options.seed,
            cube=cube,
            scale=scale,
        )
        w_table.to_csv(out / "kendall_w.csv", index=False)
    return w_table


def _overall_alpha(ratings, options: AnalysisOptions, scale):
    """The study's Krippendorff's alpha, ordinal and interval, over every sketch."""
    with progress.step("Krippendorff's alpha of the study"):
        return alpha_at_levels(
            ratings,
            ("ordinal", "interval"),
            n_resamples=options.bootstrap,
            seed=options.seed,
            scale=scale,
        )


def _consensus_tables(out: Path, ratings, cube, options: AnalysisOptions):
    with progress.step("participants vs consensus"):
        consensus = participant_vs_consensus(ratings, alternative=options.alternative, cube=cube)
        write_csv(consensus, out / "consensus_tau.csv")
        participants = with_session_status(
            with_origins(participant_table(ratings, consensus, cube=cube), ratings), ratings
        )
    return consensus, participants


def _anchoring_table(out: Path, ratings, options: AnalysisOptions):
    with progress.step("anchoring"):
        anchoring = anchoring_consistency(ratings, alternative=options.alternative)
        write_csv(anchoring, out / "anchoring.csv")
    return anchoring


def _bins_table(out: Path, ratings, cube, scale):
    with progress.step("binned medians"):
        bins = binned_medians(ratings, cube=cube, scale=scale)
        bins.to_csv(out / "bins.csv", index=False)
    return bins


def _distribution_table(out: Path, ratings, pilot, scale):
    distributions = {"final": rating_distribution(ratings, scale=scale)}
    if pilot is not None:
        distributions = {"pilot": rating_distribution(pilot, scale=scale), **distributions}
    distribution = pd.concat(
        [table.assign(dataset=name) for name, table in distributions.items()], ignore_index=True
    )
    distribution.to_csv(out / "rating_distribution.csv", index=False)
    return distributions


def _reliability_tables(out: Path, cube: RatingCube, options: AnalysisOptions):
    """``reliability.csv`` and ``icc.csv``; the split halves and the summary's
    ``reliability`` object."""
    from . import reliability

    with progress.step("reliability: split halves, intraclass correlations"):
        split_half = reliability.split_half_reliability(
            cube, n_splits=options.reliability_splits, seed=options.seed
        )
        split_half.to_csv(out / "reliability.csv", index=False)
        icc = reliability.intraclass_correlations(cube)
        icc.to_csv(out / "icc.csv", index=False)
    return split_half, reliability.reliability_summary(split_half, icc)


def _prophecy_table(out: Path, cube: RatingCube, tables: Future) -> pd.DataFrame:
    """``reliability_prophecy.csv`` from the split halves of ``tables``
    (:func:`_reliability_tables`, begun before it); the prophecy the figure draws."""
    from . import reliability

    split_half, _ = tables.result()
    with progress.step("reliability: prophecy"):
        raters = np.arange(1, max(40, 2 * len(cube.participants)) + 1)
        predicted = reliability.predicted_reliability(split_half, raters)
        write_csv(predicted, out / "reliability_prophecy.csv")
    return predicted


def _reliability_figure(
    folder: Path, predicted: pd.DataFrame, summary: dict, formats: tuple[str, ...]
) -> dict:
    from .figures import write_reliability_figure
    from .reliability import RELIABILITY_TARGET

    stem = folder / "reliability_prophecy"
    write_reliability_figure(
        predicted,
        stem,
        target=RELIABILITY_TARGET,
        n_raters=summary["n_participants"],
        formats=formats,
    )
    return {"reliability_prophecy": stem.with_suffix(".png")}


def _now(work, *args) -> Future:
    """``work(*args)`` run in this thread, as a done future: its result, or its error."""
    future: Future = Future()
    try:
        future.set_result(work(*args))
    except Exception as error:  # raised by result(), in the order the caller takes them
        future.set_exception(error)
    return future


def _ground_truth_files(out: Path, ratings: pd.DataFrame, scale) -> pd.DataFrame:
    """``ground_truth.csv`` and its two qrels files; the ground truth."""
    with progress.step("ground truth"):
        ground_truth = consensus_ground_truth(ratings)
        ground_truth.to_csv(out / "ground_truth.csv", index=False)
        write_qrels(ground_truth, out / "ground_truth.qrels", scale=scale)
        write_binary_qrels(ground_truth, out / "ground_truth_binary.qrels", scale=scale)
    return ground_truth


def _raters_by_sketch(main: pd.DataFrame) -> np.ndarray:
    """The participants with a row of each sketch, as
    ``main.groupby("sketch_id", observed=True)["participant"].nunique()`` counts them (a
    sketch with no rows is left out, a missing label is no one), from the categoricals'
    codes: one mark a row in a sketches x participants table, not a hash of every row."""
    sketch, participant = main["sketch_id"], main["participant"]
    if not all(isinstance(c.dtype, pd.CategoricalDtype) for c in (sketch, participant)):
        return main.groupby("sketch_id", observed=True)["participant"].nunique().to_numpy()
    sketch_code = sketch.cat.codes.to_numpy()
    participant_code = participant.cat.codes.to_numpy()
    labelled = sketch_code >= 0  # a row without a sketch is in no group
    if not labelled.all():
        sketch_code, participant_code = sketch_code[labelled], participant_code[labelled]
    seen = np.zeros((len(sketch.cat.categories), len(participant.cat.categories) + 1), bool)
    # A missing participant (code -1) marks the last column, which is not counted.
    seen[sketch_code, participant_code] = True
    observed = np.zeros(len(sketch.cat.categories), bool)
    observed[sketch_code] = True
    return seen[observed, :-1].sum(axis=1)
