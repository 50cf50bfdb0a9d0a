"""The state one ``lakeops`` invocation shares with its command: the global options, the catalog
(opened lazily, so a bad option is reported by the command that needs it) and the output."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import pyarrow as pa
import typer

from lakeops import AnyTable, Catalog
from lakeops.cli.output import Output
from lakeops.cli.parsing import parse_json_object
from lakeops.errors import BucketNotFoundError, TableNotFoundError, WarehouseNotFoundError
from lakeops.format.identifiers import closest_identifiers

__all__ = ["CliState", "state", "table_hint", "warehouse_message"]


def table_hint(identifier: str, existing: list[str]) -> str:
    """The way out for a missing ``identifier``, given the ``existing`` tables (as
    ``database.table``): the closest names (:func:`~lakeops.format.identifiers.closest_identifiers`)
    when some are close, else how to list or create tables."""
    close = closest_identifiers(identifier, existing)
    if close:
        return "did you mean " + " or ".join(close) + "?"
    create = f"create it with 'lakeops create {identifier} --schema schema.json'"
    if existing:
        return f"list the tables with 'lakeops tables', or {create}"
    return create


def warehouse_message(warehouse: str) -> str:
    """The one line for a warehouse that does not exist, in the CLI's terms."""
    return (
        f"warehouse {warehouse} does not exist: check --warehouse/-w (or LAKEOPS_WAREHOUSE); "
        "'lakeops create DB.TABLE --schema FILE' creates a new warehouse"
    )


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

    def table(self, identifier: str) -> AnyTable:
        """Open ``database.table``. A missing table's error names the closest existing
        tables ("did you mean db.orders?") or says how to create it; a missing warehouse's
        names ``--warehouse``."""
        catalog = self.catalog()
        try:
            table = catalog.get_table(identifier)
            return table
        except BucketNotFoundError:
            raise  # its message names the bucket and the endpoint
        except WarehouseNotFoundError as exc:
            raise WarehouseNotFoundError(warehouse_message(self.warehouse)) from exc
        except TableNotFoundError as exc:
            raise self._missing(identifier, exc) from exc

    def metadata_table(self, identifier: str, name: str, snapshot_id: int | None) -> pa.Table:
        """Metadata table ``name`` of ``database.table`` (any table: only its metadata is
        read), a missing table's error as :meth:`table`'s."""
        catalog = self.catalog()
        try:
            return catalog.metadata_table(f"{identifier}${name}", snapshot_id=snapshot_id)
        except BucketNotFoundError:
            raise  # its message names the bucket and the endpoint
        except WarehouseNotFoundError as exc:
            raise WarehouseNotFoundError(warehouse_message(self.warehouse)) from exc
        except TableNotFoundError as exc:
            raise self._missing(identifier, exc) from exc

    def _missing(self, identifier: str, exc: TableNotFoundError) -> TableNotFoundError:
        catalog = self.catalog()
        existing = [
            f"{db}.{name}" for db in catalog.list_databases() for name in catalog.list_tables(db)
        ]
        return TableNotFoundError(f"{exc} — {table_hint(identifier, existing)}")


def state(ctx: typer.Context) -> CliState:
    """The :class:`CliState` the global callback stored on the root context."""
    obj = ctx.find_root().obj
    if not isinstance(obj, CliState):
        raise RuntimeError("lakeops CLI state missing: invoke commands through lakeops.cli.main")
    return obj
