"""The tables ``analyze`` writes beside the statistics' own: the inter-user table and its
summary per sketch, the sketches ranked by agreement, and the long tables' CSV writer."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from sbir_study.foundation import progress
from sbir_study.foundation.memory import release_freed

from .agreement_tables import SketchPairsResult, inter_user_tau_pairs
from .cube import RatingCube
from .distribution import box_summary, linear_quantiles
from .options import AnalysisOptions
from .significance import FamilySummary, summarize_family

__all__ = [
    "N_EXTREMES",
    "PAIRWISE_TABLE",
    "PairwiseResult",
    "sketch_agreement",
    "write_csv",
    "write_pairwise",
]

#: Sketches shown as best and as worst agreed on (the paper's Fig. 9 shows four of each).
N_EXTREMES = 4
#: Fliers kept per sketch for the inter-user box plot at crowd size.
_MAX_FLIERS = 2000
#: The inter-user table of every pair of participants (``docs/formats.md``).
PAIRWISE_TABLE = "pairwise_tau.parquet"
#: The columns of ``pairwise_tau_summary.csv``.
_SUMMARY_COLUMNS = (
    "sketch_id n_pairs n_raters n_raters_all tau_min tau_q05 tau_q25 tau_median tau_q75 "
    "tau_q95 tau_max share_significant n_undefined"
).split()


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    """``frame`` as CSV, written by ``pyarrow.csv`` outside the interpreter lock (beside the
    other statistics' threads). Each float is the shortest text that reads back to its
    bits, a missing value is empty, text is quoted, and a boolean is ``True`` or ``False``
    (as pandas writes it)."""
    import pyarrow as pa
    import pyarrow.csv

    booleans = {
        name: np.where(frame[name], "True", "False")
        for name, dtype in frame.dtypes.items()
        if dtype == np.bool_
    }
    table = pa.Table.from_pandas(frame.assign(**booleans), preserve_index=False)
    pyarrow.csv.write_csv(table, path)


class PairwiseResult(NamedTuple):
    """What :func:`write_pairwise` computes beside the files it writes."""

    #: The significance of the family of every pair's test.
    family: FamilySummary
    #: ``pairwise_tau_summary.csv``: one row per sketch.
    summary: pd.DataFrame
    #: One box-plot summary per sketch (:func:`~.distribution.box_summary`).
    boxes: list[dict]
    #: The undefined pairs as ``(sketch_id, reason, count)``.
    undefined: list[tuple[str, str, int]]


def write_pairwise(
    ratings: pd.DataFrame, cube: RatingCube, out: Path, options: AnalysisOptions, full: bool
) -> PairwiseResult:
    """Write the inter-user table (with ``full``) and its per-sketch summary.

    The table is Parquet (``docs/formats.md``): one row group per sketch, written as the
    sketch's pairs are computed, so that no more than one sketch's pairs are held.
    """
    pvalues, summary_rows, boxes, undefined = [], [], [], []
    writer = _PairwiseWriter(out / PAIRWISE_TABLE) if full else None
    pairs_of_sketches = inter_user_tau_pairs(
        ratings,
        alternative=options.alternative,
        max_raters=options.pairwise_raters,
        seed=options.seed,
        cube=cube,
    )
    try:
        for pairs in progress.track(
            pairs_of_sketches, "inter-user tau_b", total=len(cube.sketches), unit="sketch"
        ):
            numbers, box = _tau_summary(pairs.statistic, pairs.pvalue, options.alpha)
            pvalues.append(pairs.pvalue)
            summary_rows.append(
                (
                    pairs.sketch_id,
                    pairs.pvalue.size,
                    pairs.participants.size,
                    pairs.n_raters_total,
                    *numbers,
                    int(np.isnan(pairs.pvalue).sum()),
                )
            )
            boxes.append({**box, "label": str(pairs.sketch_id)})
            # The undefined pairs by their NaN p-value: no string comparison over millions.
            reasons, counts = np.unique(
                pairs.reason[np.isnan(pairs.pvalue)].astype(str), return_counts=True
            )
            undefined += [
                (str(pairs.sketch_id), str(r), int(n)) for r, n in zip(reasons, counts, strict=True)
            ]
            if writer is not None:
                writer.write(pairs)
    finally:
        if writer is not None:
            writer.close()
    summary = pd.DataFrame(summary_rows, columns=_SUMMARY_COLUMNS)
    summary.to_csv(out / "pairwise_tau_summary.csv", index=False)
    family = summarize_family(_concatenate_consuming(pvalues), options.alpha)
    return PairwiseResult(family, summary, boxes, undefined)


def _concatenate_consuming(parts: list[np.ndarray]) -> np.ndarray:
    """One array of ``parts``, each freed once copied: tens of millions of p-values at
    crowd size, which ``np.concatenate`` would hold twice at its peak."""
    joined = np.empty(sum(part.size for part in parts))
    position = 0
    parts.reverse()
    while parts:
        part = parts.pop()
        joined[position : position + part.size] = part
        position += part.size
        del part
        if len(parts) % 8 == 0:
            release_freed()  # else the freed parts stay in the heap beside the whole
    return joined


class _PairwiseWriter:
    """``pairwise_tau.parquet``, one row group per sketch, the labels as text dictionaries."""

    def __init__(self, path: Path) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        self._pa = pa
        label = pa.dictionary(pa.int32(), pa.string())
        self._schema = pa.schema(
            [
                ("sketch_id", label),
                ("participant_a", label),
                ("participant_b", label),
                ("tau_b", pa.float64()),
                ("p_value", pa.float64()),
                ("n_items", pa.int32()),
                ("reason", label),
            ]
        )
        # Dictionaries for the labels only, and statistics for sketch_id only (readers can skip
        # row groups by sketch): nearly every tau_b and p-value is distinct, so on the floats
        # both cost more time than they save space. The floats' bytes split into streams by
        # significance (BYTE_STREAM_SPLIT), so that zstd finds the repeating sign and exponent
        # bytes; zstd's fastest level, as higher ones save little (docs/outputs.md). Every
        # Parquet encoding and codec is lossless.
        labels = ["sketch_id", "participant_a", "participant_b", "reason"]
        self._writer = pq.ParquetWriter(
            path,
            self._schema,
            compression="zstd",
            compression_level=1,
            use_dictionary=labels,
            use_byte_stream_split=["tau_b", "p_value"],
            write_statistics=["sketch_id"],
        )

    def write(self, pairs: SketchPairsResult) -> None:
        pa = self._pa
        labels = pa.array(np.asarray(pairs.participants, dtype=object).astype(str), pa.string())
        size = pairs.participant_a.size
        sketch = pa.DictionaryArray.from_arrays(
            np.zeros(size, np.int32), pa.array([str(pairs.sketch_id)])
        )
        columns = [
            sketch,
            pa.DictionaryArray.from_arrays(pairs.participant_a.astype(np.int32), labels),
            pa.DictionaryArray.from_arrays(pairs.participant_b.astype(np.int32), labels),
            pa.array(pairs.statistic, pa.float64()),
            pa.array(pairs.pvalue, pa.float64()),
            pa.array(pairs.n_items.astype(np.int32), pa.int32()),
            _reason_column(pa, pairs),
        ]
        if size:
            self._writer.write_table(pa.Table.from_arrays(columns, schema=self._schema))

    def close(self) -> None:
        self._writer.close()


def _reason_column(pa, pairs: SketchPairsResult):
    """The pairs' reasons as a text dictionary, built from the undefined pairs alone."""
    undefined = np.flatnonzero(np.isnan(pairs.pvalue))
    names, codes = np.unique(pairs.reason[undefined].astype(str), return_inverse=True)
    index = np.zeros(pairs.pvalue.size, np.int32)
    index[undefined] = codes.ravel() + 1
    return pa.DictionaryArray.from_arrays(index, pa.array(["", *names.tolist()], pa.string()))


def _tau_summary(tau: np.ndarray, p: np.ndarray, alpha: float) -> tuple[tuple[float, ...], dict]:
    """Summaries of the defined tau_b of one sketch, their quartiles computed once.

    Returns (min, 5/25/50/75/95th percentiles, max, share significant) and the
    box-plot summary (:func:`~sbir_study.analysis.distribution.box_summary`).
    """
    defined = ~np.isnan(p)
    if not defined.all():  # else no copies of the sketch's (millions of) pairs
        tau, p = tau[defined], p[defined]
    if not tau.size:
        return (np.nan,) * 8, box_summary(tau)
    # Every quantile from one pass over the sketch's (millions of) pairs, as np.quantile's.
    q05, q1, med, q3, q95 = linear_quantiles(tau, [0.05, 0.25, 0.5, 0.75, 0.95])
    box = box_summary(tau, max_fliers=_MAX_FLIERS, quartiles=(q1, med, q3))
    numbers = (tau.min(), q05, q1, med, q3, q95, tau.max(), (p < alpha).mean())
    return tuple(map(float, numbers)), box


def sketch_agreement(pairwise_summary: pd.DataFrame, w_table: pd.DataFrame) -> pd.DataFrame:
    """Sketches ranked by their median inter-user tau_b, with the best and worst marked.

    Returns ``sketch_id, tau_median, tau_q25, tau_q75, w, rank, group`` and,
    when ``w_table`` has them, ``n_raters, n_raters_all`` (W stands on k of m
    raters): rank 1 is the sketch people agreed on most; ``group`` is ``best``
    for the top :data:`N_EXTREMES`, ``worst`` for the bottom ones (worst last),
    else empty. The paper's Fig. 9 shows four of each.
    """
    raters = [c for c in ("n_raters", "n_raters_all") if c in w_table]
    table = pairwise_summary[["sketch_id", "tau_median", "tau_q25", "tau_q75"]].merge(
        w_table[["sketch_id", "w", *raters]], on="sketch_id", how="left"
    )
    table = table.sort_values(
        ["tau_median", "sketch_id"], ascending=[False, True], na_position="last", ignore_index=True
    )
    table["rank"] = np.arange(1, len(table) + 1)
    n = min(N_EXTREMES, len(table) // 2)
    group = np.full(len(table), "", dtype=object)
    group[:n] = "best"
    if n:
        group[len(table) - n :] = "worst"
    table["group"] = group
    return table[["sketch_id", "tau_median", "tau_q25", "tau_q75", "w", "rank", "group", *raters]]
