"""``report.html``: one self-contained page with the analysis beside the paper's numbers.

:func:`write_report` computes what the page shows and fills
``templates/report.html.jinja``, which holds its sections, prose and markup. Figures
are embedded as data URIs and nothing is loaded from the network, so the page opens
anywhere, can be mailed, and is archived with the data.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
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
from sbir_study.foundation.paper import IMAGES_PER_SKETCH, PUBLISHED
from sbir_study.foundation.scale import PAPER_SCALE, Scale

from .limits import PERMUTATION_RATERS_LIMIT
from .ratings import SIMULATED_ORIGINS
from .wording import (
    agreeing,
    counted,
    participant_count,
    permutation_text,
    raters_range,
    share_interval,
    span,
    undefined_text,
)

__all__ = [
    "PARTICIPANTS_LISTED_UP_TO",
    "anchors_not_followed",
    "participants_listed",
    "write_report",
]

#: Up to this many participants the report lists every one; beyond, the participants a
#: reader needs (:func:`participants_listed`), and ``participants.csv`` holds them all: a
#: crowd's full table runs to hundreds of printed pages.
PARTICIPANTS_LISTED_UP_TO = 100
#: Above :data:`PARTICIPANTS_LISTED_UP_TO`, this many of the lowest and of the highest
#: median tau_b against the consensus are listed, besides every flagged participant.
PARTICIPANTS_AT_EACH_END = 10
#: A paper-sized study's participants are listed open; a crowd's fold away.
_PARTICIPANTS_OPEN_UP_TO = 60
#: Other lists up to this long are shown open; longer ones fold away under their count.
_OPEN_UP_TO = 10
#: Past this many input files (a BIDS crowd has one per participant) the page lists the
#: first :data:`_SOURCES_SHOWN`; ``summary.json``'s ``sources`` holds every one.
_SOURCES_LISTED_UP_TO = PARTICIPANTS_LISTED_UP_TO
_SOURCES_SHOWN = 10
#: Participants named per origin in the banner before the rest are counted.
_BANNER_NAMES = 10
#: How the banner and the participants' section name each origin.
_ORIGIN_WORDS = {"run-simulate": "run --simulate"}
#: Phases whose trials are shown with their rating and not rated, by design.
_NOT_RATED = {
    "anchor_demo": "none expected: not rated by design (each pair is shown with its "
    "prescribed rating)"
}


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

    ``kendall_w`` is ``kendall_w.csv``'s table, ``participants`` ``participants.csv``'s;
    ``scale`` is named when it is not the paper's. Beyond ``participants_listed_up_to``
    participants the page lists those of :func:`participants_listed`.
    """
    path = Path(path)
    if participants is not None and anchoring is not None:
        participants = participants.assign(
            anchors_not_followed=anchors_not_followed(
                anchoring, participants["participant"], summary["alpha"]
            )
        )
    w = summary["kendall_w"]
    cap = _pairwise_sample(summary)
    page = render(
        "sbir_study.analysis",
        "report.html.jinja",
        summary=summary,
        scale=None if scale == PAPER_SCALE else scale,
        k=scale.k,
        simulated="these ratings" if summary.get("simulated") else None,
        simulated_by=_simulated_by(participants) if summary.get("simulated") else None,
        participant_count=participant_count(summary),
        phases=_phases(summary),
        excluded=[
            (f"sub-{e['participant']}", "; ".join(e["rules"]))
            for e in summary.get("excluded") or []
        ],
        headline=_headline(summary, scale),
        reliability=_reliability(summary),
        figures=embedded_figures({name: figures[name] for name in sorted(figures)}),
        w_raters=_w_raters(w),
        sampled=None
        if cap is None
        else {
            "raters": f"{cap['max']:,} {agreeing(cap['max'], 'participant')}",
            "sketches": counted(cap["n_sketches_sampled"], "sketch", "sketches"),
        },
        extremes=_extremes(sketch_agreement),
        agreement=_agreement(kendall_w, summary),
        participants=_participants(participants, participants_listed_up_to),
        sources=_sources(summary),
        software=software_rows(summary.get("software", {})),
        published=PUBLISHED,
        images_per_sketch=IMAGES_PER_SKETCH,
        permutation_raters_limit=PERMUTATION_RATERS_LIMIT,
        at_each_end=PARTICIPANTS_AT_EACH_END,
        open_up_to=_OPEN_UP_TO,
        counted=counted,
    )
    path.write_text(page, encoding="utf-8")
    return path


def _int(value: object) -> str:
    """A count in a table cell, thousands separated ("1,984"); anything else as it is."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        return str(value)
    return f"{value:,}"


def _simulated_by(participants: pd.DataFrame | None) -> dict[str, Any] | None:
    """Which participants are simulated and by what, from their ``origin`` ("sub-x by run
    --simulate"), for the banner; None where the table does not say (no origin column)."""
    if participants is None or "origin" not in participants:
        return None
    simulated = participants[participants["origin"].isin(SIMULATED_ORIGINS)]
    origins = []
    for origin, group in simulated.groupby("origin", sort=True):
        names = [f"sub-{label}" for label in group["participant"].astype(str)]
        shown = ", ".join(names[:_BANNER_NAMES])
        if len(names) > _BANNER_NAMES:
            shown += f" and {len(names) - _BANNER_NAMES:,} more"
        origins.append(f"{shown} by {_ORIGIN_WORDS.get(str(origin), origin)}")
    return {"n": len(simulated), "of": len(participants), "origins": "; ".join(origins)}


def _phases(summary: Mapping) -> list[tuple[str, str, str]]:
    """The rows of the table of phases: trials and missed responses; for a phase rated by
    nobody by design, why there are none."""
    rows = []
    for phase, counts in summary.get("phases", {}).items():
        missing = _int(counts["n_missing"])
        if phase in _NOT_RATED and counts["n_missing"] == counts["n_trials"]:
            missing = _NOT_RATED[phase]
        rows.append((phase, _int(counts["n_trials"]), missing))
    return rows


def _headline(summary: Mapping, scale: Scale) -> list[tuple[str, ...]]:
    """The rows of the headline table: each statistic beside the paper's value."""
    n = summary["n_participants"]
    return [
        _family_row(summary, "anchoring", "anchoring correlations significant"),
        _family_row(summary, "pairwise", _pairwise_label(summary)),
        _family_row(
            summary,
            "consensus",
            f"participant vs consensus of all {counted(n, 'participant')}, the participant "
            "included (as in the paper), significant",
        ),
        _family_row(
            summary,
            "consensus_loo",
            f"participant vs consensus of the other {counted(n - 1, 'participant')} "
            "(leave-one-out), significant",
            "(not reported: the paper's consensus includes the participant)",
        ),
        _kendall_w_row(summary["kendall_w"]),
        *_every_rating_rows(summary),
        *_bin_rows(summary, scale),
    ]


def _family_row(summary: Mapping, name: str, label: str, paper: str | None = None) -> tuple:
    """The headline row of a test family: the share significant, its interval, the counts,
    and the paper's share (as the paper writes it: 77.4%, 86%) unless ``paper`` is given."""
    if paper is None:
        paper = f"{100 * PUBLISHED[name]:g}%"
    f = summary[name]
    undefined = undefined_text(f)
    if not f["n_tests"]:
        # No correlation to count: say why, not "n/a | n/a to n/a | 0 of 0".
        why = "no correlations to test"
        if name == "anchoring":
            why = (
                "no anchor pair rated again in the main block"
                if "anchor_repeat" in summary.get("phases", {})
                else "no anchoring phase in this study"
            )
        return (label, why + (f" ({undefined})" if undefined else ""), "", "", paper)
    point, interval = share_interval(f["share_significant"], f["wilson_low"], f["wilson_high"])
    counts = f"{f['n_significant']:,} of {f['n_tests']:,}"
    return (
        label,
        point,
        interval,
        counts + (f" defined ({undefined})" if undefined else ""),
        paper,
    )


def _w_raters(w: Mapping) -> str | None:
    """Whom the W of a study stands on ("13-24 of 28 participants"); None when no sketch
    has two participants who rated every image."""
    if w.get("n_raters_min") is None:
        return None
    return f"{raters_range(w)} {agreeing(w['n_raters_all_max'], 'participant')}"


def _kendall_w_row(w: Mapping) -> tuple:
    """The headline row of Kendall's W: the sketches significant, over whom, its range."""
    undefined = undefined_text(w)
    raters = _w_raters(w)
    return (
        "sketches with Kendall's W significant "
        + (
            f"(W over the {raters} who rated every image of the sketch)"
            if raters
            else "(no sketch has two participants who rated every image)"
        ),
        f"{w['n_significant']} of {w['n_sketches']}"
        if not undefined
        else f"{w['n_significant']} of {w['n_defined']} defined ({undefined})",
        "",
        f"W from {num(w['min'])} to {num(w['max'])}, median {num(w['median'])}",
        f"all {PUBLISHED['n_sketches']} (over all {PUBLISHED['n_participants']})",
    )


def _bin_rows(summary: Mapping, scale: Scale) -> list[tuple]:
    """The headline rows of the spread of the ratings in the bins of Eq. 3."""
    # The paper's bin 4 is the middle of its scale: on another, the middle (or the
    # lower of the two middle) point's bin is compared with it.
    middle = scale.low + (scale.k - 1) // 2
    sds = {b["bin"]: b["sd"] for b in summary.get("bins", []) if b["sd"] is not None}
    smallest = sorted(sds, key=sds.__getitem__)[:2]
    largest = max(sds, key=sds.__getitem__) if sds else None
    return [
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
        f"{cap['max']:,} {agreeing(cap['max'], 'rater')} drawn at random, seed {cap['seed']}: "
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
                f"{span(sm['n_raters_min'], sm['n_raters_max'])} "
                f"{agreeing(sm['n_raters_max'], 'participant')} with at least two "
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


def _reliability(summary: Mapping) -> dict[str, Any] | None:
    """How reliable the consensus is (``summary.json``'s ``reliability``, None without it),
    with the verdict on the sketches short of the target: how many raters each needs."""
    found = summary.get("reliability")
    if not found:
        return None
    target = found["target"]
    sentences = [
        f"with {b['raters_needed']} raters the consensus of sketch {b['sketch_id']} would "
        f"reach {target:g}"
        if b["raters_needed"] is not None
        else f"no number of raters brings sketch {b['sketch_id']} to {target:g} (its "
        "halves do not agree)"
        for b in found["below_target"]
    ]
    verdict = "; ".join(sentences)
    verdict = verdict[0].upper() + verdict[1:] + "." if verdict else ""
    return {**found, "verdict": verdict or f"Every sketch reaches {target:g}."}


def _extremes(agreement: pd.DataFrame) -> list[tuple]:
    """The rows of the best and worst sketches (the paper's Fig. 9)."""
    return [
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
        for r in agreement[agreement["group"] != ""].itertuples()
    ]


def _agreement(kendall_w: pd.DataFrame, summary: Mapping) -> dict[str, Any]:
    """The rows of the agreement per sketch, and how many permutation p-values sit at the
    floor of their test (marked ‡)."""
    permutations = (summary.get("skillings_mack") or {}).get("permutations") or 0
    # (1 + #{SM* >= SM}) / (1 + permutations) is never below 1 / (1 + permutations).
    floor = 1.0 / (1 + permutations) if permutations else float("nan")

    def interval(low: float, high: float) -> str:
        return "" if isnan(low) else f"{num(low)} to {num(high)}"

    def permutation_p(value: float, n_raters: int) -> str:
        if isnan(value) and n_raters > PERMUTATION_RATERS_LIMIT:
            return f"not computed (over {PERMUTATION_RATERS_LIMIT} raters)"
        return p_text(value) + (" ‡" if at_floor(value, floor) else "")

    def why(value: str, reason: object) -> str:
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
    floored = kendall_w["skillings_mack_permutation_p_value"].map(lambda p: at_floor(p, floor))
    return {
        "rows": rows,
        "permutations": permutations,
        "floor": p_text(floor),
        "n_floored": int(floored.sum()),
        "n_sketches": len(kendall_w),
    }


def _sources(summary: Mapping) -> dict[str, Any]:
    """The input files the page lists (every one up to :data:`_SOURCES_LISTED_UP_TO`)."""
    every = summary.get("sources", [])
    shown = every if len(every) <= _SOURCES_LISTED_UP_TO else every[:_SOURCES_SHOWN]
    rows = [(s["path"], s["sha256"], _int(s["rows"])) for s in shown]
    return {"rows": rows, "of": len(every)}


def participants_listed(
    participants: pd.DataFrame,
    *,
    up_to: int = PARTICIPANTS_LISTED_UP_TO,
    at_each_end: int = PARTICIPANTS_AT_EACH_END,
) -> pd.Series:
    """Why each row of ``participants`` is listed ("": not listed, or every one up to ``up_to``).

    Beyond ``up_to``: the ``at_each_end`` "lowest" and "highest" by median tau_b against
    the consensus, and every flagged one: an unfinished session, excluded, a failed catch
    pair, no anchor followed (``anchors_not_followed``), simulated among people, or no
    tau_b against the consensus; reasons joined by "; ".
    """
    if len(participants) <= up_to:
        return pd.Series("", index=participants.index, dtype=object)
    median = participants["tau_b_median"].to_numpy(dtype=float)
    # Ties broken by the label, as Figs. 4 and 6 sort, so the lists are reproducible.
    order = pd.DataFrame({"tau": median, "label": participants["participant"].astype(str)})
    ranked = order[np.isfinite(median)].sort_values(["tau", "label"], kind="stable").index
    flags = [
        (participants.index.isin(ranked[:at_each_end]), "lowest"),
        (participants.index.isin(ranked[len(ranked) - at_each_end :]), "highest"),
        (~np.isfinite(median), "no tau_b against the consensus"),
    ]
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
    reasons: list[list[str]] = [[] for _ in range(len(participants))]
    for flagged, why in flags:
        for k in np.flatnonzero(np.asarray(flagged, dtype=bool)):
            reasons[k].append(why)
    return pd.Series(["; ".join(r) for r in reasons], index=participants.index, dtype=object)


def anchors_not_followed(anchoring: pd.DataFrame, labels: pd.Series, alpha: float) -> pd.Series:
    """Whether each of ``labels`` followed none of the anchors, by position.

    True where the anchoring tau_b (``anchoring.csv``) is defined for an anchor sketch
    and significant (p < ``alpha``) for none; False without a defined test.

    >>> table = pd.DataFrame({"participant": ["01", "01", "02", "02", "03"],
    ...                       "p_value": [0.2, 0.01, 0.3, 0.4, float("nan")]})
    >>> anchors_not_followed(table, pd.Series(["01", "02", "03", "04"]), 0.05).tolist()
    [False, True, False, False]
    """
    defined = anchoring.dropna(subset=["p_value"])
    by_participant = (defined["p_value"] < alpha).groupby(defined["participant"].astype(str))
    failed = ~by_participant.any()
    return labels.astype(str).isin(failed.index[failed.to_numpy()])


def _participants(participants: pd.DataFrame | None, up_to: int) -> dict[str, Any] | None:
    """The participants' table (every one up to ``up_to``, else those of
    :func:`participants_listed`), with the columns the study has; None without one."""
    if participants is None:
        return None
    # Flagged where a session did not finish (a study whose every session finished, or whose
    # sessions record no status, has no such column). A missing status (a column pandas
    # read back as float NaN) is no status: not filled with "", which pandas warns will
    # raise for a float column.
    status = participants.get("session_status")
    columns = {
        "origin": "origin" in participants,
        "session": status is not None
        and bool((status.notna() & ~status.isin(["", "complete"])).any()),
        "excluded by": "exclusion_rule" in participants and bool(participants["excluded"].any()),
        "catch pairs passed / failed / missing": "n_catch_failed" in participants,
    }
    why = participants_listed(participants, up_to=up_to)
    chosen = participants
    if len(participants) > up_to:
        # The listed few in the order of their median tau_b, those without one last.
        chosen = participants[why != ""]
        chosen = chosen.assign(_label=chosen["participant"].astype(str)).sort_values(
            ["tau_b_median", "_label"], kind="stable", na_position="last"
        )
    truncated = len(chosen) < len(participants)
    columns["listed as"] = truncated
    rows = [
        (
            r.participant,
            _int(r.n_trials),
            _int(r.n_missing),
            f"{r.n_sketches_complete} of {r.n_sketches}",
            num(r.tau_b_median),
            num(r.tau_b_loo_median),
            *([_ORIGIN_WORDS.get(r.origin, r.origin)] if columns["origin"] else []),
            *([_session_words(r.session_status)] if columns["session"] else []),
            *([r.exclusion_rule or ""] if columns["excluded by"] else []),
            *(
                [f"{r.n_catch_passed} / {r.n_catch_failed} / {r.n_catch_missing}"]
                if columns["catch pairs passed / failed / missing"]
                else []
            ),
            *([why[r.Index]] if truncated else []),
        )
        for r in chosen.itertuples()
    ]
    origins = None
    if columns["origin"]:
        counts = participants["origin"].value_counts(sort=False).sort_index()
        origins = ", ".join(f"{n:,} {_ORIGIN_WORDS.get(o, o)}" for o, n in counts.items())
    n_catch = None
    if "n_catch_failed" in participants:
        catch = participants[["n_catch_passed", "n_catch_failed", "n_catch_missing"]]
        n_catch = int(catch.iloc[0].sum())
    return {
        "header": [*_PARTICIPANT_HEADER, *(name for name, shown in columns.items() if shown)],
        "rows": rows,
        "of": len(participants),
        "truncated": truncated,
        "up_to": up_to,
        "origins": origins,
        "n_catch": n_catch,
        "flags_sessions": columns["session"],
        "open": len(rows) <= _PARTICIPANTS_OPEN_UP_TO,
    }


def _session_words(status: object) -> str:
    """A session status as the participants table flags it: empty for a finished session
    (or none recorded), the status in words otherwise ("incomplete", "timed out")."""
    status = "" if pd.isna(status) else str(status)
    return "" if status in ("", "complete") else status.replace("_", " ")


_PARTICIPANT_HEADER = (
    "participant",
    "trials",
    "missed",
    "sketches complete",
    "median tau_b vs consensus",
    "median tau_b, leave-one-out",
)
