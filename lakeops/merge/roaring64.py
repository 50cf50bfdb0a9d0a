"""Paimon's ``rbm64`` values in Java's byte layout, read and written a container at a time.

Java Paimon (``FieldRoaringBitmap64Agg`` through ``org.apache.paimon.utils.RoaringBitmap64``)
stores an ``rbm64`` state as ``Roaring64Bitmap.serialize`` after ``runOptimize``, of the
RoaringBitmap library it bundles (1.0.5 in Paimon 0.9, shaded). That is the library's own
ART-based layout (unchanged through RoaringBitmap 1.2.1, which Paimon 1.x bundles, and 1.3),
not the portable 64-bit specification that CRoaring (and so
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

import struct
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from lakeops.errors import DataValidationError

__all__ = [
    "Containers",
    "containers_of",
    "java_from_portable",
    "layout",
    "portable_from_any",
    "portable_mask",
    "to_java",
    "to_java_array",
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
_BODY_BYTES = {_NODE4: 4, _NODE16: 16, _NODE48: 256, _NODE256: 32}
_SHIFTS = np.arange(8 * (_KEY_BYTES - 1), -1, -8, dtype=np.uint64)
_MARK_KIND_CARD = struct.Struct("<BBi")


class Containers(NamedTuple):
    """Containers in ascending key order: the key (the high 48 bits of the values), the type
    (:data:`RUN`, :data:`BITMAP`, :data:`ARRAY`), the cardinality and the body bytes (the same
    bytes in both layouts)."""

    keys: np.ndarray  # uint64
    kinds: np.ndarray  # uint8
    cards: np.ndarray  # int64
    bodies: list[bytes]


_EMPTY = Containers(np.zeros(0, np.uint64), np.zeros(0, np.uint8), np.zeros(0, np.int64), [])


def _bad(message: str) -> DataValidationError:
    return DataValidationError(message)


def _need(data: bytes, end: int, what: str) -> None:
    if end > len(data):
        raise _bad(f"{what}: truncated ({len(data)} bytes, needs {end})")


# ------------------------------------------------------------------------- containers
def _check_bodies(kinds: np.ndarray, cards: np.ndarray, bodies: list[bytes], what: str) -> None:
    """Every container body is what its type and cardinality say (whole arrays at once)."""
    arrays = np.flatnonzero(kinds == ARRAY)
    if arrays.size:
        values = np.frombuffer(b"".join(bodies[i] for i in arrays), dtype="<u2")
        ascending = values[1:] > values[:-1]
        lengths = cards[arrays]
        firsts = np.cumsum(lengths)[:-1]  # where a new container starts
        ascending[firsts[(firsts > 0) & (firsts < values.size)] - 1] = True
        if values.size != int(lengths.sum()) or not bool(ascending.all()):
            raise _bad(f"{what}: an array container is not strictly ascending")
    bitmaps = np.flatnonzero(kinds == BITMAP)
    if bitmaps.size:
        words = np.frombuffer(b"".join(bodies[i] for i in bitmaps), dtype=np.uint8)
        counts = np.unpackbits(words.reshape(bitmaps.size, _BITMAP_BYTES), axis=1).sum(axis=1)
        if not np.array_equal(counts, cards[bitmaps]):
            raise _bad(f"{what}: a bitmap container's cardinality disagrees with its bits")
    for i in np.flatnonzero(kinds == RUN).tolist():
        runs = np.frombuffer(bodies[i], dtype="<u2")[1:].astype(np.int64)
        starts, lengths = runs[0::2], runs[1::2]
        ends = starts + lengths
        if bool(np.any(ends > 0xFFFF)) or bool(np.any(starts[1:] <= ends[:-1])):
            raise _bad(f"{what}: a run container's runs overlap or leave 16 bits")
        if int((lengths + 1).sum()) != int(cards[i]):
            raise _bad(f"{what}: a run container's cardinality disagrees with its runs")


def _array_to_bitmap(body: bytes) -> bytes:
    bits = np.zeros(1 << 16, dtype=bool)
    bits[np.frombuffer(body, dtype="<u2")] = True
    return np.packbits(bits, bitorder="little").tobytes()


def _bitmap_to_array(body: bytes) -> bytes:
    bits = np.unpackbits(np.frombuffer(body, dtype=np.uint8), bitorder="little")
    return np.flatnonzero(bits).astype("<u2").tobytes()


def _portable_shape(c: Containers) -> Containers:
    """The containers as the portable layout must hold them: it tells an array from a bitmap by
    cardinality, Java need not (an array of more than 4096 values, a bitmap of fewer)."""
    big_arrays = (c.kinds == ARRAY) & (c.cards > _ARRAY_MAX)
    small_bitmaps = (c.kinds == BITMAP) & (c.cards <= _ARRAY_MAX)
    if not (big_arrays.any() or small_bitmaps.any()):
        return c
    kinds, bodies = c.kinds.copy(), list(c.bodies)
    for i in np.flatnonzero(big_arrays).tolist():
        kinds[i], bodies[i] = BITMAP, _array_to_bitmap(bodies[i])
    for i in np.flatnonzero(small_bitmaps).tolist():
        kinds[i], bodies[i] = ARRAY, _bitmap_to_array(bodies[i])
    return Containers(c.keys, kinds, c.cards, bodies)


# ------------------------------------------------------------------------- Java's layout
def _parse_java(data: bytes, what: str) -> Containers:
    what = f"{what} (Java Roaring64Bitmap layout)"
    _need(data, 1, what)
    if data[0] == 0:
        if len(data) != 1:
            raise _bad(f"{what}: {len(data) - 1} bytes after the empty marker")
        return _EMPTY
    if data[0] != 1:
        raise _bad(f"{what}: first byte {data[0]} is neither 0 (empty) nor 1")
    key48, slots, pos = _parse_keys(data, what)
    found, pos = _parse_containers(data, pos, what)
    return _assemble(data, pos, key48, slots, found, what)


def _parse_keys(data: bytes, what: str) -> tuple[np.ndarray, list[int], int]:
    """The header's key count and the tree after it: the 48-bit high keys (ascending), the
    container slot of each, and the position after the tree."""
    _need(data, 9, what)
    key_count = int.from_bytes(data[1:9], "little")
    if key_count == 0 or key_count > len(data) // 18:
        raise _bad(f"{what}: impossible key count {key_count}")
    keys: list[bytes] = []
    slots: list[int] = []
    pos = _parse_node(data, 9, b"", keys, slots, what)
    if len(slots) != key_count:
        raise _bad(f"{what}: header says {key_count} keys, the tree holds {len(slots)}")
    key_bytes = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(-1, _KEY_BYTES)
    key48 = (key_bytes.astype(np.uint64) << _SHIFTS).sum(axis=1, dtype=np.uint64)
    if bool(np.any(key48[1:] <= key48[:-1])):
        raise _bad(f"{what}: keys are not in ascending order")
    return key48, slots, pos


def _parse_containers(
    data: bytes, pos: int, what: str
) -> tuple[dict[int, tuple[int, int, bytes]], int]:
    """The containers, by slot (first-level index << 32 | second-level index), and the
    position after them."""
    n = len(data)
    _need(data, pos + 4, what)
    first_size = int.from_bytes(data[pos : pos + 4], "little")
    pos += 4
    if first_size > n - pos:
        raise _bad(f"{what}: impossible first-level size {first_size}")
    found: dict[int, tuple[int, int, bytes]] = {}
    for first in range(first_size):
        _need(data, pos + 5, what)
        if data[pos] != _NOT_TRIMMED:
            raise _bad(f"{what}: unknown trim mark {data[pos]:#x}")
        second_size = int.from_bytes(data[pos + 1 : pos + 5], "little")
        pos += 5
        if second_size > n - pos:
            raise _bad(f"{what}: impossible second-level size {second_size}")
        pos = _parse_second_level(data, pos, first << 32, second_size, found, what)
    return found, pos


def _container_size(data: bytes, pos: int, kind: int, card: int, what: str) -> int:
    """The body size of the container entry at ``pos`` (of ``kind`` and ``card``)."""
    if kind == ARRAY:
        return 2 * card
    if kind == BITMAP:
        return _BITMAP_BYTES
    if kind == RUN and pos + 8 <= len(data):
        return 2 + 4 * (data[pos + 6] | data[pos + 7] << 8)
    raise _bad(f"{what}: unknown container type {kind} or truncated container")


def _parse_second_level(
    data: bytes,
    pos: int,
    base: int,
    second_size: int,
    found: dict[int, tuple[int, int, bytes]],
    what: str,
) -> int:
    """The ``second_size`` entries (a null mark, or a container) of one first-level slot,
    into ``found``; the position after them."""
    n = len(data)
    unpack = _MARK_KIND_CARD.unpack_from
    second = 0
    while second < second_size:
        if pos >= n:
            raise _bad(f"{what}: truncated in the containers")
        mark = data[pos]
        if mark == 0:
            pos += 1
            second += 1
            continue
        if mark != 1 or pos + 6 > n:
            raise _bad(f"{what}: bad null mark {mark} or truncated container")
        _, kind, card = unpack(data, pos)
        entry = 6 + _container_size(data, pos, kind, card, what)
        if card < 0 or pos + entry > n:
            raise _bad(f"{what}: a container runs past the end")
        same = 1
        if kind != RUN and data[pos + entry : pos + entry + 6] == data[pos : pos + 6]:
            same = _same_entries(data, pos, entry, second_size - second)
        for i in range(same):
            at = pos + i * entry
            found[base | (second + i)] = (kind, card, data[at + 6 : at + entry])
        pos += same * entry
        second += same
    return pos


def _assemble(
    data: bytes,
    pos: int,
    key48: np.ndarray,
    slots: list[int],
    found: dict[int, tuple[int, int, bytes]],
    what: str,
) -> Containers:
    """The containers of the keys, in key order, once the trailer agrees with them."""
    if pos + 16 != len(data):
        raise _bad(f"{what}: the value does not end after the containers")
    if int.from_bytes(data[pos : pos + 8], "little") != len(found):
        raise _bad(f"{what}: the container count disagrees with the containers present")
    if len(set(slots)) != len(slots) or any(slot not in found for slot in slots):
        raise _bad(f"{what}: a key names a missing or shared container")
    picked = [found[slot] for slot in slots]
    kinds = np.array([p[0] for p in picked], dtype=np.uint8)
    cards = np.array([p[1] for p in picked], dtype=np.int64)
    bodies = [p[2] for p in picked]
    _check_bodies(kinds, cards, bodies, what)
    keep = cards > 0  # an empty container holds nothing
    if not keep.all():
        return Containers(
            key48[keep],
            kinds[keep],
            cards[keep],
            [b for b, k in zip(bodies, keep, strict=True) if k],
        )
    return Containers(key48, kinds, cards, bodies)


def _same_entries(data: bytes, pos: int, entry: int, most: int) -> int:
    """How many container entries from ``pos`` (at most ``most``) share the header of the first:
    consecutive array or bitmap containers of one cardinality (a sparse bitmap is mostly
    single-value arrays), found in windows that double, so a long run costs whole-array work
    and a short one a single comparison."""
    head = np.frombuffer(data, dtype=np.uint8, count=6, offset=pos)
    done = 0
    window = 8
    while done < most:
        rows = min(window, most - done, (len(data) - pos) // entry - done)
        if rows <= 0:
            break
        block = np.frombuffer(data, dtype=np.uint8, count=rows * entry, offset=pos + done * entry)
        match = (block.reshape(rows, entry)[:, :6] == head).all(axis=1)
        if not match.all():
            return done + int(np.argmin(match))
        done += rows
        window *= 2
    return max(done, 1)


def _child_keys(kind: int, body: bytes, count: int, what: str) -> bytes:
    """The key byte of each child of an inner node, ascending, from the node's body."""
    if kind in (_NODE4, _NODE16):
        children = (body[7::-1] + body[:7:-1])[:count] if kind == _NODE16 else body[::-1][:count]
    elif kind == _NODE48:
        slot = np.frombuffer(body, dtype=np.uint8).reshape(32, 8)[:, ::-1].ravel()
        present = np.flatnonzero(slot != 0xFF)
        used = slot[present]
        if bool(np.any(used >= 48)) or np.unique(used).size != used.size:
            raise _bad(f"{what}: a Node48 has a bad or repeated child slot")
        children = present.astype(np.uint8).tobytes()
    else:
        bits = np.unpackbits(np.frombuffer(body, dtype=np.uint8), bitorder="little")
        children = np.flatnonzero(bits).astype(np.uint8).tobytes()
    if len(children) != count:
        raise _bad(f"{what}: a node says {count} children, its keys name {len(children)}")
    if len(children) > 1 and bool(
        np.any(np.diff(np.frombuffer(children, dtype=np.uint8).astype(np.int16)) <= 0)
    ):
        raise _bad(f"{what}: a node's child keys are not ascending")
    return children


def _leaf_block(
    data: bytes,
    pos: int,
    below: bytes,
    children: bytes,
    keys: list[bytes],
    slots: list[int],
    what: str,
) -> int | None:
    """A node of leaves only (the common bottom of the tree) read as one array: row i is the
    i-th child exactly when rows 0..i-1 are leaves of 18 bytes, as checked here. The position
    after the leaves, or None when the children are not all plain leaves."""
    count = len(children)
    if pos + 18 * count > len(data):
        return None
    rows = np.frombuffer(data, dtype=np.uint8, count=18 * count, offset=pos).reshape(count, 18)
    if not (bool((rows[:, 0] == _LEAF).all()) and not rows[:, 3].any()):
        return None
    depth = len(below)
    leaf_keys = rows[:, 4:10]
    if not (
        (leaf_keys[:, :depth] == np.frombuffer(below, dtype=np.uint8)).all()
        and np.array_equal(leaf_keys[:, depth], np.frombuffer(children, dtype=np.uint8))
    ):
        raise _bad(f"{what}: a leaf's key does not continue its path in the tree")
    keys.append(leaf_keys.tobytes())
    slots.extend(np.ascontiguousarray(rows[:, 10:18]).view("<u8").ravel().tolist())
    return pos + 18 * count


def _parse_node(
    data: bytes, pos: int, path: bytes, keys: list[bytes], slots: list[int], what: str
) -> int:
    """Parse the node at ``pos`` (and its subtree) at ``path``; return the position after it."""
    if pos + 4 > len(data):
        raise _bad(f"{what}: truncated in the tree")
    kind, count, prefix_length = data[pos], data[pos + 1] | data[pos + 2] << 8, data[pos + 3]
    pos += 4
    if kind == _LEAF:
        # a leaf's prefix is left over from a shrunk node: Java ignores it, so do we
        pos += prefix_length
        end = pos + _KEY_BYTES + 8
        if end > len(data):
            raise _bad(f"{what}: truncated in the tree")
        key = data[pos : pos + _KEY_BYTES]
        if key[: len(path)] != path:
            raise _bad(f"{what}: a leaf's key does not continue its path in the tree")
        keys.append(key)
        slots.append(int.from_bytes(data[pos + _KEY_BYTES : end], "little"))
        return end
    limit = _MAX_CHILDREN.get(kind)
    if limit is None or not 1 <= count <= limit:
        raise _bad(f"{what}: node type {kind} with {count} children")
    below = path + data[pos : pos + prefix_length]
    pos += prefix_length
    if len(below) >= _KEY_BYTES:
        raise _bad(f"{what}: a node's prefix runs past the 6 key bytes")
    size = _BODY_BYTES[kind]
    if pos + size > len(data):
        raise _bad(f"{what}: truncated in the tree")
    body = data[pos : pos + size]
    pos += size
    children = _child_keys(kind, body, count, what)
    if count >= 8:
        after = _leaf_block(data, pos, below, children, keys, slots, what)
        if after is not None:
            return after
    depth = len(below)
    end = len(data)
    for child in children:
        if pos + 18 <= end and data[pos] == _LEAF and data[pos + 3] == 0:  # a leaf, inline
            key = data[pos + 4 : pos + 10]
            if key[:depth] != below or key[depth] != child:
                raise _bad(f"{what}: a leaf's key does not continue its path in the tree")
            keys.append(key)
            slots.append(int.from_bytes(data[pos + 10 : pos + 18], "little"))
            pos += 18
        else:
            pos = _parse_node(data, pos, below + bytes((child,)), keys, slots, what)
    return pos


def _java_capacity(n: int) -> int:
    """The second-level array length Java has after adding ``n`` containers to a fresh bitmap
    (``Containers.grow``: steps of 1.5 times), so that a fresh Java bitmap and ours serialize
    alike."""
    capacity = 1
    while capacity < n:
        capacity = max(capacity + (capacity >> 1), capacity + 1)
    return capacity


def _write_java(c: Containers) -> bytes:
    n = len(c.bodies)
    if n == 0:
        return b"\x00"
    key_bytes = ((c.keys[:, None] >> _SHIFTS) & np.uint64(0xFF)).astype(np.uint8)
    leaves = np.zeros((n, 18), dtype=np.uint8)
    leaves[:, 0] = _LEAF
    leaves[:, 4:10] = key_bytes
    leaves[:, 10:18] = np.arange(n, dtype="<u8").view(np.uint8).reshape(n, 8)
    blob = leaves.tobytes()
    pieces = [blob[18 * i : 18 * i + 18] for i in range(n)]
    firsts, depths, nodes = _inner_nodes(key_bytes)
    if nodes:
        order = np.lexsort(
            (np.concatenate((depths, np.full(n, 99))), np.concatenate((firsts, np.arange(n))))
        )
        everything = nodes + pieces
        pieces = [everything[i] for i in order.tolist()]
    capacity = _java_capacity(n)
    heads = np.zeros((n, 6), dtype=np.uint8)
    heads[:, 0] = 1
    heads[:, 1] = c.kinds
    heads[:, 2:6] = c.cards.astype("<i4").view(np.uint8).reshape(n, 4)
    head_blob = heads.tobytes()
    return b"".join(
        [
            b"\x01",
            struct.pack("<Q", n),
            *pieces,
            struct.pack("<IBI", 1, _NOT_TRIMMED, capacity),
            *[x for i, body in enumerate(c.bodies) for x in (head_blob[6 * i : 6 * i + 6], body)],
            b"\x00" * (capacity - n),
            struct.pack("<Qii", n, 0, n - 1),
        ]
    )


def _inner_nodes(key_bytes: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[bytes]]:
    """The inner nodes of the radix tree over sorted distinct keys, as Java builds it from
    ascending inserts: one node per lcp-interval (a maximal run of neighbours sharing at least
    ``d`` bytes, some exactly ``d``), branching on byte ``d``, its prefix the bytes since its
    parent's branch byte, its type the smallest that holds its children. Returns each node's
    first key index, its branch depth and its serialized header and body (pre-order is then
    by first key, shallower first, leaves last)."""
    n = key_bytes.shape[0]
    if n < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), []
    lcp = np.argmax(key_bytes[1:] != key_bytes[:-1], axis=1)  # keys are distinct
    bounded = np.concatenate(([-1], lcp, [-1]))
    firsts: list[np.ndarray] = []
    depths: list[np.ndarray] = []
    nodes: list[bytes] = []
    for depth in range(_KEY_BYTES):
        inside = np.concatenate(([False], lcp >= depth, [False])).astype(np.int8)
        edges = np.diff(inside)
        starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)  # lcp [s, e)
        exact = np.concatenate(([0], np.cumsum(lcp == depth)))
        real = exact[ends] > exact[starts]
        starts, ends = starts[real], ends[real]
        if not starts.size:
            continue
        parents = np.maximum(bounded[starts], bounded[ends + 1])
        splits = np.flatnonzero(lcp == depth) + 1  # first key of every child but the first
        owner = np.searchsorted(starts, splits - 1, side="right") - 1
        child_firsts = np.concatenate((starts, splits))
        child_owner = np.concatenate((np.arange(starts.size), owner))
        by_owner = np.lexsort((child_firsts, child_owner))
        child_bytes = key_bytes[child_firsts[by_owner], depth].tobytes()
        counts = np.bincount(child_owner, minlength=starts.size)
        offsets = np.concatenate(([0], np.cumsum(counts)))
        for i in range(starts.size):
            children = child_bytes[offsets[i] : offsets[i + 1]]
            prefix = key_bytes[starts[i], parents[i] + 1 : depth].tobytes()
            nodes.append(_inner_node(children, prefix))
        firsts.append(starts)
        depths.append(np.full(starts.size, depth))
    return np.concatenate(firsts), np.concatenate(depths), nodes


def _inner_node(children: bytes, prefix: bytes) -> bytes:
    count = len(children)
    head = struct.pack("<BHB", 0, count, len(prefix)) + prefix
    if count <= 4:
        return head + children.ljust(4, b"\x00")[::-1]
    if count <= 16:
        padded = children.ljust(16, b"\x00")
        return bytes((_NODE16,)) + head[1:] + padded[7::-1] + padded[:7:-1]
    keys = np.frombuffer(children, dtype=np.uint8)
    if count <= 48:
        slots = np.full(256, 0xFF, dtype=np.uint8)
        slots[keys] = np.arange(count, dtype=np.uint8)
        return bytes((_NODE48,)) + head[1:] + slots.reshape(32, 8)[:, ::-1].tobytes()
    bits = np.zeros(256, dtype=bool)
    bits[keys] = True
    return bytes((_NODE256,)) + head[1:] + np.packbits(bits, bitorder="little").tobytes()


# ------------------------------------------------------------------------- portable layouts
def _parse_portable64(data: bytes, what: str) -> Containers:
    what = f"{what} (portable 64-bit roaring layout)"
    n = len(data)
    _need(data, 8, what)
    buckets = int.from_bytes(data[:8], "little")
    if buckets > (n - 8) // 12:
        raise _bad(f"{what}: impossible bucket count {buckets}")
    pos = 8
    keys: list[np.ndarray] = []
    kinds: list[np.ndarray] = []
    cards: list[np.ndarray] = []
    bodies: list[bytes] = []
    previous = -1
    for _ in range(buckets):
        _need(data, pos + 4, what)
        high = int.from_bytes(data[pos : pos + 4], "little")
        if high <= previous:
            raise _bad(f"{what}: buckets are not in ascending order")
        previous = high
        pos, low, kind, card = _parse_portable32(data, pos + 4, bodies, what)
        keys.append((np.uint64(high) << np.uint64(16)) | low.astype(np.uint64))
        kinds.append(kind)
        cards.append(card)
    if pos != n:
        raise _bad(f"{what}: {n - pos} bytes after the last bucket")
    if not bodies:
        return _EMPTY
    out = Containers(np.concatenate(keys), np.concatenate(kinds), np.concatenate(cards), bodies)
    _check_bodies(out.kinds, out.cards, out.bodies, what)
    return out


def _parse_portable32(
    data: bytes, pos: int, bodies: list[bytes], what: str
) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """One 32-bit portable roaring bitmap (the RoaringFormatSpec) at ``pos``: its bodies are
    appended to ``bodies``; returns the position after it, the 16-bit keys, types and
    cardinalities (checked against the bodies by the caller)."""
    start = pos
    _need(data, pos + 8, what)
    cookie = int.from_bytes(data[pos : pos + 4], "little")
    if cookie & 0xFFFF == _COOKIE:
        size = (cookie >> 16) + 1
        pos += 4
        _need(data, pos + (size + 7) // 8, what)
        flags = np.frombuffer(data, dtype=np.uint8, count=(size + 7) // 8, offset=pos)
        runs = np.unpackbits(flags, bitorder="little")[:size].astype(bool)
        pos += (size + 7) // 8
    elif cookie == _COOKIE_NO_RUNS:
        size = int.from_bytes(data[pos + 4 : pos + 8], "little")
        if size > 1 << 16:
            raise _bad(f"{what}: {size} containers in a 32-bit bitmap")
        runs = np.zeros(size, dtype=bool)
        pos += 8
    else:
        raise _bad(f"{what}: no roaring cookie at byte {start}")
    _need(data, pos + 4 * size, what)
    header = np.frombuffer(data, dtype="<u2", count=2 * size, offset=pos).reshape(size, 2)
    pos += 4 * size
    keys, cards = header[:, 0], header[:, 1].astype(np.int64) + 1
    if bool(np.any(keys[1:] <= keys[:-1])):
        raise _bad(f"{what}: container keys are not ascending")
    offsets = None
    if cookie == _COOKIE_NO_RUNS or size >= _NO_OFFSET_THRESHOLD:
        _need(data, pos + 4 * size, what)
        offsets = np.frombuffer(data, dtype="<u4", count=size, offset=pos)
        pos += 4 * size
    sizes = np.where(cards > _ARRAY_MAX, _BITMAP_BYTES, 2 * cards)
    kinds = np.where(cards > _ARRAY_MAX, BITMAP, ARRAY).astype(np.uint8)
    kinds[runs] = RUN
    for i in np.flatnonzero(runs).tolist():  # a run container's size is in its body
        at = pos + int(sizes[:i].sum()) if offsets is None else start + int(offsets[i])
        _need(data, at + 2, what)
        sizes[i] = 2 + 4 * (data[at] | data[at + 1] << 8)
    places = pos + np.concatenate(([0], np.cumsum(sizes)))
    if offsets is not None and not np.array_equal(offsets, places[:-1] - start):
        raise _bad(f"{what}: a container is not at its recorded offset")
    end = int(places[-1])
    _need(data, end, what)
    bodies.extend(data[a:b] for a, b in zip(places[:-1].tolist(), places[1:].tolist(), strict=True))
    return end, keys, kinds, cards


def _write_portable64(c: Containers) -> bytes:
    c = _portable_shape(c)
    n = len(c.bodies)
    if n == 0:
        return bytes(8)
    highs = c.keys >> np.uint64(16)
    starts = np.flatnonzero(np.concatenate(([True], highs[1:] != highs[:-1])))
    ends = np.append(starts[1:], n)
    header = np.empty((n, 2), dtype="<u2")
    header[:, 0] = (c.keys & np.uint64(0xFFFF)).astype(np.uint16)
    header[:, 1] = (c.cards - 1).astype(np.uint16)
    header_blob = header.tobytes()
    sizes = np.array([len(b) for b in c.bodies], dtype=np.int64)
    within = np.cumsum(sizes) - sizes  # body offset from the first body of the whole value
    runs = c.kinds == RUN
    pieces = [struct.pack("<Q", starts.size)]
    for lo, hi, high in zip(starts.tolist(), ends.tolist(), highs[starts].tolist(), strict=True):
        size = hi - lo
        bucket_runs = runs[lo:hi]
        if bucket_runs.any():
            head = struct.pack("<II", high, _COOKIE | (size - 1) << 16)
            head += np.packbits(bucket_runs, bitorder="little").tobytes()
            with_offsets = size >= _NO_OFFSET_THRESHOLD
        else:
            head = struct.pack("<III", high, _COOKIE_NO_RUNS, size)
            with_offsets = True
        pieces.append(head)
        pieces.append(header_blob[4 * lo : 4 * hi])
        if with_offsets:
            first = (len(head) - 4) + 8 * size  # after the cookie part, header and offsets
            offsets = within[lo:hi] - within[lo] + first
            pieces.append(offsets.astype("<u4").tobytes())
        pieces.extend(c.bodies[lo:hi])
    return b"".join(pieces)


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


def containers_of(data: bytes, what: str = "rbm64 value") -> Containers:
    """The containers of a value in either layout, checked in full."""
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
        return data  # checked; already the right layout
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


def portable_mask(values: pa.Array) -> np.ndarray:
    """Which values of a binary array are in the portable layout, told by the same structure as
    :func:`layout` (8 zero bytes, or a cookie's bytes at 12 and 13), over the whole array at once;
    nulls are ``False``. The values it marks are then parsed in full by :func:`to_java`."""
    arr = values.cast(pa.large_binary()) if values.type != pa.large_binary() else values
    n = len(arr)
    if n == 0:
        return np.zeros(0, dtype=bool)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset : arr.offset + n + 1]
    data = arr.buffers()[2]
    raw = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    starts, lengths = offsets[:-1], np.diff(offsets)
    valid = ~np.asarray(arr.is_null(), dtype=bool)
    long = valid & (lengths >= 14)
    at12 = raw[np.where(long, starts + 12, 0)] if raw.size else np.zeros(n, np.uint8)
    at13 = raw[np.where(long, starts + 13, 0)] if raw.size else np.zeros(n, np.uint8)
    cookie = long & ((at12 == 0x3A) | (at12 == 0x3B)) & (at13 == 0x30)
    eight = valid & (lengths == 8)
    if eight.any():
        rows = np.flatnonzero(eight)
        window = raw[starts[rows, None] + np.arange(8)]
        eight[rows] = ~window.any(axis=1)
    mask: np.ndarray = cookie | eight
    return mask


def to_java_array(values: pa.Array, what: str = "rbm64 value") -> pa.Array:
    """``values`` with every portable-layout value rewritten in Java's layout (the others, Java's
    already, are kept as they are), so a value that older lakeops wrote is not carried forward
    by a merge that has nothing to unite it with."""
    mask = portable_mask(values)
    if not mask.any():
        return values
    rows = values.to_pylist()
    for i in np.flatnonzero(mask).tolist():
        rows[i] = to_java(rows[i], what)
    return pa.array(rows, type=values.type)


def values_of(data: bytes, what: str = "rbm64 value") -> np.ndarray:
    """Every value of an ``rbm64`` value in either layout, ascending, as unsigned 64-bit."""
    c = containers_of(data, what)
    chunks = []
    for key, kind, body in zip(c.keys.tolist(), c.kinds.tolist(), c.bodies, strict=True):
        if kind == ARRAY:
            low = np.frombuffer(body, dtype="<u2").astype(np.uint64)
        elif kind == BITMAP:
            bits = np.unpackbits(np.frombuffer(body, dtype=np.uint8), bitorder="little")
            low = np.flatnonzero(bits).astype(np.uint64)
        else:
            runs = np.frombuffer(body, dtype="<u2")[1:].astype(np.int64)
            starts, lengths = runs[0::2], runs[1::2] + 1
            steps = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
            low = (np.repeat(starts, lengths) + steps).astype(np.uint64)
        chunks.append((np.uint64(key) << np.uint64(16)) | low)
    if not chunks:
        return np.zeros(0, dtype=np.uint64)
    return np.concatenate(chunks)
