"""The file indexes a table's ``file-index.*`` options ask of each data file (Paimon's
``FileIndexOptions`` + ``DataFileIndexWriter``).

``file-index.<type>.columns`` lists the columns (comma-separated, blanks trimmed, an empty name
refused) given an index of ``<type>``; ``file-index.<type>.<column>.<option>`` sets one option of
one column's index (a key with another shape is ignored, as Paimon ignores it; an option of a
column the type does not list is refused, as Paimon refuses it). Of the types, lakeops builds
``bloom-filter``, ``bitmap`` (version 1 by default — what every Paimon reads, 0.9 included —
and version 2, Paimon 1.x's own default, with ``file-index.bitmap.<column>.version`` = 2;
``index-block-size`` bounds version 2's index blocks), ``bsi`` (:mod:`lakeops.format.file_index`)
and ``range-bitmap`` (:mod:`lakeops.format.range_bitmap`, ``chunk-size`` sizing its dictionary's
chunks).

A primary-key table indexes its value columns (the table's fields) in every data file, not in
changelog files; an append table its fields. The container of a file's indexes is embedded in
its ``DataFileMeta`` when it is at most ``file-index.in-manifest-threshold`` bytes (default 500),
else written as ``<data file>.index`` next to the data file and named in ``_EXTRA_FILES``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from lakeops.errors import ConfigurationError, UnsupportedFeatureError
from lakeops.format.file_index import (
    BITMAP,
    BITMAP_ROOTS,
    BLOOM_FILTER,
    BSI,
    BSI_ROOTS,
    HASHABLE_ROOTS,
    bitmap_bytes,
    bloom_filter_bytes,
    bsi_bytes,
    write_container,
)
from lakeops.format.range_bitmap import (
    RANGE_BITMAP,
    RANGE_BITMAP_ROOTS,
    check_type,
    range_bitmap_bytes,
)
from lakeops.format.schema import TableSchema
from lakeops.format.types import DataType
from lakeops.options.parsing import parse_memory_size
from lakeops.options.rows_files import (
    FILE_INDEX_COLUMNS,
    FILE_INDEX_IN_MANIFEST_THRESHOLD,
    FILE_INDEX_OPTION,
)

__all__ = ["INDEX_SUFFIX", "ColumnIndex", "FileIndexPlan", "plan_file_index"]

#: the suffix of an extra index file's name (Paimon's ``DataFilePathFactory.INDEX_PATH_SUFFIX``)
INDEX_SUFFIX = ".index"

_PREFIX = "file-index."
_COLUMNS = ".columns"
_DEFAULT_ITEMS = 1_000_000
_DEFAULT_FPP = 0.1
#: version 1 unless ``version`` says otherwise: Paimon 1.x's ``BitmapFileIndex`` defaults to 2,
#: but a Paimon 0.9 reader's filtered read fails on a version-2 index, and every reader reads 1
_DEFAULT_BITMAP_VERSION = 1
_DEFAULT_BLOCK_SIZE = 16 * 1024
#: the index types lakeops builds, with the column types each can index
_ROOTS = {
    BLOOM_FILTER: HASHABLE_ROOTS,
    BITMAP: BITMAP_ROOTS,
    BSI: BSI_ROOTS,
    RANGE_BITMAP: RANGE_BITMAP_ROOTS,
}


@dataclass(frozen=True)
class ColumnIndex:
    """One index of one column: its type, the indexed values' data type and the index's
    options. A map-entry index (``column`` = ``<map column>[<key>]``, ``map_key`` set) indexes
    each row's value of that key (null where the row's map lacks it or is null), as Paimon's
    ``MapFileIndexMaintainer`` does, under that name in the container."""

    column: str
    kind: str
    dtype: DataType
    options: Mapping[str, str]
    map_key: str | None = None

    @property
    def source(self) -> str:
        """The table column the index reads (the map column of a map-entry index)."""
        if self.map_key is None:
            return self.column
        return self.column[: -len(self.map_key) - 2]

    def renamed(self, source: str) -> ColumnIndex:
        """This index reading table column ``source`` instead (schema evolution)."""
        name = source if self.map_key is None else f"{source}[{self.map_key}]"
        return dataclasses.replace(self, column=name)

    def values(self, column: pa.Array) -> pa.Array:
        """The values this index holds, from its source column's values in the file."""
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        if self.map_key is None:
            return column
        return pc.map_lookup(column, pa.scalar(self.map_key, column.type.key_type), "first")

    def build(self, values: pa.Array) -> bytes:
        """The index body over ``values`` (the column's values in the file, in file order)."""
        if self.kind == BITMAP:
            return bitmap_bytes(values, self.dtype, self.bitmap_version, self.block_size)
        if self.kind == BSI:
            return bsi_bytes(values, self.dtype)
        if self.kind == RANGE_BITMAP:
            return range_bitmap_bytes(values, self.dtype, self.chunk_size)
        items = _int(self.options.get("items"), _DEFAULT_ITEMS, self._key("items"))
        fpp = _float(self.options.get("fpp"), _DEFAULT_FPP, self._key("fpp"))
        return bloom_filter_bytes(values, self.dtype, items, fpp)

    def _key(self, option: str) -> str:
        return f"{_PREFIX}{self.kind}.{self.column}.{option}"

    @property
    def bitmap_version(self) -> int:
        """The bitmap index version asked (``version``: 1 or 2, default 1, which every Paimon
        reads)."""
        text = self.options.get("version")
        if text is None:
            return _DEFAULT_BITMAP_VERSION
        if text.strip() not in ("1", "2"):
            raise ConfigurationError(
                f"option {self._key('version')!r} = {text!r}: a bitmap index has version 1 "
                "(what Paimon 0.9 reads) or 2 (Paimon 1.x's default); set one of them"
            )
        return int(text.strip())

    @property
    def chunk_size(self) -> int | None:
        """A range-bitmap dictionary's chunk limit (``chunk-size``; None: the type's default)."""
        text = self.options.get("chunk-size")
        return None if text is None else parse_memory_size(text, self._key("chunk-size"))

    @property
    def block_size(self) -> int:
        """A version-2 bitmap's index block limit (``index-block-size``, default 16 kb)."""
        text = self.options.get("index-block-size")
        if text is None:
            return _DEFAULT_BLOCK_SIZE
        size = parse_memory_size(text, self._key("index-block-size"))
        if size <= 0:
            raise ConfigurationError(
                f"option {self._key('index-block-size')!r} = {text!r} must be a positive size"
            )
        return size


@dataclass(frozen=True)
class FileIndexPlan:
    """The indexes every data file of a table gets, and the size up to which a file's index
    container is embedded in its manifest entry."""

    indexes: tuple[ColumnIndex, ...]
    in_manifest_threshold: int

    @property
    def columns(self) -> list[str]:
        """The table columns the indexes read, each once, in first-listed order."""
        return list(dict.fromkeys(i.source for i in self.indexes))

    def container(self, columns: Mapping[str, pa.Array]) -> bytes:
        """The index container of one file whose indexed columns hold ``columns``."""
        bodies: dict[str, dict[str, bytes | None]] = {}
        for index in self.indexes:
            values = index.values(columns[index.source])
            bodies.setdefault(index.column, {})[index.kind] = index.build(values)
        return write_container(bodies)

    def place(self, columns: Mapping[str, pa.Array]) -> tuple[bytes | None, bytes | None]:
        """The container of one file, where Paimon puts it: ``(container, None)`` embedded in
        the manifest entry when at most ``file-index.in-manifest-threshold``, else
        ``(None, container)`` for the ``<data file>.index`` extra file."""
        container = self.container(columns)
        if len(container) <= self.in_manifest_threshold:
            return container, None
        return None, container


def plan_file_index(schema: TableSchema) -> FileIndexPlan | None:
    """The file indexes ``schema``'s options ask for (None: none). Refuses, before anything is
    written, an index on a column the table lacks, a map-key (nested) index, a column type the
    index cannot hash, and an option of a column its type does not list."""
    options = schema.options
    by_column = _declared(options)
    if not by_column:
        return None
    _add_column_options(options, by_column)
    fields = {f.name: f.type for f in schema.fields}
    indexes = [
        _column_index(column, kind, opts, fields) for (column, kind), opts in by_column.items()
    ]
    threshold = FILE_INDEX_IN_MANIFEST_THRESHOLD.get(options)
    return FileIndexPlan(tuple(indexes), threshold)


def _declared(options: Mapping[str, str]) -> dict[tuple[str, str], dict[str, str]]:
    """(column, index type) -> {} for every column a ``file-index.<type>.columns`` lists."""
    by_column: dict[tuple[str, str], dict[str, str]] = {}
    for key in options:
        if not (key.startswith(_PREFIX) and key.endswith(_COLUMNS)):
            continue
        kind = key[len(_PREFIX) : -len(_COLUMNS)]
        if "." in kind:
            continue
        text = FILE_INDEX_COLUMNS.find(options, key=key) or ""
        for name in text.split(","):
            if not name.strip():
                raise ConfigurationError(
                    f"option {key!r} = {text!r} has an empty column name; list the columns "
                    "to index separated by commas"
                )
            by_column.setdefault((name.strip(), kind), {})
    return by_column


def _add_column_options(
    options: Mapping[str, str], by_column: dict[tuple[str, str], dict[str, str]]
) -> None:
    """Fill in each declared index's ``file-index.<type>.<column>.<option>`` options. An
    option of a map column (``file-index.<type>.<map>.<option>``) applies to every declared
    entry ``<map>[<key>]`` of that type, under the entry's own options (Paimon's
    ``getMapTopLevelOptions``)."""
    maps: dict[tuple[str, str], dict[str, str]] = {
        (split[0], kind): {}
        for column, kind in by_column
        if (split := _map_entry(column)) is not None
    }
    for key in options:
        if not key.startswith(_PREFIX) or key.endswith(_COLUMNS):
            continue
        parts = key[len(_PREFIX) :].split(".")
        if len(parts) != 3:
            continue  # Paimon ignores keys of another shape (in-manifest-threshold …)
        kind, column, option = parts
        value = FILE_INDEX_OPTION.find(options, key=key) or ""
        if (column, kind) in by_column:
            by_column[(column, kind)][option] = value
        elif (column, kind) in maps:
            maps[(column, kind)][option] = value
        else:
            raise ConfigurationError(
                f"file index option {key!r}: column {column!r} is not declared in "
                f"'{_PREFIX}{kind}{_COLUMNS}'; add it there (a map entry as "
                f"'<map column>[<key>]') or remove {key!r}"
            )
    for (column, kind), opts in by_column.items():
        split = _map_entry(column)
        if split is not None:
            by_column[(column, kind)] = {**maps[(split[0], kind)], **opts}


def _map_entry(column: str) -> tuple[str, str] | None:
    """(map column, key) of a map-entry name ``<map>[<key>]`` (Paimon's
    ``topLevelIndexOfNested``: a ``[`` and a closing ``]``), else None."""
    start = column.find("[")
    if start == -1 or not column.endswith("]"):
        return None
    return column[:start], column[start + 1 : -1]


def _column_index(
    column: str, kind: str, opts: dict[str, str], fields: Mapping[str, DataType]
) -> ColumnIndex:
    """The index of ``kind`` on ``column``, refused when lakeops cannot build it."""
    where = f"'{_PREFIX}{kind}{_COLUMNS}'"
    entry = _map_entry(column)
    source = column if entry is None else entry[0]
    dtype = fields.get(source)
    if dtype is None:
        raise ConfigurationError(
            f"{where} names column {source!r}, which the table does not have (columns: "
            f"{', '.join(fields)}); fix the option"
        )
    if entry is not None:
        key_type = dtype.key
        if dtype.root != "MAP" or key_type is None or dtype.value is None:
            raise ConfigurationError(
                f"{where} names map entry {column!r}, but column {source!r} is a {dtype}, not "
                "a map; index the column itself"
            )
        if key_type.root not in ("CHAR", "VARCHAR"):
            raise UnsupportedFeatureError(
                f"{where} names map entry {column!r}: Paimon indexes entries of maps with string "
                f"keys only, and {source!r} is a {dtype}; remove the entry"
            )
        dtype = dtype.value
    if kind not in _ROOTS:
        raise UnsupportedFeatureError(
            f"file index type {kind!r} (option {where}): lakeops builds 'bloom-filter', "
            "'bitmap', 'bsi' and 'range-bitmap' indexes only; use Paimon to write this table or "
            "remove the option"
        )
    if dtype.root not in _ROOTS[kind]:
        raise UnsupportedFeatureError(
            f"a {kind} index on column {column!r} of type {dtype}: Paimon cannot index that "
            f"type so; remove {column!r} from {where}"
        )
    if kind == RANGE_BITMAP:
        check_type(dtype)
    index = ColumnIndex(column, kind, dtype, dict(opts), None if entry is None else entry[1])
    index.build(pa.array([], dtype.to_arrow()))  # refuses bad options up front
    return index


def _int(text: str | None, default: int, key: str) -> int:
    if text is None:
        return default
    try:
        value = int(text.strip())
    except ValueError:
        value = 0
    if value <= 0:
        raise ConfigurationError(f"option {key!r} = {text!r} must be a positive integer")
    return value


def _float(text: str | None, default: float, key: str) -> float:
    if text is None:
        return default
    try:
        value = float(text.strip())
    except ValueError:
        value = -1.0
    if not 0.0 < value < 1.0:
        raise ConfigurationError(
            f"option {key!r} = {text!r} must be a probability between 0 and 1 (exclusive)"
        )
    return value


def concat(chunks: Sequence[pa.Array | pa.ChunkedArray], dtype: pa.DataType) -> pa.Array:
    """The values of ``chunks`` as one array (an empty one of ``dtype`` when there are none)."""
    arrays = [a for c in chunks for a in (c.chunks if isinstance(c, pa.ChunkedArray) else [c])]
    if not arrays:
        return pa.array([], dtype)
    # the chunks' own type: a map's Arrow field names may differ from ``dtype``'s
    return pa.chunked_array(arrays, arrays[0].type).combine_chunks()
