"""How many participants a replication needs: the study's statistics by simulation.

For each replication a fresh stimulus set and a fresh pool of participants are
drawn from the rater model of :mod:`sbir_study.analysis.simulate`. The first ``k``
participants form the panel of a study with ``k`` participants (so the panels of one
replication are nested, which makes the comparison between counts sharper); a separate
reference panel of ``reference`` participants stands in for "everybody". For each
count the replication yields

* the share of sketches whose Kendall's W is significant at ``alpha``;
* per sketch, tau_b between the consensus (mean rating) of the panel and that
  of the reference panel: how close the ground truth from ``k`` people comes to
  the one from many;
* the share of significant inter-user tau_b, and the width of its Wilson 95%
  interval.

Replication r uses the r-th child of ``numpy.random.SeedSequence(seed)``: the
result does not depend on ``jobs`` or on the other replications.
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
    """A pool of ``jobs`` fresh processes whose BLAS uses one thread each.

    The workers are the parallelism; threaded BLAS in each would oversubscribe the
    cores. A pool starts its workers when work is handed out, not when it is made, so
    the variables stay set until the pool is done.
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
    """Simulate the replications and return one row per (replication, count).

    Columns: ``replication, participants, w_significant_share, tau_median,
    tau_p05, inter_user_share, inter_user_wilson_width`` (tau_*: median and 5th
    percentile over the sketches of tau_b against the reference panel).
    :func:`summarize_power` reduces them to one row per count.
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
    columns = [
        "replication",
        "participants",
        "w_significant_share",
        "tau_median",
        "tau_p05",
        "inter_user_share",
        "inter_user_wilson_width",
    ]
    return pd.DataFrame(rows, columns=columns)


def summarize_power(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per participant count from the rows of :func:`power_analysis`.

    ``w_significant_share`` (mean over replications) and ``w_all_significant``
    (the share of replications in which W was significant for every sketch);
    ``tau_median`` and ``tau_p05``, the medians over replications of the
    median and of the 5th percentile over sketches of tau_b between the
    panel's consensus and the reference panel's;
    ``inter_user_share`` (mean), ``inter_user_share_p025``/``_p975`` and
    ``inter_user_range_width`` (the 95% range of the share over replications),
    and ``inter_user_wilson_width`` (mean width of one study's Wilson interval).
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
        tau_median, tau_p05 = np.nanquantile(tau, [0.5, 0.05])
        share = significant / max(p.size, 1)
        rows.append(
            (
                index,
                k,
                w_significant / len(panel),
                float(tau_median),
                float(tau_p05),
                share,
                high - low,
            )
        )
    return rows


def raters_for_reliability(
    pilot: pd.DataFrame, *, target: float = 0.8, n_splits: int = 1000, seed: int = 0
) -> pd.DataFrame:
    """How many raters a consensus needs to reach reliability ``target``, from a pilot study.

    The split-half reliability of the pilot's consensus
    (:func:`~sbir_study.analysis.reliability.split_half_reliability`, Spearman's rho
    between random halves), carried to one rater and inverted:
    m = r (1 - r1) / (r1 (1 - r)) (:func:`~sbir_study.analysis.reliability.raters_needed`).

    Parameters
    ----------
    pilot : DataFrame
        A validated ratings table (:func:`~sbir_study.analysis.ratings.load_ratings`); its
        main phase is used, in the paper's orientation.

    Returns
    -------
    DataFrame
        One row per sketch and ``all``: ``sketch_id, n_raters, rho_half, rho_sb, r1,
        target, raters_needed`` (empty where no number of raters reaches the target:
        the pilot's halves do not agree, or the sketch had fewer than 4 raters).
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
    """Write ``power_runs.csv``, ``power.csv`` and ``power.png``/``.pdf`` (or the
    ``figure_formats``: :func:`~sbir_study.foundation.html.figure_formats`) into ``out``, as
    every output is written (``docs/outputs.md``); with ``reliability``
    (:func:`raters_for_reliability`), ``power_reliability.csv`` too."""
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
