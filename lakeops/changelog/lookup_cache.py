"""Looking up keys' previous records in a bucket's higher levels, with a bounded cache.

The lookup changelog producer needs, for every key a compaction of level-0 data touches, the
key's records in the levels the compaction does not rewrite. Files are pruned by their key range
and row groups by their first-key statistics; decoded row groups are kept in an LRU cache bounded
by ``lookup.cache-max-memory-size``, so repeated compactions (every commit, in radical mode) read
each row group once while memory stays bounded. Whole levels are never read per key: each chunk
of keys reads only the row groups overlapping its key range, once.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from lakeops.format.data_file import DataFileMeta
from lakeops.kv.reader import KeyValueReader
from lakeops.merge.lookup_view import LEVEL

__all__ = ["LEVEL", "LevelLookup", "RowGroupCache"]


class RowGroupCache:
    """Decoded row groups, least recently used evicted beyond ``budget_bytes``.

    Thread-safe: compactions of different buckets running on a pool share one cache (one
    budget). Loading runs outside the lock, so two workers missing the same row group at once
    may both decode it; the cache keeps one copy."""

    def __init__(self, budget_bytes: int) -> None:
        self.budget = budget_bytes
        self.size = 0
        self._tables: OrderedDict[tuple[Any, ...], pa.Table] = OrderedDict()
        self._ranges: dict[str, list[tuple[Any, Any] | None]] = {}
        self.hits = self.misses = 0
        self._lock = threading.Lock()

    def ranges(self, key: str, load: Any) -> list[tuple[Any, Any] | None]:
        with self._lock:
            found = self._ranges.get(key)
        if found is None:
            found = load()
            with self._lock:
                found = self._ranges.setdefault(key, found)
        return found

    def get(self, key: tuple[Any, ...], load: Any) -> pa.Table:
        with self._lock:
            table = self._tables.get(key)
            if table is not None:
                self.hits += 1
                self._tables.move_to_end(key)
                return table
            self.misses += 1
        table = load()
        if table.nbytes <= self.budget:
            with self._lock:
                if key not in self._tables:
                    self._tables[key] = table
                    self.size += table.nbytes
                while self.size > self.budget:
                    _, old = self._tables.popitem(last=False)
                    self.size -= old.nbytes
        return table


class LevelLookup:
    """Records of given keys in some files (levels ≥ 1) of one bucket."""

    def __init__(
        self,
        reader: KeyValueReader,
        directory: str,
        files: Sequence[DataFileMeta],
        value_cols: Sequence[str],
        cache: RowGroupCache,
    ) -> None:
        self.reader = reader
        self.directory = directory
        self.value_cols = list(value_cols)
        self.cache = cache
        self.files = [(f, *reader.key_range(f)) for f in files]

    def records(self, keys: pa.Table, low: tuple[Any, ...], high: tuple[Any, ...]) -> pa.Table:
        """Records (with a ``__level`` column) whose key is one of ``keys`` (merge-key columns,
        unique rows), looked up in files whose range overlaps [low, high]."""
        parts = []
        schema = self.reader.record_schema(self.value_cols)
        semi_join = _semi_join(keys)
        for f, lo, hi in self.files:
            if hi < low or lo > high:
                continue
            path = self.reader.path(self.directory, f)
            ranges = self.cache.ranges(
                path, lambda f=f: self.reader.row_group_key_ranges(self.directory, f)
            )
            for rg, span in enumerate(ranges):
                if span is not None and (span[1] < low[0] or span[0] > high[0]):
                    continue
                table = self.cache.get(
                    (path, rg, *self.value_cols),  # lookups of other columns share the cache
                    lambda f=f, rg=rg: self.reader.read_row_group(
                        self.directory, f, rg, self.value_cols
                    ),
                )
                hit = semi_join(table)
                if hit.num_rows:
                    parts.append(
                        hit.select(schema.names).append_column(
                            LEVEL, pa.array([f.level] * hit.num_rows, pa.int32())
                        )
                    )
        if not parts:
            return schema.append(pa.field(LEVEL, pa.int32())).empty_table()
        return pa.concat_tables(parts)


def _semi_join(keys: pa.Table) -> Callable[[pa.Table], pa.Table]:
    """The rows of a table whose key is one of ``keys`` (unique rows of the key columns): for
    one integer key column by a search in the sorted keys (a hash join per row group cost more
    than the decoding), else by Arrow's semi join."""
    if keys.num_columns == 1 and pa.types.is_integer(keys.schema.field(0).type):
        name = keys.column_names[0]
        wanted = np.sort(keys.column(0).to_numpy())

        def search(table: pa.Table) -> pa.Table:
            values = table.column(name).to_numpy()
            if len(wanted) == 0 or len(values) == 0:
                return table.slice(0, 0)
            at = np.minimum(np.searchsorted(wanted, values), len(wanted) - 1)
            return table.filter(pa.array(wanted[at] == values))

        return search
    return lambda table: table.join(keys, keys=keys.column_names, join_type="left semi")
