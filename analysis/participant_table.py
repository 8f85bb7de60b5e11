"""The per-participant table of ``analyze`` (``participants.csv``) and the ratings without
the excluded participants."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from .cube import RatingCube, rating_cube
from .ratings import Provenance, participant_origins

__all__ = [
    "participant_table",
    "with_catch_scores",
    "with_exclusions",
    "with_origins",
    "with_session_status",
    "without_excluded",
]


def participant_table(
    ratings: pd.DataFrame, consensus: pd.DataFrame, *, cube: RatingCube | None = None
) -> pd.DataFrame:
    """Per participant: main-block trials, missed windows, complete sketches, consensus tau_b.

    Returns ``participant, n_trials, n_ratings, n_missing, n_sketches,
    n_sketches_complete, tau_b_median, tau_b_loo_median``: ``n_sketches``
    counts the sketches the participant rated at least one image of,
    ``n_sketches_complete`` those they rated every image of (the sketches whose
    Kendall's W they enter); the medians are over the sketches of
    :func:`~sbir_study.analysis.consensus.participant_vs_consensus`. ``cube`` is the
    :func:`~sbir_study.analysis.cube.rating_cube` of the main phase of
    ``ratings`` when the caller has it already; without it, it is built from
    ``ratings``.
    """
    main = ratings[ratings["phase"] == "main"]
    columns = (
        "participant n_trials n_ratings n_missing n_sketches n_sketches_complete "
        "tau_b_median tau_b_loo_median"
    ).split()
    if main.empty:
        return pd.DataFrame(columns=columns)
    if cube is None:
        cube = rating_cube(main)
    rated = np.zeros(len(cube.participants), dtype=np.int64)
    complete = np.zeros(len(cube.participants), dtype=np.int64)
    for index in range(len(cube.sketches)):
        given = ~np.isnan(cube.sketch(index))
        rated += given.any(axis=1)
        complete += given.all(axis=1)
    per_row = main.groupby("participant", observed=True)["rating"]
    labels = pd.Index(cube.participants, name="participant")
    medians = consensus.groupby(consensus["participant"].astype(str))[["tau_b", "tau_b_loo"]]
    medians = medians.median().reindex(labels.astype(str))
    table = pd.DataFrame(
        {
            "participant": cube.participants,
            "n_trials": per_row.size().reindex(labels).to_numpy(),
            "n_ratings": per_row.count().reindex(labels).to_numpy(),
            "n_sketches": rated,
            "n_sketches_complete": complete,
            "tau_b_median": medians["tau_b"].to_numpy(),
            "tau_b_loo_median": medians["tau_b_loo"].to_numpy(),
        }
    )
    table.insert(3, "n_missing", table["n_trials"] - table["n_ratings"])
    return table[columns]


def with_origins(participants: pd.DataFrame, ratings: pd.DataFrame) -> pd.DataFrame:
    """The participant table with each participant's ``origin`` (one of
    :data:`~sbir_study.analysis.ratings.ORIGINS`) last, from the ratings' provenance: who
    the numbers stand on, people or a simulation, is read beside each participant."""
    origins = participant_origins(ratings)
    return participants.assign(
        origin=origins.reindex(participants["participant"].astype(str)).to_numpy()
    )


def with_session_status(participants: pd.DataFrame, ratings: pd.DataFrame) -> pd.DataFrame:
    """The participant table with ``session_status`` last: the ``SessionStatus`` their
    sessions' sidecars record (``complete``, ``incomplete``, ``timed_out``, ...; a
    participant's several statuses sorted and joined by ``+``), empty where none records
    one (``simulate``, a flat table, an import). A session that did not finish is read beside
    its participant's numbers, not only in the sidecar."""
    found: dict[str, set[str]] = {}
    for label, status in ratings.attrs.get("provenance", Provenance()).statuses:
        found.setdefault(label, set()).add(status)
    labels = participants["participant"].astype(str)
    return participants.assign(
        session_status=["+".join(sorted(found.get(label, ()))) for label in labels]
    )


def without_excluded(
    ratings: pd.DataFrame, exclusions: Mapping[str, Sequence[str]]
) -> pd.DataFrame:
    """``ratings`` without the rows of the excluded participants, and without their
    labels among the categories: the table of a dataset whose excluded participants'
    files were never there."""
    if not exclusions:
        return ratings
    kept = ratings[~ratings["participant"].astype(str).isin(list(exclusions))].copy()
    kept["participant"] = kept["participant"].cat.remove_unused_categories()
    return kept


def with_exclusions(
    participants: pd.DataFrame,
    everyone: pd.DataFrame,
    consensus: pd.DataFrame,
    exclusions: Mapping[str, Sequence[str]],
) -> pd.DataFrame:
    """The participant table with the excluded participants' rows (their own counts; no
    consensus tau_b, since the consensus was formed without them), ``excluded`` and
    ``exclusion_rule`` (their rules, joined by ``; ``; empty for the included)."""
    rows = [participants]
    if exclusions:
        excluded = everyone[everyone["participant"].astype(str).isin(list(exclusions))].copy()
        excluded["participant"] = excluded["participant"].cat.remove_unused_categories()
        excluded = excluded[excluded["phase"] != "practice"]
        table = with_origins(participant_table(excluded, consensus.iloc[:0]), everyone)
        rows.append(with_session_status(table, everyone))
    table = pd.concat([r for r in rows if len(r)], ignore_index=True)
    table["participant"] = table["participant"].astype(str)
    table = table.sort_values("participant", kind="stable", ignore_index=True)
    rules = {label: "; ".join(texts) for label, texts in exclusions.items()}
    labels = table["participant"]
    return table.assign(
        excluded=labels.isin(list(rules)), exclusion_rule=[rules.get(label, "") for label in labels]
    )


def with_catch_scores(
    participants: pd.DataFrame, everyone: pd.DataFrame, catch: pd.DataFrame | None
) -> pd.DataFrame:
    """The participant table with each one's catch pairs passed, failed and missing
    (:func:`~sbir_study.analysis.catch.score_catch_pairs` on the ratings as pressed), when
    the study has catch pairs (``catch``, else those its sessions recorded)."""
    from .catch import catch_pairs_of, score_catch_pairs

    pairs = catch_pairs_of(everyone) if catch is None else catch
    if pairs.empty:
        return participants
    scores = score_catch_pairs(everyone, pairs).set_index("participant")
    scores = scores.reindex(participants["participant"].astype(str))
    return participants.assign(**{c: scores[c].to_numpy() for c in scores.columns})
