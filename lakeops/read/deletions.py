"""Applying deletion vectors to the rows of data files (append files, and the files of primary-key
tables in levels >= 1).

A file's rows are read whole, in file order, so the row at index ``i`` of what the file reader
returns is the row at position ``i`` of the file, the position its deletion vector names.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from lakeops.errors import CorruptTableError
from lakeops.format.data_file import DataFileMeta
from lakeops.format.deletion_vector import DeletionFile, decode_deletion_vector
from lakeops.io.file_io import FileIO

__all__ = ["DeletionVectorReader"]


class DeletionVectorReader:
    """Reads deletion vectors (each index file once per reader) and drops deleted rows."""

    def __init__(self, file_io: FileIO) -> None:
        self.file_io = file_io
        self._files: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def index_file(self, path: str) -> bytes:
        """The bytes of the index file at ``path`` (read once per reader)."""
        return self._index_file(path)

    def _index_file(self, path: str) -> bytes:
        with self._lock:
            data = self._files.get(path)
        if data is None:
            data = self.file_io.read_bytes(path)
            with self._lock:
                self._files[path] = data
        return data

    def positions(self, df: DeletionFile) -> np.ndarray:
        """The deleted positions of one deletion file (sorted uint64)."""
        return decode_deletion_vector(self._index_file(df.path), df, df.path)

    def deleted(self, df: DeletionFile, f: DataFileMeta) -> np.ndarray:
        """The positions of data file ``f`` that ``df`` deletes (sorted uint64); a position
        past the file's ``row_count`` is :class:`CorruptTableError`."""
        deleted = self.positions(df)
        if len(deleted) and int(deleted[-1]) >= f.row_count:
            raise CorruptTableError(
                f"the deletion vector of data file {f.file_name} ({df.path}) deletes row "
                f"{int(deleted[-1])}, past the file's {f.row_count} rows"
            )
        return deleted

    def apply(self, rows: pa.Table, df: DeletionFile | None, f: DataFileMeta) -> pa.Table:
        """``rows`` (every row of data file ``f``, in order) without the deleted ones."""
        if df is None:
            return rows
        return pa.concat_tables(list(self.iter_apply(iter([rows]), df, f)))

    def iter_apply(
        self, parts: Iterator[pa.Table], df: DeletionFile | None, f: DataFileMeta
    ) -> Iterator[pa.Table]:
        """The consecutive pieces ``parts`` of data file ``f``'s rows, each without its deleted
        rows. A vector deleting a position past the file's ``row_count`` is
        :class:`CorruptTableError`, raised before any row is returned."""
        if df is None:
            yield from parts
            return
        deleted = self.deleted(df, f)
        start = 0
        for part in parts:
            n = part.num_rows
            lo, hi = np.searchsorted(deleted, np.array([start, start + n], dtype=np.uint64))
            if hi > lo:
                keep = np.ones(n, dtype=bool)
                keep[(deleted[lo:hi] - np.uint64(start)).astype(np.int64)] = False
                part = part.filter(pa.array(keep))
            start += n
            yield part
