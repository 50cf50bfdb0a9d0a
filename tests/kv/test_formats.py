"""The format and codec of each file, as Paimon 0.9's ``WriteFormatContext`` picks them."""

from __future__ import annotations

import pytest

from lakeops.errors import UnsupportedFeatureError
from lakeops.kv.formats import FileSettings, formats_in_use, settings_for, writer_kwargs


def test_defaults_are_parquet_and_zstd_level_1() -> None:
    assert settings_for({}, 0) == FileSettings("parquet", "zstd", 1)
    assert writer_kwargs(settings_for({}, 3)) == {"compression": "zstd", "compression_level": 1}


def test_per_level_format_and_codec_fall_back_to_the_table_defaults() -> None:
    options = {
        "file.format": "ORC",
        "file.format.per.level": " 0:avro , 5:Parquet",
        "file.compression": "snappy",
        "file.compression.per.level": "5:lz4",
    }
    assert settings_for(options, 3) == FileSettings("orc", "snappy", 1)
    assert settings_for(options, 5) == FileSettings("parquet", "lz4", 1)
    # Paimon's Avro files are snappy for every compression but zstd
    assert settings_for(options, 0) == FileSettings("avro", "snappy", 1)
    assert formats_in_use(options) == {"orc", "avro", "parquet"}
    with pytest.raises(UnsupportedFeatureError, match="LANCE"):
        settings_for({"file.format.per.level": "0:lance"}, 0)


def test_changelog_files_take_their_own_options_else_the_level() -> None:
    options = {"file.format.per.level": "0:orc", "file.compression": "zlib"}
    assert settings_for(options, 0, changelog=True) == FileSettings("orc", "zlib", 1)
    options |= {"changelog-file.format": "parquet", "changelog-file.compression": "gzip"}
    assert settings_for(options, 0, changelog=True) == FileSettings("parquet", "gzip", 1)
    assert settings_for(options, 0) == FileSettings("orc", "zlib", 1)


@pytest.mark.parametrize(
    ("fmt", "codec", "expected"),
    [
        ("parquet", "none", "none"),
        ("parquet", "lzo", "zstd"),  # pyarrow has no LZO: zstd, which every reader decodes
        ("orc", "none", "uncompressed"),
        ("orc", "brotli", "zstd"),
        ("orc", "LZ4", "lz4"),
    ],
)
def test_codecs_map_to_pyarrow(fmt: str, codec: str, expected: str) -> None:
    options = {"file.format": fmt, "file.compression": codec, "file.compression.zstd-level": "3"}
    assert settings_for(options, 1) == FileSettings(fmt, expected, 3)


def test_malformed_per_level_entries_are_refused() -> None:
    with pytest.raises(UnsupportedFeatureError, match="'x:orc'"):
        settings_for({"file.format.per.level": "x:orc"}, 0)


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({}, FileSettings("avro", "zstandard", 1)),
        (
            {"file.compression": "ZSTD", "file.compression.zstd-level": "9"},
            FileSettings("avro", "zstandard", 9),
        ),
        ({"file.compression": "lz4"}, FileSettings("avro", "snappy", 1)),
        ({"file.compression": "none"}, FileSettings("avro", "snappy", 1)),
        ({"avro.codec": "deflate"}, FileSettings("avro", "deflate", 1)),
        ({"avro.codec": "null", "file.compression": "zstd"}, FileSettings("avro", "null", 1)),
        # CodecFactory.fromString("zstandard") is level 3 whatever the zstd level says
        (
            {"avro.codec": "zstandard", "file.compression.zstd-level": "7"},
            FileSettings("avro", "zstandard", 3),
        ),
    ],
)
def test_avro_codecs_are_paimons(options: dict[str, str], expected: FileSettings) -> None:
    assert settings_for({"file.format": "avro", **options}, 2) == expected


def test_an_avro_codec_paimon_does_not_know_is_refused() -> None:
    with pytest.raises(UnsupportedFeatureError, match=r"avro\.codec"):
        settings_for({"file.format": "avro", "avro.codec": "ZSTD"}, 0)
