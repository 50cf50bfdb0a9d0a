"""The health page of an append table (no primary key): what its latest snapshot holds.

An append table has no sorted runs, levels or duplicate keys, so the LSM picture of
:mod:`lakeops.health.view` does not apply. :func:`render_append_table_html` shows the header
facts (latest snapshot, records, schema and tags, partition keys, buckets, live files, bytes)
and one row per partition — buckets, files, bytes, rows and the mean file size, the partitions
with the most files first (small files are what an append table's compaction merges) — read
from the latest snapshot's manifests only. Counts carry thousands separators; every value is
HTML-escaped; no script, no external resource, no warehouse path.

Stable hooks: ``<header data-snapshot-id>`` and ``<tr class="partition" data-partition
data-buckets data-files data-bytes>`` per partition.
"""

from __future__ import annotations

from typing import Any

from lakeops.format import binary_row
from lakeops.health.view import (
    _e,
    _facts,
    _metadata_facts,
    _page,
    _utc,
    format_count,
    human_bytes,
    partition_label,
)

__all__ = ["MAX_PARTITION_ROWS", "render_append_table_html"]

#: partitions listed; beyond, the ones with the most files
MAX_PARTITION_ROWS = 200


def render_append_table_html(identifier: str, table: Any, *, back_href: str | None = None) -> str:
    """The page of append table ``table`` (an :class:`~lakeops.table.append.AppendTable`,
    named ``identifier`` on the page) as a complete HTML document (module docstring); with
    ``back_href``, it starts with an "all tables" link to it."""
    store = table.store
    schema = table.schema
    latest = store.latest_snapshot()
    entries = store.live_entries(latest)
    part_types = schema.types_of(schema.partition_keys)
    default_name = table.options.partition_default_name
    groups: dict[bytes, list[Any]] = {}
    for e in entries:
        groups.setdefault(e.partition, []).append(e)
    rows = []
    for pbytes, members in groups.items():
        values = binary_row.deserialize(pbytes, part_types)
        label = partition_label(dict(zip(schema.partition_keys, values, strict=True)), default_name)
        files = len(members)
        size = sum(e.file.file_size for e in members)
        count = sum(e.file.row_count for e in members)
        buckets = len({e.bucket for e in members})
        rows.append((label, buckets, files, size, count))
    rows.sort(key=lambda r: (-r[2], -r[3], r[0]))
    total_bytes = sum(r[3] for r in rows)
    facts: list[tuple[str, object]] = [
        ("latest snapshot", "none" if latest is None else f"{latest.id} ({latest.commit_kind})"),
        ("committed", "-" if latest is None else _utc(latest.time_millis)),
        ("records", "-" if latest is None else format_count(latest.total_record_count)),
        *_metadata_facts(table),
        ("partition keys", ", ".join(schema.partition_keys) or "-"),
        ("buckets", table.options.bucket),
        ("partitions", format_count(len(rows))),
        ("live files", format_count(len(entries))),
        ("bytes", human_bytes(total_bytes)),
    ]
    shown = rows[:MAX_PARTITION_ROWS]
    body_rows = "".join(
        f'<tr class="partition" data-partition="{_e(label)}" data-buckets="{buckets}" '
        f'data-files="{files}" data-bytes="{size}"><td>{_e(label or "-")}</td>'
        f"<td>{format_count(buckets)}</td><td>{format_count(files)}</td>"
        f'<td title="{format_count(size)} bytes">{_e(human_bytes(size))}</td>'
        f"<td>{format_count(count)}</td><td>{_e(human_bytes(size / files if files else 0))}</td>"
        "</tr>"
        for label, buckets, files, size, count in shown
    )
    more = (
        f'<p class="muted">The {format_count(MAX_PARTITION_ROWS)} of {format_count(len(rows))} '
        "partitions with the most files are listed.</p>"
        if len(rows) > MAX_PARTITION_ROWS
        else ""
    )
    table_html = (
        '<table class="partitions"><tr><th>partition</th><th>buckets</th><th>files</th>'
        f"<th>bytes</th><th>rows</th><th>mean file</th></tr>{body_rows}</table>{more}"
        if rows
        else '<p class="muted">The table holds no data files.</p>'
    )
    back = f'<nav><a class="back" href="{_e(back_href)}">all tables</a></nav>' if back_href else ""
    snapshot_attr = "" if latest is None else str(latest.id)
    body = (
        f'{back}<header data-snapshot-id="{snapshot_attr}"><h1>{_e(identifier)}</h1>'
        '<div class="muted">lakeops table health · Paimon append table (no primary key: no '
        "sorted runs or levels; compaction merges small files)</div>"
        f"{_facts(facts)}</header><h2>Partitions</h2>{table_html}"
    )
    return _page(f"{identifier} · lakeops", body)
