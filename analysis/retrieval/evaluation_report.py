"""``report.html`` of ``sbir-study evaluate``: the rows and phrases computed here, the
page's markup and prose in ``templates/evaluation_report.html.jinja``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from sbir_study.foundation.html import (
    at_floor,
    embedded_figures,
    isnan,
    num,
    p_text,
    render,
    software_rows,
)
from sbir_study.foundation.paper import PUBLISHED_DESCRIPTOR_TAU
from sbir_study.foundation.scale import PAPER_SCALE, Scale

from .comparison import permutation_p_value_floor
from .measures import report_columns

__all__ = ["write_evaluation_report"]

#: The comparisons whose tests disagree that the page names; the rest it counts.
_DISAGREEMENTS_NAMED = 5


def write_evaluation_report(
    path: str | Path,
    result: Mapping,
    summary: pd.DataFrame,
    comparisons: pd.DataFrame,
    figures: Mapping[str, Path],
    *,
    scale: Scale | None = None,
) -> Path:
    """Write the self-contained page: the comparison table, the significant differences
    and the figures; ``scale`` is the ground truth's (default the paper's)."""
    path = Path(path)
    options = result["options"]
    inputs = result.get("inputs", {}).get("files", [])
    fields = ("role", "name", "path", "sha256", "lines")
    page = render(
        "sbir_study.analysis.retrieval",
        "evaluation_report.html.jinja",
        result=result,
        options=options,
        simulated="the ratings behind this ground truth" if result.get("simulated") else None,
        n_systems=len(result["systems"]),
        grade_text=_grade_text(scale or PAPER_SCALE),
        above=_above_the_participants(summary) if result.get("simulated") else None,
        missing=[
            (system, result["n_sketches"] - len(gone), ", ".join(map(str, gone)))
            for system, gone in result.get("missing_sketches", {}).items()
            if gone
        ],
        comparison=_comparison(summary, options["cutoffs"]),
        differences=_differences(comparisons, options["permutations"]),
        disagreements=_disagreements(comparisons),
        figures=embedded_figures(figures),
        inputs=[tuple(entry.get(f, "") for f in fields) for entry in inputs],
        software=software_rows(result.get("software", {})),
    )
    path.write_text(page, encoding="utf-8")
    return path


def _grade_text(scale: Scale) -> str:
    """How the qrels grade is computed on the ground truth's scale, in words."""
    text = f"{scale.high} - round(mean rating)"
    if scale != PAPER_SCALE:
        text += f" ({scale.k - 1} best, 0 worst, on the scale {scale}"
        if scale.best == "high":
            text += f"; mean ratings turned so that {scale.low} is the best match, as analyze "
            "writes them"
        text += ")"
    return text


def _above_the_participants(summary: pd.DataFrame) -> dict[str, Any] | None:
    """On simulated ratings, how many systems score above the simulated participants,
    beside the paper's best descriptor; None without the participants."""
    tau = summary[summary["measure"] == "tau_b"].set_index("system")["mean"]
    if "human" not in tau.index:
        return None
    human = float(tau["human"])
    return {
        "human": f"{human:.3f}",
        "n_above": sum(1 for system, value in tau.items() if system != "human" and value > human),
        "n_systems": len(tau) - 1,
        "best_published": f"{max(PUBLISHED_DESCRIPTOR_TAU.values()):.3f}",
    }


def _comparison(summary: pd.DataFrame, cutoffs: Sequence[int]) -> dict[str, Any]:
    """The comparison table: each system's means (tau_b's with intervals), by tau_b, and
    the systems whose tau_b it exceeds significantly."""
    present = set(summary["measure"])
    columns = [(m, label) for m, label in report_columns(cutoffs) if m in present]
    tau = summary[summary["measure"] == "tau_b"].sort_values("mean", ascending=False)
    order = dict.fromkeys([*tau["system"], *summary["system"]])  # by tau_b, then the rest
    cells = summary.set_index(["system", "measure"])
    rows = []
    for system in order:
        row = [system]
        for measure, _ in columns:
            if (system, measure) not in cells.index:
                row.append("")
                continue
            entry = cells.loc[(system, measure)]
            text = num(entry["mean"])
            if measure in ("tau_b", "tau_b_human_fraction") and not isnan(entry["ci_low"]):
                text += f" [{num(entry['ci_low'])}, {num(entry['ci_high'])}]"
            row.append(text)
        better = cells["significantly_better_than"].get((system, "tau_b"))
        row.append(better.replace(";", ", ") if isinstance(better, str) else "")
        rows.append(row)
    header = ["system", *[label for _, label in columns], "tau_b significantly above"]
    return {"header": header, "rows": rows}


def _differences(comparisons: pd.DataFrame, permutations: int) -> dict[str, Any]:
    """The comparisons of tau_b, smallest permutation p-value first; those at their test's
    floor marked ‡ and counted."""
    tau = comparisons[comparisons["measure"] == "tau_b"]
    rows, floored = [], 0
    for r in tau.sort_values("permutation_p_value").itertuples():
        mark = ""
        if at_floor(r.permutation_p_value, permutation_p_value_floor(r.n_sketches, permutations)):
            mark, floored = " ‡", floored + 1
        rows.append(
            (
                r.system_a,
                r.system_b,
                r.n_sketches,
                num(r.mean_difference),
                f"[{num(r.difference_ci_low)}, {num(r.difference_ci_high)}]",
                num(r.effect_size_dz),
                p_text(r.permutation_p_value) + mark,
                p_text(r.permutation_p_value_holm),
                p_text(r.t_p_value_holm),
                p_text(r.wilcoxon_p_value_holm),
                "yes" if r.significant else "no",
            )
        )
    return {"rows": rows, "n_floored": floored, "floor": p_text(2 / (permutations + 1))}


def _disagreements(comparisons: pd.DataFrame) -> dict[str, Any] | None:
    """The comparisons whose tests disagree after Holm, counted and the first few named;
    None when none does."""
    disagree = comparisons[comparisons["tests_disagree"].astype(bool)]
    if not len(disagree):
        return None
    named = [
        f"{r.system_a} vs {r.system_b} on {r.measure} "
        f"(rejected by {r.rejected_by.replace(';', ', ')})"
        for r in disagree.head(_DISAGREEMENTS_NAMED).itertuples()
    ]
    return {
        "n": len(disagree),
        "n_tau_b": int((disagree["measure"] == "tau_b").sum()),
        "named": "; ".join(named),
        "more": max(len(disagree) - _DISAGREEMENTS_NAMED, 0),
    }
