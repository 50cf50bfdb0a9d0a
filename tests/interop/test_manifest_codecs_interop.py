"""Manifests in every Avro codec Paimon writes (``manifest.compression``), both ways with
pypaimon 2.1."""

from __future__ import annotations

import io
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest

from lakeops import Catalog
from tests.interop.oracle import oracle_create, oracle_read, oracle_write

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
CODECS = {"snappy": "snappy", "deflate": "deflate", "zstd": "zstandard", "null": "null"}


def _codecs(table_dir: Path) -> set[str]:
    out = set()
    for f in (table_dir / "manifest").iterdir():
        with f.open("rb") as fh:
            out.add(fastavro.reader(io.BytesIO(fh.read())).codec)
    return out


@pytest.mark.parametrize("compression", sorted(CODECS))
def test_pypaimon_manifests_in_each_codec(warehouse, compression: str) -> None:
    oracle_create(
        warehouse,
        "db.m",
        SCHEMA,
        ["id"],
        options={"bucket": "1", "manifest.compression": compression},
    )
    oracle_write(warehouse, "db.m", pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    table = Catalog(str(warehouse)).get_table("db.m")
    assert table.read().sort_by("id").to_pylist() == [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]
    table.write(pa.table({"id": [2, 3], "v": ["B", "c"]}, schema=SCHEMA))
    table.compact(full=True)
    assert _codecs(warehouse / "db.db" / "m") == {CODECS[compression]}
    expected = [{"id": 1, "v": "a"}, {"id": 2, "v": "B"}, {"id": 3, "v": "c"}]
    assert oracle_read(warehouse, "db.m").sort_by("id").to_pylist() == expected
