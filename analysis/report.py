"""``report.html``: one self-contained page with the analysis beside the paper's numbers.

The page embeds its figures as data URIs and loads nothing from the network, so
it opens in any browser, can be mailed, and archived with the data.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from .html import figure_list, num, p_text, page_head, share, table
from .paper import IMAGES_PER_SKETCH, PUBLISHED

__all__ = ["write_report"]

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
        *page_head("sbir-study analysis report"),
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
        table(["phase", "trials", "missing responses"], rows),
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
            share(f["share_significant"]),
            f"{share(f['wilson_low'])} to {share(f['wilson_high'])}",
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
            f"W from {num(w['min'])} to {num(w['max'])}, median {num(w['median'])}",
            f"all {PUBLISHED['n_sketches']}",
        ),
        (
            "sd of the ratings in bin 4",
            num(sds.get(4), 4),
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
        table(["statistic", "this study", "95% interval", "detail", "paper"], rows),
    ]


def _figures(figures: Mapping[str, Path]) -> list[str]:
    return figure_list({name: figures[name] for name in sorted(figures)}, _CAPTIONS)


def _extremes(agreement: pd.DataFrame) -> list[str]:
    marked = agreement[agreement["group"] != ""]
    rows = [
        (r.group, r.sketch_id, r.rank, num(r.tau_median), num(r.tau_q25), num(r.tau_q75),
         num(r.w))
        for r in marked.itertuples()
    ]  # fmt: skip
    return [
        "<h2>Best and worst agreement (the paper's Fig. 9)</h2>",
        "<p>Sketches ranked by the median inter-user tau_b; all of them in "
        "<code>sketch_agreement.csv</code>.</p>",
        table(["group", "sketch", "rank", "median tau_b", "25th pct", "75th pct", "W"], rows),
    ]


def _w_table(kendall_w: pd.DataFrame, alpha: float) -> list[str]:
    rows = [
        (r.sketch_id, num(r.w), num(r.chi2, 1), r.df, p_text(r.p_value), r.n_raters,
         r.n_raters_excluded, "yes" if r.p_value < alpha else "no")
        for r in kendall_w.itertuples()
    ]  # fmt: skip
    return [
        "<h2>Kendall's W per sketch</h2>",
        "<p>Tie-corrected W over the participants who rated every image of the sketch; "
        "chi-square test with n - 1 degrees of freedom (F test in "
        "<code>kendall_w.csv</code>).</p>",
        table(["sketch", "W", "chi2", "df", "p", "raters", "left out", f"p < {alpha:g}"], rows),
    ]


def _provenance(summary: Mapping) -> list[str]:
    sources = [(s["path"], s["sha256"], s["rows"]) for s in summary.get("sources", [])]
    software = [(k, v or "not installed") for k, v in summary.get("software", {}).items()]
    return [
        "<h2>Inputs and software</h2>",
        table(["file", "SHA-256", "lines"], sources),
        table(["software", "version"], software),
    ]
