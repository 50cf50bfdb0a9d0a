"""Metadata commands: ``meta`` (any of Paimon's system tables of a table) and ``tag``
(``create``, ``delete``, ``list``)."""

from __future__ import annotations

from typing import Annotated, Any

import pyarrow as pa
import typer
from rich.console import Console
from rich.markup import escape

from lakeops.cli.arguments import TableArg
from lakeops.cli.context import state
from lakeops.cli.errors import CliError
from lakeops.cli.grids import grid, print_grid
from lakeops.cli.output import jsonable
from lakeops.table.system_tables import SYSTEM_TABLES, split_system_table

__all__ = ["register", "rows_table"]

PANEL = "Inspect"

tag_app = typer.Typer(
    help="Create, delete and list the tags of a table (Paimon's tag/tag-<name> files).",
    no_args_is_help=True,
)


def _cell(value: object) -> str:
    if value is None:
        return "null"
    return str(jsonable(value))


#: tables wider than this are printed a row at a time, one line per column
WIDE = 8


def rows_table(console: Console, data: pa.Table, title: str) -> None:
    """Print an Arrow table as a rich table (every value as text, null as ``null``); one of
    more than :data:`WIDE` columns as one column/value table per row."""
    if data.num_columns > WIDE:
        console.print(escape(title), markup=True)
        for i, row in enumerate(data.to_pylist(), 1):
            record = grid("column", "value")
            for k, v in row.items():
                record.add_row(escape(k), escape(_cell(v)))
            print_grid(console, f"row {i}", record)
        return
    out = grid(*(escape(n) for n in data.schema.names))
    for row in data.to_pylist():
        out.add_row(*(escape(_cell(v)) for v in row.values()))
    print_grid(console, escape(title), out)


def _columns(data: pa.Table) -> list[dict[str, Any]]:
    return [{"name": f.name, "type": str(f.type), "nullable": f.nullable} for f in data.schema]


def meta(
    ctx: typer.Context,
    table: Annotated[
        str,
        typer.Argument(
            metavar="TABLE",
            help="The table, as database.table (or Paimon's database.table$name).",
            show_default=False,
        ),
    ],
    name: Annotated[
        str | None,
        typer.Argument(
            metavar="NAME",
            help=f"The metadata table: {', '.join(SYSTEM_TABLES)}.",
            show_default=False,
        ),
    ] = None,
    snapshot: Annotated[
        int | None,
        typer.Option(
            "--snapshot",
            metavar="ID",
            help="The snapshot of files, manifests, partitions, buckets and audit_log "
            "(default: the latest).",
            show_default=False,
        ),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option("--limit", "-n", min=0, metavar="N", help="Show at most N rows."),
    ] = None,
) -> None:
    """Print one of Paimon's metadata tables of a table, with Paimon's columns: snapshots,
    schemas, options, files, manifests, partitions, buckets, tags, audit_log (the merged rows
    with their row kind).

    'lakeops meta db.t files' and 'lakeops meta "db.t$files"' are the same.
    """
    st = state(ctx)
    base, suffix = split_system_table(table)
    if suffix is not None and name is not None:
        raise CliError(f"{table!r} already names a metadata table; drop NAME ({name!r})")
    chosen = suffix or name
    if chosen is None:
        raise CliError(f"name the metadata table: one of {', '.join(SYSTEM_TABLES)}")
    data = st.metadata_table(base, chosen, snapshot)
    total = data.num_rows
    if limit is not None:
        data = data.slice(0, limit)
    label = chosen.lower()

    def human(console: Console) -> None:
        shown = f"{data.num_rows} of {total}" if data.num_rows < total else str(total)
        rows_table(console, data, f"{base}${label} ({shown} rows)")

    st.out.result(
        {
            "table": base,
            "metadata_table": label,
            "columns": _columns(data),
            "row_count": total,
            "rows": data.to_pylist(),
        },
        human,
    )


NameArg = Annotated[str, typer.Argument(metavar="NAME", help="The tag's name.", show_default=False)]


@tag_app.command("create")
def tag_create(
    ctx: typer.Context,
    table: TableArg,
    name: NameArg,
    snapshot: Annotated[
        int | None,
        typer.Option(
            "--snapshot",
            metavar="ID",
            help="The snapshot to tag (default: the latest).",
            show_default=False,
        ),
    ] = None,
    time_retained: Annotated[
        str | None,
        typer.Option(
            "--time-retained",
            metavar="DURATION",
            help="How long the tag is kept, e.g. '7 d' (default: tag.default-time-retained).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Tag a snapshot: expiry and orphan cleanup then keep every file it references, and
    Paimon, pypaimon and lakeops read it by name."""
    st = state(ctx)
    tag = st.table(table).create_tag(name, snapshot, time_retained=time_retained)

    def human(console: Console) -> None:
        console.print(f"tagged snapshot {tag.snapshot.id} of {escape(table)} as {escape(name)}")

    st.out.result({"table": table, "tag": tag.name, "snapshot_id": tag.snapshot.id}, human)


@tag_app.command("delete")
def tag_delete(ctx: typer.Context, table: TableArg, name: NameArg) -> None:
    """Delete a tag (files only it kept are left for 'lakeops orphans')."""
    st = state(ctx)
    tag = st.table(table).delete_tag(name)

    def human(console: Console) -> None:
        console.print(f"deleted tag {escape(name)} (snapshot {tag.snapshot.id}) of {escape(table)}")

    st.out.result({"table": table, "tag": tag.name, "snapshot_id": tag.snapshot.id}, human)


@tag_app.command("list")
def tag_list(ctx: typer.Context, table: TableArg) -> None:
    """List the tags of a table (the metadata table tags)."""
    st = state(ctx)
    data = st.metadata_table(table, "tags", None)

    def human(console: Console) -> None:
        if data.num_rows == 0:
            console.print(f"{escape(table)} has no tags")
        else:
            rows_table(console, data, f"tags of {table}")

    st.out.result({"table": table, "tags": data.to_pylist()}, human)


def register(app: typer.Typer) -> None:
    """Add the metadata commands to ``app``."""
    app.command(rich_help_panel=PANEL)(meta)
    app.add_typer(tag_app, name="tag", rich_help_panel=PANEL)
