"""Avro data files into Arrow: the Arrow type of every Avro type Paimon writes, and a decoder
that turns a file's blocks into Arrow tables.

Paimon 0.9 (``AvroSchemaConverter``) writes a data file's rows as Avro records whose fields
are the file's columns (the row type is nullable, so the file's schema is ``["null", record]``;
a plain record schema reads too): nullable types as the union ``["null", T]``;
BOOLEAN/INT/BIGINT/FLOAT/DOUBLE as the Avro primitives (TINYINT and SMALLINT as ``int``);
CHAR/VARCHAR ``string``; BINARY/VARBINARY ``bytes``; DATE ``int``/``date``; TIMESTAMP
``long``/``timestamp-millis`` (precision <= 3) or ``timestamp-micros`` (<= 6); TIMESTAMP_LTZ
the ``local-timestamp-*`` equivalents; DECIMAL ``bytes``/``decimal``; ARRAY ``array``; ROW
``record``; MAP with a string key ``map``, and MAP with any other key an ``array`` of
``{key, value}`` records marked with the logical type ``map``. The Arrow types here are the
ones lakeops uses for those Paimon types (TIMESTAMP_LTZ with time zone UTC); TINYINT and
SMALLINT read as int32 (the file does not say).

Three decoders give the same Arrow tables:

- files of flat rows (primitive, temporal and decimal columns), where the optional package
  ``numba`` (``lakeops[avro]``) is installed: lakeops' own compiled decoder,
  :mod:`lakeops.io.avro_jit` (a corrupt file is refused there, never handed on);
- the fast path, where the optional package ``datafusion`` (``lakeops[avro]``) is installed:
  Apache Arrow's own Avro decoder (arrow-rs ``arrow-avro``, in Rust) decodes the file straight
  into Arrow arrays, which are then given exactly the Arrow types above (whole-array: casts that
  only relabel, offsets reused, Paimon's key-value arrays as maps). It is used only for files
  whose every type is on a list of types checked value for value against fastavro (every type
  Paimon writes); any other file, and any file that decoder fails on, is read by fastavro.
  ``arrow-avro`` does not take a union at the top of a schema, so the file's header is given the
  record's schema with one leading ``long`` field in place of ``["null", record]``: Avro encodes a
  union as its branch index (a ``long``) followed by the value, so every row's bytes are the same
  under both schemas as long as no row is NULL, and each decoded index is checked to be the
  record's (a NULL row is refused as corrupt, as fastavro's path does);
- fastavro's, in C, on a *raw* copy of the writer schema without logical types, so that times
  arrive as integers and decimals as their two's-complement bytes; the conversion to Arrow's
  temporal and decimal types is then whole-array work (casts and numpy), never a Python object
  per value — but each row is a Python dict first, so it costs 20 to 100 times a Parquet read.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib
import itertools
import json
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import IO, Any

import fastavro
import numpy as np
import pyarrow as pa
from fastavro import _read as fastavro_read

from lakeops.errors import ConfigurationError, CorruptTableError, UnsupportedFeatureError
from lakeops.io import avro_jit

__all__ = ["AvroColumns", "decimal_from_bytes", "fast_reader", "open_columns"]

#: fastavro's block of records (its typing stub lags the constructor: the named schemas and
#: the reader options are arguments too)
_Block: Any = fastavro_read.Block

#: records decoded before they become one Arrow table
CHUNK_ROWS = 65_536

_PRIMITIVES: dict[str, pa.DataType] = {
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
}
_TEMPORAL: dict[tuple[str, str], pa.DataType] = {
    ("int", "date"): pa.date32(),
    ("int", "time-millis"): pa.time32("ms"),
    ("long", "time-micros"): pa.time64("us"),
    ("long", "timestamp-millis"): pa.timestamp("ms"),
    ("long", "timestamp-micros"): pa.timestamp("us"),
    ("long", "timestamp-nanos"): pa.timestamp("ns"),
    ("long", "local-timestamp-millis"): pa.timestamp("ms", tz="UTC"),
    ("long", "local-timestamp-micros"): pa.timestamp("us", tz="UTC"),
    ("long", "local-timestamp-nanos"): pa.timestamp("ns", tz="UTC"),
}


@dataclass
class _Node:
    """One Avro type: its logical-type-free Avro schema, the Arrow type fastavro's values of
    that raw schema convert to, and the Arrow type lakeops reads it as."""

    raw: Any
    raw_arrow: pa.DataType
    arrow: pa.DataType
    nullable: bool = False
    #: 'decimal', 'struct', 'list', 'map', 'arraymap' where the raw array needs rebuilding
    kind: str = ""
    children: list[_Node] = field(default_factory=list)
    names: list[str] = field(default_factory=list)

    @property
    def special(self) -> bool:
        """Whether a cast cannot take the raw array to the final type (decimals, key-value
        arrays) somewhere in this subtree."""
        return self.kind in ("decimal", "arraymap") or any(c.special for c in self.children)


class _Converter:
    """Walks a (fastavro-parsed) writer schema into :class:`_Node`s."""

    def __init__(self, named: Mapping[str, Any]) -> None:
        self.named = named
        self.counter = itertools.count()

    def node(self, schema: Any, where: str) -> _Node:
        if isinstance(schema, list):
            return self._union(schema, where)
        if isinstance(schema, str):
            if schema in _PRIMITIVES:
                t = _PRIMITIVES[schema]
                return _Node(schema, t, t)
            if schema in self.named:
                return self.node(self.named[schema], where)
            raise UnsupportedFeatureError(f"Avro type {schema!r} of {where} is not supported")
        if not isinstance(schema, dict):
            raise CorruptTableError(f"unreadable Avro schema of {where}: {schema!r}")
        kind = schema.get("type")
        if isinstance(kind, (list, dict)):
            return self.node(kind, where)
        logical = schema.get("logicalType")
        if kind == "record":
            return self._record(schema, where)
        if kind == "array":
            if logical == "map":
                return self._array_map(schema, where)
            element = self.node(schema["items"], f"{where}[]")
            return _Node(
                {"type": "array", "items": element.raw},
                pa.list_(pa.field("element", element.raw_arrow, element.nullable)),
                pa.list_(pa.field("element", element.arrow, element.nullable)),
                kind="list",
                children=[element],
            )
        if kind == "map":
            value = self.node(schema["values"], f"{where}.value")
            return _Node(
                {"type": "map", "values": value.raw},
                pa.map_(pa.string(), pa.field("value", value.raw_arrow, value.nullable)),
                pa.map_(pa.string(), pa.field("value", value.arrow, value.nullable)),
                kind="map",
                children=[value],
            )
        if logical == "decimal" and kind in ("bytes", "fixed"):
            precision, scale = int(schema["precision"]), int(schema.get("scale", 0))
            if precision > 38:
                raise UnsupportedFeatureError(
                    f"{where} is an Avro DECIMAL({precision}, {scale}); Paimon's precision is "
                    "at most 38"
                )
            raw = "bytes" if kind == "bytes" else self._fixed(schema)
            return _Node(raw, pa.binary(), pa.decimal128(precision, scale), kind="decimal")
        if kind == "fixed":
            return _Node(self._fixed(schema), pa.binary(), pa.binary())
        if kind in _PRIMITIVES:
            raw_arrow = _PRIMITIVES[kind]
            final = _TEMPORAL.get((kind, logical), raw_arrow) if logical else raw_arrow
            return _Node(kind, raw_arrow, final)
        raise UnsupportedFeatureError(
            f"Avro type {kind!r} of {where} is not one Paimon writes; read this table with Paimon"
        )

    def _fixed(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        return {"type": "fixed", "name": f"f{next(self.counter)}", "size": int(schema["size"])}

    def _union(self, branches: list[Any], where: str) -> _Node:
        others = [b for b in branches if b != "null"]
        if len(others) != 1 or len(branches) > 2:
            raise UnsupportedFeatureError(
                f"{where} is the Avro union {branches!r}; lakeops reads only the nullable "
                "unions Paimon writes (['null', T])"
            )
        inner = self.node(others[0], where)
        raw = [inner.raw if b != "null" else "null" for b in branches]
        return _Node(
            raw, inner.raw_arrow, inner.arrow, True, inner.kind, inner.children, inner.names
        )

    def _record(self, schema: Mapping[str, Any], where: str) -> _Node:
        children = [self.node(f["type"], f"{where}.{f['name']}") for f in schema["fields"]]
        names = [str(f["name"]) for f in schema["fields"]]
        raw = {
            "type": "record",
            "name": f"r{next(self.counter)}",
            "fields": [{"name": n, "type": c.raw} for n, c in zip(names, children, strict=True)],
        }
        return _Node(
            raw,
            pa.struct(
                [pa.field(n, c.raw_arrow, c.nullable) for n, c in zip(names, children, strict=True)]
            ),
            pa.struct(
                [pa.field(n, c.arrow, c.nullable) for n, c in zip(names, children, strict=True)]
            ),
            kind="struct",
            children=children,
            names=names,
        )

    def _array_map(self, schema: Mapping[str, Any], where: str) -> _Node:
        entry = self.node(schema["items"], f"{where}[]")
        if entry.kind != "struct" or entry.names != ["key", "value"] or entry.nullable:
            raise UnsupportedFeatureError(
                f"{where} is an Avro array marked as a map whose items are not {{key, value}} "
                "records"
            )
        key, value = entry.children
        return _Node(
            {"type": "array", "items": entry.raw},
            pa.list_(pa.field("element", entry.raw_arrow, False)),
            pa.map_(
                pa.field("key", key.arrow, False), pa.field("value", value.arrow, value.nullable)
            ),
            kind="arraymap",
            children=[key, value],
        )


def decimal_from_bytes(array: pa.Array, arrow_type: pa.DataType) -> pa.Array:
    """Big-endian two's-complement unscaled values (Avro's decimal, of any length up to 16
    bytes) as an Arrow decimal128 array of ``arrow_type``; nulls stay null."""
    n = len(array)
    if n == 0:
        return pa.array([], arrow_type)
    buffers = array.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int32)[array.offset : array.offset + n + 1]
    data = (
        np.frombuffer(buffers[2], dtype=np.uint8)
        if buffers[2] is not None and buffers[2].size > 0
        else np.zeros(1, np.uint8)
    )
    if data.size == 0:
        data = np.zeros(1, np.uint8)
    lengths = np.diff(offsets)
    if lengths.size and int(lengths.max()) > 16:
        raise CorruptTableError(
            f"an Avro decimal of {int(lengths.max())} bytes does not fit {arrow_type}"
        )
    position = np.arange(16)
    source = offsets[1:, None] - 16 + position[None, :]
    present = position[None, :] >= (16 - lengths)[:, None]
    first = data[np.clip(offsets[:-1], 0, data.size - 1)]
    fill = np.where((lengths > 0) & (first >= 0x80), 0xFF, 0x00).astype(np.uint8)
    big_endian = np.where(present, data[np.clip(source, 0, data.size - 1)], fill[:, None])
    little_endian = np.ascontiguousarray(big_endian[:, ::-1], dtype=np.uint8)
    validity = None
    if array.null_count:
        valid = array.is_valid().to_numpy(zero_copy_only=False)
        validity = pa.py_buffer(np.packbits(valid, bitorder="little").tobytes())
    return pa.Array.from_buffers(
        arrow_type,
        n,
        [validity, pa.py_buffer(little_endian.tobytes())],
        null_count=array.null_count,
    )


def _finish(array: pa.Array, node: _Node) -> pa.Array:
    """The raw Arrow array of ``node`` as its final Arrow type."""
    if not node.special:
        return array if array.type == node.arrow else array.cast(node.arrow)
    if node.kind == "decimal":
        return decimal_from_bytes(array, node.arrow)
    mask = array.is_null() if array.null_count else None
    if node.kind == "struct":
        children = [_finish(array.field(i), c) for i, c in enumerate(node.children)]
        return pa.StructArray.from_arrays(children, fields=list(node.arrow), mask=mask)
    if node.kind == "list":
        values = _finish(array.values, node.children[0])
        return pa.ListArray.from_arrays(array.offsets, values, type=node.arrow, mask=mask)
    if node.kind == "map":
        items = _finish(array.items, node.children[0])
        return pa.MapArray.from_arrays(array.offsets, array.keys, items, type=node.arrow, mask=mask)
    # 'arraymap': a list of {key, value} structs
    entries = array.values
    keys = _finish(entries.field(0), node.children[0])
    values = _finish(entries.field(1), node.children[1])
    if keys.null_count:
        raise CorruptTableError("an Avro map entry has a NULL key")
    return pa.MapArray.from_arrays(array.offsets, keys, values, type=node.arrow, mask=mask)


#: bytes copied at a time into the fast decoder's file
_COPY_BUFFER = 8 << 20

#: the Avro container file's header (the Avro specification's ``org.apache.avro.file.Header``)
_HEADER_SCHEMA: Any = fastavro.parse_schema(
    {
        "type": "record",
        "name": "org.apache.avro.file.Header",
        "fields": [
            {"name": "magic", "type": {"type": "fixed", "name": "Magic", "size": 4}},
            {"name": "meta", "type": {"type": "map", "values": "bytes"}},
            {"name": "sync", "type": {"type": "fixed", "name": "Sync", "size": 16}},
        ],
    }
)

#: Arrow types of leaves that the fast path decodes exactly as fastavro's path (checked value for
#: value by tests/io/test_data_formats.py); any other leaf sends the file to fastavro
_FAST_LEAVES = frozenset(
    [
        *_PRIMITIVES.values(),
        pa.date32(),
        pa.time32("ms"),
        pa.time64("us"),
        pa.timestamp("ms"),
        pa.timestamp("us"),
        pa.timestamp("ms", tz="UTC"),
        pa.timestamp("us", tz="UTC"),
    ]
)


#: how long (milliseconds) datafusion's allocator (mimalloc, linked into its module) keeps
#: memory it freed before handing it back to the system, unless ``MIMALLOC_PURGE_DELAY`` is
#: set already. mimalloc's own default hands back the buffers of one file's decoded batches
#: between two reads, so every read faults fresh, zeroed pages in again (the cost is measured
#: in ``benchmarks/avro_readers.md``). The setting affects only how soon idle memory of that
#: allocator is returned, never what is read.
_PURGE_DELAY_MS = "1000"


@functools.cache
def fast_reader() -> ModuleType | None:
    """The ``datafusion`` module when it is installed (the ``lakeops[avro]`` extra), else None:
    Avro data files are then read by fastavro alone."""
    try:
        if "datafusion" not in sys.modules:  # mimalloc reads its options when first used
            os.environ.setdefault("MIMALLOC_PURGE_DELAY", _PURGE_DELAY_MS)
        return importlib.import_module("datafusion")
    except Exception:  # not installed, or not importable here: fastavro reads every file
        return None


class _ScratchFiles:
    """Local files the fast path copies data files into (the decoder reads only paths), kept
    and overwritten in place from one read to the next: writing over pages the system already
    holds costs a quarter of writing a new file. A file is held by one read from the copy to
    its last batch, so reads in other threads, or several open at once in one thread, never
    share one; a forked process starts with none of its parent's. At most :attr:`keep` files
    of at most :attr:`keep_bytes` are kept; all are removed when the process exits."""

    keep = 2 * (os.cpu_count() or 2)
    keep_bytes = 64 << 20

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._free: list[str] = []
        self._made: set[str] = set()
        atexit.register(self._remove_all)
        if hasattr(os, "register_at_fork"):  # a forked child must not write its parent's files
            os.register_at_fork(after_in_child=self._forget_all)

    def _forget_all(self) -> None:
        self._lock = threading.Lock()
        self._free, self._made = [], set()

    @contextlib.contextmanager
    def open(self) -> Iterator[tuple[str, IO[bytes]]]:
        """A scratch file's path and the file, opened for writing from its start (the caller
        truncates it where its content ends)."""
        with self._lock:
            path = self._free.pop() if self._free else None
        out = self._reopen(path) if path is not None else None
        if out is None:
            fd, path = tempfile.mkstemp(prefix="lakeops-avro-", suffix=".avro")
            with self._lock:
                self._made.add(path)
            out = os.fdopen(fd, "r+b")
        assert path is not None
        size = self.keep_bytes + 1
        try:
            with out:
                yield path, out
                size = out.tell()
        finally:
            self._release(path, size)

    def _reopen(self, path: str) -> IO[bytes] | None:
        try:  # never through a link that replaced the file (a shared temporary directory)
            fd = os.open(path, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            self._forget(path)
            return None
        return os.fdopen(fd, "r+b")

    def _release(self, path: str, size: int) -> None:
        with self._lock:
            if size <= self.keep_bytes and len(self._free) < self.keep:
                self._free.append(path)
                return
        self._forget(path)

    def _forget(self, path: str) -> None:
        with self._lock:
            self._made.discard(path)
        with contextlib.suppress(OSError):
            os.remove(path)

    def _remove_all(self) -> None:
        with self._lock:
            paths, self._made, self._free = list(self._made), set(), []
        for path in paths:
            with contextlib.suppress(OSError):
                os.remove(path)


_SCRATCH = _ScratchFiles()


class _NotExact(Exception):
    """The fast decoder gave an array that is not exactly what fastavro's path gives."""


def _fast_node(node: _Node) -> bool:
    """Whether every type in ``node``'s subtree is one the fast path decodes exactly."""
    if node.kind == "decimal":
        return True
    if node.kind:
        return all(_fast_node(c) for c in node.children)
    raw = node.raw
    if isinstance(raw, list):
        raw = next(b for b in raw if b != "null")
    return isinstance(raw, str) and node.arrow in _FAST_LEAVES  # never 'fixed' (raw dict)


def _mask(array: pa.Array) -> pa.Array | None:
    return array.is_null() if array.null_count else None


def _offsets(array: pa.Array) -> pa.Array:
    offsets = array.offsets
    return offsets if offsets.type == pa.int32() else offsets.cast(pa.int32())


def _conform(array: pa.Array, node: _Node) -> pa.Array:
    """An array of the fast decoder as ``node``'s Arrow type, or :class:`_NotExact`."""
    nested = _CONFORM_NESTED.get(node.kind)
    return nested(array, node) if nested is not None else _conform_leaf(array, node)


def _conform_struct(array: pa.Array, node: _Node) -> pa.Array:
    want, got = node.arrow, array.type
    if not pa.types.is_struct(got) or [f.name for f in got] != node.names:
        raise _NotExact(f"{got} for {want}")
    children = [_conform(array.field(i), c) for i, c in enumerate(node.children)]
    return pa.StructArray.from_arrays(children, fields=list(want), mask=_mask(array))


def _conform_list(array: pa.Array, node: _Node) -> pa.Array:
    want, got = node.arrow, array.type
    if not (pa.types.is_list(got) or pa.types.is_large_list(got)):
        raise _NotExact(f"{got} for {want}")
    values = _conform(array.values, node.children[0])
    return pa.ListArray.from_arrays(_offsets(array), values, type=want, mask=_mask(array))


def _conform_map(array: pa.Array, node: _Node) -> pa.Array:
    """A map with string keys (Avro's own map)."""
    want, got = node.arrow, array.type
    if not pa.types.is_map(got):
        raise _NotExact(f"{got} for {want}")
    keys = array.keys
    if keys.type != pa.string():
        if keys.type != pa.large_string():
            raise _NotExact(f"{got} for {want}")
        keys = keys.cast(pa.string())
    items = _conform(array.items, node.children[0])
    return pa.MapArray.from_arrays(_offsets(array), keys, items, type=want, mask=_mask(array))


def _conform_arraymap(array: pa.Array, node: _Node) -> pa.Array:
    """A map with non-string keys, stored as an array of ``key``/``value`` records."""
    want, got = node.arrow, array.type
    if not (pa.types.is_list(got) or pa.types.is_large_list(got)):
        raise _NotExact(f"{got} for {want}")
    entries = array.values
    if not pa.types.is_struct(entries.type) or [f.name for f in entries.type] != [
        "key",
        "value",
    ]:
        raise _NotExact(f"{got} for {want}")
    keys = _conform(entries.field(0), node.children[0])
    values = _conform(entries.field(1), node.children[1])
    if keys.null_count:
        raise CorruptTableError("an Avro map entry has a NULL key")
    return pa.MapArray.from_arrays(_offsets(array), keys, values, type=want, mask=_mask(array))


_CONFORM_NESTED = {
    "struct": _conform_struct,
    "list": _conform_list,
    "map": _conform_map,
    "arraymap": _conform_arraymap,
}


def _conform_leaf(array: pa.Array, node: _Node) -> pa.Array:
    """A primitive array: as it is, or converted only where the conversion is exact."""
    want, got = node.arrow, array.type
    if got == want:
        return array
    if node.kind == "decimal":
        if pa.types.is_decimal(got) and (got.precision, got.scale) == (want.precision, want.scale):
            return array.cast(want)  # a narrower decimal of the same precision: exact
        raise _NotExact(f"{got} for {want}")
    if pa.types.is_timestamp(got) and pa.types.is_timestamp(want):
        # only the time zone label differs (UTC, '+00:00' or none): the int64 values are kept
        if got.unit == want.unit and (got.tz or "UTC") in ("UTC", "+00:00"):
            return array.view(want)
        raise _NotExact(f"{got} for {want}")
    if (got, want) in ((pa.large_string(), pa.string()), (pa.large_binary(), pa.binary())):
        return array.cast(want)
    raise _NotExact(f"{got} for {want}")


def _copy_as_record(stream: IO[bytes], out: IO[bytes], root: _Node) -> tuple[str | None, int]:
    """Copy the Avro file readable from ``stream`` (from its start) to ``out`` as the fast
    decoder reads it: when the file's schema is a union of NULL and the record, the same blocks
    under a header whose schema is the record with a leading ``long`` field (named in the
    result, with the branch index every row must have there)."""
    stream.seek(0)
    if isinstance(root.raw, list):
        header = fastavro.schemaless_reader(stream, _HEADER_SCHEMA, None)
        if not isinstance(header, dict):
            raise _NotExact("unreadable header")
        schema = json.loads(header["meta"]["avro.schema"])
        if not isinstance(schema, list):
            raise _NotExact("not a union")
        branch = next(i for i, b in enumerate(schema) if b != "null")
        record = schema[branch]
        names = {f["name"] for f in record["fields"]}
        marker = next(f"_branch{i}" for i in itertools.count() if f"_branch{i}" not in names)
        meta = dict(header["meta"])
        fields = [{"name": marker, "type": "long"}, *record["fields"]]
        meta["avro.schema"] = json.dumps(dict(record, fields=fields)).encode()
        fastavro.schemaless_writer(
            out, _HEADER_SCHEMA, {"magic": header["magic"], "meta": meta, "sync": header["sync"]}
        )
    else:
        marker, branch = None, 0
    shutil.copyfileobj(stream, out, _COPY_BUFFER)
    return marker, branch


class AvroColumns:
    """One Avro data file opened for reading columns (see :func:`open_columns`)."""

    def __init__(self, stream: IO[bytes], path: str) -> None:
        self.path = path
        try:
            self.blocks = fastavro.block_reader(stream)
        except Exception as exc:  # fastavro raises many types for a bad header
            raise CorruptTableError(f"cannot read Avro data file {path}: {exc}") from exc
        self.stream = stream
        #: where the first block starts (fastavro's block reader reads on from the stream's
        #: position, so a fallback after the fast path seeks back here)
        self.data_start = stream.tell()
        schema = self.blocks.writer_schema
        named = getattr(self.blocks, "_named_schemas", {}).get("writer", {})
        #: the file's rows: a record, or (as Paimon writes them) the union ["null", record]
        self.root = _Converter(named).node(schema, path)
        if self.root.kind != "struct":
            raise UnsupportedFeatureError(
                f"Avro data file {path} does not hold records; Paimon's data files do"
            )
        self.names = list(self.root.names)
        #: whether the fast path may read this file (see the module's docstring)
        self.fast = fast_reader() is not None and _fast_node(self.root)
        self._named = named

    def _plan(self, columns: list[str]) -> tuple[Any, list[tuple[str, _Node]]]:
        by_name = dict(zip(self.root.names, self.root.children, strict=True))
        if not columns:
            raise ConfigurationError("read at least one column of an Avro data file")
        missing = [c for c in columns if c not in by_name]
        if missing:
            raise CorruptTableError(f"Avro data file {self.path} has no column {missing}")
        wanted = set(columns)
        if wanted == set(self.root.names):
            return None, [(n, by_name[n]) for n in self.root.names]
        raw = self.root.raw
        record = next(b for b in raw if b != "null") if isinstance(raw, list) else raw
        reader: Any = {
            "type": "record",
            "name": record["name"],
            "fields": [f for f in record["fields"] if f["name"] in wanted],
        }
        if isinstance(raw, list):
            reader = [reader if b != "null" else "null" for b in raw]
        return reader, [(n, by_name[n]) for n in self.root.names if n in wanted]

    def chunks(self, columns: list[str], chunk_rows: int = CHUNK_ROWS) -> Iterator[pa.Table]:
        """The rows of ``columns`` (in the file's order of them) as tables of up to about
        ``chunk_rows`` rows (whole blocks)."""
        reader_schema, fields = self._plan(columns)
        flat = self._flat_decoder([n for n, _ in fields])
        if flat is not None:
            yield from flat.chunks(self.stream, self.blocks._header["sync"], chunk_rows)
            return
        skip = 0
        if self.fast:
            try:
                for table in self._fast_chunks(fields, chunk_rows):
                    yield table
                    skip += table.num_rows
                return
            except CorruptTableError:
                raise
            except Exception:  # the fast decoder failed on this file: fastavro reads it
                self.stream.seek(self.data_start)
        for table in self._fastavro_chunks(reader_schema, fields, chunk_rows):
            if skip >= table.num_rows:
                skip -= table.num_rows
                continue
            yield table.slice(skip) if skip else table
            skip = 0

    def _flat_decoder(self, columns: list[str]) -> avro_jit.FlatDecoder | None:
        """The compiled decoder of this file's flat rows (:mod:`lakeops.io.avro_jit`), or
        None where numba is missing or the file's types or codec are not ones it reads."""
        plan = avro_jit.flat_plan(self.blocks.writer_schema, self._named, columns)
        if plan is None:
            return None
        decompress = avro_jit.codec(str(self.blocks.codec))
        if decompress is None:
            return None
        if not avro_jit.kernel_loaded():
            # loading the compiled loop costs a process CPU once (more to compile it the first
            # time; benchmarks/avro_readers.md): not worth it for small files, which datafusion
            # reads
            size = self.stream.seek(0, 2)
            self.stream.seek(self.data_start)
            if size < avro_jit.LOAD_FROM_BYTES:
                return None
        kernel = avro_jit.decode_kernel()
        if kernel is None:
            return None
        return avro_jit.FlatDecoder(plan, decompress, kernel, self.path)

    def _fast_chunks(self, fields: list[tuple[str, _Node]], chunk_rows: int) -> Iterator[pa.Table]:
        """The fast path (see the module's docstring); raises on anything it cannot do
        exactly, before or after yielding (the caller goes on with fastavro)."""
        df = fast_reader()
        if df is None:
            raise _NotExact("datafusion is not installed")
        schema = pa.schema([pa.field(n, node.arrow, node.nullable) for n, node in fields])
        with _SCRATCH.open() as (local, out):
            marker, branch = _copy_as_record(self.stream, out, self.root)
            out.truncate()
            out.flush()
            # a new context per file: nothing a context caches about a path (the scratch
            # file's is reused) outlives the read
            config = df.SessionConfig().with_target_partitions(1).with_batch_size(chunk_rows)
            context = df.SessionContext(config)
            pending: list[pa.RecordBatch] = []
            rows = 0
            for batch in context.read_avro(local).execute_stream():
                raw = batch.to_pyarrow()
                if marker is not None:
                    index = raw.column(marker)
                    if index.null_count or bool(
                        (index.to_numpy(zero_copy_only=False) != branch).any()
                    ):
                        raise CorruptTableError(f"Avro data file {self.path} holds a NULL row")
                arrays = [_conform(raw.column(name), node) for name, node in fields]
                pending.append(pa.RecordBatch.from_arrays(arrays, schema=schema))
                rows += raw.num_rows
                if rows >= chunk_rows:
                    yield pa.Table.from_batches(pending, schema=schema)
                    pending, rows = [], 0
            if pending:
                yield pa.Table.from_batches(pending, schema=schema)

    def _fastavro_chunks(
        self, reader_schema: Any, fields: list[tuple[str, _Node]], chunk_rows: int
    ) -> Iterator[pa.Table]:
        named: dict[str, dict[str, Any]] = {"writer": {}, "reader": {}}
        writer = fastavro.parse_schema(self.root.raw, named["writer"], _write_hint=False)
        reader = (
            fastavro.parse_schema(reader_schema, named["reader"], _write_hint=False)
            if reader_schema is not None
            else None
        )
        struct = pa.struct([pa.field(n, c.raw_arrow, c.nullable) for n, c in fields])
        records: list[Any] = []
        try:
            for block in self.blocks:
                data = block.bytes_  # type: ignore[attr-defined]
                data.seek(0)
                raw_block = _Block(
                    data,
                    block.num_records,
                    "null",
                    reader,
                    writer,
                    named,
                    block.offset,
                    block.size,
                    getattr(block, "options", {}),
                )
                records.extend(raw_block)
                if len(records) >= chunk_rows:
                    yield self._table(records, struct, fields)
                    records = []
        except (CorruptTableError, UnsupportedFeatureError):
            raise
        except Exception as exc:  # fastavro's errors on a truncated or corrupt block
            raise CorruptTableError(f"cannot read Avro data file {self.path}: {exc}") from exc
        if records:
            yield self._table(records, struct, fields)

    def _table(
        self, records: list[Any], struct: pa.DataType, fields: list[tuple[str, _Node]]
    ) -> pa.Table:
        raw = pa.array(records, type=struct)
        if raw.null_count:
            raise CorruptTableError(f"Avro data file {self.path} holds a NULL row")
        arrays = [_finish(raw.field(i), node) for i, (_, node) in enumerate(fields)]
        schema = pa.schema([pa.field(n, node.arrow, node.nullable) for n, node in fields])
        return pa.Table.from_arrays(arrays, schema=schema)


def open_columns(stream: IO[bytes], path: str) -> AvroColumns:
    """Open the Avro data file readable from ``stream`` (``path`` names it in errors)."""
    return AvroColumns(stream, path)
