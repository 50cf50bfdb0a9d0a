"""Java's float semantics for keys (lakeops.format.floats), against a plain model of
``Double.compare``: NaN (any payload) one value above +inf, -0.0 below 0.0."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.format import binary_row
from lakeops.format.bucket_hash import hash_rows
from lakeops.format.floats import canonical_nan, order_value, total_order
from lakeops.format.kv import SEQ
from lakeops.format.types import DataType
from lakeops.kv import writer as kv_writer
from lakeops.merge.ordering import group_starts, sort_records

DOUBLE_BITS = [
    0x7FF8000000000000,  # Double.NaN
    0x7FF8000000000001,
    0xFFF8000000000000,  # x86's default NaN
    0x7FF0000000000001,  # signalling
    0x8000000000000000,  # -0.0
    0x0000000000000000,
    0x7FF0000000000000,  # +inf
    0xFFF0000000000000,  # -inf
    0x3FF0000000000000,  # 1.0
    0xBFF8000000000000,  # -1.5
    0x0000000000000001,  # smallest subnormal
]
FLOAT_BITS = [0x7FC00000, 0x7FC00001, 0xFFC00000, 0x80000000, 0, 0x7F800000, 0xFF800000, 1]


def _model_rank(value: float) -> tuple[float, ...]:
    """Double.compare's order, plainly."""
    if math.isnan(value):
        return (1.0,)
    return (0.0, value, math.copysign(1.0, value))


@pytest.mark.parametrize(
    ("bits", "ftype", "utype", "arrow"),
    [
        (DOUBLE_BITS, np.float64, np.uint64, pa.float64()),
        (FLOAT_BITS, np.float32, np.uint32, pa.float32()),
    ],
)
def test_total_order_is_double_compare(
    bits: list[int], ftype: type, utype: type, arrow: pa.DataType
) -> None:
    values = np.array(bits, dtype=utype).view(ftype)
    arr = pa.array(values, type=arrow)
    encoded = total_order(arr).to_pylist()
    floats = [float(v) for v in values]
    for i, a in enumerate(floats):
        for j, b in enumerate(floats):
            want = (_model_rank(a) > _model_rank(b)) - (_model_rank(a) < _model_rank(b))
            got = (encoded[i] > encoded[j]) - (encoded[i] < encoded[j])
            assert got == want, (hex(bits[i]), hex(bits[j]))
            # the scalar map agrees with the array map on order
            assert (order_value(a) > order_value(b)) - (order_value(a) < order_value(b)) == want
    canon = np.asarray(canonical_nan(arr).to_numpy(zero_copy_only=False)).view(utype)
    nan_bits = {int(b) for b, v in zip(canon, values, strict=True) if np.isnan(v)}
    assert nan_bits == {0x7FF8000000000000 if ftype is np.float64 else 0x7FC00000}
    # the bucket hash: every NaN hashes as Java's Double.NaN, -0.0 apart from 0.0
    hashes = hash_rows([arr], [DataType.parse("DOUBLE" if ftype is np.float64 else "FLOAT")])
    assert len({int(h) for h, v in zip(hashes, values, strict=True) if np.isnan(v)}) == 1
    zeros = [int(h) for h, v in zip(hashes, values, strict=True) if v == 0 and not np.isnan(v)]
    assert len(set(zeros)) == 2


def test_sort_and_group_float_keys_and_nulls_in_total_order() -> None:
    values = np.array(DOUBLE_BITS * 2, dtype=np.uint64).view(np.float64)
    records = pa.table(
        {
            "k": pa.array(values),
            "s": pa.array([None, float("nan"), 1.0, -0.0, 0.0] * 4 + [float("-inf"), None]),
            SEQ: pa.array(np.arange(len(values))[::-1].copy(), pa.int64()),
        }
    )
    out = sort_records(records, ["k"], ["s"])
    ks = [float(v) for v in out.column("k").to_pylist()]
    assert [_model_rank(k) for k in ks] == sorted(_model_rank(k) for k in ks)
    starts = group_starts(out, ["k"])
    distinct = {_model_rank(float(v)) for v in values}
    assert len(starts) == len(distinct)  # every NaN one key, -0.0 and 0.0 two
    seq_rank = [
        (0.0,) if s is None else (1.0, *_model_rank(s)) for s in out.column("s").to_pylist()
    ]
    ends = [*starts[1:], out.num_rows]
    for lo, hi in zip(starts, ends, strict=True):
        group = seq_rank[lo:hi]
        assert group == sorted(group)  # null lowest, NaN highest, -0.0 below 0.0


def test_key_statistics_and_filters_with_nan_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Key statistics bound float keys in Java's order (NaN the greatest, whatever slice it
    came in), and a filter never prunes a file by a NaN bound: ``k > 5`` finds 7.0."""
    monkeypatch.setattr(kv_writer, "_ROWS_PER_WRITE", 2)  # slices: [NaN, NaN], [-1, 7], …
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    schema = pa.schema([pa.field("k", pa.float64(), False), ("v", pa.int64())])
    table = catalog.create_table("db.t", schema=schema, primary_keys=["k"], options={"bucket": "1"})
    keys = [float("nan"), -1.0, 7.0, -0.0, 0.0]
    table.write(pa.table({"k": pa.array(keys), "v": pa.array(range(5), pa.int64())}))
    (entry,) = table.store.live_entries(table.store.latest_snapshot())
    stats = entry.file.key_stats
    lo = binary_row.deserialize(stats.min_values, [DataType.parse("DOUBLE")])[0]
    hi = binary_row.deserialize(stats.max_values, [DataType.parse("DOUBLE")])[0]
    assert lo == -1.0 and math.isnan(hi)
    # the written order: -1.0, -0.0, 0.0, 7.0, NaN
    assert _model_rank(lo) == min(_model_rank(k) for k in keys)
    got = table.read(filter=[("k", ">", 5.0)]).to_pylist()
    assert got == [{"k": 7.0, "v": 2}]
    zero = table.read(filter=[("k", "<", 0.0)]).to_pylist()
    assert zero == [{"k": -1.0, "v": 1}]
