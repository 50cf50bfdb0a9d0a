"""The options of the ``lakeops`` data source, named as Paimon's Spark connector names them.

Spark hands a Python data source its options with lower-cased keys; every name here is matched
case-insensitively (``versionAsOf`` = ``versionasof``). An option the data source does not
know is a :class:`~lakeops.errors.ConfigurationError` naming it and listing the known ones: a
misspelt option is never silently ignored. The one exception are the table properties Spark's
session catalog adds for a table registered there (:data:`CATALOG_PROPERTIES`, see
:func:`source_options`), which describe Spark's entry, not the read.

Reads (``spark.read.format("lakeops").option(...)``):

* time travel: ``scan.snapshot-id`` (a snapshot id), ``scan.tag-name`` (a tag),
  ``scan.timestamp-millis`` (epoch milliseconds: the newest snapshot committed at or before),
  and Spark's spellings ``versionAsOf`` (a tag of that name, else a snapshot id, as Paimon's
  ``VERSION AS OF``) and ``timestampAsOf`` (epoch seconds, or an ISO timestamp with its zone
  offset); see :mod:`lakeops.store.time_travel`;
* ``incremental-between`` — ``"start,end"`` snapshot ids or tag names: what changed after
  ``start`` up to ``end``, with a ``rowkind`` column (``+I``/``-U``/``+U``/``-D``) first, as
  Paimon's ``audit_log`` table has it; ``incremental-between-scan-mode`` — ``auto`` (default),
  ``delta``, ``changelog`` or ``diff`` (see :meth:`lakeops.Table.read_changes`);
* ``partitions`` — a JSON list of partition specs (``[{"dt": "2024-01-01"}]``, as
  ``overwrite_partitions``): only the splits of those partitions are read (matched exactly on
  the partitions' values, as an overwrite of them matches; what :func:`lakeops.spark.rescale`
  reads).

Writes (``df.write.format("lakeops").option(...)``): the connection options, ``parallelism``,
``overwrite_partitions``, ``commit_user`` (a stable commit user makes the write exactly-once:
a write whose user already committed is skipped, see :mod:`lakeops.commit.exactly_once`),
``watermark`` (epoch milliseconds, stored in the snapshot as ``Table.commit`` stores it),
``last_safe_snapshot`` (an overwrite refused when a later snapshot changed the partitions it
replaces, as ``Table.commit`` takes it: what :func:`lakeops.spark.rescale` sets), and
for a write that creates the table ``primary-key`` and
``partition`` (comma-separated column names) plus any Paimon table option
(:mod:`lakeops.options.registry`). On an existing table those must equal what the table has.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lakeops.changelog.reader import ChangeMode
from lakeops.errors import ConfigurationError
from lakeops.options.registry import rule_for

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

__all__ = [
    "CATALOG_PROPERTIES",
    "CONNECTION_OPTIONS",
    "LOCATION_METADATA",
    "READ_OPTIONS",
    "STREAM_READ_OPTIONS",
    "ROW_KIND_COLUMN",
    "WRITE_OPTIONS",
    "ScanSpec",
    "TableOptions",
    "parse_read_options",
    "registered_location",
    "source_options",
    "split_write_options",
]

#: where the table is and how to reach it (reads and writes)
CONNECTION_OPTIONS = (
    "path",
    "warehouse",
    "table",
    "storage_options",
    "storage_options_secret",
    "catalog_options",
    "catalog_options_secret",
)
#: read options, spelt as Paimon's Spark connector spells them
READ_OPTIONS = (
    "scan.snapshot-id",
    "versionAsOf",
    "scan.timestamp-millis",
    "timestampAsOf",
    "scan.tag-name",
    "incremental-between",
    "incremental-between-scan-mode",
    "partitions",
)
#: read options of streams only (spark.readStream; see lakeops.spark.streaming)
STREAM_READ_OPTIONS = ("row-kind", "scan.mode", "changes.mode", "consumer-id")
#: write options besides table options
WRITE_OPTIONS = (
    "parallelism",
    "overwrite_partitions",
    "primary-key",
    "partition",
    "commit_user",
    "watermark",
    "last_safe_snapshot",
    "row_level",  # a row-level change's job (lakeops.spark.row_level), set by lakeops itself
)
#: the table properties Spark's session catalog adds to the options of a table registered there
#: (``CREATE TABLE … USING lakeops``, :func:`lakeops.spark.register_tables`)
CATALOG_PROPERTIES = frozenset(
    {"location", "provider", "owner", "comment", "external", "is_managed_location", "collation"}
)
#: the prefix under which Spark's session catalog hands a registered table's options back
_CATALOG_OPTION_PREFIX = "option."
#: the row-kind column of incremental reads (Paimon's ``audit_log`` column name)
ROW_KIND_COLUMN = "rowkind"

_MODES: tuple[ChangeMode, ...] = ("auto", "delta", "changelog", "diff")
#: the read options that each name one snapshot to read
_TIME_TRAVEL = (
    "scan.snapshot-id",
    "versionAsOf",
    "scan.timestamp-millis",
    "timestampAsOf",
    "scan.tag-name",
)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class ScanSpec:
    """What a read returns: the merged rows of one snapshot — the latest, or the one
    ``snapshot_id``, ``tag``, ``as_of_millis`` or ``version`` (``versionAsOf``: a tag of that
    name, else the snapshot of that id, as Paimon's ``VERSION AS OF`` resolves it) names — or
    the changes between two snapshots (``incremental`` = (start exclusive, end inclusive),
    snapshot ids or tag names) read in ``mode``."""

    snapshot_id: int | None = None
    tag: str | None = None
    as_of_millis: int | None = None
    version: str | None = None
    incremental: tuple[int | str, int | str] | None = None
    mode: ChangeMode = "auto"
    #: ``row-kind=true``: a stream's rows carry their row kind (``rowkind``) first
    row_kind: bool = False
    #: the stream-only options given (refused by a batch read)
    stream_only: tuple[str, ...] = ()


def source_options(options: Mapping[str, str]) -> dict[str, str]:
    """The options a user gave, from what Spark hands the data source: for a table read through
    Spark's session catalog Spark adds the table's properties (:data:`CATALOG_PROPERTIES`,
    dropped here) and hands every option given at registration back twice, as given under an
    ``option.`` prefix and plain (``path`` then qualified as a URI); the prefixed value is the
    one kept, unprefixed."""
    opts = {k: v for k, v in options.items() if k.lower() not in CATALOG_PROPERTIES}
    for key in [k for k in opts if k.lower().startswith(_CATALOG_OPTION_PREFIX)]:
        opts[key[len(_CATALOG_OPTION_PREFIX) :]] = opts.pop(key)
    return opts


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in options.items()}


def _known_list(names: tuple[str, ...]) -> str:
    return ", ".join(names)


def _snapshot_id(option: str, value: str) -> int:
    text = value.strip()
    if not text.isdigit() or int(text) < 1:
        raise ConfigurationError(
            f"option {option!r} must be a snapshot id (a positive integer), got {value!r}"
        )
    return int(text)


def _millis(option: str, value: str) -> int:
    """``scan.timestamp-millis``: epoch milliseconds; ``timestampAsOf``: epoch seconds (as
    Paimon's ``TIMESTAMP AS OF 1678883047``) or an ISO timestamp with its zone offset."""
    text = value.strip()
    if option == "scan.timestamp-millis":
        if not text.isdigit():
            raise ConfigurationError(
                f"option 'scan.timestamp-millis' must be epoch milliseconds, got {value!r}"
            )
        return int(text)
    if text.isdigit():
        return int(text) * 1000
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        when = None
    if when is None or when.tzinfo is None:
        raise ConfigurationError(
            f"option 'timestampAsOf' must be epoch seconds or an ISO timestamp with its zone "
            f"offset (e.g. '2024-06-01 00:00:00.123+00:00'), got {value!r}: a time without a "
            "zone would be read in whatever zone the Spark worker runs in"
        )
    return (when - _EPOCH) // dt.timedelta(milliseconds=1)  # exact: no float on the way


def parse_read_options(options: Mapping[str, str]) -> ScanSpec:
    """Validate the read options and say what to read; unknown or contradicting options are
    a :class:`ConfigurationError`."""
    opts = _lower(options)
    known = CONNECTION_OPTIONS + READ_OPTIONS + STREAM_READ_OPTIONS
    unknown = sorted(k for k in opts if k not in {n.lower() for n in known})
    if unknown:
        raise ConfigurationError(
            f"unknown read option(s) {unknown} for the lakeops data source; the known read "
            f"options are: {_known_list(known)}"
        )
    stream_only = tuple(o for o in STREAM_READ_OPTIONS if o in opts)
    row_kind = opts.get("row-kind", "false").strip().lower()
    if row_kind not in ("true", "false"):
        raise ConfigurationError(f"option 'row-kind' must be 'true' or 'false', got {row_kind!r}")
    given, snapshot_id, version, tag, as_of = _time_travel(opts)
    mode_text = opts.get("incremental-between-scan-mode")
    between = opts.get("incremental-between")
    if between is None:
        if mode_text is not None:
            raise ConfigurationError(
                "option 'incremental-between-scan-mode' needs 'incremental-between' "
                "('start,end' snapshot ids or tag names)"
            )
        return ScanSpec(
            snapshot_id=snapshot_id,
            tag=tag,
            as_of_millis=as_of,
            version=version,
            row_kind=row_kind == "true",
            stream_only=stream_only,
        )
    if given:
        raise ConfigurationError(
            f"options 'incremental-between' and {given} contradict each other; give one of them"
        )
    start, end = _between(between)
    mode = _between_mode(mode_text)
    return ScanSpec(
        incremental=(start, end),
        mode=mode,
        row_kind=row_kind == "true",
        stream_only=stream_only,
    )


def _time_travel(
    opts: Mapping[str, str],
) -> tuple[list[str], int | None, str | None, str | None, int | None]:
    """The time-travel options given (a ``versionAsOf`` that repeats ``scan.snapshot-id`` is
    dropped), and the snapshot id, version, tag and time (epoch millis) they name; more than
    one is a :class:`ConfigurationError`."""
    given = [o for o in _TIME_TRAVEL if o.lower() in opts]
    snapshot_id = version = tag = as_of = None
    for option in given:
        value = opts[option.lower()]
        if option == "scan.snapshot-id":
            snapshot_id = _snapshot_id(option, value)
        elif option == "versionAsOf":
            version = value.strip()
            if not version:
                raise ConfigurationError("option 'versionAsOf' is empty")
        elif option == "scan.tag-name":
            tag = value.strip()
            if not tag:
                raise ConfigurationError("option 'scan.tag-name' is empty")
        else:
            as_of = _millis(option, value)
    if version is not None and version == str(snapshot_id):
        given.remove("versionAsOf")  # the same snapshot spelt twice
        version = None
    if len(given) > 1:
        raise ConfigurationError(f"options {given} each name a snapshot to read; give one of them")
    return given, snapshot_id, version, tag, as_of


def _between(between: str) -> tuple[int | str, int | str]:
    """``incremental-between``'s (start exclusive, end inclusive): snapshot ids or tag names."""
    parts = [p.strip() for p in between.split(",")]
    if len(parts) != 2 or not all(parts):
        raise ConfigurationError(
            "option 'incremental-between' must be 'start,end' snapshot ids or tag names, "
            f"got {between!r}"
        )
    start, end = (int(p) if p.isdigit() else p for p in parts)
    if isinstance(start, int) and isinstance(end, int) and start >= end:
        raise ConfigurationError(
            f"option 'incremental-between' must name an earlier then a later snapshot "
            f"(start exclusive, end inclusive), got {between!r}"
        )
    return start, end


def _between_mode(mode_text: str | None) -> ChangeMode:
    mode = (mode_text or "auto").strip().lower()
    if mode not in _MODES:
        raise ConfigurationError(
            f"option 'incremental-between-scan-mode' must be one of {list(_MODES)}, "
            f"got {mode_text!r}"
        )
    return mode


@dataclass(frozen=True)
class TableOptions:
    """The table-defining part of write options: the keys (None when not given) and the
    Paimon table options."""

    primary_keys: list[str] | None
    partition_keys: list[str] | None
    options: dict[str, str]


def _columns(value: str) -> list[str]:
    return [c.strip() for c in value.split(",") if c.strip()]


def split_write_options(options: Mapping[str, str], field_names: list[str]) -> TableOptions:
    """Validate write options; return the table-defining ones. Unknown keys are a
    :class:`ConfigurationError` naming them and the known options.

    Spark lower-cases option keys, so a ``fields.<column>.<option>`` key gets the column's
    own spelling back from ``field_names`` (matched case-insensitively)."""
    plain = {n.lower() for n in CONNECTION_OPTIONS + WRITE_OPTIONS}
    by_lower: dict[str, list[str]] = {}
    for name in field_names:
        by_lower.setdefault(name.lower(), []).append(name)
    table_options: dict[str, str] = {}
    unknown: list[str] = []
    for key, value in options.items():
        k = key.lower()
        if k in plain:
            continue
        if k.startswith("fields.") and k.count(".") >= 2:
            column, rest = k[len("fields.") :].rsplit(".", 1)
            names = by_lower.get(column, [column])
            if len(names) > 1:
                raise ConfigurationError(
                    f"write option {key!r}: Spark lower-cases option keys and the columns "
                    f"{names} differ only in case; rename one of them"
                )
            k = f"fields.{names[0]}.{rest}"
        rule = rule_for(k)
        if rule is None or k == "path":
            unknown.append(key)
        else:
            table_options[k] = value
    if unknown:
        raise ConfigurationError(
            f"unknown write option(s) {sorted(unknown)} for the lakeops data source; the known "
            f"write options are: {_known_list(CONNECTION_OPTIONS + WRITE_OPTIONS)} and the "
            "Paimon table options (lakeops.options.registry.known_keys()), which configure a "
            "table the write creates"
        )
    opts = _lower(options)
    pk, part = opts.get("primary-key"), opts.get("partition")
    return TableOptions(
        primary_keys=_columns(pk) if pk is not None else None,
        partition_keys=_columns(part) if part is not None else None,
        options=table_options,
    )


#: the column metadata key holding the data-source options (JSON) of a table registered by
#: :func:`lakeops.spark.register_tables`
LOCATION_METADATA = "lakeops.location"


def registered_location(schema: StructType) -> dict[str, str]:
    """The data-source options :func:`lakeops.spark.register_tables` stored in ``schema``
    (empty when the schema is not a registered table's)."""
    for field in schema.fields:
        text = (field.metadata or {}).get(LOCATION_METADATA)
        if text:
            return {str(k): str(v) for k, v in json.loads(text).items()}
    return {}
