"""Paimon's ``rbm64`` values in Java's byte layout, read and written a container at a time.

Java Paimon (``FieldRoaringBitmap64Agg`` through ``org.apache.paimon.utils.RoaringBitmap64``)
stores an ``rbm64`` state as ``Roaring64Bitmap.serialize`` after ``runOptimize``, of the
RoaringBitmap library it bundles (1.0.5 in Paimon 0.9, shaded). That is the library's own
ART-based layout, not the portable 64-bit specification that CRoaring (and so
``pyroaring.BitMap64.serialize``, which lakeops wrote before) implements. Both are read here;
only Java's is written.

Java's layout (RoaringBitmap 1.0.5, ``HighLowContainer.serialize(DataOutput)``; all integers
little-endian unless said otherwise)::

    u8      0 = empty (nothing follows), 1 = not empty
    u64     number of keys (the high 48 bits of the values, one leaf each)
    nodes   the adaptive radix tree over the 6 key bytes (big-endian: the values are unsigned
            64-bit, a Java ``long`` read as two's complement), pre-order: a node, then its
            children in ascending key byte. Header: u8 type (0 Node4, 1 Node16, 2 Node48,
            3 Node256, 4 leaf), u16 child count, u8 prefix length, the prefix bytes. Body:
            Node4 the 4 child key bytes, Node16 16 (each half of 8 in reverse order), Node48 256
            slot bytes (0xFF: no child; each group of 8 in reverse order), Node256 a 256-bit
            set; a leaf its 6 key bytes (big-endian) and u64 container index (first-level
            index << 32 | second-level index)
    u32     first-level size, then per first level: u8 0xFE (not trimmed), u32 second-level
            size, per slot: u8 0 (null) or 1, then u8 type (0 run, 1 bitmap, 2 array), i32
            cardinality and the container body (run: u16 count, u16 start/length-1 pairs;
            bitmap: 1024 u64 words; array: u16 values)
    u64     number of containers; i32 last first-level index; i32 last second-level index

CRoaring's portable 64-bit layout is a u64 bucket count, then per bucket its u32 high 32 bits
and a 32-bit portable roaring bitmap (cookie 12346 or 12347, …).

Telling them apart is a matter of structure, not a guess: byte 12 of a non-empty portable value
is the low byte of its first bucket's cookie (0x3A or 0x3B), while in Java's layout it is the
root node's prefix length (at most 6); an empty value is the single byte 0 in Java's layout and
8 zero bytes in the portable one. The chosen layout is then parsed in full (sizes, key order,
container contents, exact length); anything else raises :class:`DataValidationError`.

The containers of both layouts have the same bodies, so converting is copying container bytes
(numpy, one container at a time; an array of more than 4096 values or a bitmap of fewer, legal
in Java, is converted because the portable layout decides by cardinality).
"""

from __future__ import annotations

import itertools
import struct
from typing import Any

import numpy as np

from lakeops.errors import DataValidationError

__all__ = [
    "java_from_portable",
    "layout",
    "portable_from_any",
    "to_java",
    "values_of",
]

#: container types, as Java's layout numbers them
RUN, BITMAP, ARRAY = 0, 1, 2
_NODE4, _NODE16, _NODE48, _NODE256, _LEAF = 0, 1, 2, 3, 4
_MAX_CHILDREN = {_NODE4: 4, _NODE16: 16, _NODE48: 48, _NODE256: 256}
_KEY_BYTES = 6
_ARRAY_MAX = 4096
_BITMAP_BYTES = 8192
_COOKIE_NO_RUNS = 12346
_COOKIE = 12347
_NO_OFFSET_THRESHOLD = 4
_NOT_TRIMMED = 0xFE

#: one container: (key, type, cardinality, body bytes); the key is the high 48 bits (64-bit
#: layouts) or the high 16 bits (inside a 32-bit portable bitmap)
Container = tuple[int, int, int, bytes]


def _bad(message: str) -> DataValidationError:
    return DataValidationError(message)


class _Reader:
    """Bounds-checked little-endian reads over one value."""

    __slots__ = ("data", "pos", "what")

    def __init__(self, data: bytes, what: str, pos: int = 0) -> None:
        self.data = data
        self.pos = pos
        self.what = what

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.data):
            raise _bad(f"{self.what}: truncated at byte {self.pos} (needs {n} more)")
        out = self.data[self.pos : end]
        self.pos = end
        return out

    def u8(self) -> int:
        return self.take(1)[0]

    def u16(self) -> int:
        return int.from_bytes(self.take(2), "little")

    def u32(self) -> int:
        return int.from_bytes(self.take(4), "little")

    def i32(self) -> int:
        return int.from_bytes(self.take(4), "little", signed=True)

    def u64(self) -> int:
        return int.from_bytes(self.take(8), "little")

    def left(self) -> int:
        return len(self.data) - self.pos


# ------------------------------------------------------------------------- containers
def _check_container(kind: int, card: int | None, body: bytes, what: str) -> tuple[int, int]:
    """Validate a container body; return its (type, true cardinality)."""
    if kind == ARRAY:
        values = np.frombuffer(body, dtype="<u2")
        if values.size and not bool(np.all(values[1:] > values[:-1])):
            raise _bad(f"{what}: an array container is not strictly ascending")
        return ARRAY, int(values.size)
    if kind == BITMAP:
        count = int(np.unpackbits(np.frombuffer(body, dtype=np.uint8)).sum())
        if card is not None and card != count:
            raise _bad(f"{what}: a bitmap container says {card} values but holds {count}")
        return BITMAP, count
    if kind == RUN:
        runs = np.frombuffer(body, dtype="<u2")[1:].astype(np.int64)
        starts, lengths = runs[0::2], runs[1::2]
        ends = starts + lengths
        if bool(np.any(ends > 0xFFFF)) or bool(np.any(starts[1:] <= ends[:-1])):
            raise _bad(f"{what}: a run container's runs overlap or leave 16 bits")
        count = int((lengths + 1).sum())
        return RUN, count
    raise _bad(f"{what}: unknown container type {kind}")


def _array_to_bitmap(body: bytes) -> bytes:
    bits = np.zeros(1 << 16, dtype=bool)
    bits[np.frombuffer(body, dtype="<u2")] = True
    return np.packbits(bits, bitorder="little").tobytes()


def _bitmap_to_array(body: bytes) -> bytes:
    bits = np.unpackbits(np.frombuffer(body, dtype=np.uint8), bitorder="little")
    return np.flatnonzero(bits).astype("<u2").tobytes()


def _portable_shape(kind: int, card: int, body: bytes) -> tuple[int, bytes]:
    """The container as the portable layout must hold it (it tells array from bitmap by
    cardinality)."""
    if kind == ARRAY and card > _ARRAY_MAX:
        return BITMAP, _array_to_bitmap(body)
    if kind == BITMAP and card <= _ARRAY_MAX:
        return ARRAY, _bitmap_to_array(body)
    return kind, body


def _run_body(r: _Reader) -> bytes:
    start = r.pos
    runs = r.u16()
    r.take(4 * runs)
    return r.data[start : r.pos]


# ------------------------------------------------------------------------- Java's layout
def _parse_java(data: bytes, what: str) -> list[Container]:
    r = _Reader(data, f"{what} (Java Roaring64Bitmap layout)")
    tag = r.u8()
    if tag == 0:
        if r.left():
            raise _bad(f"{r.what}: {r.left()} bytes after the empty marker")
        return []
    if tag != 1:
        raise _bad(f"{r.what}: first byte {tag} is neither 0 (empty) nor 1")
    key_count = r.u64()
    if key_count == 0 or key_count > r.left():
        raise _bad(f"{r.what}: impossible key count {key_count}")
    leaves: list[tuple[int, int]] = []  # (key48, container index), in tree order
    _parse_node(r, b"", leaves, 0)
    if len(leaves) != key_count:
        raise _bad(f"{r.what}: header says {key_count} keys, the tree holds {len(leaves)}")
    keys = [k for k, _ in leaves]
    if any(b <= a for a, b in itertools.pairwise(keys)):
        raise _bad(f"{r.what}: keys are not in ascending order")
    # containers
    first_size = r.u32()
    if first_size > r.left():
        raise _bad(f"{r.what}: impossible first-level size {first_size}")
    slots: dict[int, tuple[int, int, bytes]] = {}
    for first in range(first_size):
        trimmed = r.u8()
        if trimmed != _NOT_TRIMMED:
            raise _bad(f"{r.what}: unknown trim mark {trimmed:#x}")
        second_size = r.u32()
        if second_size > r.left():
            raise _bad(f"{r.what}: impossible second-level size {second_size}")
        for second in range(second_size):
            mark = r.u8()
            if mark == 0:
                continue
            if mark != 1:
                raise _bad(f"{r.what}: null mark {mark} is neither 0 nor 1")
            kind = r.u8()
            card = r.i32()
            if kind == RUN:
                body = _run_body(r)
            elif kind == BITMAP:
                body = r.take(_BITMAP_BYTES)
            elif kind == ARRAY:
                if card < 0:
                    raise _bad(f"{r.what}: negative array cardinality {card}")
                body = r.take(2 * card)
            else:
                raise _bad(f"{r.what}: unknown container type {kind}")
            kind, true_card = _check_container(kind, card, body, r.what)
            slots[(first << 32) | second] = (kind, true_card, body)
    size = r.u64()
    r.i32(), r.i32()  # Java's insertion cursor: no meaning for the values
    if r.left():
        raise _bad(f"{r.what}: {r.left()} bytes after the containers")
    if size != len(slots):
        raise _bad(f"{r.what}: header says {size} containers, {len(slots)} are present")
    out: list[Container] = []
    used: set[int] = set()
    for key, index in leaves:
        found = slots.get(index)
        if found is None or index in used:
            raise _bad(f"{r.what}: key {key:#x} names a missing or shared container {index:#x}")
        used.add(index)
        kind, card, body = found
        if card:
            out.append((key, kind, card, body))
    return out


def _child_keys(r: _Reader, kind: int, count: int) -> list[int]:
    if kind == _NODE4:
        keys = list(r.take(4)[::-1][:count])
    elif kind == _NODE16:
        body = r.take(16)
        keys = list((body[7::-1] + body[:7:-1])[:count])
    elif kind == _NODE48:
        slots = np.frombuffer(r.take(256), dtype=np.uint8).reshape(32, 8)[:, ::-1].ravel()
        present = np.flatnonzero(slots != 0xFF)
        used = slots[present]
        if bool(np.any(used >= 48)) or np.unique(used).size != used.size:
            raise _bad(f"{r.what}: a Node48 has a bad or repeated child slot")
        keys = present.tolist()
    else:
        bits = np.unpackbits(np.frombuffer(r.take(32), dtype=np.uint8), bitorder="little")
        keys = np.flatnonzero(bits).tolist()
    if len(keys) != count:
        raise _bad(f"{r.what}: a node says {count} children, its keys name {len(keys)}")
    if any(b <= a for a, b in itertools.pairwise(keys)):
        raise _bad(f"{r.what}: a node's child keys are not ascending")
    return keys


def _parse_node(r: _Reader, path: bytes, leaves: list[tuple[int, int]], nodes: int) -> int:
    """Parse one node (and its subtree) at ``path``; return the nodes read so far."""
    nodes += 1
    if nodes > 2 * len(r.data):
        raise _bad(f"{r.what}: the tree does not end")
    kind = r.u8()
    count = r.u16()
    prefix = r.take(r.u8())
    if kind == _LEAF:
        # a leaf's prefix is left over from a shrunk node: Java ignores it, so do we
        key_bytes = r.take(_KEY_BYTES)
        index = r.u64()
        if key_bytes[: len(path)] != path:
            raise _bad(f"{r.what}: a leaf's key does not continue its path in the tree")
        leaves.append((int.from_bytes(key_bytes, "big"), index))
        return nodes
    if kind not in _MAX_CHILDREN:
        raise _bad(f"{r.what}: unknown node type {kind}")
    if not 1 <= count <= _MAX_CHILDREN[kind]:
        raise _bad(f"{r.what}: node type {kind} cannot have {count} children")
    below = path + prefix
    if len(below) >= _KEY_BYTES:
        raise _bad(f"{r.what}: a node's prefix runs past the 6 key bytes")
    for key in _child_keys(r, kind, count):
        nodes = _parse_node(r, below + bytes((key,)), leaves, nodes)
    return nodes


def _java_capacity(n: int) -> int:
    """The second-level array length Java has after adding ``n`` containers to a fresh bitmap
    (``Containers.grow``: steps of 1.5 times), so that a fresh Java bitmap and ours serialize
    alike."""
    capacity = 1
    for size in range(2, n + 1):
        if size > capacity:
            capacity = max(capacity + (capacity >> 1), size)
    return capacity


def _write_java(containers: list[Container]) -> bytes:
    if not containers:
        return b"\x00"
    keys = np.array([c[0] for c in containers], dtype=np.uint64)
    shifts = np.arange(8 * (_KEY_BYTES - 1), -1, -8, dtype=np.uint64)
    key_bytes = ((keys[:, None] >> shifts) & np.uint64(0xFF)).astype(np.uint8)
    parts: list[bytes] = [b"\x01", struct.pack("<Q", len(containers))]
    _write_node(key_bytes, 0, len(containers), 0, parts)
    n = len(containers)
    capacity = _java_capacity(n)
    parts.append(struct.pack("<IBI", 1, _NOT_TRIMMED, capacity))
    for _, kind, card, body in containers:
        parts.append(struct.pack("<BBi", 1, kind, card))
        parts.append(body)
    parts.append(b"\x00" * (capacity - n))
    parts.append(struct.pack("<Qii", n, 0, n - 1))
    return b"".join(parts)


def _write_node(key_bytes: np.ndarray, lo: int, hi: int, depth: int, parts: list[bytes]) -> None:
    if hi - lo == 1:
        parts.append(struct.pack("<BHB", _LEAF, 0, 0))
        parts.append(key_bytes[lo].tobytes())
        parts.append(struct.pack("<Q", lo))
        return
    first, last = key_bytes[lo], key_bytes[hi - 1]
    split = depth
    while first[split] == last[split]:
        split += 1
    column = key_bytes[lo:hi, split]
    starts = np.concatenate(([0], np.flatnonzero(column[1:] != column[:-1]) + 1))
    child = column[starts]
    count = len(starts)
    kind = next(k for k in (_NODE4, _NODE16, _NODE48, _NODE256) if count <= _MAX_CHILDREN[k])
    parts.append(struct.pack("<BHB", kind, count, split - depth))
    parts.append(first[depth:split].tobytes())
    if kind in (_NODE4, _NODE16):
        padded = np.zeros(_MAX_CHILDREN[kind], dtype=np.uint8)
        padded[:count] = child
        parts.append(padded.reshape(-1, min(8, padded.size))[:, ::-1].tobytes())
    elif kind == _NODE48:
        slots = np.full(256, 0xFF, dtype=np.uint8)
        slots[child] = np.arange(count, dtype=np.uint8)
        parts.append(slots.reshape(32, 8)[:, ::-1].tobytes())
    else:
        bits = np.zeros(256, dtype=bool)
        bits[child] = True
        parts.append(np.packbits(bits, bitorder="little").tobytes())
    ends = np.append(starts[1:], hi - lo)
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        _write_node(key_bytes, lo + s, lo + e, split + 1, parts)


# ------------------------------------------------------------------------- portable layouts
def _parse_portable32(r: _Reader) -> list[Container]:
    """One 32-bit portable roaring bitmap (the RoaringFormatSpec) from ``r.pos``; keys are the
    high 16 bits. Leaves ``r.pos`` just after it."""
    start = r.pos
    cookie = r.u32()
    if cookie & 0xFFFF == _COOKIE:
        size = (cookie >> 16) + 1
        flags = np.unpackbits(
            np.frombuffer(r.take((size + 7) // 8), dtype=np.uint8), bitorder="little"
        )[:size].astype(bool)
    elif cookie == _COOKIE_NO_RUNS:
        size = r.u32()
        if size > 1 << 16:
            raise _bad(f"{r.what}: {size} containers in a 32-bit bitmap")
        flags = np.zeros(size, dtype=bool)
    else:
        raise _bad(f"{r.what}: no roaring cookie at byte {start}")
    header = np.frombuffer(r.take(4 * size), dtype="<u2").reshape(size, 2).astype(np.int64)
    keys, cards = header[:, 0], header[:, 1] + 1
    if size and bool(np.any(keys[1:] <= keys[:-1])):
        raise _bad(f"{r.what}: container keys are not ascending")
    offsets = None
    if cookie == _COOKIE_NO_RUNS or size >= _NO_OFFSET_THRESHOLD:
        offsets = np.frombuffer(r.take(4 * size), dtype="<u4")
    out: list[Container] = []
    for i in range(size):
        if offsets is not None and int(offsets[i]) != r.pos - start:
            raise _bad(f"{r.what}: container {i} is not at its recorded offset")
        card = int(cards[i])
        if flags[i]:
            body = _run_body(r)
            kind = RUN
        elif card > _ARRAY_MAX:
            body, kind = r.take(_BITMAP_BYTES), BITMAP
        else:
            body, kind = r.take(2 * card), ARRAY
        kind, true_card = _check_container(kind, None, body, r.what)
        if true_card != card:
            raise _bad(f"{r.what}: container {i} says {card} values but holds {true_card}")
        out.append((int(keys[i]), kind, card, body))
    return out


def _parse_portable64(data: bytes, what: str) -> list[Container]:
    r = _Reader(data, f"{what} (portable 64-bit roaring layout)")
    buckets = r.u64()
    if buckets > r.left() // 12:
        raise _bad(f"{r.what}: impossible bucket count {buckets}")
    out: list[Container] = []
    previous = -1
    for _ in range(buckets):
        high = r.u32()
        if high <= previous:
            raise _bad(f"{r.what}: buckets are not in ascending order")
        previous = high
        out.extend(
            (high << 16 | key, kind, card, body) for key, kind, card, body in _parse_portable32(r)
        )
    if r.left():
        raise _bad(f"{r.what}: {r.left()} bytes after the last bucket")
    return out


def _write_portable64(containers: list[Container]) -> bytes:
    parts: list[bytes] = []
    buckets = 0
    i = 0
    while i < len(containers):
        high = containers[i][0] >> 16
        j = i
        while j < len(containers) and containers[j][0] >> 16 == high:
            j += 1
        group = [(c[0] & 0xFFFF, *_reshape(c)) for c in containers[i:j]]
        parts.append(struct.pack("<I", high))
        parts.append(_write_portable32(group))
        buckets += 1
        i = j
    return struct.pack("<Q", buckets) + b"".join(parts)


def _reshape(c: Container) -> tuple[int, int, bytes]:
    kind, body = _portable_shape(c[1], c[2], c[3])
    return kind, c[2], body


def _write_portable32(group: list[tuple[int, int, int, bytes]]) -> bytes:
    size = len(group)
    runs = np.array([kind == RUN for _, kind, _, _ in group], dtype=bool)
    header = struct.pack(f"<{2 * size}H", *[v for k, _, c, _ in group for v in (k, c - 1)])
    if runs.any():
        head = struct.pack("<I", _COOKIE | (size - 1) << 16)
        head += np.packbits(runs, bitorder="little").tobytes() + header
        with_offsets = size >= _NO_OFFSET_THRESHOLD
    else:
        head = struct.pack("<II", _COOKIE_NO_RUNS, size) + header
        with_offsets = True
    bodies = [body for _, _, _, body in group]
    if with_offsets:
        base = len(head) + 4 * size
        sizes = np.array([len(b) for b in bodies], dtype=np.int64)
        offsets = base + np.concatenate(([0], np.cumsum(sizes)[:-1]))
        head += offsets.astype("<u4").tobytes()
    return head + b"".join(bodies)


# ------------------------------------------------------------------------- public surface
def layout(data: bytes, what: str = "rbm64 value") -> str:
    """``"java"`` or ``"portable"``, told by structure (see the module docstring); raises
    :class:`DataValidationError` for bytes that are neither."""
    n = len(data)
    if n == 1 and data[0] == 0:
        return "java"
    if n == 8 and data == bytes(8):
        return "portable"
    if n >= 14 and data[12] in (0x3A, 0x3B) and data[13] == 0x30:
        return "portable"
    if n >= 14 and data[0] == 1 and data[12] <= _KEY_BYTES:
        return "java"
    head = bytes(data[:16]).hex()
    raise _bad(
        f"{what}: {n} bytes (starting {head}) are neither Java Paimon's Roaring64Bitmap layout "
        "nor the portable 64-bit roaring layout"
    )


def _containers(data: bytes, what: str) -> list[Container]:
    data = bytes(data)
    if layout(data, what) == "java":
        return _parse_java(data, what)
    return _parse_portable64(data, what)


def portable_from_any(data: bytes, what: str = "rbm64 value") -> bytes:
    """The portable 64-bit layout (``pyroaring.BitMap64.deserialize`` reads it) of a value in
    either layout."""
    data = bytes(data)
    if layout(data, what) == "portable":
        _parse_portable64(data, what)
        return data  # validated; already the right layout
    return _write_portable64(_parse_java(data, what))


def java_from_portable(data: bytes, what: str = "rbm64 value") -> bytes:
    """Java Paimon's layout of a portable 64-bit value (e.g. ``BitMap64.serialize()``)."""
    return _write_java(_parse_portable64(bytes(data), what))


def to_java(data: Any, what: str = "rbm64 value") -> bytes:
    """Java Paimon's layout of a value in either layout, or of a ``pyroaring.BitMap64`` (run
    containers chosen as Java's ``runOptimize`` does)."""
    if isinstance(data, bytes | bytearray | memoryview):
        raw = bytes(data)
        if layout(raw, what) == "java":
            _parse_java(raw, what)
            return raw
        return java_from_portable(raw, what)
    bitmap = data.copy()
    bitmap.run_optimize()
    return java_from_portable(bytes(bitmap.serialize()), what)


def values_of(data: bytes, what: str = "rbm64 value") -> np.ndarray:
    """Every value of an ``rbm64`` value in either layout, ascending, as unsigned 64-bit."""
    chunks = []
    for key, kind, _card, body in _containers(data, what):
        if kind == ARRAY:
            low = np.frombuffer(body, dtype="<u2").astype(np.uint64)
        elif kind == BITMAP:
            bits = np.unpackbits(np.frombuffer(body, dtype=np.uint8), bitorder="little")
            low = np.flatnonzero(bits).astype(np.uint64)
        else:
            runs = np.frombuffer(body, dtype="<u2")[1:].astype(np.int64)
            starts, lengths = runs[0::2], runs[1::2] + 1
            offsets = np.arange(int(lengths.sum())) - np.repeat(
                np.cumsum(lengths) - lengths, lengths
            )
            low = (np.repeat(starts, lengths) + offsets).astype(np.uint64)
        chunks.append((np.uint64(key) << np.uint64(16)) | low)
    if not chunks:
        return np.zeros(0, dtype=np.uint64)
    return np.concatenate(chunks)
