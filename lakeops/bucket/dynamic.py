"""Dynamic bucket mode (``bucket = -1``): which bucket each key goes to, as Paimon's
``HashBucketAssigner`` decides, vectorised over numpy.

A key is identified by the hash of its trimmed primary key (the same MurmurHash of the BinaryRow
that fixed buckets use). Per partition the assigner knows ``hash -> bucket`` from the partition's
HASH index files and how many hashes each bucket holds. For every incoming hash:

1. a known hash keeps its bucket;
2. a new hash goes to the lowest owned bucket holding fewer than
   ``dynamic-bucket.target-row-num`` hashes;
3. if there is none, the lowest unused owned bucket id is opened;
4. once ``dynamic-bucket.max-buckets`` ids are in use, new hashes spread over the existing owned
   buckets (Paimon picks at random; lakeops picks ``hash mod n``, so reruns are deterministic).

Parallel assigners (Spark) split the id space: assigner ``i`` of ``n`` owns the buckets with
``bucket % n == i`` and receives the keys :func:`assigner_of` routes to it, so two assigners never
open the same bucket. A single assigner (in-process writes) owns every bucket.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeops.errors import ConfigurationError
from lakeops.format.index_manifest import HASH_INDEX, IndexManifestEntry

__all__ = [
    "PartitionIndex",
    "assigner_of",
    "fill_buckets",
    "java_mod",
    "partition_codes",
    "partition_groups",
]

#: Paimon stores bucket ids as Java shorts: ids 0 … 32766 when max-buckets is unlimited
_UNLIMITED_IDS = 32767


def partition_codes(
    table: pa.Table, partition_keys: Sequence[str]
) -> tuple[np.ndarray, list[tuple[Any, ...]]]:
    """A dense int64 id per row for its partition (null values included) and the partition
    values of each id, computed over dictionary codes, not row by row."""
    n = table.num_rows
    if not partition_keys:
        return np.zeros(n, dtype=np.int64), [()]
    codes, dictionaries = [], []
    for name in partition_keys:
        enc = pc.dictionary_encode(table.column(name), null_encoding="encode")
        enc = enc.combine_chunks() if isinstance(enc, pa.ChunkedArray) else enc
        codes.append(enc.indices.to_numpy(zero_copy_only=False).astype(np.int64))
        dictionaries.append(enc.dictionary.to_pylist())
    if len(codes) == 1:
        return codes[0], [(v,) for v in dictionaries[0]]
    uniq, inverse = np.unique(np.stack(codes, axis=1), axis=0, return_inverse=True)
    values = [tuple(d[int(c)] for d, c in zip(dictionaries, row, strict=True)) for row in uniq]
    return inverse.reshape(-1).astype(np.int64), values


def partition_groups(
    table: pa.Table, partition_keys: Sequence[str]
) -> list[tuple[tuple[Any, ...], np.ndarray]]:
    """``(partition values, row indices)`` for every distinct partition of ``table``."""
    if not table.num_rows:
        return []
    ids, values = partition_codes(table, partition_keys)
    order = np.argsort(ids, kind="stable")
    bounds = np.searchsorted(ids[order], np.arange(len(values) + 1))
    return [
        (v, order[bounds[i] : bounds[i + 1]])
        for i, v in enumerate(values)
        if bounds[i + 1] > bounds[i]
    ]


def java_mod(a: np.ndarray | int, n: int) -> np.ndarray:
    """``a % n`` with Java's sign rule (the result takes the dividend's sign)."""
    return np.fmod(np.asarray(a, dtype=np.int64), n)


def assigner_of(
    partition_hash: int, key_hashes: np.ndarray, num_channels: int, num_assigners: int
) -> np.ndarray:
    """Paimon's assigner channel of each key: ``(|partHash % channels| + |keyHash %
    assigners|) % channels``."""
    part = abs(int(java_mod(partition_hash, num_channels)))
    result: np.ndarray = (part + np.abs(java_mod(key_hashes, num_assigners))) % num_channels
    return result


def fill_buckets(
    counts: dict[int, int],
    k: int,
    target: int,
    owns: Callable[[int], bool],
    max_buckets: int,
    overflow_hashes: np.ndarray,
) -> np.ndarray:
    """Buckets for ``k`` new keys in arrival order, updating ``counts`` (bucket -> keys) in
    place: the lowest owned bucket below ``target`` first, then the lowest unused owned id;
    when ``max_buckets`` ids are in use, the remaining keys spread over the owned buckets by
    ``overflow_hashes`` (one per key, in the same order)."""
    slots = [b for b in sorted(counts) if counts[b] < target and owns(b)]
    capacity = [target - counts[b] for b in slots]
    limit = _UNLIMITED_IDS if max_buckets == -1 else max_buckets
    candidate = 0
    while sum(capacity) < k:
        while candidate < limit and (candidate in counts or not owns(candidate)):
            candidate += 1
        if candidate >= limit:
            break
        slots.append(candidate)
        capacity.append(target)
        counts[candidate] = 0
        candidate += 1
    out = np.empty(k, dtype=np.int32)
    filled = min(k, sum(capacity))
    if filled:
        ends = np.cumsum(capacity)
        which = np.searchsorted(ends, np.arange(filled), side="right")
        out[:filled] = np.asarray(slots, dtype=np.int32)[which]
        for b, n in zip(*np.unique(out[:filled], return_counts=True), strict=True):
            counts[int(b)] += int(n)
    if filled < k:  # every id in use and full
        owned = np.asarray(sorted(b for b in counts if owns(b)), dtype=np.int32)
        if max_buckets == -1 or not len(owned):
            raise ConfigurationError(
                f"dynamic bucket mode ran out of bucket ids ({limit}); raise "
                "'dynamic-bucket.target-row-num'"
            )
        rest = owned[np.abs(java_mod(overflow_hashes[filled:], len(owned)))]
        out[filled:] = rest
        for b, n in zip(*np.unique(rest, return_counts=True), strict=True):
            counts[int(b)] += int(n)
    return out


class PartitionIndex:
    """``hash -> bucket`` of one partition as one assigner sees it, and the fill of the buckets
    it owns. Arrays, not Python objects: sorted unique int32 hashes with their buckets.

    Args:
        hashes, buckets: the known hashes (any order) and their buckets.
        counts: hashes per bucket, for every bucket the assigner owns.
        owns: whether this assigner may put new keys into a bucket id.
        target_row_num / max_buckets: the options of the same names.
    """

    def __init__(
        self,
        hashes: np.ndarray,
        buckets: np.ndarray,
        counts: dict[int, int],
        owns: Callable[[int], bool],
        target_row_num: int,
        max_buckets: int,
    ) -> None:
        order = np.argsort(hashes, kind="stable")
        self.hashes = hashes.astype(np.int32)[order]
        self.buckets = buckets.astype(np.int32)[order]
        self.counts = dict(counts)
        self.owns = owns
        self.target = target_row_num
        self.max_buckets = max_buckets

    @classmethod
    def load(
        cls,
        entries: list[IndexManifestEntry],
        read_hashes: Callable[[IndexManifestEntry], np.ndarray],
        *,
        partition_hash: int,
        num_channels: int,
        num_assigners: int,
        assign_id: int,
        target_row_num: int,
        max_buckets: int,
    ) -> PartitionIndex:
        """Bootstrap from a partition's HASH index entries: the hashes routed to this assigner
        keep their buckets; every owned bucket starts at its file's hash count."""

        def owns(bucket: int) -> bool:
            return bucket % num_assigners == assign_id % num_assigners

        known_h, known_b = [], []
        counts: dict[int, int] = {}
        for entry in entries:
            if entry.file.index_type != HASH_INDEX:
                continue
            hashes = read_hashes(entry)
            if num_channels > 1:
                mine = assigner_of(partition_hash, hashes, num_channels, num_assigners)
                hashes = hashes[mine == assign_id]
            known_h.append(hashes)
            known_b.append(np.full(len(hashes), entry.bucket, dtype=np.int32))
            if owns(entry.bucket):
                counts[entry.bucket] = int(entry.file.row_count)
        return cls(
            np.concatenate(known_h) if known_h else np.zeros(0, np.int32),
            np.concatenate(known_b) if known_b else np.zeros(0, np.int32),
            counts,
            owns,
            target_row_num,
            max_buckets,
        )

    def lookup(self, hashes: np.ndarray) -> np.ndarray:
        """The bucket of each hash, -1 where unknown."""
        out = np.full(len(hashes), -1, dtype=np.int32)
        if len(self.hashes):
            pos = np.searchsorted(self.hashes, hashes)
            pos_c = np.minimum(pos, len(self.hashes) - 1)
            found = self.hashes[pos_c] == hashes
            out[found] = self.buckets[pos_c[found]]
        return out

    def assign(self, hashes: np.ndarray) -> np.ndarray:
        """The bucket of every hash (see the module docstring); new hashes are remembered, in
        order of first appearance."""
        hashes = hashes.astype(np.int32)
        out = self.lookup(hashes)
        new = out < 0
        if new.any():
            uniq, first = np.unique(hashes[new], return_index=True)
            arrival = np.argsort(first, kind="stable")
            got = np.empty(len(uniq), dtype=np.int32)
            got[arrival] = self.open_buckets(uniq[arrival])
            out[new] = got[np.searchsorted(uniq, hashes[new])]
            self._remember(uniq, got)
        return out

    def open_buckets(self, new_hashes: np.ndarray) -> np.ndarray:
        """Buckets for ``new_hashes`` (distinct, in arrival order); see :func:`fill_buckets`."""
        return fill_buckets(
            self.counts, len(new_hashes), self.target, self.owns, self.max_buckets, new_hashes
        )

    def _remember(self, hashes: np.ndarray, buckets: np.ndarray) -> None:
        all_h = np.concatenate([self.hashes, hashes])
        all_b = np.concatenate([self.buckets, buckets])
        order = np.argsort(all_h, kind="stable")
        self.hashes, self.buckets = all_h[order], all_b[order]
