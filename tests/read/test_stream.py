"""Streaming reads against a plain model: merged rows of random upserts and deletes, filtered by
random expressions, must equal pyarrow's own filter of the model table — whole, batch by
batch, at every parallelism — and the pruning must skip partitions, buckets and files."""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet
import pytest

from lakeops import Catalog, ConfigurationError
from lakeops.read import stream as stream_module
from lakeops.read.expression import Stats
from lakeops.read.predicate import row_filter
from tests.read.test_expression import random_expression

SCHEMA = pa.schema(
    [
        ("dt", pa.string()),
        ("i", pa.int64()),
        ("s", pa.string()),
        ("f", pa.float64()),
        ("d", pa.int32()),
        ("op", pa.string()),
    ]
)
COLUMNS = ["dt", "i", "s", "f", "d"]


def _random_rows(rng: random.Random, n: int) -> list[dict[str, Any]]:
    rows = []
    for _ in range(n):
        rows.append(
            {
                "dt": rng.choice(["a", "b", "c"]),
                "i": rng.randint(-2, 40),
                "s": rng.choice(["", "a", "ab", "abc", "b", "ba", "c"]),
                "f": rng.choice([None, -1.5, 0.0, 2.5, float("nan")]),
                "d": rng.choice([None, -2, 0, 1, 3, 7]),
                "op": "-D" if rng.random() < 0.1 else "+I",
            }
        )
    return rows


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, pa.Table]:
    """A fixed-bucket table after several overlapping commits (level-0 files, multi-run
    sections) and one compaction, and its model: the last write of each key, deletes
    removed."""
    warehouse = tmp_path_factory.mktemp("stream") / "wh"
    warehouse.mkdir()
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["dt", "i", "s"],
        partition_keys=["dt"],
        options={"bucket": "3", "bucket-key": "i", "rowkind.field": "op"},
    )
    rng = random.Random(11)
    model: dict[tuple[Any, ...], dict[str, Any] | None] = {}
    for commit in range(5):
        rows = _random_rows(rng, 150)
        last = {(r["dt"], r["i"], r["s"]): r for r in rows}  # one record per key per commit
        table.write(pa.Table.from_pylist(list(last.values()), schema=SCHEMA))
        for key, r in last.items():
            model[key] = None if r["op"] == "-D" else r
        if commit == 2:
            table.compact(full=True)
    live = [r for r in model.values() if r is not None]
    return table, pa.Table.from_pylist(live, schema=SCHEMA).select(COLUMNS)


def _sorted(t: pa.Table) -> list[dict[str, Any]]:
    rows = t.to_pylist()
    return sorted(rows, key=lambda r: repr(sorted(r.items())))


def _same(a: pa.Table, b: pa.Table) -> bool:
    # NaN != NaN: compare the rows' reprs
    return repr(_sorted(a)) == repr(_sorted(b))


def test_reads_equal_the_model(written: tuple[Any, pa.Table]) -> None:
    table, model = written
    assert len({len(s.files) for s in table.splits()}) >= 1
    assert _same(table.read(columns=COLUMNS), model)
    batches = list(table.to_batches(columns=COLUMNS, batch_rows=7, parallelism=2))
    assert batches and max(b.num_rows for b in batches) <= 7
    assert _same(pa.Table.from_batches(batches), model)
    reader = table.to_arrow_batch_reader(columns=["i", "s", "dt"], parallelism=1)
    assert reader.schema.names == ["i", "s", "dt"]
    assert _same(reader.read_all(), model.select(["i", "s", "dt"]))


@pytest.mark.parametrize("budget", [0, 10**9])
def test_whole_reads_stream_sections_above_the_budget(
    written: tuple[Any, pa.Table], budget: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``read`` merges a multi-run section whole up to ``WHOLE_SECTION_ROWS`` records and as a
    stream above it: the same rows either way, the model's."""
    table, model = written
    monkeypatch.setattr(stream_module, "WHOLE_SECTION_ROWS", budget)
    streamed: list[int] = []
    original = stream_module.merge_runs

    def counting(*args: Any, **kw: Any) -> Any:
        streamed.append(1)
        return original(*args, **kw)

    monkeypatch.setattr(stream_module, "merge_runs", counting)
    assert _same(table.read(columns=COLUMNS), model)
    assert bool(streamed) == (budget == 0)


def test_random_expressions_equal_pyarrows_filter_of_the_model(
    written: tuple[Any, pa.Table],
) -> None:
    table, model = written
    rng = random.Random(5)
    all_files = sum(len(s.files) for s in table.splits())
    pruned_some = 0
    for n in range(36):
        expr = random_expression(rng)
        if rng.random() < 0.3:
            expr = expr & (pc.field("dt") == rng.choice(["a", "b", "z"]))
        if rng.random() < 0.3:
            expr = expr & pc.field("i").isin([rng.randint(-2, 40) for _ in range(2)])
        want = model.filter(expr)
        if n % 2:
            got = table.read(filter=expr, columns=COLUMNS)
        else:
            streamed = table.to_batches(
                filter=expr, columns=COLUMNS, batch_rows=16, parallelism=rng.choice([1, 3])
            )
            got = pa.Table.from_batches(list(streamed), schema=table.arrow_schema.remove(5))
        assert _same(got, want), expr
        pruned_some += sum(len(s.files) for s in table.splits(filter=expr)) < all_files
    assert pruned_some > 5


def test_pruning_by_partition_bucket_and_key(written: tuple[Any, pa.Table]) -> None:
    table, model = written
    splits = table.splits()
    assert {s.partition for s in table.splits(filter=pc.field("dt") == "a")} == {("a",)}
    assert table.splits(filter=pc.field("dt").isin(["z"])) == []
    pinned = table.splits(filter=pc.field("i") == 5)
    assert len({s.bucket for s in pinned}) == 1 and len(pinned) < len(splits)
    assert _same(
        table.read(filter=pc.field("i") == 5, columns=COLUMNS), model.filter(pc.field("i") == 5)
    )
    negated = ~(pc.field("dt") == "a")
    assert ("a",) not in {s.partition for s in table.splits(filter=negated)}
    # a key range excludes files: fewer files than the whole table
    few = table.splits(filter=pc.field("i") > 38)
    assert sum(len(s.files) for s in few) < sum(len(s.files) for s in splits)


def test_row_groups_are_pruned_by_key_statistics(
    written: tuple[Any, pa.Table], monkeypatch: pytest.MonkeyPatch
) -> None:
    table, _ = written
    rf = row_filter(pc.field("i") > 30, table.arrow_schema)
    monkeypatch.setattr(stream_module, "ROW_GROUP_PRUNING_MIN_ROWS", 0)
    stream = stream_module.SplitStream(table.context, ["i"], rf, 100)
    ranges = [{"i": (0, 10)}, {"i": (20, 35)}, {"s": ("a", "b")}]
    monkeypatch.setattr(stream.files, "unit_key_ranges", lambda *a: ranges)
    (split,) = table.splits(filter=pc.field("dt") == "a")[:1]
    assert stream._units("dir", split.files[0]) == [1, 2]
    ranges[1] = {"i": (20, 25)}
    assert stream._units("dir", split.files[0]) == [2]
    assert rf is not None and not rf.may_hold({"i": Stats(0, 30, 0, None)})


def test_early_stop_and_bad_arguments(written: tuple[Any, pa.Table]) -> None:
    table, _ = written
    batches = table.to_batches(batch_rows=3, parallelism=4)
    first = next(batches)
    assert first.num_rows <= 3
    batches.close()  # the running sections stop and their threads are joined
    with pytest.raises(ConfigurationError, match="batch_rows"):
        table.read(filter=None, parallelism=1) and list(table.to_batches(batch_rows=0))
    with pytest.raises(ConfigurationError, match="parallelism"):
        table.to_batches(parallelism=0)
    with pytest.raises(ConfigurationError, match="cannot be applied"):
        table.read(filter=pc.field("nope") == 1)


def test_parquet_row_groups_are_skipped_by_their_key_statistics(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    schema = pa.schema([("id", pa.int64()), ("v", pa.int64())])
    table = catalog.create_table(
        "db.rg", schema=schema, primary_keys=["id"], options={"bucket": "1"}
    )
    n = 140_000  # three row groups of the writer's 65,536 rows
    table.write(
        pa.table({"id": pa.array(range(n), pa.int64()), "v": pa.array(range(n), pa.int64())})
    )
    (entry,) = table.store.live_entries(table.latest_snapshot())
    path = f"{table.root}/bucket-0/{entry.file.file_name}"
    assert pa.parquet.ParquetFile(path).metadata.num_row_groups == 3
    seen: list[Any] = []
    original = stream_module.KeyValueReader.iter_batches

    def spy(self: Any, directory: str, files: Any, cols: Any, rows: int, units: Any = None) -> Any:
        seen.append(units)
        return original(self, directory, files, cols, rows, units)

    monkeypatch.setattr(stream_module.KeyValueReader, "iter_batches", spy)
    expr = (pc.field("id") >= 132_000) & (pc.bit_wise_and(pc.field("v"), 1) == 0)
    got = table.read(filter=expr)
    assert seen == [[2]]
    assert sorted(got.column("id").to_pylist()) == list(range(132_000, n, 2))
    seen.clear()
    assert table.read(filter=pc.field("id") == -1).num_rows == 0
    assert seen == []  # the file's key statistics already excluded it
