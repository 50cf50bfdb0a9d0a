"""The key lookup of :mod:`lakeops.changelog.lookup_cache`: which rows of a row group hold a
sought key, judged by a plain Python model (a set)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lakeops.changelog.lookup_cache import _semi_join


@pytest.mark.parametrize("type_", [pa.int64(), pa.int32(), pa.int8(), pa.uint16(), pa.string()])
@pytest.mark.parametrize("seed", range(4))
def test_rows_holding_a_sought_key(type_: pa.DataType, seed: int) -> None:
    rng = np.random.default_rng(seed)
    low, high = (0, 200) if pa.types.is_unsigned_integer(type_) else (-100, 100)
    table_keys = np.unique(rng.integers(low, high, rng.integers(0, 60)))
    sought = np.unique(rng.integers(low, high, rng.integers(0, 60)))
    rng.shuffle(sought)  # the sought keys need not be in order

    def arr(values: np.ndarray) -> pa.Array:
        if pa.types.is_string(type_):
            return pa.array([f"k{v}" for v in values], type_)
        return pa.array(values, pa.int64()).cast(type_)

    table = pa.table({"k": arr(table_keys), "v": pa.array(np.arange(len(table_keys)))})
    keys = pa.table({"k": arr(sought)})
    got = _semi_join(keys)(table)
    wanted = set(keys.column("k").to_pylist())
    expected = [r for r in table.to_pylist() if r["k"] in wanted]
    assert sorted(got.to_pylist(), key=lambda r: r["v"]) == expected  # (a join keeps no order)
