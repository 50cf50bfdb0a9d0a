"""What an append file's value statistics say of each current column, for pruning (Paimon's
``AppendOnlyFileStoreScan`` filters files on them): only columns whose statistics are present,
of a type lakeops compares exactly as Paimon orders it, unchanged since the file was written.
Used by the scan (:mod:`lakeops.append.scan`) and by data-evolution group pruning
(:mod:`lakeops.append.evolution`)."""

from __future__ import annotations

from collections.abc import Sequence

from lakeops.errors import LakeopsError
from lakeops.format import binary_row
from lakeops.format.data_file import DataFileMeta
from lakeops.format.types import DataType
from lakeops.kv.evolution import SchemaEvolution
from lakeops.read.expression import Stats

__all__ = ["value_stats"]

#: types whose statistics lakeops compares exactly as Paimon orders them
_PRUNABLE = {"TINYINT", "SMALLINT", "INT", "BIGINT", "BOOLEAN", "DATE", "CHAR", "VARCHAR"}


def value_stats(
    evolution: SchemaEvolution, f: DataFileMeta, columns: Sequence[str] | None = None
) -> dict[str, Stats]:
    """Per current column, what ``f``'s value statistics say of it (only columns whose stats
    are present, of a :data:`_PRUNABLE` type unchanged since the file was written)."""
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
        if (
            t.root not in _PRUNABLE
            or t.to_arrow() != evolution.current.field(current).type.to_arrow()
        ):
            continue
        null_count = nulls[i] if i < len(nulls) else None
        out[current] = Stats(lo[i], hi[i], null_count, f.row_count)
    return out
