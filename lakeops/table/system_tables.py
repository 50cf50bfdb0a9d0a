"""Paimon's system tables of one table, as Arrow tables: ``snapshots``, ``schemas``,
``options``, ``files``, ``manifests``, ``partitions``, ``buckets``, ``tags``, ``consumers``,
``branches``, ``audit_log``, ``binlog`` and ``ro`` (Paimon spells them ``db.t$files``).

Each has the columns, types and values of Paimon 0.9's system table of that name
(``org.apache.paimon.table.system``); ``buckets``, which Paimon 0.9 does not offer to users,
has the columns of later Paimon's (and pypaimon's) ``$buckets``, with the partition spelled as
in ``files`` and ``partitions``. Values that Java renders as text are rendered as Java does
(:mod:`lakeops.table.java_text`); times are ``TIMESTAMP(3)`` columns of the local
wall-clock time, as Paimon shows them, except ``files.creation_time``, the time stored in
the manifest.

Everything is read from the table's metadata (:class:`~lakeops.store.TableStore`;
``consumers`` from the ``consumer/`` files, :mod:`lakeops.store.consumers`; ``branches`` from
the ``branch/`` directories, :mod:`lakeops.maintenance.branches`), and three tables
from its data:

* ``audit_log``: the merged rows of a snapshot with the row kind of each
  (``+I``/``-U``/``+U``/``-D``, deleted keys kept until a full compaction drops them) in a first
  column ``rowkind``, as Paimon's ``AuditLogTable`` reads them;
* ``binlog`` (Paimon's ``BinlogTable``, later than 0.9): ``rowkind``, then every column as an
  ``ARRAY`` of its type. A batch read (a snapshot: this table) is the ``audit_log`` with each
  value as an array of one, the row kind unchanged. A streaming read packs an update: a ``-U``
  row and the row after it become one row, each column ``[before, after]``, with the second
  row's kind; :func:`binlog_of_changes` applies that to the changes ``read_changes`` returns;
* ``ro`` (Paimon's ``ReadOptimizedTable``): of a primary-key table, the rows of the files at
  the top level only (level ``num-levels - 1``), which need no merging: the result of each
  bucket's latest full compaction, with the snapshot's deletion vectors applied where
  ``deletion-vectors.enabled`` is on (``SnapshotReader.withLevel``); an append table's ``ro``
  is the table itself (served by :meth:`lakeops.AppendTable.metadata_table`).

``snapshot_id`` (Paimon's ``scan.snapshot-id``) chooses the snapshot of ``files``,
``manifests``, ``partitions``, ``buckets``, ``audit_log``, ``binlog`` and ``ro`` (default the
latest); the other tables list the whole table and refuse it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeops.errors import ConfigurationError, CorruptTableError, UnsupportedFeatureError
from lakeops.format import binary_row
from lakeops.format.data_file import DataFileMeta
from lakeops.format.kv import ROW_KINDS
from lakeops.format.manifest import FileKind, ManifestEntry
from lakeops.format.schema import TableSchema
from lakeops.format.snapshot import Snapshot
from lakeops.format.types import DataType
from lakeops.maintenance.branches import list_branches
from lakeops.read.merge_read import SplitReader
from lakeops.read.scan import only_level, plan_splits
from lakeops.store import TableStore
from lakeops.store.consumers import list_consumers
from lakeops.store.context import TableContext
from lakeops.store.tags import list_tags
from lakeops.table.java_text import (
    java_array,
    java_duration,
    java_map,
    java_value,
    local_millis,
)

__all__ = [
    "AUDIT_LOG_ROW_KIND",
    "SYSTEM_TABLES",
    "SYSTEM_TABLE_SEPARATOR",
    "binlog_of_audit_log",
    "binlog_of_changes",
    "metadata_table",
    "split_system_table",
    "system_table_schema",
]

#: what separates a table from its system table in Paimon's identifiers: ``db.t$files``
SYSTEM_TABLE_SEPARATOR = "$"
#: the first column of ``audit_log`` (Paimon's ``AuditLogTable.ROW_KIND``)
AUDIT_LOG_ROW_KIND = "rowkind"

_TS = pa.timestamp("ms")
_KIND_NAMES = {code: name for name, code in ROW_KINDS.items()}


def _f(name: str, type_: pa.DataType, nullable: bool = True) -> pa.Field:
    return pa.field(name, type_, nullable)


_SCHEMAS: dict[str, pa.Schema] = {
    "snapshots": pa.schema(
        [
            _f("snapshot_id", pa.int64(), False),
            _f("schema_id", pa.int64(), False),
            _f("commit_user", pa.string(), False),
            _f("commit_identifier", pa.int64(), False),
            _f("commit_kind", pa.string(), False),
            _f("commit_time", _TS, False),
            _f("base_manifest_list", pa.string(), False),
            _f("delta_manifest_list", pa.string(), False),
            _f("changelog_manifest_list", pa.string()),
            _f("total_record_count", pa.int64()),
            _f("delta_record_count", pa.int64()),
            _f("changelog_record_count", pa.int64()),
            _f("watermark", pa.int64()),
        ]
    ),
    "schemas": pa.schema(
        [
            _f("schema_id", pa.int64(), False),
            _f("fields", pa.string(), False),
            _f("partition_keys", pa.string(), False),
            _f("primary_keys", pa.string(), False),
            _f("options", pa.string(), False),
            _f("comment", pa.string()),
            _f("update_time", _TS, False),
        ]
    ),
    "options": pa.schema([_f("key", pa.string(), False), _f("value", pa.string(), False)]),
    "files": pa.schema(
        [
            _f("partition", pa.string()),
            _f("bucket", pa.int32(), False),
            _f("file_path", pa.string(), False),
            _f("file_format", pa.string(), False),
            _f("schema_id", pa.int64(), False),
            _f("level", pa.int32(), False),
            _f("record_count", pa.int64(), False),
            _f("file_size_in_bytes", pa.int64(), False),
            _f("min_key", pa.string()),
            _f("max_key", pa.string()),
            _f("null_value_counts", pa.string(), False),
            _f("min_value_stats", pa.string(), False),
            _f("max_value_stats", pa.string(), False),
            _f("min_sequence_number", pa.int64()),
            _f("max_sequence_number", pa.int64()),
            _f("creation_time", _TS),
        ]
    ),
    "manifests": pa.schema(
        [
            _f("file_name", pa.string(), False),
            _f("file_size", pa.int64(), False),
            _f("num_added_files", pa.int64(), False),
            _f("num_deleted_files", pa.int64(), False),
            _f("schema_id", pa.int64(), False),
        ]
    ),
    "partitions": pa.schema(
        [
            _f("partition", pa.string()),
            _f("record_count", pa.int64(), False),
            _f("file_size_in_bytes", pa.int64(), False),
            _f("file_count", pa.int64(), False),
            _f("last_update_time", _TS),
        ]
    ),
    "buckets": pa.schema(
        [
            _f("partition", pa.string()),
            _f("bucket", pa.int32(), False),
            _f("record_count", pa.int64(), False),
            _f("file_size_in_bytes", pa.int64(), False),
            _f("file_count", pa.int64(), False),
            _f("last_update_time", _TS),
        ]
    ),
    "tags": pa.schema(
        [
            _f("tag_name", pa.string(), False),
            _f("snapshot_id", pa.int64(), False),
            _f("schema_id", pa.int64(), False),
            _f("commit_time", _TS, False),
            _f("record_count", pa.int64()),
            _f("create_time", _TS),
            _f("time_retained", pa.string()),
        ]
    ),
    "consumers": pa.schema(
        [_f("consumer_id", pa.string(), False), _f("next_snapshot_id", pa.int64(), False)]
    ),
    "branches": pa.schema(
        [
            _f("branch_name", pa.string(), False),
            _f("created_from_tag", pa.string()),
            _f("created_from_snapshot", pa.int64()),
            _f("create_time", _TS, False),
        ]
    ),
}

#: the system tables whose columns are the table's (read from its data)
_OF_DATA = ("audit_log", "binlog", "ro")
#: the system tables lakeops serves, in Paimon's names (later additions last)
SYSTEM_TABLES: tuple[str, ...] = (
    *(n for n in _SCHEMAS if n not in ("consumers", "branches")),
    "audit_log",
    "binlog",
    "ro",
    "consumers",
    "branches",
)
_OF_SNAPSHOT = frozenset({"files", "manifests", "partitions", "buckets", *_OF_DATA})


def split_system_table(identifier: str) -> tuple[str, str | None]:
    """``"db.t$files"`` → ``("db.t", "files")``; an identifier without ``$`` → ``(it, None)``.
    An empty or unknown system table name is a :class:`ConfigurationError` listing the known
    ones."""
    table, sep, name = identifier.partition(SYSTEM_TABLE_SEPARATOR)
    if not sep:
        return identifier, None
    return table, _check_name(name)


def _check_name(name: str) -> str:
    if name.lower() not in SYSTEM_TABLES:
        raise ConfigurationError(
            f"unknown metadata table {name!r}; the known ones are {', '.join(SYSTEM_TABLES)}"
        )
    return name.lower()


def system_table_schema(name: str, table_schema: TableSchema | None = None) -> pa.Schema:
    """The Arrow schema of system table ``name`` (``audit_log``, ``binlog`` and ``ro`` need
    the table's schema). ``binlog``'s columns are nullable ``list<element>`` of the table's
    types with nullable elements (Paimon's ``ArrayType(type.nullable())``)."""
    name = _check_name(name)
    if name not in _OF_DATA:
        return _SCHEMAS[name]
    if table_schema is None:
        raise ConfigurationError(f"the schema of {name} depends on the table's schema")
    data = table_schema.arrow_schema()
    if name == "ro":
        return data
    if name == "binlog":
        data = pa.schema([_f(f.name, pa.list_(_f("element", f.type))) for f in data])
    return pa.schema([_f(AUDIT_LOG_ROW_KIND, pa.string()), *data])


def metadata_table(store: TableStore, name: str, *, snapshot_id: int | None = None) -> pa.Table:
    """System table ``name`` of the table of ``store`` (see the module docstring)."""
    name = _check_name(name)
    if snapshot_id is not None and name not in _OF_SNAPSHOT:
        raise ConfigurationError(
            f"metadata table {name!r} lists the whole table and takes no snapshot_id; "
            f"snapshot_id chooses the snapshot of {', '.join(sorted(_OF_SNAPSHOT))}"
        )
    if name in _OF_SNAPSHOT:
        snapshot = (
            store.snapshot(snapshot_id) if snapshot_id is not None else store.latest_snapshot()
        )
        return _OF_SNAPSHOT_BUILDERS[name](store, snapshot)
    return _WHOLE_TABLE_BUILDERS[name](store)


def _table(name: str, columns: dict[str, list[Any]]) -> pa.Table:
    schema = _SCHEMAS[name]
    return pa.Table.from_arrays([pa.array(columns[f.name], f.type) for f in schema], schema=schema)


# ------------------------------------------------------------------ whole-table tables
def _snapshots(store: TableStore) -> pa.Table:
    snaps = [store.snapshot(i) for i in store.snapshot_ids()]
    return _table(
        "snapshots",
        {
            "snapshot_id": [s.id for s in snaps],
            "schema_id": [s.schema_id for s in snaps],
            "commit_user": [s.commit_user for s in snaps],
            "commit_identifier": [s.commit_identifier for s in snaps],
            "commit_kind": [str(s.commit_kind) for s in snaps],
            "commit_time": [local_millis(s.time_millis) for s in snaps],
            "base_manifest_list": [s.base_manifest_list for s in snaps],
            "delta_manifest_list": [s.delta_manifest_list for s in snaps],
            "changelog_manifest_list": [s.changelog_manifest_list for s in snaps],
            "total_record_count": [s.total_record_count for s in snaps],
            "delta_record_count": [s.delta_record_count for s in snaps],
            "changelog_record_count": [s.changelog_record_count for s in snaps],
            "watermark": [s.watermark for s in snaps],
        },
    )


def _flat_json(value: object) -> str:
    """Paimon's ``JsonSerdeUtil.toFlatJson``: compact, non-ASCII kept."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _schemas(store: TableStore) -> pa.Table:
    schemas = [store.schema(i) for i in store.schema_ids()]
    return _table(
        "schemas",
        {
            "schema_id": [s.id for s in schemas],
            "fields": [_flat_json([f.to_json() for f in s.fields]) for s in schemas],
            "partition_keys": [_flat_json(list(s.partition_keys)) for s in schemas],
            "primary_keys": [_flat_json(list(s.primary_keys)) for s in schemas],
            "options": [_flat_json(dict(s.options)) for s in schemas],
            "comment": [s.comment for s in schemas],
            "update_time": [local_millis(s.time_millis) for s in schemas],
        },
    )


def _options(store: TableStore) -> pa.Table:
    options = sorted(store.latest_schema().options.items())
    return _table("options", {"key": [k for k, _ in options], "value": [v for _, v in options]})


def _consumers(store: TableStore) -> pa.Table:
    """Paimon's ``ConsumersTable``: one row per consumer file, by id."""
    consumers = list_consumers(store)
    return _table(
        "consumers",
        {"consumer_id": list(consumers), "next_snapshot_id": list(consumers.values())},
    )


def _branches(store: TableStore) -> pa.Table:
    """Paimon 0.9's ``BranchesTable``: one row per branch directory, by name: its earliest
    tag (the tag it was created from; null without one), its earliest snapshot (null for an
    empty branch) and the directory's time (checked against Java Paimon 0.9)."""
    branches = list_branches(store)
    tags, firsts = [], []
    for b in branches:
        of_branch = TableStore(store.file_io, store.root, b.name)
        listed = list_tags(of_branch)  # by snapshot id, then name
        tags.append(listed[0].name if listed else None)
        ids = of_branch.snapshot_ids()
        firsts.append(ids[0] if ids else None)
    return _table(
        "branches",
        {
            "branch_name": [b.name for b in branches],
            "created_from_tag": tags,
            "created_from_snapshot": firsts,
            "create_time": [b.create_time for b in branches],
        },
    )


def _tags(store: TableStore) -> pa.Table:
    tags = list_tags(store)
    return _table(
        "tags",
        {
            "tag_name": [t.name for t in tags],
            "snapshot_id": [t.snapshot.id for t in tags],
            "schema_id": [t.snapshot.schema_id for t in tags],
            "commit_time": [local_millis(t.snapshot.time_millis) for t in tags],
            "record_count": [t.snapshot.total_record_count for t in tags],
            "create_time": [
                None if t.create_time is None else t.create_time.replace(tzinfo=None) for t in tags
            ],
            "time_retained": [
                None if t.time_retained is None else java_duration(t.time_retained) for t in tags
            ],
        },
    )


# -------------------------------------------------------------- one snapshot's tables
def _manifests(store: TableStore, snapshot: Snapshot | None) -> pa.Table:
    metas = []
    if snapshot is not None:
        metas = store.data_manifests(snapshot)
        if snapshot.changelog_manifest_list:
            metas += store.manifest_list(snapshot.changelog_manifest_list)
    return _table(
        "manifests",
        {
            "file_name": [m.file_name for m in metas],
            "file_size": [m.file_size for m in metas],
            "num_added_files": [m.num_added_files for m in metas],
            "num_deleted_files": [m.num_deleted_files for m in metas],
            "schema_id": [m.schema_id for m in metas],
        },
    )


class _Partitions:
    """``Arrays.toString`` of partitions, each decoded once."""

    def __init__(self, schema: TableSchema) -> None:
        self.types = schema.types_of(schema.partition_keys)
        self._text: dict[bytes, str] = {}

    def text(self, partition: bytes) -> str:
        found = self._text.get(partition)
        if found is None:
            values = binary_row.deserialize_internal(partition, self.types)
            found = self._text[partition] = java_array(values, self.types)
        return found


def _all_entries(store: TableStore, snapshot: Snapshot) -> list[ManifestEntry]:
    names = [m.file_name for m in store.data_manifests(snapshot)]
    return [e for manifest in store.manifests(names, parallelism=None) for e in manifest]


def _groups(
    store: TableStore, snapshot: Snapshot | None, by_bucket: bool
) -> tuple[list[tuple[str, int]], dict[tuple[str, int], list[int]], dict[tuple[str, int], int]]:
    """Per partition (and bucket): net records, bytes and files over every ADD and DELETE entry
    of the snapshot's data manifests, and the latest creation time of any file an entry names
    (Paimon's ``PartitionEntry``/``BucketEntry`` merge); groups without live files dropped.

    Paimon turns the stored local creation time into an instant and shows it as local time
    again: the stored wall time itself."""
    if snapshot is None:
        return [], {}, {}
    parts = _Partitions(store.latest_schema())
    sums: dict[tuple[str, int], list[int]] = {}
    latest: dict[tuple[str, int], int] = {}
    for e in _all_entries(store, snapshot):
        key = (parts.text(e.partition), e.bucket if by_bucket else 0)
        sign = 1 if e.kind == FileKind.ADD else -1
        acc = sums.setdefault(key, [0, 0, 0])
        acc[0] += sign * e.file.row_count
        acc[1] += sign * e.file.file_size
        acc[2] += sign
        created = e.file.creation_time_millis
        if created is not None:
            latest[key] = max(latest.get(key, created), created)
    keys = sorted(k for k, acc in sums.items() if acc[2] > 0)
    return keys, sums, latest


def _partitions(store: TableStore, snapshot: Snapshot | None) -> pa.Table:
    keys, sums, latest = _groups(store, snapshot, by_bucket=False)
    return _table(
        "partitions",
        {
            "partition": [k[0] for k in keys],
            "record_count": [sums[k][0] for k in keys],
            "file_size_in_bytes": [sums[k][1] for k in keys],
            "file_count": [sums[k][2] for k in keys],
            "last_update_time": [latest.get(k) for k in keys],
        },
    )


def _buckets(store: TableStore, snapshot: Snapshot | None) -> pa.Table:
    keys, sums, latest = _groups(store, snapshot, by_bucket=True)
    return _table(
        "buckets",
        {
            "partition": [k[0] for k in keys],
            "bucket": [k[1] for k in keys],
            "record_count": [sums[k][0] for k in keys],
            "file_size_in_bytes": [sums[k][1] for k in keys],
            "file_count": [sums[k][2] for k in keys],
            "last_update_time": [latest.get(k) for k in keys],
        },
    )


class _FileStats:
    """Key bounds and value statistics of data files, rendered as Paimon's ``$files`` shows
    them: by the file's own schema, value statistics mapped to the current columns by field
    id (a column the file lacks: null bounds and every row null)."""

    def __init__(self, store: TableStore, current: TableSchema) -> None:
        self.store = store
        self.current = current

    def _schema(self, schema_id: int) -> TableSchema:
        return self.current if schema_id == self.current.id else self.store.schema(schema_id)

    def key(self, f: DataFileMeta, key: bytes) -> str | None:
        if len(key) < 4 or int.from_bytes(key[:4], "big", signed=True) <= 0:
            return None
        schema = self._schema(f.schema_id)
        names = schema.trimmed_primary_keys or schema.field_names
        types = schema.types_of(names)
        return java_array(binary_row.deserialize_internal(key, types), types)

    def values(self, f: DataFileMeta) -> tuple[str, str, str]:
        """(null_value_counts, min_value_stats, max_value_stats); ``{}`` each for a file
        with no value statistics (lakeops writes none; Paimon 0.9 shows ``{}`` for them)."""
        stats = f.value_stats
        if int.from_bytes(stats.min_values[:4], "big", signed=True) <= 0:
            return "{}", "{}", "{}"
        schema = self._schema(f.schema_id)
        stats_fields = (
            [schema.field(n) for n in f.value_stats_cols]
            if f.value_stats_cols
            else list(schema.fields)
        )
        types = [fld.type for fld in stats_fields]
        try:
            lows: Sequence[Any] = binary_row.deserialize_internal(stats.min_values, types)
            highs: Sequence[Any] = binary_row.deserialize_internal(stats.max_values, types)
        except CorruptTableError:  # statistics of other columns (or none): unknown
            lows = highs = [None] * len(types)
        by_id = {fld.id: i for i, fld in enumerate(stats_fields)}
        nulls, mins, maxs = [], [], []
        for fld in self.current.fields:
            i = by_id.get(fld.id)
            if i is None:
                nulls.append((fld.name, str(f.row_count)))
                mins.append((fld.name, "null"))
                maxs.append((fld.name, "null"))
                continue
            count = stats.null_counts[i] if i < len(stats.null_counts) else None
            nulls.append((fld.name, "null" if count is None else str(count)))
            mins.append((fld.name, _as_current(lows[i], types[i], fld.type)))
            maxs.append((fld.name, _as_current(highs[i], types[i], fld.type)))
        return java_map(nulls), java_map(mins), java_map(maxs)


def _as_current(value: Any, old: DataType, new: DataType) -> str:
    """A statistic written as ``old`` shown as the current type ``new`` (Paimon casts it)."""
    if value is None:
        return "null"
    if old.root == "FLOAT" and new.root == "DOUBLE":
        return java_value(float(value), new)
    return java_value(value, new)


def _files(store: TableStore, snapshot: Snapshot | None) -> pa.Table:
    current = store.latest_schema()
    parts = _Partitions(current)
    stats = _FileStats(store, current)
    entries = sorted(
        store.live_entries(snapshot, parallelism=None),
        key=lambda e: (parts.text(e.partition), e.bucket, e.file.level, e.file.file_name),
    )
    cols: dict[str, list[Any]] = {f.name: [] for f in _SCHEMAS["files"]}
    for e in entries:
        f = e.file
        nulls, mins, maxs = stats.values(f)
        row = {
            "partition": parts.text(e.partition),
            "bucket": e.bucket,
            "file_path": f.file_name,
            "file_format": f.file_name.rsplit(".", 1)[-1],
            "schema_id": f.schema_id,
            "level": f.level,
            "record_count": f.row_count,
            "file_size_in_bytes": f.file_size,
            "min_key": stats.key(f, f.min_key),
            "max_key": stats.key(f, f.max_key),
            "null_value_counts": nulls,
            "min_value_stats": mins,
            "max_value_stats": maxs,
            "min_sequence_number": f.min_sequence_number,
            "max_sequence_number": f.max_sequence_number,
            "creation_time": f.creation_time_millis,
        }
        for k, v in row.items():
            cols[k].append(v)
    return _table("files", cols)


def _primary_key_context(store: TableStore, name: str) -> TableContext:
    """The latest context of a primary-key table (an append table's data tables are read by
    :meth:`lakeops.AppendTable.metadata_table`)."""
    ctx = TableContext.latest(store)
    if not ctx.schema.primary_keys:
        raise UnsupportedFeatureError(
            f"{name} of table {store.root}: an append table's {name} is read from the table "
            f"(AppendTable.metadata_table({name!r}); every row is +I)"
        )
    return ctx


def _audit_log(store: TableStore, snapshot: Snapshot | None) -> pa.Table:
    ctx = _primary_key_context(store, "audit_log")
    schema = ctx.schema
    out_schema = system_table_schema("audit_log", schema)
    columns = schema.field_names
    reader = SplitReader(ctx)
    kind_names = pa.array([_KIND_NAMES[i] for i in range(len(_KIND_NAMES))], pa.string())
    parts: list[pa.Table] = []
    for split in plan_splits(ctx, snapshot):
        kinds, rows = reader.read_with_kinds(split, columns)
        if rows.num_rows == 0:
            continue
        names = kind_names.take(kinds.cast(pa.int32()))
        parts.append(pa.Table.from_arrays([names, *rows.columns], schema=out_schema))
    if not parts:
        return out_schema.empty_table()
    return pa.concat_tables(parts)


def _one_value_lists(column: pa.ChunkedArray | pa.Array, type_: pa.DataType) -> pa.Array:
    """Each value of ``column`` as a list of one (``type_``: the list type)."""
    values = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    offsets = pa.array(np.arange(len(values) + 1, dtype=np.int32))
    return pa.ListArray.from_arrays(offsets, values, type=type_)


def binlog_of_audit_log(audit: pa.Table, table_schema: TableSchema) -> pa.Table:
    """A batch read of Paimon's ``$binlog`` from the ``audit_log`` rows of the same read:
    ``rowkind`` unchanged, each column's value as an array of one (``BinlogRead`` of a
    non-streaming split: ``convertToArray(row, null)``)."""
    schema = system_table_schema("binlog", table_schema)
    columns = [audit.column(AUDIT_LOG_ROW_KIND).combine_chunks()]
    columns += [_one_value_lists(audit.column(f.name), f.type) for f in list(schema)[1:]]
    return pa.Table.from_arrays(columns, schema=schema)


def binlog_of_changes(changes: pa.Table, kind_column: str = "_row_kind") -> pa.Table:
    """The rows of a streaming read of Paimon's ``$binlog`` from the changes ``read_changes``
    returns (row kind in ``kind_column``, then the columns): Paimon's ``PackChangelogReader``
    rule, in the changes' order — a ``-U`` row and the row after it (whatever its kind) become
    one row whose columns are ``[before, after]`` and whose kind is the second row's; every other
    row (and a ``-U`` with nothing after it) is one row of arrays of one, its kind unchanged.
    The first column is ``rowkind``, then each column as a nullable list of its type.

    Paimon packs within one split (a bucket's changes of one snapshot); ``read_changes``
    concatenates them, so a ``-U`` that ends one file would be packed with the next file's first
    row here. Changelog producers and writers emit each ``-U`` right before its ``+U``, so this
    does not arise from Paimon-written changes."""
    kinds = changes.column(kind_column).combine_chunks()
    n = len(kinds)
    index = np.arange(n)
    before = np.asarray(pc.equal(kinds, "-U").fill_null(False), dtype=bool)
    # a run of consecutive -U rows pairs them two by two (first with second …); an odd run's
    # last -U takes the row after the run
    run_begins = before & ~np.concatenate(([False], before[:-1]))[:n]
    last_begin = np.maximum.accumulate(np.where(run_begins, index, -1))
    pairs = before & ((index - last_begin) % 2 == 0) & (index + 1 < n)
    taken = np.concatenate(([False], pairs[:-1]))[:n]
    starts = index[~taken]
    # each output row covers the input rows [start, end)
    ends = np.append(starts[1:], n)[: len(starts)]
    offsets = pa.array(np.append(starts, n).astype(np.int32))
    fields = [
        _f(name, pa.list_(_f("element", changes.schema.field(name).type)))
        for name in changes.column_names
        if name != kind_column
    ]
    columns: list[pa.Array] = [kinds.take(pa.array(ends - 1, pa.int64()))]
    for field in fields:
        values = changes.column(field.name).combine_chunks()
        columns.append(pa.ListArray.from_arrays(offsets, values, type=field.type))
    schema = pa.schema([_f(AUDIT_LOG_ROW_KIND, pa.string()), *fields])
    return pa.Table.from_arrays(columns, schema=schema)


def _binlog(store: TableStore, snapshot: Snapshot | None) -> pa.Table:
    """Paimon's ``BinlogTable``, batch: the audit log with each value as an array of one."""
    ctx = _primary_key_context(store, "binlog")
    return binlog_of_audit_log(_audit_log(store, snapshot), ctx.schema)


def _read_optimized(store: TableStore, snapshot: Snapshot | None) -> pa.Table:
    """Paimon's ``ReadOptimizedTable`` of a primary-key table: the merged rows of the files at
    level ``num-levels - 1`` of each bucket (with their deletion vectors while the table's
    option is on), nothing from the levels below."""
    ctx = _primary_key_context(store, "ro")
    top = ctx.compaction.num_levels - 1
    columns = ctx.schema.field_names
    out_schema = system_table_schema("ro", ctx.schema)
    reader = SplitReader(ctx)
    parts: list[pa.Table] = []
    for split in only_level(plan_splits(ctx, snapshot), top):
        rows = reader.read(split, columns)
        if rows.num_rows:
            parts.append(pa.Table.from_arrays(rows.columns, schema=out_schema))
    return pa.concat_tables(parts) if parts else out_schema.empty_table()


_WHOLE_TABLE_BUILDERS: dict[str, Callable[[TableStore], pa.Table]] = {
    "snapshots": _snapshots,
    "schemas": _schemas,
    "options": _options,
    "tags": _tags,
    "consumers": _consumers,
    "branches": _branches,
}
_OF_SNAPSHOT_BUILDERS: dict[str, Callable[[TableStore, Snapshot | None], pa.Table]] = {
    "files": _files,
    "manifests": _manifests,
    "partitions": _partitions,
    "buckets": _buckets,
    "audit_log": _audit_log,
    "binlog": _binlog,
    "ro": _read_optimized,
}
