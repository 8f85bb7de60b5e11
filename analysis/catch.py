"""Catch pairs: pairs whose rating is known in advance, scored per participant.

A protocol may name catch pairs (``[[catch]]``: an image with its own sketch, a blank
image) with the ratings that pass. They are main-block pairs like any other and stay
in every statistic and the ground truth (which must not depend on what a protocol
calls a catch pair); they are only scored on top: passed, failed or missing (a missed
window or a pair not shown). Sessions record them in their sidecars; a flat table
takes them from ``analyze --catch FILE.csv``.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from sbir_study.foundation.checks import InputError, bad_ids
from sbir_study.foundation.tables import read_table, read_text

from .ratings import Provenance

__all__ = [
    "CATCH_COLUMNS",
    "CATCH_SCORE_COLUMNS",
    "catch_pairs_of",
    "read_catch_pairs",
    "score_catch_pairs",
]

#: The columns of a catch-pair file (``analyze --catch``) and of the pairs' table.
CATCH_COLUMNS = ("sketch_id", "image_id", "lowest", "highest")
#: The columns :func:`score_catch_pairs` adds to ``participants.csv``.
CATCH_SCORE_COLUMNS = ("n_catch_passed", "n_catch_failed", "n_catch_missing")


def read_catch_pairs(path: str | Path) -> pd.DataFrame:
    """Read a catch-pair CSV: ``sketch_id,image_id,lowest,highest`` (passing ratings as pressed).

    Raises :class:`InputError` naming file, line and field for a missing column, a bad
    id, a rating that is no whole number, ``lowest`` above ``highest``, or a pair twice.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file; expected a catch-pair table (--catch)")
    file = read_text(path)
    if file.is_blank():
        raise InputError(
            f"{path}: the file is empty; expected the header {','.join(CATCH_COLUMNS)}"
        )
    table = read_table(file, ",")
    missing = [c for c in CATCH_COLUMNS if c not in table.columns]
    if missing:
        raise InputError(
            f"{path}: line 1: missing column {missing[0]!r}; expected the columns "
            f"{', '.join(CATCH_COLUMNS)}"
        )
    pairs: list[tuple[str, str, int, int]] = []
    for line, row in enumerate(table[list(CATCH_COLUMNS)].itertuples(index=False), start=2):
        sketch_id, image_id, low, high = (str(v).strip() for v in row)
        for name, value in (("sketch_id", sketch_id), ("image_id", image_id)):
            if bad_ids([value])[0]:
                raise InputError(
                    f"{path}: line {line}: field {name!r}: expected an id of "
                    f"letters, digits and '._-', got {value!r}"
                )
        bounds = []
        for name, value in (("lowest", low), ("highest", high)):
            if not value.isdigit():
                raise InputError(
                    f"{path}: line {line}: field {name!r}: expected a whole "
                    f"rating, as pressed, got {value!r}"
                )
            bounds.append(int(value))
        if bounds[0] > bounds[1]:
            raise InputError(
                f"{path}: line {line}: field 'highest': expected a rating >= "
                f"lowest ({bounds[0]}), got {bounds[1]}"
            )
        if (sketch_id, image_id) in {(p[0], p[1]) for p in pairs}:
            raise InputError(
                f"{path}: line {line}: the pair {sketch_id}/{image_id} is listed "
                "twice; expected each catch pair once"
            )
        pairs.append((sketch_id, image_id, bounds[0], bounds[1]))
    return pd.DataFrame(pairs, columns=list(CATCH_COLUMNS)).astype(
        {"lowest": "int64", "highest": "int64"}
    )


def catch_pairs_of(ratings: pd.DataFrame) -> pd.DataFrame:
    """The catch pairs the ratings' sessions recorded (:attr:`Provenance.catch`), as a table
    of :data:`CATCH_COLUMNS` (empty when none did)."""
    recorded = ratings.attrs.get("provenance", Provenance()).catch
    return pd.DataFrame(list(recorded), columns=list(CATCH_COLUMNS)).astype(
        {"lowest": "int64", "highest": "int64"}
    )


def score_catch_pairs(ratings: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """Each participant's catch pairs passed, failed and missing.

    ``ratings`` as pressed (catch ranges are in pressed ratings); a main-block rating of
    a pair of ``pairs`` (:data:`CATCH_COLUMNS`) passes within ``lowest..highest``.
    Returns ``participant`` and :data:`CATCH_SCORE_COLUMNS`, a row per participant.

    Examples
    --------
    >>> ratings = pd.DataFrame({"participant": ["a", "a", "b"], "sketch_id": "s",
    ...     "image_id": ["s", "x", "s"], "phase": "main",
    ...     "rating": pd.array([1, 4, 6], dtype="Int64")})
    >>> pairs = pd.DataFrame({"sketch_id": ["s", "s"], "image_id": ["s", "blank"],
    ...     "lowest": [1, 7], "highest": [2, 7]})
    >>> score_catch_pairs(ratings, pairs)
      participant  n_catch_passed  n_catch_failed  n_catch_missing
    0           a               1               0                1
    1           b               0               1                1
    """
    main = ratings[ratings["phase"] == "main"]
    labels = pd.Index(sorted(ratings["participant"].astype(str).unique()), name="participant")
    rated = pd.DataFrame(
        {
            "participant": main["participant"].astype(str),
            "sketch_id": main["sketch_id"].astype(str),
            "image_id": main["image_id"].astype(str),
            "rating": main["rating"].astype("Float64"),
        }
    )
    scored = rated.merge(
        pairs.astype({"sketch_id": str, "image_id": str}),
        on=["sketch_id", "image_id"],
        validate="m:1",
    )
    given = scored["rating"].notna()
    within = given & scored["rating"].between(scored["lowest"], scored["highest"]).fillna(False)
    by_participant = scored.assign(passed=within, failed=given & ~within).groupby("participant")
    passed = by_participant["passed"].sum().reindex(labels, fill_value=0)
    failed = by_participant["failed"].sum().reindex(labels, fill_value=0)
    return pd.DataFrame(
        {
            "participant": labels,
            "n_catch_passed": passed.to_numpy("int64"),
            "n_catch_failed": failed.to_numpy("int64"),
            "n_catch_missing": (len(pairs) - passed - failed).to_numpy("int64"),
        }
    )
