"""``report.html``: one self-contained page with the analysis beside the paper's numbers.

The page embeds its figures as data URIs and loads nothing from the network, so
it opens in any browser, can be mailed, and archived with the data.
"""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from .paper import IMAGES_PER_SKETCH, PUBLISHED

__all__ = ["write_evaluation_report", "write_report"]

_CAPTIONS = {
    "fig4_anchoring": (
        "Fig. 4. For each participant, tau_b between their ratings of the anchor pairs during "
        "the experiment and the prescribed anchor ratings, one marker per anchor sketch; "
        "hollow markers are not significant."
    ),
    "fig5_interuser": (
        "Fig. 5. Per sketch, the tau_b between every pair of participants: median line, box "
        "from the 25th to the 75th percentile, whiskers to 1.5 IQR, outliers as red plus "
        "signs; Kendall's W of all participants as a black circle."
    ),
    "fig6_vs_consensus": (
        "Fig. 6. Per participant, the tau_b of their ratings of each sketch's images against "
        "the consensus ranking (the mean rating of the other participants)."
    ),
    "fig7_distribution": (
        "Fig. 7. Share of ratings at each point of the scale, against the uniform share."
    ),
    "fig8_bins": (
        "Fig. 8. Ratings grouped by the median rating of their pair (Eq. 3): mean and "
        "standard deviation (left), number of ratings (right)."
    ),
    "fig9_extremes": "Fig. 9. The sketches with the best (top) and worst (bottom) agreement.",
}

_STYLE = """
body { font-family: system-ui, sans-serif; max-width: 1100px; margin: 2em auto;
       padding: 0 1em; color: #222; line-height: 1.45; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 2em;
     border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.92em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }
th { background: #f3f3f3; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.banner { background: #fff3cd; border: 2px solid #c9a227; padding: 0.7em 1em;
          font-weight: bold; }
figure { margin: 1.5em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 0.9em; color: #444; }
code { font-size: 0.9em; }
"""


def write_report(
    path: str | Path,
    summary: Mapping,
    kendall_w: pd.DataFrame,
    sketch_agreement: pd.DataFrame,
    figures: Mapping[str, Path],
) -> Path:
    """Write the report page to ``path`` from an analysis' summary, tables and figure files."""
    path = Path(path)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>sbir-study analysis report</title>",
        f"<style>{_STYLE}</style></head><body>",
    ]
    if summary.get("simulated"):
        parts.append(
            '<p class="banner">SIMULATED DATA: these ratings were produced by '
            "<code>sbir-study simulate</code>, not by people. The numbers show what the "
            "pipeline computes, not a finding.</p>"
        )
    parts.append("<h1>Sketch/image rating study: analysis report</h1>")
    parts += _what_was_analysed(summary)
    parts += _headline(summary)
    parts += _figures(figures)
    parts += _extremes(sketch_agreement)
    parts += _w_table(kendall_w, summary["alpha"])
    parts += _provenance(summary)
    parts.append("</body></html>")
    path.write_text("\n".join(parts) + "\n", encoding="utf-8")
    return path


#: The measures shown in the evaluation report's comparison table, with their headings.
_EVALUATION_COLUMNS = (
    ("tau_b", "tau_b"),
    ("tau_b_human_fraction", "of human"),
    ("ndcg", "nDCG"),
    ("ndcg@10", "nDCG@10"),
    ("ap", "AP"),
    ("p@10", "P@10"),
    ("nn", "NN"),
    ("ft", "FT"),
    ("st", "ST"),
    ("e@32", "E@32"),
    ("dcg_shrec", "DCG (SHREC)"),
    ("avg_rank", "avg rank"),
    ("pwh@10", "PWH@10"),
    ("psr", "PSR"),
)

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
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>sbir-study evaluation report</title>",
        f"<style>{_STYLE}</style></head><body>",
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
    parts += _evaluation_table(summary)
    parts += _significant_differences(comparisons, options["alpha"])
    parts += _figure_list(figures, _EVALUATION_CAPTIONS)
    inputs = result.get("inputs", {})
    fields = ("role", "name", "path", "sha256", "lines")
    rows = [tuple(entry.get(f, "") for f in fields) for entry in inputs.get("files", [])]
    software = [(k, v or "not installed") for k, v in result.get("software", {}).items()]
    parts += [
        "<h2>Inputs and software</h2>",
        _table(["role", "name", "file", "SHA-256", "lines"], rows),
        _table(["software", "version"], software),
        "</body></html>",
    ]
    path.write_text("\n".join(parts) + "\n", encoding="utf-8")
    return path


def _evaluation_table(summary: pd.DataFrame) -> list[str]:
    present = set(summary["metric"])
    columns = [(m, label) for m, label in _EVALUATION_COLUMNS if m in present]
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
            text = _num(entry["mean"])
            if metric in ("tau_b", "tau_b_human_fraction") and not _isnan(entry["ci_low"]):
                text += f" [{_num(entry['ci_low'])}, {_num(entry['ci_high'])}]"
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
        _table(["system", *[label for _, label in columns], "tau_b significantly above"], rows),
    ]


def _significant_differences(comparisons: pd.DataFrame, alpha: float) -> list[str]:
    tau = comparisons[comparisons["metric"] == "tau_b"]
    rows = [
        (r.system_a, r.system_b, r.n_sketches, _num(r.mean_difference), _p(r.permutation_p_holm),
         _p(r.wilcoxon_p_holm), "yes" if r.significant else "no")
        for r in tau.sort_values("permutation_p").itertuples()
    ]  # fmt: skip
    header = ["system a", "system b", "sketches", "mean a - b", "permutation p (Holm)",
              "Wilcoxon p (Holm)", "significant"]  # fmt: skip
    return [
        "<h2>Paired comparisons of tau_b</h2>",
        f"<p>Every pair of systems over the sketches both were scored on; p-values "
        f"Holm-corrected across the pairs; significant when the permutation test's is below "
        f"{alpha:g}. All metrics: <code>comparisons.csv</code>.</p>",
        _table(header, rows),
    ]


def _figure_list(figures: Mapping[str, Path], captions: Mapping[str, str]) -> list[str]:
    if not figures:
        return ["<h2>Figures</h2>", "<p>Not drawn (<code>--no-figures</code>).</p>"]
    parts = ["<h2>Figures</h2>"]
    for name in figures:
        data = base64.b64encode(Path(figures[name]).read_bytes()).decode("ascii")
        caption = html.escape(captions.get(name, name))
        parts.append(
            f'<figure id="{name}"><img alt="{html.escape(name)}" '
            f'src="data:image/png;base64,{data}"><figcaption>{caption} '
            f"(<code>figures/{name}.pdf</code>)</figcaption></figure>"
        )
    return parts


def _what_was_analysed(summary: Mapping) -> list[str]:
    phases = summary.get("phases", {})
    rows = [(phase, counts["n_trials"], counts["n_missing"]) for phase, counts in phases.items()]
    alternative = {
        "greater": "one-sided, P(tau >= observed), as in the paper",
        "two-sided": "two-sided",
        "less": "one-sided, P(tau <= observed)",
    }[summary["alternative"]]
    return [
        "<h2>What was analysed</h2>",
        f"<p>{summary['n_participants']} participants, {summary['n_sketches']} sketches, "
        f"{summary['n_pairs']} sketch/image pairs in the main block. Significance level "
        f"&alpha; = {summary['alpha']:g}; tau_b tests {alternative}, normal approximation "
        "with the tie-corrected variance.</p>",
        _table(["phase", "trials", "missing responses"], rows),
    ]


def _published(family: str) -> str:
    """A published share as the paper writes it (77.4%, 86%)."""
    return f"{100 * PUBLISHED[family]:g}%"


def _headline(summary: Mapping) -> list[str]:
    bins = {b["bin"]: b for b in summary.get("bins", [])}
    sds = {k: b["sd"] for k, b in bins.items() if b["sd"] is not None}
    smallest = sorted(sds, key=sds.get)[:2]
    largest = max(sds, key=sds.get) if sds else None
    w = summary["kendall_w"]

    def family(name: str, label: str, paper: str) -> tuple:
        f = summary[name]
        return (
            label,
            _share(f["share_significant"]),
            f"{_share(f['wilson_low'])} to {_share(f['wilson_high'])}",
            f"{f['n_significant']} of {f['n_tests']}",
            paper,
        )

    rows = [
        family("anchoring", "anchoring correlations significant", _published("anchoring")),
        family("pairwise", "inter-user correlations significant", _published("pairwise")),
        family("consensus", "participant vs consensus significant", _published("consensus")),
        family(
            "consensus_loo", "participant vs consensus without the participant", "(not reported)"
        ),
        (
            "sketches with Kendall's W significant",
            f"{w['n_significant']} of {w['n_sketches']}",
            "",
            f"W from {_num(w['min'])} to {_num(w['max'])}, median {_num(w['median'])}",
            f"all {PUBLISHED['n_sketches']}",
        ),
        (
            "sd of the ratings in bin 4",
            _num(sds.get(4), 4),
            "",
            f"largest spread in bin {largest}" if largest else "",
            f"{PUBLISHED['bin4_sd']:.4f} (largest of the bins)",
        ),
        (
            "bins with the smallest spread",
            " and ".join(str(k) for k in sorted(smallest)),
            "",
            ", ".join(f"bin {k}: {sds[k]:.3f}" for k in sorted(sds)),
            "the ends of the scale (1 and 7)",
        ),
    ]
    return [
        "<h2>Headline numbers beside the paper's</h2>",
        f"<p>Published values: Eitz et al. 2011, Sec. 3.3 ({PUBLISHED['n_participants']} "
        f"participants, {PUBLISHED['n_sketches']} sketches x {IMAGES_PER_SKETCH} "
        "images). Intervals are Wilson 95% intervals of the share; they treat the tests as "
        "independent, which correlations sharing raters are not.</p>",
        _table(["statistic", "this study", "95% interval", "detail", "paper"], rows),
    ]


def _figures(figures: Mapping[str, Path]) -> list[str]:
    return _figure_list({name: figures[name] for name in sorted(figures)}, _CAPTIONS)


def _extremes(table: pd.DataFrame) -> list[str]:
    marked = table[table["group"] != ""]
    rows = [
        (r.group, r.sketch_id, r.rank, _num(r.tau_median), _num(r.tau_q25), _num(r.tau_q75),
         _num(r.w))
        for r in marked.itertuples()
    ]  # fmt: skip
    return [
        "<h2>Best and worst agreement (the paper's Fig. 9)</h2>",
        "<p>Sketches ranked by the median inter-user tau_b; all of them in "
        "<code>sketch_agreement.csv</code>.</p>",
        _table(["group", "sketch", "rank", "median tau_b", "25th pct", "75th pct", "W"], rows),
    ]


def _w_table(table: pd.DataFrame, alpha: float) -> list[str]:
    rows = [
        (r.sketch_id, _num(r.w), _num(r.chi2, 1), r.df, _p(r.p_value), r.n_raters,
         r.n_raters_excluded, "yes" if r.p_value < alpha else "no")
        for r in table.itertuples()
    ]  # fmt: skip
    return [
        "<h2>Kendall's W per sketch</h2>",
        "<p>Tie-corrected W over the participants who rated every image of the sketch; "
        "chi-square test with n - 1 degrees of freedom (F test in "
        "<code>kendall_w.csv</code>).</p>",
        _table(["sketch", "W", "chi2", "df", "p", "raters", "left out", f"p < {alpha:g}"], rows),
    ]


def _provenance(summary: Mapping) -> list[str]:
    sources = [(s["path"], s["sha256"], s["rows"]) for s in summary.get("sources", [])]
    software = [(k, v or "not installed") for k, v in summary.get("software", {}).items()]
    return [
        "<h2>Inputs and software</h2>",
        _table(["file", "SHA-256", "lines"], sources),
        _table(["software", "version"], software),
    ]


def _table(header: Sequence[str], rows: Sequence[Sequence]) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = []
    for row in rows:
        cells = []
        for value in row:
            numeric = isinstance(value, int | float) and not isinstance(value, bool)
            cls = ' class="num"' if numeric else ""
            cells.append(f"<td{cls}>{html.escape(str(value))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _share(value) -> str:
    return "n/a" if value is None or _isnan(value) else f"{100 * value:.1f}%"


def _num(value, digits: int = 3) -> str:
    return "n/a" if value is None or _isnan(value) else f"{value:.{digits}f}"


def _p(value) -> str:
    if value is None or _isnan(value):
        return "n/a"
    return f"{value:.2e}" if value < 1e-3 else f"{value:.4f}"


def _isnan(value) -> bool:
    try:
        return math.isnan(float(value))
    except (TypeError, ValueError):
        return False
