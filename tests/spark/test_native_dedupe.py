"""The native write path's driver-side work on a staged file (:mod:`lakeops.spark.native`): a
file sorted by key, a key's rows in any order, keeps exactly the row of every key with the
highest sequence number, across row groups and read batches, with its columns and Parquet types
unchanged (judged against a plain model, a loop over Python lists); a file of several buckets,
or with keys out of order, fails the write. No Spark needed."""

from __future__ import annotations

import random
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakeops import Catalog
from lakeops.spark.native import _keep_latest, _latest, _repeated


def _model(keys: list[tuple[object, ...]], sequences: list[int]) -> list[int]:
    """Row indexes the deduplicate engine keeps: of every key, its row with the highest
    sequence number."""
    best: dict[tuple[object, ...], int] = {}
    for i, k in enumerate(keys):
        if k not in best or sequences[i] > sequences[best[k]]:
            best[k] = i
    return sorted(best.values())


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_highest_sequence_of_every_key_is_kept_across_row_groups(
    tmp_path: Path, seed: int
) -> None:
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
    # the rows numbered in the DataFrame's order: within a key, in no order
    sequences = list(range(1000, 1000 + len(keys)))
    rng.shuffle(sequences)
    staged = pa.table(
        {
            "_KEY_k": [k for k, _ in keys],
            "_KEY_n": pa.array([n for _, n in keys], pa.int32()),
            "_SEQUENCE_NUMBER": pa.array(sequences, pa.int64()),
            "_VALUE_KIND": pa.array([0] * len(keys), pa.int8()),
            "k": [k for k, _ in keys],
            "n": pa.array([n for _, n in keys], pa.int32()),
            "amount": pa.array(amounts, pa.decimal128(12, 2)),
        }
    )
    path = str(tmp_path / "staged.parquet")
    # row groups (and read batches) of 257 rows: runs of one key cross their boundaries
    pq.write_table(staged, path, row_group_size=257, store_decimal_as_integer=True)

    index = pq.read_table(path, columns=["_KEY_k", "_KEY_n", "_SEQUENCE_NUMBER"])
    keep = _latest(index, ["_KEY_k", "_KEY_n"])
    assert not keep.all()
    _keep_latest(path, keep, table.schema)

    kept = pq.read_table(path)
    wanted = staged.take(pa.array(_model(keys, sequences)))
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
    assert _latest(index, ["_KEY_id"]).all()


def test_one_row_of_a_key_is_kept_were_two_numbered_alike() -> None:
    index = pa.table(
        {
            "_KEY_id": pa.array([1, 1, 1, 2, 2], pa.int64()),
            "_SEQUENCE_NUMBER": pa.array([7, 9, 9, 4, 3], pa.int64()),
        }
    )
    assert _latest(index, ["_KEY_id"]).tolist() == [False, True, False, True, False]


def _staged(path: str, ids: list[int]) -> None:
    n = len(ids)
    pq.write_table(
        pa.table(
            {
                "_KEY_id": pa.array(ids, pa.int64()),
                "_SEQUENCE_NUMBER": pa.array(range(n), pa.int64()),
                "_VALUE_KIND": pa.array([0] * n, pa.int8()),
                "id": pa.array(ids, pa.int64()),
                "v": pa.array(range(n), pa.int64()),
            }
        ),
        path,
    )


def test_a_file_of_several_buckets_or_out_of_order_keys_is_refused(tmp_path: Path) -> None:
    """The driver's checks of a staged file: every row in the file's bucket by Paimon's hash,
    and keys ascending; a file that breaks either fails the write."""
    from lakeops.errors import LakeopsError
    from lakeops.format.bucket_hash import assign_buckets
    from lakeops.spark.native import _describe

    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t",
        schema=pa.schema([pa.field("id", pa.int64(), False), ("v", pa.int64())]),
        primary_keys=["id"],
        options={"bucket": "2"},
    )
    ids = list(range(40))
    buckets = assign_buckets([pa.array(ids, pa.int64())], table.schema.types_of(["id"]), 2)
    zero = [i for i, b in zip(ids, buckets.tolist(), strict=True) if b == 0]
    one = [i for i, b in zip(ids, buckets.tolist(), strict=True) if b == 1]

    good = str(tmp_path / "good.parquet")
    _staged(good, zero)
    described = _describe(good, table)
    assert described is not None and described[1] == 0 and described[2].row_count == len(zero)

    mixed = str(tmp_path / "mixed.parquet")
    _staged(mixed, sorted(zero[:3] + one[:3]))
    with pytest.raises(LakeopsError, match="several buckets"):
        _describe(mixed, table)

    backwards = str(tmp_path / "backwards.parquet")
    _staged(backwards, list(reversed(zero)))
    with pytest.raises(LakeopsError, match="not in ascending order"):
        _describe(backwards, table)
