"""How many participants a replication needs: the study's statistics by simulation.

Each replication draws a stimulus set and a pool of participants from the rater
model (:mod:`sbir_study.analysis.simulate`). The first ``k`` participants are the
panel of a study of ``k`` (nested panels sharpen the comparison between counts); a
reference panel of ``reference`` stands in for everybody. Per count: the share of
sketches with a significant W, per sketch tau_b between the panel's and the
reference's consensus, and the share of significant inter-user tau_b with its Wilson
interval's width. Replication r uses the r-th child of ``SeedSequence(seed)``,
whatever ``jobs`` and the other replications.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import special

from sbir_study.foundation import paper
from sbir_study.foundation.checks import InputError
from sbir_study.foundation.environment import environment_variables
from sbir_study.foundation.html import DEFAULT_FIGURE_FORMATS
from sbir_study.foundation.progress import counter

from . import _agreement_kernels, _kernels
from .significance import wilson_interval
from .simulate import RaterModel, StudyDesign, main_block_ratings

__all__ = [
    "PowerOptions",
    "format_power",
    "format_reliability",
    "power_analysis",
    "raters_for_reliability",
    "summarize_power",
    "write_power",
]

_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


@contextmanager
def _single_threaded_workers(jobs: int) -> Iterator[ProcessPoolExecutor]:
    """A pool of ``jobs`` processes with one BLAS thread each (the workers are the parallelism).

    The pool starts its workers when work is handed out, so the variables stay set until done.
    """
    with (
        environment_variables(dict.fromkeys(_THREAD_VARIABLES, "1")),
        ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) as pool,
    ):
        yield pool


@dataclass(frozen=True)
class PowerOptions:
    """What :func:`power_analysis` simulates."""

    counts: tuple[int, ...] = (5, 10, 15, 20, paper.PARTICIPANTS, 40)
    replications: int = 100
    reference: int = 100
    alpha: float = 0.05
    seed: int = 0
    design: StudyDesign = field(default_factory=StudyDesign)
    model: RaterModel = field(default_factory=RaterModel)

    def __post_init__(self) -> None:
        if not self.counts or any(int(k) != k or k < 2 for k in self.counts):
            raise InputError(f"counts: expected whole numbers >= 2, got {list(self.counts)}")
        if self.replications < 1:
            raise InputError(f"replications: expected >= 1, got {self.replications}")
        if self.reference < 2:
            raise InputError(
                f"reference: expected a panel of >= 2 participants, got {self.reference}"
            )
        if not 0.0 < self.alpha < 1.0:
            raise InputError(f"alpha: expected a level between 0 and 1, got {self.alpha}")


def power_analysis(
    options: PowerOptions = PowerOptions(), *, jobs: int = 1, progress: bool | None = False
) -> pd.DataFrame:
    """Simulate the replications: a row per (replication, count).

    Columns ``replication, participants, w_significant_share, tau_median, tau_p05,
    inter_user_share, inter_user_wilson_width`` (tau_*: median and 5th percentile over
    sketches of tau_b against the reference panel).
    """
    seeds = np.random.SeedSequence(options.seed).spawn(options.replications)
    tasks = [(options, r, seed) for r, seed in enumerate(seeds)]
    report = counter("replications", show=progress)
    rows: list[tuple] = []
    if jobs > 1:
        with _single_threaded_workers(jobs) as pool:
            for done, result in enumerate(pool.map(_replication, tasks, chunksize=4), 1):
                rows.extend(result)
                report(done, len(tasks))
    else:
        for done, task in enumerate(tasks, 1):
            rows.extend(_replication(task))
            report(done, len(tasks))
    columns = ["replication", "participants", "w_significant_share", "tau_median", "tau_p05"]
    return pd.DataFrame(rows, columns=[*columns, "inter_user_share", "inter_user_wilson_width"])


def summarize_power(runs: pd.DataFrame) -> pd.DataFrame:
    """A row per participant count from :func:`power_analysis`' rows.

    ``w_significant_share`` (mean), ``w_all_significant`` (share of replications with
    every W significant), ``tau_median`` and ``tau_p05`` (medians over replications),
    ``inter_user_share`` (mean) with ``_p025``/``_p975`` and ``inter_user_range_width``
    (its 95% range over replications), ``inter_user_wilson_width`` (mean width).
    """
    grouped = runs.groupby("participants", sort=True)
    table = pd.DataFrame(
        {
            "replications": grouped.size(),
            "w_significant_share": grouped["w_significant_share"].mean(),
            "w_all_significant": grouped["w_significant_share"].apply(lambda s: (s == 1).mean()),
            "tau_median": grouped["tau_median"].median(),
            "tau_p05": grouped["tau_p05"].median(),
            "inter_user_share": grouped["inter_user_share"].mean(),
            "inter_user_share_p025": grouped["inter_user_share"].quantile(0.025),
            "inter_user_share_p975": grouped["inter_user_share"].quantile(0.975),
            "inter_user_wilson_width": grouped["inter_user_wilson_width"].mean(),
        }
    )
    table["inter_user_range_width"] = (
        table["inter_user_share_p975"] - table["inter_user_share_p025"]
    )
    return table.reset_index()


def _replication(task) -> list[tuple]:
    options, index, seed = task
    counts = sorted(set(int(k) for k in options.counts))
    n_participants = max(counts) + options.reference
    # sketches x participants x images; NaN = missed response
    ratings = main_block_ratings(
        options.design, options.model, n_participants, np.random.default_rng(seed)
    )
    reference = np.nanmean(ratings[:, max(counts) :, :], axis=1)
    rows = []
    for k in counts:
        panel = ratings[:, :k, :]
        consensus = np.nanmean(panel, axis=1)
        tau, _, _ = _kernels.paired_rows_tau_b(consensus, reference, "greater")
        w_significant, pvalues = 0, []
        for sketch in panel:
            complete = sketch[~np.isnan(sketch).any(axis=1)]
            w = _agreement_kernels.kendall_w(complete) if len(complete) >= 2 else np.nan
            m, n = complete.shape
            if np.isfinite(w) and special.chdtrc(n - 1, m * (n - 1) * w) < options.alpha:
                w_significant += 1
            _, p, _ = _kernels.pairwise_tau_b(sketch, "greater")
            pvalues.append(p[np.triu_indices(k, 1)])
        p = np.concatenate(pvalues)
        p = p[~np.isnan(p)]
        significant = int((p < options.alpha).sum())
        low, high = wilson_interval(significant, p.size)
        tau_median, tau_p05 = map(float, np.nanquantile(tau, [0.5, 0.05]))
        share = significant / max(p.size, 1)
        rows.append((index, k, w_significant / len(panel), tau_median, tau_p05, share, high - low))
    return rows


def raters_for_reliability(
    pilot: pd.DataFrame, *, target: float = 0.8, n_splits: int = 1000, seed: int = 0
) -> pd.DataFrame:
    """How many raters a consensus needs to reach ``target``, from a pilot's ratings table.

    The pilot's split-half reliability (Spearman's rho between random halves,
    :func:`~sbir_study.analysis.reliability.split_half_reliability`) carried to one rater
    and inverted (:func:`~sbir_study.analysis.reliability.raters_needed`). Returns a row
    per sketch and ``all``: ``sketch_id, n_raters, rho_half, rho_sb, r1, target,
    raters_needed``, empty where no number of raters reaches the target.
    """
    from . import reliability
    from .cube import main_phase_cube
    from .orientation import in_paper_orientation

    reliability.raters_needed(target, 0.5)  # the target checked before the work
    cube = main_phase_cube(in_paper_orientation(pilot))
    if cube is None:
        raise InputError("pilot: no rows of phase 'main'; expected the main block of a study")
    split_half = reliability.split_half_reliability(cube, n_splits=n_splits, seed=seed)
    table = split_half[["sketch_id", "n_raters", "rho_half", "rho_sb", "r1"]].copy()
    table["target"] = target
    needed = np.atleast_1d(reliability.raters_needed(target, table["r1"].to_numpy()))
    table["raters_needed"] = pd.array(
        [int(m) if np.isfinite(m) else None for m in needed], dtype="Int64"
    )
    return table


def write_power(
    runs: pd.DataFrame,
    summary: pd.DataFrame,
    out: str | Path,
    *,
    overwrite: bool = False,
    reliability: pd.DataFrame | None = None,
    figure_formats: Sequence[str] = DEFAULT_FIGURE_FORMATS,
) -> Path:
    """Write ``power_runs.csv``, ``power.csv`` and the figure into ``out`` (``docs/outputs.md``).

    The figure in ``figure_formats`` (:func:`~sbir_study.foundation.html.figure_formats`);
    with ``reliability`` (:func:`raters_for_reliability`), ``power_reliability.csv`` too.
    """
    from sbir_study.foundation.html import figure_formats as checked_figure_formats
    from sbir_study.foundation.outputs import output_folder

    from .figures import write_power_figure

    formats = checked_figure_formats(figure_formats)
    with output_folder(out, "power", overwrite=overwrite) as folder:
        runs.to_csv(folder / "power_runs.csv", index=False)
        summary.to_csv(folder / "power.csv", index=False)
        if reliability is not None:
            reliability.to_csv(folder / "power_reliability.csv", index=False)
        write_power_figure(summary, folder / "power", formats=formats)
    return Path(out)


def format_reliability(reliability: pd.DataFrame) -> str:
    """The lines ``sbir-study power --pilot`` prints about the raters a reliable consensus needs."""
    overall = reliability.set_index("sketch_id").loc["all"]
    sketches = reliability[reliability["sketch_id"] != "all"]
    target = float(overall["target"])
    needed = overall["raters_needed"]
    lines = [
        f"From the pilot ({int(overall['n_raters'])} participants; split-half rho "
        f"{overall['rho_half']:.3f}, Spearman-Brown {overall['rho_sb']:.3f}): "
        + (
            f"a consensus of {int(needed)} raters reaches reliability {target:g}"
            if not pd.isna(needed)
            else f"no number of raters reaches reliability {target:g}"
        )
        + " over all sketches."
    ]
    known = sketches["raters_needed"].dropna()
    if len(known):
        worst = sketches.loc[known.astype("int64").idxmax()]
        lines.append(
            f"Per sketch: from {int(known.min())} to {int(known.max())} raters "
            f"(most: sketch {worst['sketch_id']})."
        )
    unreachable = sketches.loc[sketches["raters_needed"].isna(), "sketch_id"].tolist()
    if unreachable:
        lines.append(
            f"No number of raters brings {len(unreachable)} sketch(es) to {target:g}: "
            + ", ".join(map(str, unreachable))
        )
    return "\n".join(lines)


def format_power(summary: pd.DataFrame, options: PowerOptions, out: str | Path) -> str:
    """The lines ``sbir-study power`` prints: the table per participant count."""
    out = Path(out)
    shown = [
        "participants",
        "w_significant_share",
        "tau_median",
        "tau_p05",
        "inter_user_share",
        "inter_user_range_width",
    ]
    return "\n".join(
        [
            f"{options.replications} replications per count, reference panel of "
            f"{options.reference}, seed {options.seed}:",
            summary[shown].round(3).to_string(index=False),
            f"Table: {out / 'power.csv'}; figure: {out / 'power.png'}",
        ]
    )
