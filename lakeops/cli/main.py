"""The ``lakeops`` application: global options, command registration and error reporting.

Every failure a user can cause (a :class:`~lakeops.errors.LakeopsError`, a missing file, bad
JSON, a malformed ``k=v``) prints one line ``error: …`` on stderr and exits with code 1; with
``--debug`` the exception propagates with its traceback. Usage errors (unknown option, missing
argument) are the framework's: a usage message and exit code 2.
"""

from __future__ import annotations

import os
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from lakeops import __version__
from lakeops.cli import commands_catalog, commands_data, commands_inspect, commands_maintain
from lakeops.cli.context import CliState
from lakeops.cli.errors import error_line

__all__ = ["app", "main"]

DEFAULT_WAREHOUSE = "./warehouse"


# exceptions the command-line framework handles itself (exit, abort, usage errors); recent typer
# versions vendor click, older ones use click's classes, so the usage-error base is found by name
_FRAMEWORK_EXCEPTIONS: tuple[type[BaseException], ...] = (
    typer.Exit,
    typer.Abort,
    *(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"),
)


#: global flags also accepted after the command name (``lakeops describe db.t --json``)
_MOVABLE_FLAGS = ("--json", "--debug")


def _hoist_flags(args: list[str]) -> list[str]:
    """Move :data:`_MOVABLE_FLAGS` to the front, so they apply wherever they were typed
    (arguments after a ``--`` separator are left alone)."""
    end = args.index("--") if "--" in args else len(args)
    head = args[:end]
    flags = [a for a in head if a in _MOVABLE_FLAGS]
    return flags + [a for a in head if a not in _MOVABLE_FLAGS] + args[end:]


class _ReportingGroup(TyperGroup):
    """Accepts ``--json``/``--debug`` after the command; runs the command and turns an
    exception into one ``error:`` line and exit code 1 (unless ``--debug``)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, _hoist_flags(list(args)))

    def invoke(self, ctx: Any) -> Any:  # ctx: the framework's click Context
        try:
            return super().invoke(ctx)
        except _FRAMEWORK_EXCEPTIONS:
            raise
        except Exception as exc:
            if ctx.params.get("debug"):
                raise
            typer.echo(f"error: {error_line(exc)}", err=True)
            raise typer.Exit(1) from None


app = typer.Typer(
    name="lakeops",
    cls=_ReportingGroup,
    help="Apache Paimon primary-key tables from the command line.\n\n"
    "Tables are named database.table. --json gives machine output (exactly one JSON document "
    "on stdout); --json and --debug may also follow the command. Errors print one line on "
    "stderr and exit with code 1.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"lakeops {__version__}")
        raise typer.Exit()


@app.callback()
def _global_options(
    ctx: typer.Context,
    warehouse: Annotated[
        str,
        typer.Option(
            "--warehouse",
            "-w",
            envvar="LAKEOPS_WAREHOUSE",
            metavar="PATH",
            help="Warehouse path or URI (s3://bucket/wh, hdfs://…).",
            show_default=True,
        ),
    ] = DEFAULT_WAREHOUSE,
    storage_options: Annotated[
        str | None,
        typer.Option(
            envvar="LAKEOPS_STORAGE_OPTIONS",
            metavar="JSON",
            help="Storage client options as a JSON object (endpoint, credentials). Never printed.",
            show_default=False,
        ),
    ] = None,
    catalog_options: Annotated[
        str | None,
        typer.Option(
            envvar="LAKEOPS_CATALOG_OPTIONS",
            metavar="JSON",
            help='Catalog options as a JSON object, e.g. the commit lock {"lock.enabled": "true"}.',
            show_default=False,
        ),
    ] = None,
    json_output: Annotated[
        bool,
        typer.Option("--json", metavar="", help="Machine output: one JSON document on stdout."),
    ] = False,
    debug: Annotated[
        bool,
        typer.Option("--debug", metavar="", help="Show the full traceback when a command fails."),
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            metavar="",
            callback=_version,
            is_eager=True,
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    """Apache Paimon primary-key tables from the command line."""
    ctx.obj = CliState(
        warehouse=os.path.expanduser(warehouse),
        storage_options=storage_options,
        catalog_options=catalog_options,
        json_output=json_output,
        debug=debug,
    )


commands_catalog.register(app)
commands_data.register(app)
commands_inspect.register(app)
commands_maintain.register(app)


def main() -> None:
    """Run the CLI (the ``lakeops`` console script calls :data:`app` directly)."""
    app()
