"""AppendTable against a plain model: every row written is a row of the table."""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import json
import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from lakeops import AppendTable, Catalog, ConfigurationError, UnsupportedFeatureError
from lakeops.format.schema_change import AddColumn
from lakeops.format.types import DataType
from lakeops.table import primary_key_table

SCHEMA = pa.schema([("dt", pa.string()), ("k", pa.int64()), ("v", pa.string())])

#: every type an append table stores, with awkward values
TYPES = pa.schema(
    [
        ("b", pa.bool_()),
        ("i8", pa.int8()),
        ("i16", pa.int16()),
        ("i32", pa.int32()),
        ("i64", pa.int64()),
        ("f32", pa.float32()),
        ("f64", pa.float64()),
        ("dec", pa.decimal128(20, 4)),
        ("s", pa.string()),
        ("bin", pa.binary()),
        ("d", pa.date32()),
        ("ts3", pa.timestamp("ms")),
        ("ts6", pa.timestamp("us")),
        ("arr", pa.list_(pa.int32())),
        ("m", pa.map_(pa.string(), pa.int64())),
        ("row", pa.struct([("x", pa.int32()), ("y", pa.string())])),
    ]
)


def _types_data() -> pa.Table:
    return pa.table(
        {
            "b": [True, None, False],
            "i8": [-128, 127, None],
            "i16": [-(2**15), None, 2**15 - 1],
            "i32": [None, -(2**31), 2**31 - 1],
            "i64": [-(2**63), 2**63 - 1, None],
            "f32": [math.nan, -0.0, None],
            "f64": [math.inf, -0.0, math.nan],
            "dec": [decimal.Decimal("-9999999999999999.9999"), None, decimal.Decimal("0.0001")],
            "s": ["", "日本 é😀", None],
            "bin": [b"", None, b"\x00\xff"],
            "d": [dt.date(1, 1, 1), dt.date(9999, 12, 31), None],
            "ts3": [dt.datetime(1900, 1, 1, 0, 0, 0, 1000), None, dt.datetime(2100, 1, 1)],
            "ts6": [None, dt.datetime(1969, 12, 31, 23, 59, 59, 999000), dt.datetime(2024, 1, 1)],
            "arr": [[1, None], [], None],
            "m": [[("a", 1)], None, []],
            "row": [{"x": 1, "y": None}, None, {"x": None, "y": "z"}],
        },
        schema=TYPES,
    )


def _canon(value: Any) -> Any:
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if value == 0.0:
            return f"{math.copysign(1.0, value)}*0"
    if isinstance(value, list):
        return tuple(_canon(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _canon(v)) for k, v in value.items()))
    return value


def _rows(table: pa.Table) -> list[tuple[Any, ...]]:
    """The rows as comparable tuples, in order."""
    cols = [table.column(i).to_pylist() for i in range(table.num_columns)]
    return [tuple(_canon(v) for v in row) for row in zip(*cols, strict=True)]


def _bag(table: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(_rows(table), key=repr)


def _batch(seed: int, n: int = 5) -> pa.Table:
    return pa.table(
        {
            "dt": [["a", "b", None][(seed + j) % 3] for j in range(n)],
            "k": [seed * 100 + j for j in range(n)],
            "v": [None if j == 1 else f"v{seed}-{j}" for j in range(n)],
        },
        schema=SCHEMA,
    )


def test_create_makes_an_append_table_in_paimons_layout(catalog: Catalog, warehouse: Path) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    assert isinstance(table, AppendTable)
    assert isinstance(catalog.get_table("db.t"), AppendTable)
    table.write(_batch(0))
    root = warehouse / "db.db" / "t"
    files = sorted(p.relative_to(root).as_posix() for p in root.glob("dt=*/bucket-*/*"))
    assert {f.split("/")[1] for f in files} == {"bucket-0"}
    assert {f.split("/")[0] for f in files} == {"dt=a", "dt=b", "dt=__DEFAULT_PARTITION__"}
    # the files hold the value columns only
    assert pq.read_schema(next(root.glob("dt=a/bucket-0/*.parquet"))).names == ["dt", "k", "v"]
    entry = table.store.live_entries(table.latest_snapshot())[0]
    assert entry.total_buckets == -1 and entry.file.level == 0
    assert entry.file.min_key == entry.file.max_key == bytes(12)
    assert entry.file.max_sequence_number - entry.file.min_sequence_number + 1 == (
        entry.file.row_count
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"bucket": "2"}, "needs option 'bucket-key'"),
        ({"bucket-key": "k"}, "cannot be used with bucket = -1"),
        ({"bucket": "2", "bucket-key": "dt"}, "is a partition column"),
        ({"bucket": "2", "bucket-key": "nope"}, "unknown column 'nope'"),
    ],
)
def test_bucket_options_are_validated_before_anything_is_written(
    catalog: Catalog, warehouse: Path, options: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"], options=options)
    assert not (warehouse / "db.db" / "t").exists()


@pytest.mark.parametrize("fmt", ["parquet", "orc", "avro"])
def test_every_type_round_trips_in_every_format(catalog: Catalog, fmt: str) -> None:
    table = catalog.create_table("db.t", schema=TYPES, options={"file.format": fmt})
    data = _types_data()
    table.write(data)
    table.write(data.slice(1))
    got = table.read()
    assert got.schema == table.arrow_schema
    assert _bag(got) == _bag(pa.concat_tables([data, data.slice(1)]).cast(table.arrow_schema))
    files = [f.file_name for s in table.splits() for f in s.files]
    assert files and all(name.endswith("." + fmt) for name in files)


@pytest.mark.parametrize(
    ("part_type", "values"),
    [
        (pa.int32(), [-(2**31), 0, None]),
        (pa.date32(), [dt.date(1970, 1, 1), dt.date(2024, 2, 29), None]),
        (pa.string(), ["x/y", "日本", ""]),
        (pa.bool_(), [True, False, None]),
    ],
)
def test_partitions_of_every_type(catalog: Catalog, part_type: pa.DataType, values: list) -> None:
    schema = pa.schema([("p", part_type), ("k", pa.int64())])
    table = catalog.create_table("db.t", schema=schema, partition_keys=["p"])
    data = pa.table({"p": values * 2, "k": list(range(6))}, schema=schema)
    table.write(data)
    assert _bag(table.read()) == _bag(data)
    for v in values:
        flt = pc.field("p").is_null() if v is None else pc.field("p") == v
        assert _bag(table.read(filter=flt)) == _bag(data.filter(flt))
        assert len(table.splits(filter=flt)) == 1


def test_a_fixed_bucket_keeps_the_order_rows_were_written(catalog: Catalog) -> None:
    """One bucket: the table read is every commit's rows, in commit and input order, also
    after compactions (which never reorder a fixed bucket)."""
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        options={"bucket": "1", "bucket-key": "k", "compaction.max.file-num": "2"},
    )
    batches = [_batch(s) for s in range(6)]
    for b in batches[:4]:
        table.write(b)
    model = pa.concat_tables(batches[:4])
    assert _rows(table.read()) == _rows(model)
    assert table.compact() is not None  # windows of two files
    assert _rows(table.read()) == _rows(model)
    for b in batches[4:]:
        table.write(b)
    assert table.compact(full=True) is not None
    assert _rows(table.read()) == _rows(pa.concat_tables(batches))
    assert len(table.splits()[0].files) == 1
    assert _rows(pa.Table.from_batches(list(table.to_batches(batch_rows=4)))) == _rows(
        pa.concat_tables(batches)
    )


def test_a_filter_pinning_the_bucket_key_reads_one_bucket(catalog: Catalog) -> None:
    table = catalog.create_table(
        "db.t", schema=SCHEMA, partition_keys=["dt"], options={"bucket": "4", "bucket-key": "k"}
    )
    data = pa.concat_tables([_batch(s, 40) for s in range(3)])
    table.write(data)
    assert {s.bucket for s in table.splits()} == {0, 1, 2, 3}
    for k in (0, 101, 239):
        pinned = table.splits(filter=pc.field("k") == k)
        assert len({s.bucket for s in pinned}) == 1
        assert _bag(table.read(filter=pc.field("k") == k)) == _bag(data.filter(pc.field("k") == k))
    assert _bag(table.read()) == _bag(data)


def test_projection_filters_and_streams(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    data = pa.concat_tables([_batch(s, 20) for s in range(3)])
    for s in range(3):
        table.write(_batch(s, 20))
    flt = pc.field("k").isin(list(range(0, 300, 3))) & pc.field("v").is_valid()
    want = data.filter(flt).select(["v"])
    assert _bag(table.read(columns=["v"], filter=flt)) == _bag(want)
    dnf = [("k", ">=", 110), ("dt", "=", "a")]
    want_dnf = data.filter((pc.field("k") >= 110) & (pc.field("dt") == "a"))
    assert _bag(table.read(filter=dnf)) == _bag(want_dnf)
    reader = table.to_arrow_batch_reader(columns=["k", "v"], filter=flt, batch_rows=7)
    streamed = reader.read_all()
    assert streamed.column_names == ["k", "v"]
    assert _bag(streamed.select(["v"])) == _bag(want)
    assert all(b.num_rows <= 7 for b in table.to_batches(batch_rows=7))
    with pytest.raises(ConfigurationError, match="unknown column"):
        table.read(columns=["nope"])


def test_time_travel_and_tags(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    s1 = table.write(_batch(1))
    table.create_tag("t1")
    table.write(_batch(2))
    assert s1 is not None
    assert _bag(table.read(snapshot_id=s1.id)) == _bag(_batch(1))
    assert _bag(table.read(tag="t1")) == _bag(_batch(1))
    assert _bag(table.read(as_of=s1.time_millis)) == _bag(_batch(1))
    assert _bag(table.read()) == _bag(pa.concat_tables([_batch(1), _batch(2)]))


def test_read_changes_are_the_appended_rows(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    for s in range(3):
        table.write(_batch(s))
    table.compact(full=True)  # a COMPACT snapshot adds no change
    table.write(_batch(3))
    changes = table.read_changes(1)
    assert changes.column_names == ["_row_kind", "dt", "k", "v"]
    assert set(changes.column("_row_kind").to_pylist()) == {"+I"}
    model = pa.concat_tables([_batch(s) for s in (1, 2, 3)])
    assert _bag(changes.drop_columns(["_row_kind"])) == _bag(model)
    assert _bag(table.read_changes(0, 1, columns=["k"]).drop_columns(["_row_kind"])) == _bag(
        _batch(0).select(["k"])
    )
    table.write(_batch(4), overwrite=True)
    with pytest.raises(UnsupportedFeatureError, match="OVERWRITE"):
        table.read_changes(0)


def test_overwrite_of_the_table_and_of_partitions(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    table.write(_batch(0, 9))
    replacement = _batch(1, 3).filter(pc.field("dt") == "a")
    snapshot = table.write(replacement, overwrite=[{"dt": "a"}])
    assert snapshot is not None and snapshot.commit_kind == "OVERWRITE"
    model = pa.concat_tables([_batch(0, 9).filter(pc.field("dt") != "a"), replacement])
    model = pa.concat_tables([model, _batch(0, 9).filter(pc.field("dt").is_null())])
    assert _bag(table.read()) == _bag(model)
    table.write(_batch(2), overwrite=True)
    assert _bag(table.read()) == _bag(_batch(2))


def test_rolling_at_target_file_size(catalog: Catalog) -> None:
    table = catalog.create_table(
        "db.t", schema=SCHEMA, options={"target-file-size": "1 b", "write-buffer-size": "1 mb"}
    )
    data = _batch(0, 140_000)
    table.write(data)
    files = table.splits()[0].files
    assert len(files) > 1
    seqs = sorted((f.min_sequence_number, f.max_sequence_number) for f in files)
    assert seqs[0][0] == 0 and seqs[-1][1] == data.num_rows - 1
    assert all(a[1] + 1 == b[0] for a, b in itertools.pairwise(seqs))
    assert _rows(table.read()) == _rows(data)


def test_maintenance_works_on_append_tables(catalog: Catalog, warehouse: Path) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    for s in range(4):
        table.write(_batch(s))
    table.create_tag("two", 2)
    assert table.compact(full=True) is not None
    model = pa.concat_tables([_batch(s) for s in range(4)])
    assert table.check().ok
    result = table.expire_snapshots(retain_min=1, retain_max=1)
    assert result is not None
    assert [s.id for s in table.snapshots()] == [5]
    assert _bag(table.read()) == _bag(model)
    assert _bag(table.read(tag="two")) == _bag(pa.concat_tables([_batch(0), _batch(1)]))
    orphan = warehouse / "db.db" / "t" / "bucket-0" / "data-orphan.parquet"
    orphan.write_bytes(b"x")
    removed = table.remove_orphan_files(older_than=dt.timedelta(0), force=True)
    assert not orphan.exists() and removed is not None
    assert _bag(table.read()) == _bag(model)
    rolled = table.rollback_to(tag="two")
    assert rolled is not None
    assert _bag(table.read()) == _bag(pa.concat_tables([_batch(0), _batch(1)]))
    assert table.check().ok
    assert table.commit_stats().snapshot_id == rolled.id


def test_two_phase_write_and_abort(catalog: Catalog, warehouse: Path) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    writer = table.new_write()
    writer.write(_batch(0))
    writer.write([_batch(1).to_batches()[0]])
    messages = writer.prepare_commit()
    assert table.commit(messages) is not None
    assert _bag(table.read()) == _bag(pa.concat_tables([_batch(0), _batch(1)]))
    aborted = table.new_write()
    aborted.write(_batch(2))
    aborted.flush()
    aborted.abort()
    live = {f.file_name for s in table.splits() for f in s.files}
    on_disk = {p.name for p in (warehouse / "db.db" / "t").glob("dt=*/bucket-0/*")}
    assert on_disk == live


def test_bad_rows_write_nothing(catalog: Catalog, warehouse: Path) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    with pytest.raises(Exception, match="missing column"):
        table.write(pa.table({"k": [1]}))
    assert table.latest_snapshot() is None
    assert not list((warehouse / "db.db" / "t").glob("bucket-*/*"))


def _set_options(warehouse: Path, options: dict[str, str]) -> None:
    schema_file = warehouse / "db.db" / "t" / "schema" / "schema-0"
    doc = json.loads(schema_file.read_text())
    doc["options"].update(options)
    schema_file.write_text(json.dumps(doc))


def test_data_evolution_tables_are_written_altered_and_compacted(
    catalog: Catalog, warehouse: Path
) -> None:
    """A file written before row tracking was switched on has no row ids: it is read, never
    compacted (its rows have no ids to keep)."""
    catalog.create_table("db.t", schema=SCHEMA).write(_batch(0))
    _set_options(warehouse, {"row-tracking.enabled": "true", "data-evolution.enabled": "true"})
    table = catalog.get_table("db.t")
    assert _bag(table.read()) == _bag(_batch(0))
    table.write(_batch(1))
    assert _bag(table.read()) == _bag(pa.concat_tables([_batch(0), _batch(1)]))
    assert table.compact(full=True) is None
    table.write(_batch(2))
    assert table.compact(full=True) is not None  # the two files with ids
    want = _bag(pa.concat_tables([_batch(0), _batch(1), _batch(2)]))
    assert _bag(table.read()) == want and len(table.snapshots()) == 4
    table.alter(AddColumn("x", DataType.parse("INT")))  # files keep their own columns
    got = catalog.get_table("db.t").read()
    assert got.column("x").null_count == got.num_rows == 15


def test_row_tracking_tables_are_written_and_compacted_keeping_row_ids(catalog: Catalog) -> None:
    """Row ids follow the commits (from the snapshot's nextRowId), sequence numbers are the
    snapshot ids; a full compaction merges the files whose row ids follow one another (the
    partitions' rows interleave: commit 2's rows of partition a follow commit 1's of b) and
    every row keeps its id and sequence number."""
    table = catalog.create_table(
        "db.t", schema=SCHEMA, partition_keys=["dt"], options={"row-tracking.enabled": "true"}
    )
    table.write(_batch(0))
    table.write(_batch(1, n=3))
    got = {r["k"]: r for r in table.read(columns=["k", "_ROW_ID", "_SEQUENCE_NUMBER"]).to_pylist()}
    # the model: commit i's rows hold ids [start, start + n) and sequence number i; each
    # partition's rows (one file) hold consecutive ids in the order they were written
    start = 0
    for snapshot, batch in enumerate((_batch(0), _batch(1, n=3)), start=1):
        rows = batch.to_pylist()
        ids = [got[r["k"]]["_ROW_ID"] for r in rows]
        assert sorted(ids) == list(range(start, start + len(rows)))
        assert {got[r["k"]]["_SEQUENCE_NUMBER"] for r in rows} == {snapshot}
        for part in {r["dt"] for r in rows}:
            mine = [got[r["k"]]["_ROW_ID"] for r in rows if r["dt"] == part]
            assert mine == list(range(mine[0], mine[0] + len(mine)))
        start += len(rows)
    assert [s.next_row_id for s in table.snapshots()] == [5, 8]
    table.write(_batch(2, n=2))
    before = table.read(columns=["k", "_ROW_ID", "_SEQUENCE_NUMBER"]).sort_by("k")
    table.compact(full=True)
    assert table.read(columns=["k", "_ROW_ID", "_SEQUENCE_NUMBER"]).sort_by("k") == before


def test_row_tracking_compaction_merges_files_whose_row_ids_follow(catalog: Catalog) -> None:
    """Unpartitioned, three commits' files hold ids [0, 5), [5, 8), [8, 10): one file after a
    full compaction, first row id 0, holding ``_ROW_ID`` and ``_SEQUENCE_NUMBER`` (its
    sequence range theirs); every row keeps its id and sequence number (the model: commit
    ``i``'s rows, in order, hold the next ids and sequence number ``i``)."""
    table = catalog.create_table("db.t", schema=SCHEMA, options={"row-tracking.enabled": "true"})
    batches = [_batch(0), _batch(1, n=3), _batch(2, n=2)]
    for b in batches:
        table.write(b)
    want = []
    start = 0
    for snapshot, b in enumerate(batches, start=1):
        for j, k in enumerate(b.column("k").to_pylist()):
            want.append({"k": k, "_ROW_ID": start + j, "_SEQUENCE_NUMBER": snapshot})
        start += b.num_rows
    assert table.compact(full=True) is not None
    (entry,) = table.store.live_entries(table.latest_snapshot())
    f = entry.file
    assert (f.first_row_id, f.row_count) == (0, 10)
    assert (f.min_sequence_number, f.max_sequence_number) == (1, 3)
    assert f.write_cols == ("dt", "k", "v", "_ROW_ID", "_SEQUENCE_NUMBER")
    got = table.read(columns=["k", "_ROW_ID", "_SEQUENCE_NUMBER"]).to_pylist()
    assert sorted(got, key=lambda r: r["_ROW_ID"]) == want
    assert table.read(columns=["dt", "k", "v"]).sort_by("k") == pa.concat_tables(batches).sort_by(
        "k"
    )
    # its statistics (of the table's fields) prune it; a filter it may hold keeps it
    assert table.read(filter=[("k", ">", 10_000)]).num_rows == 0
    assert table.read(filter=[("k", ">=", 100)]).num_rows == 5


def test_row_tracking_needs_bucket_unaware_append_tables(catalog: Catalog) -> None:
    """Paimon's SchemaValidation: no primary key, bucket = -1, data evolution with it."""
    cases = [
        ({"row-tracking.enabled": "true", "bucket": "2", "bucket-key": "k"}, "bucket = -1"),
        ({"data-evolution.enabled": "true"}, "row-tracking.enabled"),
    ]
    for options, match in cases:
        with pytest.raises(ConfigurationError, match=match):
            catalog.create_table("db.t", schema=SCHEMA, options=options)
    with pytest.raises(ConfigurationError, match="primary key"):
        catalog.create_table(
            "db.t", schema=SCHEMA, primary_keys=["k"], options={"row-tracking.enabled": "true"}
        )


def test_options_that_change_reads_are_refused(catalog: Catalog, warehouse: Path) -> None:
    catalog.create_table("db.t", schema=SCHEMA).write(_batch(0))
    _set_options(warehouse, {"fields.v.default-value": "x"})
    with pytest.raises(UnsupportedFeatureError, match="default-value"):
        catalog.get_table("db.t").read()


def test_split_reader_reads_each_split(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    table.write(_batch(0, 9))
    table.write(_batch(1, 9))
    reader = table.split_reader()
    splits = table.splits()
    assert len(splits) == 3
    parts = [reader.read(s, ["k", "dt"]) for s in splits]
    assert all(p.column_names == ["k", "dt"] for p in parts)
    model = pa.concat_tables([_batch(0, 9), _batch(1, 9)]).select(["k", "dt"])
    assert _bag(pa.concat_tables(parts)) == _bag(model)


def test_primary_key_methods_are_absent_and_refused_by_name(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA)
    table.write(_batch(0))
    for method in ("health", "lookup", "flush_level0"):
        # a type checker, not a run-time refusal, tells a user an append table has none
        assert not hasattr(table, method)
        # callers that take either kind (CLI, Airflow, Spark) refuse it by name
        with pytest.raises(UnsupportedFeatureError, match=f"{method} is for primary-key tables"):
            primary_key_table(table, method)
    assert len(table.snapshots()) == 1


def test_compaction_reports_progress(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    for s in range(3):
        table.write(_batch(s, 9))
    seen: list[Any] = []
    assert table.compact(full=True, progress=seen.append) is not None
    assert seen[0].buckets_done == 0 and seen[-1].buckets_done == seen[-1].buckets == 3
    assert seen[-1].files_done == seen[-1].files == 9
    assert seen[-1].bytes_done == seen[-1].bytes > 0
    assert _bag(table.read()) == _bag(pa.concat_tables([_batch(s, 9) for s in range(3)]))


def _add_vectors(table: AppendTable, deletes: dict[str, list[int]]) -> None:
    """Commit deletion vectors (positions per data file name) in one new index file per
    partition, as Paimon's DELETE of an unaware-bucket table does (a COMPACT snapshot with
    index changes only). Blobs are built by the test model of Paimon's layout."""
    from lakeops.commit.committer import Committer
    from lakeops.format.deletion_vector import DeletionFile, encode_index_file
    from lakeops.format.index_manifest import IndexFileMeta, IndexManifestEntry
    from lakeops.format.manifest import FileKind
    from lakeops.format.snapshot import CommitKind
    from tests.format.test_deletion_vector import blob32

    by_part: dict[bytes, list[tuple[str, bytes, DeletionFile]]] = {}
    for e in table.store.live_entries(table.latest_snapshot()):
        if e.file.file_name in deletes:
            b = blob32(deletes[e.file.file_name])
            df = DeletionFile("", 0, len(b) - 8)
            by_part.setdefault(e.partition, []).append((e.file.file_name, b, df))
    changes = []
    for part, blobs in by_part.items():
        content, ranges = encode_index_file(blobs)
        new = table.context.locations.new_index_file(part, 0)
        table.file_io.mkdirs(new.path.rsplit("/", 1)[0])
        table.file_io.write_bytes(new.path, content)
        extra = (("_DELETIONS_VECTORS_RANGES", ranges),)
        meta = IndexFileMeta("DELETION_VECTORS", new.name, len(content), len(ranges), extra)
        changes.append(IndexManifestEntry(FileKind.ADD, part, 0, meta))
    Committer(table.context).commit_entries([], CommitKind.COMPACT, index_changes=changes)


def _model_without(table: AppendTable, deletes: dict[str, list[int]]) -> pa.Table:
    """The plain model: every data file read with pyarrow, minus the deleted positions."""
    parts = []
    for split in table.splits():
        directory = table.context.bucket_path(split.partition_bytes, split.bucket)
        for f in split.files:
            rows = pq.read_table(f"{directory}/{f.file_name}").select(["dt", "k", "v"])
            keep = [i not in deletes.get(f.file_name, []) for i in range(rows.num_rows)]
            parts.append(rows.filter(pa.array(keep)))
    return pa.concat_tables(parts)


def test_deletion_vectors_are_applied_and_compaction_retires_them(catalog: Catalog) -> None:
    """Vectors drop their rows from every read; a compaction writes the rows without them and
    retires the vectors; a vector committed while a compaction ran makes it conflict."""
    from lakeops.compact.append import plan
    from lakeops.errors import CommitConflictError
    from lakeops.format.deletion_vector import deletion_files

    options = {"deletion-vectors.enabled": "true"}
    table = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"], options=options)
    table.write(_batch(0, 9))
    table.write(_batch(1, 9))
    files = sorted(e.file.file_name for e in table.store.live_entries(table.latest_snapshot()))
    first = {files[0]: [0, 2], files[1]: [1]}
    everything = _model_without(table, {})
    _add_vectors(table, first)
    model = _model_without(table, first)
    assert model.num_rows == everything.num_rows - 3
    assert _bag(table.read()) == _bag(model)
    assert _bag(pa.Table.from_batches(list(table.to_batches(batch_rows=2)))) == _bag(model)
    assert _bag(table.read(filter=pc.field("k") >= 100)) == _bag(model.filter(pc.field("k") >= 100))
    assert _bag(table.read(snapshot_id=2)) == _bag(everything)
    assert _bag(table.metadata_table("audit_log").drop_columns(["rowkind"])) == _bag(model)
    with pytest.raises(UnsupportedFeatureError, match="deletion vectors"):
        table.read_changes(0)

    # overwriting a partition drops its files and their vectors; the others' stay
    spare = catalog.create_table("db.o", schema=SCHEMA, partition_keys=["dt"], options=options)
    spare.write(_batch(0, 9))
    names = sorted(e.file.file_name for e in spare.store.live_entries(spare.latest_snapshot()))
    _add_vectors(spare, {n: [0] for n in names})
    not_a = (pc.field("dt") != "a") | pc.field("dt").is_null()
    kept = _model_without(spare, {n: [0] for n in names}).filter(not_a)
    new_a = pa.table({"dt": ["a"], "k": [7], "v": ["new"]}, schema=SCHEMA)
    spare.write(new_a, overwrite=[{"dt": "a"}])
    assert _bag(spare.read()) == _bag(pa.concat_tables([kept, new_a]))
    vectors = deletion_files(spare.store.index_entries(spare.latest_snapshot()))
    assert len(vectors) == len(names) - 1

    # a DELETE commits while the compaction runs: the compaction conflicts, writes nothing
    planned = plan(table.context, full=True, partitions=None, parallelism=1)
    assert planned.messages
    inputs = [f.file_name for m in planned.messages for f in m.compact_before]
    second = {next(n for n in inputs if n not in first): [0]}
    _add_vectors(table, second)
    latest = table.latest_snapshot()
    with pytest.raises(CommitConflictError, match="deletion vector"):
        table.commit_compaction(planned.messages, written=planned.written)
    assert table.latest_snapshot() == latest
    assert not any(Path(p).exists() for p in planned.written)

    model = _model_without(table, {**first, **second})
    assert table.compact(full=True) is not None
    assert not deletion_files(table.store.index_entries(table.latest_snapshot()))
    assert _bag(table.read()) == _bag(model)
    table.write(_batch(2, 3))  # appends after: the index (now empty) carried forward
    assert _bag(table.read()) == _bag(pa.concat_tables([model, _batch(2, 3)]))
    # reads see every file: no level 0 to flush (the Airflow flush DAG leaves it alone)
    from lakeops.airflow.conditions import flush_candidates

    assert flush_candidates(catalog, ["db.t"]) == []


def test_streamed_reads_honour_parallelism(catalog: Catalog) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["dt"])
    for s in range(4):
        table.write(_batch(s, 9))
    whole = table.read()
    one = pa.Table.from_batches(list(table.to_batches(batch_rows=4)))
    for parallelism in (1, 3):
        streamed = table.to_batches(batch_rows=4, parallelism=parallelism)
        got = pa.Table.from_batches(list(streamed), schema=one.schema)
        assert got.to_pylist() == one.to_pylist()  # same rows, same order
        assert all(b.num_rows <= 4 for b in table.to_batches(batch_rows=4, parallelism=3))
        reader = table.to_arrow_batch_reader(filter=pc.field("k") > 3, parallelism=parallelism)
        assert _bag(reader.read_all()) == _bag(whole.filter(pc.field("k") > 3))
    for bad in (0, -1):
        with pytest.raises(ConfigurationError, match="parallelism"):
            table.to_batches(parallelism=bad)
