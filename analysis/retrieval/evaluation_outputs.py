"""What ``sbir-study evaluate`` writes (``docs/evaluation.md``) and prints."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sbir_study.foundation.html import DEFAULT_FIGURE_FORMATS
from sbir_study.foundation.html import figure_formats as checked_figure_formats
from sbir_study.foundation.outputs import output_folder
from sbir_study.foundation.provenance import software_versions

from ..consensus import write_binary_qrels
from .evaluation import HUMAN, Evaluation, EvaluationOptions
from .measures.table import MEASURES

__all__ = ["format_evaluation", "trec_eval_q", "trec_measure_name", "write_evaluation"]

#: The measures of each system that ``evaluation.json`` lists.
_HEADLINE = tuple(m.name for m in MEASURES if m.headline)


def write_evaluation(
    evaluation: Evaluation,
    out: str | Path,
    *,
    figures: bool = True,
    figure_formats: Sequence[str] = DEFAULT_FIGURE_FORMATS,
    overwrite: bool = False,
) -> dict:
    """Write the evaluation's folder ``out`` as every output is written
    (``docs/outputs.md``); returns ``evaluation.json``'s contents.

    The tables ``per_sketch.csv``, ``summary.csv``, ``comparisons.csv``, ``pr_curve.csv``
    and, with ratings, ``human_ceiling.csv``; ``per_sketch_trec/`` (``trec_eval -q``
    files); ``ground_truth_binary.qrels`` (this evaluation's binary relevance, for
    trec_eval, ranx and ir_measures); ``evaluation.json``, ``report.html`` and, with
    ``figures``, ``figures/`` in ``figure_formats``.
    """
    formats = checked_figure_formats(figure_formats) if figures else ()
    inputs = [entry["path"] for entry in evaluation.inputs.get("files", [])]
    with output_folder(out, "evaluate", overwrite=overwrite, inputs=inputs) as folder:
        tables = {
            "per_sketch": evaluation.per_sketch,
            "summary": evaluation.summary,
            "comparisons": evaluation.comparisons,
            "pr_curve": evaluation.pr_curve,
            "human_ceiling": evaluation.human,
        }
        for name, frame in tables.items():
            if frame is not None:
                frame.to_csv(folder / f"{name}.csv", index=False)
        (folder / "per_sketch_trec").mkdir()
        for system in dict.fromkeys(evaluation.per_sketch["system"]):
            if system != HUMAN:
                text = trec_eval_q(evaluation.per_sketch, evaluation.summary, system)
                (folder / "per_sketch_trec" / f"{system}.txt").write_text(text, encoding="utf-8")
        if (truth := evaluation.truth) is not None:
            # From qrels, mean_rating is minus the grade: relevant (grade >= 1) is below -0.5.
            below = -0.5 if truth.from_qrels else evaluation.options.relevant_below
            path = folder / "ground_truth_binary.qrels"
            write_binary_qrels(truth.table(), path, relevant_below=below)
        result = _record(evaluation)
        written = {}
        if formats:
            from .evaluation_figures import write_evaluation_figures  # matplotlib only when drawing

            written = write_evaluation_figures(
                folder / "figures",
                evaluation.per_sketch,
                evaluation.pr_curve,
                evaluation.summary,
                formats=formats,
            )
        result["figures"] = sorted(written)
        (folder / "evaluation.json").write_text(
            json.dumps(result, indent=2, allow_nan=False) + "\n", encoding="utf-8"
        )
        from .evaluation_report import write_evaluation_report

        write_evaluation_report(
            folder / "report.html",
            result,
            evaluation.summary,
            evaluation.comparisons,
            written,
            scale=evaluation.truth.scale if evaluation.truth is not None else None,
        )
        return result


def _record(evaluation: Evaluation) -> dict[str, Any]:
    """``evaluation.json`` but for its list of figures."""
    summary = evaluation.summary
    return {
        "systems": [s for s in dict.fromkeys(summary["system"]) if s != HUMAN],
        "n_sketches": int(evaluation.per_sketch["sketch_id"].nunique()),
        # As analyze's summary.json records it: the grades and the options' cut are on it.
        "scale": str(evaluation.truth.scale) if evaluation.truth is not None else None,
        "human_ceiling": evaluation.human is not None,
        # Per system, the sketches its run leaves out (scored by options.missing).
        "missing_sketches": {system: list(gone) for system, gone in evaluation.missing.items()},
        "simulated": bool(evaluation.inputs.get("simulated", False)),
        "options": asdict(evaluation.options),
        "inputs": evaluation.inputs,
        "software": software_versions(),
        "headline": {
            system: _headline(summary, system) for system in dict.fromkeys(summary["system"])
        },
    }


def _headline(summary: pd.DataFrame, system: str) -> dict[str, dict[str, Any]]:
    """One system's headline measures, and the systems its tau_b is significantly above."""
    rows = summary[summary["system"] == system].set_index("measure")
    entry: dict[str, dict[str, Any]] = {}
    for name in _HEADLINE:
        if name in rows.index:
            entry[name] = {
                k: _plain(rows.loc[name, k]) for k in ("mean", "ci_low", "ci_high", "n_sketches")
            }
    if "tau_b" in rows.index and system != HUMAN:
        entry["tau_b"]["significantly_better_than"] = [
            s for s in str(rows.loc["tau_b", "significantly_better_than"]).split(";") if s
        ]
    return entry


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
    """One system's per-sketch values in the layout of ``trec_eval -q``, so that the tools
    that read it read this: ``measure<TAB>sketch<TAB>value`` lines (names as
    :func:`trec_measure_name`, padded to 22, four decimals), then the ``all`` means. An
    undefined value has no line, as trec_eval prints none for a query it does not score.
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
    """`` on 30 of 31 sketches (missing s07, scored 0)``, or nothing."""
    if not missing:
        return ""
    shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
    how = "scored 0" if mode == "zero" else "left out"
    return f"  on {total - len(missing)} of {total} sketches (missing {shown}, {how})"


def _plain(value: Any) -> int | float | None:
    """A table's number as JSON holds it: NaN as null."""
    if isinstance(value, np.integer | int):
        return int(value)
    value = float(value)
    return None if np.isnan(value) else value


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
