"""``report.html`` of ``sbir-study evaluate``: the systems side by side, self-contained."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from ..html import figure_list, isnan, num, p_text, page_head, table
from .metrics import report_columns

__all__ = ["write_evaluation_report"]

_EVALUATION_CAPTIONS = {
    "systems_tau": "Each system's mean tau_b against the consensus over the sketches, with its "
    "95% bootstrap interval; the participants' mean (each against the others' consensus) as "
    "a black line in a grey band.",
    "per_sketch_tau": "Per sketch, each system's tau_b against the consensus, beside the "
    "participants' mean leave-one-out tau_b (black).",
    "precision_recall": "Precision where each system first reaches each recall level, "
    "averaged over the sketches (binary relevance).",
}


def write_evaluation_report(
    path: str | Path,
    result: Mapping,
    summary: pd.DataFrame,
    comparisons: pd.DataFrame,
    figures: Mapping[str, Path],
) -> Path:
    """Write the page of ``sbir-study evaluate``: the comparison table, the significant
    differences and the figures, self-contained like the analysis report."""
    path = Path(path)
    options = result["options"]
    parts = [
        *page_head("sbir-study evaluation report"),
        "<h1>Retrieval systems against the consensus ground truth</h1>",
        f"<p>{len(result['systems'])} systems scored on {result['n_sketches']} sketches. "
        "The benchmark measure is tau_b between a system's ranking of each sketch's images and "
        "the participants' mean ratings (Eitz et al. 2011, Sec. 3.2), averaged over the "
        f"sketches; its p-value is {options['alternative']}. Binary measures count an image as "
        f"relevant when its mean rating is below {options['relevant_below']:g}; nDCG uses the "
        "qrels grade 7 - round(mean rating). Intervals: 95% percentile bootstrap over the "
        f"sketches ({options['bootstrap']} resamples, seed {options['seed']}).</p>",
    ]
    if not result.get("human_ceiling"):
        parts.append(
            "<p>No human ceiling: pass the ratings (<code>--ratings</code>) to compare the "
            "systems with the participants.</p>"
        )
    parts += _evaluationtable(summary, options["cutoffs"])
    parts += _significant_differences(comparisons, options["alpha"])
    parts += figure_list(figures, _EVALUATION_CAPTIONS)
    inputs = result.get("inputs", {})
    fields = ("role", "name", "path", "sha256", "lines")
    rows = [tuple(entry.get(f, "") for f in fields) for entry in inputs.get("files", [])]
    software = [(k, v or "not installed") for k, v in result.get("software", {}).items()]
    parts += [
        "<h2>Inputs and software</h2>",
        table(["role", "name", "file", "SHA-256", "lines"], rows),
        table(["software", "version"], software),
        "</body></html>",
    ]
    path.write_text("\n".join(parts) + "\n", encoding="utf-8")
    return path


def _evaluationtable(summary: pd.DataFrame, cutoffs: Sequence[int]) -> list[str]:
    present = set(summary["metric"])
    columns = [(m, label) for m, label in report_columns(cutoffs) if m in present]
    tau = summary[summary["metric"] == "tau_b"].sort_values("mean", ascending=False)
    order = list(tau["system"]) + [s for s in dict.fromkeys(summary["system"])
                                   if s not in set(tau["system"])]  # fmt: skip
    cells = summary.set_index(["system", "metric"])
    rows = []
    for system in order:
        row = [system]
        for metric, _ in columns:
            if (system, metric) not in cells.index:
                row.append("")
                continue
            entry = cells.loc[(system, metric)]
            text = num(entry["mean"])
            if metric in ("tau_b", "tau_b_human_fraction") and not isnan(entry["ci_low"]):
                text += f" [{num(entry['ci_low'])}, {num(entry['ci_high'])}]"
            row.append(text)
        better = cells.loc[(system, "tau_b"), "significantly_better_than"] if (
            system, "tau_b") in cells.index else ""  # fmt: skip
        row.append(", ".join(str(better).split(";")) if isinstance(better, str) else "")
        rows.append(row)
    return [
        "<h2>Comparison</h2>",
        "<p>Mean over the sketches; for tau_b and its fraction of the human level, the 95% "
        "interval. The last column names the systems whose tau_b this one exceeds "
        "significantly (paired permutation test over the sketches, Holm-corrected across the "
        "pairs of systems). Lower is better only for the average rank. Per-sketch values: "
        "<code>per_sketch.csv</code>; every metric with intervals: <code>summary.csv</code>.</p>",
        table(["system", *[label for _, label in columns], "tau_b significantly above"], rows),
    ]


def _significant_differences(comparisons: pd.DataFrame, alpha: float) -> list[str]:
    tau = comparisons[comparisons["metric"] == "tau_b"]
    rows = [
        (r.system_a, r.system_b, r.n_sketches, num(r.mean_difference),
         p_text(r.permutation_p_value_holm), p_text(r.wilcoxon_p_value_holm),
         "yes" if r.significant else "no")
        for r in tau.sort_values("permutation_p_value").itertuples()
    ]  # fmt: skip
    header = ["system a", "system b", "sketches", "mean a - b", "permutation p (Holm)",
              "Wilcoxon p (Holm)", "significant"]  # fmt: skip
    return [
        "<h2>Paired comparisons of tau_b</h2>",
        f"<p>Every pair of systems over the sketches both were scored on; p-values "
        f"Holm-corrected across the pairs; significant when the permutation test's is below "
        f"{alpha:g}. All metrics: <code>comparisons.csv</code>.</p>",
        table(header, rows),
    ]
