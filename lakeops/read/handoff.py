"""Hand-offs of read results to pandas, Polars and DuckDB, each behind an optional extra.

Each library is imported only when its hand-off is called; a missing one raises
:class:`~lakeops.errors.ConfigurationError` naming the extra that installs it
(``pip install 'lakeops[pandas]'``, ``[polars]``, ``[duckdb]``).

* pandas: ``pa.Table.to_pandas`` (a copy into pandas' own blocks, as every Arrow → pandas
  conversion is for strings and nullable ints).
* Polars: ``polars.from_arrow``, which takes over the Arrow buffers without copying where the
  types allow.
* DuckDB: a relation over the Arrow data, which DuckDB scans in place (no copy). Over a table
  the relation can be run any number of times; over a ``RecordBatchReader`` (``streaming``) it
  reads the batches once as a query pulls them, with the reader's bounded memory.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import pyarrow as pa

from lakeops.errors import ConfigurationError

__all__ = ["require", "to_duckdb", "to_pandas", "to_polars"]


def require(module: str, extra: str) -> ModuleType:
    """Import ``module``, or name the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ConfigurationError(
            f"{module} is not installed: install lakeops' {extra!r} extra "
            f"(pip install 'lakeops[{extra}]') to use this hand-off"
        ) from exc


def to_pandas(table: pa.Table, **options: Any) -> Any:
    """``table`` as a pandas DataFrame (``options`` go to ``pa.Table.to_pandas``)."""
    require("pandas", "pandas")
    return table.to_pandas(**options)


def to_polars(table: pa.Table) -> Any:
    """``table`` as a Polars DataFrame, sharing the Arrow buffers where the types allow."""
    polars = require("polars", "polars")
    return polars.from_arrow(table, rechunk=False)


def to_duckdb(data: pa.Table | pa.RecordBatchReader, connection: Any = None) -> Any:
    """A DuckDB relation scanning ``data`` in place, on ``connection`` (default: DuckDB's
    default connection)."""
    duckdb = require("duckdb", "duckdb")
    if connection is None:
        default = duckdb.default_connection  # a function since DuckDB 1.1, before a connection
        connection = default() if callable(default) else default
    return connection.from_arrow(data)
