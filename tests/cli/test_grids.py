"""The CLI at 80 columns: headings are whole lines (broken only between words, never to a
table's width), table cells are never cut with an ellipsis, and a dry run's progress says what
it would delete."""

from __future__ import annotations

from typer.testing import CliRunner

from tests.cli.conftest import Cli


def _narrow(cli: Cli) -> Cli:
    return Cli(cli.warehouse, CliRunner(env={"COLUMNS": "80"}))


def test_describe_headings_are_whole_lines_at_80_columns(cli: Cli, loaded: str) -> None:
    out = _narrow(cli).ok("describe", loaded).stdout
    lines = out.splitlines()
    heading = next(line for line in lines if line.startswith("live files:"))
    # the whole sentence on one line (it fits in 80 columns; the table under it is narrower)
    assert heading.rstrip().endswith("KiB"), heading
    assert "bucket(s) of 2 partition(s)" in heading
    assert all(len(line) <= 80 for line in lines)


def test_health_cells_are_never_cut_at_80_columns(cli: Cli, loaded: str) -> None:
    out = _narrow(cli).ok("health", loaded).stdout
    assert "…" not in out
    assert all(len(line) <= 80 for line in out.splitlines())
    # every partition value is there in full once its folded lines are joined
    cells = "".join(line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│"))
    assert cells.count("dt=2024-01-01") == 2 and cells.count("dt=2024-01-02") == 2
    # and the summary sentence breaks between words only
    summary = " ".join(out[out.index("space amplification") :].split())
    assert "after a full compaction); write amplification" in summary


def test_a_dry_run_of_orphan_cleanup_says_would_delete(cli: Cli, loaded: str) -> None:
    result = _narrow(cli).ok("orphans", loaded, "--dry-run")
    assert "would delete" in result.stderr
    assert "files deleted" not in result.stderr
    assert "would delete 0 orphan file(s)" in result.stdout
