"""Data commands: ``write`` (files → one commit), ``delete`` (rows by a condition) and
``lookup`` (rows of primary keys)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from lakeops import AnyTable, Snapshot
from lakeops.cli.arguments import ParallelismOpt, TableArg
from lakeops.cli.context import state
from lakeops.cli.errors import CliError
from lakeops.cli.grids import grid, print_grid
from lakeops.cli.lookup_keys import key_columns, parse_lookup_keys
from lakeops.cli.output import human_bytes, jsonable
from lakeops.cli.where import parse_where
from lakeops.errors import CommitStateUnknownError, SnapshotNotFoundError
from lakeops.parallel import check_parallelism
from lakeops.table import primary_key_table
from lakeops.write.input_files import InputFormat, open_inputs, read_batches

__all__ = ["register"]

PANEL = "Data"


def write(
    ctx: typer.Context,
    table: TableArg,
    files: Annotated[
        list[Path],
        typer.Argument(
            metavar="FILE",
            help="Parquet, CSV or JSON-lines files (or directories of them) to write, all in "
            "one commit.",
            show_default=False,
        ),
    ],
    fmt: Annotated[
        InputFormat | None,
        typer.Option(
            "--format",
            "-f",
            help="Input format (default: from each file's extension: .parquet, .csv, .json, "
            ".jsonl).",
            show_default=False,
        ),
    ] = None,
    batch_rows: Annotated[
        int, typer.Option(min=1, metavar="N", help="Rows read and written per batch.")
    ] = 100_000,
    parallelism: ParallelismOpt = None,
) -> None:
    """Write Parquet, CSV or JSON-lines files into a table as ONE commit (upserts by primary key).

    CSV and JSON values are parsed as the table's column types (a STRING column stays text);
    a value that does not fit names its file, line and column. Rows are validated by the
    table (missing or extra columns, null keys, lossy types) and read in batches; on any
    error every file written so far is deleted and nothing is committed.
    Prints the new snapshot id and the rows written.
    """
    check_parallelism(parallelism)
    st = state(ctx)
    target = st.table(table)
    inputs = open_inputs([str(f) for f in files], fmt)
    counts = [i.rows for i in inputs]
    total = None if any(c is None for c in counts) else sum(c or 0 for c in counts)
    schema = target.arrow_schema
    rows = 0
    writer = target.new_write(parallelism=parallelism)
    try:
        with st.out.progress(f"writing {table}", total) as advance:
            for item in inputs:
                for batch in read_batches(item, schema, batch_rows):
                    writer.write(batch)
                    rows += batch.num_rows
                    advance(batch.num_rows)
        snapshot = target.commit(writer.prepare_commit())
    except CommitStateUnknownError:
        raise  # the snapshot may reference these files: keep them
    except BaseException:
        writer.abort()
        raise
    ours = _own_snapshots(target, snapshot)
    appended = next((s for s in ours if s.commit_kind != "COMPACT"), None)
    stats = target.commit_stats(appended.id) if appended is not None else None

    def human(console: Console) -> None:
        if snapshot is None:
            console.print(f"nothing written: the input has no rows ({len(inputs)} file(s))")
            return
        head = f"wrote {rows:,} rows from {len(inputs)} file(s) to {escape(table)}: "
        parts = [f"snapshot {s.id} ({s.commit_kind})" for s in ours]
        if stats is not None:
            parts.append(f"{stats.files_added} new data file(s), {human_bytes(stats.bytes_added)}")
        console.print(head + ", ".join(parts))

    st.out.result(
        {
            "table": table,
            "snapshot_id": None if snapshot is None else snapshot.id,
            "snapshots": [{"id": s.id, "commit_kind": s.commit_kind} for s in ours],
            "rows": rows,
            "files": [str(i.path) for i in inputs],
            "stats": stats,
        },
        human,
    )


def _own_snapshots(table: AnyTable, last: Snapshot | None) -> list[Snapshot]:
    """The snapshots one commit published, oldest first: ``last`` and the snapshots just before
    it with the same commit user (an APPEND followed by its in-writer COMPACT)."""
    if last is None:
        return []
    ours = [last]
    while ours[0].id > 1:
        try:
            previous = table.snapshot(ours[0].id - 1)
        except SnapshotNotFoundError:  # expired meanwhile
            break
        if previous.commit_user != last.commit_user:
            break
        ours.insert(0, previous)
    return ours


def lookup(
    ctx: typer.Context,
    table: TableArg,
    keys: Annotated[
        list[str],
        typer.Argument(
            metavar="KEY=VALUE[,KEY=VALUE]",
            help="One key per argument: KEY=VALUE[,KEY=VALUE] naming every primary-key and "
            "partition column (values cannot contain ',').",
            show_default=False,
        ),
    ],
    columns: Annotated[
        str | None,
        typer.Option(
            metavar="COL[,COL]",
            help="Columns to show, comma-separated (default: all).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Look up the current rows of primary keys (point lookups; deleted keys return nothing).

    Example: lakeops lookup db.orders dt=2024-01-01,id=42 dt=2024-01-01,id=43
    """
    st = state(ctx)
    target = st.table(table)
    wanted = [c.strip() for c in columns.split(",")] if columns else None
    if wanted is not None and not all(wanted):
        raise CliError(f"--columns {columns!r} has an empty column name")
    unknown = [c for c in wanted or [] if c not in target.schema.field_names]
    if unknown:
        raise CliError(
            f"--columns names unknown column(s) {unknown}; the table has "
            f"{list(target.schema.field_names)}"
        )
    key_table = parse_lookup_keys(keys, target)
    found = primary_key_table(target, "lookup").lookup(key_table, columns=wanted)
    rows = found.to_pylist()

    def human(console: Console) -> None:
        if not rows:
            console.print(f"no rows for {len(keys)} key(s) of {escape(table)}")
            return
        found_rows = grid(*(escape(c) for c in found.column_names))
        for row in rows:
            found_rows.add_row(*(escape(_cell(v)) for v in row.values()))
        print_grid(console, f"{escape(table)}: {len(rows)} row(s)", found_rows)

    st.out.result(
        {"table": table, "key_columns": key_columns(target), "keys": len(keys), "rows": rows},
        human,
    )


def delete(
    ctx: typer.Context,
    table: TableArg,
    where: Annotated[
        str,
        typer.Option(
            "--where",
            metavar="EXPR",
            help="The rows to delete, e.g. \"dt = '2024-01-01' AND v IS NULL\" (as head's "
            "--where).",
            show_default=False,
        ),
    ],
    yes: Annotated[
        bool, typer.Option("--yes", "-y", metavar="", help="Do not ask for confirmation.")
    ] = False,
) -> None:
    """Delete the rows a condition holds for, as ONE commit (Paimon's DELETE).

    A primary-key table gets delete records of those rows (its merge engine must remove keys
    on delete); an append table's files lose them through deletion vectors
    (deletion-vectors.enabled) or are rewritten without them. Rows where the condition is
    NULL stay. Asks for confirmation unless --yes.
    """
    st = state(ctx)
    target = st.table(table)
    condition = parse_where(where, target.arrow_schema)
    if not yes and not typer.confirm(f"Delete the rows of {table} where {where}?", err=True):
        raise CliError("delete cancelled; nothing changed")
    result = target.delete(condition)

    def human(console: Console) -> None:
        if result.snapshot_id is None:
            console.print("no row matched; nothing changed")
        else:
            console.print(
                f"deleted {result.deleted:,} row(s) of {escape(table)} in snapshot "
                f"{result.snapshot_id}"
            )

    st.out.result(
        {"table": table, "deleted": result.deleted, "snapshot_id": result.snapshot_id}, human
    )


def _cell(value: object) -> str:
    """A value as text in a rich table (null shows as ``null``)."""
    if value is None:
        return "null"
    plain = jsonable(value)
    return str(plain) if not isinstance(plain, dict | list) else str(value)


def register(app: typer.Typer) -> None:
    """Add the data commands to ``app``."""
    app.command(rich_help_panel=PANEL)(write)
    app.command(rich_help_panel=PANEL)(delete)
    app.command(rich_help_panel=PANEL)(lookup)
