"""Key-value system columns of primary-key data files, and row kinds."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

if TYPE_CHECKING:
    from lakeops.format.schema import TableSchema

__all__ = ["KEY_PREFIX", "KIND", "ROW_KINDS", "RowKind", "SEQ", "data_file_schema", "key_column"]

KEY_PREFIX = "_KEY_"
SEQ = "_SEQUENCE_NUMBER"
KIND = "_VALUE_KIND"


class RowKind:
    """Paimon's row kinds and their byte values in ``_VALUE_KIND``."""

    INSERT = 0  # +I
    UPDATE_BEFORE = 1  # -U
    UPDATE_AFTER = 2  # +U
    DELETE = 3  # -D


#: the short strings of ``rowkind.field`` -> byte value
ROW_KINDS = {
    "+I": RowKind.INSERT,
    "-U": RowKind.UPDATE_BEFORE,
    "+U": RowKind.UPDATE_AFTER,
    "-D": RowKind.DELETE,
}


def key_column(name: str) -> str:
    """The data-file column holding a copy of key field ``name``."""
    return KEY_PREFIX + name


def data_file_schema(schema: TableSchema) -> pa.Schema:
    """The columns of a primary-key table's data file: ``_KEY_<k>…, _SEQUENCE_NUMBER,
    _VALUE_KIND`` then every table field."""
    keys = [
        pa.field(key_column(k), schema.field(k).type.to_arrow(), False)
        for k in schema.trimmed_primary_keys
    ]
    system = [pa.field(SEQ, pa.int64(), False), pa.field(KIND, pa.int8(), False)]
    return pa.schema(keys + system + list(schema.arrow_schema()))
