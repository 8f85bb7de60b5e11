"""Imported ratings, checked and written as the BIDS dataset a session records.

Written through the toolkit's one BIDS writer (:mod:`sbir_study.foundation.bids`).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from sbir_study.foundation import bids
from sbir_study.foundation.checks import InputError, closest, participant_label
from sbir_study.foundation.scale import PAPER_SCALE, Scale
from sbir_study.foundation.tables import MISSING_VALUES

from ..validation import validate_ratings

__all__ = ["ImportedRatings", "ImportedRatingsWarning", "write_imported_dataset"]


class ImportedRatingsWarning(UserWarning):
    """Imported ratings were read, but something in them looks like a mistake."""


@dataclass
class ImportedRatings:
    """Ratings read from other tools' files, before they are written as a dataset.

    ``ratings``: a row per rated pair, ``participant`` (the source's id), ``sketch_id,
    image_id, phase, rating`` (Int64), ``rt`` (s), ``trial``, ``_source`` and ``_line``;
    optionally ``anchor_rating, n_presses, presses``. ``sources`` maps each file read to
    its SHA-256; ``settings`` records how they were read.
    """

    ratings: pd.DataFrame
    sources: dict[str, str]
    settings: dict[str, object] = field(default_factory=dict)


_SOURCE_ID = {
    "Description": "The participant's id as the imported files gave it, of which the label is "
    "made (sbir_study.foundation.checks.participant_label)."
}
_README = """Ratings of sketch/image pairs collected with another tool and imported with
sbir-study import ({format}). One _beh.tsv per participant: one row per rated pair,
columns described in its _beh.json sidecar, which also records the rating scale
(RatingScale) and, under Imported, the source files with their SHA-256 and how they
were read (column mapping, separator, encoding, decimal mark, keys). participants.tsv
keeps each participant's id as the source gave it (source_id).
"""


def write_imported_dataset(
    imported: ImportedRatings,
    root: str | Path,
    *,
    scale: Scale = PAPER_SCALE,
    overwrite: bool = False,
    version: str = "",
    inputs: Sequence[str | Path] = (),
) -> pd.DataFrame:
    """Check imported ratings and write them as a BIDS dataset at ``root``.

    Ids become labels in order of first appearance
    (:func:`~sbir_study.foundation.checks.participant_label`), kept in
    ``participants.tsv``. The ratings are checked as a loaded table is (naming source
    file and line), typo-like ids warned about (:class:`ImportedRatingsWarning`), and the
    dataset written as every output (``docs/outputs.md``): replaced only with
    ``overwrite`` and only if ``import`` wrote it; ``inputs`` are never a target.
    Returns the checked ratings.
    """
    from sbir_study.foundation.outputs import output_folder

    ratings = imported.ratings.copy()
    given = pd.unique(ratings["participant"])
    missing = [g for g in given if g in MISSING_VALUES]
    if missing:
        row = ratings[ratings["participant"] == missing[0]].iloc[0]
        raise InputError(
            f"{row['_source']}: line {row['_line']}: the participant's id is "
            f"missing ({missing[0]!r}); expected an id on every row"
        )
    labels: dict[str, str] = {}
    for source_id in given:
        try:
            labels[source_id] = participant_label(source_id, set(labels.values()))
        except InputError as error:
            row = ratings[ratings["participant"] == source_id].iloc[0]
            raise InputError(f"{row['_source']}: line {row['_line']}: {error}") from None
    ratings["source_id"] = ratings["participant"]
    ratings["participant"] = ratings["participant"].map(labels)
    # Checked as a table read from a file is: every cell text, a missing one n/a.
    as_text = ratings.drop(columns=["source_id"])
    for column in ("rating", "anchor_rating", "trial", "rt"):
        if column in as_text:
            values = as_text[column].astype("string")
            as_text[column] = values.fillna("n/a").astype(object)
    checked = validate_ratings(as_text, scale=scale)
    _warn_of_typos(ratings)
    root = Path(root)
    with output_folder(root, "import", overwrite=overwrite, inputs=inputs) as folder:
        _write(folder, ratings, imported, labels, scale, version)
    return checked


def _write(
    root: Path,
    ratings: pd.DataFrame,
    imported: ImportedRatings,
    labels: Mapping[str, str],
    scale: Scale,
    version: str,
) -> None:
    form = imported.settings.get("Format", "ratings")
    bids.write_dataset_description(
        root,
        name=f"Ratings imported from {form} files",
        generated_by={
            "Name": "sbir-study",
            "Version": version or "unknown",
            "Description": f"ratings imported from {form} files (sbir-study import)",
        },
        readme=_README.format(format=form),
    )
    bids.write_participants(
        root,
        pd.DataFrame(
            {
                "participant_id": ["sub-" + label for label in labels.values()],
                "source_id": list(labels),
            }
        ),
        {"participant_id": {"Description": "Participant label."}, "source_id": _SOURCE_ID},
    )
    # The columns of the ratings table an import fills, in the order of BIDS sessions' files.
    written = [c for c in bids.BEH_COLUMNS if c in ratings]
    for label, rows in ratings.groupby("participant", sort=False):
        files = list(dict.fromkeys(rows["_source"]))
        sidecar = {
            "GeneratedBy": f"sbir-study import {version}".strip(),
            "Origin": "imported",
            "Imported": {
                **_for_files(imported, files),
                "Sources": [{"File": f, "SHA256": imported.sources[f]} for f in files],
                "SourceId": str(rows["source_id"].iloc[0]),
            },
        }
        trials = rows[written].copy()
        trials["rt"] = trials["rt"].round(6)
        bids.write_beh(root, str(label), trials, sidecar, scale=scale)


def _for_files(imported: ImportedRatings, files: Sequence[str]) -> dict[str, object]:
    """The settings, those recorded per source file (``Encoding``, ``Loops``) for ``files``."""
    settings = dict(imported.settings)
    for name, value in settings.items():
        if isinstance(value, dict) and value and set(value) <= set(imported.sources):
            settings[name] = {f: value[f] for f in files if f in value}
    return settings


#: Ids listed in one warning before the rest are counted.
_SHOWN = 5


def _warn_of_typos(ratings: pd.DataFrame) -> None:
    """Warn of ids that look like typos: an image rated once that no one else rated, a
    sketch rated by one participant, each with the closest id that others rated."""
    if ratings["participant"].nunique() < 2:
        return
    main = ratings[ratings["phase"] == "main"]
    raters = main.groupby("sketch_id", sort=False)["participant"].nunique()
    lonely, shared = list(raters.index[raters == 1]), list(raters.index[raters > 1])
    _warn_ids(main, "sketch_id", lonely, shared, "rated by one participant only")
    counts = main.groupby("image_id", sort=False).size()
    once, again = list(counts.index[counts == 1]), list(counts.index[counts > 1])
    _warn_ids(main, "image_id", once, again, "rated once, by one participant, and by no one else")


def _warn_ids(rows: pd.DataFrame, column: str, odd: list[str], others: list[str], why: str) -> None:
    if not odd or not others:
        return
    named = []
    for value in odd[:_SHOWN]:
        row = rows[rows[column] == value].iloc[0]
        # The most similar, however far; of equals, the first others rated.
        close = closest(value, others, cutoff=0)
        named.append(
            f"{value!r} ({row['_source']}: line {row['_line']}; closest rated by others: {close!r})"
        )
    more = f", and {len(odd) - _SHOWN} more" if len(odd) > _SHOWN else ""
    what = "sketch" if column == "sketch_id" else "image"
    warnings.warn(
        f"{what} ids {why}, perhaps typos: {', '.join(named)}{more}",
        ImportedRatingsWarning,
        stacklevel=3,
    )
