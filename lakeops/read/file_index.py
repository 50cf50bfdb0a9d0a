"""Skipping an append table's data files by their embedded file indexes (Paimon's
``FileIndexPredicate`` on read, where it is cheap: only indexes embedded in the manifest entry
are consulted, no extra ``.index`` file is read).

A filter that pins a column to a few values (``==`` and ``IN`` under ``and`` / ``or``:
:func:`~lakeops.read.expression.bucket_values`, integers, strings, binaries and dates only)
lets a file go when one of its indexes on that column rules out every one of them: a bloom
filter that holds none of their hashes, a bitmap (version 1 or 2) that lists none of them. Anything
else — no index, an index of an unknown type or version, a file written with another schema,
``file-index.read.enabled`` = false — keeps the file, so the result never changes: the exact
filter is applied to the rows read anyway.
"""

from __future__ import annotations

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
from lakeops.format.schema import TableSchema
from lakeops.format.types import DataType
from lakeops.options.rows_files import FILE_INDEX_READ_ENABLED
from lakeops.read.expression import bucket_values
from lakeops.read.predicate import RowFilter

__all__ = ["IndexPruner"]


class IndexPruner:
    """Decides, per data file of one table, whether its embedded indexes rule out ``row_filter``."""

    def __init__(self, schema: TableSchema, row_filter: RowFilter | None) -> None:
        self.schema_id = schema.id
        self.pins: dict[str, tuple[DataType, pa.Array]] = {}
        if row_filter is None or row_filter.tree is None:
            return
        if not FILE_INDEX_READ_ENABLED.get(schema.options):
            return
        for field in schema.fields:
            if field.type.is_nested:
                continue
            values = bucket_values(row_filter.tree, [(field.name, field.type.to_arrow())])
            if values is not None:
                self.pins[field.name] = (field.type, values[0])

    def may_hold(self, f: DataFileMeta) -> bool:
        """False only when an embedded index of ``f`` rules out every value the filter
        allows for its column."""
        if not self.pins or f.embedded_file_index is None or f.schema_id != self.schema_id:
            return True
        try:
            indexes = read_container(f.embedded_file_index, f"file index of {f.file_name}")
        except CorruptTableError:
            return True  # an index lakeops cannot read prunes nothing
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
