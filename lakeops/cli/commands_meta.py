"""Metadata commands: ``meta`` (any of Paimon's system tables of a table), ``tag``
(``create``, ``delete``, ``list``, ``rename``, ``replace``, ``expire``), ``consumers``
(``list``, the default, and ``clear``) and ``consumer reset``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import pyarrow as pa
import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

from lakeops.cli.arguments import TableArg
from lakeops.cli.context import state
from lakeops.cli.errors import CliError
from lakeops.cli.grids import grid, print_grid
from lakeops.cli.output import jsonable
from lakeops.cli.parsing import parse_point_in_time
from lakeops.table.system_tables import SYSTEM_TABLES, split_system_table

if TYPE_CHECKING:  # Typer's own click (what its groups are typed with)
    from typer._click.core import Context as ClickContext

__all__ = ["register", "rows_table"]

PANEL = "Inspect"

tag_app = typer.Typer(
    help="Create, delete, list, rename, replace and expire the tags of a table (Paimon's "
    "tag/tag-<name> files).",
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
TimeRetainedOption = Annotated[
    str | None,
    typer.Option(
        "--time-retained",
        metavar="DURATION",
        help="How long the tag is kept, e.g. '7 d' (default: tag.default-time-retained).",
        show_default=False,
    ),
]


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
    as_of: Annotated[
        str | None,
        typer.Option(
            "--as-of",
            metavar="TIME",
            help="Tag the earliest snapshot committed at or after TIME (epoch milliseconds or "
            "an ISO date-time, local unless it has an offset), as Paimon's "
            "create_tag_from_timestamp.",
            show_default=False,
        ),
    ] = None,
    time_retained: TimeRetainedOption = None,
) -> None:
    """Tag a snapshot: expiry and orphan cleanup then keep every file it references, and
    Paimon, pypaimon and lakeops read it by name."""
    st = state(ctx)
    when = None if as_of is None else parse_point_in_time("--as-of", as_of)
    tag = st.table(table).create_tag(name, snapshot, as_of=when, time_retained=time_retained)

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


@tag_app.command("rename")
def tag_rename(
    ctx: typer.Context,
    table: TableArg,
    name: NameArg,
    new_name: Annotated[
        str, typer.Argument(metavar="NEW_NAME", help="The tag's new name.", show_default=False)
    ],
) -> None:
    """Rename a tag (refused if NEW_NAME exists); it keeps its snapshot and retention."""
    st = state(ctx)
    tag = st.table(table).rename_tag(name, new_name)

    def human(console: Console) -> None:
        console.print(
            f"renamed tag {escape(name)} of {escape(table)} to {escape(new_name)} "
            f"(snapshot {tag.snapshot.id})"
        )

    st.out.result(
        {"table": table, "tag": tag.name, "old_name": name, "snapshot_id": tag.snapshot.id},
        human,
    )


@tag_app.command("replace")
def tag_replace(
    ctx: typer.Context,
    table: TableArg,
    name: NameArg,
    snapshot: Annotated[
        int | None,
        typer.Option(
            "--snapshot",
            metavar="ID",
            help="The snapshot the tag is to name (default: the latest).",
            show_default=False,
        ),
    ] = None,
    time_retained: TimeRetainedOption = None,
) -> None:
    """Point an existing tag at another snapshot (files only the old one kept are left for
    'lakeops orphans')."""
    st = state(ctx)
    tag = st.table(table).replace_tag(name, snapshot, time_retained=time_retained)

    def human(console: Console) -> None:
        console.print(f"tag {escape(name)} of {escape(table)} now names snapshot {tag.snapshot.id}")

    st.out.result({"table": table, "tag": tag.name, "snapshot_id": tag.snapshot.id}, human)


@tag_app.command("expire")
def tag_expire(
    ctx: typer.Context,
    table: TableArg,
    older_than: Annotated[
        str | None,
        typer.Option(
            "--older-than",
            metavar="TIME",
            help="Also expire every tag created before TIME (epoch milliseconds or an ISO "
            "date-time, local unless it has an offset); a tag without a retention counts as "
            "created when its file was written.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Delete the tags whose retention (create time + time retained) is past, as Paimon's
    expire_tags (files only they kept are left for 'lakeops orphans')."""
    st = state(ctx)
    cutoff = None if older_than is None else parse_point_in_time("--older-than", older_than)
    expired = st.table(table).expire_tags(older_than=cutoff)

    def human(console: Console) -> None:
        if expired:
            console.print(f"expired tags of {escape(table)}: {escape(', '.join(expired))}")
        else:
            console.print(f"no tag of {escape(table)} expired")

    st.out.result({"table": table, "expired_tags": expired}, human)


def _list_metadata(ctx: typer.Context, table: str, name: str) -> None:
    """Print metadata table ``name`` of ``table`` (``tags``, ``consumers``), or that it has
    none; as JSON ``{"table": …, name: [rows]}``."""
    st = state(ctx)
    data = st.metadata_table(table, name, None)

    def human(console: Console) -> None:
        if data.num_rows == 0:
            console.print(f"{escape(table)} has no {name}")
        else:
            rows_table(console, data, f"{name} of {table}")

    st.out.result({"table": table, name: data.to_pylist()}, human)


@tag_app.command("list")
def tag_list(ctx: typer.Context, table: TableArg) -> None:
    """List the tags of a table (the metadata table tags)."""
    _list_metadata(ctx, table, "tags")


# ---------------------------------------------------------------------------------- consumers
class _ListByDefault(TyperGroup):
    """A command group whose first argument, when it names none of its commands, is the TABLE
    of its ``list`` command (``lakeops consumers db.t`` = ``lakeops consumers list db.t``)."""

    def parse_args(self, ctx: ClickContext, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["list", *args]
        return super().parse_args(ctx, args)


consumers_app = typer.Typer(
    cls=_ListByDefault,
    help="List (the default: 'lakeops consumers TABLE') and clear the Paimon consumers of a "
    "table (consumer/consumer-<id>: the snapshot each streaming reader reads next).",
    no_args_is_help=True,
)
consumer_app = typer.Typer(
    help="Reset or delete one Paimon consumer of a table.", no_args_is_help=True
)


@consumers_app.command("list")
def consumers_list(ctx: typer.Context, table: TableArg) -> None:
    """List the consumers of a table (the metadata table consumers): each id and the
    snapshot it reads next."""
    _list_metadata(ctx, table, "consumers")


@consumers_app.command("clear")
def consumers_clear(
    ctx: typer.Context,
    table: TableArg,
    including: Annotated[
        str | None,
        typer.Option(
            "--including",
            metavar="REGEX",
            help="Clear the consumers whose whole id matches REGEX (default: every consumer).",
            show_default=False,
        ),
    ] = None,
    excluding: Annotated[
        str | None,
        typer.Option(
            "--excluding",
            metavar="REGEX",
            help="Keep the consumers whose whole id matches REGEX.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Delete consumers, as Paimon's clear_consumers: every one matching --including (default
    all) and not --excluding; expiry then no longer keeps snapshots for them."""
    st = state(ctx)
    cleared = st.table(table).clear_consumers(including=including, excluding=excluding)

    def human(console: Console) -> None:
        if cleared:
            console.print(f"cleared consumers of {escape(table)}: {escape(', '.join(cleared))}")
        else:
            console.print(f"no consumer of {escape(table)} matched")

    st.out.result({"table": table, "cleared_consumers": cleared}, human)


@consumer_app.command("reset")
def consumer_reset(
    ctx: typer.Context,
    table: TableArg,
    consumer_id: Annotated[
        str, typer.Argument(metavar="ID", help="The consumer's id.", show_default=False)
    ],
    next_snapshot: Annotated[
        int | None,
        typer.Option(
            "--next-snapshot",
            metavar="N",
            help="The snapshot the consumer reads next (a snapshot on storage, or the latest + "
            "1); without it the consumer is deleted.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Set the snapshot a consumer reads next, or delete the consumer (no --next-snapshot), as
    Paimon's reset_consumer."""
    st = state(ctx)
    st.table(table).reset_consumer(consumer_id, next_snapshot=next_snapshot)

    def human(console: Console) -> None:
        if next_snapshot is None:
            console.print(f"deleted consumer {escape(consumer_id)} of {escape(table)}")
        else:
            console.print(
                f"consumer {escape(consumer_id)} of {escape(table)} reads snapshot "
                f"{next_snapshot} next"
            )

    st.out.result(
        {"table": table, "consumer_id": consumer_id, "next_snapshot": next_snapshot}, human
    )


def register(app: typer.Typer) -> None:
    """Add the metadata commands to ``app``."""
    app.command(rich_help_panel=PANEL)(meta)
    app.add_typer(tag_app, name="tag", rich_help_panel=PANEL)
    app.add_typer(consumers_app, name="consumers", rich_help_panel=PANEL)
    app.add_typer(consumer_app, name="consumer", rich_help_panel=PANEL)
