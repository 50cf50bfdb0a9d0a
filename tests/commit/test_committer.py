"""A static partition overwrite replaces only the partitions it lists, and refuses, as Paimon's
commit does, new files in any other partition: nothing is published and the table reads as
before (the plain model: the rows written so far)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog, DataValidationError

SCHEMA = pa.schema([("dt", pa.string()), ("k", pa.int64()), ("v", pa.string())])


def _rows(dts: list[str], start: int, v: str) -> pa.Table:
    return pa.table(
        {"dt": dts, "k": list(range(start, start + len(dts))), "v": [v] * len(dts)},
        schema=SCHEMA,
    )


def _bag(table: pa.Table) -> list[tuple[object, ...]]:
    return sorted(tuple(r.values()) for r in table.select(["dt", "k", "v"]).to_pylist())


def _data_files(root: str) -> set[str]:
    return {str(p) for p in Path(root).rglob("*.parquet")}


def test_a_primary_key_overwrite_with_rows_outside_its_partitions_is_refused(
    catalog: Catalog,
) -> None:
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["dt", "k"],
        partition_keys=["dt"],
        options={"bucket": "2"},
    )
    first = _rows(["a", "a", "b", "c"], 0, "old")
    table.write(first)
    snapshot, files = table.latest_snapshot(), _data_files(table.root)

    writer = table.new_write(overwrite=True)
    writer.write(_rows(["a", "b", "d"], 10, "new"))
    messages = writer.prepare_commit()
    with pytest.raises(DataValidationError, match=r"'dt=b', 'dt=d'.*nothing was committed"):
        table.commit(messages, overwrite=[{"dt": "a"}])
    writer.abort()
    assert table.latest_snapshot() == snapshot
    assert _data_files(table.root) == files
    assert _bag(table.read()) == _bag(first)

    # rows inside the listed partitions replace exactly those partitions
    new = _rows(["a", "b"], 20, "new")
    writer = table.new_write(overwrite=True)
    writer.write(new)
    table.commit(writer.prepare_commit(), overwrite=[{"dt": "a"}, {"dt": "b"}])
    assert table.latest_snapshot().commit_kind == "OVERWRITE"
    assert _bag(table.read()) == _bag(pa.concat_tables([new, first.slice(3)]))


def test_an_append_overwrite_with_rows_outside_its_partitions_is_refused(
    catalog: Catalog,
) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    first = _rows(["a", "b"], 0, "old")
    table.write(first)
    snapshot, files = table.latest_snapshot(), _data_files(table.root)
    with pytest.raises(DataValidationError, match=r"'dt=b'.*does not replace"):
        table.write(_rows(["a", "b"], 10, "new"), overwrite=[{"dt": "a"}])
    assert table.latest_snapshot() == snapshot
    assert _data_files(table.root) == files  # the refused write's files are gone
    assert _bag(table.read()) == _bag(first)
