"""What a data file's statistics say of each column, for pruning a scan
(:mod:`lakeops.read.scan`): a primary-key file's key statistics (:func:`key_stats`), an append
file's value statistics (:func:`value_stats`, as Paimon's ``AppendOnlyFileStoreScan`` filters
files on them: only columns whose statistics are present, of a type lakeops compares exactly as
Paimon orders it, unchanged since the file was written; data-evolution group pruning,
:mod:`lakeops.read.row_tracking`, uses them too)."""

from __future__ import annotations

from collections.abc import Sequence

from lakeops.errors import LakeopsError
from lakeops.format import binary_row
from lakeops.format.data_file import DataFileMeta
from lakeops.format.types import DataType
from lakeops.kv.evolution import SchemaEvolution
from lakeops.read.expression import Stats

__all__ = ["EXACT_BOUND_TYPES", "PRUNABLE_TYPES", "key_stats", "value_stats"]

#: types whose statistics lakeops compares exactly as Paimon orders them
PRUNABLE_TYPES = frozenset(
    {"TINYINT", "SMALLINT", "INT", "BIGINT", "BOOLEAN", "DATE", "CHAR", "VARCHAR"}
)
#: types whose statistics are the exact minimum and maximum of the file's values (what
#: Iceberg's column bounds need): the prunable ones and floats (a NaN bound is the caller's
#: to drop), decimals and timestamps
EXACT_BOUND_TYPES = PRUNABLE_TYPES | {"FLOAT", "DOUBLE", "DECIMAL", "TIMESTAMP", "TIMESTAMP_LTZ"}


def value_stats(
    evolution: SchemaEvolution,
    f: DataFileMeta,
    columns: Sequence[str] | None = None,
    roots: frozenset[str] = PRUNABLE_TYPES,
) -> dict[str, Stats]:
    """Per current column, what ``f``'s value statistics say of it (only columns whose stats
    are present, of a type whose root is one of ``roots``, unchanged since the file was written)."""
    if f.value_stats_cols is not None and not f.value_stats_cols:
        return {}
    mapping = evolution.mapping(f.schema_id)
    file_fields = mapping.file_schema.fields
    names = (
        list(f.value_stats_cols)
        if f.value_stats_cols is not None
        else [fld.name for fld in file_fields]
    )
    by_name = {fld.name: fld.type for fld in file_fields}
    if any(n not in by_name for n in names):
        return {}
    types: list[DataType] = [by_name[n] for n in names]
    try:
        lo = binary_row.deserialize(f.value_stats.min_values, types)
        hi = binary_row.deserialize(f.value_stats.max_values, types)
    except (LakeopsError, ValueError, IndexError):
        return {}
    nulls = f.value_stats.null_counts
    position = {n: i for i, n in enumerate(names)}
    out: dict[str, Stats] = {}
    for current in columns if columns is not None else evolution.current.field_names:
        src = mapping.sources.get(current)
        if src is None or src[0] not in position:
            continue
        i = position[src[0]]
        t = src[1]
        if t.root not in roots or t.to_arrow() != evolution.current.field(current).type.to_arrow():
            continue
        null_count = nulls[i] if i < len(nulls) else None
        out[current] = Stats(lo[i], hi[i], null_count, f.row_count)
    return out


def key_stats(evolution: SchemaEvolution, f: DataFileMeta) -> dict[str, Stats]:
    """Per key column, what ``f``'s key statistics say of it (keys are never null)."""
    return {
        k: Stats(lo, hi, 0, f.row_count)
        for k, (lo, hi) in evolution.key_stats_range(f).items()
        if lo is not None and hi is not None
    }
