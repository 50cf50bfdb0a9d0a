"""A dynamic-bucket table's HASH index file: the union of the base snapshot's hashes and the new
ones, written only when the new ones add something (a plain set model)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from lakeops import Catalog
from lakeops.format.index_manifest import HASH_INDEX, decode_hashes
from lakeops.store.locations import FileLocations
from lakeops.write.hash_index import write_hash_index

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64())])


def test_new_index_is_the_union_and_only_written_when_it_grows(catalog: Catalog) -> None:
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "-1"}
    )
    table.write(pa.table({"id": list(range(20)), "v": [0] * 20}, schema=SCHEMA))
    base = table.latest_snapshot()
    (entry,) = [e for e in table.store.index_entries(base) if e.file.index_type == HASH_INDEX]
    old = set(table.store.hash_index(entry, table.schema).tolist())
    assert len(old) == 20
    locations = FileLocations.of(table.store.file_io, table.store.root, table.schema)

    def write(hashes: list[list[int]]):  # type: ignore[no-untyped-def]
        arrays = [np.array(h, dtype=np.int32) for h in hashes]
        return write_hash_index(
            table.store, table.schema, locations, base, entry.partition, entry.bucket, arrays
        )

    assert write([]) is None
    assert write([sorted(old)[:5], sorted(old)[5:]]) is None  # nothing new: the old file stays
    fresh = [h for h in (-7, 3, 11, 12345) if h not in old][:2]
    new = write([[*fresh], [next(iter(old)), fresh[0]]])
    assert new is not None
    expected = sorted(old | set(fresh))
    got = decode_hashes(Path(new.path).read_bytes())
    assert got.tolist() == expected
    assert new.meta.index_type == HASH_INDEX
    assert new.meta.row_count == len(expected)
    assert new.meta.file_size == Path(new.path).stat().st_size
    assert Path(new.path).name == new.meta.file_name
