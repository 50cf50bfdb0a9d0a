"""Turning user input into validated key-value records, before anything is written.

Input columns are matched to the table by name. Each must be present and castable to the
table's type without loss and without guessing (``int32`` data into a BIGINT column is fine;
``"12"`` into BIGINT, 3.5 into INT or a time-zone-aware timestamp into TIMESTAMP is not: see
:mod:`lakeops.write.conversions`). Unknown columns, nulls in NOT NULL columns (primary keys)
and unknown ``rowkind.field`` values are rejected with :class:`DataValidationError` naming the
column and the fix.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeops.errors import DataValidationError, LakeopsError
from lakeops.format.floats import canonical_table
from lakeops.format.kv import KIND, ROW_KINDS, RowKind
from lakeops.format.schema import TableSchema
from lakeops.options import TableOptions
from lakeops.options.rows_files import DATA_EVOLUTION_ENABLED
from lakeops.write.conversions import check_conversion

__all__ = ["BUCKET_COLUMN", "KIND_COLUMN", "assigned_records", "to_records"]

#: optional input columns set by an upstream assigner (Spark) for dynamic-bucket tables: the
#: bucket of each row, and its row kind (int8; retractions of moved keys are ``-D``)
BUCKET_COLUMN = "__lakeops_bucket"
KIND_COLUMN = "__lakeops_kind"


def _as_table(data: pa.Table | pa.RecordBatch) -> pa.Table:
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.Table):
        return data
    raise DataValidationError(
        f"cannot write a {type(data).__name__}: pass a pyarrow Table, RecordBatch, "
        "RecordBatchReader or an iterable of them"
    )


def _row_kinds(column: pa.ChunkedArray, name: str) -> pa.Array:
    """Map '+I'/'-U'/'+U'/'-D' strings to kind bytes; anything else is an error."""
    codes = pc.index_in(column, value_set=pa.array(list(ROW_KINDS)))
    if codes.null_count:
        bad = pc.unique(pc.filter(column, pc.is_null(codes))).to_pylist()[:5]
        raise DataValidationError(
            f"column {name!r} (rowkind.field) holds unknown row kind(s) {bad}; each value must "
            "be one of '+I', '-U', '+U', '-D'"
        )
    lookup = np.array(list(ROW_KINDS.values()), dtype=np.int8)
    return pa.array(lookup[codes.to_numpy(zero_copy_only=False)], type=pa.int8())


def to_records(
    data: pa.Table | pa.RecordBatch, schema: TableSchema, options: TableOptions
) -> pa.Table:
    """Validate ``data`` and return it as the table's fields (cast, in schema order) plus a
    ``_VALUE_KIND`` column. Raises :class:`DataValidationError`; never writes."""
    table = _as_table(data)
    names = schema.field_names
    given = table.column_names
    given_set = set(given)  # sets: the cost stays linear in the number of columns
    known = set(names)
    missing = [n for n in names if n not in given_set]
    if missing:
        hint = ""
        if DATA_EVOLUTION_ENABLED.get(schema.options):
            # Paimon's column-subset append (pypaimon ``with_write_type``) gives its file new
            # row ids, so readers see the missing columns as null: the same rows as nulls given
            # here. Setting columns of rows already in the table is an update.
            hint = (
                "; a column-subset append gives new row ids (Paimon reads the missing columns "
                "as null), so give them as null columns, or use update_columns with '_ROW_ID' "
                "to set columns of existing rows"
            )
        raise DataValidationError(
            f"input is missing column(s) {missing}; the table has columns {names}{hint}"
        )
    extra = [n for n in given if n not in known]
    if extra:
        raise DataValidationError(
            f"input has column(s) {extra} that the table does not have (columns: {names}); "
            "drop them before writing"
        )
    if len(given_set) != len(given):
        raise DataValidationError(f"input repeats a column name: {given}")
    position = {n: i for i, n in enumerate(given)}
    primary_keys = set(schema.primary_keys)
    columns = []
    for f in schema.fields:
        col = table.column(position[f.name])
        target = f.type.to_arrow()
        if col.type != target:
            check_conversion(f.name, col.type, target, f.type.to_paimon())
            try:
                col = col.cast(target, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
                raise DataValidationError(
                    f"column {f.name!r} has type {col.type}, which cannot be stored in "
                    f"{f.type.to_paimon()} without loss ({exc}); cast it to {target} first"
                ) from None
        if not f.type.nullable and col.null_count:
            what = "primary-key column" if f.name in primary_keys else "NOT NULL column"
            raise DataValidationError(
                f"{what} {f.name!r} has {col.null_count} null value(s); every row needs a "
                "value there"
            )
        columns.append(col)
    out = pa.table(
        columns,
        schema=pa.schema(
            [pa.field(f.name, f.type.to_arrow(), f.type.nullable) for f in schema.fields]
        ),
    )
    # one NaN per float key, as Java's Double.compare sees it (lakeops.format.floats)
    out = canonical_table(out, schema.primary_keys)
    if options.rowkind_field:
        kinds = _row_kinds(out.column(options.rowkind_field), options.rowkind_field)
    else:
        kinds = pa.array(np.full(out.num_rows, RowKind.INSERT, dtype=np.int8))
    return out.append_column(pa.field(KIND, pa.int8(), False), kinds)


def assigned_records(data: pa.Table, schema: TableSchema, options: TableOptions) -> pa.Table:
    """Input whose buckets (and retraction kinds) were assigned upstream, by a Spark assigner
    stage that already validated it and applied the engine's ``prepare``: the records of
    :func:`to_records` with the assigned kinds, plus :data:`BUCKET_COLUMN`. Only dynamic-bucket
    tables accept it."""
    if options.bucket != -1:
        raise LakeopsError(
            f"column {BUCKET_COLUMN!r} (pre-assigned buckets) is only accepted by "
            "dynamic-bucket tables"
        )
    buckets = data.column(BUCKET_COLUMN)
    kinds = data.column(KIND_COLUMN) if KIND_COLUMN in data.column_names else None
    data = data.drop_columns([c for c in (BUCKET_COLUMN, KIND_COLUMN) if c in data.column_names])
    records = to_records(data, schema, options)
    if kinds is not None:
        idx = records.schema.get_field_index(KIND)
        records = records.set_column(idx, records.schema.field(KIND), kinds.cast(pa.int8()))
    return records.append_column(BUCKET_COLUMN, buckets.cast(pa.int32()))
