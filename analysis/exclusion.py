"""Exclusion on record: the participants a study's pre-registered rules leave out.

``analyze --exclude`` rules are decided on each participant's own ratings before any
statistic; the statistics then stand on the others alone, as if the excluded files
were not there, and every output lists who was excluded and by which rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np
import pandas as pd

from sbir_study.foundation.checks import InputError

from .consensus import anchoring_consistency
from .orientation import in_paper_orientation
from .ratings import Provenance

__all__ = ["EXCLUSION_RULES", "ExclusionRule", "decide_exclusions", "parse_exclusion_rule"]

#: The rules, as ``analyze --exclude`` spells them (``=`` and a value where one is needed).
EXCLUSION_RULES = (
    "anchoring-tau-below=V",
    "missed-above=V",
    "incomplete",
    "catch-failed=N",
    "labels=FILE",
)
_EXPECTED = (
    "expected one of anchoring-tau-below=V (a tau_b between -1 and 1), missed-above=V (a "
    "share between 0 and 1), incomplete, catch-failed=N (a whole number >= 0), labels=FILE"
)


@dataclass(frozen=True)
class ExclusionRule:
    """One rule: its ``kind``, its value (a number, a file, or ``None``) and its ``text``
    as given, which every output names."""

    kind: str
    value: float | Path | None
    text: str


def parse_exclusion_rule(text: str) -> ExclusionRule:
    """Read one ``--exclude`` rule; an :class:`InputError` names the option and what was expected.

    Examples
    --------
    >>> parse_exclusion_rule("missed-above=0.2")
    ExclusionRule(kind='missed-above', value=0.2, text='missed-above=0.2')
    >>> parse_exclusion_rule("incomplete").kind
    'incomplete'
    """
    kind, sign, value = text.strip().partition("=")
    kind = kind.strip()
    value = value.strip()
    if kind == "incomplete" and not sign:
        return ExclusionRule(kind, None, text.strip())
    if kind == "labels" and value:
        return ExclusionRule(kind, Path(value), f"labels={value}")
    if kind == "catch-failed" and value.isdigit():
        return ExclusionRule(kind, int(value), f"catch-failed={int(value)}")
    if kind in ("anchoring-tau-below", "missed-above") and value:
        low = -1.0 if kind == "anchoring-tau-below" else 0.0
        try:
            number = float(value)
        except ValueError:
            number = np.nan
        if low <= number <= 1.0:  # False for NaN
            return ExclusionRule(kind, number, f"{kind}={value}")
    raise InputError(f"--exclude: {_EXPECTED}, got {text!r}")


def decide_exclusions(
    ratings: pd.DataFrame,
    rules: Sequence[ExclusionRule],
    *,
    alternative: str = "greater",
    catch: pd.DataFrame | None = None,
) -> dict[str, list[str]]:
    """Each participant that ``rules`` exclude, with the texts of the rules that do.

    * ``anchoring-tau-below=V``: the median tau_b of their repeated against the
      prescribed anchor ratings (``anchoring.csv``) is below V (never when all undefined);
    * ``missed-above=V``: the share of their main-block trials without a rating is above V;
    * ``incomplete``: a session of theirs records a ``SessionStatus`` other than
      ``complete`` (one that records none excludes no one);
    * ``labels=FILE``: the file names them (a label a line, ``sub-`` optional, blank and
      ``#`` lines skipped);
    * ``catch-failed=N``: more than N catch pairs failed (``catch``, else the sessions';
      :func:`~sbir_study.analysis.catch.score_catch_pairs`).

    Raises :class:`InputError` for ``anchoring-tau-below`` without an anchoring phase,
    ``catch-failed`` without catch pairs, a label that is no participant (naming file
    and line), or rules that leave no participant.
    """
    labels = pd.Index(ratings["participant"].astype(str).unique()).sort_values()
    found: dict[str, list[str]] = {}
    for rule in rules:
        for label in _excluded_by(rule, ratings, labels, alternative, catch):
            found.setdefault(label, [])
            if rule.text not in found[label]:
                found[label].append(rule.text)
    if len(found) == len(labels):
        raise InputError(
            f"--exclude: the rules exclude all {len(labels)} participants; expected rules "
            "that leave participants to analyse"
        )
    return {label: found[label] for label in labels if label in found}


def _excluded_by(
    rule: ExclusionRule,
    ratings: pd.DataFrame,
    labels: pd.Index,
    alternative: str,
    catch: pd.DataFrame | None,
) -> list[str]:
    if rule.kind == "catch-failed":
        from .catch import catch_pairs_of, score_catch_pairs

        pairs = catch_pairs_of(ratings) if catch is None else catch
        if pairs.empty:
            raise InputError(
                f"--exclude: {rule.text} needs catch pairs; expected a dataset whose protocol "
                "names [[catch]] pairs, or analyze --catch FILE.csv"
            )
        scores = score_catch_pairs(ratings, pairs)
        return list(scores.loc[scores["n_catch_failed"] > rule.value, "participant"])
    if rule.kind == "labels":
        return _labels_in_file(cast(Path, rule.value), labels)
    if rule.kind == "incomplete":
        statuses = ratings.attrs.get("provenance", Provenance()).statuses
        return sorted({label for label, status in statuses if status != "complete"})
    if rule.kind == "missed-above":
        main = ratings[ratings["phase"] == "main"]
        missed = main["rating"].isna().groupby(main["participant"].astype(str)).mean()
        return list(missed.index[missed > rule.value])
    anchoring = anchoring_consistency(in_paper_orientation(ratings), alternative=alternative)
    if anchoring.empty:
        raise InputError(
            f"--exclude: {rule.text} needs anchor_repeat trials; expected ratings of a study "
            "with an anchoring phase"
        )
    tau = anchoring.groupby(anchoring["participant"].astype(str))["tau_b"].median()
    return list(tau.index[tau < rule.value])


def _labels_in_file(path: Path, labels: pd.Index) -> list[str]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise InputError(
            f"{path}: no such file; expected a file of participant labels (--exclude labels=FILE)"
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(
            f"{path}: cannot be read ({error}); expected a UTF-8 file of "
            "participant labels (--exclude labels=FILE)"
        ) from None
    named = []
    for number, line in enumerate(lines, start=1):
        label = line.strip().removeprefix("sub-")
        if not label or label.startswith("#"):
            continue
        if label not in labels:
            raise InputError(
                f"{path}: line {number}: participant {label!r} is not in the "
                "ratings; expected a participant label of the study"
            )
        named.append(label)
    return named
