"""The table-health picture: one self-contained HTML page per table (rendering only: every
figure comes from :mod:`lakeops.compact.health`, the metrics the CLI and the sensors use too).

:func:`render_table_html` draws the LSM shape of every (partition, bucket) of the latest snapshot
and the amplification of the recent snapshots:

* one band per (partition, bucket): each sorted run is a row — every level-0 file is a run of its
  own (newest first), every level ≥ 1 is one run — and every file is a rectangle whose width grows
  with the square root of its size, labelled with its level; the band's header gives sorted runs,
  files, bytes, rows, space amplification and the age of the oldest level-0 file;
* a header with the table identifier, latest snapshot, its schema and tags (from the metadata
  tables ``schemas`` and ``tags``), merge engine, bucket count,
  changelog producer, compaction triggers, space amplification and the write amplification of
  the window :func:`~lakeops.compact.health.table_health` reports (the CLI's figures);
* beyond :data:`MAX_BANDS` buckets (a dozen), a heat map of sorted runs with one row per
  partition (at most :data:`MAX_HEATMAP_ROWS`) and one column per bucket id, each cell coloured
  by :func:`heat_color` (green, amber near the compaction trigger, red at it, dark red at the
  stop trigger) with the bucket's figures in its title; a row per partition (buckets, files,
  bytes, most sorted runs, space amplification; a drill-down link per row, and on the heat
  map's row labels, when the caller gives ``partition_href``) and the bands of whole
  partitions only, worst first (most sorted runs, then most bytes), as many as fit in
  :data:`MAX_BANDS` buckets; ``partition=`` draws the heat map row and bands of one partition
  (the drill-down page);
* a chart of the last ``recent_snapshots`` snapshots: live files, the largest sorted-run count of
  any bucket, and bytes written by ingestion vs. compaction per snapshot. It costs one full read
  of the oldest charted snapshot's manifests plus one delta manifest per later snapshot.

The page is plain HTML with inline CSS and inline SVG: no JavaScript, no external resource.
Every value shown is HTML-escaped (partition values are user data). The page names the table by
its identifier only; it never shows the warehouse URI, table path or storage options.

Stable hooks for tests and tools: ``<header data-snapshot-id data-write-amplification
data-space-amplification>`` (the figures as shown), ``<g class="bucket" data-partition
data-bucket data-sorted-runs data-files data-space-amplification>`` per band (inside a
``<section class="band">``), ``<rect class="file" data-level>`` per file, and ``<g
class="snapshot" data-snapshot-id data-commit-kind data-files data-max-sorted-runs
data-ingested-bytes data-compacted-bytes>`` per charted snapshot, ``<tr class="partition"
data-partition data-buckets data-max-sorted-runs data-drawn>`` per summarised partition, ``<td
class="cell STATE" data-partition data-bucket data-sorted-runs>`` per heat-map cell. Counts are
shown with thousands separators (``3,000,002``).

The core library does not import Airflow; this module is reused by the Airflow plugin and the CLI.
"""

from __future__ import annotations

import datetime as dt
import difflib
import html
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lakeops.compact.health import BucketHealth, SnapshotPoint, TableHealth, snapshot_history
from lakeops.errors import ConfigurationError
from lakeops.format.data_file import DataFileMeta
from lakeops.format.paths import partition_value_string
from lakeops.health.summary import near_from, run_state
from lakeops.options.compaction import CompactOptions
from lakeops.options.rows_write import CHANGELOG_PRODUCER

if TYPE_CHECKING:
    from lakeops.table.primary_key import Table

__all__ = [
    "check_partition",
    "format_count",
    "format_ratio",
    "human_bytes",
    "partition_label",
    "render_message_html",
    "render_table_html",
]

#: files drawn per sorted run; the rest are summarised as "+N more"
MAX_FILES_PER_RUN = 300

#: buckets drawn as bands; a larger table gets a partition-by-bucket heat map of every bucket,
#: a per-partition summary and the bands of its buckets with the most sorted runs (then the
#: most bytes)
MAX_BANDS = 12

#: partitions (rows) of the heat map; beyond, the ones with the most sorted runs are drawn
MAX_HEATMAP_ROWS = 100

_LABEL_W = 64
_ROW_H = 18
_ROW_GAP = 4
_FILE_GAP = 2
_MIN_FILE_W = 6.0
_MAX_FILE_W = 160.0
_TAIL_W = 190
_LEVEL_COLORS = (
    "#e8833a",  # level 0
    "#4e79a7",
    "#59a14f",
    "#76b7b2",
    "#b07aa1",
    "#9c755f",
    "#edc948",
    "#ff9da7",
)


#: tags named in the page's header; more are counted
MAX_TAGS_SHOWN = 5


def _e(value: object) -> str:
    """``value`` as text, escaped for HTML text and quoted attributes."""
    return html.escape(str(value), quote=True)


def format_count(n: int) -> str:
    """A count with thousands separators: ``3000002`` → ``3,000,002``."""
    return f"{n:,}"


def human_bytes(n: float) -> str:
    """``1536`` → ``1.5 KiB``."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def _human_age(seconds: float | None) -> str:
    """``192.5`` → ``3m 12s``; ``None`` → ``-``."""
    if seconds is None:
        return "-"
    s = max(int(seconds), 0)
    days, s = divmod(s, 86400)
    hours, s = divmod(s, 3600)
    minutes, s = divmod(s, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    if minutes:
        return f"{minutes}m {s}s"
    return f"{s}s"


def _utc(millis: int) -> str:
    return dt.datetime.fromtimestamp(millis / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def format_ratio(value: float | None) -> str:
    """An amplification as the CLI and the page show it: ``1.5`` → ``1.50``, None → ``-``."""
    return "-" if value is None else f"{value:.2f}"


def _level_color(level: int) -> str:
    return _LEVEL_COLORS[min(level, len(_LEVEL_COLORS) - 1)]


def partition_label(partition: Mapping[str, Any], default_name: str) -> str:
    """``k1=v1/k2=v2`` with Paimon's string form of each value ('' when unpartitioned)."""
    parts = []
    for name, value in partition.items():
        text = partition_value_string(value)
        parts.append(f"{name}={default_name if text is None else text}")
    return "/".join(parts)


# --------------------------------------------------------------------------- page parts
_CSS = """
:root { color-scheme: light dark; --fg: #1f2328; --muted: #656d76; --bg: #ffffff;
  --panel: #f6f8fa; --line: #d0d7de; --warn: #bf8700; --bad: #cf222e; --accent: #0969da; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #8d96a0; --bg: #0d1117;
  --panel: #161b22; --line: #30363d; --warn: #d29922; --bad: #f85149; --accent: #4493f8; } }
* { box-sizing: border-box; }
body { margin: 0; padding: 16px 24px 40px; font: 14px/1.45 system-ui, -apple-system,
  "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
h1 { font-size: 20px; margin: 0 0 4px; word-break: break-all; }
h2 { font-size: 16px; margin: 24px 0 8px; }
a { color: var(--accent); }
.muted { color: var(--muted); }
table.partitions { border-collapse: collapse; font-size: 13px; }
table.partitions th, table.partitions td { padding: 2px 10px; border-bottom: 1px solid var(--line);
  text-align: right; }
table.partitions th:first-child, table.partitions td:first-child { text-align: left; }
dl.facts { display: grid; grid-template-columns: repeat(auto-fill, minmax(190px, 1fr));
  gap: 6px 16px; margin: 12px 0; padding: 12px; background: var(--panel);
  border: 1px solid var(--line); border-radius: 6px; }
dl.facts div { min-width: 0; }
dl.facts dt { font-size: 12px; color: var(--muted); }
dl.facts dd { margin: 0; font-weight: 600; overflow-wrap: anywhere; }
.band { margin: 10px 0; padding: 8px 10px; border: 1px solid var(--line); border-radius: 6px; }
.band.due { border-left: 4px solid var(--warn); }
.band.stalled { border-left: 4px solid var(--bad); }
.band h3 { font-size: 14px; margin: 0 0 4px; overflow-wrap: anywhere; }
.band .stats { font-size: 12px; color: var(--muted); margin-bottom: 6px; }
.band .stats b { color: var(--fg); font-weight: 600; }
.scroll { overflow-x: auto; }
svg text { font: 11px system-ui, sans-serif; fill: var(--fg); }
svg text.dim { fill: var(--muted); }
svg rect.file { stroke: var(--bg); stroke-width: 1; }
svg .axis { stroke: var(--line); }
.legend span { display: inline-block; margin-right: 12px; font-size: 12px; }
.legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px;
  vertical-align: -1px; border-radius: 2px; }
table.heatmap { border-collapse: separate; border-spacing: 2px; font-size: 11px; }
table.heatmap th { font-weight: 500; color: var(--muted); padding: 0 4px; text-align: center; }
table.heatmap th.row { text-align: left; white-space: nowrap; max-width: 260px;
  overflow: hidden; text-overflow: ellipsis; }
table.heatmap td { min-width: 24px; height: 20px; padding: 0 3px; text-align: center;
  border-radius: 3px; font-variant-numeric: tabular-nums; }
table.heatmap td.empty { background: var(--panel); }
.heat-legend span { display: inline-block; margin-right: 12px; font-size: 12px; }
.heat-legend i { display: inline-block; min-width: 22px; padding: 0 3px; margin-right: 4px;
  text-align: center; font-style: normal; border-radius: 3px; }
"""


def _page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>"
        f"<body>{body}</body></html>\n"
    )


def _facts(items: Sequence[tuple[str, object]]) -> str:
    cells = "".join(f"<div><dt>{_e(k)}</dt><dd>{_e(v)}</dd></div>" for k, v in items)
    return f'<dl class="facts">{cells}</dl>'


def _file_width(size: int, max_size: int) -> float:
    """Square-root scale: area-like growth, so tiny files stay visible next to huge ones."""
    if max_size <= 0:
        return _MIN_FILE_W
    return _MIN_FILE_W + (_MAX_FILE_W - _MIN_FILE_W) * math.sqrt(max(size, 0) / max_size)


def _file_rect(f: DataFileMeta, x: float, y: float, w: float) -> str:
    tip = (
        f"level {f.level} · {human_bytes(f.file_size)} ({format_count(f.file_size)} bytes) · "
        f"{format_count(f.row_count)} rows · sequence "
        f"{f.min_sequence_number}..{f.max_sequence_number}"
    )
    label = (
        f'<text x="{x + w / 2:.1f}" y="{y + _ROW_H / 2 + 4:.1f}" text-anchor="middle" '
        f'style="fill:#fff">L{f.level}</text>'
        if w >= 22
        else ""
    )
    return (
        f'<rect class="file" data-level="{f.level}" data-bytes="{f.file_size}" '
        f'data-rows="{f.row_count}" x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" '
        f'height="{_ROW_H}" rx="2" fill="{_level_color(f.level)}"><title>{_e(tip)}</title></rect>'
        f"{label}"
    )


def _bucket_svg(b: BucketHealth, label: str, max_size: int) -> str:
    """The SVG of one band: one row per sorted run of ``b``."""
    runs = b.runs
    rows: list[str] = []
    width = 0.0
    level0_index = 0
    for i, run in enumerate(runs):
        y = 4 + i * (_ROW_H + _ROW_GAP)
        if run.level == 0:
            level0_index += 1
            run_label = f"L0 #{level0_index}"
        else:
            run_label = f"L{run.level}"
        parts = [
            f'<text x="0" y="{y + _ROW_H / 2 + 4:.1f}" class="dim">{_e(run_label)}</text>',
        ]
        x = float(_LABEL_W)
        members: Sequence[DataFileMeta] = run.files
        for f in members[:MAX_FILES_PER_RUN]:
            w = _file_width(f.file_size, max_size)
            parts.append(_file_rect(f, x, y, w))
            x += w + _FILE_GAP
        more = len(members) - MAX_FILES_PER_RUN
        tail = (
            f"{format_count(len(members))} file{'s' if len(members) != 1 else ''} · "
            f"{human_bytes(run.size)}"
        )
        if more > 0:
            tail = f"+{format_count(more)} more · {tail}"
        parts.append(
            f'<text x="{x + 6:.1f}" y="{y + _ROW_H / 2 + 4:.1f}" class="dim">{_e(tail)}</text>'
        )
        width = max(width, x + _TAIL_W)
        rows.append(
            f'<g class="run" data-level="{run.level}" data-files="{len(members)}">'
            f"{''.join(parts)}</g>"
        )
    height = 8 + len(runs) * (_ROW_H + _ROW_GAP)
    svg_title = f"{label or 'table'} bucket {b.bucket}: {len(runs)} sorted runs"
    group = (
        f'<g class="bucket" data-partition="{_e(label)}" data-bucket="{b.bucket}" '
        f'data-sorted-runs="{b.sorted_runs}" data-files="{b.files}" '
        f'data-space-amplification="{format_ratio(b.space_amplification)}">{"".join(rows)}</g>'
    )
    return (
        f'<svg class="lsm" role="img" width="{width:.0f}" height="{height}" '
        f'viewBox="0 0 {width:.0f} {height}" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{_e(svg_title)}</title>"
        f"{group}</svg>"
    )


def _band(
    b: BucketHealth,
    label: str,
    max_size: int,
    trigger: int | None,
    stop_trigger: int | None,
) -> str:
    svg = _bucket_svg(b, label, max_size)
    state = ""
    if stop_trigger is not None and b.sorted_runs >= stop_trigger:
        state = " stalled"
    elif trigger is not None and b.sorted_runs >= trigger:
        state = " due"
    by_level = ", ".join(f"L{lv}: {format_count(n)}" for lv, n in sorted(b.files_by_level.items()))
    stats = (
        f"<b>{format_count(b.sorted_runs)}</b> sorted runs · <b>{format_count(b.files)}</b> "
        f"files ({_e(by_level)}) · <b>{_e(human_bytes(b.total_bytes))}</b> · "
        f"<b>{format_count(b.rows)}</b> rows (≈ <b>{format_count(b.live_rows)}</b> live) · "
        "space amplification "
        f"<b>{format_ratio(b.space_amplification)}</b> · oldest level-0 file "
        f"<b>{_e(_human_age(b.oldest_level0_age_s))}</b>"
    )
    title = f"{label} · bucket {b.bucket}" if label else f"bucket {b.bucket}"
    return (
        f'<section class="band{state}"><h3>{_e(title)}</h3>'
        f'<div class="stats">{stats}</div><div class="scroll">{svg}</div></section>'
    )


def _history_chart(points: Sequence[SnapshotPoint]) -> str:
    """Three aligned bar rows per snapshot: live files, max sorted runs, bytes written."""
    if not points:
        return '<p class="muted">No snapshots yet.</p>'
    col = max(10, min(36, 720 // len(points)))
    bar = max(col - 4, 4)
    left, row_h, gap = 120, 44, 14
    rows: tuple[tuple[str, Callable[[SnapshotPoint], int]], ...] = (
        ("live files", lambda p: p.files),
        ("max sorted runs", lambda p: p.max_sorted_runs),
        ("bytes written", lambda p: p.ingested_bytes + p.compacted_bytes),
    )
    maxima = [max((fn(p) for p in points), default=0) or 1 for _, fn in rows]
    width = left + col * len(points) + 16
    height = 3 * (row_h + gap) + 24
    parts: list[str] = []
    for r, (name, _fn) in enumerate(rows):
        base = r * (row_h + gap) + row_h
        top = maxima[r]
        shown = human_bytes(top) if r == 2 else format_count(top)
        parts.append(
            f'<text x="0" y="{base - row_h / 2 + 4:.0f}">{_e(name)}</text>'
            f'<text x="0" y="{base - row_h / 2 + 17:.0f}" class="dim">max {_e(shown)}</text>'
            f'<line class="axis" x1="{left}" y1="{base}" x2="{width - 8}" y2="{base}"/>'
        )
    step = max(1, math.ceil(len(points) / 12))
    for i, p in enumerate(points):
        x = left + i * col + (col - bar) / 2
        cells: list[str] = []
        for r, value, color in (
            (0, p.files, "#4e79a7"),
            (1, p.max_sorted_runs, "#e8833a"),
        ):
            base = r * (row_h + gap) + row_h
            h = row_h * value / maxima[r]
            cells.append(
                f'<rect x="{x:.1f}" y="{base - h:.1f}" width="{bar}" height="{h:.1f}" '
                f'fill="{color}"/>'
            )
        base = 2 * (row_h + gap) + row_h
        h_in = row_h * p.ingested_bytes / maxima[2]
        h_co = row_h * p.compacted_bytes / maxima[2]
        cells.append(
            f'<rect x="{x:.1f}" y="{base - h_in:.1f}" width="{bar}" height="{h_in:.1f}" '
            'fill="#59a14f"/>'
            f'<rect x="{x:.1f}" y="{base - h_in - h_co:.1f}" width="{bar}" height="{h_co:.1f}" '
            'fill="#b07aa1"/>'
        )
        if i % step == 0 or i == len(points) - 1:
            cells.append(
                f'<text x="{x + bar / 2:.1f}" y="{height - 6}" text-anchor="middle" '
                f'class="dim">{p.snapshot_id}</text>'
            )
        tip = (
            f"snapshot {p.snapshot_id} · {p.commit_kind} · {_utc(p.time_millis)} · "
            f"{format_count(p.files)} live files · max {format_count(p.max_sorted_runs)} sorted "
            f"runs · ingested {human_bytes(p.ingested_bytes)} · compacted "
            f"{human_bytes(p.compacted_bytes)} · {format_count(p.delta_record_count)} delta "
            f"records · {format_count(p.total_record_count)} records"
        )
        parts.append(
            f'<g class="snapshot" data-snapshot-id="{p.snapshot_id}" '
            f'data-commit-kind="{_e(p.commit_kind)}" data-files="{p.files}" '
            f'data-max-sorted-runs="{p.max_sorted_runs}" '
            f'data-ingested-bytes="{p.ingested_bytes}" data-compacted-bytes="{p.compacted_bytes}">'
            f"<title>{_e(tip)}</title>{''.join(cells)}</g>"
        )
    legend = (
        '<div class="legend"><span><i style="background:#4e79a7"></i>live files</span>'
        '<span><i style="background:#e8833a"></i>max sorted runs of a bucket</span>'
        '<span><i style="background:#59a14f"></i>bytes ingested</span>'
        '<span><i style="background:#b07aa1"></i>bytes compacted</span></div>'
    )
    return (
        f'<div class="scroll"><svg class="history" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">'
        f"<title>recent snapshots</title>{''.join(parts)}</svg></div>{legend}"
    )


def _compact_options(table: Table) -> CompactOptions | None:
    """The table's compaction options, or None if lakeops cannot parse them (the page then
    leaves them out and shows the rest; reads and compaction report the error themselves)."""
    try:
        return table.context.compaction
    except ConfigurationError:
        return None


def _options_facts(table: Table, copts: CompactOptions | None) -> list[tuple[str, object]]:
    """The table options shown in the header; never storage or catalog options."""
    raw = table.schema.options
    facts: list[tuple[str, object]] = [
        ("merge engine", table.options.merge_engine),
        ("buckets", table.options.bucket),
        ("changelog producer", CHANGELOG_PRODUCER.get(raw)),
    ]
    if copts is not None:
        facts.append(
            (
                "compaction trigger / stop",
                f"{format_count(copts.trigger)} / {format_count(copts.stop_trigger)}",
            )
        )
        facts.append(("write-only", "yes" if copts.write_only else "no"))
    return facts


def _metadata_facts(table: Table) -> list[tuple[str, object]]:
    """The schema and the tags, from the metadata tables ``schemas`` and ``tags``."""
    schemas = table.metadata_table("schemas").column("schema_id").to_pylist()
    tags = table.metadata_table("tags").to_pylist()
    shown = ", ".join(f"{t['tag_name']} ({t['snapshot_id']})" for t in tags[:MAX_TAGS_SHOWN])
    if len(tags) > MAX_TAGS_SHOWN:
        shown += f", … ({len(tags)} tags)"
    return [
        ("schema", f"{table.schema.id} ({len(schemas)} schema{'s' if len(schemas) != 1 else ''})"),
        ("tags (snapshot)", shown or "-"),
    ]


def _window_label(health: TableHealth) -> str:
    first, last = health.window_first_snapshot, health.window_last_snapshot
    if first is None:
        return "write amplification (no commits in the window)"
    return f"write amplification (snapshots {first}..{last})"


def _by_partition(
    buckets: Sequence[BucketHealth], default_name: str
) -> dict[str, list[BucketHealth]]:
    """``buckets`` grouped by partition label, in their order."""
    groups: dict[str, list[BucketHealth]] = {}
    for b in buckets:
        groups.setdefault(partition_label(b.partition, default_name), []).append(b)
    return groups


def _worst_first(groups: Mapping[str, Sequence[BucketHealth]]) -> list[str]:
    """Partition labels, the most sorted runs of a bucket first, then the most bytes."""
    return sorted(
        groups,
        key=lambda label: (
            -max(b.sorted_runs for b in groups[label]),
            -sum(b.total_bytes for b in groups[label]),
            label,
        ),
    )


def _drawn_partitions(groups: Mapping[str, Sequence[BucketHealth]]) -> list[str]:
    """The partitions whose bands a summarised page draws: whole partitions, worst first,
    while their buckets fit in :data:`MAX_BANDS` (always at least the worst one)."""
    chosen: list[str] = []
    total = 0
    for label in _worst_first(groups):
        size = len(groups[label])
        if chosen and total + size > MAX_BANDS:
            break
        chosen.append(label)
        total += size
    return chosen


def _partition_summary(
    groups: Mapping[str, Sequence[BucketHealth]],
    drawn: set[str],
    partition_href: Callable[[str], str] | None,
) -> str:
    """One row per partition, worst first: buckets, files, bytes, the most sorted runs of a
    bucket and the partition's space amplification (stored ÷ estimated live bytes); a link to
    the partition's page when ``partition_href`` is given."""
    rows = []
    for label in _worst_first(groups):
        members = groups[label]
        stored = sum(b.total_bytes for b in members)
        live = sum(b.live_bytes for b in members)
        runs = max(b.sorted_runs for b in members)
        name = _e(label or "-")
        if partition_href is not None:
            name = f'<a class="drill" href="{_e(partition_href(label))}">{name}</a>'
        rows.append(
            f'<tr class="partition" data-partition="{_e(label)}" data-buckets="{len(members)}" '
            f'data-max-sorted-runs="{runs}" data-drawn="{"true" if label in drawn else "false"}">'
            f"<td>{name}</td><td>{format_count(len(members))}</td>"
            f"<td>{format_count(sum(b.files for b in members))}</td>"
            f"<td>{_e(human_bytes(stored))}</td><td>{format_count(runs)}</td>"
            f"<td>{format_ratio(stored / live if live else 1.0)}</td></tr>"
        )
    head = (
        "<tr><th>partition</th><th>buckets</th><th>files</th><th>bytes</th>"
        "<th>max sorted runs</th><th>space amplification</th></tr>"
    )
    return f'<h2>Partitions</h2><table class="partitions">{head}{"".join(rows)}</table>'


def _select_bands(
    health: TableHealth,
    default_name: str,
    partition: str | None,
    partition_href: Callable[[str], str] | None,
    cli_hint: bool,
) -> tuple[list[BucketHealth], str]:
    """The buckets drawn as bands and the HTML shown above them (summary and notes)."""
    groups = _by_partition(health.buckets, default_name)
    if partition is not None:
        check_partition(health, default_name, partition)
        members = groups[partition]
        note = (
            f'<p class="muted partition-note">Partition {_e(partition)}: '
            f"{format_count(len(members))} of {format_count(len(health.buckets))} buckets of "
            "the table.</p>"
        )
        if len(members) > MAX_BANDS:
            members = sorted(members, key=lambda b: (-b.sorted_runs, -b.total_bytes))[:MAX_BANDS]
            note += (
                f'<p class="muted">The {MAX_BANDS} buckets with the most sorted runs are '
                "drawn below.</p>"
            )
        return list(members), note
    if len(health.buckets) <= MAX_BANDS:
        return list(health.buckets), ""
    chosen = _drawn_partitions(groups)
    members = [b for label in chosen for b in groups[label]]
    if len(members) > MAX_BANDS:  # one partition alone has more buckets than are drawn
        members = sorted(members, key=lambda b: (-b.sorted_runs, -b.total_bytes))[:MAX_BANDS]
    how = (
        "follow a partition's link for all its buckets"
        if partition_href is not None
        else "lakeops health TABLE --png FILE --partition K=V draws all the buckets of one"
        if cli_hint
        else "the others are summarised above"
    )
    note = (
        f'<p class="muted">{format_count(len(health.buckets))} buckets in '
        f"{format_count(len(groups))} partitions: the buckets of the "
        f"{format_count(len(chosen))} partition{'s' if len(chosen) != 1 else ''} with the "
        f"most sorted runs are drawn below ({_e(how)}).</p>"
    )
    return members, _partition_summary(groups, set(chosen), partition_href) + note


_HEAT_OK_LOW = (218, 241, 220)  # one sorted run
_HEAT_OK_HIGH = (198, 220, 120)  # just below "near"
_HEAT_NEAR = "#f0b429"
_HEAT_OVER = "#d1242f"
_HEAT_STOP = "#82071e"


def heat_color(sorted_runs: int, trigger: int, stop_trigger: int) -> tuple[str, str]:
    """(background, text colour) of a heat-map cell of ``sorted_runs``: greens below
    :func:`~lakeops.health.summary.near_from` the ``trigger`` (paler for fewer runs), amber
    when near it, red at or beyond it, dark red at or beyond ``stop_trigger``."""
    state = run_state(sorted_runs, trigger)
    if state == "over":
        return (_HEAT_STOP if sorted_runs >= stop_trigger else _HEAT_OVER), "#ffffff"
    if state == "near":
        return _HEAT_NEAR, "#1f2328"
    top = max(near_from(trigger) - 1, 1)
    t = 0.0 if top <= 1 else min(max(sorted_runs - 1, 0) / (top - 1), 1.0)
    r, g, b = (
        round(lo + (hi - lo) * t) for lo, hi in zip(_HEAT_OK_LOW, _HEAT_OK_HIGH, strict=True)
    )
    return f"#{r:02x}{g:02x}{b:02x}", "#1f2328"


def _partition_order(groups: Mapping[str, Sequence[BucketHealth]]) -> list[str]:
    """Partition labels ordered by their values (numbers as numbers, nulls last)."""

    def key(label: str) -> tuple[tuple[bool, str, Any], ...]:
        values = groups[label][0].partition.values()
        return tuple((v is None, type(v).__name__, v if v is not None else 0) for v in values)

    return sorted(groups, key=key)


def _heatmap(
    groups: Mapping[str, Sequence[BucketHealth]],
    trigger: int | None,
    stop_trigger: int | None,
    partition_href: Callable[[str], str] | None,
) -> str:
    """A partition-by-bucket table of sorted runs: one row per partition (at most
    :data:`MAX_HEATMAP_ROWS`, the worst ones, in partition order), one column per bucket id,
    each cell coloured by :func:`heat_color` with its figures in its title."""
    trig = 5 if trigger is None else trigger
    stop = max(trig + 3 if stop_trigger is None else stop_trigger, trig)
    labels = _partition_order(groups)
    note = ""
    if len(labels) > MAX_HEATMAP_ROWS:
        keep = set(_worst_first(groups)[:MAX_HEATMAP_ROWS])
        labels = [label for label in labels if label in keep]
        note = (
            f'<p class="muted">The {format_count(MAX_HEATMAP_ROWS)} of '
            f"{format_count(len(groups))} partitions with the most sorted runs are shown.</p>"
        )
    bucket_ids = sorted({b.bucket for label in labels for b in groups[label]})
    head = "<tr><th></th>" + "".join(f"<th>{i}</th>" for i in bucket_ids) + "</tr>"
    rows = []
    for label in labels:
        by_id = {b.bucket: b for b in groups[label]}
        name = _e(label or "table")
        if partition_href is not None:
            name = f'<a href="{_e(partition_href(label))}">{name}</a>'
        cells = []
        for i in bucket_ids:
            b = by_id.get(i)
            if b is None:
                cells.append('<td class="empty"></td>')
                continue
            bg, fg = heat_color(b.sorted_runs, trig, stop)
            tip = (
                f"{label + ' · ' if label else ''}bucket {b.bucket}: "
                f"{format_count(b.sorted_runs)} sorted runs · {format_count(b.files)} files · "
                f"{human_bytes(b.total_bytes)} · space amplification "
                f"{format_ratio(b.space_amplification)} · oldest level-0 file "
                f"{_human_age(b.oldest_level0_age_s)}"
            )
            cells.append(
                f'<td class="cell {run_state(b.sorted_runs, trig)}" data-partition="{_e(label)}" '
                f'data-bucket="{b.bucket}" data-sorted-runs="{b.sorted_runs}" '
                f'style="background:{bg};color:{fg}" title="{_e(tip)}">'
                f"{format_count(b.sorted_runs)}</td>"
            )
        rows.append(
            f'<tr><th class="row" title="{_e(label or "table")}">{name}</th>{"".join(cells)}</tr>'
        )
    swatches: dict[int, str] = {}
    if trig > 1:
        swatches[1] = "one run"
    if run_state(near_from(trig), trig) == "near":
        swatches[near_from(trig)] = "near the compaction trigger"
    swatches[trig] = "at the compaction trigger: compaction picks it"
    if stop > trig:
        swatches[stop] = "at the stop trigger"
    legend = "".join(
        f'<span><i style="background:{heat_color(n, trig, stop)[0]};'
        f'color:{heat_color(n, trig, stop)[1]}">{format_count(n)}</i>{_e(text)}</span>'
        for n, text in swatches.items()
    )
    return (
        "<h2>Sorted runs per partition and bucket</h2>"
        '<p class="muted">Each cell is one bucket of the latest snapshot: its sorted runs (hover '
        "for files, bytes, space amplification and level-0 age).</p>"
        f'<div class="heat-legend">{legend}</div>{note}'
        f'<div class="scroll"><table class="heatmap">{head}{"".join(rows)}</table></div>'
    )


#: how many partitions an unknown ``partition=`` error lists
_SHOWN_PARTITIONS = 5


def check_partition(health: TableHealth, default_name: str, partition: str) -> None:
    """Raise :class:`~lakeops.errors.ConfigurationError` unless ``partition`` (a label as
    :func:`partition_label` writes it) names a partition of ``health``'s snapshot; the error
    names the closest labels (or a few that exist)."""
    labels = list(_by_partition(health.buckets, default_name))
    if partition not in labels:
        raise ConfigurationError(_unknown_partition(partition, labels))


def _unknown_partition(partition: str, labels: Sequence[str]) -> str:
    """The message of a ``partition=`` naming no partition of the latest snapshot."""
    if not labels:
        return f"partition {partition!r} does not exist: the table holds no data"
    close = difflib.get_close_matches(partition, labels, n=3, cutoff=0.6)
    if close:
        return f"partition {partition!r} does not exist; did you mean {', '.join(close)}?"
    shown = ", ".join(sorted(labels)[:_SHOWN_PARTITIONS])
    more = len(labels) - _SHOWN_PARTITIONS
    return f"partition {partition!r} does not exist; existing partitions: {shown}" + (
        f" and {more} more" if more > 0 else ""
    )


# --------------------------------------------------------------------------- public
def render_table_html(
    identifier: str,
    table: Table,
    *,
    recent_snapshots: int = 20,
    back_href: str | None = None,
    health: TableHealth | None = None,
    partition: str | None = None,
    partition_href: Callable[[str], str] | None = None,
    cli_hint: bool = False,
) -> str:
    """The health page of ``table`` (named ``identifier`` on the page) as a complete HTML
    document: header facts, the chart of the last ``recent_snapshots`` snapshots and one LSM
    band per (partition, bucket) of the latest snapshot (see the module docstring). ``health``
    is ``table.health()`` unless given (the CLI passes the report it prints, so both show the
    same figures). With ``back_href``, the page starts with an "all tables" link to it.

    ``partition`` (a label as the page shows it, ``k1=v1/k2=v2``) draws the bands of that
    partition only; a label that names no partition of the latest snapshot raises
    :class:`~lakeops.errors.ConfigurationError` naming the closest ones. ``partition_href``
    maps a label to the URL of its page (the summary's drill-down links); ``cli_hint`` names
    the CLI's ``--partition`` in the summary's note instead."""
    if health is None:
        health = table.health()
    points = snapshot_history(table.store, recent_snapshots)
    default_name = table.options.partition_default_name
    copts = _compact_options(table)
    trigger = None if copts is None else copts.trigger
    stop_trigger = None if copts is None else copts.stop_trigger

    latest = table.store.snapshot(health.snapshot_id) if health.snapshot_id is not None else None
    write_amp = format_ratio(health.write_amplification)
    space_amp = format_ratio(health.space_amplification)
    partitions = len({tuple(b.partition.values()) for b in health.buckets})
    facts: list[tuple[str, object]] = [
        ("latest snapshot", "none" if latest is None else f"{latest.id} ({latest.commit_kind})"),
        ("committed", "-" if latest is None else _utc(latest.time_millis)),
        ("records", "-" if latest is None else format_count(latest.total_record_count)),
        *_metadata_facts(table),
        *_options_facts(table, copts),
        ("primary keys", ", ".join(table.schema.primary_keys) or "-"),
        ("partition keys", ", ".join(table.schema.partition_keys) or "-"),
        (
            "partitions · buckets",
            f"{format_count(partitions)} · {format_count(len(health.buckets))}",
        ),
        ("live files", format_count(sum(b.files for b in health.buckets))),
        ("bytes", human_bytes(health.total_bytes)),
        ("space amplification", space_amp),
        ("max sorted runs", format_count(health.max_sorted_runs)),
        (_window_label(health), write_amp),
        (
            "ingested · compacted",
            f"{human_bytes(health.ingested_bytes)} · {human_bytes(health.compaction_bytes)}",
        ),
    ]

    files: list[DataFileMeta] = [f for b in health.buckets for run in b.runs for f in run.files]
    max_size = max((f.file_size for f in files), default=0)
    drawn, summary = _select_bands(health, default_name, partition, partition_href, cli_hint)
    groups = _by_partition(health.buckets, default_name)
    if partition is not None:
        groups = {partition: groups[partition]}
    in_view = sum(len(members) for members in groups.values())
    heatmap = (
        _heatmap(groups, trigger, stop_trigger, None if partition else partition_href)
        if in_view > MAX_BANDS
        else ""
    )
    bands = [
        _band(b, partition_label(b.partition, default_name), max_size, trigger, stop_trigger)
        for b in drawn
    ]
    levels = sorted({f.level for f in files})
    legend = "".join(
        f'<span><i style="background:{_level_color(lv)}"></i>level {lv}</span>' for lv in levels
    )
    back = f'<nav><a class="back" href="{_e(back_href)}">all tables</a></nav>' if back_href else ""
    snapshot_attr = "" if health.snapshot_id is None else str(health.snapshot_id)
    body = (
        f'{back}<header data-snapshot-id="{snapshot_attr}" '
        f'data-write-amplification="{write_amp}" data-space-amplification="{space_amp}">'
        f"<h1>{_e(identifier)}</h1>"
        '<div class="muted">lakeops table health · Paimon primary-key table</div>'
        f"{_facts(facts)}</header>"
        f"<h2>Recent snapshots</h2>{_history_chart(points)}"
        f"{heatmap}{summary}<h2>LSM shape per bucket</h2>"
        '<p class="muted">One row per sorted run (each level-0 file is its own run, newest '
        "first; each level ≥ 1 is one run). Width grows with the square root of file size. "
        "Amber: sorted runs at the compaction trigger; red: at the stop trigger. Space "
        "amplification: stored bytes ÷ estimated bytes after a full compaction.</p>"
        f'<div class="legend">{legend}</div>'
        + ("".join(bands) if bands else '<p class="muted">The table holds no data files.</p>')
    )
    return _page(f"{identifier} · lakeops", body)


def render_message_html(title: str, message: str) -> str:
    """A minimal page with a heading and one line (e.g. a "not found" page)."""
    return _page(title, f'<h1>{_e(title)}</h1><p class="message">{_e(message)}</p>')
