"""The ``lakeops`` application: global options, command registration and error reporting.

Every failure a user can cause (a :class:`~lakeops.errors.LakeopsError`, a missing file, bad
JSON, a malformed ``k=v``) prints one line ``error: …`` on stderr and exits with code 1; with
``--debug`` the exception propagates with its traceback. Usage errors (an unknown option, a
missing argument, a value of the wrong type) are reported the same way: one line naming the
problem and the command's ``--help``, exit code 1. ``--help`` itself stays the framework's
(rich) help.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from lakeops import __version__
from lakeops.cli import (
    commands_branch,
    commands_catalog,
    commands_data,
    commands_inspect,
    commands_maintain,
    commands_meta,
    commands_read,
)
from lakeops.cli.context import CliState, warehouse_message
from lakeops.cli.errors import error_line
from lakeops.errors import BucketNotFoundError, WarehouseNotFoundError

__all__ = ["app", "main"]

DEFAULT_WAREHOUSE = "./warehouse"


# exceptions the command-line framework handles itself (exit, abort, usage errors); recent typer
# versions vendor click, older ones use click's classes, so the usage-error base is found by name
_FRAMEWORK_EXCEPTIONS: tuple[type[BaseException], ...] = (
    typer.Exit,
    typer.Abort,
    *(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"),
)
_CLICK_EXCEPTION: type[Exception] = next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"
)
_USAGE_ERROR: type[Exception] = next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError"
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


def _clean_placeholders(command: Any, ctx: Any) -> Any:
    """Drop the framework's type placeholders (``<str>``, ``<bool>``, ``<list[Path]>``) from
    ``command``'s help: an argument is shown by its metavar (``TABLE``, ``FILE``) and a flag
    takes no value; options keep their metavars (``N``, ``PATH``, ``K=V``, ``DURATION``)."""
    for param in command.get_params(ctx):
        if param.param_type_name == "argument" or getattr(param, "is_flag", False):
            # typer calls display_type_rich(ctx=ctx)
            param.display_type_rich = lambda ctx: None  # noqa: ARG005
    return command


class _ReportingGroup(TyperGroup):
    """Accepts ``--json``/``--debug`` after the command; runs the command and turns an
    exception into one ``error:`` line and exit code 1 (unless ``--debug``)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, _hoist_flags(list(args)))

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        return None if command is None else _clean_placeholders(command, ctx)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        _clean_placeholders(self, ctx)
        super().format_help(ctx, formatter)

    def invoke(self, ctx: Any) -> Any:  # ctx: the framework's click Context
        try:
            return super().invoke(ctx)
        except _FRAMEWORK_EXCEPTIONS:
            raise
        except Exception as exc:
            if ctx.params.get("debug"):
                raise
            line = error_line(exc)
            # a missing bucket's own message names the bucket and the endpoint
            missing = isinstance(exc, WarehouseNotFoundError)
            missing = missing and not isinstance(exc, BucketNotFoundError)
            if missing and isinstance(ctx.obj, CliState):
                line = warehouse_message(ctx.obj.warehouse)
            typer.echo(f"error: {line}", err=True)
            raise typer.Exit(1) from None

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Run the application; a usage error becomes one ``error:`` line and exit code 1
        (the framework would print a box and exit with 2). Running without a command still
        shows the help."""
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except _CLICK_EXCEPTION as exc:
            if not standalone_mode:
                raise
            if type(exc).__name__ == "NoArgsIsHelpError":
                typer.echo(exc.format_message(), err=True)  # type: ignore[attr-defined]
                sys.exit(0)
            typer.echo(f"error: {usage_line(exc)}", err=True)
            sys.exit(1)
        except typer.Abort:
            if not standalone_mode:
                raise
            typer.echo("error: aborted", err=True)
            sys.exit(1)
        if not standalone_mode:
            return rv
        sys.exit(rv if isinstance(rv, int) else 0)


def usage_line(exc: Any) -> str:
    """The one line for a framework error ``exc`` (a click ``ClickException``): its message,
    and for a usage error the command whose ``--help`` explains the usage."""
    text = " ".join(exc.format_message().split())
    ctx = getattr(exc, "ctx", None)
    if isinstance(exc, _USAGE_ERROR) and ctx is not None:
        text += f" (see '{ctx.command_path} --help')"
    return text


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
    # acted on by its eager callback (_version); typer passes every option by name
    version: Annotated[  # noqa: ARG001
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
commands_read.register(app)
commands_inspect.register(app)
commands_meta.register(app)
commands_branch.register(app)
commands_maintain.register(app)


def main() -> None:
    """Run the CLI (the ``lakeops`` console script calls :data:`app` directly)."""
    app()
