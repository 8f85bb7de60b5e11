"""The ratings table's columns and their checks: a raw table of text cells in, a typed one out.

Every problem is an :class:`~sbir_study.foundation.checks.InputError` naming file,
line and field. Each distinct cell of a column is checked and converted once: a
crowd-size study repeats few distinct cells over millions of rows.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sbir_study.foundation.checks import (
    ID_RULE,
    MISSING_LABELS,
    PARTICIPANT_RULE,
    InputError,
    bad_ids,
)
from sbir_study.foundation.scale import PAPER_SCALE, Scale
from sbir_study.foundation.tables import MISSING_VALUES

__all__ = [
    "PHASES",
    "RATING_COLUMNS",
    "REQUIRED_COLUMNS",
    "RatingsWarning",
    "check_text_labels",
    "validate_ratings",
]

#: The columns of the ratings table, in the order they are written.
RATING_COLUMNS = (
    *("participant", "sketch_id", "image_id", "phase"),
    *("rating", "rt", "anchor_rating", "trial"),
)
#: The columns every ratings table has (a BIDS file may leave out ``participant``).
REQUIRED_COLUMNS = ("participant", "sketch_id", "image_id", "rating")
#: The phases of a session, as the ``phase`` column names them.
PHASES = ("anchor_demo", "anchor_repeat", "main", "practice")
# Phases in which a participant rates each pair at most once.
_ONCE_PER_PHASE = ("main", "anchor_repeat")

#: Groups of labels alike but for leading zeros that one warning names (then a count).
_LEADING_ZERO_GROUPS_SHOWN = 5


class RatingsWarning(UserWarning):
    """A ratings file was read, but something in it deserves attention."""


def validate_ratings(frame: pd.DataFrame, *, scale: Scale = PAPER_SCALE) -> pd.DataFrame:
    """Check a raw ratings table (all cells text) and return it typed (``docs/formats.md``).

    ``_source`` and ``_line`` columns, when there, name rows in messages and are dropped.
    Ratings and prescribed ratings must be points of ``scale`` (``attrs["scale"]``).
    """
    check_text_labels(frame)
    frame = frame.copy()
    if "_source" not in frame:
        frame["_source"] = "<table>"
        frame["_line"] = np.arange(2, len(frame) + 2)
    for column in ("participant", "sketch_id", "image_id"):
        frame[column] = _labels(frame[column])
        if column == "participant":
            _refuse_missing_labels(frame)
        _fail_where(frame, frame[column].isin(("", "n/a")), column, "a non-empty label")
        # The id rule (docs/formats.md), checked once per distinct id.
        categories = frame[column].cat.categories
        bad = bad_ids(categories, participant=column == "participant")
        if bad.any():
            rule = PARTICIPANT_RULE if column == "participant" else ID_RULE
            _fail_where(frame, frame[column].isin(categories[bad]), column, rule)

    _warn_of_leading_zeros(frame)

    if "phase" not in frame:
        frame["phase"] = "main"
    frame["phase"] = _labels(frame["phase"])
    _fail_where(frame, ~frame["phase"].isin(PHASES), "phase", f"one of {', '.join(PHASES)}")

    bounds = (scale.low, scale.high)
    frame["rating"] = _integer_column(frame, "rating", bounds)
    frame["anchor_rating"] = _integer_column(frame, "anchor_rating", bounds)
    frame["trial"] = _integer_column(frame, "trial", None)
    frame["rt"] = _float_column(frame, "rt", non_negative=True)
    is_anchor = frame["phase"].isin(("anchor_demo", "anchor_repeat"))
    _fail_where(
        frame,
        is_anchor & frame["anchor_rating"].isna(),
        "anchor_rating",
        f"the prescribed rating ({scale.low}..{scale.high}) on every anchor_demo and "
        "anchor_repeat row",
    )
    _check_unique_pairs(frame)

    extra = [c for c in frame.columns if c not in RATING_COLUMNS and c not in ("_source", "_line")]
    for column in extra:
        frame[column] = _compact_text(frame[column])
    frame = frame[list(RATING_COLUMNS) + extra].reset_index(drop=True)
    frame.attrs["scale"] = scale
    return frame


def _refuse_missing_labels(frame: pd.DataFrame) -> None:
    """Refuse a participant label (``NA``, ``n/a``, ``nan``, ``None``, ``null``) that R, pandas
    or a BIDS reader read as missing: the study would lose that participant there.
    """
    labels = frame["participant"].cat.categories
    missing = labels.str.lower().isin(MISSING_LABELS)
    if missing.any():
        _fail_where(
            frame,
            frame["participant"].isin(labels[missing]),
            "participant",
            "a participant label that no table reads as a missing value (not NA, nan, "
            "none, null or n/a, in any case)",
        )


def _warn_of_leading_zeros(frame: pd.DataFrame) -> None:
    """Warn of labels that differ only by leading zeros (``01``, ``1``): two participants
    here, maybe one typed or spreadsheet-mangled; each is named with where it first occurs.
    """
    labels = pd.Series(frame["participant"].cat.categories)
    unpadded = labels.str.lstrip("0")
    # Grouped only where two labels meet: most labels meet none, and a group for each of
    # thousands of labels costs more than the check.
    meet = unpadded.duplicated(keep=False).to_numpy()
    if not meet.any():
        return
    labels = labels[meet]
    alike = list(labels.groupby(unpadded[meet].to_numpy(), sort=True).agg(list))
    first = frame.drop_duplicates("participant").set_index("participant")
    named = [
        " and ".join(
            f"{label!r} ({first.at[label, '_source']}: line {first.at[label, '_line']})"
            for label in group
        )
        for group in alike[:_LEADING_ZERO_GROUPS_SHOWN]
    ]
    more = len(alike) - len(named)
    warnings.warn(
        f"participant labels that differ only by leading zeros: {'; '.join(named)}"
        f"{f'; and {more} more such groups' if more else ''}. They are analysed as different "
        "participants; if one person has two spellings, write the label one way",
        RatingsWarning,
        stacklevel=3,  # past validate_ratings
    )


def _compact_text(column: pd.Series) -> pd.Series:
    """An extra text column as a categorical: few distinct texts, one type in every dataset."""
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    # Python strings as categories whichever reader gave the column (Arrow's gives str).
    categories = pd.Index(np.asarray(uniques, dtype=object), dtype=object)
    return pd.Series(
        pd.Categorical.from_codes(codes, categories), index=column.index, name=column.name
    )


def check_text_labels(frame: pd.DataFrame) -> None:
    """Refuse a table whose participant, sketch or image labels were read as numbers.

    A table read with ``pandas.read_csv`` and its default types has turned the
    label ``01`` into the number 1 (and ``01`` and ``1`` into one participant):
    what was written cannot be recovered, so such a table is an error, not a
    guess. Read it with :func:`load_ratings`, or with ``dtype=str``.

    Examples
    --------
    >>> check_text_labels(pd.DataFrame({"participant": ["01"], "sketch_id": ["s"]}))
    >>> check_text_labels(pd.DataFrame({"participant": [1], "sketch_id": ["s"]}))
    Traceback (most recent call last):
    ...
    sbir_study.foundation.checks.InputError: participant: the labels are numbers (int64), so 01 \
has already become 1; expected text labels: read the table with \
sbir_study.analysis.load_ratings, or pandas.read_csv(..., dtype=str)
    """
    for column in ("participant", "sketch_id", "image_id"):
        if column in frame and (
            pd.api.types.is_numeric_dtype(frame[column])
            or pd.api.types.is_bool_dtype(frame[column])
        ):
            raise InputError(
                f"{column}: the labels are numbers ({frame[column].dtype}), so 01 has already "
                "become 1; expected text labels: read the table with "
                "sbir_study.analysis.load_ratings, or pandas.read_csv(..., dtype=str)"
            )


def _labels(column: pd.Series) -> pd.Categorical:
    """Labels stripped, as a categorical with sorted categories (each distinct label once)."""
    codes, uniques = pd.factorize(column, use_na_sentinel=False)  # a missing cell is a cell
    stripped = pd.Index(uniques).astype(str).str.strip()
    merged, categories = pd.factorize(stripped, sort=True)
    # The codes index the categories by construction: not checked again, row by row.
    return pd.Categorical.from_codes(merged[codes], categories=categories, validate=False)


# --- field checks ----------------------------------------------------------------------------


def _fail_where(frame: pd.DataFrame, bad: pd.Series, column: str, expected: str) -> None:
    if not bad.any():
        return
    row = frame.loc[bad.to_numpy()].iloc[0]
    value = row.get(f"_raw_{column}", row[column])
    where = f"{row['_source']}: line {row['_line']}: field {column!r}"
    raise InputError(f"{where}: expected {expected}, got {value!r}")


@dataclass(frozen=True)
class _Distinct:
    """A text column as its distinct stripped values and a code per row."""

    codes: np.ndarray
    text: np.ndarray
    number: np.ndarray  # float64; NaN where missing or not a number
    missing: np.ndarray

    @classmethod
    def of(cls, column: pd.Series) -> _Distinct:
        codes, uniques = pd.factorize(column, use_na_sentinel=False)
        text = pd.Index(uniques).astype(str).str.strip()
        # A cell no file wrote (a column of one session file that another lacks, such as
        # anchor_rating beside an imported session) is missing too, not the text "nan".
        missing = text.isin(MISSING_VALUES) | text.isna()
        number = pd.to_numeric(pd.Series(text).where(~missing), errors="coerce")
        return cls(codes, np.asarray(text, dtype=object), number.to_numpy("float64"), missing)

    def fail_where(self, frame: pd.DataFrame, bad: np.ndarray, column: str, expected: str):
        """Raise for the first row whose distinct value is ``bad``, showing its text."""
        if bad.any():
            frame[f"_raw_{column}"] = self.text[self.codes]
            _fail_where(frame, pd.Series(bad[self.codes], index=frame.index), column, expected)

    def rows(self, values: np.ndarray, index: pd.Index, dtype: str) -> pd.Series:
        """``values`` (one per distinct cell; NaN: missing) spread over the rows, as ``dtype``.

        Nullable integers are built from numbers and mask per distinct value; whole numbers
        beyond int64 go through ``astype``, which refuses them.
        """
        if dtype == "Int64":
            missing = np.isnan(values)
            if not (np.abs(values[~missing]) < 2.0**63).all():
                return pd.Series(values[self.codes], index=index).astype(dtype)
            whole = np.where(missing, 0.0, values).astype(np.int64)
            # Arrays of its own, not copied again (``pd.Series`` copies a NumPy array).
            return pd.Series(
                pd.arrays.IntegerArray(whole[self.codes], missing[self.codes]),
                index=index,
                copy=False,
            )
        return pd.Series(values[self.codes], index=index, copy=False).astype(dtype)


def _integer_column(frame: pd.DataFrame, column: str, bounds: tuple[int, int] | None) -> pd.Series:
    if column not in frame:
        return pd.Series(pd.NA, index=frame.index, dtype="Int64")
    values = _Distinct.of(frame[column])
    number, given = values.number, ~values.missing
    with np.errstate(invalid="ignore"):
        bad = given & (~np.isfinite(number) | (number != np.round(number)))
        if bounds is not None:
            bad |= given & ((number < bounds[0]) | (number > bounds[1]))
    expected = "an integer" if bounds is None else f"an integer {bounds[0]}..{bounds[1]}"
    if bounds is not None and bounds != (PAPER_SCALE.low, PAPER_SCALE.high):
        expected += f" (the scale {bounds[0]}-{bounds[1]})"
    values.fail_where(frame, bad, column, f"{expected} or n/a")
    return values.rows(np.round(number), frame.index, "Int64")


def _float_column(frame: pd.DataFrame, column: str, *, non_negative: bool) -> pd.Series:
    if column not in frame:
        return pd.Series(np.nan, index=frame.index, dtype="float64")
    values = _Distinct.of(frame[column])
    bad = ~values.missing & ~np.isfinite(values.number)
    if non_negative:
        bad |= values.number < 0
    expected = "a non-negative number" if non_negative else "a number"
    values.fail_where(frame, bad, column, f"{expected} or n/a")
    return values.rows(values.number, frame.index, "float64")


def _check_unique_pairs(frame: pd.DataFrame) -> None:
    key = ["participant", "sketch_id", "image_id", "phase"]
    if not _any_repeated(frame, key):
        return
    once = frame[frame["phase"].isin(_ONCE_PER_PHASE)]
    repeated = once.duplicated(key, keep=False)
    if not repeated.any():
        return
    rows = once[repeated]
    second = rows[rows.duplicated(key, keep="first")].iloc[0]
    first = rows[(rows[key] == second[key]).all(axis=1)].iloc[0]
    where_first = (
        f"line {first['_line']}"
        if first["_source"] == second["_source"]
        else f"{first['_source']} line {first['_line']}"
    )
    raise InputError(
        f"{second['_source']}: line {second['_line']}: participant {second['participant']!r} "
        f"rated sketch {second['sketch_id']!r} image {second['image_id']!r} twice in phase "
        f"{second['phase']!r} (first at {where_first}); expected each pair once per phase"
    )


def _any_repeated(frame: pd.DataFrame, key: list[str]) -> bool:
    """Whether a ``key`` of a once-per-phase phase's rows repeats, from the categoricals' codes
    (missing equal to missing, as ``DataFrame.duplicated``, left to name the rows).
    """
    once = frame["phase"].isin(_ONCE_PER_PHASE).to_numpy()
    columns = [frame[name] for name in key]
    if not all(isinstance(column.dtype, pd.CategoricalDtype) for column in columns):
        return bool(frame[once].duplicated(key).any())
    combined = np.zeros(int(once.sum()), dtype=np.int64)
    span = 1
    for column in columns:
        size = len(column.cat.categories) + 1  # and code -1
        span *= size
        if span >= 2**62:  # no room for one number a row: as pandas does it
            return bool(frame[once].duplicated(key).any())
        combined *= size
        combined += column.cat.codes.to_numpy()[once]
        combined += 1
    combined.sort()  # equal neighbours of a sort: cheaper than a hash table of the rows
    return bool((combined[1:] == combined[:-1]).any())
