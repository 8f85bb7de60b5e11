"""The whole analysis of a study: from the ratings table to the files of ``analyze --out``."""

from __future__ import annotations

import json
import math
import platform
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd

from . import _kernels
from ._checks import InputError, check_option
from .agreement import inter_rater_tau_by_sketch, kendall_w_by_sketch
from .consensus import (
    anchoring_consistency,
    consensus_ground_truth,
    rater_vs_consensus,
    write_qrels,
)
from .distribution import binned_medians, rating_distribution
from .ratings import Provenance
from .significance import summarize_family

__all__ = ["PAIRWISE_FULL_LIMIT", "AnalysisOptions", "analyze_ratings"]

#: Above this many raters per sketch the inter-user table (raters^2 / 2 rows per
#: sketch) is replaced by per-sketch summaries unless asked for in full.
PAIRWISE_FULL_LIMIT = 500
PAIRWISE_MODES = ("auto", "full", "summary")
_QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


@dataclass(frozen=True)
class AnalysisOptions:
    """Options of :func:`analyze_ratings`."""

    alternative: str = "greater"
    alpha: float = 0.05
    pairwise: str = "auto"

    def __post_init__(self) -> None:
        check_option("alternative", self.alternative, _kernels.ALTERNATIVES)
        check_option("pairwise", self.pairwise, PAIRWISE_MODES)
        if not (isinstance(self.alpha, float | int) and 0.0 < self.alpha < 1.0):
            raise InputError(
                f"alpha: expected a significance level between 0 and 1, got {self.alpha!r}"
            )


def analyze_ratings(ratings: pd.DataFrame, out: str | Path, options=AnalysisOptions()) -> dict:
    """Compute every statistic of the paper's Sec. 3 and write the tables to ``out``.

    Writes ``ground_truth.csv``, ``ground_truth.qrels``, ``pairwise_tau.csv``
    (or only ``pairwise_tau_summary.csv`` above :data:`PAIRWISE_FULL_LIMIT`
    raters per sketch, unless ``options.pairwise == "full"``),
    ``pairwise_tau_summary.csv``, ``kendall_w.csv``, ``consensus_tau.csv``,
    ``anchoring.csv``, ``bins.csv``, ``rating_distribution.csv`` and
    ``summary.json`` (``DESIGN.md`` lists their columns). Returns the summary.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    provenance = ratings.attrs.get("provenance", Provenance())
    alpha, alternative = options.alpha, options.alternative
    main = ratings[ratings["phase"] == "main"]
    if main.empty:
        raise InputError("ratings: no rows of phase 'main'; expected the main block of a study")

    ground_truth = consensus_ground_truth(ratings)
    ground_truth.to_csv(out / "ground_truth.csv", index=False)
    write_qrels(ground_truth, out / "ground_truth.qrels")

    raters_per_sketch = int(main.groupby("sketch_id")["participant"].nunique().max())
    full = options.pairwise == "full" or (
        options.pairwise == "auto" and raters_per_sketch <= PAIRWISE_FULL_LIMIT
    )
    pairwise_p, pairwise_summary = _write_pairwise(ratings, out, alternative, alpha, full)

    w_table = kendall_w_by_sketch(ratings)
    w_table.to_csv(out / "kendall_w.csv", index=False)

    consensus = rater_vs_consensus(ratings, alternative=alternative)
    consensus.to_csv(out / "consensus_tau.csv", index=False)

    anchoring = anchoring_consistency(ratings, alternative=alternative)
    anchoring.to_csv(out / "anchoring.csv", index=False)

    bins = binned_medians(ratings)
    bins.to_csv(out / "bins.csv", index=False)

    distribution = rating_distribution(ratings)
    distribution.to_csv(out / "rating_distribution.csv", index=False)

    summary = {
        "n_participants": int(ratings["participant"].nunique()),
        "n_sketches": int(main["sketch_id"].nunique()),
        "n_pairs": len(ground_truth),
        "alternative": alternative,
        "alpha": alpha,
        "simulated": provenance.simulated,
        "pairwise": summarize_family(pairwise_p, alpha).to_dict(),
        "consensus": summarize_family(consensus["p_value"], alpha).to_dict(),
        "consensus_loo": summarize_family(consensus["p_value_loo"], alpha).to_dict(),
        "anchoring": summarize_family(anchoring["p_value"], alpha).to_dict(),
        "kendall_w": {
            "min": _number(w_table["w"].min()),
            "median": _number(w_table["w"].median()),
            "max": _number(w_table["w"].max()),
            "n_significant": int((w_table["p_value"] < alpha).sum()),
            "n_sketches": len(w_table),
            "n_raters_excluded": int(w_table["n_raters_excluded"].sum()),
        },
        "bins": [
            {
                "bin": int(row.bin),
                "n_ratings": int(row.n_ratings),
                "mean": _number(row.mean),
                "sd": _number(row.sd),
            }
            for row in bins.itertuples()
        ],
        "phases": {
            phase: {"n_trials": len(group), "n_missing": int(group["rating"].isna().sum())}
            for phase, group in ratings.groupby("phase", sort=True)
        },
        "pairwise_table": "full" if full else "summary",
        "pairwise_tau_median_by_sketch": {
            "min": _number(pairwise_summary["tau_median"].min()),
            "max": _number(pairwise_summary["tau_median"].max()),
        },
        "sources": [asdict(source) for source in provenance.sources],
        "software": _software(),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


def _write_pairwise(
    ratings: pd.DataFrame, out: Path, alternative: str, alpha: float, full: bool
) -> tuple[np.ndarray, pd.DataFrame]:
    """Write the inter-user table and its per-sketch summary; return all p-values."""
    table_path = out / "pairwise_tau.csv"
    if not full and table_path.exists():
        # A table from an earlier full run would no longer match the summary.
        table_path.unlink()
    pvalues, summary_rows, buffered = [], [], []
    n_buffered = 0
    header = True
    for sketch_id, participants, result in inter_rater_tau_by_sketch(
        ratings, alternative=alternative
    ):
        a, b = np.triu_indices(len(participants), 1)
        shared = result.n_items[a, b] > 0
        a, b = a[shared], b[shared]
        tau, p = result.statistic[a, b], result.pvalue[a, b]
        pvalues.append(p)
        summary_rows.append((sketch_id, a.size, *_tau_summary(tau, p, alpha)))
        if not full:
            continue
        buffered.append(
            pd.DataFrame(
                {
                    "sketch_id": sketch_id,
                    "participant_a": participants[a],
                    "participant_b": participants[b],
                    "tau_b": tau,
                    "p_value": p,
                    "n_items": result.n_items[a, b],
                }
            )
        )
        n_buffered += a.size
        # Written in large pieces: one write per sketch costs more than the statistics.
        if n_buffered >= 1_000_000:
            _append_csv(buffered, table_path, header)
            buffered, n_buffered, header = [], 0, False
    if full:
        _append_csv(buffered, table_path, header)
    summary = pd.DataFrame(
        summary_rows,
        columns=[
            "sketch_id", "n_pairs", "tau_min", "tau_q05", "tau_q25", "tau_median", "tau_q75",
            "tau_q95", "tau_max", "share_significant",
        ],
    )  # fmt: skip
    summary.to_csv(out / "pairwise_tau_summary.csv", index=False)
    return (np.concatenate(pvalues) if pvalues else np.empty(0)), summary


def _tau_summary(tau: np.ndarray, p: np.ndarray, alpha: float) -> tuple[float, ...]:
    """min, 5/25/50/75/95th percentiles, max of the defined tau_b, and the share significant."""
    defined = ~np.isnan(p)
    if not defined.any():
        return (np.nan,) * 8
    tau = tau[defined]
    return (
        float(tau.min()),
        *map(float, np.quantile(tau, _QUANTILES)),
        float(tau.max()),
        float((p[defined] < alpha).mean()),
    )


def _append_csv(parts: list[pd.DataFrame], path: Path, header: bool) -> None:
    if parts or header:
        table = pd.concat(parts, ignore_index=True) if parts else _EMPTY_PAIRWISE
        table.to_csv(path, mode="w" if header else "a", header=header, index=False)


_EMPTY_PAIRWISE = pd.DataFrame(
    columns=["sketch_id", "participant_a", "participant_b", "tau_b", "p_value", "n_items"]
)


def _number(value) -> float | None:
    """A float for JSON, None for NaN."""
    value = float(value)
    return None if math.isnan(value) else value


def _software() -> dict:
    versions = {"python": platform.python_version()}
    for package in ("sbir-study", "numpy", "pandas", "scipy"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return versions
