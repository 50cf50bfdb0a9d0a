"""Deletion vectors of one bucket of a primary-key table during its compaction (Paimon's
``BucketedDvMaintainer`` with the lookup compaction of ``LookupMergeTreeCompactRewriter``).

A deletion-vector table keeps, for every key, at most one record that is not deleted in levels
≥ 1 (readers skip level 0 and read the other levels without merging them). So a compaction that
rewrites level-0 records must:

* read every file through its vector (a deleted row is superseded and must not merge again);
* for each key of a level-0 record, look the key up in the bucket's files of levels ≥ 1 that the
  compaction does not rewrite, merge the record found there (the key's older state) into the
  result and **mark its row position** in that file's vector;
* drop the vectors of the files it rewrote (their rows are gone), keep those of the files it
  upgraded or left alone.

When the bucket's vectors changed, every deletion-vector index file of the bucket is deleted and
one new index file holds all of its vectors (unchanged blobs copied as they are), as Paimon's
``DeletionVectorsIndexFile`` writes it: one ``DELETE`` and one ``ADD`` index-manifest entry,
committed with the compaction.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from lakeops.changelog.lookup_cache import LEVEL
from lakeops.format.data_file import DataFileMeta
from lakeops.format.deletion_vector import (
    DELETION_VECTORS_INDEX,
    DeletionFile,
    blob,
    deletion_files,
    encode_blob,
    encode_index_file,
)
from lakeops.format.index_manifest import IndexFileMeta, IndexManifestEntry
from lakeops.format.manifest import FileKind
from lakeops.io.file_io import FileIO
from lakeops.kv.reader import KeyValueReader
from lakeops.read.deletions import DeletionVectorReader
from lakeops.store.locations import FileLocations

__all__ = ["BucketVectors", "OutsideLookup", "POSITION"]

#: transient column: the row position of a looked-up record in its file
POSITION = "__position"


@dataclass
class BucketVectors:
    """The live deletion vectors of one (partition, bucket) at the planned snapshot, and the
    positions a compaction marks."""

    file_io: FileIO
    #: the bucket's live deletion-vector index entries (all of them are replaced on change)
    entries: tuple[IndexManifestEntry, ...]
    #: storage path of each entry's index file, by file name
    paths: dict[str, str]
    bitmap64: bool = False
    marked: dict[str, list[np.ndarray]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.reader = DeletionVectorReader(self.file_io)
        self.files: dict[str, DeletionFile] = {
            name: df for (_, _, name), df in deletion_files(self.entries, self.paths).items()
        }

    def of(self, f: DataFileMeta) -> DeletionFile | None:
        """The deletion file of data file ``f`` at the planned snapshot."""
        return self.files.get(f.file_name)

    def deleted(self, f: DataFileMeta) -> np.ndarray:
        """Positions of ``f`` deleted at the planned snapshot (sorted uint64)."""
        df = self.files.get(f.file_name)
        return np.empty(0, np.uint64) if df is None else self.reader.positions(df)

    def iter_apply(self, parts: Iterator[pa.Table], f: DataFileMeta) -> Iterator[pa.Table]:
        """The consecutive pieces of ``f``'s records without its deleted rows."""
        return self.reader.iter_apply(parts, self.files.get(f.file_name), f)

    def mark(self, file_name: str, positions: np.ndarray) -> None:
        """Mark ``positions`` of data file ``file_name`` deleted."""
        if len(positions):
            self.marked.setdefault(file_name, []).append(np.asarray(positions, np.uint64))

    def changes(
        self,
        partition: bytes,
        bucket: int,
        before: Sequence[DataFileMeta],
        after: Sequence[DataFileMeta],
        locations: FileLocations,
    ) -> tuple[tuple[IndexManifestEntry, ...], list[str]]:
        """The index changes of a compaction that removed ``before`` and produced ``after``
        (upgraded files appear in both and keep their vectors), and the index file written;
        nothing when no vector changed. The new index file holds, in data file name order,
        every vector of a file that stays: unchanged blobs copied, marked ones re-encoded
        (old positions and new)."""
        gone = {f.file_name for f in before} - {f.file_name for f in after}
        dropped = any(name in gone for name in self.files)
        if not self.marked and not dropped:
            return (), []
        blobs: list[tuple[str, bytes, DeletionFile]] = []
        for name in sorted((set(self.files) | set(self.marked)) - gone):
            df = self.files.get(name)
            new = self.marked.get(name)
            if df is not None and not new:
                data = self.reader.index_file(df.path)
                blobs.append((name, blob(data, df, df.path), df))
                continue
            old = [self.reader.positions(df)] if df is not None else []
            positions = np.concatenate([*old, *(new or [])])
            encoded, length, count = encode_blob(positions, bitmap64=self.bitmap64)
            blobs.append((name, encoded, DeletionFile("", 0, length, count)))
        out = [IndexManifestEntry(FileKind.DELETE, partition, bucket, e.file) for e in self.entries]
        written: list[str] = []
        if blobs:
            content, ranges = encode_index_file(blobs)
            new_file = locations.new_index_file(partition, bucket)
            if new_file.external_path is None and locations.index_in_data_dir:
                self.file_io.mkdirs(new_file.path.rsplit("/", 1)[0])
            written.append(new_file.path)
            self.file_io.write_bytes(new_file.path, content)
            extra: list[tuple[str, Any]] = [("_DELETIONS_VECTORS_RANGES", ranges)]
            if new_file.external_path:
                extra.append(("_EXTERNAL_PATH", new_file.external_path))
            meta = IndexFileMeta(
                DELETION_VECTORS_INDEX, new_file.name, len(content), len(ranges), tuple(extra)
            )
            out.append(IndexManifestEntry(FileKind.ADD, partition, bucket, meta))
        return tuple(out), written


class OutsideLookup:
    """The live records (not deleted by a vector) of given keys in the files of levels ≥ 1 a
    compaction does not rewrite, with their file and row position. Each file is read whole
    once per compaction, and only when its key range meets the keys looked up."""

    def __init__(
        self,
        reader: KeyValueReader,
        directory: str,
        files: Sequence[DataFileMeta],
        value_cols: Sequence[str],
        vectors: BucketVectors,
    ) -> None:
        self.reader = reader
        self.directory = directory
        self.value_cols = list(value_cols)
        self.vectors = vectors
        self.files = [(f, *reader.key_range(f)) for f in files]
        self._tables: dict[str, pa.Table] = {}

    def _live(self, f: DataFileMeta) -> pa.Table:
        table = self._tables.get(f.file_name)
        if table is None:
            table = self.reader.read(self.directory, f, self.value_cols)
            positions = np.arange(table.num_rows, dtype=np.int64)
            deleted = self.vectors.deleted(f)
            if len(deleted):
                keep = np.ones(table.num_rows, dtype=bool)
                keep[deleted.astype(np.int64)] = False
                table, positions = table.filter(pa.array(keep)), positions[keep]
            table = table.append_column(LEVEL, pa.array(np.full(len(positions), f.level, np.int32)))
            table = table.append_column(POSITION, pa.array(positions))
            self._tables[f.file_name] = table
        return table

    def records(
        self, keys: pa.Table, low: tuple[Any, ...], high: tuple[Any, ...]
    ) -> list[tuple[DataFileMeta, pa.Table]]:
        """Per file whose range overlaps [low, high], its live records whose key is one of
        ``keys`` (merge-key columns, unique rows), with ``__level`` and ``__position``."""
        found = []
        for f, lo, hi in self.files:
            if hi < low or lo > high:
                continue
            hit = self._live(f).join(keys, keys=keys.column_names, join_type="left semi")
            if hit.num_rows:
                found.append((f, hit))
        return found
