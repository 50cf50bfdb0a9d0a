"""Writing a dynamic-bucket table's HASH index: the bucket-key hashes of every key in a bucket.

Paimon keeps one complete HASH index file per (partition, bucket): a write that adds keys to a
bucket writes a new file holding the union of the base snapshot's hashes and the new ones
(:func:`~lakeops.format.index_manifest.encode_hashes`), which replaces the old file at commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lakeops.format.index_manifest import HASH_INDEX, IndexFileMeta, encode_hashes
from lakeops.format.schema import TableSchema
from lakeops.format.snapshot import Snapshot
from lakeops.store import TableStore
from lakeops.store.locations import FileLocations

__all__ = ["WrittenIndex", "write_hash_index"]


@dataclass(frozen=True)
class WrittenIndex:
    """A new HASH index file: its index-manifest entry and its storage path."""

    meta: IndexFileMeta
    path: str


def write_hash_index(
    store: TableStore,
    schema: TableSchema,
    locations: FileLocations,
    base: Snapshot | None,
    partition: bytes,
    bucket: int,
    key_hashes: Sequence[np.ndarray],
) -> WrittenIndex | None:
    """Write the bucket's new complete HASH index if ``key_hashes`` add hashes to the one in
    ``base``; None when they add none (the old file stays)."""
    if not key_hashes:
        return None
    old = [
        store.hash_index(e, schema)
        for e in store.index_entries(base)
        if e.partition == partition and e.bucket == bucket and e.file.index_type == HASH_INDEX
    ]
    before = np.unique(np.concatenate(old)) if old else np.zeros(0, np.int32)
    after = np.union1d(before, np.concatenate(key_hashes))
    if len(after) == len(before):
        return None
    data = encode_hashes(after)
    new = locations.new_index_file(partition, bucket)
    if new.external_path is None and locations.index_in_data_dir:
        store.file_io.mkdirs(new.path.rsplit("/", 1)[0])
    store.file_io.write_bytes(new.path, data)
    extra = (("_EXTERNAL_PATH", new.external_path),) if new.external_path else ()
    return WrittenIndex(IndexFileMeta(HASH_INDEX, new.name, len(data), len(after), extra), new.path)
