"""Manifests and manifest lists use pypaimon 2.1's exact Avro schemas and round-trip."""

from __future__ import annotations

import io

import fastavro
import pytest

from lakeops.spec.data_file import DataFileMeta, SimpleStats
from lakeops.spec.manifest import (
    MANIFEST_ENTRY_SCHEMA,
    MANIFEST_FILE_META_SCHEMA,
    FileKind,
    ManifestEntry,
    read_manifest,
    write_manifest,
)
from tests.conftest import GOLDEN


def _golden_schema(kind: str) -> dict:
    manifest_dir = GOLDEN / "pypaimon-wh" / "db.db" / "s2_partitioned" / "manifest"
    for path in sorted(manifest_dir.iterdir()):
        is_list = path.name.startswith("manifest-list-")
        if (kind == "list") == is_list:
            with path.open("rb") as f:
                reader = fastavro.reader(f)
                assert reader.codec == "zstandard"
                return reader.writer_schema
    raise AssertionError(f"no golden {kind} manifest")


def _strip(schema: object) -> object:
    """Compare schemas without fastavro's normalisation noise (namespaces, key order)."""
    if isinstance(schema, dict):
        return {
            k: _strip(v)
            for k, v in schema.items()
            if k not in ("__fastavro_parsed", "__named_schemas")
        }
    if isinstance(schema, list):
        return [_strip(v) for v in schema]
    return schema


@pytest.mark.parametrize(
    ("kind", "ours"), [("entry", MANIFEST_ENTRY_SCHEMA), ("list", MANIFEST_FILE_META_SCHEMA)]
)
def test_schema_equals_pypaimons(kind: str, ours: dict) -> None:
    parsed = fastavro.parse_schema(ours)
    buf = io.BytesIO()
    fastavro.writer(buf, parsed, [], codec="zstandard")
    buf.seek(0)
    assert _strip(fastavro.reader(buf).writer_schema) == _strip(_golden_schema(kind))


def test_entry_round_trip() -> None:
    meta = DataFileMeta(
        file_name="data-x-0.parquet",
        file_size=10,
        row_count=3,
        min_key=b"\x00" * 20,
        max_key=b"\x01" * 20,
        key_stats=SimpleStats(b"a" * 12, b"b" * 12, (0,)),
        value_stats=SimpleStats(),
        min_sequence_number=4,
        max_sequence_number=6,
        schema_id=0,
        level=2,
        creation_time_millis=1_700_000_000_123,
        delete_row_count=1,
    )
    entry = ManifestEntry(FileKind.ADD, bytes(12), 3, 4, meta)
    assert read_manifest(write_manifest([entry])) == [entry]
