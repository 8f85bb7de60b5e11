"""The analysis' numbers in words, as ``report.html`` and analyze's console both say them.

Counts agreeing with their nouns, shares with the decimals their intervals need, why tests
are undefined, over whom W stands, how the permutation p-values were computed.
"""

from __future__ import annotations

from collections.abc import Mapping

from sbir_study.foundation.html import isnan, share

from .limits import PERMUTATION_RATERS_LIMIT

__all__ = [
    "agreeing",
    "counted",
    "participant_count",
    "permutation_text",
    "raters_range",
    "share_interval",
    "span",
    "undefined_text",
]


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and its noun, agreeing and with thousands separated; every printed count uses it.

    >>> counted(1, "participant"), counted(0, "sketch", "sketches"), counted(2000, "rater")
    ('1 participant', '0 sketches', '2,000 raters')
    """
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


#: The most decimals :func:`share_interval` prints: past them, an interval is narrower than
#: any difference a reader of a share would act on.
_SHARE_DECIMALS = 3


def share_interval(value: float | None, low: float | None, high: float | None) -> tuple[str, str]:
    """A share and its interval in percent, with the decimals (1 to 3) the bounds need to differ.

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
    if value is None or low is None or high is None or any(map(isnan, (value, low, high))):
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
    """Why some tests of a ``summary.json`` entry are undefined ("" when none is).

    "5 undefined: constant: 07 on s3": the count, then each reason with its sketches.
    """
    total = stats.get("n_undefined") or 0
    if not total:
        return ""
    groups: dict[str, tuple[int, list[str]]] = {}
    for entry in stats.get("undefined", []):
        n, sketches = groups.get(entry["reason"], (0, []))
        groups[entry["reason"]] = (n + entry["n"], [*sketches, str(entry["sketch_id"])])
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
        f"{span(w['n_raters_min'], w['n_raters_max'])} of "
        f"{span(w['n_raters_all_min'], w['n_raters_all_max'])}"
    )


def participant_count(summary: Mapping) -> str:
    """The participants analysed, and of how many when some were excluded ("22 of 28
    participants, 6 excluded")."""
    n, excluded = summary["n_participants"], len(summary.get("excluded") or ())
    if not excluded:
        return counted(n, "participant")
    return f"{n} of {counted(n + excluded, 'participant')}, {excluded} excluded"


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
                f"{span(sm['n_raters_min'], sm['n_raters_max'])} raters)"
            )
        return "no permutation p-value defined"
    return (
        f"by permutation {sm['n_significant_permutation']} of {tested} "
        f"({counted(permutations, 'permutation')}" + (f"; {why}" if over else "") + ")"
    )


def agreeing(n: int, noun: str, plural: str | None = None) -> str:
    """The noun alone, agreeing with ``n`` (a count printed apart, e.g. in a range).

    >>> agreeing(1, "rater"), agreeing(3, "sketch", "sketches")
    ('rater', 'sketches')
    """
    return counted(n, noun, plural).split(" ", 1)[1]


def span(low: int | None, high: int | None) -> str:
    """A range of counts: "13-24", one number when both ends agree, "n/a" without one.

    >>> span(13, 24), span(2000, 2000), span(None, None)
    ('13-24', '2,000', 'n/a')
    """
    if low is None:
        return "n/a"
    return f"{low:,}" if low == high else f"{low:,}-{high:,}"
