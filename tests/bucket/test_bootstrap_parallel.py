"""The cross-partition index bootstrap on several threads: for random upserts and deletes that
move keys between partitions (many partitions and dynamic buckets), the global index a writer
builds at parallelism 4 is exactly the one of parallelism 1 (same rows in the same order, same
per-bucket counts), and both equal a plain model read straight from the data files: every live
key at the (partition, bucket) whose newest record holds it. A failing split read fails the
write before anything is written."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakeops import Catalog, Table
from lakeops.bucket import cross_partition
from lakeops.errors import CorruptDataFileError
from lakeops.format.kv import KIND, SEQ, RowKind, key_column
from lakeops.write.records import to_records
from lakeops.write.router import Router

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.int64()), ("op", pa.string())])


def _table(catalog: Catalog) -> Table:
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["id"],
        partition_keys=["p"],
        options={"bucket": "-1", "rowkind.field": "op", "dynamic-bucket.target-row-num": "40"},
    )
    rng = random.Random(11)
    for _ in range(4):  # keys move between 5 partitions; some are deleted
        ids = rng.sample(range(500), 300)
        table.write(
            pa.table(
                {
                    "id": ids,
                    "p": [f"p{rng.randrange(5)}" for _ in ids],
                    "v": [rng.randrange(1000) for _ in ids],
                    "op": ["-D" if rng.random() < 0.1 else "+I" for _ in ids],
                },
                schema=SCHEMA,
            )
        )
    return table


def _model(table: Table) -> dict[int, tuple[str, int]]:
    """key -> (partition, bucket), from the Parquet files of every split: in each bucket the
    newest record of a key (highest sequence number) decides whether it lives there."""
    ctx = table.context
    out: dict[int, tuple[str, int]] = {}
    for split in table.splits():
        path = ctx.bucket_path(split.partition_bytes, split.bucket)
        rows = pa.concat_tables(
            pq.read_table(ctx.locations.data_file(path, f.file_name, f.external_path)).select(
                [key_column("id"), SEQ, KIND]
            )
            for f in split.files
        ).to_pylist()
        newest: dict[int, tuple[int, int]] = {}
        for r in rows:
            key = r[key_column("id")]
            if key not in newest or r[SEQ] > newest[key][0]:
                newest[key] = (r[SEQ], r[KIND])
        for key, (_, kind) in newest.items():
            if kind in (RowKind.INSERT, RowKind.UPDATE_AFTER):
                assert key not in out  # a key lives in one place
                out[key] = (split.partition[0], split.bucket)
    return out


def _index(table: Table, parallelism: int) -> Any:
    router = Router(table.context, table.latest_snapshot(), parallelism=parallelism)
    router.assign(to_records(SCHEMA.empty_table(), table.schema, table.options))
    return router._global_index


def test_bootstrap_is_the_same_at_every_parallelism(catalog: Catalog) -> None:
    table = _table(catalog)
    assert len(table.splits()) > 10
    serial, pooled = _index(table, 1), _index(table, 4)
    assert pooled.table.equals(serial.table)
    assert pooled.counts == serial.counts
    assert pooled._part_values == serial._part_values
    parts = serial._part_values
    got = {
        key: (parts[pid][0], bucket)
        for key, pid, bucket in zip(
            serial.table.column("id").to_pylist(),
            serial.table.column("__lakeops_part").to_pylist(),
            serial.table.column("__lakeops_bucket").to_pylist(),
            strict=True,
        )
    }
    assert len(got) == serial.table.num_rows  # no key twice
    assert got == _model(table)
    buckets = np.array([b for _, b in got.values()])
    assert len(np.unique(buckets)) > 1


def test_a_failing_split_read_fails_the_write_before_anything_is_written(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _table(catalog)
    before = table.latest_snapshot()
    real = cross_partition.split_keys

    def flaky(reader: Any, schema: Any, split: Any) -> pa.Table:
        if (split.partition, split.bucket) == (("p2",), 0):
            raise CorruptDataFileError("injected")
        return real(reader, schema, split)

    monkeypatch.setattr(cross_partition, "split_keys", flaky)
    batch = pa.table({"id": [1], "p": ["p9"], "v": [1], "op": ["+I"]}, schema=SCHEMA)
    with pytest.raises(CorruptDataFileError, match="injected"):
        table.write(batch)
    assert table.latest_snapshot() == before


def test_the_writer_knob_wins_over_the_table_option(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bootstrap reads ``parallelism`` splits at once; without it the table's
    ``cross-partition-upsert.bootstrap-parallelism``; without that the cores (None)."""
    seen: list[int | None] = []
    real = cross_partition.GlobalIndex.bootstrap

    def spy(self: Any, *args: Any, parallelism: int | None = None, **kw: Any) -> None:
        seen.append(parallelism)
        real(self, *args, parallelism=parallelism, **kw)

    monkeypatch.setattr(cross_partition.GlobalIndex, "bootstrap", spy)
    table = _table(catalog)
    _index(table, 3)
    Router(table.context, table.latest_snapshot()).assign(
        to_records(SCHEMA.empty_table(), table.schema, table.options)
    )
    from lakeops.format.schema_change import SetOption

    table.alter([SetOption("cross-partition-upsert.bootstrap-parallelism", "5")])
    again = catalog.get_table("db.t")
    Router(again.context, again.latest_snapshot()).assign(
        to_records(SCHEMA.empty_table(), again.schema, again.options)
    )
    assert seen == [None] * 4 + [3, None, 5]  # the 4 writes of _table, then the 3 routers
