"""Iceberg-compatible metadata after each commit, as Paimon's ``IcebergCommitCallback`` writes it
(``metadata.iceberg.storage`` = ``table-location`` or ``hadoop-catalog``; Paimon 0.9's
``metadata.iceberg-compatible = true`` is ``table-location``), so an Iceberg reader reads the
Paimon table's data files in place.

Where: ``table-location`` writes under ``<table>/metadata``; ``hadoop-catalog`` under
``<warehouse>/iceberg/<db>/<table>/metadata`` (the table's database directory must be a
warehouse ``<db>.db``). ``metadata.iceberg.storage-location`` overrides the default of either.
``hive-catalog`` and ``rest-catalog`` need a catalog service and are refused by the option rows.

What, for Paimon snapshot ``N`` (every file a version names is written afresh, so a version
that a crash left unwritten is caught up by the next commit, as Paimon's
``createMetadataWithoutBase`` does):

* one Iceberg snapshot with id and sequence number ``N`` (parent ``N-1``; timestamp the Paimon
  snapshot's ``timeMillis``; operation ``append``, Paimon's summary totals),
* its manifest list ``snap-<N>-<uuid>.avro`` naming one data manifest ``<uuid>-m0.avro`` whose
  entries are ADDED (status 1) with snapshot id / sequence numbers ``N``: every live data file of
  an append table; of a primary-key table only the files at the highest level
  (``num-levels - 1``), the files that need no merge (Paimon's ``shouldAddFileToIceberg``),
  so an Iceberg reader sees a primary-key table as of its last full compaction,
* with deletion vectors (format version 3): a delete manifest ``<uuid>-m1.avro`` of their
  vectors as position deletes in Puffin files (:mod:`lakeops.maintenance.iceberg_deletes`), and
  the data manifest then names every file above level 0 of a primary-key table (Paimon's rule
  when Iceberg gets the vectors),
* ``v<N>.metadata.json`` (``metadata.iceberg.format-version``, 2 or 3; version 3 adds row
  lineage: the snapshot's ``first-row-id`` is the previous version's ``next-row-id``, its data
  manifest's ``first_row_id`` too): the table's schemas up to the latest (Iceberg
  field ids = Paimon field ids), one identity partition spec (partition field ids from 1000),
  ``current-snapshot-id`` ``N``, and ``version-hint.text`` = ``N`` when ``N`` is the table's
  latest snapshot;
* the **history** (Paimon's ``createMetadataWithBase``): when ``v<N-1>.metadata.json`` is the
  metadata of snapshot ``N-1``, its snapshots (with their manifest lists) stay in ``v<N>``, less
  the leading ones Paimon's snapshot retention expires (``snapshot.num-retained.min`` /
  ``.max``, ``snapshot.time-retained``, Paimon's ``shouldExpire``) and any below the earliest
  Paimon snapshot, so Iceberg readers time travel to them; without that base, ``N`` alone.

Then, as Paimon's ``expireAllBefore``: the manifest lists and manifests of older metadata
versions that ``v<N>`` no longer names are deleted, and with
``metadata.iceberg.delete-after-commit.enabled`` (default true) the metadata files older than
``N - metadata.iceberg.previous-versions-max``; versions above ``N`` (left by snapshots a
rollback removed) go as Paimon's ``retireAbandonedSuffix`` retires them. Snapshot expiry
removes the versions of expired snapshots and drops expired snapshots from the histories of
the versions it keeps (their data files may be gone).

The Avro files (codec ``metadata.iceberg.manifest-compression``, default snappy) carry
Iceberg's field ids (``field-id`` on each field) so Iceberg readers resolve them. Data files
written by lakeops carry no Parquet field ids, so the metadata names its columns in
``schema.name-mapping.default`` (Iceberg's rule for such files).

A failure never fails the commit (it is published; the committer logs it), and the next commit
writes the metadata afresh.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from decimal import Decimal, localcontext
from typing import Any

from lakeops.errors import ConfigurationError, UnsupportedFeatureError
from lakeops.format.avro_codec import avro_codec, read_avro
from lakeops.format.binary_row import deserialize
from lakeops.format.data_file import DataFileMeta
from lakeops.format.manifest import ManifestEntry
from lakeops.format.schema import TableSchema
from lakeops.format.snapshot import Snapshot
from lakeops.format.types import DataType
from lakeops.io.file_io import join
from lakeops.kv.evolution import SchemaEvolution
from lakeops.maintenance.iceberg_deletes import deletion_vector_records, sweep_puffins
from lakeops.options import rows_layout as L
from lakeops.options import rows_retention as R
from lakeops.options import rows_write as W
from lakeops.options.rows_files import DELETION_VECTORS_ENABLED
from lakeops.read.stats import EXACT_BOUND_TYPES, value_stats
from lakeops.store import TableStore
from lakeops.store.context import TableContext
from lakeops.store.locations import FileLocations

__all__ = [
    "VERSION_HINT",
    "check_iceberg_schema",
    "expire_iceberg_metadata",
    "iceberg_after_commit",
    "iceberg_metadata_dir",
    "iceberg_storage",
    "sweep_iceberg_puffins",
    "write_iceberg_metadata",
]

#: ``org.apache.iceberg.hadoop.Util``'s hint file
VERSION_HINT = "version-hint.text"
#: Iceberg's first partition field id
_FIRST_PARTITION_FIELD_ID = 1000
_METADATA_NAME = re.compile(r"^v(\d+)\.metadata\.json$")


def iceberg_storage(options: Mapping[str, str]) -> str:
    """``disabled``, ``table-location`` or ``hadoop-catalog`` (Paimon 0.9's
    ``metadata.iceberg-compatible = true`` is ``table-location``)."""
    storage = R.ICEBERG_STORAGE.get(options).strip().lower()
    if storage == "disabled" and R.ICEBERG_COMPATIBLE.get(options):
        return "table-location"
    return storage


def iceberg_metadata_dir(root: str, options: Mapping[str, str]) -> str:
    """The metadata directory of the table at ``root`` (Paimon's
    ``catalogTableMetadataPath``)."""
    storage = iceberg_storage(options)
    location = R.ICEBERG_STORAGE_LOCATION.find(options)
    if location is None:
        location = "table-location" if storage == "table-location" else "catalog-location"
    root = root.rstrip("/")
    db_dir, _, table_name = root.rpartition("/")
    if location.strip().lower() == "table-location":
        return join(root, "metadata")
    warehouse, _, db_name = db_dir.rpartition("/")
    if not db_name.endswith(".db"):
        raise ConfigurationError(
            f"{root}: metadata.iceberg.storage = {storage!r} with catalog-location metadata "
            "needs a Paimon warehouse database (a <db>.db directory); set "
            "metadata.iceberg.storage-location = 'table-location' for this table"
        )
    return join(warehouse, "iceberg", db_name[: -len(".db")], table_name, "metadata")


def check_iceberg_schema(schema: TableSchema, what: str) -> None:
    """Refuse (:class:`UnsupportedFeatureError`, before anything is written) a table asking for
    Iceberg metadata whose columns lakeops cannot describe in Iceberg (nanosecond timestamps,
    TIME, VARIANT, MULTISET, at any depth), or with deletion vectors and format version 2,
    which cannot carry them."""
    if iceberg_storage(schema.options) == "disabled":
        return
    if (
        DELETION_VECTORS_ENABLED.get(schema.options)
        and R.ICEBERG_FORMAT_VERSION.get(schema.options) < 3
    ):
        # Iceberg format version 2 has no deletion vectors: its readers would return the rows
        # the vectors delete (Paimon exports vectors only with format version 3)
        raise UnsupportedFeatureError(
            f"{what}: Iceberg-compatible metadata of format version 2 cannot carry deletion "
            "vectors, so Iceberg readers would return deleted rows; set "
            "'metadata.iceberg.format-version' = '3' (or disable 'deletion-vectors.enabled' "
            "or 'metadata.iceberg.storage')"
        )
    for f in schema.fields:
        try:
            iceberg_field_type(f.type, f.id)
        except UnsupportedFeatureError as exc:
            raise UnsupportedFeatureError(f"{what}: column {f.name!r}: {exc}") from None


def iceberg_after_commit(table: TableContext, snapshot: Snapshot) -> None:
    """The commit callback: the Iceberg metadata of ``snapshot`` when the table asks for it."""
    if iceberg_storage(table.schema.options) != "disabled":
        write_iceberg_metadata(table.store, snapshot)


# ---------------------------------------------------------------------- types and schemas
def iceberg_type(t: DataType) -> str:
    """The Iceberg JSON type of a Paimon type (Paimon's ``IcebergDataField.toTypeString``)."""
    root = t.root
    simple = {
        "BOOLEAN": "boolean",
        "TINYINT": "int",
        "SMALLINT": "int",
        "INT": "int",
        "INTEGER": "int",
        "BIGINT": "long",
        "FLOAT": "float",
        "DOUBLE": "double",
        "DATE": "date",
        "CHAR": "string",
        "VARCHAR": "string",
        "STRING": "string",
        "BINARY": "binary",
        "VARBINARY": "binary",
        "BYTES": "binary",
    }
    if root in simple:
        return simple[root]
    if root == "DECIMAL":
        return f"decimal({t.precision}, {t.scale})"
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ") and (t.precision or 6) <= 6:
        # Iceberg v2 timestamps are microseconds: nanosecond precision has no v2 type
        return "timestamptz" if root == "TIMESTAMP_LTZ" else "timestamp"
    raise _unsupported(t)


#: Paimon's ``SpecialFields``: the ids of list elements and map keys / values, derived from the
#: column's field id and the nesting depth
_STRUCTURED_ID_BASE = (2**31 - 1) // 4
_STRUCTURED_DEPTH_LIMIT = 1 << 10


def _value_id(field_id: int, depth: int) -> int:
    """The id of a list element or map value ``depth`` levels under column ``field_id``."""
    return _STRUCTURED_ID_BASE + field_id * _STRUCTURED_DEPTH_LIMIT + depth


def _key_id(field_id: int, depth: int) -> int:
    """The id of a map key ``depth`` levels under column ``field_id``."""
    return _STRUCTURED_ID_BASE - field_id * _STRUCTURED_DEPTH_LIMIT - depth


def iceberg_field_type(t: DataType, field_id: int, depth: int = 0) -> Any:
    """The Iceberg JSON type of a column (Paimon's ``IcebergDataField.toTypeObject``): a
    primitive's name, or a ``list`` / ``map`` / ``struct`` object. A list's element and a
    map's value take id ``base + field_id * 1024 + depth``, a map's key ``base - field_id *
    1024 - depth`` (``depth`` counted from the column, ``base`` = ``Integer.MAX_VALUE / 4``);
    a struct's fields keep their Paimon ids."""
    if t.root == "ARRAY" and t.element is not None:
        return {
            "type": "list",
            "element-id": _value_id(field_id, depth + 1),
            "element-required": not t.element.nullable,
            "element": iceberg_field_type(t.element, field_id, depth + 1),
        }
    if t.root == "MAP" and t.key is not None and t.value is not None:
        return {
            "type": "map",
            "key-id": _key_id(field_id, depth + 1),
            "key": iceberg_field_type(t.key, field_id, depth + 1),
            "value-id": _value_id(field_id, depth + 1),
            "value-required": not t.value.nullable,
            "value": iceberg_field_type(t.value, field_id, depth + 1),
        }
    if t.root == "ROW":
        return {
            "type": "struct",
            "fields": [
                {
                    "id": fid,
                    "name": name,
                    "required": not ft.nullable,
                    "type": iceberg_field_type(ft, fid),
                }
                for fid, name, ft in t.fields
            ],
        }
    return iceberg_type(t)


def _nested_mapping(t: DataType, field_id: int, depth: int = 0) -> list[dict[str, Any]]:
    """The name mapping under a column of type ``t`` (Iceberg's nested ``fields``): a list's
    ``element``, a map's ``key`` and ``value``, a struct's fields, each with its own."""
    if t.root == "ARRAY" and t.element is not None:
        element = _mapping(
            _value_id(field_id, depth + 1),
            ["element"],
            _nested_mapping(t.element, field_id, depth + 1),
        )
        return [element]
    if t.root == "MAP" and t.key is not None and t.value is not None:
        return [
            _mapping(
                _key_id(field_id, depth + 1), ["key"], _nested_mapping(t.key, field_id, depth + 1)
            ),
            _mapping(
                _value_id(field_id, depth + 1),
                ["value"],
                _nested_mapping(t.value, field_id, depth + 1),
            ),
        ]
    if t.root == "ROW":
        return [_mapping(fid, [name], _nested_mapping(ft, fid)) for fid, name, ft in t.fields]
    return []


def _mapping(field_id: int, names: list[str], fields: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"field-id": field_id, "names": names}
    if fields:
        out["fields"] = fields
    return out


def _unsupported(t: DataType) -> UnsupportedFeatureError:
    return UnsupportedFeatureError(
        f"Iceberg metadata for a column of type {t} is not written by lakeops (its primitive "
        "types are); write this table with Paimon or disable metadata.iceberg.storage"
    )


def iceberg_schema(schema: TableSchema) -> dict[str, Any]:
    """The Iceberg schema of a Paimon schema (``IcebergSchema.create``)."""
    return {
        "type": "struct",
        "schema-id": schema.id,
        "fields": [
            {
                "id": f.id,
                "name": f.name,
                "required": not f.type.nullable,
                "type": iceberg_field_type(f.type, f.id),
            }
            for f in schema.fields
        ],
    }


def _avro_type(t: DataType) -> Any:
    """The Avro type of a partition value (Iceberg's Avro mapping)."""
    kind = iceberg_type(t)
    plain = {
        "boolean": "boolean",
        "int": "int",
        "long": "long",
        "float": "float",
        "double": "double",
        "string": "string",
        "binary": "bytes",
    }
    if kind in plain:
        out: Any = plain[kind]
    elif kind == "date":
        out = {"type": "int", "logicalType": "date"}
    elif kind.startswith("decimal"):
        out = {
            "type": "fixed",
            "name": f"decimal_{t.precision}_{t.scale}",
            "size": _decimal_size(t.precision or 10),
            "logicalType": "decimal",
            "precision": t.precision,
            "scale": t.scale,
        }
    else:
        out = {
            "type": "long",
            "logicalType": "timestamp-micros",
            "adjust-to-utc": kind == "timestamptz",
        }
    return ["null", out] if t.nullable else out


def _decimal_size(precision: int) -> int:
    size = 1
    while 2 ** (8 * size - 1) < 10**precision:
        size += 1
    return size


# ---------------------------------------------------------------------- Avro schemas
def _field(name: str, type_: Any, field_id: int, default_null: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "type": type_, "field-id": field_id}
    if default_null:
        out["default"] = None
    return out


def _int_map(value: str, key_id: int, value_id: int) -> dict[str, Any]:
    """Iceberg's Avro form of a map with int keys: an array of key/value records, logical type
    ``map`` (the spec's "Avro" appendix)."""
    return {
        "type": "array",
        "logicalType": "map",
        "items": {
            "type": "record",
            "name": f"k{key_id}_v{value_id}",
            "fields": [_field("key", "int", key_id), _field("value", value, value_id)],
        },
    }


def _column_stats(
    evolution: SchemaEvolution, schema: TableSchema, f: DataFileMeta
) -> dict[str, Any]:
    """A data file's ``null_value_counts``, ``lower_bounds`` and ``upper_bounds`` by field id,
    from its Paimon value statistics as ``IcebergDataFileMeta.create`` derives them — only
    for columns whose statistics lakeops reads exactly (:func:`lakeops.read.stats.value_stats`:
    present, of a type compared as Paimon orders it, unchanged since the file was written);
    a column without is left out, never guessed (Iceberg then cannot prune on it)."""
    nulls: list[dict[str, int]] = []
    lower: list[dict[str, Any]] = []
    upper: list[dict[str, Any]] = []
    for name, st in value_stats(evolution, f, roots=EXACT_BOUND_TYPES).items():
        field = schema.field(name)
        if st.nulls is not None:
            nulls.append({"key": field.id, "value": int(st.nulls)})
        lo, hi = _single_value(field.type, st.lo), _single_value(field.type, st.hi)
        if lo is not None and hi is not None:
            lower.append({"key": field.id, "value": lo})
            upper.append({"key": field.id, "value": hi})
    return {"null_value_counts": nulls, "lower_bounds": lower, "upper_bounds": upper}


def _manifest_schema(partition_fields: Sequence[dict[str, Any]], version: int) -> dict[str, Any]:
    """Iceberg's manifest entry schema (``IcebergManifestEntry.schema``), the data file fields
    Paimon fills that readers need; format version 3 adds those of deletion vectors (the data
    file a vector deletes rows of, where its blob lies)."""
    partition = {"type": "record", "name": "r102", "fields": list(partition_fields)}
    fields = [
        _field("content", "int", 134),
        _field("file_path", "string", 100),
        _field("file_format", "string", 101),
        _field("partition", partition, 102),
        _field("record_count", "long", 103),
        _field("file_size_in_bytes", "long", 104),
        _field("null_value_counts", ["null", _int_map("long", 121, 122)], 110, True),
        _field("lower_bounds", ["null", _int_map("bytes", 126, 127)], 125, True),
        _field("upper_bounds", ["null", _int_map("bytes", 129, 130)], 128, True),
    ]
    if version >= 3:
        fields += [
            _field("referenced_data_file", ["null", "string"], 143, True),
            _field("content_offset", ["null", "long"], 144, True),
            _field("content_size_in_bytes", ["null", "long"], 145, True),
        ]
    data_file = {"type": "record", "name": "r2", "fields": fields}
    return {
        "type": "record",
        "name": "manifest_entry",
        "fields": [
            _field("status", "int", 0),
            _field("snapshot_id", ["null", "long"], 1, True),
            _field("sequence_number", ["null", "long"], 3, True),
            _field("file_sequence_number", ["null", "long"], 4, True),
            _field("data_file", data_file, 2),
        ],
    }


_SUMMARY = {
    "type": "record",
    "name": "r508",
    "fields": [
        _field("contains_null", "boolean", 509),
        _field("contains_nan", ["null", "boolean"], 518, True),
        _field("lower_bound", ["null", "bytes"], 510, True),
        _field("upper_bound", ["null", "bytes"], 511, True),
    ],
}

_MANIFEST_LIST_FIELDS = {
    "type": "record",
    "name": "manifest_file",
    "fields": [
        _field("manifest_path", "string", 500),
        _field("manifest_length", "long", 501),
        _field("partition_spec_id", "int", 502),
        _field("content", "int", 517),
        _field("sequence_number", "long", 515),
        _field("min_sequence_number", "long", 516),
        _field("added_snapshot_id", ["null", "long"], 503, True),
        _field("added_files_count", "int", 504),
        _field("existing_files_count", "int", 505),
        _field("deleted_files_count", "int", 506),
        _field("added_rows_count", "long", 512),
        _field("existing_rows_count", "long", 513),
        _field("deleted_rows_count", "long", 514),
        _field(
            "partitions",
            ["null", {"type": "array", "items": _SUMMARY, "element-id": 508}],
            507,
            True,
        ),
    ],
}


def _manifest_list_schema(version: int) -> dict[str, Any]:
    """Iceberg's manifest list schema; format version 3 adds each data manifest's first row
    id (row lineage)."""
    if version < 3:
        return _MANIFEST_LIST_FIELDS
    first_row_id = _field("first_row_id", ["null", "long"], 520, True)
    return {**_MANIFEST_LIST_FIELDS, "fields": [*_MANIFEST_LIST_FIELDS["fields"], first_row_id]}


# ---------------------------------------------------------------------- writing
def _iceberg_files(
    schema: TableSchema, entries: Sequence[ManifestEntry], with_vectors: bool
) -> list[ManifestEntry]:
    """The live manifest entries Iceberg sees (``shouldAddFileToIceberg``): every file of an
    append table; of a primary-key table the files above level 0 when Iceberg gets its
    deletion vectors (``with_vectors``: they make those files read without a merge), else the
    files at the highest level only."""
    if not schema.primary_keys:
        return list(entries)
    if with_vectors:
        return [e for e in entries if e.file.level > 0]
    top = W.NUM_LEVELS.get(schema.options) - 1
    return [e for e in entries if e.file.level == top]


def _single_value(t: DataType, value: Any) -> bytes | None:
    """Iceberg's single-value binary form of a value (``IcebergConversions``): partition
    summaries and column bounds; None for a type without one here and for a NaN (Iceberg's
    bounds are never NaN)."""
    import math
    import struct

    kind = iceberg_type(t)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if kind == "boolean":
        return b"\x01" if value else b"\x00"
    if kind in ("int", "date"):
        return struct.pack("<i", _days(value) if kind == "date" else int(value))
    if kind == "long":
        return struct.pack("<q", int(value))
    if kind == "float":
        return struct.pack("<f", float(value))
    if kind == "double":
        return struct.pack("<d", float(value))
    if kind == "string":
        return str(value).encode()
    if kind == "binary":
        return bytes(value)
    if kind.startswith("decimal"):
        # the unscaled value, big-endian two's complement in the fewest bytes
        with localcontext() as exact:
            exact.prec = 80  # DECIMAL(38) and beyond, never rounded
            unscaled = int(Decimal(value).scaleb(t.scale or 0))
        size = (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1
        return unscaled.to_bytes(size, "big", signed=True)
    if kind in ("timestamp", "timestamptz"):
        return struct.pack("<q", _micros(value))
    return None


def _micros(value: Any) -> int:
    """Microseconds since the epoch of a timestamp (a naive one is read as UTC, as Paimon's
    TIMESTAMP holds its wall time against the epoch)."""
    import datetime as dt

    if isinstance(value, dt.datetime):
        delta = value.replace(tzinfo=None) - dt.datetime(1970, 1, 1)
        if value.tzinfo is not None:
            delta -= value.utcoffset() or dt.timedelta()
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return int(value)


def _days(value: Any) -> int:
    import datetime as dt

    if isinstance(value, dt.date):
        return (value - dt.date(1970, 1, 1)).days
    return int(value)


def _avro_value(t: DataType, value: Any) -> Any:
    """A partition value as fastavro writes it for :func:`_avro_type`."""
    if value is None:
        return None
    kind = iceberg_type(t)
    if kind == "date":
        return _days(value)
    return value


def write_iceberg_metadata(store: TableStore, snapshot: Snapshot) -> str:
    """Write the Iceberg metadata of Paimon ``snapshot`` (see the module docstring); returns the
    path of its ``v<N>.metadata.json``."""
    schema = store.latest_schema()
    options = schema.options
    version = R.ICEBERG_FORMAT_VERSION.get(options)
    with_vectors = version >= 3 and DELETION_VECTORS_ENABLED.get(options)
    io = store.file_io
    meta_dir = iceberg_metadata_dir(store.root, options)
    n = snapshot.id
    part_types = schema.types_of(schema.partition_keys)
    part_fields = [
        {
            "name": k,
            "transform": "identity",
            "source-id": schema.field(k).id,
            "field-id": _FIRST_PARTITION_FIELD_ID + i,
        }
        for i, k in enumerate(schema.partition_keys)
    ]
    avro_part_fields = [
        _field(k, _avro_type(t), _FIRST_PARTITION_FIELD_ID + i, t.nullable)
        for i, (k, t) in enumerate(zip(schema.partition_keys, part_types, strict=True))
    ]
    locations = store.locations(schema)
    live = store.live_entries(snapshot)
    entries = _iceberg_files(schema, live, with_vectors)
    evolution = SchemaEvolution(schema, store.schema)
    data = [(e.partition, _data_file(evolution, schema, locations, e)) for e in entries]
    deletes: list[tuple[bytes, dict[str, Any]]] = []
    puffins: set[str] = set()
    if with_vectors:
        paths = {
            (e.partition, e.bucket, e.file.file_name): locations.entry_path(
                e.partition, e.bucket, e.file.file_name, e.file.external_path
            )
            for e in live
        }
        exported = {(e.partition, e.bucket, e.file.file_name) for e in entries}
        deletes, puffins = deletion_vector_records(
            store, locations, snapshot, meta_dir, paths, exported
        )
    base = _base_metadata(store, meta_dir, n, version)
    first_row_id = int(base.get("next-row-id", 0)) if base else 0
    writer = _ManifestWriter(store, schema, meta_dir, n, version, part_fields, avro_part_fields)
    manifests = [
        m
        for m in (
            writer.write(data, 0, first_row_id),
            writer.write(deletes, 1, None),
        )
        if m is not None
    ]
    list_path = join(meta_dir, f"snap-{n}-{writer.token}.avro")
    list_meta = {"snapshot-id": str(n), "sequence-number": str(n), "format-version": str(version)}
    if n > 1:
        list_meta["parent-snapshot-id"] = str(n - 1)
    io.write_bytes(
        list_path,
        _write_with_meta(_manifest_list_schema(version), manifests, writer.codec, list_meta),
    )
    added_rows = sum(r["record_count"] for _, r in data)
    ice_snapshot: dict[str, Any] = {
        "sequence-number": n,
        "snapshot-id": n,
        "timestamp-ms": snapshot.time_millis,
        "summary": _snapshot_summary(data, deletes),
        "manifest-list": list_path,
        "schema-id": store.schema(snapshot.schema_id).id,
    }
    if n > 1:
        ice_snapshot["parent-snapshot-id"] = n - 1
    if version >= 3:
        ice_snapshot["first-row-id"] = first_row_id
        ice_snapshot["added-rows"] = added_rows
    snapshots = [*_kept_history(store, base, n), ice_snapshot]
    schemas = [store.schema(i) for i in store.schema_ids() if i <= schema.id]
    metadata = {
        "format-version": version,
        "table-uuid": _table_uuid(store, meta_dir),
        "location": store.root.rstrip("/"),
        "last-sequence-number": n,
        "last-updated-ms": snapshot.time_millis,
        "last-column-id": max(max(s.highest_field_id, *(f.id for f in s.fields)) for s in schemas),
        "schemas": [iceberg_schema(s) for s in schemas],
        "current-schema-id": schema.id,
        "partition-specs": [{"spec-id": 0, "fields": part_fields}],
        "default-spec-id": 0,
        "last-partition-id": _FIRST_PARTITION_FIELD_ID + len(part_fields) - 1,
        "properties": {"schema.name-mapping.default": json.dumps(_name_mapping(schemas))},
        "current-snapshot-id": n,
        "snapshots": snapshots,
        "snapshot-log": [
            {"timestamp-ms": s["timestamp-ms"], "snapshot-id": s["snapshot-id"]} for s in snapshots
        ],
        "metadata-log": [],
        "sort-orders": [{"order-id": 0, "fields": []}],
        "default-sort-order-id": 0,
        "refs": {"main": {"snapshot-id": n, "type": "branch"}},
    }
    if version >= 3:
        metadata["next-row-id"] = first_row_id + added_rows
    path = join(meta_dir, f"v{n}.metadata.json")
    io.overwrite_atomic(path, json.dumps(metadata).encode())
    if store.latest_snapshot_id() == n:
        io.overwrite_atomic(join(meta_dir, VERSION_HINT), str(n).encode())
        keep = _manifest_lists(metadata)
        _retire_after(store, meta_dir, n, keep)
        _expire_before(store, meta_dir, n, options, keep)
        sweep_puffins(store, meta_dir, puffins)
    return path


def _data_file(
    evolution: SchemaEvolution, schema: TableSchema, locations: FileLocations, e: ManifestEntry
) -> dict[str, Any]:
    """The ``data_file`` record of a data manifest entry (without its partition, which
    :class:`_ManifestWriter` adds)."""
    file_format = L.FILE_FORMAT.get(schema.options).strip().upper()
    name = e.file.file_name
    return {
        "content": 0,
        "file_path": locations.entry_path(e.partition, e.bucket, name, e.file.external_path),
        "file_format": name.rsplit(".", 1)[-1].upper() if "." in name else file_format,
        "record_count": e.file.row_count,
        "file_size_in_bytes": e.file.file_size,
        **_column_stats(evolution, schema, e.file),
    }


class _ManifestWriter:
    """Writes the manifests of one Iceberg snapshot ``n``: entries ADDED by ``n``, partition
    values decoded from Paimon's serialized partitions, and the manifest list record of each."""

    def __init__(
        self,
        store: TableStore,
        schema: TableSchema,
        meta_dir: str,
        n: int,
        version: int,
        part_fields: list[dict[str, Any]],
        avro_part_fields: list[dict[str, Any]],
    ) -> None:
        self.store, self.schema, self.meta_dir, self.n = store, schema, meta_dir, n
        self.version, self.part_fields = version, part_fields
        self.part_types = schema.types_of(schema.partition_keys)
        self.avro_schema = _manifest_schema(avro_part_fields, version)
        self.codec = avro_codec(R.ICEBERG_MANIFEST_COMPRESSION.get(schema.options))
        self.token = str(uuid.uuid4())

    def write(
        self, files: Sequence[tuple[bytes, dict[str, Any]]], content: int, first_row_id: int | None
    ) -> dict[str, Any] | None:
        """Write the manifest of ``files`` (data: ``content`` 0, deletes: 1; each with its
        serialized partition) and return its manifest list record; None when there are none."""
        if not files:
            return None
        keys, types = self.schema.partition_keys, self.part_types
        seen: list[list[Any]] = [[] for _ in types]
        records = []
        for partition, data_file in files:
            values = deserialize(partition, types)
            for i, v in enumerate(values):
                seen[i].append(v)
            record = {
                **data_file,
                "partition": {
                    k: _avro_value(t, v) for k, t, v in zip(keys, types, values, strict=True)
                },
            }
            records.append(
                {
                    "status": 1,
                    "snapshot_id": self.n,
                    "sequence_number": self.n,
                    "file_sequence_number": self.n,
                    "data_file": record,
                }
            )
        path = join(self.meta_dir, f"{self.token}-m{content}.avro")
        meta = {
            "schema": json.dumps(iceberg_schema(self.schema)),
            "partition-spec": json.dumps(self.part_fields),
            "partition-spec-id": "0",
            "format-version": str(self.version),
            "content": "deletes" if content else "data",
        }
        data = _write_with_meta(self.avro_schema, records, self.codec, meta)
        self.store.file_io.write_bytes(path, data)
        rows = sum(f["record_count"] for _, f in files)
        out: dict[str, Any] = {
            "manifest_path": path,
            "manifest_length": len(data),
            "partition_spec_id": 0,
            "content": content,
            "sequence_number": self.n,
            "min_sequence_number": self.n,
            "added_snapshot_id": self.n,
            "added_files_count": len(records),
            "existing_files_count": 0,
            "deleted_files_count": 0,
            "added_rows_count": rows,
            "existing_rows_count": 0,
            "deleted_rows_count": 0,
            "partitions": [_summary(t, v) for t, v in zip(types, seen, strict=True)],
        }
        if self.version >= 3:
            out["first_row_id"] = first_row_id
        return out


def _snapshot_summary(
    data: Sequence[tuple[bytes, dict[str, Any]]], deletes: Sequence[tuple[bytes, dict[str, Any]]]
) -> dict[str, str]:
    """The summary of an Iceberg snapshot that adds ``data`` and ``deletes`` (Paimon's
    ``computeSnapshotSummary``: every file is added, so the totals are the added counts)."""
    records = sum(f["record_count"] for _, f in data)
    size = sum(f["file_size_in_bytes"] for _, f in data)
    position_deletes = sum(f["record_count"] for _, f in deletes)
    summary = {
        "operation": "append",
        "added-data-files": str(len(data)),
        "added-records": str(records),
        "added-files-size": str(size),
        "changed-partition-count": str(len({p for p, _ in data})),
        "total-records": str(records),
        "total-data-files": str(len(data)),
        "total-files-size": str(size),
        "total-delete-files": str(len(deletes)),
        "total-position-deletes": str(position_deletes),
        "total-equality-deletes": "0",
    }
    if deletes:
        summary["added-delete-files"] = str(len(deletes))
        summary["added-position-delete-files"] = str(len(deletes))
        summary["added-position-deletes"] = str(position_deletes)
    return summary


def _base_metadata(store: TableStore, meta_dir: str, n: int, version: int) -> dict[str, Any] | None:
    """``v<n-1>.metadata.json`` when it is the metadata of snapshot ``n - 1`` in format
    ``version`` (the base Paimon's ``createMetadataWithBase`` builds on; another format
    version is rebuilt without it, as Paimon's ``isSameFormatVersion`` decides)."""
    try:
        base = json.loads(store.file_io.read_bytes(join(meta_dir, f"v{n - 1}.metadata.json")))
    except (OSError, ValueError):
        return None
    if not isinstance(base, dict) or base.get("current-snapshot-id") != n - 1:
        return None
    if base.get("format-version") != version:
        return None
    return base


def _kept_history(
    store: TableStore, base: Mapping[str, Any] | None, n: int
) -> list[dict[str, Any]]:
    """The earlier Iceberg snapshots the metadata of Paimon snapshot ``n`` keeps (Paimon's
    ``createMetadataWithBase``): those of ``base`` (:func:`_base_metadata`), less the leading
    ones Paimon's snapshot retention expires (``snapshot.num-retained.min`` / ``.max``,
    ``snapshot.time-retained``: Paimon's ``shouldExpire``) and any below the table's earliest
    Paimon snapshot (their data files may be gone). Without a base, none
    (``createMetadataWithoutBase``)."""
    import time

    if base is None:
        return []
    options = store.latest_schema().options
    earliest = store.earliest_snapshot_id() or n
    low, high = R.SNAPSHOT_NUM_RETAINED_MIN.get(options), R.SNAPSHOT_NUM_RETAINED_MAX.get(options)
    oldest_ms = time.time() * 1000 - R.SNAPSHOT_TIME_RETAINED.get(options)

    def expires(snap: Mapping[str, Any]) -> bool:
        sid = int(snap["snapshot-id"])
        if sid < earliest:
            return True
        if sid > n - low:
            return False
        return sid <= n - high or int(snap["timestamp-ms"]) < oldest_ms

    history = [s for s in base.get("snapshots", []) if int(s["snapshot-id"]) < n]
    while history and expires(history[0]):
        history.pop(0)
    return history


def _manifest_lists(metadata: Mapping[str, Any]) -> set[str]:
    """The manifest lists ``metadata``'s snapshots name."""
    return {str(s["manifest-list"]) for s in metadata.get("snapshots", [])}


def _summary(t: DataType, seen: Sequence[Any]) -> dict[str, Any]:
    """The partition field summary of a manifest (``IcebergPartitionSummary``)."""
    present = [v for v in seen if v is not None]
    floats = iceberg_type(t) in ("float", "double")
    nan = floats and any(v != v for v in present)
    ordered = [v for v in present if not (floats and v != v)]
    return {
        "contains_null": len(present) < len(seen),
        "contains_nan": nan if floats else False,
        "lower_bound": _single_value(t, min(ordered)) if ordered else None,
        "upper_bound": _single_value(t, max(ordered)) if ordered else None,
    }


#: Paimon's ``SpecialFields``: key columns ``_KEY_<name>`` (id ``KEY_FIELD_ID_START + id``),
#: ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND`` of primary-key data files
_KEY_FIELD_ID_START = (2**31 - 1) // 2
_SEQUENCE_NUMBER_ID = 2**31 - 2
_VALUE_KIND_ID = 2**31 - 3


def _name_mapping(schemas: Sequence[TableSchema]) -> list[dict[str, Any]]:
    """Iceberg's ``schema.name-mapping.default`` for data files without Parquet field ids: each
    field id with every name its column had (schema evolution renames), and the system columns
    of primary-key files under Paimon's ids (outside the Iceberg schema, so never read)."""
    names: dict[int, list[str]] = {}
    nested: dict[int, list[dict[str, Any]]] = {}
    for schema in schemas:
        for f in schema.fields:
            known = names.setdefault(f.id, [])
            if f.name not in known:
                known.append(f.name)
            nested[f.id] = _nested_mapping(f.type, f.id)  # the latest schema's layout
        for key in schema.trimmed_primary_keys:
            field = schema.field(key)
            known = names.setdefault(_KEY_FIELD_ID_START + field.id, [])
            if f"_KEY_{key}" not in known:
                known.append(f"_KEY_{key}")
    if schemas and schemas[-1].primary_keys:
        names[_SEQUENCE_NUMBER_ID] = ["_SEQUENCE_NUMBER"]
        names[_VALUE_KIND_ID] = ["_VALUE_KIND"]
    return [_mapping(i, n, nested.get(i, [])) for i, n in sorted(names.items())]


def _write_with_meta(
    schema: dict[str, Any], records: list[dict[str, Any]], codec: str, meta: dict[str, str]
) -> bytes:
    import io as _io

    import fastavro

    out = _io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), records, codec=codec, metadata=meta)
    return out.getvalue()


def _table_uuid(store: TableStore, meta_dir: str) -> str:
    """The table uuid of the newest existing metadata, else a fresh one (a rebuild keeps the
    identity readers and catalogs know, as Paimon does)."""
    versions = _metadata_versions(store, meta_dir)
    for v in sorted(versions, reverse=True):
        try:
            found = json.loads(store.file_io.read_bytes(join(meta_dir, f"v{v}.metadata.json")))
            return str(found["table-uuid"])
        except (OSError, ValueError, KeyError):
            continue
    return str(uuid.uuid4())


def _metadata_versions(store: TableStore, meta_dir: str) -> list[int]:
    if not store.file_io.exists(meta_dir):
        return []
    out = []
    for name in store.file_io.list_names(meta_dir):
        m = _METADATA_NAME.match(name)
        if m:
            out.append(int(m.group(1)))
    return sorted(out)


def _retire_after(store: TableStore, meta_dir: str, n: int, keep: set[str]) -> None:
    """Paimon's ``retireAbandonedSuffix``: versions above the head ``n`` were written for
    snapshots a rollback removed; they go (with the manifests only they name: not those of
    ``keep``, the head's lists) once ``v<n>`` and the hint are written, so no Iceberg reader
    that looks past the hint finds them."""
    for v in _metadata_versions(store, meta_dir):
        if v > n:
            _delete_version(store, meta_dir, v, keep)


def _delete_version(store: TableStore, meta_dir: str, v: int, keep: set[str]) -> None:
    """Delete ``v<v>.metadata.json`` with the manifest lists (and their manifests) it names
    that are not in ``keep``."""
    path = join(meta_dir, f"v{v}.metadata.json")
    try:
        found = json.loads(store.file_io.read_bytes(path))
    except (OSError, ValueError):
        found = {}
    _delete_manifests(store, found, keep)
    store.file_io.delete(path)


def _expire_before(
    store: TableStore, meta_dir: str, n: int, options: Mapping[str, str], keep: set[str]
) -> None:
    """Paimon's ``expireAllBefore``: the manifest lists and manifests of every metadata version
    before ``n`` go, but for the head's (``keep``); with ``delete-after-commit`` the metadata
    files before ``n - previous-versions-max`` too."""
    io = store.file_io
    older = [v for v in _metadata_versions(store, meta_dir) if v < n]
    for v in older:
        try:
            found = json.loads(io.read_bytes(join(meta_dir, f"v{v}.metadata.json")))
        except (OSError, ValueError):
            continue
        _delete_manifests(store, found, keep)
    if R.ICEBERG_DELETE_AFTER_COMMIT.get(options):
        earliest = n - R.ICEBERG_PREVIOUS_VERSIONS_MAX.get(options)
        for v in older:
            if v < earliest:
                io.delete(join(meta_dir, f"v{v}.metadata.json"))


def expire_iceberg_metadata(store: TableStore, earliest_snapshot_id: int) -> None:
    """After snapshot expiry: the Iceberg metadata versions of expired snapshots (ids below
    ``earliest_snapshot_id``) go with their manifests, as the next Paimon commit's
    ``expireAllBefore`` would remove them (their data files may be gone) — but for the newest
    version, which the version hint names: when it is behind the table (a commit that died
    before writing the next one, or a writer that keeps no Iceberg metadata, such as Paimon
    0.9), it stays as it is until the next commit replaces it, so Iceberg readers can still
    open the table."""
    options = store.latest_schema().options
    if iceberg_storage(options) == "disabled":
        return
    meta_dir = iceberg_metadata_dir(store.root, options)
    versions = _metadata_versions(store, meta_dir)
    if not versions:
        return
    head = versions[-1]
    live = [v for v in versions if v >= earliest_snapshot_id]
    keep = _prune_history(store, meta_dir, live, earliest_snapshot_id)
    if head < earliest_snapshot_id:
        try:
            found = json.loads(store.file_io.read_bytes(join(meta_dir, f"v{head}.metadata.json")))
        except (OSError, ValueError):
            found = {}
        keep |= _manifest_lists(found)
    for v in versions:
        if v < earliest_snapshot_id and v != head:
            _delete_version(store, meta_dir, v, keep)


def iceberg_head_files(store: TableStore) -> set[str]:
    """The names of the data files the Iceberg head (the newest metadata version, which the
    version hint names) shows its readers: what snapshot expiry must keep while that head is
    behind the table (a commit that died before writing the next version, or a writer that
    keeps no Iceberg metadata). Empty when the table keeps no Iceberg metadata."""
    return _head_files(store)[0]


def _head_files(store: TableStore) -> tuple[set[str], set[str]]:
    """(the names of the data files, the names of the delete files — Puffin deletion vectors)
    of the Iceberg head's current snapshot; both empty without Iceberg metadata."""
    data: set[str] = set()
    deletes: set[str] = set()
    options = store.latest_schema().options
    if iceberg_storage(options) == "disabled":
        return data, deletes
    meta_dir = iceberg_metadata_dir(store.root, options)
    versions = _metadata_versions(store, meta_dir)
    if not versions or versions[-1] == store.latest_snapshot_id():
        # none, or the head is the latest snapshot's: its files are live, nothing to read
        return data, deletes
    path = join(meta_dir, f"v{versions[-1]}.metadata.json")
    try:
        head = json.loads(store.file_io.read_bytes(path))
    except (OSError, ValueError):
        return data, deletes
    current = head.get("current-snapshot-id")
    snaps = head.get("snapshots", [])
    for list_path in [str(s["manifest-list"]) for s in snaps if s.get("snapshot-id") == current]:
        for manifest in _manifests_of(store, list_path):
            try:
                raw = store.file_io.read_bytes(manifest)
            except FileNotFoundError:
                continue
            for entry in read_avro(raw, f"Iceberg manifest {manifest}"):
                if entry.get("status") == 2:  # deleted
                    continue
                record = entry["data_file"]
                name = str(record["file_path"]).rsplit("/", 1)[-1]
                (data if record.get("content", 0) == 0 else deletes).add(name)
    return data, deletes


def sweep_iceberg_puffins(store: TableStore) -> None:
    """After snapshot expiry has deleted index files: the Puffin files that copied them go
    (:func:`~lakeops.maintenance.iceberg_deletes.sweep_puffins`)."""
    options = store.latest_schema().options
    if iceberg_storage(options) != "disabled":
        meta_dir = iceberg_metadata_dir(store.root, options)
        # the head's own Puffin files stay while it is behind the table (see
        # iceberg_head_files): its readers apply them
        keep = {join(meta_dir, name) for name in _head_files(store)[1]}
        sweep_puffins(store, meta_dir, keep)


def _prune_history(
    store: TableStore, meta_dir: str, live: Sequence[int], earliest: int
) -> set[str]:
    """Drop from each ``live`` metadata version the Iceberg snapshots of expired Paimon
    snapshots (below ``earliest``: their data files may be gone, so Iceberg time travel must
    not reach them); a live version's current snapshot is never below it. Returns the manifest
    lists the live versions still name (what expiry keeps)."""
    io = store.file_io
    keep: set[str] = set()
    for v in live:
        path = join(meta_dir, f"v{v}.metadata.json")
        try:
            found = json.loads(io.read_bytes(path))
        except (OSError, ValueError):
            continue
        snaps = found.get("snapshots", [])
        kept = [s for s in snaps if int(s["snapshot-id"]) >= earliest]
        if len(kept) < len(snaps):
            found["snapshots"] = kept
            ids = {s["snapshot-id"] for s in kept}
            found["snapshot-log"] = [
                e for e in found.get("snapshot-log", []) if e["snapshot-id"] in ids
            ]
            io.overwrite_atomic(path, json.dumps(found).encode())
        keep |= _manifest_lists(found)
    return keep


def _delete_manifests(store: TableStore, metadata: Mapping[str, Any], keep: set[str]) -> None:
    """Delete the manifest lists of ``metadata``'s snapshots (but for those in ``keep``) and
    the manifests they name that no list of ``keep`` names too (Paimon's incremental
    metadata shares manifests between its snapshots' lists)."""
    io = store.file_io
    kept_manifests: set[str] | None = None
    for snap in metadata.get("snapshots", []):
        list_path = snap.get("manifest-list")
        if not list_path or list_path in keep or not io.exists(list_path):
            continue
        if kept_manifests is None:
            kept_manifests = {m for kept in keep for m in _manifests_of(store, kept)}
        for manifest in _manifests_of(store, list_path):
            if manifest not in kept_manifests:
                io.delete(manifest)
        io.delete(list_path)


def _manifests_of(store: TableStore, list_path: str) -> list[str]:
    """The manifests a manifest list names (none when it is gone)."""
    try:
        data = store.file_io.read_bytes(list_path)
    except FileNotFoundError:
        return []
    return [str(m["manifest_path"]) for m in read_avro(data, f"Iceberg manifest list {list_path}")]
