"""The whole analysis of a study: from the ratings table to the files of ``analyze --out``."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from sbir_study.foundation import progress
from sbir_study.foundation.checks import InputError, check_option, check_whole_number
from sbir_study.foundation.html import DEFAULT_FIGURE_FORMATS
from sbir_study.foundation.html import figure_formats as checked_figure_formats
from sbir_study.foundation.memory import release_freed
from sbir_study.foundation.outputs import output_folder
from sbir_study.foundation.provenance import software_versions

from . import _kernels
from .agreement_tables import agreement_by_sketch, alpha_at_levels, inter_user_tau_pairs
from .consensus import (
    anchoring_consistency,
    consensus_ground_truth,
    participant_vs_consensus,
    write_binary_qrels,
    write_qrels,
)
from .cube import RatingCube, rating_cube
from .distribution import binned_medians, box_summary, linear_quantiles, rating_distribution
from .limits import PAIRWISE_FULL_ROWS, PAIRWISE_MODES, PAIRWISE_RATERS
from .orientation import in_paper_orientation, ratings_scale
from .ratings import ORIGINS, Provenance, participant_origins
from .report import (
    counted,
    participant_count,
    permutation_text,
    raters_range,
    share_interval,
    undefined_text,
    write_report,
)
from .significance import summarize_family
from .validation import RATING_COLUMNS, check_text_labels

__all__ = [
    "N_EXTREMES",
    "PAIRWISE_TABLE",
    "AnalysisOptions",
    "analyze_ratings",
    "format_summary",
    "origin_counts",
    "participant_table",
    "sketch_agreement",
    "with_catch_scores",
    "with_exclusions",
    "with_origins",
    "without_excluded",
]

#: Sketches shown as best and as worst agreed on (the paper's Fig. 9 shows four of each).
N_EXTREMES = 4
#: Fliers kept per sketch for the inter-user box plot at crowd size.
_MAX_FLIERS = 2000
# Inter-user pairs from which they are computed beside the other statistics (a few seconds).
_PAIRS_BESIDE = 5_000_000

#: The inter-user table of every pair of participants (``docs/formats.md``).
PAIRWISE_TABLE = "pairwise_tau.parquet"


@dataclass(frozen=True)
class AnalysisOptions:
    """Options of :func:`analyze_ratings`.

    ``bootstrap`` resamples give the intervals of Krippendorff's alpha,
    ``permutations`` the Skillings-Mack permutation p-values (sketches with at
    most :data:`~sbir_study.analysis.limits.PERMUTATION_RATERS_LIMIT` raters);
    ``pairwise_raters`` caps the raters of a sketch whose pairs enter the
    inter-user tau_b (:data:`~.limits.PAIRWISE_RATERS`; ``None``: every pair);
    ``reliability_splits`` random halves of the participants give the split-half
    reliability of the consensus. All four draw from ``seed``, so the same ratings give
    the same files.
    """

    alternative: str = "greater"
    alpha: float = 0.05
    pairwise: str = "auto"
    bootstrap: int = 1000
    permutations: int = 1000
    seed: int = 0
    pairwise_raters: int | None = PAIRWISE_RATERS
    reliability_splits: int = 1000

    def __post_init__(self) -> None:
        check_option("alternative", self.alternative, _kernels.ALTERNATIVES)
        check_option("pairwise", self.pairwise, PAIRWISE_MODES)
        if not (isinstance(self.alpha, float | int) and 0.0 < self.alpha < 1.0):
            raise InputError(
                f"alpha: expected a significance level between 0 and 1, got {self.alpha!r}"
            )
        for name in ("bootstrap", "permutations", "seed"):
            value = getattr(self, name)
            if not (isinstance(value, int) and value >= 0):
                raise InputError(f"{name}: expected a whole number >= 0, got {value!r}")
        check_whole_number("pairwise_raters", self.pairwise_raters, 2, none_ok=True)
        check_whole_number("reliability_splits", self.reliability_splits, 1)
        _kernels.threads()  # a bad $SBIR_STUDY_THREADS is refused before the ratings are read


def analyze_ratings(
    ratings: pd.DataFrame,
    out: str | Path,
    options=AnalysisOptions(),
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
    alpha, alternative = options.alpha, options.alternative
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
    if practice.any():  # else no copy of 12 million rows (0.25 s at 10,000 participants)
        ratings = ratings[~practice]
    if pilot is not None:
        pilot = in_paper_orientation(pilot)
    # At crowd size the work runs on a pool (``$SBIR_STUDY_THREADS=1``: all in this thread):
    # the ground truth, which reads the table alone, beside the selection of the main phase
    # and its cube; then the inter-user pairs beside the other statistics, each statistic
    # taken by whichever thread is free first. Results are taken in a fixed order, so the
    # first error raised is the same on any number of threads; on an error, what has not
    # started is cancelled.
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
            pairwise = submit(_write_pairwise, ratings, cube, out, options, full)
            statistics = _statistics(submit, out, ratings, cube, options, pilot, scale)
            ground_truth = truth.result()
            (
                (consensus, participants),
                (_, reliability),
                w_table,
                overall_alpha,
                anchoring,
                bins,
                distributions,
                predicted,
            ) = [future.result() for future in statistics]
            participants = with_exclusions(participants, everyone, consensus, exclusions)
            participants = with_catch_scores(participants, everyone, catch)
            _write_csv(participants, out / "participants.csv")
            pairwise_family, pairwise_summary, boxes, pairwise_undefined = pairwise.result()
        except BaseException:
            pool.shutdown(cancel_futures=True)
            raise
    del cube  # not held through the figures: 100 MB for 10,000 participants of 31 sketches
    extremes = sketch_agreement(pairwise_summary, w_table)
    extremes.to_csv(out / "sketch_agreement.csv", index=False)

    with progress.step("significance summaries"):
        summary = _summary(
            ratings,
            main,
            ground_truth,
            pairwise_family,
            consensus,
            anchoring,
            w_table,
            overall_alpha,
            bins,
            full,
            pairwise_summary,
            options,
            scale,
            pairwise_undefined,
        )
        summary["excluded"] = [
            {"participant": label, "rules": list(rules)} for label, rules in exclusions.items()
        ]
    figure_files = {}
    if figures:
        from .figures import write_figures  # matplotlib only when drawing

        with progress.step("figures"):
            figure_files = write_figures(
                out / "figures",
                anchoring=anchoring,
                boxes=boxes,
                kendall_w=w_table,
                consensus=consensus,
                distributions=distributions,
                bins=bins,
                alpha=alpha,
                alternative=alternative,
                extremes=extremes[extremes["group"] != ""],
                sketch_images=sketch_images,
                scale=scale,
                formats=figures,
            )
        figure_files.update(_reliability_figure(out / "figures", predicted, summary, figures))
    summary["reliability"] = reliability
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
            anchoring=anchoring,
        )
    return summary


def _summary(
    ratings,
    main,
    ground_truth,
    pairwise_family,
    consensus,
    anchoring,
    w_table,
    overall_alpha,
    bins,
    full,
    pairwise_summary,
    options,
    scale,
    pairwise_undefined,
) -> dict:
    """The contents of ``summary.json`` (``docs/formats.md``), but for its list of figures.

    Each family's ``undefined`` lists why its undefined tests are undefined
    (:func:`_undefined`): a test that cannot be made is counted and named, never
    silently left out of a share's denominator.
    """
    alpha, alternative = options.alpha, options.alternative
    provenance = ratings.attrs.get("provenance", Provenance())
    return {
        "n_participants": int(ratings["participant"].nunique()),
        "n_sketches": int(main["sketch_id"].nunique()),
        "n_pairs": len(ground_truth),
        # As recorded (evaluate reads it back), though every number here is in the paper's
        # orientation.
        "scale": str(scale),
        "alternative": alternative,
        "alpha": alpha,
        "simulated": provenance.simulated,
        "origins": origin_counts(ratings),
        "pairwise": {**pairwise_family.to_dict(), "undefined": _undefined(pairwise_undefined)},
        "consensus": {
            **summarize_family(consensus["p_value"], alpha).to_dict(),
            "undefined": _undefined_in(consensus, "reason"),
        },
        "consensus_loo": {
            **summarize_family(consensus["p_value_loo"], alpha).to_dict(),
            "undefined": _undefined_in(consensus, "reason_loo"),
        },
        "anchoring": {
            **summarize_family(anchoring["p_value"], alpha).to_dict(),
            "undefined": _undefined_in(anchoring, "reason"),
        },
        "kendall_w": {
            "min": _number(w_table["w"].min()),
            "median": _number(w_table["w"].median()),
            "max": _number(w_table["w"].max()),
            "n_significant": int((w_table["p_value"] < alpha).sum()),
            "n_sketches": len(w_table),
            "n_raters_excluded": int(w_table["n_raters_excluded"].sum()),
            **_rater_range(w_table[w_table["w"].notna()]),
            "n_defined": int(w_table["w"].notna().sum()),
            "n_undefined": int(w_table["w"].isna().sum()),
            "undefined": _undefined_in(w_table, "w_reason"),
        },
        "krippendorff_alpha": _alpha_summary(overall_alpha, w_table, options),
        "skillings_mack": _skillings_mack_summary(w_table, alpha, options),
        "bins": [
            {
                "bin": int(row.bin),
                "n_ratings": int(row.n_ratings),
                "mean": _number(row.mean),
                "sd": _number(row.sd),
            }
            for row in bins.itertuples()
        ],
        "phases": _phase_counts(ratings),
        "pairwise_table": "full" if full else "summary",
        "pairwise_raters": {
            "max": options.pairwise_raters,
            "n_sketches_sampled": int(
                (pairwise_summary["n_raters"] < pairwise_summary["n_raters_all"]).sum()
            ),
            "seed": options.seed,
        },
        "pairwise_tau_median_by_sketch": {
            "min": _number(pairwise_summary["tau_median"].min()),
            "max": _number(pairwise_summary["tau_median"].max()),
        },
        "sources": [asdict(source) for source in provenance.sources],
        "software": {
            **software_versions(),
            **{f"{name} (sessions)": v for name, v in provenance.session_software},
        },
    }


def participant_table(
    ratings: pd.DataFrame, consensus: pd.DataFrame, *, cube: RatingCube | None = None
) -> pd.DataFrame:
    """Per participant: main-block trials, missed windows, complete sketches, consensus tau_b.

    Returns ``participant, n_trials, n_ratings, n_missing, n_sketches,
    n_sketches_complete, tau_b_median, tau_b_loo_median``: ``n_sketches``
    counts the sketches the participant rated at least one image of,
    ``n_sketches_complete`` those they rated every image of (the sketches whose
    Kendall's W they enter); the medians are over the sketches of
    :func:`~sbir_study.analysis.consensus.participant_vs_consensus`. ``cube`` is the
    :func:`~sbir_study.analysis.ratings.rating_cube` of the main phase of
    ``ratings`` when the caller has it already; without it, it is built from
    ``ratings``.
    """
    main = ratings[ratings["phase"] == "main"]
    columns = [
        "participant",
        "n_trials",
        "n_ratings",
        "n_missing",
        "n_sketches",
        "n_sketches_complete",
        "tau_b_median",
        "tau_b_loo_median",
    ]
    if main.empty:
        return pd.DataFrame(columns=columns)
    if cube is None:
        cube = rating_cube(main)
    rated = np.zeros(len(cube.participants), dtype=np.int64)
    complete = np.zeros(len(cube.participants), dtype=np.int64)
    for index in range(len(cube.sketches)):
        given = ~np.isnan(cube.sketch(index))
        rated += given.any(axis=1)
        complete += given.all(axis=1)
    per_row = main.groupby("participant", observed=True)["rating"]
    labels = pd.Index(cube.participants, name="participant")
    medians = consensus.groupby(consensus["participant"].astype(str))[["tau_b", "tau_b_loo"]]
    medians = medians.median().reindex(labels.astype(str))
    table = pd.DataFrame(
        {
            "participant": cube.participants,
            "n_trials": per_row.size().reindex(labels).to_numpy(),
            "n_ratings": per_row.count().reindex(labels).to_numpy(),
            "n_sketches": rated,
            "n_sketches_complete": complete,
            "tau_b_median": medians["tau_b"].to_numpy(),
            "tau_b_loo_median": medians["tau_b_loo"].to_numpy(),
        }
    )
    table.insert(3, "n_missing", table["n_trials"] - table["n_ratings"])
    return table[columns]


def with_origins(participants: pd.DataFrame, ratings: pd.DataFrame) -> pd.DataFrame:
    """The participant table with each participant's ``origin`` (one of
    :data:`~sbir_study.analysis.ratings.ORIGINS`) last, from the ratings' provenance: who
    the numbers stand on, people or a simulation, is read beside each participant."""
    origins = participant_origins(ratings)
    return participants.assign(
        origin=origins.reindex(participants["participant"].astype(str)).to_numpy()
    )


def with_session_status(participants: pd.DataFrame, ratings: pd.DataFrame) -> pd.DataFrame:
    """The participant table with ``session_status`` last: the ``SessionStatus`` their
    sessions' sidecars record (``complete``, ``incomplete``, ``timed_out``, ...; a
    participant's several statuses sorted and joined by ``+``), empty where none records
    one (``simulate``, a flat table, an import). A session that did not finish is read beside
    its participant's numbers, not only in the sidecar."""
    found: dict[str, set[str]] = {}
    for label, status in ratings.attrs.get("provenance", Provenance()).statuses:
        found.setdefault(label, set()).add(status)
    labels = participants["participant"].astype(str)
    return participants.assign(
        session_status=["+".join(sorted(found.get(label, ()))) for label in labels]
    )


def without_excluded(ratings: pd.DataFrame, exclusions: Mapping[str, Sequence[str]]):
    """``ratings`` without the rows of the excluded participants, and without their
    labels among the categories: the table of a dataset whose excluded participants'
    files were never there."""
    if not exclusions:
        return ratings
    kept = ratings[~ratings["participant"].astype(str).isin(list(exclusions))].copy()
    kept["participant"] = kept["participant"].cat.remove_unused_categories()
    return kept


def with_exclusions(
    participants: pd.DataFrame,
    everyone: pd.DataFrame,
    consensus: pd.DataFrame,
    exclusions: Mapping[str, Sequence[str]],
) -> pd.DataFrame:
    """The participant table with the excluded participants' rows (their own counts; no
    consensus tau_b, since the consensus was formed without them), ``excluded`` and
    ``exclusion_rule`` (their rules, joined by ``; ``; empty for the included)."""
    rows = [participants]
    if exclusions:
        excluded = everyone[everyone["participant"].astype(str).isin(list(exclusions))].copy()
        excluded["participant"] = excluded["participant"].cat.remove_unused_categories()
        excluded = excluded[excluded["phase"] != "practice"]
        table = with_origins(participant_table(excluded, consensus.iloc[:0]), everyone)
        rows.append(with_session_status(table, everyone))
    table = pd.concat([r for r in rows if len(r)], ignore_index=True)
    table["participant"] = table["participant"].astype(str)
    table = table.sort_values("participant", kind="stable", ignore_index=True)
    rules = {label: "; ".join(texts) for label, texts in exclusions.items()}
    labels = table["participant"]
    return table.assign(
        excluded=labels.isin(list(rules)), exclusion_rule=[rules.get(label, "") for label in labels]
    )


def with_catch_scores(
    participants: pd.DataFrame, everyone: pd.DataFrame, catch: pd.DataFrame | None
) -> pd.DataFrame:
    """The participant table with each one's catch pairs passed, failed and missing
    (:func:`~sbir_study.analysis.catch.score_catch_pairs` on the ratings as pressed), when
    the study has catch pairs (``catch``, else those its sessions recorded)."""
    from .catch import catch_pairs_of, score_catch_pairs

    pairs = catch_pairs_of(everyone) if catch is None else catch
    if pairs.empty:
        return participants
    scores = score_catch_pairs(everyone, pairs).set_index("participant")
    scores = scores.reindex(participants["participant"].astype(str))
    return participants.assign(**{c: scores[c].to_numpy() for c in scores.columns})


def _phase_counts(ratings: pd.DataFrame) -> dict[str, dict[str, int]]:
    """Trials and missing ratings of each phase, the phases in sorted order. Counted from the
    phase and rating columns alone: a group per phase copied every column of millions of
    rows (2.5 s at 10,000 participants)."""
    missing = ratings["rating"].isna().groupby(ratings["phase"], observed=True, sort=True)
    return {
        phase: {"n_trials": int(n), "n_missing": int(k)}
        for phase, n, k in zip(missing.size().index, missing.size(), missing.sum(), strict=True)
    }


def origin_counts(ratings: pd.DataFrame) -> dict[str, int]:
    """Participants per origin, in the order of :data:`~.ratings.ORIGINS` (an origin no one
    has is left out; two origins of one participant's sessions, joined by ``+``, last)."""
    counts = participant_origins(ratings).value_counts()
    order = [o for o in ORIGINS if o in counts.index] + sorted(set(counts.index) - set(ORIGINS))
    return {origin: int(counts[origin]) for origin in order}


def sketch_agreement(pairwise_summary: pd.DataFrame, w_table: pd.DataFrame) -> pd.DataFrame:
    """Sketches ranked by their median inter-user tau_b, with the best and worst marked.

    Returns ``sketch_id, tau_median, tau_q25, tau_q75, w, rank, group`` and,
    when ``w_table`` has them, ``n_raters, n_raters_all`` (W stands on k of m
    raters): rank 1 is the sketch people agreed on most; ``group`` is ``best``
    for the top :data:`N_EXTREMES`, ``worst`` for the bottom ones (worst last),
    else empty. The paper's Fig. 9 shows four of each.
    """
    raters = [c for c in ("n_raters", "n_raters_all") if c in w_table]
    table = pairwise_summary[["sketch_id", "tau_median", "tau_q25", "tau_q75"]].merge(
        w_table[["sketch_id", "w", *raters]], on="sketch_id", how="left"
    )
    table = table.sort_values(
        ["tau_median", "sketch_id"], ascending=[False, True], na_position="last", ignore_index=True
    )
    table["rank"] = np.arange(1, len(table) + 1)
    n = min(N_EXTREMES, len(table) // 2)
    group = np.full(len(table), "", dtype=object)
    group[:n] = "best"
    if n:
        group[len(table) - n :] = "worst"
    table["group"] = group
    return table[["sketch_id", "tau_median", "tau_q25", "tau_q75", "w", "rank", "group", *raters]]


def _statistics(
    submit,
    out: Path,
    ratings: pd.DataFrame,
    cube: RatingCube,
    options: AnalysisOptions,
    pilot,
    scale,
) -> list[Future]:
    """Every statistic but the inter-user pairs, each submitted with ``submit`` (a pool's, or
    :func:`_now`) in the order a pool starts them, the longest first. Each writes its tables
    as it is computed, and is the same whichever thread computes it."""
    consensus = submit(_consensus_tables, out, ratings, cube, options)
    reliability = submit(_reliability_tables, out, cube, options)
    return [
        consensus,
        reliability,
        submit(_agreement_tables, out, ratings, cube, options, scale),
        # Apart from the sketches' table, so that the two run side by side.
        submit(_overall_alpha, ratings, options, scale),
        submit(_anchoring_table, out, ratings, options),
        submit(_bins_table, out, ratings, cube, scale),
        submit(_distribution_table, out, ratings, pilot, scale),
        # Last: it waits for the split halves, which a pool has started by then.
        submit(_prophecy_table, out, cube, reliability),
    ]


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
        _write_csv(consensus, out / "consensus_tau.csv")
        participants = with_session_status(
            with_origins(participant_table(ratings, consensus, cube=cube), ratings), ratings
        )
    return consensus, participants


def _anchoring_table(out: Path, ratings, options: AnalysisOptions):
    with progress.step("anchoring"):
        anchoring = anchoring_consistency(ratings, alternative=options.alternative)
        _write_csv(anchoring, out / "anchoring.csv")
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


def _reliability_lines(found: Mapping | None) -> list[str]:
    """The terminal's line on the reliability of the consensus (``docs/reliability.md``)."""
    if not found or found["tau_b_sb"] is None:
        return []

    def number(x) -> str:
        return "n/a" if x is None else f"{x:.3f}"

    low, high = found["tau_b_sb_interval"]
    needed = found["raters_needed"]
    reach = (
        f"{needed} raters reach {found['target']:g}"
        if needed is not None
        else f"no number of raters reaches {found['target']:g}"
    )
    return [
        f"  Reliability of the consensus (split halves, Spearman-Brown): tau_b "
        f"{number(found['tau_b_sb'])} ({number(low)}-{number(high)}), rho "
        f"{number(found['rho_sb'])}; ICC(2,k) {number(found['icc2k'])}; {reach}; "
        f"{len(found['below_target'])} sketches below it"
    ]


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


def _prophecy_table(out: Path, cube: RatingCube, tables: Future):
    """``reliability_prophecy.csv`` from the split halves of ``tables``
    (:func:`_reliability_tables`, taken before it); the prophecy the figure draws."""
    from . import reliability

    split_half, _ = tables.result()
    with progress.step("reliability: prophecy"):
        raters = np.arange(1, max(40, 2 * len(cube.participants)) + 1)
        predicted = reliability.predicted_reliability(split_half, raters)
        _write_csv(predicted, out / "reliability_prophecy.csv")
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


#: From this many rows (a study of about 800 participants of the paper's design) the ground
#: truth is computed on a thread of its own (:func:`_analyze_into`).
_GROUND_TRUTH_ASIDE_ROWS = 1_000_000
#: Threads of the pool at crowd size: the ground truth, the inter-user pairs and the other
#: statistics each start on one; whichever ends first takes the next statistic.
_WORKERS = 3


def _write_csv(frame: pd.DataFrame, path: Path) -> None:
    """``frame`` as CSV, written by ``pyarrow.csv`` outside the interpreter lock (beside the
    other statistics' threads). Each float is the shortest text that reads back to its
    bits, a missing value is empty, text is quoted, and a boolean is ``True`` or ``False``
    (as pandas writes it)."""
    import pyarrow as pa
    import pyarrow.csv

    booleans = {
        name: np.where(frame[name], "True", "False")
        for name, dtype in frame.dtypes.items()
        if dtype == np.bool_
    }
    table = pa.Table.from_pandas(frame.assign(**booleans), preserve_index=False)
    pyarrow.csv.write_csv(table, path)


def _raters_by_sketch(main: pd.DataFrame) -> np.ndarray:
    """The number of participants with a row of each sketch, as
    ``main.groupby("sketch_id", observed=True)["participant"].nunique()`` counts them (a
    sketch with no rows is left out, a missing label is no one), from the categoricals'
    codes: one mark a row in a sketches x participants table, not a hash of 12 million rows
    (0.4 s of the single-threaded start at 10,000 participants)."""
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


def _write_pairwise(
    ratings: pd.DataFrame, cube: RatingCube, out: Path, options: AnalysisOptions, full: bool
) -> tuple[np.ndarray, pd.DataFrame, list[dict]]:
    """Write the inter-user table (with ``full``) and its per-sketch summary.

    The table is Parquet (``docs/formats.md``): one row group per sketch,
    written as the sketch's pairs are computed, so neither the statistics nor
    the writing ever hold more than one sketch's pairs. Returns the significance of the
    family of every pair's test (:func:`summarize_family`: on this thread, which at
    10,000 participants ends before the others), the summary, one box-plot summary per
    sketch and the undefined pairs as ``(sketch_id, reason, count)``.
    """
    pvalues, summary_rows, boxes, undefined = [], [], [], []
    writer = _PairwiseWriter(out / PAIRWISE_TABLE) if full else None
    pairs_of_sketches = inter_user_tau_pairs(
        ratings,
        alternative=options.alternative,
        max_raters=options.pairwise_raters,
        seed=options.seed,
        cube=cube,
    )
    try:
        for pairs in progress.track(
            pairs_of_sketches, "inter-user tau_b", total=len(cube.sketches), unit="sketch"
        ):
            numbers, box = _tau_summary(pairs.statistic, pairs.pvalue, options.alpha)
            pvalues.append(pairs.pvalue)
            summary_rows.append(
                (
                    pairs.sketch_id,
                    pairs.pvalue.size,
                    pairs.participants.size,
                    pairs.n_raters_total,
                    *numbers,
                    int(np.isnan(pairs.pvalue).sum()),
                )
            )
            boxes.append({**box, "label": str(pairs.sketch_id)})
            # The undefined pairs by their NaN p-value: no string comparison over millions.
            reasons, counts = np.unique(
                pairs.reason[np.isnan(pairs.pvalue)].astype(str), return_counts=True
            )
            undefined += [
                (str(pairs.sketch_id), str(r), int(n)) for r, n in zip(reasons, counts, strict=True)
            ]
            if writer is not None:
                writer.write(pairs)
    finally:
        if writer is not None:
            writer.close()
    summary = pd.DataFrame(
        summary_rows,
        columns=[
            "sketch_id",
            "n_pairs",
            "n_raters",
            "n_raters_all",
            "tau_min",
            "tau_q05",
            "tau_q25",
            "tau_median",
            "tau_q75",
            "tau_q95",
            "tau_max",
            "share_significant",
            "n_undefined",
        ],
    )
    summary.to_csv(out / "pairwise_tau_summary.csv", index=False)
    family = summarize_family(_concatenate_consuming(pvalues), options.alpha)
    return family, summary, boxes, undefined


def _concatenate_consuming(parts: list[np.ndarray]) -> np.ndarray:
    """One array of ``parts``, each freed once copied: tens of millions of p-values at
    crowd size, which ``np.concatenate`` would hold twice at its peak."""
    joined = np.empty(sum(part.size for part in parts))
    position = 0
    parts.reverse()
    while parts:
        part = parts.pop()
        joined[position : position + part.size] = part
        position += part.size
        del part
        if len(parts) % 8 == 0:
            release_freed()  # else the freed parts stay in the heap beside the whole
    return joined


class _PairwiseWriter:
    """``pairwise_tau.parquet``, one row group per sketch, the labels as text dictionaries."""

    def __init__(self, path: Path) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        self._pa = pa
        label = pa.dictionary(pa.int32(), pa.string())
        self._schema = pa.schema(
            [
                ("sketch_id", label),
                ("participant_a", label),
                ("participant_b", label),
                ("tau_b", pa.float64()),
                ("p_value", pa.float64()),
                ("n_items", pa.int32()),
                ("reason", label),
            ]
        )
        # Dictionaries for the labels only, and statistics for sketch_id only (readers can skip
        # row groups by sketch): on the floats both cost more time than they save space (nearly
        # every tau_b and p-value is distinct). The floats' bytes split into streams by
        # significance (BYTE_STREAM_SPLIT), so zstd finds the repeating sign and exponent
        # bytes: 16% smaller than snappy at the same speed; lossless, as every Parquet
        # encoding and codec is. zstd's level 1: higher levels take up to twice the time to
        # save 1% more (docs/outputs.md).
        labels = ["sketch_id", "participant_a", "participant_b", "reason"]
        self._writer = pq.ParquetWriter(
            path,
            self._schema,
            compression="zstd",
            compression_level=1,
            use_dictionary=labels,
            use_byte_stream_split=["tau_b", "p_value"],
            write_statistics=["sketch_id"],
        )

    def write(self, pairs) -> None:
        pa = self._pa
        labels = pa.array(np.asarray(pairs.participants, dtype=object).astype(str), pa.string())
        size = pairs.participant_a.size
        sketch = pa.DictionaryArray.from_arrays(
            np.zeros(size, np.int32), pa.array([str(pairs.sketch_id)])
        )
        columns = [
            sketch,
            pa.DictionaryArray.from_arrays(pairs.participant_a.astype(np.int32), labels),
            pa.DictionaryArray.from_arrays(pairs.participant_b.astype(np.int32), labels),
            pa.array(pairs.statistic, pa.float64()),
            pa.array(pairs.pvalue, pa.float64()),
            pa.array(pairs.n_items.astype(np.int32), pa.int32()),
            _reason_column(pa, pairs),
        ]
        if size:
            self._writer.write_table(pa.Table.from_arrays(columns, schema=self._schema))

    def close(self) -> None:
        self._writer.close()


def _reason_column(pa, pairs):
    """The pairs' reasons as a text dictionary, built from the undefined pairs alone."""
    undefined = np.flatnonzero(np.isnan(pairs.pvalue))
    names, codes = np.unique(pairs.reason[undefined].astype(str), return_inverse=True)
    index = np.zeros(pairs.pvalue.size, np.int32)
    index[undefined] = codes.ravel() + 1
    return pa.DictionaryArray.from_arrays(index, pa.array(["", *names.tolist()], pa.string()))


def _tau_summary(tau: np.ndarray, p: np.ndarray, alpha: float) -> tuple[tuple[float, ...], dict]:
    """Summaries of the defined tau_b of one sketch, their quartiles computed once.

    Returns (min, 5/25/50/75/95th percentiles, max, share significant) and the
    box-plot summary (:func:`~sbir_study.analysis.distribution.box_summary`).
    """
    defined = ~np.isnan(p)
    if not defined.all():  # else no copies of the sketch's (millions of) pairs
        tau, p = tau[defined], p[defined]
    if not tau.size:
        return (np.nan,) * 8, box_summary(tau)
    # Every quantile from one pass over the sketch's (millions of) pairs, as np.quantile's.
    q05, q1, med, q3, q95 = linear_quantiles(tau, [0.05, 0.25, 0.5, 0.75, 0.95])
    box = box_summary(tau, max_fliers=_MAX_FLIERS, quartiles=(q1, med, q3))
    numbers = (tau.min(), q05, q1, med, q3, q95, tau.max(), (p < alpha).mean())
    return tuple(map(float, numbers)), box


def _rater_range(w_table: pd.DataFrame) -> dict:
    """Over how many raters the W of the sketches stand: k (complete) of m (all), least and most."""
    return {
        "n_raters_min": _count(w_table["n_raters"].min()),
        "n_raters_max": _count(w_table["n_raters"].max()),
        "n_raters_all_min": _count(w_table["n_raters_all"].min()),
        "n_raters_all_max": _count(w_table["n_raters_all"].max()),
    }


def _alpha_summary(overall: Mapping, w_table: pd.DataFrame, options: AnalysisOptions) -> dict:
    summary = {}
    for level, result in overall.items():
        column = w_table[f"alpha_{level}"]
        summary[level] = {
            "alpha": _number(result.statistic),
            "ci_low": _number(result.ci_low),
            "ci_high": _number(result.ci_high),
            "by_sketch": {
                "min": _number(column.min()),
                "median": _number(column.median()),
                "max": _number(column.max()),
                "n_undefined": int(column.isna().sum()),
                "undefined": _undefined_in(w_table, "alpha_reason"),
            },
        }
    first = next(iter(overall.values()))
    summary.update(
        n_raters=first.n_raters,
        n_units=first.n_units,
        n_values=first.n_values,
        bootstrap={
            "method": "percentile, sketch/image pairs resampled",
            "resamples": options.bootstrap,
            "seed": options.seed,
        },
    )
    return summary


def _skillings_mack_summary(w_table: pd.DataFrame, alpha: float, options) -> dict:
    permuted = w_table["skillings_mack_permutation_p_value"].notna()
    defined = w_table[w_table["skillings_mack_p_value"].notna()]
    return {
        "n_sketches": int(w_table["skillings_mack_p_value"].notna().sum()),
        "n_significant": int((w_table["skillings_mack_p_value"] < alpha).sum()),
        "n_permutation_tested": int(permuted.sum()),
        "n_significant_permutation": int(
            (w_table["skillings_mack_permutation_p_value"] < alpha).sum()
        ),
        "permutations": options.permutations,
        "n_raters_min": _count(defined["skillings_mack_n_raters"].min()),
        "n_raters_max": _count(defined["skillings_mack_n_raters"].max()),
        "n_undefined": int(w_table["skillings_mack_p_value"].isna().sum()),
        "undefined": _undefined_in(w_table, "skillings_mack_reason"),
    }


#: The reasons ``summary.json`` lists per family, the most frequent first; the rest are
#: counted in ``n_undefined`` and named in the tables.
_UNDEFINED_LISTED = 10


def _undefined(entries) -> list[dict]:
    """``(sketch_id, reason, count)`` entries as ``summary.json`` lists them, most first."""
    entries = sorted(entries, key=lambda e: (-e[2], e[0], e[1]))[:_UNDEFINED_LISTED]
    return [{"sketch_id": sketch, "reason": reason, "n": n} for sketch, reason, n in entries]


def _undefined_in(table: pd.DataFrame, column: str) -> list[dict]:
    """The undefined rows of a table with a reason column, counted per sketch and reason."""
    if column not in table or table.empty:
        return []
    named = table.loc[table[column].fillna("") != "", ["sketch_id", column]].astype(str)
    counts = named.groupby(["sketch_id", column], sort=True).size()
    return _undefined([(sketch, reason, int(n)) for (sketch, reason), n in counts.items()])


def _count(value) -> int | None:
    """An int for JSON, None for a missing value (no sketches)."""
    return None if pd.isna(value) else int(value)


def _number(value) -> float | None:
    """A float for JSON, None for NaN."""
    value = float(value)
    return None if math.isnan(value) else value


#: The test families of ``summary.json``, as the analysis' summary names them.
_FAMILY_NAMES = (
    ("anchoring", "anchoring vs prescribed ratings"),
    ("pairwise", "inter-user"),
    ("consensus", "participant vs consensus"),
    ("consensus_loo", "participant vs consensus (leave-one-out)"),
)


def _interval_text(level: Mapping) -> str:
    if level["ci_low"] is None:
        return "no interval"
    return f"95% CI {level['ci_low']:.3f}-{level['ci_high']:.3f}"


def format_summary(summary: Mapping, out: str | Path) -> str:
    """The lines ``sbir-study analyze`` prints: the headline numbers and where the files are."""
    out = Path(out)
    label = " (simulated data)" if summary["simulated"] else ""
    sketches = counted(summary["n_sketches"], "sketch", "sketches")
    lines = [
        f"Analysed {participant_count(summary)}, {sketches}, "
        f"{counted(summary['n_pairs'], 'pair')}{label}; alternative {summary['alternative']}, "
        f"alpha {summary['alpha']}."
    ]
    for family, name in _FAMILY_NAMES:
        stats = summary[family]
        undefined = undefined_text(stats)
        # As the report prints a share: with the decimals its interval needs (a crowd's
        # millions of tests give an interval narrower than 0.1 points).
        value, interval = share_interval(
            stats["share_significant"], stats["wilson_low"], stats["wilson_high"]
        )
        if stats["n_tests"] and not undefined:
            lines.append(
                f"  {name}: {value} of {stats['n_tests']:,} tau_b significant (95% CI {interval})"
            )
        elif stats["n_tests"]:
            lines.append(
                f"  {name}: {value} of {stats['n_tests']:,} defined ({undefined}) tau_b "
                f"significant (95% CI {interval})"
            )
        elif undefined:
            lines.append(f"  {name}: no tau_b defined ({undefined})")
    w = summary["kendall_w"]
    median = "n/a" if w["median"] is None else f"{w['median']:.3f}"
    undefined = undefined_text(w)
    if not undefined:
        lines.append(
            f"  Kendall's W: {w['n_significant']} of {w['n_sketches']} sketches significant, "
            f"median W {median}, over the {raters_range(w)} participants who rated every image"
        )
    elif w["n_defined"]:
        lines.append(
            f"  Kendall's W: {w['n_significant']} of {w['n_defined']} defined ({undefined}) "
            f"sketches significant, median W {median}, over the {raters_range(w)} "
            "participants who rated every image"
        )
    else:
        lines.append(f"  Kendall's W: undefined for every sketch ({undefined})")
    alpha = summary.get("krippendorff_alpha")
    by_sketch = undefined_text(alpha["ordinal"]["by_sketch"]) if alpha else ""
    if alpha and alpha["ordinal"]["alpha"] is not None:
        ordinal, interval = alpha["ordinal"], alpha["interval"]
        lines.append(
            f"  Krippendorff's alpha over all {counted(alpha['n_raters'], 'participant')} and "
            f"{alpha['n_values']:,} ratings: ordinal {ordinal['alpha']:.3f} "
            f"({_interval_text(ordinal)}), interval {interval['alpha']:.3f} "
            f"({_interval_text(interval)})" + (f"; per sketch {by_sketch}" if by_sketch else "")
        )
    elif by_sketch:
        lines.append(f"  Krippendorff's alpha: undefined ({by_sketch})")
    sm = summary.get("skillings_mack")
    if sm:
        undefined = undefined_text(sm)
        defined = " defined" if undefined else ""
        lines.append(
            f"  Skillings-Mack: {sm['n_significant']} of {sm['n_sketches']}{defined} sketches "
            f"significant (chi-square), {permutation_text(sm)}"
            + (f" ({undefined})" if undefined else "")
        )
    lines += _reliability_lines(summary.get("reliability"))
    lines.append(f"Ground truth: {out / 'ground_truth.csv'}; tables and summary.json in {out}")
    if summary["figures"]:
        lines.append(f"Figures: {out / 'figures'} ({', '.join(summary['figures'])})")
    lines.append(f"Report: {out / 'report.html'} (open it in a browser)")
    return "\n".join(lines)
