"""``report.html`` of ``sbir-study evaluate``: the systems side by side, self-contained."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path

import pandas as pd

from sbir_study.foundation.html import (
    at_floor,
    collapsed,
    figure_list,
    isnan,
    num,
    p_text,
    page_head,
    simulated_banner,
    software_table,
    table,
)
from sbir_study.foundation.paper import PUBLISHED_DESCRIPTOR_TAU
from sbir_study.foundation.scale import PAPER_SCALE, Scale

from .comparison import permutation_p_value_floor
from .measures import report_columns

__all__ = ["write_evaluation_report"]

_EVALUATION_CAPTIONS = {
    "systems_tau": "Each system's mean tau_b against the consensus over the sketches (a dot), "
    "with its 95% bootstrap interval (the bar). The black line is the participants' mean "
    "tau_b, each participant against the consensus of the others (leave-one-out), and the "
    "grey band its 95% bootstrap interval over the sketches: a system inside the band ranks "
    "the images about as well as a participant does.",
    "per_sketch_tau": "Per sketch, each system's tau_b against the consensus, beside the "
    "participants' mean leave-one-out tau_b (black).",
    "precision_recall": "Precision where each system first reaches each recall level, "
    "averaged over the sketches (binary relevance).",
}

#: How the p-value of a system's tau_b is computed, in words, by ``--alternative``.
_ALTERNATIVE_TEXT = {
    "greater": "one-sided, P(tau >= observed), as in the paper",
    "two-sided": "two-sided",
    "less": "one-sided, P(tau <= observed)",
}


def write_evaluation_report(
    path: str | Path,
    result: Mapping,
    summary: pd.DataFrame,
    comparisons: pd.DataFrame,
    figures: Mapping[str, Path],
    *,
    scale: Scale | None = None,
) -> Path:
    """Write the page of ``sbir-study evaluate``: the comparison table, the significant
    differences and the figures, self-contained like the analysis report. ``scale`` is
    the ground truth's (default the paper's), which the nDCG grades follow."""
    path = Path(path)
    options = result["options"]
    parts = [*page_head("sbir-study evaluation report")]
    n_systems = len(result["systems"])
    if result.get("simulated"):
        parts.append(simulated_banner("the ratings behind this ground truth"))
    parts += [
        "<h1>Retrieval systems against the consensus ground truth</h1>",
        f"<p>{n_systems} system{'s' if n_systems != 1 else ''} scored on "
        f"{result['n_sketches']} sketches. "
        "The benchmark measure is tau_b between a system's ranking of each sketch's images and "
        f"{_truth_text(options)} (Eitz et al. 2011, Sec. 3.2), averaged over the "
        f"sketches. Its p-value is {_ALTERNATIVE_TEXT[options['alternative']]}. "
        f"{_relevance_text(options, scale)} "
        "Intervals: 95% percentile bootstrap over the sketches "
        f"({options['bootstrap']} resamples, seed {options['seed']}).</p>",
    ]
    if result.get("simulated"):
        parts += _above_the_participants(summary)
    if not result.get("human_ceiling"):
        parts.append(
            "<p>No human ceiling: pass the ratings (<code>--ratings</code>) to compare the "
            "systems with the participants.</p>"
        )
    parts += _missing_sketches(
        result.get("missing_sketches", {}), result["n_sketches"], options.get("missing", "zero")
    )
    parts += _evaluationtable(summary, options["cutoffs"])
    if n_systems < 2:
        parts += ["<h2>Paired comparisons of tau_b</h2>", "<p>One system: nothing to compare.</p>"]
    else:
        parts += _significant_differences(comparisons, options)
    parts += figure_list(figures, _EVALUATION_CAPTIONS)
    inputs = result.get("inputs", {})
    fields = ("role", "name", "path", "sha256", "lines")
    rows = [tuple(entry.get(f, "") for f in fields) for entry in inputs.get("files", [])]
    files = table(
        ["role", "name", "file", "SHA-256", "lines"], rows, classes={2: "path", 3: "hash"}
    )
    parts += [
        "<h2>Inputs and software</h2>",
        collapsed(
            f"{len(rows)} input file{'s' if len(rows) != 1 else ''} with their SHA-256 "
            "(also in evaluation.json)",
            files,
            open_up_to=10,
            n=len(rows),
        ),
        "<p>The software that computed the numbers and drew the figures:</p>",
        software_table(result.get("software", {})),
        "</body></html>",
    ]
    path.write_text("\n".join(parts) + "\n", encoding="utf-8")
    return path


def _truth_text(options: Mapping) -> str:
    """What tau_b correlates with: the mean ratings, or the grades of qrels."""
    if options["relevant_below"] is None:
        return (
            "the grades of the qrels given as the ground truth (equal grades are ties, which "
            "tau_b's tie correction accounts for)"
        )
    return "the participants' mean ratings"


def _relevance_text(options: Mapping, scale: Scale | None) -> str:
    if options["relevant_below"] is None:
        return (
            "Binary measures count an image of grade 1 or more as relevant, as trec_eval "
            "does; nDCG's gains are the grades."
        )
    return (
        f"Binary measures count an image as relevant when its mean rating is below "
        f"{options['relevant_below']:g}; nDCG uses the qrels grade {_grade_text(scale)}."
    )


def _missing_sketches(missing: Mapping[str, Sequence[str]], total: int, mode: str) -> list[str]:
    """Which runs leave sketches out, by name, and how those sketches were scored."""
    lines = [
        f"<li>{escape(str(system))}: {total - len(gone)} of {total} sketches (missing "
        f"{escape(', '.join(map(str, gone)))})</li>"
        for system, gone in missing.items()
        if gone
    ]
    if not lines:
        return []
    how = (
        "scored 0 on every measure (<code>--missing zero</code>, trec_eval's <code>-c</code>: "
        "a sketch a system does not answer counts against it, as in benchmark tables)"
        if mode == "zero"
        else "left out of that system's means (<code>--missing skip</code>; its means then "
        "stand on fewer sketches than the others', which favours a system that abstains)"
    )
    return [
        f"<p>Runs that leave out sketches of the ground truth; those sketches are {how}:</p>",
        "<ul>",
        *lines,
        "</ul>",
    ]


def _grade_text(scale: Scale | None) -> str:
    """How the qrels grade is computed on the ground truth's scale, in words."""
    scale = scale or PAPER_SCALE
    text = f"{scale.high} - round(mean rating)"
    if scale != PAPER_SCALE:
        text += f" ({scale.k - 1} best, 0 worst, on the scale {scale}"
        if scale.best == "high":
            text += f"; mean ratings turned so that {scale.low} is the best match, as analyze "
            "writes them"
        text += ")"
    return text


def _above_the_participants(summary: pd.DataFrame) -> list[str]:
    """On simulated ratings, why a system may score above the participants, said plainly."""
    tau = summary[summary["measure"] == "tau_b"].set_index("system")["mean"]
    if "human" not in tau.index:
        return []
    human = float(tau["human"])
    above = [str(system) for system, value in tau.items() if system != "human" and value > human]
    best_published = max(PUBLISHED_DESCRIPTOR_TAU.values())
    lead = (
        f"{len(above)} of {len(tau) - 1} systems score above the simulated participants "
        f"(mean tau_b {human:.3f}). "
        if above
        else ""
    )
    return [
        '<p class="banner">Read these scores as a demonstration of the pipeline, not of the '
        f"systems. {lead}The simulated participants rate each pair from a latent similarity "
        "plus their own bias and noise; on a generated stimulus set that latent similarity is "
        "the very quantity the images were drawn from, so an engine that measures the images "
        "recovers the ranking without any rater's noise, while each simulated participant "
        "carries it. With real participants the order is the other way round: the paper's "
        f"best descriptor reached a mean tau_b of {best_published:.3f} against their "
        "consensus (Eitz et al. 2011, Sec. 5.1), far below the participants' own agreement "
        "with it.</p>"
    ]


def _evaluationtable(summary: pd.DataFrame, cutoffs: Sequence[int]) -> list[str]:
    present = set(summary["measure"])
    columns = [(m, label) for m, label in report_columns(cutoffs) if m in present]
    tau = summary[summary["measure"] == "tau_b"].sort_values("mean", ascending=False)
    order = list(tau["system"]) + [
        s for s in dict.fromkeys(summary["system"]) if s not in set(tau["system"])
    ]
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
        better = (
            cells.loc[(system, "tau_b"), "significantly_better_than"]
            if (system, "tau_b") in cells.index
            else ""
        )
        row.append(", ".join(str(better).split(";")) if isinstance(better, str) else "")
        rows.append(row)
    return [
        "<h2>Comparison</h2>",
        "<p>Mean over the sketches; for tau_b and its fraction of the human level, the 95% "
        "interval. The last column names the systems whose tau_b this one exceeds "
        "significantly (paired permutation test over the sketches, Holm-corrected across the "
        "pairs of systems). Lower is better only for the average rank. Per-sketch values: "
        "<code>per_sketch.csv</code>; every measure with intervals: <code>summary.csv</code>.</p>",
        table(
            ["system", *[label for _, label in columns], "tau_b significantly above"],
            rows,
            classes={0: ""},
        ),
    ]


def _significant_differences(comparisons: pd.DataFrame, options: Mapping) -> list[str]:
    alpha, permutations = options["alpha"], options["permutations"]
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
    header = [
        "system a",
        "system b",
        "sketches",
        "mean a - b",
        "95% interval",
        "d_z",
        "permutation p",
        "permutation p (Holm)",
        "t-test p (Holm)",
        "Wilcoxon p (Holm)",
        "significant",
    ]
    which = (
        f"every system against {escape(str(options['baseline']))}"
        if options.get("baseline")
        else "every pair of systems"
    )
    family = (
        "every pair and measure"
        if options.get("correct") == "across-measures"
        else "the pairs of systems"
    )
    parts = [
        "<h2>Paired comparisons of tau_b</h2>",
        f"<p>{which[0].upper() + which[1:]} over the sketches both were scored on: the mean "
        "difference with its 95% paired bootstrap interval (the sketches resampled), Cohen's "
        "d_z (the mean difference over the standard deviation of the differences), and "
        f"p-values Holm-corrected across {family}; significant when the permutation test's "
        f"is below {alpha:g}. All measures: <code>comparisons.csv</code>.</p>",
        table(header, rows, classes={0: "", 1: ""}),
    ]
    disagree = comparisons[comparisons["tests_disagree"].astype(bool)]
    if len(disagree):
        tau_disagree = disagree[disagree["measure"] == "tau_b"]
        named = "; ".join(
            f"{escape(str(r.system_a))} vs {escape(str(r.system_b))} on {escape(str(r.measure))}"
            f" (rejected by {r.rejected_by.replace(';', ', ')})"
            for r in disagree.head(5).itertuples()
        )
        more = f" and {len(disagree) - 5} more" if len(disagree) > 5 else ""
        parts.append(
            f'<p class="note">The tests disagree at {alpha:g} (after Holm) on {len(disagree)} '
            f"comparison(s), {len(tau_disagree)} of them in tau_b: {named}{more} "
            "(<code>tests_disagree</code> in comparisons.csv). They test different things: the "
            "t-test and the permutation test whether the mean difference is 0, the Wilcoxon "
            "signed-rank test whether the differences are symmetric about 0, from their ranks. "
            "A few large differences move the mean and not the ranks; many small ones of one "
            "sign move the ranks more than the mean; heavy ties (measures such as P@k and NN "
            "take few values) and zero differences are set aside by the rank test; and on few "
            "sketches each test has little power, so one may just cross the level the other "
            "just misses.</p>"
        )
    if floored:
        parts.append(
            f'<p class="note">‡ At the floor: {floored} of {len(rows)} permutation p-values are '
            f"the smallest the test can give with {permutations} random sign flips, two-sided "
            f"2/({permutations} + 1) = {p_text(2 / (permutations + 1))} (twice the one-sided "
            f"1/({permutations} + 1)); when every sign pattern is enumerated (few sketches) it "
            "is 2/2^n. The exact p-value may be smaller still; more permutations "
            "(<code>--permutations</code>) lower the floor.</p>"
        )
    return parts
