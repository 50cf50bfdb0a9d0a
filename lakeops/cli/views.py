"""What ``describe`` and ``health`` report: the data (JSON-ready dictionaries) and its rich
rendering. Only the latest snapshot's live files are counted."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow.compute as pc
from rich.console import Console
from rich.markup import escape

from lakeops import AnyTable, TableHealth
from lakeops.cli.grids import grid, print_grid
from lakeops.cli.output import human_bytes
from lakeops.health.view import format_ratio, partition_label
from lakeops.table import primary_key_table

__all__ = ["describe_data", "health_data", "render_describe", "render_health"]


def _iso(value: dt.datetime | None) -> str | None:
    return None if value is None else value.isoformat(timespec="milliseconds")


def _count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _snapshot_row(s: dict[str, Any]) -> dict[str, Any]:
    """A row of the ``snapshots`` metadata table as ``describe`` shows it."""
    return {
        "id": s["snapshot_id"],
        "schema_id": s["schema_id"],
        "commit_kind": s["commit_kind"],
        "commit_time": _iso(s["commit_time"]),
        "total_record_count": s["total_record_count"],
        "delta_record_count": s["delta_record_count"],
    }


def _levels(health: TableHealth) -> list[dict[str, int]]:
    files: dict[int, int] = {}
    size: dict[int, int] = {}
    for b in health.buckets:
        for level, n in b.files_by_level.items():
            files[level] = files.get(level, 0) + n
        for level, n in b.bytes_by_level.items():
            size[level] = size.get(level, 0) + n
    return [{"level": lv, "files": files[lv], "bytes": size.get(lv, 0)} for lv in sorted(files)]


def describe_data(identifier: str, table: AnyTable, last_snapshots: int) -> dict[str, Any]:
    """Schema, keys, options, schemas, the last ``last_snapshots`` snapshots (newest first),
    tags and the live files by level of ``table``. Options, schemas, snapshots, tags and the
    partition, bucket, file and byte counts come from the metadata tables
    (:meth:`~lakeops.Table.metadata_table`); times are local, as Paimon's system tables show
    them."""
    schema = table.schema
    snapshots = table.metadata_table("snapshots").to_pylist()
    recent = list(reversed(snapshots[-last_snapshots:])) if last_snapshots else []
    options = table.metadata_table("options").to_pylist()
    schemas = table.metadata_table("schemas").to_pylist()
    tags = table.metadata_table("tags").to_pylist()
    partitions = table.metadata_table("partitions")
    buckets = table.metadata_table("buckets")
    health = primary_key_table(table, "health").health(recent_snapshots=1)
    return {
        "table": identifier,
        "fields": [
            {
                "id": f.id,
                "name": f.name,
                "type": f.type.to_paimon(),
                "nullable": f.type.nullable,
                "primary_key": f.name in schema.primary_keys,
                "partition_key": f.name in schema.partition_keys,
            }
            for f in schema.fields
        ],
        "primary_keys": list(schema.primary_keys),
        "partition_keys": list(schema.partition_keys),
        "bucket_keys": list(schema.bucket_keys),
        "comment": schema.comment,
        "options": {o["key"]: o["value"] for o in options},
        "schema_id": schema.id,
        "schemas": [{"id": s["schema_id"], "update_time": _iso(s["update_time"])} for s in schemas],
        "latest_snapshot_id": snapshots[-1]["snapshot_id"] if snapshots else None,
        "snapshot_count": len(snapshots),
        "snapshots": [_snapshot_row(s) for s in recent],
        "tags": [
            {
                "name": t["tag_name"],
                "snapshot_id": t["snapshot_id"],
                "commit_time": _iso(t["commit_time"]),
                "record_count": t["record_count"],
                "time_retained": t["time_retained"],
            }
            for t in tags
        ],
        "partitions": partitions.num_rows,
        "buckets": buckets.num_rows,
        "files": pc.sum(buckets.column("file_count")).as_py() or 0,
        "bytes": pc.sum(buckets.column("file_size_in_bytes")).as_py() or 0,
        "files_by_level": _levels(health),
    }


def render_describe(console: Console, data: dict[str, Any]) -> None:
    """Print :func:`describe_data` as rich tables."""
    keys = f"primary key ({', '.join(data['primary_keys'])})"
    if data["partition_keys"]:
        keys += f", partitioned by ({', '.join(data['partition_keys'])})"
    keys += f", bucket key ({', '.join(data['bucket_keys'])})"
    console.print(f"[bold]{escape(data['table'])}[/bold]: {escape(keys)}")
    if data["comment"]:
        console.print(escape(data["comment"]))
    fields = grid("name", "type", "key")
    for f in data["fields"]:
        role = ", ".join(
            r for r, on in (("primary", f["primary_key"]), ("partition", f["partition_key"])) if on
        )
        fields.add_row(escape(f["name"]), escape(f["type"]), role)
    print_grid(console, "fields", fields)
    if data["options"]:
        options = grid("option", "value")
        for k, v in data["options"].items():
            options.add_row(escape(k), escape(v))
        print_grid(console, "options", options)
    console.print(
        f"schema {data['schema_id']} (of {len(data['schemas'])}: "
        + ", ".join(f"{x['id']} at {x['update_time']}" for x in data["schemas"])
        + ")",
        markup=False,
    )
    shown = len(data["snapshots"])
    snaps = grid("id", "kind", "committed (local)", "records", "delta")
    for s in data["snapshots"]:
        snaps.add_row(
            str(s["id"]),
            s["commit_kind"],
            s["commit_time"],
            _count(s["total_record_count"]),
            _count(s["delta_record_count"]),
        )
    print_grid(console, f"snapshots (last {shown} of {data['snapshot_count']})", snaps)
    if data["tags"]:
        tags = grid("tag", "snapshot", "committed (local)", "records", "retained")
        for t in data["tags"]:
            tags.add_row(
                escape(t["name"]),
                str(t["snapshot_id"]),
                t["commit_time"],
                _count(t["record_count"]),
                t["time_retained"] or "",
            )
        print_grid(console, "tags", tags)
    levels = grid("level", "files", "bytes")
    for lv in data["files_by_level"]:
        levels.add_row(str(lv["level"]), str(lv["files"]), human_bytes(lv["bytes"]))
    heading = (
        f"live files: {data['files']} in {data['buckets']} bucket(s) of "
        f"{data['partitions']} partition(s), {human_bytes(data['bytes'])}"
    )
    print_grid(console, heading, levels)


def health_data(identifier: str, health: TableHealth) -> dict[str, Any]:
    """``health.to_dict()`` with the table identifier."""
    return {"table": identifier, **health.to_dict()}


def render_health(console: Console, identifier: str, health: TableHealth, default: str) -> None:
    """Per bucket: partition, bucket, sorted runs, level-0 files, files by level, bytes, rows,
    estimated live rows, space amplification; then the table's space amplification and the
    write amplification of its window (figures from :mod:`lakeops.compact.health`, formatted
    as the health page formats them)."""
    if health.snapshot_id is None:
        console.print(f"{escape(identifier)} has no snapshot yet")
        return
    buckets = grid(
        "partition",
        "bucket",
        "sorted runs",
        "L0 files",
        "files by level",
        "bytes",
        "rows",
        "≈ live rows",
        "space amp",
    )
    for b in health.buckets:
        buckets.add_row(
            escape(partition_label(b.partition, default) or "-"),
            str(b.bucket),
            str(b.sorted_runs),
            str(b.level0_files),
            " ".join(f"L{lv}:{n}" for lv, n in b.files_by_level.items()),
            human_bytes(b.total_bytes),
            f"{b.rows:,}",
            f"{b.live_rows:,}",
            format_ratio(b.space_amplification),
        )
    print_grid(console, f"{escape(identifier)} at snapshot {health.snapshot_id}", buckets)
    first, last = health.window_first_snapshot, health.window_last_snapshot
    window = "no commits in the window" if first is None else f"snapshots {first}..{last}"
    console.print(
        f"space amplification {format_ratio(health.space_amplification)} (stored "
        f"{human_bytes(health.total_bytes)}, ≈ {human_bytes(health.live_bytes)} after a full "
        f"compaction); write amplification {format_ratio(health.write_amplification)} "
        f"({window}: compaction wrote {human_bytes(health.compaction_bytes)} for "
        f"{human_bytes(health.ingested_bytes)} ingested); max sorted runs "
        f"{health.max_sorted_runs}"
    )
