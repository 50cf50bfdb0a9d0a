"""The state one ``lakeops`` invocation shares with its command: the global options, the catalog
(opened lazily, so a bad option is reported by the command that needs it) and the output."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import typer

from lakeops import Catalog, Table
from lakeops.cli.output import Output
from lakeops.cli.parsing import parse_json_object
from lakeops.errors import TableNotFoundError

__all__ = ["CliState", "state"]


@dataclass
class CliState:
    """Global options of one invocation.

    Attributes:
        warehouse: warehouse path or URI.
        storage_options: the ``--storage-options`` JSON text (never printed).
        catalog_options: the ``--catalog-options`` JSON text (never printed).
        json_output: machine output.
        debug: re-raise errors with their traceback.
    """

    warehouse: str
    storage_options: str | None = None
    catalog_options: str | None = None
    json_output: bool = False
    debug: bool = False
    _catalog: Catalog | None = field(default=None, repr=False)

    @cached_property
    def out(self) -> Output:
        """The output of this invocation (JSON or rich)."""
        return Output(self.json_output)

    def catalog(self) -> Catalog:
        """The catalog of ``warehouse``, opened on first use."""
        if self._catalog is None:
            storage = parse_json_object(self.storage_options, "--storage-options")
            options = parse_json_object(self.catalog_options, "--catalog-options")
            self._catalog = Catalog(
                self.warehouse,
                storage_options=storage,
                options={k: str(v) for k, v in options.items()} if options else None,
            )
        return self._catalog

    def table(self, identifier: str) -> Table:
        """Open ``database.table``; a missing table's error says how to create it."""
        try:
            return self.catalog().get_table(identifier)
        except TableNotFoundError as exc:
            raise TableNotFoundError(
                f"{exc} — create it with 'lakeops create {identifier} --schema schema.json'"
            ) from exc


def state(ctx: typer.Context) -> CliState:
    """The :class:`CliState` the global callback stored on the root context."""
    obj = ctx.find_root().obj
    if not isinstance(obj, CliState):
        raise RuntimeError("lakeops CLI state missing: invoke commands through lakeops.cli.main")
    return obj
