"""The lake index page: sorting by every column against a plain model, the sort links,
separators, states and escaping."""

from __future__ import annotations

import html
import re
from urllib.parse import parse_qs

import pytest

from lakeops.errors import ConfigurationError
from lakeops.health.index import SORT_KEYS, IndexRow, render_lake_index_html, sort_rows
from lakeops.health.summary import TableSummary

NOW = 1_800_000_000_000


def summary(name: str, **figures: object) -> TableSummary:
    base: dict[str, object] = {
        "snapshot_id": 1,
        "snapshot_millis": NOW - 60_000,
        "trigger": 5,
        "stop_trigger": 8,
        "max_sorted_runs": 1,
        "space_amplification": 1.0,
    }
    base.update(figures)
    return TableSummary("c", name, True, NOW, **base)  # type: ignore[arg-type]


ROWS = [
    IndexRow(summary("db.a", max_sorted_runs=7, live_files=10, total_bytes=5_000), "tables/a"),
    IndexRow(summary("db.b", max_sorted_runs=2, live_files=3_000_002, total_bytes=9), "tables/b"),
    IndexRow(
        TableSummary("c", "db.c", False, NOW, snapshot_id=4, snapshot_millis=NOW, live_files=5),
        "tables/c",
    ),
    IndexRow(summary("db.d", max_sorted_runs=4, live_files=1, total_bytes=70_000), "tables/d"),
    IndexRow(TableSummary("c", "db.e", False, NOW, error="metadata could not be read"), "e"),
]


def table_rows(page: str) -> list[dict[str, str]]:
    return [
        {k: html.unescape(v) for k, v in re.findall(r'(data-[a-z-]+)="([^"]*)"', attrs)}
        for attrs in re.findall(r'<tr class="table-row" ([^>]*)>', page)
    ]


def test_default_order_is_most_sorted_runs_first() -> None:
    page = render_lake_index_html(ROWS)
    got = [r["data-table"] for r in table_rows(page)]
    # runs 7, 4, 2; the append table has none; the unreadable one last
    assert got == ["db.a", "db.d", "db.b", "db.c", "db.e"]
    assert '<th data-sort="runs" aria-sort="descending"' in page


@pytest.mark.parametrize("key", list(SORT_KEYS))
@pytest.mark.parametrize("order", ["asc", "desc"])
def test_every_column_sorts_as_the_model(key: str, order: str) -> None:
    model = {
        "table": lambda s: s.identifier,
        "connection": lambda s: s.conn_id,
        "snapshot": lambda s: s.snapshot_id,
        "age": lambda s: None if s.snapshot_millis is None else NOW - s.snapshot_millis,
        "runs": lambda s: s.max_sorted_runs,
        "level0": lambda s: s.oldest_level0_age_s,
        "space": lambda s: s.space_amplification,
        "files": lambda s: s.live_files,
        "bytes": lambda s: s.total_bytes,
        "compaction": lambda s: None,
    }[key]
    readable = [r.summary for r in ROWS if r.summary.error is None]
    with_value = sorted(
        (s for s in readable if model(s) is not None),
        key=lambda s: (model(s), s.identifier),
    )
    if order == "desc":
        with_value = sorted(with_value, key=lambda s: model(s), reverse=True)
    expected = [s.identifier for s in with_value]
    expected += sorted(s.identifier for s in readable if model(s) is None)
    expected.append("db.e")
    got = [r.summary.identifier for r in sort_rows(ROWS, key, order)]  # type: ignore[arg-type]
    assert got == expected


def test_header_links_toggle_the_active_column() -> None:
    page = render_lake_index_html(ROWS, sort="files", order="desc")
    links = {
        key: parse_qs(html.unescape(href).lstrip("?"))
        for key, href in re.findall(r'<th data-sort="(\w+)"[^>]*><a href="([^"]*)"', page)
    }
    assert list(links) == list(SORT_KEYS)
    assert links["files"] == {"sort": ["files"], "order": ["asc"]}
    assert links["table"] == {"sort": ["table"], "order": ["asc"]}
    assert links["runs"] == {"sort": ["runs"], "order": ["desc"]}
    assert [r["data-table"] for r in table_rows(page)][:2] == ["db.b", "db.a"]


def test_unknown_sort_key_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="unknown sort column 'nope'"):
        sort_rows(ROWS, "nope", "desc")


def test_numbers_have_separators_and_states_are_marked() -> None:
    page = render_lake_index_html(ROWS)
    assert "<td>3,000,002</td>" in page and "3000002</td>" not in page
    assert 'title="70,000 bytes">68.4 KiB</td>' in page
    assert '<span class="runs over">7 / 5</span>' in page
    assert '<span class="runs near">4 / 5</span>' in page
    assert '<span class="runs ok">2 / 5</span>' in page
    states = {r["data-table"]: r["data-state"] for r in table_rows(page)}
    assert states == {"db.a": "over", "db.b": "ok", "db.c": "", "db.d": "near", "db.e": ""}
    assert "1 at or over the compaction trigger · 1 near it" in page
    assert "metadata could not be read" in page
    assert '<span class="kind">append</span>' in page


def test_last_compaction_cells() -> None:
    rows = [
        IndexRow(summary("db.never"), "a"),
        IndexRow(summary("db.expired", history_from_first=False), "b"),
        IndexRow(summary("db.far", compaction_searched=100, compaction_search_complete=False), "c"),
        IndexRow(summary("db.done", last_compaction_millis=NOW - 3_600_000), "d"),
    ]
    page = render_lake_index_html(rows, sort="table", order="asc")
    cells = re.findall(r"<td[^>]*>([^<]*)</td></tr>", page)
    assert cells == ["1h 0m ago", "none retained", "&gt; 100 snapshots ago", "never"]


def test_identifiers_and_notes_are_escaped() -> None:
    evil = '<b>"x'
    page = render_lake_index_html(
        [IndexRow(summary(f"db.{evil}"), 'tables/"x')], notes={evil: "no <tables>"}
    )
    assert evil not in page and "<tables>" not in page
    assert html.escape(f"db.{evil}") in page
    assert f'<li class="note muted" data-conn-id="{html.escape(evil)}">' in page


def test_empty_index() -> None:
    page = render_lake_index_html([], empty="Nothing to show.")
    assert "Nothing to show." in page and "<table" not in page
