"""Catalog commands: ``databases``, ``tables``, ``create``, ``alter``, ``drop-table``,
``rename-table``, ``drop-database``."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from lakeops.cli.arguments import TableArg
from lakeops.cli.commands_alter import alter
from lakeops.cli.context import state
from lakeops.cli.errors import CliError
from lakeops.cli.schema_file import load_schema_file
from lakeops.errors import DatabaseNotFoundError, TableAlreadyExistsError

__all__ = ["register"]

PANEL = "Catalog"


def databases(ctx: typer.Context) -> None:
    """List the databases of the warehouse."""
    st = state(ctx)
    names = st.catalog().list_databases()

    def human(console: Console) -> None:
        for name in names:
            console.print(name, markup=False)

    st.out.result({"warehouse": st.catalog().warehouse, "databases": names}, human)


def tables(
    ctx: typer.Context,
    database: Annotated[
        str | None,
        typer.Argument(
            metavar="DATABASE",
            help="Only this database (default: every database).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """List tables as database.table."""
    st = state(ctx)
    catalog = st.catalog()
    if database is not None:
        try:
            names = [f"{database}.{t}" for t in catalog.list_tables(database)]
        except DatabaseNotFoundError as exc:
            close = difflib.get_close_matches(database, catalog.list_databases(), n=3, cutoff=0.7)
            hint = (
                "did you mean " + " or ".join(close) + "?"
                if close
                else "list databases with 'lakeops databases'"
            )
            raise DatabaseNotFoundError(f"{exc} — {hint}") from exc
    else:
        names = [f"{db}.{t}" for db in catalog.list_databases() for t in catalog.list_tables(db)]

    def human(console: Console) -> None:
        for name in names:
            console.print(name, markup=False)

    st.out.result({"warehouse": catalog.warehouse, "tables": names}, human)


def create(
    ctx: typer.Context,
    table: TableArg,
    schema: Annotated[
        Path,
        typer.Option(
            "--schema",
            "-s",
            metavar="FILE",
            help='JSON file: {"fields": [{"name": "id", "type": "BIGINT"}, …], '
            '"primary_keys": […], "partition_keys": […], "options": {…}}.',
            show_default=False,
        ),
    ],
    if_not_exists: Annotated[
        bool,
        typer.Option("--if-not-exists", metavar="", help="Succeed if the table already exists."),
    ] = False,
) -> None:
    """Create a primary-key table from a schema file (and its database if missing).

    Field types are Paimon type strings (BIGINT, STRING, DECIMAL(10, 2), TIMESTAMP(3),
    "INT NOT NULL"…); primary-key columns become NOT NULL. Options are Paimon table options,
    e.g. {"bucket": "4", "merge-engine": "partial-update"}; every option is validated first.
    """
    st = state(ctx)
    spec = load_schema_file(schema)
    catalog = st.catalog()
    existed = catalog.table_exists(table)  # also validates the identifier
    database = table.split(".", 1)[0]
    catalog.create_database(database, ignore_if_exists=True)
    try:
        created = catalog.create_table(
            table,
            schema=spec.schema,
            primary_keys=spec.primary_keys,
            partition_keys=spec.partition_keys,
            options=spec.options,
            comment=spec.comment,
            ignore_if_exists=if_not_exists,
        )
    except TableAlreadyExistsError as exc:
        raise TableAlreadyExistsError(
            f"{exc} — pass --if-not-exists to accept an existing table, or see it with "
            f"'lakeops describe {table}'"
        ) from exc
    fields = [(f.name, f.type.to_paimon()) for f in created.schema.fields]

    def human(console: Console) -> None:
        verb = "exists" if existed else "created"
        console.print(
            f"{verb} {table}: {len(fields)} fields, primary key "
            f"({', '.join(created.schema.primary_keys)})"
            + (
                f", partitioned by ({', '.join(created.schema.partition_keys)})"
                if created.schema.partition_keys
                else ""
            ),
            markup=False,
        )

    st.out.result(
        {
            "table": table,
            "created": not existed,
            "fields": [{"name": n, "type": t} for n, t in fields],
            "primary_keys": list(created.schema.primary_keys),
            "partition_keys": list(created.schema.partition_keys),
            "options": dict(created.schema.options),
        },
        human,
    )


YesOpt = Annotated[
    bool, typer.Option("--yes", "-y", metavar="", help="Do not ask for confirmation.")
]


def drop_table(
    ctx: typer.Context,
    table: TableArg,
    if_exists: Annotated[
        bool, typer.Option("--if-exists", metavar="", help="Succeed if the table does not exist.")
    ] = False,
    yes: YesOpt = False,
) -> None:
    """Drop a table: delete its directory with every snapshot, tag, branch and data file
    (asks for confirmation unless --yes)."""
    st = state(ctx)
    catalog = st.catalog()
    exists = catalog.table_exists(table)
    question = f"Drop {table} and delete all its files?"
    if exists and not yes and not typer.confirm(question, err=True):
        raise CliError("drop-table cancelled; nothing changed")
    if not exists and not if_exists:
        st.table(table)  # the missing table's error, with the closest names
    catalog.drop_table(table, ignore_if_not_exists=if_exists)

    def human(console: Console) -> None:
        console.print(f"{'dropped' if exists else 'no table'} {table}", markup=False)

    st.out.result({"table": table, "dropped": exists}, human)


def rename_table(
    ctx: typer.Context,
    table: TableArg,
    new_name: Annotated[
        str,
        typer.Argument(
            metavar="NEW_TABLE", help="The new name, as database.table.", show_default=False
        ),
    ],
) -> None:
    """Rename a table (into another database too) by renaming its directory; refused on
    object stores, which cannot rename a directory atomically."""
    st = state(ctx)
    catalog = st.catalog()
    if not catalog.table_exists(table):
        st.table(table)  # the missing table's error, with the closest names
    database = new_name.split(".", 1)[0]
    if "." in new_name and not catalog.database_exists(database):
        raise DatabaseNotFoundError(
            f"database {database!r} does not exist; rename-table does not create databases "
            f"('lakeops databases' lists them)"
        )
    catalog.rename_table(table, new_name)

    def human(console: Console) -> None:
        console.print(f"renamed {table} to {new_name}", markup=False)

    st.out.result({"table": table, "new_table": new_name}, human)


def drop_database(
    ctx: typer.Context,
    database: Annotated[
        str, typer.Argument(metavar="DATABASE", help="The database.", show_default=False)
    ],
    cascade: Annotated[
        bool,
        typer.Option("--cascade", metavar="", help="Drop its tables too (else it must be empty)."),
    ] = False,
    if_exists: Annotated[
        bool,
        typer.Option("--if-exists", metavar="", help="Succeed if the database does not exist."),
    ] = False,
    yes: YesOpt = False,
) -> None:
    """Drop a database; one that holds tables only with --cascade, which drops them all (asks
    for confirmation unless --yes)."""
    st = state(ctx)
    catalog = st.catalog()
    exists = catalog.database_exists(database)
    tables = catalog.list_tables(database) if exists else []
    if exists and tables and cascade and not yes:
        question = f"Drop database {database} and its {len(tables)} table(s) with all their files?"
        if not typer.confirm(question, err=True):
            raise CliError("drop-database cancelled; nothing changed")
    catalog.drop_database(database, ignore_if_not_exists=if_exists, cascade=cascade)

    def human(console: Console) -> None:
        if not exists:
            console.print(f"no database {database}", markup=False)
        else:
            console.print(f"dropped database {database} ({len(tables)} table(s))", markup=False)

    st.out.result(
        {"database": database, "dropped": exists, "tables": tables if exists else []}, human
    )


def register(app: typer.Typer) -> None:
    """Add the catalog commands to ``app``."""
    app.command(rich_help_panel=PANEL)(databases)
    app.command(rich_help_panel=PANEL)(tables)
    app.command(rich_help_panel=PANEL)(create)
    app.command(rich_help_panel=PANEL)(alter)
    app.command("drop-table", rich_help_panel=PANEL)(drop_table)
    app.command("rename-table", rich_help_panel=PANEL)(rename_table)
    app.command("drop-database", rich_help_panel=PANEL)(drop_database)
