"""Branch commands: ``branch create|delete|list|fast-forward`` (Paimon's branch procedures)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from lakeops.cli.arguments import TableArg
from lakeops.cli.context import state
from lakeops.cli.errors import CliError
from lakeops.cli.grids import grid, print_grid

__all__ = ["register"]

PANEL = "Inspect"

branch_app = typer.Typer(
    help="Create, delete, list and fast-forward the branches of a table (Paimon's "
    "branch/branch-<name> directories; read or write one as 'db.table$branch_<name>').",
    no_args_is_help=True,
)

NameArg = Annotated[
    str, typer.Argument(metavar="NAME", help="The branch's name.", show_default=False)
]


@branch_app.command("create")
def branch_create(
    ctx: typer.Context,
    table: TableArg,
    name: NameArg,
    tag: Annotated[
        str | None,
        typer.Option("--tag", metavar="TAG", help="Start from this tag.", show_default=False),
    ] = None,
    snapshot: Annotated[
        int | None,
        typer.Option(
            "--snapshot", metavar="ID", help="Start from this snapshot.", show_default=False
        ),
    ] = None,
) -> None:
    """Create a branch from a tag, a snapshot, or empty (the latest schema only)."""
    st = state(ctx)
    branch = st.table(table).create_branch(name, from_tag=tag, from_snapshot=snapshot)
    source = f"tag {tag}" if tag else f"snapshot {snapshot}" if snapshot else "nothing (empty)"

    def human(console: Console) -> None:
        console.print(f"created branch {escape(branch.name)} of {escape(table)} from {source}")

    st.out.result({"table": table, "branch": branch.name, "tag": tag, "snapshot": snapshot}, human)


@branch_app.command("delete")
def branch_delete(ctx: typer.Context, table: TableArg, name: NameArg) -> None:
    """Delete a branch (files only it referenced are left for 'lakeops orphans')."""
    st = state(ctx)
    st.table(table).delete_branch(name)

    def human(console: Console) -> None:
        console.print(f"deleted branch {escape(name)} of {escape(table)}")

    st.out.result({"table": table, "branch": name}, human)


@branch_app.command("list")
def branch_list(ctx: typer.Context, table: TableArg) -> None:
    """List the branches of a table."""
    st = state(ctx)
    branches = st.table(table).branches()

    def human(console: Console) -> None:
        if not branches:
            console.print(f"{escape(table)} has no branches")
            return
        out = grid("branch", "created")
        for b in branches:
            out.add_row(escape(b.name), b.create_time.isoformat(sep=" ", timespec="seconds"))
        print_grid(console, f"branches of {table}", out)

    st.out.result(
        {
            "table": table,
            "branches": [{"name": b.name, "create_time": b.create_time} for b in branches],
        },
        human,
    )


@branch_app.command("fast-forward")
def branch_fast_forward(
    ctx: typer.Context,
    table: TableArg,
    name: NameArg,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", metavar="", help="Do not ask for confirmation.")
    ] = False,
) -> None:
    """Make the main branch what the branch is (Paimon's fast_forward): its snapshots, schemas
    and tags replace the main branch's from its first snapshot on. No writer may commit to
    the main branch meanwhile; no data file is deleted. Asks for confirmation unless --yes."""
    st = state(ctx)
    target = st.table(table)
    if not yes and not typer.confirm(
        f"Replace the main branch of {table} with branch {name}?", err=True
    ):
        raise CliError("fast-forward cancelled; nothing changed")
    snapshot = target.fast_forward(name)

    def human(console: Console) -> None:
        console.print(
            f"{escape(table)} is now branch {escape(name)} (latest snapshot {snapshot.id})"
        )

    st.out.result({"table": table, "branch": name, "snapshot_id": snapshot.id}, human)


def register(app: typer.Typer) -> None:
    """Add the branch commands to ``app``."""
    app.add_typer(branch_app, name="branch", rich_help_panel=PANEL)
