"""Manifests, manifest lists and index manifests in ORC and Parquet (``manifest.format``):
the codec each ``manifest.compression`` means per format, refusals, and every field of every
record kind surviving a write in each format (Java's layout is checked in
tests/interop/test_manifest_codecs_interop.py)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.errors import ConfigurationError, CorruptMetadataError, UnsupportedFeatureError
from lakeops.format.data_file import DataFileMeta, SimpleStats
from lakeops.format.index_manifest import (
    IndexFileMeta,
    IndexManifestEntry,
    read_index_manifest,
    write_index_manifest,
)
from lakeops.format.manifest import (
    FileKind,
    ManifestEntry,
    ManifestFileMeta,
    read_manifest,
    read_manifest_list,
    write_manifest,
    write_manifest_list,
)
from lakeops.format.manifest_format import ManifestFormat
from lakeops.format.schema_change import SetOption
from lakeops.options.registry import check_create_options
from lakeops.options.rows_layout import manifest_format

FORMATS = [
    ManifestFormat("avro", "zstandard"),
    ManifestFormat("orc", "zlib"),
    ManifestFormat("parquet", "zstd"),
]
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({}, ManifestFormat("avro", "zstandard")),
        ({"manifest.compression": "snappy"}, ManifestFormat("avro", "snappy")),
        ({"manifest.format": "ORC"}, ManifestFormat("orc", "zstd")),
        (
            {"manifest.format": "orc", "manifest.compression": "none"},
            ManifestFormat("orc", "uncompressed"),
        ),
        ({"manifest.format": "orc", "manifest.compression": "zlib"}, ManifestFormat("orc", "zlib")),
        ({"manifest.format": "orc", "orc.compress": "SNAPPY"}, ManifestFormat("orc", "snappy")),
        ({"manifest.format": "parquet"}, ManifestFormat("parquet", "zstd")),
        (
            {"manifest.format": "parquet", "manifest.compression": "uncompressed"},
            ManifestFormat("parquet", "none"),
        ),
        (
            {"manifest.format": "parquet", "manifest.compression": "gzip"},
            ManifestFormat("parquet", "gzip"),
        ),
        (
            {"manifest.format": "parquet", "parquet.compression": "snappy"},
            ManifestFormat("parquet", "snappy"),
        ),
    ],
)
def test_manifest_compression_is_the_formats_codec(
    options: dict[str, str], expected: ManifestFormat
) -> None:
    assert manifest_format(options) == expected


@pytest.mark.parametrize(
    "options",
    [
        {"manifest.format": "json"},
        {"manifest.format": "orc", "manifest.compression": "lzo"},
        {"manifest.format": "orc", "manifest.compression": "deflate"},  # an Avro name
        {"manifest.format": "parquet", "manifest.compression": "brotli"},
        {"manifest.format": "parquet", "manifest.compression": "none"},  # parquet-mr: no NONE
        {"manifest.compression": "zlib"},  # not an Avro codec
    ],
)
def test_a_format_or_codec_paimon_does_not_write_is_refused(
    warehouse: Path, options: dict[str, str]
) -> None:
    with pytest.raises(ConfigurationError, match=r"manifest\.(format|compression)"):
        manifest_format(options)
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    with pytest.raises((ConfigurationError, UnsupportedFeatureError), match=r"manifest\."):
        catalog.create_table(
            "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1", **options}
        )
    assert not (warehouse / "db.db" / "t").exists()


def test_the_registry_accepts_every_format_paimon_writes() -> None:
    for fmt in ("avro", "orc", "parquet", "Parquet"):
        check_create_options({"manifest.format": fmt})
    with pytest.raises(UnsupportedFeatureError, match=r"manifest\.format"):
        check_create_options({"manifest.format": "csv"})


def _meta(name: str, **kw: object) -> DataFileMeta:
    fields: dict = dict(
        file_name=name,
        file_size=10,
        row_count=3,
        min_key=b"\x00" * 20,
        max_key=b"\x01" * 20,
        key_stats=SimpleStats(b"a" * 12, b"b" * 12, (0,)),
        value_stats=SimpleStats(b"c" * 16, b"d" * 16, (None, 2)),
        min_sequence_number=4,
        max_sequence_number=6,
        schema_id=1,
        level=2,
    )
    fields.update(kw)
    return DataFileMeta(**fields)  # type: ignore[arg-type]


ENTRIES = [
    ManifestEntry(FileKind.ADD, bytes(12), 3, 4, _meta("data-a-0.parquet")),
    ManifestEntry(
        FileKind.DELETE,
        b"\x01" * 16,
        -1,
        -1,
        _meta(
            "data-b-0.orc",
            extra_files=("x", "y"),
            creation_time_millis=1_700_000_000_123,
            delete_row_count=None,
            embedded_file_index=b"\x00\xff",
            file_source=1,
            value_stats_cols=("v",),
            external_path="s3://b/data-b-0.orc",
            first_row_id=7,
            write_cols=("id", "v"),
            write_cols_sequences=(1, 2),
        ),
    ),
    ManifestEntry(
        FileKind.ADD,
        bytes(12),
        0,
        1,
        _meta("data-c-0.avro", creation_time_millis=-86_400_001, value_stats_cols=None),
    ),
]
METAS = [
    ManifestFileMeta("manifest-a-0", 100, 2, 1, SimpleStats(), 0),
    ManifestFileMeta(
        "manifest-b-0", 5, 0, 3, SimpleStats(b"p" * 16, b"q" * 16, (1,)), 2, 0, 7, 0, 5, 8
    ),
]
INDEXES = [
    IndexManifestEntry(0, bytes(12), 0, IndexFileMeta("HASH", "index-a-0", 40, 10)),
    IndexManifestEntry(
        0,
        b"\x02" * 16,
        3,
        IndexFileMeta(
            "DELETION_VECTORS",
            "index-b-0",
            64,
            2,
            (
                (
                    "_DELETIONS_VECTORS_RANGES",
                    [
                        {"f0": "data-a-0.parquet", "f1": 1, "f2": 22, "_CARDINALITY": 3},
                        {"f0": "data-b-0.parquet", "f1": 23, "f2": 9, "_CARDINALITY": None},
                    ],
                ),
                ("_EXTERNAL_PATH", "oss://b/index-b-0"),
            ),
        ),
    ),
]


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.format)
def test_every_record_kind_survives_each_format(fmt: ManifestFormat) -> None:
    manifest = write_manifest(ENTRIES, fmt)
    assert manifest.startswith({"avro": b"Obj\x01", "orc": b"ORC", "parquet": b"PAR1"}[fmt.format])
    assert read_manifest(manifest) == ENTRIES
    assert read_manifest_list(write_manifest_list(METAS, fmt)) == METAS
    assert read_index_manifest(write_index_manifest(INDEXES, fmt)) == INDEXES
    assert read_manifest(write_manifest([], fmt)) == []


def test_a_table_whose_manifest_format_changed_reads_both(warehouse: Path) -> None:
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"}
    )
    table.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    table.alter(SetOption("manifest.format", "parquet"))
    table = catalog.get_table("db.t")
    table.write(pa.table({"id": [2, 3], "v": ["B", "c"]}, schema=SCHEMA))
    magics = {f.read_bytes()[:4] for f in (warehouse / "db.db" / "t" / "manifest").iterdir()}
    assert magics == {b"Obj\x01", b"PAR1"}
    expected = [{"id": 1, "v": "a"}, {"id": 2, "v": "B"}, {"id": 3, "v": "c"}]
    assert table.read().sort_by("id").to_pylist() == expected


def test_a_manifest_of_no_known_format_is_named(warehouse: Path) -> None:
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["id"],
        options={"bucket": "1", "manifest.format": "orc"},
    )
    table.write(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    manifests = [
        f
        for f in (warehouse / "db.db" / "t" / "manifest").iterdir()
        if not f.name.startswith("manifest-list-")
    ]
    manifests[0].write_bytes(b"JUNK" + manifests[0].read_bytes()[4:])
    with pytest.raises(CorruptMetadataError, match=manifests[0].name):
        catalog.get_table("db.t").read()
