"""The keys of ``lakeops lookup``: ``KEY=VALUE[,KEY=VALUE]`` arguments → a typed Arrow table.

Each argument is one key and must name every primary-key and partition column, nothing else.
Values are cast from their text to the column's Arrow type with ``pyarrow.compute.cast``
(``2024-01-01`` for DATE, ``2024-01-01 12:00:00`` for TIMESTAMP, ``true``/``false``, decimals
as written).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from lakeops import AnyTable
from lakeops.cli.errors import CliError
from lakeops.cli.parsing import parse_assignments

__all__ = ["key_columns", "parse_lookup_keys"]


def key_columns(table: AnyTable) -> list[str]:
    """The columns a lookup key names: the primary key, then partition columns not in it."""
    return list(dict.fromkeys([*table.schema.primary_keys, *table.schema.partition_keys]))


def _cast(name: str, texts: list[str], target: pa.DataType) -> pa.Array:
    try:
        return pc.cast(pa.array(texts, pa.string()), target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise CliError(
            f"cannot read lookup key column {name!r} as {target}: {' '.join(str(exc).split())}"
        ) from exc


def parse_lookup_keys(arguments: Sequence[str], table: AnyTable) -> pa.Table:
    """One row per argument, one column per key column, typed like the table."""
    names = key_columns(table)
    rows = []
    for argument in arguments:
        row = parse_assignments(argument, "lookup key")
        unknown = [k for k in row if k not in names]
        missing = [k for k in names if k not in row]
        if unknown or missing:
            raise CliError(
                f"lookup key {argument!r} must name exactly the key columns {names}"
                + (f"; unknown {unknown}" if unknown else "")
                + (f"; missing {missing}" if missing else "")
            )
        rows.append(row)
    schema = table.arrow_schema
    columns = [_cast(n, [r[n] for r in rows], schema.field(n).type) for n in names]
    return pa.table(columns, names=names)
