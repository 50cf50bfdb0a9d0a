"""Read commands: ``head`` (the first rows of a table) and ``count`` (how many rows it has).

Both read through the public scan (``table.scan(columns=…, filter=…, snapshot_id=… | tag=… |
as_of=…)``): ``--where`` is compiled by :mod:`lakeops.cli.where` into a pyarrow expression, so
it prunes partitions, buckets and files as a library read does, and ``--snapshot`` /
``--tag`` / ``--as-of`` travel in time as ``Table.read`` does. ``head`` streams batches and
stops once it has its rows; ``count`` reads one narrow column and sums the batches' lengths.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Annotated

import pyarrow as pa
import pyarrow.csv as pa_csv
import typer
from rich.console import Console
from rich.markup import escape

from lakeops import AnyTable
from lakeops.cli.arguments import TableArg
from lakeops.cli.commands_meta import rows_table
from lakeops.cli.context import state
from lakeops.cli.errors import CliError
from lakeops.cli.parsing import parse_point_in_time
from lakeops.cli.where import WhereClause, compile_where
from lakeops.errors import SnapshotNotFoundError
from lakeops.read.row_tracking import SYSTEM_FIELDS, row_tracking
from lakeops.store.time_travel import AsOf
from lakeops.table import AppendTable, Scan

__all__ = ["filter_schema", "register"]

PANEL = "Data"

#: rows a batch of ``head`` holds at least (and at most the library's default)
_MIN_BATCH_ROWS = 1024
_MAX_BATCH_ROWS = 131_072

WhereOpt = Annotated[
    str | None,
    typer.Option(
        "--where",
        metavar="EXPR",
        help="Only rows where EXPR holds: col = 5, col != 'x', <, <=, >, >=, col IN (1, 2), "
        "col IS [NOT] NULL, joined by AND, OR, NOT and parentheses; strings in single quotes "
        "('it''s'), dates and timestamps as quoted ISO text.",
        show_default=False,
    ),
]
SnapshotOpt = Annotated[
    int | None,
    typer.Option(
        "--snapshot",
        metavar="ID",
        help="Read this snapshot (default: the latest).",
        show_default=False,
    ),
]
TagOpt = Annotated[
    str | None,
    typer.Option(
        "--tag", metavar="NAME", help="Read the snapshot of this tag.", show_default=False
    ),
]
AsOfOpt = Annotated[
    str | None,
    typer.Option(
        "--as-of",
        metavar="TIME",
        help="Read the newest snapshot committed at or before TIME: ISO 8601 "
        "(2024-01-01T12:00:00+00:00; without an offset: local time) or epoch milliseconds.",
        show_default=False,
    ),
]


def filter_schema(table: AnyTable) -> pa.Schema:
    """The columns reads of ``table`` may select and filter on: its Arrow schema, then a
    row-tracking append table's system columns (``_ROW_ID``, ``_SEQUENCE_NUMBER``)."""
    schema = table.arrow_schema
    if isinstance(table, AppendTable) and row_tracking(table.schema):
        for system in SYSTEM_FIELDS:
            schema = schema.append(system)
    return schema


@dataclass(frozen=True)
class _Travel:
    """The snapshot chosen by ``--snapshot`` / ``--tag`` / ``--as-of`` (at most one)."""

    snapshot_id: int | None
    tag: str | None
    as_of: AsOf | None

    @staticmethod
    def of(snapshot: int | None, tag: str | None, as_of: str | None) -> _Travel:
        given = [
            name
            for name, value in (("--snapshot", snapshot), ("--tag", tag), ("--as-of", as_of))
            if value is not None
        ]
        if len(given) > 1:
            raise CliError(
                f"{' and '.join(given)} each choose the snapshot to read: give at most one"
            )
        when = None if as_of is None else parse_point_in_time("--as-of", as_of)
        return _Travel(snapshot, tag, when)


def _where(text: str | None, schema: pa.Schema) -> WhereClause | None:
    return None if text is None else compile_where(text, schema)


def _columns(text: str | None, schema: pa.Schema) -> list[str] | None:
    """``--columns a,b`` as a list of names of ``schema`` (None: every column)."""
    if text is None:
        return None
    wanted = [c.strip() for c in text.split(",")]
    if not all(wanted):
        raise CliError(f"--columns {text!r} has an empty column name")
    twice = sorted({c for c in wanted if wanted.count(c) > 1})
    if twice:
        raise CliError(f"--columns {text!r} names {', '.join(twice)} more than once")
    unknown = [c for c in wanted if c not in schema.names]
    if unknown:
        raise CliError(
            f"--columns names unknown column(s) {', '.join(unknown)}; the table has "
            f"{', '.join(schema.names)}"
        )
    return wanted


def _scan(
    target: AnyTable, columns: Sequence[str] | None, where: WhereClause | None, travel: _Travel
) -> Scan:
    """The checked scan; a ``--snapshot`` that does not exist names the snapshots kept."""
    try:
        return target.scan(
            columns=columns,
            filter=None if where is None else where.expression,
            snapshot_id=travel.snapshot_id,
            tag=travel.tag,
            as_of=travel.as_of,
        )
    except SnapshotNotFoundError as exc:
        if travel.snapshot_id is None or type(exc) is not SnapshotNotFoundError:
            raise
        lo, hi = target.store.earliest_snapshot_id(), target.store.latest_snapshot_id()
        if lo is None or hi is None:
            kept = "the table has no snapshot yet"
        else:
            span = str(lo) if lo == hi else f"{lo} to {hi}"
            kept = f"snapshots kept: {span} (and tagged ones: 'lakeops tag list')"
        raise SnapshotNotFoundError(f"{exc} — {kept}", snapshot_id=exc.snapshot_id) from exc


def _first_rows(scan: Scan, limit: int, schema: pa.Schema) -> pa.Table:
    """The first ``limit`` rows of ``scan``, in its order; stops reading once it has them."""
    empty = pa.schema([schema.field(c) for c in scan.columns]).empty_table()
    if limit == 0:
        return empty
    batch_rows = min(max(limit, _MIN_BATCH_ROWS), _MAX_BATCH_ROWS)
    batches = scan.to_batches(batch_rows=batch_rows)
    kept: list[pa.RecordBatch] = []
    rows = 0
    try:
        for batch in batches:
            kept.append(batch.slice(0, limit - rows))
            rows += kept[-1].num_rows
            if rows >= limit:
                break
    finally:
        _close(batches)  # stops the read-ahead of the sections not needed
    return pa.Table.from_batches(kept) if kept else empty


def _close(batches: Iterator[pa.RecordBatch]) -> None:
    close = getattr(batches, "close", None)
    if close is not None:
        close()


def _write_csv(data: pa.Table) -> None:
    """``data`` as CSV (a header line, then the rows; null as an empty field) on stdout."""
    nested = [f"{f.name} ({f.type})" for f in data.schema if pa.types.is_nested(f.type)]
    if nested:
        raise CliError(
            f"--csv cannot write nested column(s) {', '.join(nested)}: use --json, or leave "
            "them out with --columns"
        )
    sink = pa.BufferOutputStream()
    try:
        pa_csv.write_csv(data, sink)
    except pa.ArrowInvalid as exc:
        binary = [f.name for f in data.schema if pa.types.is_binary(f.type)]
        if not binary:
            raise
        raise CliError(
            f"--csv cannot write binary column(s) {', '.join(binary)} ({exc}): use --json "
            "(base64), or leave them out with --columns"
        ) from exc
    typer.echo(sink.getvalue().to_pybytes(), nl=False)


def _snapshot_label(scan: Scan) -> str:
    return "no snapshot yet" if scan.snapshot is None else f"snapshot {scan.snapshot.id}"


def head(
    ctx: typer.Context,
    table: TableArg,
    limit: Annotated[
        int,
        typer.Option("--limit", "-n", min=0, metavar="N", help="How many rows to show."),
    ] = 10,
    where: WhereOpt = None,
    columns: Annotated[
        str | None,
        typer.Option(
            metavar="COL[,COL]",
            help="Columns to show, comma-separated (default: all; a row-tracking append "
            "table's _ROW_ID and _SEQUENCE_NUMBER may be named).",
            show_default=False,
        ),
    ] = None,
    snapshot: SnapshotOpt = None,
    tag: TagOpt = None,
    as_of: AsOfOpt = None,
    csv: Annotated[
        bool,
        typer.Option(
            "--csv", metavar="", help="CSV on stdout: a header line, then the rows (null: empty)."
        ),
    ] = False,
) -> None:
    """Show the first N rows of a table (its merged rows: what a read returns), in read order:
    by partition and bucket, a primary-key table's rows by key. Stops reading once it has them.

    Example: lakeops head db.orders -n 5 --where "dt = '2024-01-01' AND v > 10" --columns id,v
    """
    st = state(ctx)
    if csv and st.json_output:
        raise CliError("--csv and --json are two output formats: choose one")
    travel = _Travel.of(snapshot, tag, as_of)
    target = st.table(table)
    schema = filter_schema(target)
    scan = _scan(target, _columns(columns, schema), _where(where, schema), travel)
    data = _first_rows(scan, limit + 1, schema)  # one more: are there more rows?
    more = data.num_rows > limit
    data = data.slice(0, limit)
    if csv:
        _write_csv(data)
        return

    def human(console: Console) -> None:
        label = _snapshot_label(scan)
        if data.num_rows == 0:
            matching = " matching --where" if where is not None else ""
            console.print(f"no rows{matching} in {escape(table)} ({label})")
            return
        shown = f"first {data.num_rows}" if more else f"all {data.num_rows}"
        rows_table(console, data, f"{table} ({label}): {shown} row(s)")

    st.out.result(
        {
            "table": table,
            "snapshot": None if scan.snapshot is None else scan.snapshot.id,
            "columns": [{"name": f.name, "type": str(f.type)} for f in data.schema],
            "rows": data.to_pylist(),
            "more": more,
        },
        human,
    )


def _width(field: pa.Field) -> int:
    """Bits a value of ``field`` takes, variable-width types last."""
    try:
        return int(field.type.bit_width)
    except ValueError:
        return 1 << 20


def count_column(target: AnyTable, where: WhereClause | None) -> str:
    """The one column ``count`` reads: the narrowest of the columns read anyway (those of the
    filter, a primary-key table's keys), else the narrowest of the table's columns."""
    schema = filter_schema(target)
    read_anyway = [*(where.columns if where else ()), *target.schema.primary_keys]
    names = read_anyway or target.arrow_schema.names
    return min(names, key=lambda name: _width(schema.field(name)))


def count(
    ctx: typer.Context,
    table: TableArg,
    where: WhereOpt = None,
    snapshot: SnapshotOpt = None,
    tag: TagOpt = None,
    as_of: AsOfOpt = None,
) -> None:
    """Count the rows of a table (its merged rows: what a read returns), optionally only
    those --where keeps, at any snapshot. Reads one narrow column.

    Example: lakeops count db.orders --where "dt >= '2024-01-01'" --tag eod
    """
    st = state(ctx)
    travel = _Travel.of(snapshot, tag, as_of)
    target = st.table(table)
    clause = _where(where, filter_schema(target))
    scan = _scan(target, [count_column(target, clause)], clause, travel)
    with st.out.spinner(f"counting the rows of {table}"):
        rows = sum(batch.num_rows for batch in scan.to_batches())

    def human(console: Console) -> None:
        matching = " matching --where" if where is not None else ""
        console.print(f"{rows:,} row(s){matching} in {escape(table)} ({_snapshot_label(scan)})")

    snapshot_id = None if scan.snapshot is None else scan.snapshot.id
    st.out.result({"table": table, "rows": rows, "snapshot": snapshot_id}, human)


def register(app: typer.Typer) -> None:
    """Add the read commands to ``app``."""
    app.command(rich_help_panel=PANEL)(head)
    app.command(rich_help_panel=PANEL)(count)
