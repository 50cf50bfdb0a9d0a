"""The Scan object (``table.scan(...)``) on both table kinds, against a plain model of the rows
written: a primary-key table keeps the last row of each key, an append table every row. A scan
is checked once, reads one snapshot every time, and the table's read methods are that scan."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakeops import AppendTable, Catalog, ConfigurationError, Scan, Table

SCHEMA = pa.schema([("dt", pa.string()), ("k", pa.int64()), ("v", pa.float64())])

#: what is written, batch by batch: (dt, k, v)
BATCHES = [
    [("a", 1, 1.0), ("a", 2, 2.0), ("b", 3, 3.0)],
    [("a", 1, 10.0), ("b", 4, None), ("c", 5, 5.0)],
    [("b", 3, -3.0), ("c", 6, 6.0)],
]

Row = tuple[Any, ...]


class Model:
    """The rows a table of ``kind`` holds after each batch: a primary-key table the last row of
    each (dt, k), an append table every row."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.states: list[list[Row]] = [[]]

    def add(self, batch: list[Row]) -> None:
        if self.kind == "append":
            self.states.append([*self.states[-1], *batch])
            return
        by_key = {(r[0], r[1]): r for r in self.states[-1]}
        by_key.update({(r[0], r[1]): r for r in batch})
        self.states.append(list(by_key.values()))

    def rows(
        self,
        snapshot: int = -1,
        columns: tuple[str, ...] = ("dt", "k", "v"),
        keep: Callable[[Row], bool] = lambda _r: True,
    ) -> list[Row]:
        at = ["dt", "k", "v"]
        picked = [tuple(r[at.index(c)] for c in columns) for r in self.states[snapshot] if keep(r)]
        return sorted(picked, key=repr)


def _rows(table: pa.Table, columns: tuple[str, ...] = ("dt", "k", "v")) -> list[Row]:
    assert tuple(table.column_names) == columns
    return sorted((tuple(r[c] for c in columns) for r in table.to_pylist()), key=repr)


def _batch(rows: list[Row]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, r, strict=True)) for r in rows], SCHEMA)


@pytest.fixture(params=["primary-key", "append"])
def written(request: pytest.FixtureRequest, catalog: Catalog) -> tuple[Table | AppendTable, Model]:
    kind = request.param
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["dt", "k"] if kind == "primary-key" else [],
        partition_keys=["dt"],
        options={"bucket": "2"} if kind == "primary-key" else {},
    )
    model = Model(kind)
    for batch in BATCHES:
        table.write(_batch(batch))
        model.add(batch)
    return table, model


def test_a_scan_reads_the_model_whole_streamed_and_handed_off(
    written: tuple[Table | AppendTable, Model],
) -> None:
    table, model = written
    scan = table.scan(columns=["k", "v"], filter=pc.field("v") > 1.5)
    want = model.rows(columns=("k", "v"), keep=lambda r: r[2] is not None and r[2] > 1.5)
    assert isinstance(scan, Scan) and scan.columns == ("k", "v")
    assert _rows(scan.read(), ("k", "v")) == want
    assert _rows(scan.read(parallelism=3), ("k", "v")) == want
    batches = list(scan.to_batches(batch_rows=1))
    assert all(b.num_rows == 1 for b in batches)
    assert _rows(pa.Table.from_batches(batches), ("k", "v")) == want
    reader = scan.to_arrow_batch_reader(parallelism=2)
    assert _rows(reader.read_all(), ("k", "v")) == want
    frame = scan.to_pandas()
    assert sorted(map(tuple, frame[["k", "v"]].itertuples(index=False)), key=repr) == want
    assert sorted(scan.to_polars().rows(), key=repr) == want
    for streaming in (False, True):
        relation = scan.to_duckdb(streaming=streaming)
        assert sorted(relation.fetchall(), key=repr) == want


def test_a_filter_in_parquet_form_and_every_column(
    written: tuple[Table | AppendTable, Model],
) -> None:
    table, model = written
    scan = table.scan(filter=[("dt", "=", "b")])
    assert scan.columns == ("dt", "k", "v")
    assert _rows(scan.read()) == model.rows(keep=lambda r: r[0] == "b")
    # the splits it reads: partition "b" only
    splits = scan.splits()
    assert splits and len({s.partition_bytes for s in splits}) == 1


def test_a_scan_reads_the_snapshot_it_was_made_on(
    written: tuple[Table | AppendTable, Model],
) -> None:
    table, model = written
    before = table.scan()
    assert before.snapshot is not None and before.snapshot.id == len(BATCHES)
    table.write(_batch([("a", 2, 20.0), ("d", 7, 7.0)]))
    model.add([("a", 2, 20.0), ("d", 7, 7.0)])
    assert _rows(before.read()) == model.rows(snapshot=len(BATCHES))
    assert _rows(before.to_arrow_batch_reader().read_all()) == model.rows(snapshot=len(BATCHES))
    assert _rows(table.scan().read()) == model.rows()


def test_time_travel_by_snapshot_tag_and_time(
    written: tuple[Table | AppendTable, Model],
) -> None:
    table, model = written
    first = table.snapshot(1)
    table.create_tag("t2", 2)
    assert _rows(table.scan(snapshot_id=1).read()) == model.rows(snapshot=1)
    assert _rows(table.scan(tag="t2").read()) == model.rows(snapshot=2)
    assert table.scan(as_of=first.time_millis).snapshot == first
    assert table.scan(as_of=first.time_millis - 1).read().num_rows == 0  # before any snapshot


def test_the_read_methods_are_the_scan(written: tuple[Table | AppendTable, Model]) -> None:
    table, _ = written
    args: dict[str, Any] = {"columns": ["v", "dt"], "filter": [("k", ">=", 2)], "snapshot_id": 2}
    scan = table.scan(**args)
    expected = _rows(scan.read(), ("v", "dt"))
    assert _rows(table.read(**args), ("v", "dt")) == expected
    assert _rows(table.read(parallelism=2, **args), ("v", "dt")) == expected
    streamed = pa.Table.from_batches(list(table.to_batches(batch_rows=2, **args)))
    assert _rows(streamed, ("v", "dt")) == expected
    assert _rows(table.to_arrow_batch_reader(**args).read_all(), ("v", "dt")) == expected
    assert len(table.to_pandas(**args)) == len(expected)
    assert len(table.to_polars(**args)) == len(expected)
    assert len(table.to_duckdb(streaming=True, **args).fetchall()) == len(expected)


def test_a_scan_is_checked_once_when_made(written: tuple[Table | AppendTable, Model]) -> None:
    table, _ = written
    with pytest.raises(ConfigurationError, match="unknown column"):
        table.scan(columns=["k", "nope"])
    with pytest.raises(ConfigurationError):
        table.scan(filter=pc.field("nope") > 1)
    with pytest.raises(ConfigurationError, match="one of snapshot_id, tag and as_of"):
        table.scan(snapshot_id=1, tag="t")
    with pytest.raises(TypeError):
        table.read(colums=["k"])  # type: ignore[call-arg]
    scan = table.scan()
    with pytest.raises(dataclasses.FrozenInstanceError):
        scan.columns = ("k",)  # type: ignore[misc]


def test_an_empty_table_scans_empty(catalog: Catalog) -> None:
    for name, keys in (("db.pk", ["k"]), ("db.ap", [])):
        table = catalog.create_table(name, schema=SCHEMA, primary_keys=keys)
        scan = table.scan(columns=["k"])
        assert scan.snapshot is None and scan.splits() == []
        assert scan.read().num_rows == 0 and scan.read().column_names == ["k"]
        assert list(scan.to_batches()) == []
