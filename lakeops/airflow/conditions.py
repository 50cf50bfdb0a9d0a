"""The conditions sensors and triggers wait for, and the DAGs' planning, as plain functions
over the library (no Airflow imports: triggers run them in a worker thread)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from lakeops import AnyTable, AppendTable, Catalog, Table
from lakeops.compact.append import partitions_to_compact
from lakeops.compact.health import BucketHealth, TableHealth
from lakeops.options.rows_files import DELETION_VECTORS_ENABLED
from lakeops.options.rows_merge import MERGE_ENGINE
from lakeops.options.rows_write import CHANGELOG_PRODUCER, FORCE_LOOKUP
from lakeops.table import primary_key_table

__all__ = [
    "committed_tables",
    "lookup_flush_plan",
    "flush_candidates",
    "health_violations",
    "is_lookup_table",
    "json_partition",
    "new_snapshot",
    "optimize_units",
]


def json_partition(partition: dict[str, Any]) -> dict[str, str | None]:
    """A partition spec with JSON-safe values (dates, timestamps, decimals as the text users
    write, strings unchanged — blank ones included), which :meth:`Table.compact` matches by
    value (:mod:`lakeops.format.partition_spec`)."""
    from lakeops.format.paths import partition_value_string

    return {
        k: v if v is None or isinstance(v, str) else partition_value_string(v)
        for k, v in partition.items()
    }


def health_violations(
    health: TableHealth,
    *,
    max_sorted_runs: int | None = None,
    max_level0_age: dt.timedelta | None = None,
) -> list[dict[str, Any]]:
    """Buckets with more sorted runs than ``max_sorted_runs`` or a level-0 file older than
    ``max_level0_age`` (JSON-safe dicts: partition, bucket, sorted_runs, level0_age_s)."""
    out = []
    for b in health.buckets:
        too_many = max_sorted_runs is not None and b.sorted_runs > max_sorted_runs
        too_old = (
            max_level0_age is not None
            and b.oldest_level0_age_s is not None
            and b.oldest_level0_age_s > max_level0_age.total_seconds()
        )
        if too_many or too_old:
            out.append(_bucket_dict(b))
    return out


def _bucket_dict(b: BucketHealth) -> dict[str, Any]:
    return {
        "partition": json_partition(b.partition),
        "bucket": b.bucket,
        "sorted_runs": b.sorted_runs,
        "level0_files": b.level0_files,
        "level0_age_s": None if b.oldest_level0_age_s is None else round(b.oldest_level0_age_s),
    }


def new_snapshot(
    table: Table, *, since_snapshot_id: int | None = None, since: dt.datetime | None = None
) -> dict[str, Any] | None:
    """The latest snapshot as a dict if it is newer than ``since_snapshot_id`` and committed
    after ``since`` (either may be None; with both None any snapshot counts), else None."""
    latest = table.latest_snapshot()
    if latest is None:
        return None
    if since_snapshot_id is not None and latest.id <= since_snapshot_id:
        return None
    if since is not None:
        since_ms = (
            since.timestamp() * 1000
            if since.tzinfo
            else since.replace(tzinfo=dt.UTC).timestamp() * 1000
        )
        if latest.time_millis <= since_ms:
            return None
    return {
        "snapshot_id": latest.id,
        "commit_kind": latest.commit_kind,
        "time_millis": latest.time_millis,
    }


def is_lookup_table(table: AnyTable) -> bool:
    """Primary-key tables whose readers skip level 0 until it is flushed: first-row,
    deletion vectors, ``changelog-producer=lookup`` and ``force-lookup`` (an append table's
    reads see every file, deletion vectors or not)."""
    raw = table.schema.options
    return bool(table.schema.primary_keys) and (
        MERGE_ENGINE.find(raw) == "first-row"
        or CHANGELOG_PRODUCER.find(raw) == "lookup"
        or DELETION_VECTORS_ENABLED.get(raw)
        or FORCE_LOOKUP.get(raw)
    )


def optimize_units(
    catalog: Catalog,
    tables: Iterable[str],
    *,
    max_sorted_runs: int = 1,
    log: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """One unit per (table, partition) whose buckets hold more than ``max_sorted_runs`` sorted
    runs — what the optimisation DAG fully compacts; healthy ones are skipped (append tables:
    the partitions where a full compaction would rewrite small files). Units are
    ``{"table": "db.t", "partitions": [{...}] | None}`` (None for unpartitioned tables).

    ``log`` receives one line per table: whether it was chosen, and why."""
    units: list[dict[str, Any]] = []
    say = log or (lambda _line: None)
    for identifier in tables:
        table = catalog.get_table(identifier)
        if isinstance(table, AppendTable):  # the partitions a full compaction would rewrite
            specs = [json_partition(p) for p in partitions_to_compact(table.context, full=True)]
            units += [{"table": identifier, "partitions": [s] if s else None} for s in specs]
            if specs:
                say(
                    f"{identifier}: chosen — append table with small files to rewrite in "
                    f"{_where(specs)}"
                )
            else:
                say(f"{identifier}: skipped — append table with no small files to rewrite")
            continue
        health = table.health(recent_snapshots=1)
        seen: list[dict[str, Any]] = []
        for b in health.buckets:
            if b.sorted_runs <= max_sorted_runs:
                continue
            spec = json_partition(b.partition)
            if spec not in seen:
                seen.append(spec)
        units += [{"table": identifier, "partitions": [s] if s else None} for s in seen]
        most = max((b.sorted_runs for b in health.buckets), default=0)
        if seen:
            say(
                f"{identifier}: chosen — up to {most} sorted runs in a bucket, more than "
                f"max_sorted_runs={max_sorted_runs}, in {_where(seen)}"
            )
        elif not health.buckets:
            say(f"{identifier}: skipped — no data files")
        else:
            say(
                f"{identifier}: skipped — at most {most} sorted run(s) per bucket "
                f"(max_sorted_runs={max_sorted_runs})"
            )
    return units


def _where(specs: Sequence[Mapping[str, Any]]) -> str:
    """The partitions of a plan line: the whole table, or how many partitions and which."""
    if not any(specs):
        return "the table (unpartitioned)"
    shown = ", ".join(",".join(f"{k}={v}" for k, v in spec.items()) for spec in specs[:5])
    more = f", … ({len(specs)} in all)" if len(specs) > 5 else ""
    return f"{len(specs)} partition(s): {shown}{more}"


def flush_candidates(catalog: Catalog, tables: Sequence[str]) -> list[str]:
    """The lookup tables among ``tables`` that have level-0 files to flush."""
    out = []
    for identifier in tables:
        table = catalog.get_table(identifier)
        if not is_lookup_table(table):
            continue
        keyed = primary_key_table(table, "health")
        if any(b.level0_files for b in keyed.health(recent_snapshots=1).buckets):
            out.append(identifier)
    return out


def committed_tables(events: Iterable[tuple[str, Sequence[Mapping[str, Any]]]]) -> list[str]:
    """The tables (``db.table``) whose Asset events include a commit other than a compaction,
    given ``(asset uri, [event extras])`` pairs; compactions (such as a flush's own commits)
    bring no new data, so they do not count. Non-lakeops URIs are ignored."""
    from lakeops.airflow.assets import parse_table_uri

    out: list[str] = []
    for uri, extras in events:
        if not uri.startswith("lakeops://"):
            continue
        if any(_commit_kind(extra) != "COMPACT" for extra in extras):
            table = parse_table_uri(uri)[1]
            if table not in out:
                out.append(table)
    return out


def lookup_flush_plan(catalog: Catalog, events: Mapping[Any, Sequence[Any]]) -> list[str]:
    """The lookup tables a lookup-flush DAG run flushes: with ``events`` (Airflow's
    ``triggering_asset_events``: Asset → events), those whose commits triggered the run;
    without (a scheduled or manual run), every table of the warehouse — in both cases only
    those with level-0 files to flush."""
    if events:
        tables = committed_tables(
            (getattr(asset, "uri", ""), [e.extra for e in evts]) for asset, evts in events.items()
        )
    else:
        tables = [f"{db}.{t}" for db in catalog.list_databases() for t in catalog.list_tables(db)]
    return flush_candidates(catalog, tables)


def _commit_kind(extra: Mapping[str, Any] | None) -> Any:
    """The commit kind of an Asset event's extra: an operator's (``commit_kind``) or a
    :class:`~lakeops.airflow.triggers.LakeopsCommitTrigger`'s (``payload.commit_kind``)."""
    extra = extra or {}
    payload = extra.get("payload")
    if extra.get("from_trigger") and isinstance(payload, Mapping):
        return payload.get("commit_kind")
    return extra.get("commit_kind")
