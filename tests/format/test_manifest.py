"""Manifests and manifest lists use pypaimon 2.1's exact Avro schemas and round-trip."""

from __future__ import annotations

import io

import fastavro
import pytest

from lakeops.errors import CorruptTableError
from lakeops.format.data_file import DataFileMeta, SimpleStats
from lakeops.format.index_manifest import (
    IndexFileMeta,
    IndexManifestEntry,
    read_index_manifest,
    write_index_manifest,
)
from lakeops.format.manifest import (
    MANIFEST_ENTRY_SCHEMA,
    MANIFEST_FILE_META_SCHEMA,
    FileKind,
    ManifestEntry,
    ManifestFileMeta,
    read_manifest,
    read_manifest_list,
    write_manifest,
    write_manifest_list,
)
from lakeops.format.snapshot import Snapshot
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


def _meta(name: str, extra: tuple[str, ...] = ()) -> DataFileMeta:
    return DataFileMeta(
        file_name=name,
        file_size=1,
        row_count=1,
        min_key=b"",
        max_key=b"",
        key_stats=SimpleStats(),
        value_stats=SimpleStats(),
        min_sequence_number=0,
        max_sequence_number=0,
        schema_id=0,
        level=0,
        extra_files=extra,
    )


def _decode(where: str, name: str) -> object:
    """Write metadata naming ``name`` in ``where`` and decode it as the store does."""
    source = "manifest/crafted-0"
    if where == "data file":
        return read_manifest(write_manifest([ManifestEntry(0, b"", 0, 1, _meta(name))]), source)
    if where == "extra file":
        entry = ManifestEntry(0, b"", 0, 1, _meta("data-0.parquet", ("ok.index", name)))
        return read_manifest(write_manifest([entry]), source)
    if where == "manifest":
        meta = ManifestFileMeta(name, 1, 1, 0, SimpleStats(), 0)
        return read_manifest_list(write_manifest_list([meta]), source)
    if where in ("index file", "deletion vector"):
        dv = {"f0": name, "f1": 0, "f2": 1, "_CARDINALITY": None}
        extra = (("_DELETIONS_VECTORS_RANGES", [dv]),) if where == "deletion vector" else ()
        file = IndexFileMeta("HASH", "index-0" if extra else name, 4, 1, extra)
        data = write_index_manifest([IndexManifestEntry(0, b"", 0, file)])
        return read_index_manifest(data, source)
    snapshot = Snapshot(1, 0, "manifest-list-a-0", name, "u", 1, "APPEND", 0, 0, 0)
    return Snapshot.from_json(snapshot.to_json(), source)


WHERE = ["data file", "extra file", "manifest", "index file", "deletion vector", "snapshot"]


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("name", ["../../victim/x", "a/b", "a\\b", "..", ".", "", "x\x00y"])
def test_file_names_in_metadata_are_plain_names(where: str, name: str) -> None:
    """Every name metadata gives a file is one plain name; anything that could address a file
    elsewhere is a CorruptTableError naming the metadata file and the name."""
    with pytest.raises(CorruptTableError, match="crafted-0") as refused:
        _decode(where, name)
    assert repr(name) in str(refused.value)


@pytest.mark.parametrize("where", WHERE)
def test_plain_names_decode(where: str) -> None:
    assert _decode(where, "data-a..b-0.parquet")  # '..' inside a name addresses nothing
