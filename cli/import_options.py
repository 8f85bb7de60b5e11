"""The option values of ``sbir-study import`` parsed into what its readers take.

``--columns`` (:func:`parse_columns`), ``--keys`` (:func:`parse_keys`), ``--select``
(:func:`parse_select`), ``--answers`` (:func:`parse_answers`) and ``--sep``
(:func:`parse_separator`); a bad value is an :class:`InputError` of one line naming
the option. The readers are :mod:`sbir_study.analysis.importers`'.
"""

from __future__ import annotations

import re

from sbir_study.foundation.checks import InputError, did_you_mean
from sbir_study.foundation.scale import Scale

__all__ = ["parse_answers", "parse_columns", "parse_keys", "parse_select", "parse_separator"]

#: ``--sep`` by name (or as the character itself, one of :data:`_SEPARATOR_CHARACTERS`).
_SEPARATOR_NAMES = {"comma": ",", "semicolon": ";", "tab": "\t", "\\t": "\t", "bar": "|"}
_SEPARATOR_CHARACTERS = (",", ";", "\t", "|")


def parse_columns(text: str | None, *, option: str = "--columns") -> dict[str, str]:
    """A column mapping from its text: ``participant=Subject,sketch_id=Sketch,...``.

    Each entry maps a ratings-table column
    (:data:`~sbir_study.analysis.importers.cells.IMPORT_COLUMNS`) to a source column (any
    text but ``,`` and ``=``, stripped); an unknown or repeated column is refused.

    >>> parse_columns("participant=Subject, rating = Response")
    {'participant': 'Subject', 'rating': 'Response'}
    """
    from sbir_study.analysis.importers.cells import IMPORT_COLUMNS

    mapping: dict[str, str] = {}
    if text is None or not text.strip():
        return mapping
    for entry in text.split(","):
        target, equals, source = entry.partition("=")
        target, source = target.strip(), source.strip()
        if not equals or not target or not source:
            raise InputError(
                f"{option}: expected COLUMN=SOURCE entries separated by commas "
                f"(participant=Subject,rating=Response), got {entry.strip()!r}"
            )
        if target not in IMPORT_COLUMNS:
            hint = did_you_mean(target, IMPORT_COLUMNS)
            raise InputError(
                f"{option}: {target!r} is not a column of the ratings table"
                f"{hint}; expected one of {', '.join(IMPORT_COLUMNS)}"
            )
        if target in mapping:
            raise InputError(f"{option}: {target!r} is mapped twice; expected each column once")
        mapping[target] = source
    return mapping


def parse_keys(text: str, scale: Scale, *, option: str = "--keys") -> dict[str, int]:
    """The rating of each key: one key per point of ``scale``, low end first, named as recorded.

    >>> parse_keys("a,s,d,f,g", Scale(1, 5))
    {'a': 1, 's': 2, 'd': 3, 'f': 4, 'g': 5}
    """
    keys = [key.strip() for key in text.split(",")]
    if len(keys) != scale.k or any(not key for key in keys):
        raise InputError(
            f"{option}: expected {scale.k} keys separated by commas, one per point "
            f"of the scale {scale} (low end first), got {text!r}"
        )
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:
        raise InputError(
            f"{option}: key {repeated[0]!r} is given twice; expected one key per point"
        )
    return dict(zip(keys, scale.points, strict=True))


def parse_select(text: str | None, *, option: str = "--select") -> dict[str, str]:
    """Which trials are ratings, by the value of their fields: ``task=rating,block=main``.

    >>> parse_select("task = rating")
    {'task': 'rating'}
    """
    chosen: dict[str, str] = {}
    for entry in (text or "").split(","):
        if not entry.strip() and not (text or "").strip():
            break
        field_name, equals, value = entry.partition("=")
        field_name, value = field_name.strip(), value.strip()
        if not equals or not field_name:
            raise InputError(
                f"{option}: expected FIELD=VALUE entries separated by commas "
                f"(task=rating), got {entry.strip()!r}"
            )
        if field_name in chosen:
            raise InputError(f"{option}: field {field_name!r} is named twice; expected each once")
        chosen[field_name] = value
    return chosen


def parse_answers(text: str | None, scale: Scale, *, option: str = "--answers") -> dict[str, int]:
    """The rating of each answer label: ``Best match=1,Good=2,...,Worst=7``.

    Labels match an answer stripped, may hold any text but ``,`` (the rating follows the
    last ``=``); a point off ``scale`` or a label twice is refused.

    >>> parse_answers("very similar = 1, similar=2, not similar=3", Scale(1, 3))
    {'very similar': 1, 'similar': 2, 'not similar': 3}
    """
    answers: dict[str, int] = {}
    for entry in (text or "").split(","):
        label, equals, point = entry.rpartition("=")[0], "=" in entry, entry.rpartition("=")[2]
        label, point = label.strip(), point.strip()
        if not equals or not label or not re.fullmatch(r"[+-]?\d+", point):
            raise InputError(
                f"{option}: expected LABEL=RATING entries separated by commas "
                f"(Best match=1,Good=2), got {entry.strip()!r}"
            )
        if not scale.low <= int(point) <= scale.high:
            raise InputError(
                f"{option}: {label!r} is given {point}; expected a rating {scale.low}.."
                f"{scale.high} (the scale {scale})"
            )
        if label in answers:
            raise InputError(f"{option}: label {label!r} is given twice; expected each once")
        answers[label] = int(point)
    return answers


def parse_separator(text: str | None) -> str | None:
    """The separator ``--sep`` names: ``comma``, ``semicolon``, ``tab``, ``bar`` or itself; None.

    >>> parse_separator("semicolon"), parse_separator("bar"), parse_separator(None)
    (';', '|', None)
    """
    if text is None or text in _SEPARATOR_CHARACTERS:
        return text
    sep = _SEPARATOR_NAMES.get(text.lower())
    if sep is None:
        raise InputError(f"--sep: expected comma, semicolon, tab or bar, got {text!r}")
    return sep
