"""Inspection commands: ``describe`` and ``health`` (with the HTML page and its PNG)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from lakeops import AnyTable
from lakeops.cli.arguments import TableArg
from lakeops.cli.context import state
from lakeops.cli.errors import CliError
from lakeops.cli.parsing import parse_assignments
from lakeops.cli.screenshot import find_chromium, screenshot_html
from lakeops.cli.views import describe_data, health_data, render_describe, render_health
from lakeops.compact.health import DEFAULT_WINDOW
from lakeops.health.view import render_table_html
from lakeops.table import primary_key_table

__all__ = ["register"]

PANEL = "Inspect"


def describe(
    ctx: typer.Context,
    table: TableArg,
    snapshots: Annotated[
        int,
        typer.Option(
            "--snapshots", "-n", min=0, metavar="N", help="How many recent snapshots to list."
        ),
    ] = 10,
) -> None:
    """Show a table's schema, keys, options, recent snapshots and live files by level."""
    st = state(ctx)
    data = describe_data(table, st.table(table), snapshots)
    st.out.result(data, lambda console: render_describe(console, data))


def health(
    ctx: typer.Context,
    table: TableArg,
    html: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE", help="Also write the health page (self-contained HTML) to this file."
        ),
    ] = None,
    png: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="Also render the health page to this PNG (needs Debian's chromium).",
        ),
    ] = None,
    recent_snapshots: Annotated[
        int,
        typer.Option(
            min=1,
            metavar="N",
            help="Retained snapshots in the write-amplification window (see docs/health.md).",
        ),
    ] = DEFAULT_WINDOW,
    partition: Annotated[
        str | None,
        typer.Option(
            "--partition",
            "-p",
            metavar="K=V[,K=V]",
            help="Draw every bucket of this partition on the --html/--png page (a large "
            "table's page otherwise draws its worst partitions and summarises the rest).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Show the LSM health of every bucket: sorted runs, level-0 files, files and bytes by
    level, space amplification (stored bytes / estimated bytes after a full compaction); and
    the write amplification of recent snapshots.

    Many sorted runs slow reads (compact the table); space amplification well above 1 means
    stale versions are still stored (a full compaction removes them). --html/--png draw the
    page the Airflow plugin shows, with the same figures (the last 20 snapshots charted); the
    PNG is sized to the whole page.
    """
    st = state(ctx)
    if png is not None:
        find_chromium()  # fail before doing any work
    target = st.table(table)
    label = None if partition is None else _partition_label(target, partition)
    if label is not None and html is None and png is None:
        raise CliError("--partition selects what the page draws: add --html FILE or --png FILE")
    keyed = primary_key_table(target, "health")
    report = keyed.health(recent_snapshots=recent_snapshots)
    data: dict[str, Any] = health_data(table, report)
    if html is not None or png is not None:
        page = render_table_html(table, keyed, health=report, partition=label, cli_hint=True)
        with st.out.spinner(f"rendering the health page of {table}"):
            _write_page(page, html, png)
        data["html"] = None if html is None else str(html)
        data["png"] = None if png is None else str(png)

    def human(console: Console) -> None:
        render_health(console, table, report, target.options.partition_default_name)
        for kind, path in (("HTML", html), ("PNG", png)):
            if path is not None:
                console.print(f"{kind} written to {path}", markup=False)

    st.out.result(data, human)


def _partition_label(table: AnyTable, text: str) -> str:
    """``--partition k=v[,k2=v2]`` as the page labels partitions (``k=v/k2=v2``, in the
    table's partition-key order); every partition key must be named."""
    spec = parse_assignments(text, "--partition")
    keys = list(table.schema.partition_keys)
    if not keys:
        raise CliError(f"--partition: {table.identifier} is not partitioned")
    if sorted(spec) != sorted(keys):
        raise CliError(
            f"--partition {text!r} must name every partition column of {table.identifier} "
            f"once: {','.join(f'{k}=...' for k in keys)}"
        )
    return "/".join(f"{k}={spec[k]}" for k in keys)


def _write_page(page: str, html: Path | None, png: Path | None) -> None:
    """Write the page to ``html`` and/or screenshot it to ``png``."""
    if html is not None:
        html.write_text(page, encoding="utf-8")
    if png is None:
        return
    if html is not None:
        screenshot_html(html, png)
        return
    with tempfile.TemporaryDirectory(prefix="lakeops-health-") as tmp:
        source = Path(tmp) / "health.html"
        source.write_text(page, encoding="utf-8")
        screenshot_html(source, png)


def register(app: typer.Typer) -> None:
    """Add the inspection commands to ``app``."""
    app.command(rich_help_panel=PANEL)(describe)
    app.command(rich_help_panel=PANEL)(health)
