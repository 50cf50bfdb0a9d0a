"""Skipping an append table's data files by their embedded file indexes (Paimon's
``FileIndexPredicate`` on read, where it is cheap: only indexes embedded in the manifest entry
are consulted, no extra ``.index`` file is read).

A filter that pins a column to a few values (``==`` and ``IN`` under ``and`` / ``or``:
:func:`~lakeops.read.expression.bucket_values`, integers, strings, binaries and dates only)
lets a file go when one of its indexes on that column rules out every one of them: a bloom
filter that holds none of their hashes, a bitmap (version 1 or 2) that lists none of them. A
range-bitmap index's header holds the exact min and max of its column's non-null values in the
file (integers, strings, dates, decimals): a file goes when no value within them can make the
filter true (``<``, ``<=``, ``>``, ``>=``, ``==``, ``IN`` under ``and`` / ``or``, judged by
:func:`~lakeops.read.expression.may_hold` as value statistics are). Anything
else — no index, an index of an unknown type or version, a file written with another schema,
``file-index.read.enabled`` = false — keeps the file, so the result never changes: the exact
filter is applied to the rows read anyway.
"""

from __future__ import annotations

import datetime
import decimal

import pyarrow as pa

from lakeops.errors import CorruptTableError
from lakeops.format.data_file import DataFileMeta
from lakeops.format.file_index import (
    BITMAP,
    BLOOM_FILTER,
    BloomFilter,
    bitmap_may_contain,
    fast_hash,
    read_container,
)
from lakeops.format.range_bitmap import RANGE_BITMAP, range_bitmap_bounds
from lakeops.format.schema import TableSchema
from lakeops.format.types import DataType
from lakeops.options.rows_files import FILE_INDEX_READ_ENABLED
from lakeops.read.expression import Node, Stats, bucket_values, referenced
from lakeops.read.expression import may_hold as stats_may_hold
from lakeops.read.predicate import RowFilter

__all__ = ["IndexPruner"]


class IndexPruner:
    """Decides, per data file of one table, whether its embedded indexes rule out ``row_filter``."""

    def __init__(self, schema: TableSchema, row_filter: RowFilter | None) -> None:
        self.schema_id = schema.id
        self.pins: dict[str, tuple[DataType, pa.Array]] = {}
        #: the filter, and the columns it names whose range-bitmap bounds can judge it
        self.tree: Node | None = None
        self.ranged: dict[str, DataType] = {}
        if row_filter is None or row_filter.tree is None:
            return
        if not FILE_INDEX_READ_ENABLED.get(schema.options):
            return
        names = referenced(row_filter.tree)
        self.ranged = {
            f.name: f.type for f in schema.fields if f.name in names and f.type.root in _RANGED
        }
        if self.ranged:
            self.tree = row_filter.tree
        for field in schema.fields:
            if field.type.is_nested:
                continue
            values = bucket_values(row_filter.tree, [(field.name, field.type.to_arrow())])
            if values is not None:
                self.pins[field.name] = (field.type, values[0])

    def may_hold(self, f: DataFileMeta) -> bool:
        """False only when an embedded index of ``f`` rules out every value the filter
        allows for its column."""
        if not (self.pins or self.tree is not None):
            return True
        if f.embedded_file_index is None or f.schema_id != self.schema_id:
            return True
        try:
            indexes = read_container(f.embedded_file_index, f"file index of {f.file_name}")
        except CorruptTableError:
            return True  # an index lakeops cannot read prunes nothing
        if self.tree is not None:
            bounds = {
                column: stats
                for column, dtype in self.ranged.items()
                if (stats := _range_stats(indexes.get(column, {}), dtype)) is not None
            }
            if bounds and not stats_may_hold(self.tree, bounds):
                return False
        for column, (dtype, values) in self.pins.items():
            for kind, body in indexes.get(column, {}).items():
                if body is not None and not _may_contain(kind, body, values, dtype):
                    return False
        return True


def _may_contain(kind: str, body: bytes, values: pa.Array, dtype: DataType) -> bool:
    """Whether one index body may hold any of ``values`` (True when it cannot tell)."""
    try:
        if kind == BLOOM_FILTER:
            hashes = fast_hash(values, dtype)
            return len(hashes) == 0 or bool(
                BloomFilter.from_bytes(body).might_contain(hashes).any()
            )
        if kind == BITMAP:
            found = bitmap_may_contain(body, values, dtype)
            return True if found is None else found
    except (ValueError, IndexError, pa.ArrowException):
        return True
    return True


#: the column types whose range-bitmap min and max lakeops compares with filter literals
_RANGED = frozenset({"TINYINT", "SMALLINT", "INT", "BIGINT", "CHAR", "VARCHAR", "DATE", "DECIMAL"})
_EPOCH = datetime.date(1970, 1, 1)


def _range_stats(by_type: dict[str, bytes | None], dtype: DataType) -> Stats | None:
    """The bounds of a column's values from its range-bitmap header (None: no such index, or
    one this reader cannot read). The header holds the exact min and max of the non-null
    values; nulls are unknown, so a null test decides nothing."""
    body = by_type.get(RANGE_BITMAP)
    if not body:
        return None
    found = range_bitmap_bounds(body, dtype)
    if found is None:
        return None
    distinct, low, high = found
    if distinct == 0:
        return Stats(lo=None, hi=None)  # no non-null value: only null rows, nothing known
    return Stats(lo=_value(low, dtype), hi=_value(high, dtype))


def _value(raw: bytes, dtype: DataType) -> object:
    """One serialized range-bitmap value as the Python value filters compare."""
    root = dtype.root
    if root in ("CHAR", "VARCHAR"):
        return raw[4:].decode("utf-8")
    number = int.from_bytes(raw, "big", signed=True)
    if root == "DATE":
        return _EPOCH + datetime.timedelta(days=number)
    if root == "DECIMAL":
        return decimal.Decimal(number).scaleb(-(dtype.scale or 0))
    return number
