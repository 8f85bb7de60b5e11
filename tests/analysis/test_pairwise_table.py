"""``pairwise_tau.parquet`` is compressed (zstd; the floats byte-stream-split, the labels
dictionary-encoded) and gives back every value to the last bit.

The reference is the same table written by pyarrow with no compression and no
encoding but PLAIN: what is read back from ours must be bit for bit what is read
back from it, and what was handed to the writer.
"""

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from sbir_study.analysis import inter_user_tau_pairs
from sbir_study.analysis.agreement_tables import SketchPairsResult
from sbir_study.analysis.table_writers import _PairwiseWriter
from tests.analysis.test_pairwise_sample import crowd

COLUMNS = ["sketch_id", "participant_a", "participant_b", "tau_b", "p_value", "n_items", "reason"]


def bits(column: pd.Series) -> np.ndarray:
    """A column as comparable bits: floats by their IEEE 754 pattern (NaN, -0.0 included)."""
    if column.dtype.kind == "f":
        return column.to_numpy().view(np.int64)
    return column.astype(str).to_numpy()


def assert_same_bits(read: pd.DataFrame, expected: pd.DataFrame) -> None:
    assert list(read.columns) == COLUMNS
    assert len(read) == len(expected)
    for name in COLUMNS:
        assert np.array_equal(bits(read[name]), bits(expected[name])), name


def as_frame(pairs: list[SketchPairsResult]) -> pd.DataFrame:
    """The pairs as the table the writer is given, before any writing."""
    return pd.DataFrame(
        {
            "sketch_id": np.concatenate([np.full(p.pvalue.size, str(p.sketch_id)) for p in pairs]),
            "participant_a": np.concatenate([p.participants[p.participant_a] for p in pairs]),
            "participant_b": np.concatenate([p.participants[p.participant_b] for p in pairs]),
            "tau_b": np.concatenate([p.statistic for p in pairs]),
            "p_value": np.concatenate([p.pvalue for p in pairs]),
            "n_items": np.concatenate([p.n_items for p in pairs]).astype(np.int32),
            "reason": np.concatenate([np.where(np.isnan(p.pvalue), p.reason, "") for p in pairs]),
        }
    )


def write(pairs: list[SketchPairsResult], path) -> None:
    writer = _PairwiseWriter(path)
    for sketch in pairs:
        writer.write(sketch)
    writer.close()


def test_a_study_s_pairs_read_back_bit_for_bit_as_the_uncompressed_table(tmp_path):
    table = crowd(participants=30, sketches=3, images=12, seed=4, missing=0.1)
    table.loc[table["participant"] == "p 0003", "rating"] = 4.0  # a constant rater: undefined
    pairs = list(inter_user_tau_pairs(table))
    write(pairs, tmp_path / "ours.parquet")
    plain = pq.read_table(tmp_path / "ours.parquet")
    pq.write_table(plain, tmp_path / "plain.parquet", compression="none", use_dictionary=False)

    ours = pd.read_parquet(tmp_path / "ours.parquet")
    assert_same_bits(ours, pd.read_parquet(tmp_path / "plain.parquet"))
    assert_same_bits(ours, as_frame(pairs))
    assert (ours["reason"] != "").any()


def test_the_file_is_zstd_with_split_floats_and_dictionary_labels(tmp_path):
    write(list(inter_user_tau_pairs(crowd(10, 2, 8, seed=1))), tmp_path / "pairs.parquet")
    metadata = pq.ParquetFile(tmp_path / "pairs.parquet").metadata
    for group in range(metadata.num_row_groups):
        for index in range(metadata.num_columns):
            chunk = metadata.row_group(group).column(index)
            assert chunk.compression == "ZSTD"
            if chunk.path_in_schema in ("tau_b", "p_value"):
                assert "BYTE_STREAM_SPLIT" in chunk.encodings
            elif chunk.path_in_schema != "n_items":
                assert "RLE_DICTIONARY" in chunk.encodings, chunk.path_in_schema


_floats = hnp.arrays(
    np.float64,
    st.integers(1, 60),
    elements=st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True),
)


@given(tau=_floats, data=st.data())
@settings(max_examples=60, deadline=None)
def test_any_float_reads_back_bit_for_bit(tmp_path_factory, tau, data):
    """Any float64 (NaN, infinities, -0.0, subnormals) survives the compression unchanged."""
    size = tau.size
    p = data.draw(hnp.arrays(np.float64, size, elements=st.floats(allow_subnormal=True)))
    p[np.isnan(tau)] = np.nan
    raters = data.draw(st.integers(2, 12))
    a = data.draw(hnp.arrays(np.int64, size, elements=st.integers(0, raters - 2)))
    b = a + 1
    labels = np.array([f"{k:03d}" for k in range(raters)], dtype=object)
    n = data.draw(hnp.arrays(np.int64, size, elements=st.integers(0, 40)))
    reason = np.where(np.isnan(p), "fewer than 3 shared images", "").astype(object)
    pairs = [SketchPairsResult("s1", labels, a, b, tau, p, n, raters, reason)]
    path = tmp_path_factory.mktemp("pairs") / "pairs.parquet"
    write(pairs, path)
    assert_same_bits(pd.read_parquet(path), as_frame(pairs))
