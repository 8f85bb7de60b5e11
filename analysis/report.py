"""``report.html``: one self-contained page with the analysis beside the paper's numbers.

The page embeds its figures as data URIs and loads nothing from the network, so
it opens in any browser, can be mailed, and archived with the data.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from html import escape as html_escape
from pathlib import Path

import numpy as np
import pandas as pd

from sbir_study.foundation.html import (
    at_floor,
    collapsed,
    figure_list,
    isnan,
    num,
    p_text,
    page_head,
    share,
    simulated_banner,
    software_table,
    table,
)
from sbir_study.foundation.paper import IMAGES_PER_SKETCH, PUBLISHED
from sbir_study.foundation.scale import PAPER_SCALE, Scale

from .limits import PERMUTATION_RATERS_LIMIT
from .ratings import SIMULATED_ORIGINS

__all__ = [
    "PARTICIPANTS_LISTED_UP_TO",
    "counted",
    "participant_count",
    "participants_listed",
    "raters_range",
    "share_interval",
    "undefined_text",
    "write_report",
]

#: Up to this many participants the report lists every one; beyond, the participants a
#: reader needs (:func:`participants_listed`), and ``participants.csv`` holds them all: at
#: 2,000 participants the full table was thousands of rows, hundreds of printed pages.
PARTICIPANTS_LISTED_UP_TO = 100
#: Above :data:`PARTICIPANTS_LISTED_UP_TO`, this many of the lowest and of the highest
#: median tau_b against the consensus are listed, besides every flagged participant.
PARTICIPANTS_AT_EACH_END = 10

_CAPTIONS = {
    "fig4_anchoring": (
        "Fig. 4. For each participant, tau_b between their ratings of the anchor pairs during "
        "the experiment and the prescribed anchor ratings, one marker per anchor sketch; "
        "hollow markers are not significant. With more than 60 participants: the participants "
        "sorted by their median over the anchor sketches, the medians as a line, in bands of "
        "the 25th-75th and 5th-95th percentiles of every anchor tau_b of the participants "
        "around each rank: ceil(sqrt(N)) of them, or enough to pool 400 values (134 with "
        "three anchor sketches)."
    ),
    "fig5_interuser": (
        "Fig. 5. Per sketch, the tau_b between every pair of participants{sample}: median "
        "line, box "
        "from the 25th to the 75th percentile, whiskers to 1.5 IQR, outliers as red plus "
        "signs (a red line spanning them beyond 5,000 correlations per sketch); Kendall's W "
        "as a black circle{w_over}; Krippendorff's ordinal alpha over all participants and every "
        "rating as a blue diamond."
    ),
    "fig6_vs_consensus": (
        "Fig. 6. Per participant, the tau_b of their ratings of each sketch's images against "
        "the consensus ranking. Top: the consensus is the mean rating of all participants, "
        "the participant included, as in the paper (the share significant is compared with "
        "the paper's 99%). Bottom: leave-one-out, the mean rating of the other participants "
        "only, which does not reward a participant for agreeing with their own share of it. "
        "With more than 60 participants, each panel sorts them by their median and draws the "
        "medians as a line, in bands of the 25th-75th and 5th-95th percentiles of every tau_b "
        "of the ceil(sqrt(N)) participants around each rank (45 of 2,000); the two panels "
        "then look alike, as one participant is a small part of a crowd's consensus, and the "
        "bottom panel states by how much each participant's median differs."
    ),
    "fig7_distribution": (
        "Fig. 7. Share of ratings at each point of the scale, against the uniform share."
    ),
    "fig8_bins": (
        "Fig. 8. Ratings grouped by the median rating of their pair (Eq. 3): mean and "
        "standard deviation (left), number of ratings (right)."
    ),
    "fig9_extremes": "Fig. 9. The sketches with the best (top) and worst (bottom) agreement.",
    "reliability_prophecy": (
        "Reliability of the consensus predicted for m raters: the split-half Spearman's rho "
        "of each sketch (faint) and of all sketches (bold) carried to one rater and back to m "
        "by the Spearman-Brown formula; dashed, the target; dotted, the study's participants."
    ),
}


def counted(n, noun: str, plural: str | None = None) -> str:
    """``n`` and its noun, agreeing: "1 participant", "12 participants", "3 sketches".

    Every count the page (and analyze's console) prints goes through here, so none reads
    "1 participants".

    Thousands are separated, as a crowd's counts need ("62,000,000 correlations").

    >>> counted(1, "participant"), counted(0, "sketch", "sketches"), counted(2000, "rater")
    ('1 participant', '0 sketches', '2,000 raters')
    """
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


#: The most decimals :func:`share_interval` prints: past them, an interval is narrower than
#: any difference a reader of a share would act on.
_SHARE_DECIMALS = 3


def share_interval(value, low, high) -> tuple[str, str]:
    """A share and its interval, in percent, with as many decimals as the bounds need to
    differ (1 to 3): "89.2%" and "88.1% to 90.2%", or, over 62 million tests,
    "89.21%" and "89.19% to 89.22%", never "89.2% to 89.2%".

    An interval narrower than the last decimal says so instead of repeating a bound.

    Examples
    --------
    >>> share_interval(0.892, 0.85, 0.93)
    ('89.2%', '85.0% to 93.0%')
    >>> share_interval(0.89203, 0.89195, 0.89211)
    ('89.20%', '89.20% to 89.21%')
    >>> share_interval(0.89203, 0.89201, 0.89204)
    ('89.203%', '89.201% to 89.204%')
    >>> share_interval(0.5, 0.5, 0.5)
    ('50.000%', '50.000% (interval narrower than 0.001 points)')
    """
    if any(v is None or isnan(v) for v in (value, low, high)):
        return share(value), f"{share(low)} to {share(high)}"
    for digits in range(1, _SHARE_DECIMALS + 1):
        lower, upper = f"{100 * low:.{digits}f}%", f"{100 * high:.{digits}f}%"
        if lower != upper:
            return f"{100 * value:.{digits}f}%", f"{lower} to {upper}"
    return (
        f"{100 * value:.{digits}f}%",
        f"{lower} (interval narrower than {10.0**-digits:g} points)",
    )


def undefined_text(stats: Mapping) -> str:
    """Why some tests of a ``summary.json`` entry are undefined; "" when none is.

    "5 undefined: constant: 07 on s3": the count, then each reason of its ``undefined``
    list with the sketches it occurs on (and its count, when there are several
    reasons); what the list leaves out is counted, and named in the tables.
    """
    total = stats.get("n_undefined") or 0
    if not total:
        return ""
    groups: dict[str, list] = {}
    for entry in stats.get("undefined", []):
        group = groups.setdefault(entry["reason"], [0, []])
        group[0] += entry["n"]
        group[1].append(str(entry["sketch_id"]))
    parts = [
        f"{reason} on {', '.join(sketches)}" + (f" ({n})" if len(groups) > 1 else "")
        for reason, (n, sketches) in groups.items()
    ]
    rest = total - sum(n for n, _ in groups.values())
    if rest > 0:
        parts.append(f"{rest} more in the tables")
    return f"{total} undefined: " + "; ".join(parts)


def raters_range(w: Mapping) -> str:
    """ "k of m" for the W of a study: "13-24 of 28", or "28 of 28" when the same everywhere."""
    if w.get("n_raters_min") is None:
        return "n/a"

    return (
        f"{_span(w['n_raters_min'], w['n_raters_max'])} of "
        f"{_span(w['n_raters_all_min'], w['n_raters_all_max'])}"
    )


def write_report(
    path: str | Path,
    summary: Mapping,
    kendall_w: pd.DataFrame,
    sketch_agreement: pd.DataFrame,
    figures: Mapping[str, Path],
    participants: pd.DataFrame | None = None,
    *,
    scale: Scale = PAPER_SCALE,
    participants_listed_up_to: int = PARTICIPANTS_LISTED_UP_TO,
    anchoring: pd.DataFrame | None = None,
) -> Path:
    """Write the report page to ``path`` from an analysis' summary, tables and figure files.

    ``kendall_w`` is the agreement table (``kendall_w.csv``), ``participants``
    the per-participant table (``participants.csv``) when there is one; ``scale``
    the ratings' scale, named on the page when it is not the paper's. Up to
    ``participants_listed_up_to`` participants every one is listed; beyond, those of
    :func:`participants_listed`, which flags, from ``anchoring`` (``anchoring.csv``) when
    given, the participants who followed none of the anchors (:func:`anchors_not_followed`).
    """
    path = Path(path)
    parts = [
        *page_head("sbir-study analysis report"),
    ]
    if summary.get("simulated"):
        parts.append(_simulated_banner(participants))
    parts.append("<h1>Sketch/image rating study: analysis report</h1>")
    parts += _what_was_analysed(summary, scale)
    parts += _exclusions(summary)
    parts += _headline(summary, scale)
    parts += _reliability(summary)
    parts += _figures(figures, summary)
    parts += _extremes(sketch_agreement)
    permutations = (summary.get("skillings_mack") or {}).get("permutations") or 0
    parts += _agreement_table(kendall_w, summary["alpha"], permutations, scale)
    if participants is not None:
        if anchoring is not None:
            participants = participants.assign(
                anchors_not_followed=anchors_not_followed(
                    anchoring, participants["participant"], summary["alpha"]
                )
            )
        parts += _participants(participants, participants_listed_up_to)
    parts += _provenance(summary)
    parts.append("</body></html>")
    path.write_text("\n".join(parts) + "\n", encoding="utf-8")
    return path


def _scale_text(scale: Scale) -> str:
    """What the page says of a scale other than the paper's (nothing for the paper's)."""
    if scale == PAPER_SCALE:
        return ""
    best, worst = (scale.low, scale.high) if scale.best == "low" else (scale.high, scale.low)
    text = (
        f" Ratings on a {scale.k}-point scale, {scale.low} to {scale.high}, {best} the best "
        f"match and {worst} the worst"
    )
    if scale.best == "high":
        text += (
            f"; every table and figure shows them in the paper's orientation, {scale.low} "
            f"the best match: a recorded rating r as {scale.low + scale.high} - r"
        )
    return (
        text + f". Relevant in the binary qrels: a mean rating below "
        f"{scale.relevant_below:g}; qrels grades {scale.k - 1} (best) to 0."
    )


def _what_was_analysed(summary: Mapping, scale: Scale = PAPER_SCALE) -> list[str]:
    phases = summary.get("phases", {})
    rows = [
        (phase, _int(counts["n_trials"]), _missing_text(phase, counts))
        for phase, counts in phases.items()
    ]
    alternative = {
        "greater": "one-sided, P(tau >= observed), as in the paper",
        "two-sided": "two-sided",
        "less": "one-sided, P(tau <= observed)",
    }[summary["alternative"]]
    return [
        "<h2>What was analysed</h2>",
        f"<p>{participant_count(summary)}, "
        f"{counted(summary['n_sketches'], 'sketch', 'sketches')}, "
        f"{counted(summary['n_pairs'], 'sketch/image pair')} in the main block. Significance level "
        f"&alpha; = {summary['alpha']:g}; tau_b tests {alternative}, normal approximation "
        f"with the tie-corrected variance.{_scale_text(scale)}</p>",
        table(["phase", "trials", "missed responses"], rows),
    ]


#: Phases whose trials are shown with their rating and not rated, by design.
_NOT_RATED = {
    "anchor_demo": "none expected: not rated by design (each pair is shown with its "
    "prescribed rating)"
}


def _missing_text(phase: str, counts: Mapping) -> str | int:
    """A phase's missed responses; for a phase rated by nobody, why there are none."""
    if phase in _NOT_RATED and counts["n_missing"] == counts["n_trials"]:
        return _NOT_RATED[phase]
    return _int(counts["n_missing"])


def _published(family: str) -> str:
    """A published share as the paper writes it (77.4%, 86%)."""
    return f"{100 * PUBLISHED[family]:g}%"


def _headline(summary: Mapping, scale: Scale = PAPER_SCALE) -> list[str]:
    # The paper's bin 4 is the middle of its scale: on another, the middle (or the
    # lower of the two middle) point's bin is compared with it.
    middle = scale.low + (scale.k - 1) // 2
    bins = {b["bin"]: b for b in summary.get("bins", [])}
    sds = {k: b["sd"] for k, b in bins.items() if b["sd"] is not None}
    smallest = sorted(sds, key=sds.get)[:2]
    largest = max(sds, key=sds.get) if sds else None
    w = summary["kendall_w"]

    def family(name: str, label: str, paper: str) -> tuple:
        f = summary[name]
        undefined = undefined_text(f)
        if not f["n_tests"]:
            # No correlation to count: say why, not "n/a | n/a to n/a | 0 of 0".
            return (
                label,
                _no_tests(name, summary) + (f" ({undefined})" if undefined else ""),
                "",
                "",
                paper,
            )
        point, interval = share_interval(f["share_significant"], f["wilson_low"], f["wilson_high"])
        return (
            label,
            point,
            interval,
            f"{f['n_significant']:,} of {f['n_tests']:,}"
            + (f" defined ({undefined})" if undefined else ""),
            paper,
        )

    w_undefined = undefined_text(w)

    n = summary["n_participants"]
    rows = [
        family("anchoring", "anchoring correlations significant", _published("anchoring")),
        family("pairwise", _pairwise_label(summary), _published("pairwise")),
        family(
            "consensus",
            f"participant vs consensus of all {counted(n, 'participant')}, the participant "
            "included (as in the paper), significant",
            _published("consensus"),
        ),
        family(
            "consensus_loo",
            f"participant vs consensus of the other {counted(n - 1, 'participant')} "
            "(leave-one-out), significant",
            "(not reported: the paper's consensus includes the participant)",
        ),
        (
            f"sketches with Kendall's W significant (W over the {raters_range(w)} "
            f"{_noun(w.get('n_raters_all_max'), 'participant')} who rated every image of the "
            "sketch)"
            if w.get("n_raters_min") is not None
            else "sketches with Kendall's W significant (no sketch has two participants who "
            "rated every image)",
            f"{w['n_significant']} of {w['n_sketches']}"
            if not w_undefined
            else f"{w['n_significant']} of {w['n_defined']} defined ({w_undefined})",
            "",
            f"W from {num(w['min'])} to {num(w['max'])}, median {num(w['median'])}",
            f"all {PUBLISHED['n_sketches']} (over all {PUBLISHED['n_participants']})",
        ),
        *_every_rating_rows(summary),
        (
            f"sd of the ratings in bin {middle}",
            num(sds.get(middle), 4),
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
        table(["statistic", _this_study(summary), "95% interval", "detail", "paper"], rows),
    ]


def _this_study(summary: Mapping) -> str:
    """The headline column's name: with the included count beside it when some participants
    were excluded ("this study: 22 of 28 participants, 6 excluded")."""
    return f"this study: {participant_count(summary)}" if summary.get("excluded") else "this study"


def _pairwise_sample(summary: Mapping) -> Mapping | None:
    """``summary.json``'s ``pairwise_raters`` when some sketch's pairs are a sample, else None."""
    cap = summary.get("pairwise_raters", {})
    return cap if cap.get("n_sketches_sampled") else None


def _pairwise_label(summary: Mapping) -> str:
    """The inter-user row's label; it says so when the pairs are a sample."""
    cap = _pairwise_sample(summary)
    if cap is None:
        return "inter-user correlations significant"
    return (
        f"inter-user correlations significant (in {cap['n_sketches_sampled']} of "
        f"{counted(summary['n_sketches'], 'sketch', 'sketches')} over the pairs among "
        f"{cap['max']:,} {_noun(cap['max'], 'rater')} drawn at random, seed {cap['seed']}: "
        "analyze --pairwise-raters)"
    )


def _every_rating_rows(summary: Mapping) -> list[tuple]:
    """The headline rows of the statistics that use every rating (none in the paper)."""
    rows = []
    alpha = summary.get("krippendorff_alpha")
    if alpha:
        for level in ("ordinal", "interval"):
            result = alpha[level]
            interval = (
                ""
                if result["ci_low"] is None
                else f"{num(result['ci_low'])} to {num(result['ci_high'])}"
            )
            by_sketch = result["by_sketch"]
            rows.append(
                (
                    f"Krippendorff's alpha ({level}), all sketch/image pairs, over all "
                    f"{counted(alpha['n_raters'], 'participant')} and their "
                    f"{counted(alpha['n_values'], 'rating')}",
                    num(result["alpha"]),
                    interval,
                    f"per sketch from {num(by_sketch['min'])} to {num(by_sketch['max'])}, "
                    f"median {num(by_sketch['median'])}"
                    + (f" ({undefined_text(by_sketch)})" if undefined_text(by_sketch) else ""),
                    "(not reported)",
                )
            )
    sm = summary.get("skillings_mack")
    if sm:
        rows.append(
            (
                "sketches with the Skillings-Mack test significant (over the "
                f"{_span(sm['n_raters_min'], sm['n_raters_max'])} "
                f"{_noun(sm['n_raters_max'], 'participant')} with at least two "
                "ratings of the sketch)"
                if sm["n_raters_min"] is not None
                else "sketches with the Skillings-Mack test significant (no sketch has two "
                "participants with at least two ratings of it)",
                f"{sm['n_significant']} of {sm['n_sketches']}"
                + (f" defined ({undefined_text(sm)})" if undefined_text(sm) else ""),
                "",
                f"chi-square approximation; {permutation_text(sm)}",
                "(not reported)",
            )
        )
    return rows


def permutation_text(sm: Mapping) -> str:
    """What the Skillings-Mack row says of its permutation p-values: how many are
    significant, or, where none was computed, that none was and why (not "0 of 0")."""
    permutations, tested = sm["permutations"], sm["n_permutation_tested"]
    over = sm["n_raters_max"] is not None and sm["n_raters_max"] > PERMUTATION_RATERS_LIMIT
    why = (
        f"not computed for sketches with more than {PERMUTATION_RATERS_LIMIT} raters, "
        "where the chi-square approximation is good and each permutation costs raters x "
        "images"
    )
    if not permutations:
        return "permutation p-values not computed (--permutations 0)"
    if not tested:
        if over and sm["n_raters_min"] > PERMUTATION_RATERS_LIMIT:
            return (
                f"permutation p-values {why} (these sketches have "
                f"{_span(sm['n_raters_min'], sm['n_raters_max'])} raters)"
            )
        return "no permutation p-value defined"
    return (
        f"by permutation {sm['n_significant_permutation']} of {tested} "
        f"({counted(permutations, 'permutation')}" + (f"; {why}" if over else "") + ")"
    )


def _int(value) -> str:
    """A count in a table cell, thousands separated ("1,984"); anything else as it is."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        return str(value)
    return f"{value:,}"


def _noun(n, noun: str, plural: str | None = None) -> str:
    """The noun alone, agreeing with ``n`` (a count printed apart, e.g. in a range)."""
    return counted(n, noun, plural).split(" ", 1)[1]


def _no_tests(family: str, summary: Mapping) -> str:
    """What a test family without a single test says instead of empty numbers."""
    if family != "anchoring":
        return "no correlations to test"
    if "anchor_repeat" in summary.get("phases", {}):
        return "no anchor pair rated again in the main block"
    return "no anchoring phase in this study"


def _span(low, high) -> str:
    if low is None:
        return "n/a"
    return f"{low:,}" if low == high else f"{low:,}-{high:,}"


def _figures(figures: Mapping[str, Path], summary: Mapping) -> list[str]:
    captions = dict(_CAPTIONS)
    w = summary["kendall_w"]
    cap = _pairwise_sample(summary)
    sample = (
        ""
        if cap is None
        else f" (of {cap['max']:,} {_noun(cap['max'], 'participant')} drawn at random where "
        f"more rated the sketch: {counted(cap['n_sketches_sampled'], 'sketch', 'sketches')})"
    )
    captions["fig5_interuser"] = captions["fig5_interuser"].format(
        w_over=f", over the {raters_range(w)} {_noun(w.get('n_raters_all_max'), 'participant')} "
        "who rated every image of the sketch"
        if w.get("n_raters_min") is not None
        else " (none: no sketch has two participants who rated every image)",
        sample=sample,
    )
    return figure_list({name: figures[name] for name in sorted(figures)}, captions)


def _reliability(summary: Mapping) -> list[str]:
    """How reliable the consensus is, and how many raters the sketches short of the target need."""
    found = summary.get("reliability")
    if not found:
        return []
    target = found["target"]
    below = found["below_target"]
    if not below:
        verdict = f"Every sketch reaches {target:g}."
    else:
        sentences = [
            f"with {b['raters_needed']} raters the consensus of sketch {b['sketch_id']} would "
            f"reach {target:g}"
            if b["raters_needed"] is not None
            else f"no number of raters brings sketch {b['sketch_id']} to {target:g} (its "
            "halves do not agree)"
            for b in below
        ]
        verdict = "; ".join(sentences)
        verdict = verdict[0].upper() + verdict[1:] + "."
    needed = found["raters_needed"]
    low, high = found["tau_b_sb_interval"]
    rho_low, rho_high = found["rho_sb_interval"]
    return [
        "<h2>How reliable is the ground truth?</h2>",
        f"<p>Split in random halves ({found['n_splits']:,} splits), the two halves' consensus "
        f"rankings agree with tau_b {num(found['tau_b_half'])} (Spearman's rho "
        f"{num(found['rho_half'])}); carried to the whole group by the Spearman-Brown formula, "
        f"{num(found['tau_b_sb'])} ({num(low)}-{num(high)}, 95% of splits), rho "
        f"{num(found['rho_sb'])} ({num(rho_low)}-{num(rho_high)}). ICC(2,k) over every pair "
        f"rated by every participant: {num(found['icc2k'])}. "
        + (
            f"A consensus of {needed} raters would reach {target:g} over all sketches. "
            if needed is not None
            else ""
        )
        + f"{html_escape(verdict)} Per sketch: <code>reliability.csv</code>, "
        "<code>icc.csv</code>.</p>",
    ]


def _extremes(agreement: pd.DataFrame) -> list[str]:
    marked = agreement[agreement["group"] != ""]
    rows = [
        (
            r.group,
            r.sketch_id,
            r.rank,
            num(r.tau_median),
            num(r.tau_q25),
            num(r.tau_q75),
            num(r.w),
            f"{_int(r.n_raters)} of {_int(r.n_raters_all)}",
        )
        for r in marked.itertuples()
    ]
    return [
        "<h2>Best and worst agreement (the paper's Fig. 9)</h2>",
        "<p>Sketches ranked by the median inter-user tau_b; all of them in "
        "<code>sketch_agreement.csv</code>. W stands on the participants who rated every "
        "image of the sketch (k of m).</p>",
        table(_EXTREMES_HEADER, rows, classes=_TEXT_AT_1),
    ]


_EXTREMES_HEADER = (
    "group",
    "sketch",
    "rank",
    "median tau_b",
    "25th pct",
    "75th pct",
    "W",
    "W over k of m",
)


def _agreement_table(
    kendall_w: pd.DataFrame, alpha: float, permutations: int, scale: Scale = PAPER_SCALE
) -> list[str]:
    def interval(low, high) -> str:
        return "" if isnan(low) else f"{num(low)} to {num(high)}"

    # (1 + #{SM* >= SM}) / (1 + permutations) is never below 1 / (1 + permutations).
    floor = 1.0 / (1 + permutations) if permutations else float("nan")

    def permutation_p(value, n_raters) -> str:
        if isnan(value) and n_raters > PERMUTATION_RATERS_LIMIT:
            return f"not computed (over {PERMUTATION_RATERS_LIMIT} raters)"
        return p_text(value) + (" ‡" if at_floor(value, floor) else "")

    def why(value: str, reason) -> str:
        """An undefined statistic's cell says why (kendall_w.csv's *_reason)."""
        return f"undefined: {reason}" if isinstance(reason, str) and reason else value

    rows = [
        (
            r.sketch_id,
            f"{_int(r.n_raters)} of {_int(r.n_raters_all)}",
            why(num(r.w), r.w_reason),
            p_text(r.p_value),
            why(num(r.alpha_ordinal), r.alpha_reason),
            interval(r.alpha_ordinal_ci_low, r.alpha_ordinal_ci_high),
            why(num(r.alpha_interval), r.alpha_reason),
            interval(r.alpha_interval_ci_low, r.alpha_interval_ci_high),
            _int(r.n_ratings),
            why(f"{num(r.skillings_mack, 1)} ({r.skillings_mack_df})", r.skillings_mack_reason),
            p_text(r.skillings_mack_p_value),
            permutation_p(r.skillings_mack_permutation_p_value, r.skillings_mack_n_raters),
            f"{_int(r.skillings_mack_n_raters)} of {_int(r.n_raters_all)}",
        )
        for r in kendall_w.itertuples()
    ]
    parts = [
        "<h2>Agreement per sketch: Kendall's W, Krippendorff's alpha, Skillings-Mack</h2>",
        "<p>Each sketch's raters are the participants who rated at least one of its images "
        "(m). Kendall's W (tie-corrected, chi-square test with n - 1 degrees of freedom, as "
        "in the paper) stands on the k of them who rated every image: a participant who "
        "missed one response window leaves it. Krippendorff's alpha (ordinal: the scale as "
        "ranks; interval: as equally spaced numbers) uses every rating of all m, with a 95% "
        "percentile bootstrap interval over the sketch's images. The Skillings-Mack test, "
        "Friedman's test generalised to missing ratings, uses every participant with at "
        "least two ratings of the sketch; its chi-square p-value is conservative with the "
        f"ties of a {scale.k}-point scale, the permutation p-value is not (computed for "
        f"sketches with at most {PERMUTATION_RATERS_LIMIT} raters). Significance level "
        f"{alpha:g}; the F test "
        "of W is in <code>kendall_w.csv</code>.</p>",
        table(_AGREEMENT_HEADER, rows, classes=_TEXT_AT_0),
    ]
    floored = kendall_w["skillings_mack_permutation_p_value"].map(lambda p: at_floor(p, floor))
    if floored.any():
        parts.append(
            f'<p class="note">‡ At the floor: with {counted(permutations, "permutation")} the '
            "smallest "
            f"permutation p-value there is, 1/({permutations} + 1) = {p_text(floor)}, was "
            f"reached ({int(floored.sum())} of {counted(len(kendall_w), 'sketch', 'sketches')}); "
            "the exact p-value "
            "may be smaller still. More permutations (<code>--permutations</code>) lower the "
            "floor.</p>"
        )
    return parts


_AGREEMENT_HEADER = (
    "sketch",
    "W over k of m",
    "W",
    "p (W)",
    "alpha ordinal",
    "95% interval",
    "alpha interval",
    "95% interval",
    "ratings",
    "SM (df)",
    "p (SM)",
    "p (SM, permutation)",
    "SM over",
)


def participant_count(summary: Mapping) -> str:
    """The participants analysed, and of how many when some were excluded ("22 of 28
    participants, 6 excluded")."""
    n, excluded = summary["n_participants"], len(summary.get("excluded") or ())
    if not excluded:
        return counted(n, "participant")
    return f"{n} of {counted(n + excluded, 'participant')}, {excluded} excluded"


def _exclusions(summary: Mapping) -> list[str]:
    """The excluded participants with the rules that excluded them (none: nothing)."""
    excluded = summary.get("excluded") or []
    if not excluded:
        return []
    rows = [(f"sub-{e['participant']}", "; ".join(e["rules"])) for e in excluded]
    return [
        "<h2>Excluded participants</h2>",
        f"<p>{participant_count(summary)} by the rules given to <code>analyze --exclude</code>; "
        "every statistic on this page is computed without the excluded participants' ratings "
        "(<code>participants.csv</code>: <code>excluded</code>, <code>exclusion_rule</code>; "
        "<code>summary.json</code>: <code>excluded</code>).</p>",
        collapsed(
            f"{len(rows)} excluded",
            table(["participant", "rules"], rows, classes=_TEXT_AT_0),
            open_up_to=_OPEN_UP_TO,
            n=len(rows),
        ),
    ]


#: How the banner and the participants' section name each origin.
_ORIGIN_WORDS = {"run-simulate": "run --simulate"}
#: Participants named per origin in the banner before the rest are counted.
_BANNER_NAMES = 10


def _simulated_banner(participants: pd.DataFrame | None) -> str:
    """The banner of a report on simulated ratings, saying which participants are simulated
    and by what ("1 of 2 participants simulated: sub-x by run --simulate"), from their
    ``origin``; the general banner where the table does not say (no origin column)."""
    if participants is None or "origin" not in participants:
        return simulated_banner("these ratings")
    simulated = participants[participants["origin"].isin(SIMULATED_ORIGINS)]
    by_origin = []
    for origin, group in simulated.groupby("origin", sort=True):
        names = [f"sub-{label}" for label in group["participant"].astype(str)]
        shown = ", ".join(names[:_BANNER_NAMES])
        if len(names) > _BANNER_NAMES:
            shown += f" and {len(names) - _BANNER_NAMES:,} more"
        by_origin.append(f"{shown} by {_ORIGIN_WORDS.get(origin, origin)}")
    return (
        f'<p class="banner">SIMULATED DATA: {len(simulated):,} of {len(participants):,} '
        f"participants simulated: {html.escape('; '.join(by_origin))}. The numbers show what "
        "the pipeline computes, not a finding.</p>"
    )


def _origin_text(participants: pd.DataFrame) -> str:
    """The participants' origins in words ("27 lab, 1 run --simulate")."""
    if "origin" not in participants:
        return ""
    counts = participants["origin"].value_counts(sort=False).sort_index()
    listed = ", ".join(f"{n:,} {_ORIGIN_WORDS.get(o, o)}" for o, n in counts.items())
    return f" Their origins (the <code>origin</code> column): {html.escape(listed)}."


def _catch_text(participants: pd.DataFrame) -> str:
    """What the catch-pair column holds, when the study has catch pairs."""
    if "n_catch_failed" not in participants:
        return ""
    n = int(participants[["n_catch_passed", "n_catch_failed", "n_catch_missing"]].iloc[0].sum())
    return (
        f" Each participant's {n} catch pairs (pairs whose passing ratings the protocol "
        "or <code>--catch</code> names) passed, failed and missing (not rated); they stay "
        "in every statistic as the pairs they are."
    )


def participants_listed(
    participants: pd.DataFrame,
    *,
    up_to: int = PARTICIPANTS_LISTED_UP_TO,
    at_each_end: int = PARTICIPANTS_AT_EACH_END,
) -> pd.Series:
    """Which participants the report lists, and why: every one up to ``up_to``; beyond,
    the ``at_each_end`` lowest and highest by median tau_b against the consensus (the
    paper's, participant included) and every flagged participant.

    Flagged: a session that did not finish, an excluded participant, a failed catch pair, a
    participant who followed none of the anchors (column ``anchors_not_followed``, when
    there), a simulated participant among more people, no tau_b against the consensus.
    Returns, by row of ``participants`` (in its order), why each listed participant is
    listed ("" up to
    ``up_to``): "lowest", "highest" (median tau_b) and the flags, joined by "; ".
    """
    if len(participants) <= up_to:
        return pd.Series("", index=participants.index, dtype=object)
    reasons = [[] for _ in range(len(participants))]
    median = participants["tau_b_median"].to_numpy(dtype=float)
    # Ties broken by the label, as Figs. 4 and 6 sort, so the lists are reproducible.
    order = pd.DataFrame({"tau": median, "label": participants["participant"].astype(str)})
    ranked = order[np.isfinite(median)].sort_values(["tau", "label"], kind="stable").index
    position = {label: k for k, label in enumerate(participants.index)}
    ends = (("lowest", ranked[:at_each_end]), ("highest", ranked[len(ranked) - at_each_end :]))
    for end, chosen in ends:
        for label in chosen:
            reasons[position[label]].append(end)
    flags = [(~np.isfinite(median), "no tau_b against the consensus")]
    if "session_status" in participants:
        flags.append(
            (participants["session_status"].map(_session_words) != "", "session did not finish")
        )
    if "excluded" in participants:
        flags.append((participants["excluded"].fillna(False).astype(bool), "excluded"))
    if "n_catch_failed" in participants:
        flags.append((participants["n_catch_failed"].fillna(0) > 0, "failed a catch pair"))
    if "anchors_not_followed" in participants:
        flags.append((participants["anchors_not_followed"], "followed none of the anchors"))
    if "origin" in participants:
        # Simulated participants mixed into a study of people stand out; in a simulated
        # study (the banner says so) every one would be flagged, which says nothing.
        simulated = participants["origin"].isin(SIMULATED_ORIGINS)
        if simulated.sum() < (~simulated).sum():
            flags.append((simulated, "simulated"))
    for flagged, why in flags:
        for k in np.flatnonzero(np.asarray(flagged, dtype=bool)):
            reasons[k].append(why)
    return pd.Series(["; ".join(r) for r in reasons], index=participants.index, dtype=object)


def anchors_not_followed(anchoring: pd.DataFrame, labels: pd.Series, alpha: float) -> pd.Series:
    """Whether each participant of ``labels`` followed none of the anchors: their tau_b
    against the prescribed ratings (``anchoring.csv``, the paper's anchoring consistency)
    is defined for at least one anchor sketch and significant (p < ``alpha``) for none.

    False for a participant with no defined anchoring test (no anchors, or constant
    ratings: the table's ``reason`` says which), by position of ``labels``.

    >>> table = pd.DataFrame({"participant": ["01", "01", "02", "02", "03"],
    ...                       "p_value": [0.2, 0.01, 0.3, 0.4, float("nan")]})
    >>> anchors_not_followed(table, pd.Series(["01", "02", "03", "04"]), 0.05).tolist()
    [False, True, False, False]
    """
    defined = anchoring.dropna(subset=["p_value"])
    by_participant = (defined["p_value"] < alpha).groupby(defined["participant"].astype(str))
    failed = ~by_participant.any()
    return labels.astype(str).isin(failed.index[failed.to_numpy()])


def _participants(participants: pd.DataFrame, up_to: int = PARTICIPANTS_LISTED_UP_TO) -> list[str]:
    has_origin = "origin" in participants
    # Flagged where a session did not finish (a study whose every session finished, or whose
    # sessions record no status, has no such column).
    # A missing status (a column pandas read back as float NaN) is no status: not filled
    # with "", which pandas warns will raise for a float column.
    status = participants.get("session_status")
    has_status = status is not None and bool(
        (status.notna() & ~status.isin(["", "complete"])).any()
    )
    has_exclusions = "exclusion_rule" in participants and bool(participants["excluded"].any())
    has_catch = "n_catch_failed" in participants
    why = participants_listed(participants, up_to=up_to)
    chosen = participants
    if len(participants) > up_to:
        chosen = participants[why != ""]
        # The listed few in the order of their median tau_b, those without one last.
        chosen = chosen.assign(_label=chosen["participant"].astype(str)).sort_values(
            ["tau_b_median", "_label"], kind="stable", na_position="last"
        )
    truncated = len(chosen) < len(participants)
    rows = [
        (
            r.participant,
            _int(r.n_trials),
            _int(r.n_missing),
            f"{r.n_sketches_complete} of {r.n_sketches}",
            num(r.tau_b_median),
            num(r.tau_b_loo_median),
            *([_ORIGIN_WORDS.get(r.origin, r.origin)] if has_origin else []),
            *([_session_words(r.session_status)] if has_status else []),
            *([r.exclusion_rule or ""] if has_exclusions else []),
            *(
                [f"{r.n_catch_passed} / {r.n_catch_failed} / {r.n_catch_missing}"]
                if has_catch
                else []
            ),
            *([why[r.Index]] if truncated else []),
        )
        for r in chosen.itertuples()
    ]
    header = (
        _PARTICIPANT_HEADER
        + (("origin",) if has_origin else ())
        + (("session",) if has_status else ())
        + (("excluded by",) if has_exclusions else ())
        + (("catch pairs passed / failed / missing",) if has_catch else ())
        + (("listed as",) if truncated else ())
    )
    listed = (
        f" With more than {up_to:,} participants the table lists those a reader needs: the "
        f"{PARTICIPANTS_AT_EACH_END} lowest and the {PARTICIPANTS_AT_EACH_END} highest by "
        "median tau_b against the consensus (inclusive), and every flagged one (a session "
        "that did not finish, an excluded participant, a failed catch pair, a participant "
        "whose tau_b against the anchors' prescribed ratings is significant for none of the "
        "anchor sketches, a simulated participant among more people, no tau_b against the "
        "consensus), "
        f"{len(rows):,} of {len(participants):,}, in the order of their median tau_b; "
        "<code>participants.csv</code> holds every participant."
        if truncated
        else ""
    )
    return [
        "<h2>Participants</h2>",
        "<p>Main-block trials and missed response windows per participant; the sketches of "
        "which they rated every image (those their ratings enter Kendall's W for); and the "
        "median over the sketches of their tau_b against the consensus, inclusive (as in the "
        "paper) and leave-one-out. All of it in <code>participants.csv</code>."
        f"{_origin_text(participants)}{_catch_text(participants)}"
        + (
            " A session that did not finish is flagged under <em>session</em>."
            if has_status
            else ""
        )
        + listed
        + "</p>",
        collapsed(
            f"{len(rows):,} of {counted(len(participants), 'participant')}"
            if truncated
            else counted(len(rows), "participant"),
            table(header, rows, classes=_TEXT_AT_0),
            open_up_to=_PARTICIPANTS_OPEN_UP_TO,
            n=len(rows),
        ),
    ]


def _session_words(status) -> str:
    """A session status as the participants table flags it: empty for a finished session
    (or none recorded), the status in words otherwise ("incomplete", "timed out")."""
    status = "" if pd.isna(status) else str(status)
    return "" if status in ("", "complete") else status.replace("_", " ")


#: A paper-sized study's participants are listed open; a crowd's fold away.
_PARTICIPANTS_OPEN_UP_TO = 60


_PARTICIPANT_HEADER = (
    "participant",
    "trials",
    "missed",
    "sketches complete",
    "median tau_b vs consensus",
    "median tau_b, leave-one-out",
)


#: A column of ids (participant, sketch) is text even when an id is all digits ("01").
_TEXT_AT_0, _TEXT_AT_1 = {0: ""}, {1: ""}
#: Lists up to this long are shown open; longer ones fold away under their count.
_OPEN_UP_TO = 10


#: Past this many input files (a BIDS crowd has one per participant) the page lists the
#: first :data:`_SOURCES_SHOWN`; ``summary.json``'s ``sources`` holds every one.
_SOURCES_LISTED_UP_TO = PARTICIPANTS_LISTED_UP_TO
_SOURCES_SHOWN = 10


def _provenance(summary: Mapping) -> list[str]:
    every = summary.get("sources", [])
    shown = every if len(every) <= _SOURCES_LISTED_UP_TO else every[:_SOURCES_SHOWN]
    sources = [(s["path"], s["sha256"], _int(s["rows"])) for s in shown]
    # ``rows`` counts the lines below the header line (the rows of a well-formed file):
    # the column says so, not "lines", which the file has one more of.
    files = table(
        ["file", "SHA-256", "lines below the header"], sources, classes={0: "path", 1: "hash"}
    )
    # One block, so the last page never holds the software table alone.
    return [
        '<section class="keep">',
        "<h2>Inputs and software</h2>",
        collapsed(
            f"{counted(len(sources), 'input file')} with their SHA-256 (also in summary.json)"
            if len(shown) == len(every)
            else f"{len(shown)} of {counted(len(every), 'input file')} with their SHA-256 "
            "(every one in summary.json's sources)",
            files,
            open_up_to=_OPEN_UP_TO,
            n=len(sources),
        ),
        "<p>The software that computed the numbers and drew the figures, and (marked 'sessions') "
        "the libraries that ran the rating sessions, as their sidecars record them:</p>",
        software_table(summary.get("software", {})),
        "</section>",
    ]
