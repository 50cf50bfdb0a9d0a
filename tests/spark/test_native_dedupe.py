"""The native write path's driver-side deduplication (:mod:`lakeops.spark.native`): a staged
file sorted by key, a key's latest row first, keeps exactly the first row of every key, across
row groups and read batches, with its columns and Parquet types unchanged. Judged against a
plain model (a loop over Python lists); no Spark needed."""

from __future__ import annotations

import random
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakeops import Catalog
from lakeops.spark.native import _keep_latest, _repeated


def _model(keys: list[tuple[object, ...]]) -> list[int]:
    """Row indexes the deduplicate engine keeps: the first row of every run of equal keys."""
    return [i for i, k in enumerate(keys) if i == 0 or keys[i - 1] != k]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_first_row_of_every_key_is_kept_across_row_groups(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t",
        schema=pa.schema(
            [
                pa.field("k", pa.string(), False),
                pa.field("n", pa.int32(), False),
                ("amount", pa.decimal128(12, 2)),
            ]
        ),
        primary_keys=["k", "n"],
        options={"bucket": "1"},
    )
    keys = sorted((rng.choice("abc"), rng.randrange(40)) for _ in range(3000))
    amounts = [Decimal(rng.randrange(10**6)) / 100 for _ in keys]
    staged = pa.table(
        {
            "_KEY_k": [k for k, _ in keys],
            "_KEY_n": pa.array([n for _, n in keys], pa.int32()),
            "_SEQUENCE_NUMBER": pa.array(range(len(keys)), pa.int64()),
            "_VALUE_KIND": pa.array([0] * len(keys), pa.int8()),
            "k": [k for k, _ in keys],
            "n": pa.array([n for _, n in keys], pa.int32()),
            "amount": pa.array(amounts, pa.decimal128(12, 2)),
        }
    )
    path = str(tmp_path / "staged.parquet")
    # row groups (and read batches) of 257 rows: runs of one key cross their boundaries
    pq.write_table(staged, path, row_group_size=257, store_decimal_as_integer=True)

    repeated = _repeated(pq.read_table(path, columns=["_KEY_k", "_KEY_n"]), ["_KEY_k", "_KEY_n"])
    assert repeated.sum() > 0
    _keep_latest(path, ~repeated, table.schema)

    kept = pq.read_table(path)
    wanted = staged.take(pa.array(_model(keys)))
    assert kept.schema.equals(staged.schema)
    assert kept.to_pylist() == wanted.to_pylist()
    # the decimal keeps Paimon's physical type (INT64 for precision 12)
    column = pq.ParquetFile(path).metadata.schema.column(6)
    assert column.physical_type == "INT64"


def test_a_file_without_repeats_is_reported_clean() -> None:
    index = pa.table({"_KEY_id": pa.array([1, 2, 3, 5], pa.int64())})
    assert not _repeated(index, ["_KEY_id"]).any()
    assert not _repeated(index.slice(0, 1), ["_KEY_id"]).any()
    assert _repeated(index.slice(0, 0), ["_KEY_id"]).size == 0
