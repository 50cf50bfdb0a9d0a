"""Which partitions a compaction touches: ``partitions=`` specs and a ``where=`` filter over the
partition columns, both given to ``Table.compact``.

``where`` is a filter in either form :meth:`Table.read <lakeops.table.base.BaseTable.read>`
takes (a ``pyarrow.compute`` Expression, or ``(column, op, value)`` tuples); it may name only
partition columns — anything else is a :class:`~lakeops.errors.ConfigurationError` raised
before anything is read or written (:func:`check_where`). It is evaluated exactly, as a row
filter, over a small Arrow table holding one row per live partition of the latest snapshot
(:func:`partition_table`: each column of its exact value, NULL for the default partition), so
a partition is selected when the filter is TRUE for its values (NULL counts as false, as for
rows). Given with ``partitions=``, a partition must satisfy both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeops.errors import ConfigurationError
from lakeops.format import binary_row
from lakeops.format.schema import TableSchema
from lakeops.format.snapshot import Snapshot
from lakeops.format.types import DataType
from lakeops.read.expression import referenced
from lakeops.read.predicate import Filter, row_filter
from lakeops.read.scan import partition_matches
from lakeops.store.context import TableContext

__all__ = ["check_where", "partition_table", "select_partitions", "where_partitions"]

#: a partition selector: does this serialized partition take part?
Selector = Callable[[bytes], bool]

#: nanoseconds per unit of a TIMESTAMP column
_UNIT_NANOS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1000, "ns": 1}


def check_where(schema: TableSchema, where: Filter | None) -> pc.Expression | None:
    """``where`` as one checked boolean expression over the partition columns (None: no
    filter). A filter that is malformed, names an unknown column or a column that is not a
    partition column is a :class:`ConfigurationError` naming the columns."""
    if where is None:
        return None
    keys = list(schema.partition_keys)
    arrow = schema.arrow_schema()
    checked = row_filter(where, arrow)  # unknown columns and bad operators are named here
    if checked is None:
        return None
    if not keys:
        raise ConfigurationError(
            f"where= selects the partitions to compact, but the table has no partition "
            f"columns (its filter {checked.expression} names row columns); compact it whole, "
            "without where="
        )
    named = referenced(checked.tree) if checked.tree is not None else None
    if named is None:  # an expression this cannot read back: probe it on the partition columns
        part_schema = pa.schema([arrow.field(k) for k in keys])
        try:
            part_schema.empty_table().filter(checked.expression)
        except (pa.ArrowException, TypeError) as exc:
            raise _not_partition(checked.expression, keys, "other columns") from exc
        return checked.expression
    outside = sorted(named - set(keys))
    if outside:
        raise _not_partition(checked.expression, keys, repr(outside))
    return checked.expression


def _not_partition(expression: Any, keys: Sequence[str], what: str) -> ConfigurationError:
    return ConfigurationError(
        f"where= selects the partitions to compact and may name only partition columns "
        f"({list(keys)}), but {expression} names {what}; nothing was compacted"
    )


def partition_table(schema: TableSchema, partitions: Sequence[bytes]) -> pa.Table:
    """One row per serialized partition of ``partitions`` (in order), with each partition
    column of its exact value (DATE, TIME and TIMESTAMP from Paimon's internal values, so no
    precision is lost), NULL for a NULL partition value."""
    types = schema.types_of(schema.partition_keys)
    rows = [binary_row.deserialize_internal(p, types) for p in partitions]
    columns = [_column([r[i] for r in rows], t) for i, t in enumerate(types)]
    return pa.table(dict(zip(schema.partition_keys, columns, strict=True)))


def _column(values: list[Any], t: DataType) -> pa.Array:
    """The Arrow column of one partition column's internal values."""
    arrow = t.to_arrow()
    if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        unit = _UNIT_NANOS[arrow.unit]
        ints = [None if v is None else (v[0] * 1_000_000 + v[1]) // unit for v in values]
        return pa.array(ints, pa.int64()).cast(arrow)
    if t.root == "DATE":
        return pa.array(values, pa.int32()).cast(arrow)
    return pa.array(values, arrow)


def where_partitions(
    ctx: TableContext, condition: pc.Expression, snapshot: Snapshot | None
) -> frozenset[bytes]:
    """The live partitions of ``snapshot`` for which ``condition`` (from :func:`check_where`)
    is TRUE, evaluated at once over :func:`partition_table` of all of them."""
    if snapshot is None:
        return frozenset()
    live = sorted({e.partition for e in ctx.store.live_entries(snapshot)})
    return frozenset(_matching(ctx.schema, live, condition))


def _matching(
    schema: TableSchema, partitions: Sequence[bytes], condition: pc.Expression
) -> Iterable[bytes]:
    if not partitions:
        return []
    table = partition_table(schema, partitions)
    position = "__lakeops_position"
    while position in table.column_names:
        position += "_"
    table = table.append_column(position, pa.array(np.arange(len(partitions), dtype=np.int64)))
    kept = table.filter(condition).column(position).to_numpy()
    return [partitions[int(i)] for i in kept]


def select_partitions(
    ctx: TableContext,
    snapshot: Snapshot | None,
    *,
    partitions: Sequence[Mapping[str, Any]] | None,
    condition: pc.Expression | None,
) -> Selector | None:
    """The partitions a compaction takes: those ``partitions`` specs match (when given) and
    ``condition`` selects among the live partitions of ``snapshot`` (when given); None when
    neither is given (every partition)."""
    specs = partition_matches(ctx.schema, partitions, ctx.options) if partitions else None
    if condition is None:
        return specs
    chosen = where_partitions(ctx, condition, snapshot)
    if specs is None:
        return chosen.__contains__
    return lambda p: p in chosen and specs(p)
