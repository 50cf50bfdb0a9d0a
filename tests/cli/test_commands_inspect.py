"""``describe`` and ``health`` (JSON, text, the HTML page and its PNG), checked against the
table's schema, snapshots, health and splits."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from lakeops import Catalog, Table
from lakeops.cli import screenshot
from lakeops.cli.errors import CliError
from lakeops.health import view as health_view
from tests.cli.conftest import Cli

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def test_describe_json(cli: Cli, loaded: str) -> None:
    table = cli.table()
    out = cli.json("describe", loaded, "--snapshots", "2")
    assert [f["name"] for f in out["fields"]] == table.schema.field_names
    assert [f["type"] for f in out["fields"]] == [f.type.to_paimon() for f in table.schema.fields]
    assert [f["name"] for f in out["fields"] if f["primary_key"]] == ["dt", "id"]
    assert [f["name"] for f in out["fields"] if f["partition_key"]] == ["dt"]
    assert out["options"] == table.schema.options
    assert out["snapshot_count"] == len(table.snapshots()) == 3
    assert [s["id"] for s in out["snapshots"]] == [3, 2]
    assert out["snapshots"][0]["total_record_count"] == table.snapshot(3).total_record_count
    health = table.health()
    assert out["buckets"] == len(health.buckets) == 4 and out["partitions"] == 2
    assert out["files_by_level"] == [
        {
            "level": 0,
            "files": sum(b.level0_files for b in health.buckets),
            "bytes": sum(b.total_bytes for b in health.buckets),
        }
    ]


def test_describe_text(cli: Cli, loaded: str) -> None:
    text = cli.ok("describe", loaded).stdout
    for word in ("db.orders", "BIGINT NOT NULL", "write-only", "APPEND", "snapshots (last 3 of 3)"):
        assert word in text


def test_describe_empty_table(cli: Cli, orders: str) -> None:
    out = cli.json("describe", orders)
    assert out["snapshots"] == [] and out["latest_snapshot_id"] is None
    assert out["files_by_level"] == []
    assert "no snapshot yet" in cli.ok("health", orders).stdout


def test_health_json(cli: Cli, loaded: str) -> None:
    expected = cli.table().health()
    out = cli.json("health", loaded)
    assert out["table"] == loaded and out["snapshot_id"] == expected.snapshot_id
    assert out["max_sorted_runs"] == expected.max_sorted_runs == 3
    got = [(b["partition"]["dt"], b["bucket"], b["sorted_runs"]) for b in out["buckets"]]
    assert got == [(b.partition["dt"], b.bucket, b.sorted_runs) for b in expected.buckets]
    assert [b["files_by_level"] for b in out["buckets"]] == [
        {str(k): v for k, v in b.files_by_level.items()} for b in expected.buckets
    ]
    assert out["write_amplification"] == expected.write_amplification


def test_health_text(cli: Cli, loaded: str) -> None:
    text = cli.ok("health", loaded).stdout
    assert "dt=2024-01-01" in text and "dt=2024-01-02" in text
    assert "write amplification 0.00 (snapshots 1..3" in text and "max sorted runs 3" in text
    assert "space amplification" in text


def test_health_html(cli: Cli, loaded: str, tmp_path: Path) -> None:
    path = tmp_path / "health.html"
    out = cli.json("health", loaded, "--html", str(path))
    assert out["html"] == str(path)
    page = path.read_text()
    assert loaded in page
    assert page.count('<g class="bucket"') == len(cli.table().splits()) == 4


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG_SIGNATURE
    assert data[12:16] == b"IHDR"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


@pytest.mark.slow  # starts headless Chromium
@pytest.mark.skipif(not Path("/usr/bin/chromium").is_file(), reason="needs Debian's chromium")
def test_health_png(cli: Cli, loaded: str, tmp_path: Path) -> None:
    png = tmp_path / "health.png"
    result = cli.ok("health", loaded, "--png", str(png))
    width, height = _png_size(png.read_bytes())
    assert width > 100 and height > 100
    assert f"PNG written to {png}" in result.stdout
    # --png with --html: test_health_png_holds_every_bucket


def test_health_png_without_chromium(
    cli: Cli, loaded: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(screenshot, "_DEFAULT", tmp_path / "no-chromium")
    monkeypatch.setenv("PATH", str(tmp_path))
    png = tmp_path / "health.png"
    result = cli("health", loaded, "--png", str(png))
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"error: chromium is not installed: {screenshot.CHROMIUM_HINT}"
    ]
    assert "apt-get install chromium" in result.stderr
    assert not png.exists()


def test_chromium_failure_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "chromium"
    fake.write_text("#!/bin/sh\necho 'noise' >&2\necho 'cannot open display' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setattr(screenshot, "_DEFAULT", fake)
    page = tmp_path / "p.html"
    page.write_text("<html></html>")
    with pytest.raises(CliError, match="cannot open display"):
        screenshot.screenshot_html(page, tmp_path / "p.png")


def _kv_table(cli: Cli, name: str, buckets: int) -> Table:
    catalog = Catalog(str(cli.warehouse))
    catalog.create_database("db", ignore_if_exists=True)
    return catalog.create_table(
        name,
        schema=pa.schema([("id", pa.int64()), ("v", pa.string())]),
        primary_keys=["id"],
        options={"bucket": str(buckets), "write-only": "true"},
    )


def _kv(ids: range, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    payload = [bytes(r).hex() for r in rng.integers(0, 256, size=(len(ids), 16), dtype=np.uint8)]
    return pa.table({"id": pa.array(ids, pa.int64()), "v": payload})


def test_health_json_space_amplification_per_bucket(cli: Cli, tmp_path: Path) -> None:
    """1000 keys, 1000 new keys, 1000 upserts of the first: per bucket the reported space
    amplification is stored ÷ live bytes (a fully compacted copy, measured) within 20%."""
    table = _kv_table(cli, "db.kv", buckets=2)
    for ids, seed in ((range(1000), 1), (range(1000, 2000), 2), (range(1000), 3)):
        table.write(_kv(ids, seed))
    out = json.loads(cli.ok("health", "db.kv", "--json").stdout)  # --json after the command
    copy_dir = tmp_path / "copy"
    shutil.copytree(cli.warehouse, copy_dir)
    copy = Catalog(str(copy_dir)).get_table("db.kv")
    copy.compact(full=True)
    live = {s.bucket: sum(f.file_size for f in s.files) for s in copy.splits()}
    bucket_dir = cli.warehouse / "db.db" / "kv"
    assert len(out["buckets"]) == 2
    for b in out["buckets"]:
        stored = sum(p.stat().st_size for p in (bucket_dir / f"bucket-{b['bucket']}").iterdir())
        truth = stored / live[b["bucket"]]
        assert 1.3 < truth < 1.7
        assert abs(b["space_amplification"] - truth) <= 0.2 * truth, (b, truth)
    assert sum(b["live_rows"] for b in out["buckets"]) == 2000
    assert sum(b["rows"] for b in out["buckets"]) == 3000


def test_health_html_shows_the_json_figures(cli: Cli, tmp_path: Path) -> None:
    table = _kv_table(cli, "db.kv", buckets=2)
    for i in range(4):
        table.write(_kv(range(i * 100, i * 100 + 300), i))
    table.compact(full=True)
    table.write(_kv(range(50), 9))
    page = tmp_path / "h.html"
    out = cli.json("health", "db.kv", "--html", str(page))
    header = re.search(
        r'<header data-snapshot-id="(\d+)" data-write-amplification="([^"]*)" '
        r'data-space-amplification="([^"]*)"',
        page.read_text(),
    )
    assert header is not None
    assert header.groups() == (
        str(out["snapshot_id"]),
        f"{out['write_amplification']:.2f}",
        f"{out['space_amplification']:.2f}",
    )
    assert out["write_amplification"] > 0
    assert out["write_amplification_window"] == {"first_snapshot": 1, "last_snapshot": 6}


def _bands(page: str) -> set[tuple[str, str]]:
    return set(re.findall(r'<g class="bucket" data-partition="([^"]*)" data-bucket="(\d+)"', page))


def test_health_page_summarises_partitions_with_drill_down(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Beyond MAX_BANDS buckets the page draws whole partitions, worst first (most sorted
    runs), summarises every partition, and --partition draws all buckets of another one."""
    monkeypatch.setattr(health_view, "MAX_BANDS", 4)
    catalog = Catalog(str(cli.warehouse))
    catalog.create_database("db", ignore_if_exists=True)
    table = catalog.create_table(
        "db.parts",
        schema=pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())]),
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "2", "write-only": "true"},
    )
    writes = {"2024-01-03": 3, "2024-01-01": 2, "2024-01-02": 1}  # sorted runs per bucket
    for dt, times in writes.items():
        for i in range(times):
            data = _kv(range(40), i)
            table.write(data.add_column(0, "dt", pa.array([dt] * 40)))
    runs = {(f"dt={s.partition[0]}", str(s.bucket)): len(s.files) for s in table.splits()}
    assert runs == {(f"dt={dt}", str(b)): n for dt, n in writes.items() for b in range(2)}
    page = tmp_path / "h.html"
    cli.ok("health", "db.parts", "--html", str(page))
    text = page.read_text()
    assert _bands(text) == {
        (f"dt={dt}", str(b)) for dt in ("2024-01-03", "2024-01-01") for b in (0, 1)
    }
    summary = re.findall(
        r'<tr class="partition" data-partition="([^"]*)" data-buckets="(\d+)" '
        r'data-max-sorted-runs="(\d+)" data-drawn="(\w+)">',
        text,
    )
    assert summary == [
        ("dt=2024-01-03", "2", "3", "true"),
        ("dt=2024-01-01", "2", "2", "true"),
        ("dt=2024-01-02", "2", "1", "false"),
    ]
    assert "--partition" in text
    cli.ok("health", "db.parts", "--html", str(page), "-p", "dt=2024-01-02")
    assert _bands(page.read_text()) == {("dt=2024-01-02", "0"), ("dt=2024-01-02", "1")}
    wrong = cli("health", "db.parts", "--html", str(page), "-p", "dt=2024-1-02")
    assert wrong.exit_code == 1
    assert wrong.stderr.startswith(
        "error: partition 'dt=2024-1-02' does not exist; did you mean dt=2024-01-02"
    )
    assert len(wrong.stderr.splitlines()) == 1
    no_page = cli("health", "db.parts", "-p", "dt=2024-01-02")
    assert no_page.exit_code == 1 and "add --html FILE or --png FILE" in no_page.stderr


_BUCKET_RECTS = (
    "<script>document.documentElement.setAttribute('data-rects', JSON.stringify("
    "Array.from(document.querySelectorAll('g.bucket')).map(g => {"
    "const r = g.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom];})));"
    "</script>"
)


@pytest.mark.slow  # starts headless Chromium
@pytest.mark.skipif(not Path("/usr/bin/chromium").is_file(), reason="needs Debian's chromium")
def test_health_png_holds_every_bucket(cli: Cli, tmp_path: Path) -> None:
    """Eight buckets of six runs each make a page taller than a browser window: every bucket
    group, as the browser lays the page out, lies inside the PNG."""
    table = _kv_table(cli, "db.tall", buckets=8)
    for i in range(6):
        table.write(_kv(range(i * 100, i * 100 + 400), i))
    png, page = tmp_path / "h.png", tmp_path / "h.html"
    cli.ok("health", "db.tall", "--png", str(png), "--html", str(page))
    width, height = _png_size(png.read_bytes())
    # lay the written page out at the PNG's width, as the screenshot did, and measure the groups
    probe = tmp_path / "probe.html"
    probe.write_text(
        page.read_text().replace(
            "</body>", f"<style>{screenshot.FULL_PAGE_CSS}</style>{_BUCKET_RECTS}</body>"
        )
    )
    dom = subprocess.run(
        ["/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
         f"--user-data-dir={tmp_path / 'profile'}", f"--window-size={width},{height}",
         probe.as_uri()],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    found = re.search(r'data-rects="([^"]*)"', dom)
    assert found is not None
    rects = json.loads(found.group(1).replace("&quot;", '"'))
    assert len(rects) == 8
    assert height > 1600  # the old fixed window would have cut the last buckets
    for left, top, right, bottom in rects:
        assert 0 <= left < right <= width and 0 <= top < bottom <= height
