"""Grouping of an append table's rows (``lakeops.write.append_write``): whatever the number of
partitions, every row lands in the file of its partition and bucket, each (partition, bucket)
holding its rows in input order under consecutive sequence numbers — judged against a plain
numpy model of the input, not against lakeops."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakeops import Catalog
from lakeops.table.append import AppendTable

SCHEMA = pa.schema([("p", pa.int32()), ("q", pa.string()), ("n", pa.int64()), ("s", pa.string())])


def data(seed: int, rows: int, partitions: int) -> pa.Table:
    """``n`` numbers the rows in input order; ``p`` and ``q`` are the partition columns."""
    rng = np.random.default_rng(seed)
    letters = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
    return pa.table(
        {
            "p": pa.array(rng.integers(0, partitions, rows, dtype=np.int32)),
            "q": pa.array(np.array(["x", "y"])[rng.integers(0, 2, rows)]),
            "n": pa.array(np.arange(seed * rows, (seed + 1) * rows, dtype=np.int64)),
            "s": pa.array(letters[rng.integers(0, 16, (rows, 12))].reshape(-1).view("S12")),
        },
        schema=SCHEMA,
    )


def files_by_directory(table: AppendTable) -> dict[tuple[str, str, str], list[dict[str, list]]]:
    """The rows of each data file, per (p, q, bucket) directory, in sequence order."""
    out: dict[tuple[str, str, str], list[tuple[int, dict[str, list]]]] = {}
    store = table.store
    for e in store.live_entries(store.latest_snapshot()):
        ctx = table.context
        path = ctx.locations.data_file(
            ctx.bucket_path(e.partition, e.bucket), e.file.file_name, e.file.external_path
        )
        parts = Path(path).parent.relative_to(table.root).parts
        p, q = (part.split("=", 1)[1] for part in parts[:2])
        rows = pq.read_table(path).to_pydict()
        assert e.file.max_sequence_number - e.file.min_sequence_number + 1 == len(rows["n"])
        out.setdefault((p, q, parts[2]), []).append((e.file.min_sequence_number, rows))
    return {k: [rows for _, rows in sorted(v, key=lambda x: x[0])] for k, v in out.items()}


@pytest.mark.parametrize("parallelism", [1, 2])
def test_rows_of_many_partitions_land_in_their_partition_in_input_order(
    catalog: Catalog, parallelism: int
) -> None:
    """Model: the rows of each (p, q), in input order, are the concatenation of its
    ``bucket-0`` files in sequence order (an unaware-bucket table), over two writes of 150
    partition pairs."""
    table = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["p", "q"])
    assert isinstance(table, AppendTable)
    inputs = [data(seed, 6000, 75) for seed in (1, 2)]
    for batch in inputs:
        table.write(batch, parallelism=parallelism)
    whole = pa.concat_tables(inputs)
    p, q = whole.column("p").to_numpy(), np.array(whole.column("q").to_pylist())
    n = whole.column("n").to_numpy()
    found = files_by_directory(table)
    expected_pairs = {(str(a), b) for a, b in zip(p.tolist(), q.tolist(), strict=True)}
    assert {(a, b) for a, b, _ in found} == expected_pairs
    assert {d for _, _, d in found} == {"bucket-0"}
    for (a, b, _), files in found.items():
        model = n[(p == int(a)) & (q == b)].tolist()
        assert [v for rows in files for v in rows["n"]] == model
        assert all(set(rows["p"]) == {int(a)} and set(rows["q"]) == {b} for rows in files)


def test_a_fixed_bucket_table_keeps_each_bucket_in_input_order(catalog: Catalog) -> None:
    """Model: in every partition, the buckets' rows together are the partition's rows (in
    input order once merged back by ``n``), each bucket's rows in input order, and a key
    (``s``) in one bucket only."""
    table = catalog.create_table(
        "db.t", schema=SCHEMA, partition_keys=["p"], options={"bucket": "3", "bucket-key": "s"}
    )
    batch = data(3, 8000, 40)
    table.write(batch, parallelism=2)
    p, n = batch.column("p").to_numpy(), batch.column("n").to_numpy()
    store = table.store
    per_partition: dict[str, list[int]] = {}
    bucket_of: dict[str, str] = {}
    for part in sorted(Path(table.root).glob("p=*")):
        for bucket in sorted(part.glob("bucket-*")):
            rows: dict[str, list] = {"n": [], "s": []}
            for f in sorted(bucket.glob("*.parquet")):
                t = pq.read_table(f).to_pydict()
                rows["n"] += t["n"]
                rows["s"] += t["s"]
            assert rows["n"] == sorted(rows["n"])  # (one file per bucket: input order)
            per_partition.setdefault(part.name, []).extend(rows["n"])
            for s in rows["s"]:
                assert bucket_of.setdefault(f"{part.name}/{s}", bucket.name) == bucket.name
    assert store.latest_snapshot() is not None
    for name, got in per_partition.items():
        assert sorted(got) == n[p == int(name.removeprefix("p="))].tolist()
    assert sum(len(v) for v in per_partition.values()) == batch.num_rows
