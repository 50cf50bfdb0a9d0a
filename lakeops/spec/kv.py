"""Key-value system columns of primary-key data files, and row kinds."""

from __future__ import annotations

__all__ = ["KEY_PREFIX", "KIND", "ROW_KINDS", "RowKind", "SEQ", "key_column"]

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
