"""The contents of ``summary.json`` and the lines ``sbir-study analyze`` prints."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd

from sbir_study.foundation.provenance import software_versions
from sbir_study.foundation.scale import Scale

from .options import AnalysisOptions
from .ratings import ORIGINS, Provenance, participant_origins
from .significance import summarize_family
from .wording import (
    counted,
    participant_count,
    permutation_text,
    raters_range,
    share_interval,
    undefined_text,
)

__all__ = ["format_summary", "origin_counts", "study_summary"]


def study_summary(
    ratings: pd.DataFrame, done: Mapping[str, Any], options: AnalysisOptions, scale: Scale
) -> dict:
    """The contents of ``summary.json`` (``docs/formats.md``) but for its reliability and
    figures, from the results of the analysis (``done``, by name) of ``ratings``.

    Each family's ``undefined`` lists why its undefined tests are undefined
    (:func:`_undefined`): a test that cannot be made is counted and named, never
    silently left out of a share's denominator.
    """
    alpha = options.alpha
    provenance = ratings.attrs.get("provenance", Provenance())
    pairwise, w_table = done["pairwise"], done["kendall_w"]
    return {
        "n_participants": int(ratings["participant"].nunique()),
        "n_sketches": int(done["main"]["sketch_id"].nunique()),
        "n_pairs": len(done["ground_truth"]),
        # As recorded (evaluate reads it back), though every number here is in the paper's
        # orientation.
        "scale": str(scale),
        "alternative": options.alternative,
        "alpha": alpha,
        "simulated": provenance.simulated,
        "origins": origin_counts(ratings),
        "pairwise": {**pairwise.family.to_dict(), "undefined": _undefined(pairwise.undefined)},
        **_family_summaries(done["consensus"], done["anchoring"], alpha),
        "kendall_w": _kendall_w_summary(w_table, alpha),
        "krippendorff_alpha": _alpha_summary(done["krippendorff_alpha"], w_table, options),
        "skillings_mack": _skillings_mack_summary(w_table, alpha, options),
        "bins": [
            {
                "bin": int(row.bin),
                "n_ratings": int(row.n_ratings),
                "mean": _number(row.mean),
                "sd": _number(row.sd),
            }
            for row in done["bins"].itertuples()
        ],
        "phases": _phase_counts(ratings),
        "pairwise_table": "full" if done["full"] else "summary",
        "pairwise_raters": {
            "max": options.pairwise_raters,
            "n_sketches_sampled": int(
                (pairwise.summary["n_raters"] < pairwise.summary["n_raters_all"]).sum()
            ),
            "seed": options.seed,
        },
        "pairwise_tau_median_by_sketch": {
            "min": _number(pairwise.summary["tau_median"].min()),
            "max": _number(pairwise.summary["tau_median"].max()),
        },
        "sources": [asdict(source) for source in provenance.sources],
        "software": {
            **software_versions(),
            **{f"{name} (sessions)": v for name, v in provenance.session_software},
        },
    }


def _family_summaries(consensus: pd.DataFrame, anchoring: pd.DataFrame, alpha: float) -> dict:
    """The families of tau_b tests against the consensus (with and without the participant)
    and against the prescribed ratings."""
    families = {
        "consensus": (consensus, "p_value", "reason"),
        "consensus_loo": (consensus, "p_value_loo", "reason_loo"),
        "anchoring": (anchoring, "p_value", "reason"),
    }
    return {
        name: {
            **summarize_family(table[p_value], alpha).to_dict(),
            "undefined": _undefined_in(table, reason),
        }
        for name, (table, p_value, reason) in families.items()
    }


def _kendall_w_summary(w_table: pd.DataFrame, alpha: float) -> dict:
    return {
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
    }


def _phase_counts(ratings: pd.DataFrame) -> dict[str, dict[str, int]]:
    """Trials and missing ratings of each phase, the phases in sorted order, counted from the
    phase and rating columns alone (a group per phase would copy every column)."""
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


def _rater_range(w_table: pd.DataFrame) -> dict:
    """Over how many raters the W of the sketches stand: k (complete) of m (all), least and most."""
    return {
        "n_raters_min": _count(w_table["n_raters"].min()),
        "n_raters_max": _count(w_table["n_raters"].max()),
        "n_raters_all_min": _count(w_table["n_raters_all"].min()),
        "n_raters_all_max": _count(w_table["n_raters_all"].max()),
    }


def _alpha_summary(overall: Mapping, w_table: pd.DataFrame, options: AnalysisOptions) -> dict:
    summary: dict[str, Any] = {}
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
        if stats["n_tests"]:
            defined = f" defined ({undefined})" if undefined else ""
            lines.append(
                f"  {name}: {value} of {stats['n_tests']:,}{defined} tau_b significant "
                f"(95% CI {interval})"
            )
        elif undefined:
            lines.append(f"  {name}: no tau_b defined ({undefined})")
    w = summary["kendall_w"]
    median = "n/a" if w["median"] is None else f"{w['median']:.3f}"
    undefined = undefined_text(w)
    if not undefined or w["n_defined"]:
        tested = f"{w['n_defined']} defined ({undefined})" if undefined else w["n_sketches"]
        lines.append(
            f"  Kendall's W: {w['n_significant']} of {tested} sketches significant, "
            f"median W {median}, over the {raters_range(w)} participants who rated every image"
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
