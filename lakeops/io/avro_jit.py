"""A compiled decoder for flat Avro data files: Paimon's rows of primitive columns (the common
case) decoded block by block into Arrow arrays (its speed against ``arrow-avro`` is measured by
``benchmarks/bench_formats.py``).

Used by :mod:`lakeops.io.avro_data` where the optional package ``numba`` (``lakeops[avro]``)
is installed and a file's row record has only these columns, each plain or in the nullable
union ``["null", T]`` / ``[T, "null"]``: ``boolean``, ``int`` (also ``date``, ``time-millis``),
``long`` (also ``time-micros`` and the ``timestamp-*``/``local-timestamp-*`` millis and micros),
``float``, ``double``, ``string``, ``bytes``, ``fixed``, and decimals on ``bytes`` or ``fixed``;
the file's codec one of null, deflate, snappy, zstandard, bzip2, xz. Any other file (arrays,
maps, nested records, nanosecond timestamps) goes to the next decoder.

The schema is compiled into a table of opcodes, one per column; the blocks of up to about
``chunk_rows`` rows are decompressed (the codec libraries lakeops already uses) and joined, and
one compiled loop over rows and opcodes writes every value straight into preallocated numpy
buffers (values, validity, string offsets and bytes), which become Arrow arrays without a copy.
The loop checks every read against the end of its block: a truncated block, a varint longer than
ten bytes, a union branch that is neither of the two, a length past the block, an ``int`` out of
range, a decimal wider than 16 bytes, a row count the block's bytes cannot hold, bytes left over
after a block's rows or a NULL row all raise :class:`~lakeops.errors.CorruptTableError`; strings
are checked to be UTF-8 as fastavro does. The loop holds no GIL, so files read on several
threads decode in parallel.

The loop is loaded when a process first reads a flat file of at least :data:`LOAD_FROM_BYTES`
(smaller files go to the next decoder until then): compiled on first use and cached on disk
(``__pycache__`` beside this module, or numba's user cache directory where that is read-only;
loading it from there still costs a process some CPU, measured in
``benchmarks/avro_readers.md``); where nothing can be cached it is compiled once per process.
"""

from __future__ import annotations

import bz2
import functools
import lzma
import os
import sys
import threading
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import IO, Any

import numpy as np
import pyarrow as pa

from lakeops.errors import CorruptTableError
from lakeops.parallel import available_cores

__all__ = ["LOAD_FROM_BYTES", "FlatPlan", "decode_kernel", "flat_plan", "kernel_loaded"]

# column kinds (the opcode table's first column)
_BOOL, _INT, _LONG, _FLOAT, _DOUBLE, _BYTES, _FIXED, _DEC_BYTES, _DEC_FIXED = range(9)

#: value buffers per kind: 0 bool (u8), 1 int32, 2 int64, 3 4-byte, 4 8-byte, 5 var, 6 decimal
_GROUP = {
    _BOOL: 0,
    _INT: 1,
    _LONG: 2,
    _FLOAT: 3,
    _DOUBLE: 4,
    _BYTES: 5,
    _FIXED: 5,
    _DEC_BYTES: 6,
    _DEC_FIXED: 6,
}

_PLAIN = {
    "boolean": _BOOL,
    "int": _INT,
    "long": _LONG,
    "float": _FLOAT,
    "double": _DOUBLE,
    "string": _BYTES,
    "bytes": _BYTES,
}
_TEMPORAL = {
    ("int", "date"): pa.date32(),
    ("int", "time-millis"): pa.time32("ms"),
    ("long", "time-micros"): pa.time64("us"),
    ("long", "timestamp-millis"): pa.timestamp("ms"),
    ("long", "timestamp-micros"): pa.timestamp("us"),
    ("long", "local-timestamp-millis"): pa.timestamp("ms", tz="UTC"),
    ("long", "local-timestamp-micros"): pa.timestamp("us", tz="UTC"),
}
_ARROW = {
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "bytes": pa.binary(),
}

#: error codes of the loop -> what is wrong
_ERRORS = {
    1: "a value runs past the end of its block (truncated block)",
    2: "a varint longer than ten bytes",
    3: "a union branch index that is neither of the column's two branches",
    4: "a negative length",
    5: "an int value out of the 32-bit range",
    6: "a decimal of more than 16 bytes",
    7: "bytes left over after a block's rows (its row count is wrong)",
    8: "a NULL row",
    9: "a boolean that is neither 0 nor 1",
}


@dataclass(frozen=True)
class FlatPlan:
    """How to decode one flat file: one opcode row per column of the file (kind, nullable,
    the union index of NULL, the value branch's index, output slot or -1 when not read, fixed
    size, validity slot), the top-level union's record branch (-1 when the row is a plain
    record) and the Arrow type of each column."""

    names: tuple[str, ...]
    ops: np.ndarray
    record_branch: int
    arrow: tuple[pa.DataType, ...]
    kinds: tuple[int, ...]
    min_row_bytes: int


def _column(schema: Any, named: dict[str, Any]) -> tuple[int, bool, int, int, pa.DataType] | None:
    """(kind, nullable, null index, fixed size, Arrow type) of a column's Avro type, or None
    where it is not a flat type of this decoder."""
    null_index, nullable = 0, False
    if isinstance(schema, list):
        if len(schema) != 2 or schema.count("null") != 1:
            return None
        null_index = schema.index("null")
        nullable = True
        schema = schema[1 - null_index]
    if isinstance(schema, str):
        if schema in _PLAIN:
            return _PLAIN[schema], nullable, null_index, 0, _ARROW[schema]
        schema = named.get(schema)
    if not isinstance(schema, dict):
        return None
    kind, logical = schema.get("type"), schema.get("logicalType")
    if not isinstance(kind, str):
        return None
    if logical == "decimal" and kind in ("bytes", "fixed"):
        precision, scale = int(schema["precision"]), int(schema.get("scale", 0))
        if precision > 38:
            return None
        arrow = pa.decimal128(precision, scale)
        if kind == "bytes":
            return _DEC_BYTES, nullable, null_index, 0, arrow
        return _DEC_FIXED, nullable, null_index, int(schema["size"]), arrow
    if kind == "fixed":
        return _FIXED, nullable, null_index, int(schema["size"]), pa.binary()
    if kind not in _PLAIN:
        return None
    if logical is None or kind in ("string", "bytes", "boolean", "float", "double"):
        return _PLAIN[kind], nullable, null_index, 0, _ARROW[kind]
    arrow = _TEMPORAL.get((kind, logical))
    if arrow is None:
        return None  # nanoseconds, or a logical type lakeops' other decoders judge
    return _PLAIN[kind], nullable, null_index, 0, arrow


def flat_plan(schema: Any, named: dict[str, Any], columns: list[str]) -> FlatPlan | None:
    """The decoding plan of a file whose (fastavro-parsed) writer schema is ``schema`` for
    reading ``columns``, or None where the file is not one this decoder reads."""
    if sys.byteorder != "little":
        return None
    record_branch = -1
    if isinstance(schema, list):
        if len(schema) != 2 or schema.count("null") != 1:
            return None
        record_branch = 1 - schema.index("null")
        schema = schema[record_branch]
    if isinstance(schema, str):
        schema = named.get(schema)
    if not isinstance(schema, dict) or schema.get("type") != "record":
        return None
    wanted = set(columns)
    names, arrow, kinds, rows = [], [], [], []
    slots = [0] * 7
    valid_slots = 0
    min_bytes = 1 if record_branch >= 0 else 0
    for f in schema["fields"]:
        col = _column(f["type"], named)
        if col is None:
            return None
        kind, nullable, null_index, size, arrow_type = col
        name = str(f["name"])
        out = valid = -1
        if name in wanted:
            out = slots[_GROUP[kind]]
            slots[_GROUP[kind]] += 1
            if nullable:
                valid, valid_slots = valid_slots, valid_slots + 1
            names.append(name)
            arrow.append(arrow_type)
            kinds.append(kind)
        rows.append([kind, int(nullable), null_index, 1 - null_index, out, size, valid])
        min_bytes += 1 if nullable else {_FLOAT: 4, _DOUBLE: 8, _FIXED: size}.get(kind, 1)
        if kind == _DEC_FIXED and not nullable:
            min_bytes += size - 1
    if [n for n in names] != [c for c in (f["name"] for f in schema["fields"]) if c in wanted]:
        return None
    if min_bytes < 1:
        return None  # rows of no bytes: a row count cannot be checked against the block
    return FlatPlan(
        tuple(names),
        np.asarray(rows, dtype=np.int64).reshape(-1, 7),
        record_branch,
        tuple(arrow),
        tuple(kinds),
        min_bytes,
    )


# one function on purpose: numba compiles it to one loop with no calls between opcodes
def _decode(  # noqa: C901
    buf: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    counts: np.ndarray,
    ops: np.ndarray,
    record_branch: int,
    bools: np.ndarray,
    ints: np.ndarray,
    longs: np.ndarray,
    f4: np.ndarray,
    f8: np.ndarray,
    offsets: np.ndarray,
    data: np.ndarray,
    decs: np.ndarray,
    valid: np.ndarray,
) -> tuple[int, int]:
    """Decode the rows of every block (``buf[starts[b]:ends[b]]`` holding ``counts[b]`` rows)
    into the buffers; returns (0, 0) or (error code, block)."""
    row = 0
    nf = ops.shape[0]
    for b in range(starts.shape[0]):
        pos = starts[b]
        end = ends[b]
        for _ in range(counts[b]):
            if record_branch >= 0:
                # the top-level union's branch index (zig-zag long)
                if pos >= end:
                    return 1, b
                byte = np.int64(buf[pos])
                pos += 1
                if byte >= 0x80:
                    return 8, b  # no index of two branches needs a second byte
                if (byte >> 1) ^ -(byte & 1) != record_branch:
                    return 8, b
            for f in range(nf):
                kind = ops[f, 0]
                out = ops[f, 4]
                if ops[f, 1] == 1:
                    if pos >= end:
                        return 1, b
                    byte = np.int64(buf[pos])
                    pos += 1
                    if byte >= 0x80:
                        return 3, b
                    branch = (byte >> 1) ^ -(byte & 1)
                    if branch == ops[f, 2]:
                        if out >= 0:
                            # NULL: the value slot is zeroed, never left as it was
                            valid[ops[f, 6], row] = 0
                            if kind == 5 or kind == 6:
                                offsets[out, row + 1] = offsets[out, row]
                            elif kind == 0:
                                bools[out, row] = 0
                            elif kind == 1:
                                ints[out, row] = 0
                            elif kind == 2:
                                longs[out, row] = 0
                            elif kind == 3:
                                for i in range(4):
                                    f4[out, row * 4 + i] = 0
                            elif kind == 4:
                                for i in range(8):
                                    f8[out, row * 8 + i] = 0
                            else:
                                for i in range(16):
                                    decs[out, row * 16 + i] = 0
                        continue
                    if branch != ops[f, 3]:
                        return 3, b
                    if out >= 0:
                        valid[ops[f, 6], row] = 1
                if kind == 3:
                    if pos + 4 > end:
                        return 1, b
                    if out >= 0:
                        for i in range(4):
                            f4[out, row * 4 + i] = buf[pos + i]
                    pos += 4
                    continue
                if kind == 4:
                    if pos + 8 > end:
                        return 1, b
                    if out >= 0:
                        for i in range(8):
                            f8[out, row * 8 + i] = buf[pos + i]
                    pos += 8
                    continue
                if kind == 0:
                    if pos >= end:
                        return 1, b
                    byte = np.int64(buf[pos])
                    pos += 1
                    if byte > 1:
                        return 9, b
                    if out >= 0:
                        bools[out, row] = byte
                    continue
                if kind == 6 or kind == 8:
                    length = ops[f, 5]
                else:
                    # a zig-zag varint: int, long, or the length of bytes/string/decimal
                    value = np.int64(0)
                    shift = 0
                    while True:
                        if pos >= end:
                            return 1, b
                        byte = np.int64(buf[pos])
                        pos += 1
                        if shift == 63 and byte > 1:
                            return 2, b
                        value |= (byte & 0x7F) << shift
                        if byte < 0x80:
                            break
                        shift += 7
                        if shift > 63:
                            return 2, b
                    value = np.int64(np.uint64(value) >> np.uint64(1)) ^ -(value & 1)
                    if kind == 2:
                        if out >= 0:
                            longs[out, row] = value
                        continue
                    if kind == 1:
                        if value < -2147483648 or value > 2147483647:
                            return 5, b
                        if out >= 0:
                            ints[out, row] = value
                        continue
                    if value < 0:
                        return 4, b
                    length = value
                if length > end - pos:
                    return 1, b
                if kind == 5 or kind == 6:
                    if out >= 0:
                        at = offsets[out, row]
                        for i in range(length):
                            data[out, at + i] = buf[pos + i]
                        offsets[out, row + 1] = at + length
                    pos += length
                    continue
                # a decimal: big-endian two's complement -> 16 bytes little-endian
                if length > 16:
                    return 6, b
                if out >= 0:
                    fill = 0
                    if length > 0 and buf[pos] >= 0x80:
                        fill = 0xFF
                    base = row * 16
                    for i in range(length):
                        decs[out, base + i] = buf[pos + length - 1 - i]
                    for i in range(length, 16):
                        decs[out, base + i] = fill
                pos += length
            row += 1
        if pos != end:
            return 7, b
    return 0, 0


#: the size of the first Avro data file (bytes) for which a process loads the compiled loop;
#: once loaded, every flat file is decoded by it
LOAD_FROM_BYTES = 8 << 20


_ASKED: list[bool] = []


def kernel_loaded() -> bool:
    """Whether :func:`decode_kernel` has been asked for in this process."""
    return bool(_ASKED)


@functools.cache
def decode_kernel() -> Callable[..., tuple[int, int]] | None:
    """The compiled loop, or None where ``numba`` is not installed or cannot compile here.
    Compiled results are cached on disk where numba finds a writable cache directory."""
    _ASKED.append(True)
    try:
        import numba
    except Exception:  # not installed, or broken: the next decoder reads the files
        return None
    kernel: Callable[..., tuple[int, int]]
    try:
        kernel = numba.njit(cache=True, nogil=True, boundscheck=False)(_decode)
    except Exception:  # no writable cache location: compile in memory only
        try:
            kernel = numba.njit(cache=False, nogil=True, boundscheck=False)(_decode)
        except Exception:
            return None
    try:  # compile (or load from the cache) now, on the argument types of every later call
        empty = np.zeros(0, np.int64)
        code, _ = kernel(
            np.frombuffer(b"", dtype=np.uint8),  # read-only, as every block group's buffer
            empty,
            empty,
            empty,
            np.zeros((0, 7), np.int64),
            -1,
            np.zeros((0, 0), np.uint8),
            np.zeros((0, 0), np.int32),
            np.zeros((0, 0), np.int64),
            np.zeros((0, 0), np.uint8),
            np.zeros((0, 0), np.uint8),
            np.zeros((0, 1), np.int32),
            np.zeros((0, 0), np.uint8),
            np.zeros((0, 0), np.uint8),
            np.zeros((0, 0), np.uint8),
        )
    except Exception:  # numba cannot compile here: the next decoder reads the files
        return None
    return kernel if code == 0 else None


def _varint(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    """A zig-zag varint ``long`` at ``pos``: (value, position after it)."""
    value = shift = 0
    while True:
        if pos >= len(data):
            raise CorruptTableError("the Avro file ends inside a block header")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (value >> 1) ^ -(value & 1), pos
        shift += 7
        if shift > 63:
            raise CorruptTableError("an Avro block header holds a varint longer than ten bytes")


def _zstd() -> Callable[[bytes | memoryview], bytes]:
    if sys.version_info >= (3, 14):
        from compression import zstd  # type: ignore[import-not-found,unused-ignore]
    else:
        from backports import zstd  # type: ignore[import-not-found,unused-ignore,no-redef]
    decompress: Callable[[bytes | memoryview], bytes] = zstd.decompress
    return decompress


def _snappy(block: bytes | memoryview) -> bytes:
    import cramjam

    if len(block) < 4:
        raise CorruptTableError("an Avro snappy block is shorter than its checksum")
    raw = bytes(cramjam.snappy.decompress_raw(bytes(block[:-4])))
    if zlib.crc32(raw).to_bytes(4, "big") != bytes(block[-4:]):
        raise CorruptTableError("an Avro snappy block fails its CRC-32 check")
    return raw


def _deflate(block: bytes | memoryview) -> bytes:
    return zlib.decompress(block, -15)


#: Avro codec name -> decompression of one block
CODECS: dict[str, Callable[[Any], bytes | memoryview]] = {
    "null": bytes,  # a copy: the block's buffer is reused
    "deflate": _deflate,
    "snappy": _snappy,
    "bzip2": bz2.decompress,
    "xz": lzma.decompress,
}


def codec(name: str) -> Callable[[Any], bytes | memoryview] | None:
    """The decompression of one block of Avro codec ``name``, or None where not known."""
    if name == "zstandard":
        try:
            return _zstd()
        except ImportError:
            return None
    return CODECS.get(name)


#: bytes read from a file at a time (into a buffer reused by the thread's next reads)
PIECE_BYTES = 4 << 20

_BUFFERS = threading.local()


def _piece_buffer(size: int) -> bytearray:
    """This thread's read buffer, of at least ``size`` bytes (reused: fresh memory for every
    read costs a page fault per 4 KiB)."""
    buffer: bytearray | None = getattr(_BUFFERS, "buffer", None)
    if buffer is None or len(buffer) < size:
        buffer = bytearray(max(size, PIECE_BYTES))
        if size <= 4 * PIECE_BYTES:
            _BUFFERS.buffer = buffer
    return buffer


def blocks(stream: IO[bytes], sync: bytes, path: str) -> Iterator[tuple[int, memoryview]]:
    """(row count, compressed bytes) of each block of an Avro file read from ``stream`` (at its
    first block) a piece at a time; each block's bytes are valid until the next is asked for."""
    buffer = _piece_buffer(PIECE_BYTES)
    view = memoryview(buffer)
    lo = hi = 0
    eof = False

    def fill(need: int) -> None:
        """Have at least ``need`` bytes from ``lo`` on in the buffer, unless the file ends."""
        nonlocal buffer, view, lo, hi, eof
        if hi - lo >= need or eof:
            return
        if need > len(buffer):
            bigger = bytearray(need + PIECE_BYTES)
            bigger[: hi - lo] = view[lo:hi]
            view.release()
            buffer, view = bigger, memoryview(bigger)
        elif lo:
            view[: hi - lo] = view[lo:hi]
        hi -= lo
        lo = 0
        while hi < need and not eof:
            got = stream.readinto(view[hi:])  # type: ignore[attr-defined]
            if not got:
                eof = True
            hi += got or 0

    while True:
        fill(20)
        if lo == hi:
            return
        count, lo = _varint(view[:hi], lo)
        length, lo = _varint(view[:hi], lo)
        if count < 0 or length < 0:
            raise CorruptTableError(f"Avro data file {path} has a block with a corrupt header")
        fill(length + 16)
        if hi - lo < length + 16:
            raise CorruptTableError(f"Avro data file {path} ends inside a block (truncated)")
        block = view[lo : lo + length]
        lo += length
        if view[lo : lo + 16] != sync:
            raise CorruptTableError(f"Avro data file {path} has a block without its sync marker")
        lo += 16
        yield count, block
        block.release()


@functools.cache
def _pool() -> ThreadPoolExecutor:
    """The threads that decode block groups ahead of their use (one per core)."""
    return ThreadPoolExecutor(available_cores(), thread_name_prefix="lakeops-avro")


if hasattr(os, "register_at_fork"):  # a forked child has none of its parent's threads
    os.register_at_fork(after_in_child=_pool.cache_clear)


class FlatDecoder:
    """Decodes the blocks of one flat file with a :class:`FlatPlan`."""

    def __init__(
        self,
        plan: FlatPlan,
        decompress: Callable[[Any], bytes | memoryview],
        kernel: Callable[..., tuple[int, int]],
        path: str,
    ) -> None:
        self.plan = plan
        self.decompress = decompress
        self.kernel = kernel
        self.path = path
        self.schema = pa.schema(
            [
                pa.field(n, t, bool(self._nullable(i)))
                for i, (n, t) in enumerate(zip(plan.names, plan.arrow, strict=True))
            ]
        )

    def _nullable(self, i: int) -> bool:
        return bool(self.plan.ops[self.plan.ops[:, 4] >= 0][i, 1])

    def chunks(self, stream: IO[bytes], sync: bytes, chunk_rows: int) -> Iterator[pa.Table]:
        """Tables of whole blocks of about ``chunk_rows`` rows, read from ``stream`` (at the
        first block)."""
        group: list[bytes | memoryview] = []
        counts: list[int] = []
        rows = 0
        pending: Future[pa.Table] | None = None
        for count, block in blocks(stream, sync, self.path):
            try:
                raw = self.decompress(block)
            except CorruptTableError:
                raise
            except Exception as exc:
                raise CorruptTableError(
                    f"cannot decompress a block of Avro data file {self.path}: {exc}"
                ) from exc
            if count > len(raw):  # every row takes a byte at least
                raise CorruptTableError(
                    f"Avro data file {self.path} has a block of {len(raw)} bytes that claims "
                    f"{count} rows"
                )
            group.append(raw)
            counts.append(count)
            rows += count
            if rows >= chunk_rows:
                # decoded on the pool (the loop holds no GIL) while the next group is read
                # and decompressed here and the previous one is used by the caller
                ahead = _pool().submit(self._decode, group, counts, rows)
                if pending is not None:
                    yield pending.result()
                pending = ahead
                group, counts, rows = [], [], 0
        if pending is not None:
            yield pending.result()
        if group:
            yield self._decode(group, counts, rows)

    def _decode(self, group: list[bytes | memoryview], counts: list[int], rows: int) -> pa.Table:
        plan = self.plan
        joined = b"".join(group) if len(group) > 1 else bytes(group[0])
        buf = np.frombuffer(joined, dtype=np.uint8)
        lengths = np.fromiter((len(g) for g in group), dtype=np.int64, count=len(group))
        ends = np.cumsum(lengths)
        starts = ends - lengths
        total = len(joined)
        if total >= 2**31:
            raise CorruptTableError(
                f"Avro data file {self.path} has a block group over 2 GiB; lakeops reads "
                "smaller blocks"
            )
        kinds = plan.kinds
        n_of = [0] * 7
        for k in kinds:
            n_of[_GROUP[k]] += 1
        nullable = int((plan.ops[plan.ops[:, 4] >= 0][:, 1] == 1).sum())
        bools = np.empty((n_of[0], rows), np.uint8)
        ints = np.empty((n_of[1], rows), np.int32)
        longs = np.empty((n_of[2], rows), np.int64)
        f4 = np.empty((n_of[3], rows * 4), np.uint8)
        f8 = np.empty((n_of[4], rows * 8), np.uint8)
        offsets = np.zeros((n_of[5], rows + 1), np.int32)
        data = np.empty((n_of[5], total), np.uint8)
        decs = np.empty((n_of[6], rows * 16), np.uint8)
        valid = np.empty((nullable, rows), np.uint8)
        code, block = self.kernel(
            buf,
            starts,
            ends,
            np.asarray(counts, dtype=np.int64),
            plan.ops,
            plan.record_branch,
            bools,
            ints,
            longs,
            f4,
            f8,
            offsets,
            data,
            decs,
            valid,
        )
        if code:
            raise CorruptTableError(
                f"Avro data file {self.path} is corrupt: {_ERRORS.get(code, code)} "
                f"(in block {block} of a group)"
            )
        arrays = []
        slot = [0] * 7
        valid_slot = 0
        for i, kind in enumerate(kinds):
            group_index = _GROUP[kind]
            s = slot[group_index]
            slot[group_index] += 1
            field = self.schema.field(i)
            validity = None
            null_count = 0
            if field.nullable:
                v = valid[valid_slot]
                valid_slot += 1
                null_count = rows - int(np.count_nonzero(v))
                if null_count:
                    validity = pa.py_buffer(np.packbits(v, bitorder="little"))
            buffers = (bools, ints, longs, f4, f8, offsets, data, decs)
            arrays.append(self._array(kind, s, field.type, rows, validity, null_count, buffers))
        return pa.Table.from_arrays(arrays, schema=self.schema)

    def _array(
        self,
        kind: int,
        s: int,
        arrow: pa.DataType,
        rows: int,
        validity: pa.Buffer | None,
        null_count: int,
        buffers: tuple[np.ndarray, ...],
    ) -> pa.Array:
        bools, ints, longs, f4, f8, offsets, data, decs = buffers
        if kind == _BOOL:
            values = pa.py_buffer(np.packbits(bools[s], bitorder="little"))
        elif kind == _INT:
            values = pa.py_buffer(ints[s])
        elif kind == _LONG:
            values = pa.py_buffer(longs[s])
        elif kind == _FLOAT:
            values = pa.py_buffer(f4[s])
        elif kind == _DOUBLE:
            values = pa.py_buffer(f8[s])
        elif kind in (_DEC_BYTES, _DEC_FIXED):
            values = pa.py_buffer(decs[s])
        else:
            used = int(offsets[s, rows])
            array = pa.Array.from_buffers(
                arrow,
                rows,
                [validity, pa.py_buffer(offsets[s]), pa.py_buffer(data[s, :used])],
                null_count=null_count,
            )
            if arrow == pa.string():
                try:
                    array.validate(full=True)
                except pa.ArrowInvalid as exc:
                    raise CorruptTableError(
                        f"Avro data file {self.path} holds a string that is not UTF-8: {exc}"
                    ) from exc
            return array
        return pa.Array.from_buffers(arrow, rows, [validity, values], null_count=null_count)
