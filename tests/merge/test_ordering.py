"""``merged_order``: the indices of the records a picking engine keeps, judged by a plain model
(per key, the record with the greatest sequence number for deduplicate, the least for
first-row); None for an engine that computes its merged rows."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lakeops.format.kv import KIND, SEQ
from lakeops.format.schema import TableSchema
from lakeops.merge import create_merge_engine
from lakeops.merge.engine import DeduplicateEngine, MergeEngine
from lakeops.merge.ordering import merged_order
from lakeops.options import TableOptions


def _engine(name: str) -> MergeEngine:
    schema = TableSchema.from_arrow(
        pa.schema([("k", pa.int64()), ("v", pa.string())]),
        ["k"],
        [],
        {"bucket": "1", "merge-engine": name},
    )
    return create_merge_engine(TableOptions.from_schema(schema), schema)


def _records(rows: int, keys: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "_KEY_k": pa.array(rng.integers(0, keys, rows), pa.int64()),
            SEQ: pa.array(rng.permutation(rows), pa.int64()),
            KIND: pa.array(rng.integers(0, 4, rows), pa.int8()),
            "v": pa.array([f"{i:x}" for i in rng.integers(0, 1 << 40, rows)]),
        }
    )


def _model(records: pa.Table, last: bool) -> list[dict[str, object]]:
    kept: dict[int, dict[str, object]] = {}
    for row in records.to_pylist():
        old = kept.get(row["_KEY_k"])
        if old is None or (row[SEQ] > old[SEQ]) == last:
            kept[row["_KEY_k"]] = row
    return [kept[k] for k in sorted(kept)]


@pytest.mark.parametrize(("engine", "last"), [("deduplicate", True), ("first-row", False)])
@pytest.mark.parametrize(("rows", "keys"), [(1, 1), (500, 40), (2_000, 5_000)])
def test_the_kept_records_in_key_order(engine: str, last: bool, rows: int, keys: int) -> None:
    records = _records(rows, keys, seed=rows + keys)
    order = merged_order(records, ["_KEY_k"], _engine(engine))
    assert order is not None
    assert records.take(order).to_pylist() == _model(records, last)


def test_an_engine_that_computes_its_rows_gives_no_order() -> None:
    class Summing(DeduplicateEngine):
        def pick(self, _starts: np.ndarray, _rows: int) -> np.ndarray | None:  # type: ignore[override]
            return None

    records = _records(100, 10, seed=1)
    summing = Summing(_engine("deduplicate").options)
    assert merged_order(records, ["_KEY_k"], summing) is None
    distinct = _records(100, 10**9, seed=2)  # all keys distinct: the sorted order itself
    order = merged_order(distinct, ["_KEY_k"], summing)
    assert order is not None
    assert distinct.take(order).column("_KEY_k").to_pylist() == sorted(
        distinct.column("_KEY_k").to_pylist()
    )
