"""``describe`` and ``health`` (JSON, text, the HTML page and its PNG), checked against the
table's schema, snapshots, health and splits."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakeops.cli import screenshot
from lakeops.cli.errors import CliError
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
    assert "write amplification 0.00" in text and "max sorted runs 3" in text


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


@pytest.mark.skipif(not Path("/usr/bin/chromium").is_file(), reason="needs Debian's chromium")
def test_health_png(cli: Cli, loaded: str, tmp_path: Path) -> None:
    png = tmp_path / "health.png"
    result = cli.ok("health", loaded, "--png", str(png))
    width, height = _png_size(png.read_bytes())
    assert width > 100 and height > 100
    assert f"PNG written to {png}" in result.stdout
    both = tmp_path / "both.png"
    cli.ok("health", loaded, "--png", str(both), "--html", str(tmp_path / "both.html"))
    assert _png_size(both.read_bytes()) == (width, height)
    assert (tmp_path / "both.html").is_file()


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
