"""The lake at a glance: one HTML page with one row per table, sortable by any column.

Each row shows a :class:`~lakeops.health.summary.TableSummary`: the table (a link to its
health page), its connection, the latest snapshot and its age, the most sorted runs of any
bucket against the compaction trigger (green ``ok``, amber ``near``, red ``over``; see
:func:`~lakeops.health.summary.run_state`), the age of the oldest level-0 file, space
amplification, live files, bytes, and how long ago the newest compaction committed.

Sorting is done by the server: every column header is a link to ``?sort=KEY&order=asc|desc``
(:data:`SORT_KEYS`), so the page works without JavaScript and under a policy that runs no
script. ``desc`` puts the largest figure (the worst: most runs, oldest, biggest) first; rows
without the figure (an append table has no sorted runs) come last in both orders. The
default is the most sorted runs first.

Counts carry thousands separators (``3,000,002``); bytes are shown in binary units with the
exact count in the cell's title. Every value shown is HTML-escaped. Stable hooks for tests and
tools: ``<tr class="table-row" data-conn-id data-table data-snapshot-id data-max-sorted-runs
data-trigger data-state data-files data-bytes>`` per table, ``<th data-sort aria-sort>`` per
column, ``<li class="note" data-conn-id>`` per connection note.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlencode

from lakeops.errors import ConfigurationError
from lakeops.health.summary import TableSummary, near_from
from lakeops.health.view import (
    _e,
    _human_age,
    _page,
    _utc,
    format_count,
    format_ratio,
    human_bytes,
)

__all__ = [
    "DEFAULT_SORT",
    "SORT_KEYS",
    "IndexRow",
    "render_lake_index_html",
    "sort_rows",
]

Order = Literal["asc", "desc"]


@dataclass(frozen=True)
class IndexRow:
    """One table of the index: its figures and the URL of its page."""

    summary: TableSummary
    href: str


@dataclass(frozen=True)
class _Column:
    label: str
    title: str
    first_order: Order
    key: Callable[[TableSummary], Any]  # None: no figure (sorted last)


def _age_ms(summary: TableSummary, millis: int | None) -> int | None:
    return None if millis is None else summary.computed_at_millis - millis


#: the sortable columns by ``sort=`` key, in page order
SORT_KEYS: Mapping[str, _Column] = {
    "table": _Column("table", "database.table", "asc", lambda s: (s.identifier, s.conn_id)),
    "connection": _Column("connection", "Airflow connection", "asc", lambda s: s.conn_id),
    "snapshot": _Column("snapshot", "latest snapshot id", "desc", lambda s: s.snapshot_id),
    "age": _Column(
        "committed",
        "time since the latest snapshot was committed",
        "desc",
        lambda s: _age_ms(s, s.snapshot_millis),
    ),
    "runs": _Column(
        "sorted runs",
        "most sorted runs of any bucket / the compaction trigger",
        "desc",
        lambda s: s.max_sorted_runs,
    ),
    "level0": _Column(
        "oldest level 0",
        "age of the oldest level-0 file of any bucket",
        "desc",
        lambda s: s.oldest_level0_age_s,
    ),
    "space": _Column(
        "space amp.",
        "space amplification: stored bytes ÷ estimated bytes after a full compaction",
        "desc",
        lambda s: s.space_amplification,
    ),
    "files": _Column(
        "live files", "data files of the latest snapshot", "desc", lambda s: s.live_files
    ),
    "bytes": _Column("bytes", "bytes of the live data files", "desc", lambda s: s.total_bytes),
    "compaction": _Column(
        "last compaction",
        "time since the newest COMPACT snapshot was committed",
        "desc",
        lambda s: _age_ms(s, s.last_compaction_millis),
    ),
}

#: the order of a page without ``sort=``: the most sorted runs first
DEFAULT_SORT: tuple[str, Order] = ("runs", "desc")


def sort_rows(rows: Sequence[IndexRow], sort: str, order: Order) -> list[IndexRow]:
    """``rows`` by column ``sort`` (a key of :data:`SORT_KEYS`) in ``order``; ties by table
    name; rows without the figure, then unreadable tables, last. Raises
    :class:`~lakeops.errors.ConfigurationError` for an unknown key."""
    if sort not in SORT_KEYS:
        raise ConfigurationError(f"unknown sort column {sort!r}; use one of {', '.join(SORT_KEYS)}")
    key = SORT_KEYS[sort].key
    by_name = sorted(rows, key=lambda r: (r.summary.identifier, r.summary.conn_id))
    present = [r for r in by_name if r.summary.error is None and key(r.summary) is not None]
    absent = [r for r in by_name if r.summary.error is None and key(r.summary) is None]
    broken = [r for r in by_name if r.summary.error is not None]
    present.sort(key=lambda r: key(r.summary), reverse=order == "desc")  # stable: ties by name
    return present + absent + broken


def _sort_header(sort: str, order: Order, href: Callable[[str, Order], str]) -> str:
    cells = []
    for name, column in SORT_KEYS.items():
        active = name == sort
        next_order: Order = ("asc" if order == "desc" else "desc") if active else column.first_order
        arrow = (" ▼" if order == "desc" else " ▲") if active else ""
        aria = f' aria-sort="{"descending" if order == "desc" else "ascending"}"' if active else ""
        cells.append(
            f'<th data-sort="{name}"{aria} title="{_e(column.title)}">'
            f'<a href="{_e(href(name, next_order))}">{_e(column.label)}{arrow}</a></th>'
        )
    return "<tr>" + "".join(cells) + "</tr>"


def _ago(summary: TableSummary, millis: int | None, missing: str) -> str:
    age = _age_ms(summary, millis)
    if millis is None or age is None:
        return f'<td class="muted">{_e(missing)}</td>'
    return f'<td title="{_e(_utc(millis))}">{_e(_human_age(age / 1000))} ago</td>'


def _runs_cell(s: TableSummary) -> str:
    if s.max_sorted_runs is None:
        return '<td class="muted" title="an append table has no sorted runs">-</td>'
    state = s.state
    if s.trigger is None or state is None:
        return f"<td>{format_count(s.max_sorted_runs)}</td>"
    tip = (
        f"{format_count(s.max_sorted_runs)} sorted runs in the worst of "
        f"{format_count(s.buckets)} buckets; compaction trigger {format_count(s.trigger)} "
        f"(near from {format_count(near_from(s.trigger))}), stop trigger "
        f"{format_count(s.stop_trigger or s.trigger)}"
    )
    return (
        f'<td title="{_e(tip)}"><span class="runs {state}">'
        f"{format_count(s.max_sorted_runs)} / {format_count(s.trigger)}</span></td>"
    )


def _last_compaction_cell(s: TableSummary) -> str:
    if s.last_compaction_millis is not None:
        return _ago(s, s.last_compaction_millis, "-")
    if s.snapshot_id is None:
        return '<td class="muted">-</td>'
    if s.compaction_search_complete and s.history_from_first:
        return '<td class="muted" title="no snapshot is a COMPACT one">never</td>'
    if s.compaction_search_complete:
        return '<td class="muted" title="no retained snapshot is a COMPACT one">none retained</td>'
    return (
        f'<td class="muted" title="none in the {format_count(s.compaction_searched)} latest '
        f'snapshots">&gt; {format_count(s.compaction_searched)} snapshots ago</td>'
    )


def _row(row: IndexRow) -> str:
    s = row.summary
    link = f'<a class="table" href="{_e(row.href)}">{_e(s.identifier)}</a>'
    kind = "" if s.primary_key or s.error else ' <span class="kind">append</span>'
    attrs = (
        f'class="table-row" data-conn-id="{_e(s.conn_id)}" data-table="{_e(s.identifier)}" '
        f'data-snapshot-id="{"" if s.snapshot_id is None else s.snapshot_id}" '
        f'data-max-sorted-runs="{"" if s.max_sorted_runs is None else s.max_sorted_runs}" '
        f'data-trigger="{"" if s.trigger is None else s.trigger}" '
        f'data-state="{s.state or ""}" data-files="{s.live_files}" data-bytes="{s.total_bytes}"'
    )
    head = f"<td>{link}{kind}</td><td>{_e(s.conn_id)}</td>"
    if s.error is not None:
        return f'<tr {attrs}>{head}<td colspan="8" class="muted">{_e(s.error)}</td></tr>'
    if s.snapshot_id is None:
        return f'<tr {attrs}>{head}<td colspan="8" class="muted">no snapshot yet</td></tr>'
    level0 = (
        '<td class="muted">-</td>'
        if s.oldest_level0_age_s is None
        else f"<td>{_e(_human_age(s.oldest_level0_age_s))}</td>"
    )
    space = "-" if s.space_amplification is None else format_ratio(s.space_amplification)
    cells = (
        f"<td>{s.snapshot_id}</td>"
        + _ago(s, s.snapshot_millis, "-")
        + _runs_cell(s)
        + level0
        + f"<td>{space}</td><td>{format_count(s.live_files)}</td>"
        + f'<td title="{format_count(s.total_bytes)} bytes">{_e(human_bytes(s.total_bytes))}</td>'
        + _last_compaction_cell(s)
    )
    return f"<tr {attrs}>{head}{cells}</tr>"


_INDEX_CSS = """
table.lake { border-collapse: collapse; font-size: 13px; margin-top: 8px; }
table.lake th, table.lake td { padding: 4px 10px; border-bottom: 1px solid var(--line);
  text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
table.lake th:nth-child(-n+2), table.lake td:nth-child(-n+2) { text-align: left; }
table.lake th { position: sticky; top: 0; background: var(--bg); font-weight: 600; }
table.lake th a { color: var(--fg); text-decoration: none; }
table.lake th[aria-sort] a { color: var(--accent); }
table.lake tr:hover td { background: var(--panel); }
.runs { display: inline-block; min-width: 52px; padding: 0 6px; border-radius: 10px;
  text-align: center; font-weight: 600; }
.runs.ok { background: #dafbe1; color: #116329; }
.runs.near { background: #fff1c2; color: #7d4e00; }
.runs.over { background: #ffd8d3; color: #a40e26; }
.kind { font-size: 11px; color: var(--muted); border: 1px solid var(--line); border-radius: 8px;
  padding: 0 5px; margin-left: 4px; }
ul.notes { padding-left: 20px; }
"""


def render_lake_index_html(
    rows: Sequence[IndexRow],
    *,
    sort: str = DEFAULT_SORT[0],
    order: Order = DEFAULT_SORT[1],
    sort_href: Callable[[str, Order], str] | None = None,
    notes: Mapping[str, str] | None = None,
    empty: str = "No lakeops connections configured.",
) -> str:
    """The index page: one row per table of ``rows`` sorted by ``sort`` in ``order`` (see
    :func:`sort_rows`), column headers linking to ``sort_href(key, order)`` (default
    ``?sort=KEY&order=ORDER``). ``notes`` maps a connection id to one line listed above the
    table (e.g. why its tables could not be listed); ``empty`` is shown when there are neither
    rows nor notes."""
    href = sort_href or (lambda key, o: "?" + urlencode({"sort": key, "order": o}))
    ordered = sort_rows(rows, sort, order)
    note_items = "".join(
        f'<li class="note muted" data-conn-id="{_e(conn_id)}">connection {_e(conn_id)}: '
        f"{_e(text)}</li>"
        for conn_id, text in (notes or {}).items()
    )
    parts = ["<h1>lakeops tables</h1>"]
    if ordered:
        states = [r.summary.state for r in ordered]
        counts = (
            f"{format_count(len(ordered))} table{'s' if len(ordered) != 1 else ''} · "
            f"{format_count(states.count('over'))} at or over the compaction trigger · "
            f"{format_count(states.count('near'))} near it"
        )
        parts.append(
            f'<p class="muted summary">{_e(counts)}. Sorted runs: the most of any bucket / the '
            "table's compaction trigger. Click a column heading to sort.</p>"
        )
    if note_items:
        parts.append(f'<ul class="notes">{note_items}</ul>')
    if ordered:
        body_rows = "".join(_row(r) for r in ordered)
        parts.append(
            f'<div class="scroll"><table class="lake"><thead>{_sort_header(sort, order, href)}'
            f"</thead><tbody>{body_rows}</tbody></table></div>"
        )
    elif not note_items:
        parts.append(f'<p class="muted">{_e(empty)}</p>')
    page = _page("lakeops tables", "".join(parts))
    return page.replace("</style>", f"{_INDEX_CSS}</style>", 1)
