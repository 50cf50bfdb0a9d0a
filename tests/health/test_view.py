"""The table-health page, checked against facts read independently from the table's splits."""

from __future__ import annotations

import html
import re
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeops import Catalog, Table
from lakeops.format import schema_change as sc
from lakeops.health.view import render_message_html, render_table_html
from lakeops.read.scan import Split

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])
EVIL = '<b>&"x'


class PageParser(HTMLParser):
    """Collects the SVG hooks of the page: bucket groups with their file rects, and the
    snapshot columns of the history chart."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.buckets: list[dict[str, Any]] = []
        self.snapshots: list[dict[str, str]] = []
        self.tags: Counter[str] = Counter()
        self._g_stack: list[dict[str, Any] | None] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] += 1
        a = {k: v or "" for k, v in attrs}
        if tag == "g":
            entry: dict[str, Any] | None = None
            if a.get("class") == "bucket":
                entry = {**a, "levels": []}
                self.buckets.append(entry)
            elif a.get("class") == "snapshot":
                self.snapshots.append(a)
            self._g_stack.append(entry)
        elif tag == "rect" and a.get("class") == "file":
            bucket = next((g for g in reversed(self._g_stack) if g is not None), None)
            assert bucket is not None, "a file rect outside of a bucket group"
            bucket["levels"].append(int(a["data-level"]))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag == "g":
            self._g_stack.pop()

    def handle_endtag(self, tag: str) -> None:
        if tag == "g":
            self._g_stack.pop()


def parse(page: str) -> PageParser:
    parser = PageParser()
    parser.feed(page)
    parser.close()
    return parser


def rows(n: int, dt: str, tag: str) -> pa.Table:
    return pa.table({"dt": [dt] * n, "id": list(range(n)), "v": [tag * 20] * n}, schema=SCHEMA)


def make_table(catalog: Catalog, writes: int = 3) -> Table:
    """Two partitions (one with a hostile value) by two buckets, ``writes`` level-0 runs each."""
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "2", "write-only": "true"},
    )
    for i in range(writes):
        table.write(
            pa.concat_tables([rows(40 + 20 * i, "2024-01-01", str(i)), rows(30, EVIL, "e")])
        )
    return table


def sorted_runs(split: Split) -> int:
    """Level-0 files are one run each; every other non-empty level is one run."""
    levels = [f.level for f in split.files]
    return levels.count(0) + len({lv for lv in levels if lv > 0})


def expected_bands(table: Table, snapshot_id: int | None = None) -> dict[tuple[str, str], Split]:
    return {
        (f"dt={s.partition[0]}", str(s.bucket)): s for s in table.splits(snapshot_id=snapshot_id)
    }


def check_bands(page: str, table: Table) -> PageParser:
    parsed = parse(page)
    expected = expected_bands(table)
    got = {(g["data-partition"], g["data-bucket"]): g for g in parsed.buckets}
    assert len(parsed.buckets) == len(expected) == len(got)
    assert set(got) == set(expected)
    for key, split in expected.items():
        g = got[key]
        assert sorted(g["levels"]) == sorted(f.level for f in split.files), key
        assert int(g["data-files"]) == len(split.files), key
        assert int(g["data-sorted-runs"]) == sorted_runs(split), key
    return parsed


def test_bands_match_the_splits_before_and_after_compaction(catalog: Catalog) -> None:
    table = make_table(catalog, writes=3)
    before = check_bands(render_table_html("db.t", table), table)
    assert len(before.buckets) == 4
    # every bucket got one level-0 file per write
    assert all(g["levels"] == [0, 0, 0] for g in before.buckets)

    table.compact(full=True)
    after = check_bands(render_table_html("db.t", table), table)
    assert all(len(g["levels"]) == 1 and g["levels"][0] > 0 for g in after.buckets)
    assert all(g["data-sorted-runs"] == "1" for g in after.buckets)


def test_history_matches_each_snapshot(catalog: Catalog) -> None:
    table = make_table(catalog, writes=3)
    table.compact(full=True)
    table.write(rows(5, "2024-01-01", "z"))
    parsed = parse(render_table_html("db.t", table, recent_snapshots=20))
    snapshots = table.snapshots()
    assert [int(s["data-snapshot-id"]) for s in parsed.snapshots] == [s.id for s in snapshots]
    for point, snap in zip(parsed.snapshots, snapshots, strict=True):
        splits = table.splits(snapshot_id=snap.id)
        assert point["data-commit-kind"] == snap.commit_kind
        assert int(point["data-files"]) == sum(len(s.files) for s in splits)
        assert int(point["data-max-sorted-runs"]) == max(sorted_runs(s) for s in splits)
    # the first commit ingested exactly the files live after it
    first = sum(f.file_size for s in table.splits(snapshot_id=1) for f in s.files)
    assert int(parsed.snapshots[0]["data-ingested-bytes"]) == first
    assert parsed.snapshots[0]["data-compacted-bytes"] == "0"
    # the full compaction rewrote every file (each bucket had three) into what is live after it
    compact = next(i for i, s in enumerate(snapshots) if s.commit_kind == "COMPACT")
    rewritten = sum(
        f.file_size for s in table.splits(snapshot_id=snapshots[compact].id) for f in s.files
    )
    assert int(parsed.snapshots[compact]["data-compacted-bytes"]) == rewritten
    assert parsed.snapshots[compact]["data-ingested-bytes"] == "0"


def test_history_keeps_only_the_recent_snapshots(catalog: Catalog) -> None:
    table = make_table(catalog, writes=5)
    parsed = parse(render_table_html("db.t", table, recent_snapshots=3))
    assert [s["data-snapshot-id"] for s in parsed.snapshots] == ["3", "4", "5"]


def test_header_names_the_table_and_its_options(catalog: Catalog) -> None:
    table = make_table(catalog, writes=2)
    page = render_table_html("db.t", table)
    latest = table.latest_snapshot()
    assert latest is not None
    assert "<h1>db.t</h1>" in page
    assert f"<dd>{latest.id} (APPEND)</dd>" in page
    assert "<dd>deduplicate</dd>" in page
    assert "<dt>changelog producer</dt><dd>none</dd>" in page
    assert "<dt>buckets</dt><dd>2</dd>" in page


def test_header_shows_the_schema_and_tags_escaped(catalog: Catalog) -> None:
    table = make_table(catalog, writes=2)
    assert "<dt>tags (snapshot)</dt><dd>-</dd>" in render_table_html("db.t", table)
    table.create_tag("v1", 1)
    table.create_tag(EVIL, 2)
    table.alter(sc.SetOption("snapshot.num-retained.max", "40"))
    page = render_table_html("db.t", table)
    assert "<dt>schema</dt><dd>1 (2 schemas)</dd>" in page
    assert f"<dt>tags (snapshot)</dt><dd>v1 (1), {html.escape(EVIL)} (2)</dd>" in page
    assert EVIL not in page


def test_partition_values_are_escaped(catalog: Catalog) -> None:
    table = make_table(catalog, writes=1)
    page = render_table_html("db.t", table)
    assert EVIL not in page
    assert "<b>&" not in page and '&"x' not in page
    assert html.escape(EVIL, quote=True) in page
    parsed = parse(page)
    # the escaped attribute reads back as the original value
    assert {g["data-partition"] for g in parsed.buckets} == {"dt=2024-01-01", f"dt={EVIL}"}
    assert parsed.tags["script"] == 0


def test_identifier_is_escaped(catalog: Catalog) -> None:
    table = make_table(catalog, writes=1)
    page = render_table_html('<i>"db".t', table)
    assert '<i>"db".t' not in page
    assert "&lt;i&gt;&quot;db&quot;.t" in page


def test_no_warehouse_path_and_self_contained(catalog: Catalog, warehouse: Path) -> None:
    table = make_table(catalog, writes=2)
    page = render_table_html("db.t", table)
    assert str(warehouse) not in page
    assert table.root not in page
    assert "file://" not in page
    parsed = parse(page)
    # nothing is loaded from elsewhere and nothing runs
    assert parsed.tags["script"] == parsed.tags["link"] == parsed.tags["img"] == 0
    assert "src=" not in page
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in page


def test_back_link_is_optional_and_escaped(catalog: Catalog) -> None:
    table = make_table(catalog, writes=1)
    assert 'class="back"' not in render_table_html("db.t", table)
    page = render_table_html("db.t", table, back_href='../"x"')
    assert '<a class="back" href="../&quot;x&quot;">all tables</a>' in page


def test_empty_table(catalog: Catalog) -> None:
    table = catalog.create_table(
        "db.e", schema=SCHEMA, primary_keys=["dt", "id"], options={"bucket": "1"}
    )
    page = render_table_html("db.e", table)
    parsed = parse(page)
    assert parsed.buckets == [] and parsed.snapshots == []
    assert "No snapshots yet." in page


@pytest.mark.parametrize("recent", [1, 2])
def test_unpartitioned_table(catalog: Catalog, recent: int) -> None:
    table = catalog.create_table(
        "db.u", schema=SCHEMA, primary_keys=["id"], options={"bucket": "3", "write-only": "true"}
    )
    table.write(rows(60, "a", "x"))
    table.write(rows(60, "a", "y"))
    parsed = parse(render_table_html("db.u", table, recent_snapshots=recent))
    splits = table.splits()
    assert {(g["data-partition"], g["data-bucket"]) for g in parsed.buckets} == {
        ("", str(s.bucket)) for s in splits
    }
    assert sum(len(g["levels"]) for g in parsed.buckets) == sum(len(s.files) for s in splits)
    assert len(parsed.snapshots) == recent


def test_message_page_escapes() -> None:
    page = render_message_html("Not found", "no table '<x>'")
    assert "<h1>Not found</h1>" in page
    assert "no table &#x27;&lt;x&gt;&#x27;" in page


def test_page_as_the_plugin_renders_it_shows_the_cli_figures(catalog: Catalog) -> None:
    """More snapshots than the chart shows, a compaction among them: the page's header (as the
    plugin renders it, 20 snapshots charted) shows the figures of ``table.health()``, which
    ``lakeops health`` prints."""
    from lakeops.compact.health import DEFAULT_WINDOW
    from lakeops.health.view import format_ratio

    table = make_table(catalog, writes=12)
    table.compact(full=True)
    for i in range(10):
        table.write(rows(10 + i, "2024-01-01", "n"))
    page = render_table_html("db.t", table, recent_snapshots=20)
    health = table.health(recent_snapshots=DEFAULT_WINDOW)
    assert health.write_amplification is not None and health.write_amplification > 0
    assert (
        f'<header data-snapshot-id="{health.snapshot_id}" '
        f'data-write-amplification="{format_ratio(health.write_amplification)}" '
        f'data-space-amplification="{format_ratio(health.space_amplification)}">'
    ) in page
    got = [g["data-space-amplification"] for g in parse(page).buckets]
    assert got == [format_ratio(b.space_amplification) for b in health.buckets]


def test_large_tables_are_summarised_per_partition(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Beyond MAX_BANDS buckets: a row per partition, and bands for the buckets with the most
    sorted runs only."""
    import lakeops.health.view as view

    table = make_table(catalog, writes=2)
    table.compact(full=True, partitions=[{"dt": "2024-01-01"}])
    monkeypatch.setattr(view, "MAX_BANDS", 2)
    page = render_table_html("db.t", table)
    drawn = parse(page).buckets
    # the two buckets of the uncompacted partition have two runs, the others one
    assert [g["data-partition"] for g in drawn] == [f"dt={EVIL}"] * 2
    assert all(g["data-sorted-runs"] == "2" for g in drawn)
    summary = dict(
        (html.unescape(p), (int(n), int(r)))
        for p, n, r in re.findall(
            r'<tr class="partition" data-partition="([^"]*)" data-buckets="(\d+)" '
            r'data-max-sorted-runs="(\d+)"',
            page,
        )
    )
    assert summary == {"dt=2024-01-01": (2, 1), f"dt={EVIL}": (2, 2)}


class HeatParser(HTMLParser):
    """The cells of the heat map: (partition, bucket) → (sorted runs shown, title, style)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.cells: dict[tuple[str, str], dict[str, str]] = {}
        self._open: dict[str, str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "td" and "cell" in a.get("class", "").split():
            self._open = {**a, "text": ""}
            self.cells[a["data-partition"], a["data-bucket"]] = self._open

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._open["text"] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._open = None


def wide_table(catalog: Catalog) -> tuple[Table, dict[str, int]]:
    """16 buckets in three partitions, each partition written a different number of times:
    every write puts one level-0 file in every bucket (60 keys over 16 buckets)."""
    table = catalog.create_table(
        "db.wide",
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "16", "write-only": "true", "num-sorted-run.compaction-trigger": "3"},
    )
    writes = {"2024-01-01": 1, "2024-01-02": 2, "2024-01-03": 4}
    for dt, n in writes.items():
        for i in range(n):
            table.write(rows(200, dt, str(i)))
    return table, writes


def test_many_buckets_get_a_heat_map_of_every_bucket(catalog: Catalog) -> None:
    """Past a dozen buckets: one heat-map cell per (partition, bucket) of the splits showing its
    sorted runs (the model: the writes into its partition), with the figures in its title;
    bands only for the worst dozen."""
    import lakeops.health.view as view

    table, writes = wide_table(catalog)
    page = render_table_html("db.wide", table, partition_href=lambda label: f"?p={label}")
    cells = HeatParser()
    cells.feed(page)
    splits = expected_bands(table)
    assert len(splits) == 48
    assert set(cells.cells) == set(splits)
    for (label, bucket), split in splits.items():
        cell = cells.cells[label, bucket]
        runs = writes[label.removeprefix("dt=")]
        assert sorted_runs(split) == runs
        assert cell["data-sorted-runs"] == cell["text"] == str(runs)
        assert cell["title"].startswith(f"{label} · bucket {bucket}: {runs} sorted runs · ")
        assert f"{len(split.files)} files" in cell["title"]
        state = "ok" if runs == 1 else "near" if runs == 2 else "over"
        assert state in cell["class"].split()
        assert cell["style"].startswith("background:#")
    drawn = parse(page).buckets
    assert len(drawn) == view.MAX_BANDS == 12
    assert {g["data-partition"] for g in drawn} == {"dt=2024-01-03"}
    assert '<a href="?p=dt=2024-01-01">dt=2024-01-01</a>' in page
    # the partition page: one row of 16 cells
    one = HeatParser()
    one.feed(render_table_html("db.wide", table, partition="dt=2024-01-02"))
    assert set(one.cells) == {("dt=2024-01-02", str(b)) for b in range(16)}


def test_a_dozen_buckets_get_no_heat_map(catalog: Catalog) -> None:
    table = make_table(catalog, writes=2)
    page = render_table_html("db.t", table)
    assert 'class="heatmap"' not in page
    assert len(parse(page).buckets) == 4


def test_heat_colours_follow_the_trigger() -> None:
    from lakeops.health.view import heat_color

    ok1, ok3, near, over, stop = (heat_color(n, 5, 8) for n in (1, 3, 4, 5, 8))
    assert len({ok1, ok3, near, over, stop}) == 5
    assert heat_color(6, 5, 8) == over and heat_color(20, 5, 8) == stop
    assert ok1[1] == near[1] == "#1f2328" and over[1] == stop[1] == "#ffffff"


def test_counts_on_the_page_have_separators(catalog: Catalog) -> None:
    table = catalog.create_table(
        "db.big", schema=SCHEMA, primary_keys=["dt", "id"], options={"bucket": "1"}
    )
    table.write(rows(3_000, "2024-01-01", "x"))
    table.write(rows(2_500, "2024-01-01", "y"))
    page = render_table_html("db.big", table)
    # records and rows count every row of every file: 3,000 + 2,500 (no compaction yet)
    assert "<dt>records</dt><dd>5,500</dd>" in page
    assert "<b>5,500</b> rows" in page
    assert re.search(r"\(\d{1,3}(,\d{3})+ bytes\)", page)
    assert not re.search(r"[^\d,.#x-]\d{4,} (rows|bytes|records|files)", page)
