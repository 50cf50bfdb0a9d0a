"""The records of given keys in one data file, read unit by unit, with a process-wide cache.

A point lookup (:mod:`lakeops.read.lookup`) asks each candidate file for the records of a few
keys. pyarrow cannot read single rows or pages, only whole units (Parquet row groups), so this
module reads as few units, and as few of their columns, as it can find out it needs:

1. the units whose first-key statistics admit a sought key (Parquet footers; every unit of an
   ORC or Avro file, and of a file with a FLOAT/DOUBLE first key, whose statistics leave NaN
   out);
2. of those, only the key columns, joined (a hash semi-join, whole-array) with the sought keys:
   the exact positions of the matching rows. A key inside a unit's statistics range may well be
   absent from it; such a unit is never read further;
3. rows deleted by the file's deletion vector are dropped by position, so a file with a vector
   is no longer read whole;
4. the other columns only of the units that hold a match, and of them only the matching rows.

Where the footer does not record the rows of each unit (ORC, Avro), every unit is read with all
the columns the lookup needs at once, so an Avro file (one row-oriented unit) is read once.

Decoded columns are kept in :data:`UNIT_CACHE`, one per process, keyed by (file system, path,
size, unit, column). Data files are immutable — every name holds a UUID, and a file is never
rewritten in place — so a column decoded once serves every later lookup in the process, from
any table object; the cache holds the file's own columns, before the reader maps them to the
current schema, so it stays right across schema changes. It is bounded by
``lookup.cache-max-memory-size`` (Paimon's bound for its lookup caches, 256 MiB by default) of
the table looked up last; the least recently used columns are evicted beyond it. A file that is
replaced in place by one of the same size behind the process's back is beyond its checks (the
reader still checks each file's size and footer row count once per lookup).

Large key sets need no separate path: when every unit holds a match, steps 2 and 4 together
read each column of the file once, as a whole-file read does (``benchmarks/lookup.md``).

Where local lookup files are allowed (:mod:`lakeops.read.lookup_local`: on by default), none
of the above runs for a file with a non-float key: the first lookup of the file reads it whole
into a local lookup file on local disk, and every lookup (of any process) searches that file
instead; the unit path remains for FLOAT/DOUBLE keys, local files turned off
(``lookup.cache-max-disk-size`` = 0) or a directory that cannot safely hold them.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeops.errors import CorruptDataFileError
from lakeops.format.data_file import DataFileMeta
from lakeops.format.floats import is_floating
from lakeops.kv.reader import KeyValueReader, ReadPlan, relative_name
from lakeops.read.lookup_local import (
    DENSE,
    LOCAL_FILES,
    LocalFiles,
    LocalSettings,
    key_hashes,
)

__all__ = ["UNIT_CACHE", "FirstKeys", "UnitCache", "matching_records"]

#: a file in the cache: (file system protocol, path, size in bytes)
FileKey = tuple[str, str, int]
#: what a file's footer says once: per unit (first-key min, max) or None, and per unit its rows
#: (None: the footer does not record them)
Footer = tuple[list[tuple[Any, Any] | None], list[int] | None]

#: the column of global row positions joined along with the keys
_POS = "__lookup_position"
#: the name the positions are cached under (no Paimon field is named with a NUL)
_CACHED_POS = "\x00positions"
#: bytes counted per cached column beyond its buffers (the Python objects around it)
_ENTRY_OVERHEAD = 256
#: footers kept (each a few hundred bytes)
_FOOTERS = 16384


class UnitCache:
    """Decoded columns of units of data files, least recently used evicted beyond
    ``budget_bytes`` (their Arrow buffers plus a small per-column overhead), and the footer
    facts of the most recently used files.

    Thread-safe: lookups in several threads share it. Loading runs outside the lock, so two
    threads missing the same column at once may both decode it; the cache keeps one copy."""

    def __init__(self, budget_bytes: int) -> None:
        self.budget = budget_bytes
        self.size = 0
        self.hits = self.misses = 0
        self._columns: OrderedDict[tuple[FileKey, int, str], tuple[pa.Array, int]] = OrderedDict()
        self._footers: OrderedDict[FileKey, Footer] = OrderedDict()
        self._lock = threading.Lock()

    def resize(self, budget_bytes: int) -> None:
        """Bound the cache by ``budget_bytes`` from now on (evicting down to it now)."""
        with self._lock:
            self.budget = budget_bytes
            self._evict()

    def clear(self) -> None:
        """Forget every column and footer."""
        with self._lock:
            self._columns.clear()
            self._footers.clear()
            self.size = 0

    def footer(self, key: FileKey, load: Callable[[], Footer]) -> Footer:
        """The footer facts of file ``key`` (``load()`` when not kept)."""
        with self._lock:
            found = self._footers.get(key)
            if found is not None:
                self._footers.move_to_end(key)
                return found
        found = load()
        with self._lock:
            self._footers[key] = found
            while len(self._footers) > _FOOTERS:
                self._footers.popitem(last=False)
        return found

    def columns(
        self,
        key: FileKey,
        unit: int,
        names: Sequence[str],
        load: Callable[[list[str]], pa.Table],
    ) -> dict[str, pa.Array]:
        """Columns ``names`` of one unit of file ``key``; those not kept are read together by
        ``load(missing names)`` (a table of those columns of the unit)."""
        found: dict[str, pa.Array] = {}
        with self._lock:
            for name in names:
                entry = self._columns.get((key, unit, name))
                if entry is not None:
                    self._columns.move_to_end((key, unit, name))
                    found[name] = entry[0]
            self.hits += len(found)
            self.misses += len(names) - len(found)
        missing = [n for n in names if n not in found]
        if not missing:
            return found
        table = load(missing)
        loaded = {n: _one_array(table.column(n)) for n in missing}
        found.update(loaded)
        with self._lock:
            for name, array in loaded.items():
                size = array.get_total_buffer_size() + _ENTRY_OVERHEAD
                if size > self.budget or (key, unit, name) in self._columns:
                    continue
                self._columns[(key, unit, name)] = (array, size)
                self.size += size
            self._evict()
        return found

    def _evict(self) -> None:
        while self.size > self.budget and self._columns:
            _, (_, size) = self._columns.popitem(last=False)
            self.size -= size


def _one_array(column: pa.ChunkedArray) -> pa.Array:
    """``column`` as one array (a unit's column is one chunk: no copy)."""
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


#: the cache every lookup of this process shares (bounded by the option of the table looked up
#: last: :func:`lakeops.read.lookup.lookup` resizes it)
UNIT_CACHE = UnitCache(256 << 20)


def matching_records(
    reader: KeyValueReader,
    directory: str,
    f: DataFileMeta,
    value_cols: Sequence[str],
    probe: pa.Table,
    firsts: FirstKeys,
    deleted: np.ndarray | None,
    cache: UnitCache = UNIT_CACHE,
    local: LocalSettings | None = None,
    local_files: LocalFiles = LOCAL_FILES,
) -> pa.Table:
    """The records (``reader.record_schema(value_cols)``) of data file ``f`` whose merge key
    is a row of ``probe`` (rows of the merge-key columns in the current types, duplicates
    allowed), in
    file order, less the positions ``deleted`` (sorted; the file's deletion vector).

    ``firsts``: the sought values of the first key field, for the units' statistics.
    ``local``: the settings of local lookup files (None: none used)."""
    if local is not None and not any(is_floating(t.to_arrow()) for t in reader.key_types):
        found = _local_records(reader, directory, f, value_cols, probe, deleted, local, local_files)
        if found is not None:
            return found
    path, plan = reader.unit_plan(directory, f, value_cols)
    key: FileKey = (reader.file_io.protocol, path, f.file_size)
    ranges, rows = cache.footer(key, lambda: _footer(reader, directory, f))
    units = (
        [u for u, span in enumerate(ranges) if firsts.may_hold(span)]
        if rows is not None
        else list(range(len(ranges)))
    )
    # where the footer lacks the units' rows, a unit is read once with every column needed
    first_cols = _key_sources(reader, plan) if rows is not None else plan.read_cols

    def load(unit: int) -> Callable[[list[str]], pa.Table]:
        return lambda names: reader.read_unit_columns(path, f, unit, names)

    offsets = np.cumsum([0, *rows]).tolist() if rows is not None else None
    keyed, starts = [], []
    start = 0
    for u in units:
        columns = cache.columns(key, u, first_cols, load(u))
        n = _unit_length(columns, rows[u] if rows is not None else None, reader, path)
        if offsets is not None:
            start = offsets[u]
        # the rows' positions in the file, kept too: a fresh array each lookup costs more
        # (page faults) than the join that uses it
        at = cache.columns(key, u, [_CACHED_POS], _positions_of(start, n))[_CACHED_POS]
        keyed.append(_keys_at(reader, plan, columns).append_column(_POS, at))
        starts.append(start)
        start += n
    if rows is None and start != f.row_count:
        raise _corrupt(reader, path, f"holds {start} rows", f"{f.row_count} rows")
    positions = _positions(keyed, probe, reader.merge_keys, deleted)
    schema = reader.record_schema(value_cols)
    if not len(positions):
        return schema.empty_table()
    at = np.searchsorted(np.asarray(starts, dtype=np.int64), positions, side="right") - 1
    parts = []
    for j in np.unique(at):
        u = units[int(j)]
        in_unit = positions[at == j] - starts[int(j)]
        columns = cache.columns(key, u, plan.read_cols, load(u))
        if len(in_unit) == len(keyed[int(j)]):  # every row of the unit: as it is, no take
            parts.append(pa.table({c: columns[c] for c in plan.read_cols}))
        else:
            rows_at = pa.array(in_unit)
            parts.append(pa.table({c: columns[c].take(rows_at) for c in plan.read_cols}))
    return reader.conform(pa.concat_tables(parts), plan, schema)


def _local_records(
    reader: KeyValueReader,
    directory: str,
    f: DataFileMeta,
    value_cols: Sequence[str],
    probe: pa.Table,
    deleted: np.ndarray | None,
    settings: LocalSettings,
    local_files: LocalFiles,
) -> pa.Table | None:
    """:func:`matching_records` from the local lookup file of ``f`` (built from the whole file
    on first use); None where no local file may be kept (the caller reads units instead)."""
    path = reader.path(directory, f)
    # the records are laid out in the current schema's fields: their fingerprint is part of the
    # key (an ALTER of options alone keeps the local files)
    key = (reader.file_io.protocol, path, f.file_size, f.schema_id, _layout(reader))
    every = [fld.name for fld in reader.schema.fields if fld.name not in reader.key_names]

    def build() -> tuple[pa.Table, list[str], list[Any]]:
        return reader.read(directory, f, every), reader.merge_keys, reader.key_types

    local = local_files.get(settings, key, f.row_count, build)
    if local is None:
        return None
    schema = reader.record_schema(value_cols)
    keys = local.records.select(reader.merge_keys)
    if local.hashes is None or probe.num_rows * DENSE >= keys.num_rows:
        # not indexed yet (built by this lookup), or keys sought for a large share of the
        # rows: the membership test over every row finds them
        keyed = keys.append_column(_POS, pa.array(np.arange(keys.num_rows, dtype=np.int64)))
    else:
        hashes = key_hashes([probe.column(mk) for mk in reader.merge_keys], reader.key_types)
        candidates = local.candidates(hashes)
        if not len(candidates):
            return schema.empty_table()
        at = pa.array(candidates)
        keyed = keys.take(at).append_column(_POS, at)
    positions = _positions([keyed], probe, reader.merge_keys, deleted)
    if not len(positions):
        return schema.empty_table()
    records = local.records.select(schema.names)
    if len(positions) < records.num_rows:  # (every row sought: the records as they are)
        records = records.take(pa.array(positions))
    return records.cast(schema)


def _layout(reader: KeyValueReader) -> str:
    """A fingerprint of the record layout ``reader`` reads files into: the current schema's
    fields (ids, names, types) and primary keys."""
    fields = [fld.to_json() for fld in reader.schema.fields]
    text = json.dumps([fields, reader.key_names], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _footer(reader: KeyValueReader, directory: str, f: DataFileMeta) -> Footer:
    return reader.row_group_key_ranges(directory, f), reader.unit_rows(directory, f)


@dataclass(frozen=True)
class FirstKeys:
    """What a lookup knows of its sought values of the first key field, to compare with the
    (min, max) of a file or unit: all of them, sorted (``values``, a small key set), or their
    least and greatest (``bounds``, a large one: listing each costs Python per key), or nothing
    (both None: a FLOAT/DOUBLE key, whose NaN statistics leave out)."""

    values: Sequence[Any] | None = None
    bounds: tuple[Any, Any] | None = None

    def may_hold(self, span: tuple[Any, Any] | None) -> bool:
        """Whether a file or unit whose first key spans ``span`` (None: unknown) may hold a
        sought key; a span whose type the values do not compare with is never pruned."""
        if span is None:
            return True
        lo, hi = span
        try:
            if self.values is not None:
                at = bisect.bisect_left(self.values, lo)
                return at < len(self.values) and bool(self.values[at] <= hi)
            if self.bounds is not None:
                return not (hi < self.bounds[0] or lo > self.bounds[1])
        except TypeError:
            pass
        return True


def _key_sources(reader: KeyValueReader, plan: ReadPlan) -> list[str]:
    """The file columns the merge keys are read from (as ``plan`` maps them)."""
    return list(dict.fromkeys(plan.sources[mk] for mk in reader.merge_keys if mk in plan.sources))


def _unit_length(
    columns: dict[str, pa.Array], recorded: int | None, reader: KeyValueReader, path: str
) -> int:
    """The rows of a unit read as ``columns``, checked against the footer's ``recorded``."""
    n = len(next(iter(columns.values())))
    if recorded is not None and n != recorded:
        raise _corrupt(reader, path, f"has a unit of {n} rows", f"{recorded} rows")
    return n


def _keys_at(reader: KeyValueReader, plan: ReadPlan, columns: dict[str, pa.Array]) -> pa.Table:
    """A unit's merge keys (current types, canonical NaN)."""
    schema = reader.record_schema([])
    return reader.conform(
        pa.table({c: columns[c] for c in _key_sources(reader, plan)}),
        plan,
        pa.schema([schema.field(mk) for mk in reader.merge_keys]),
    )


def _positions_of(start: int, n: int) -> Callable[[list[str]], pa.Table]:
    """A loader of the positions ``start`` … ``start + n - 1`` (of a unit's rows in its
    file) for :meth:`UnitCache.columns`."""

    def load(_names: list[str]) -> pa.Table:
        return pa.table({_CACHED_POS: pa.array(np.arange(start, start + n, dtype=np.int64))})

    return load


def _positions(
    keyed: list[pa.Table], probe: pa.Table, merge_keys: list[str], deleted: np.ndarray | None
) -> np.ndarray:
    """The sorted positions of the rows of ``keyed`` whose key is in ``probe``, less
    ``deleted``."""
    if not keyed:
        return np.empty(0, dtype=np.int64)
    records = pa.concat_tables(keyed)
    key = records.column(merge_keys[0])
    if (
        len(merge_keys) == 1
        and key.type == probe.schema.field(merge_keys[0]).type
        and not is_floating(key.type)
    ):
        # one key column: a set-membership test, without the set-up of a join (milliseconds
        # for the first join of a process); floats keep the join's equality
        sought = probe.column(merge_keys[0]).combine_chunks()
        found_at = records.column(_POS).filter(pc.is_in(key, value_set=sought))
        positions = np.sort(found_at.to_numpy())
    else:
        found = records.join(probe, keys=merge_keys, join_type="left semi")
        positions = np.sort(found.column(_POS).to_numpy())
    if deleted is not None and len(deleted) and len(positions):
        at = np.searchsorted(deleted, positions.astype(np.uint64))
        hit = deleted[np.minimum(at, len(deleted) - 1)] == positions.astype(np.uint64)
        positions = positions[~hit]
    return positions


def _corrupt(reader: KeyValueReader, path: str, found: str, recorded: str) -> CorruptDataFileError:
    name = relative_name(reader.table_root, path)
    return CorruptDataFileError(
        f"data file {name} {found}, but its footer or manifest entry records {recorded}: it "
        "was truncated or replaced, and lakeops does not read it. Restore the original file, "
        "or roll back to a snapshot that does not reference it",
        path=name,
    )
