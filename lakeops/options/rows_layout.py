"""The rows of a table's layout: buckets, keys, partitions, data file formats and codecs, the
manifest format, and the DDL-only keys."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lakeops.errors import ConfigurationError
from lakeops.format.avro_codec import DEFAULT_COMPRESSION
from lakeops.format.manifest_format import ManifestFormat
from lakeops.options.option import (
    BOOL,
    DURATION,
    INT,
    INT_MAX,
    LONG_MAX,
    MEMORY,
    STRING,
    Option,
    honoured,
    refused,
    rng,
)
from lakeops.options.rows_ignorable import ORC_OPTIONS, PARQUET_OPTIONS
from lakeops.options.rules import (
    TRUE_REFUSED,
    WRITABLE_FORMATS,
    changelog_format,
    norm,
    per_level_formats,
    unless,
    uses_avro,
)

__all__ = [
    "BUCKET",
    "BUCKET_KEY",
    "POSTPONE_BATCH_WRITE_FIXED_BUCKET",
    "POSTPONE_DEFAULT_BUCKET_NUM",
    "POSTPONE_MERGE_ON_READ",
    "POSTPONE_TARGET_ROW_NUM_PER_BUCKET",
    "POSTPONE_TARGET_SIZE_PER_BUCKET",
    "CHANGELOG_FILE_COMPRESSION",
    "CHANGELOG_FILE_FORMAT",
    "CROSS_PARTITION_BOOTSTRAP_PARALLELISM",
    "CROSS_PARTITION_INDEX_TTL",
    "DYNAMIC_BUCKET_ASSIGNER_PARALLELISM",
    "DYNAMIC_BUCKET_INITIAL_BUCKETS",
    "DYNAMIC_BUCKET_MAX_BUCKETS",
    "DYNAMIC_BUCKET_TARGET_ROW_NUM",
    "FILE_COMPRESSION",
    "FILE_COMPRESSION_PER_LEVEL",
    "FILE_COMPRESSION_ZSTD_LEVEL",
    "FILE_FORMAT",
    "FILE_FORMAT_PER_LEVEL",
    "MANIFEST_COMPRESSION",
    "MANIFEST_FORMAT",
    "PARTITION_DEFAULT_NAME",
    "PARTITION_LEGACY_NAME",
    "ROWS",
    "AVRO_CODEC",
    "AVRO_ROW_NAME_MAPPING",
    "bucket_count_set",
    "manifest_codec_refused",
    "manifest_format",
]

_COUNT = "a count"

BUCKET = honoured(
    "the number of buckets: fixed counts > 0, dynamic buckets (-1), and postpone buckets (-2): "
    "primary-key writes go to 'bucket-postpone', batch reads see only real buckets, and "
    "compaction moves postponed rows into real buckets (lakeops.read.postpone)",
).row("bucket", INT, -1, rng(1, INT_MAX, -1, -2, meaning="the number of buckets (-1: dynamic)"))
_POSTPONE = honoured(
    "postpone buckets (bucket = -2): the bucket count a partition gets when compaction first "
    "moves its postponed rows into real buckets (lakeops.read.postpone)"
)
POSTPONE_DEFAULT_BUCKET_NUM = _POSTPONE.row(
    "postpone.default-bucket-num", INT, None, rng(1, INT_MAX, meaning="a bucket count")
)
POSTPONE_TARGET_ROW_NUM_PER_BUCKET = _POSTPONE.row(
    "postpone.target-row-num-per-bucket", INT, None, rng(1, LONG_MAX, meaning="a row count")
)
POSTPONE_TARGET_SIZE_PER_BUCKET = _POSTPONE.row(
    "postpone.target-size-per-bucket", MEMORY, 1 << 30, rng(1, LONG_MAX, meaning="a size")
)
POSTPONE_MERGE_ON_READ = honoured(
    "postpone buckets: false — batch reads see only real buckets, as Paimon's; true — batch "
    "reads and lookups merge each partition's postponed rows into the real bucket compaction "
    "will move them to, after its files, as Paimon's postpone merge read "
    "(lakeops.read.postpone)",
).row("postpone.merge-on-read", BOOL, False)
POSTPONE_BATCH_WRITE_FIXED_BUCKET = honoured(
    "postpone buckets: true (Paimon's default) — a lakeops commit's rows land in real buckets "
    "at once, as after Paimon's batch write into fixed buckets: written to 'bucket-postpone', "
    "then moved in a COMPACT snapshot (the written partitions' postponed rows, in order; "
    "each partition's bucket count kept, a new one's from postpone.default-bucket-num or the "
    "estimate); false — they stay postponed until compaction, as pypaimon's batch write; "
    "write-only keeps them postponed either way",
).row("postpone.batch-write-fixed-bucket", BOOL, True)
BUCKET_KEY = honoured(
    "bucket keys (a subset of the trimmed primary key; for an append table with a bucket "
    "count, the columns whose hash picks the bucket)",
).row("bucket-key", STRING)
_BUCKET_FUNCTION = honoured(
    "Paimon's default bucket function (hash % buckets); 'mod' and 'hive' place keys differently",
    refuse_value=unless("default"),
    fix="use 'default'",
).rows("bucket-function.type")
FILE_FORMAT = honoured(
    "data files are written as Parquet, ORC or Avro, with Paimon's types and codecs per format "
    "(read by each file's extension)",
    refuse_value=lambda v, _: norm(v) not in WRITABLE_FORMATS,
    fix="use 'parquet', 'orc' or 'avro'",
).row("file.format", STRING, "parquet")
FILE_FORMAT_PER_LEVEL = honoured(
    "the format of the files written at each level ('0:avro,5:parquet'); Parquet, ORC and Avro",
    refuse_value=per_level_formats,
    fix="name only 'parquet', 'orc' or 'avro' per level",
).row("file.format.per.level", STRING, "")
CHANGELOG_FILE_FORMAT = honoured(
    "the format of changelog files (default: the level's format); Parquet, ORC and Avro",
    refuse_value=changelog_format,
    fix="remove it or use 'parquet', 'orc' or 'avro'",
).row("changelog-file.format", STRING)
_CODECS = honoured(
    "the codec of each data file, per level; a codec pyarrow lacks for the format (lzo, ORC "
    "brotli) becomes zstd, which every Paimon reader decodes",
)
FILE_COMPRESSION = _CODECS.row("file.compression", STRING, "zstd")
FILE_COMPRESSION_PER_LEVEL = _CODECS.row("file.compression.per.level", STRING, "")
FILE_COMPRESSION_ZSTD_LEVEL = _CODECS.row(
    "file.compression.zstd-level", INT, 1, rng(1, 22, meaning="the zstd level")
)
CHANGELOG_FILE_COMPRESSION = _CODECS.row("changelog-file.compression", STRING)
AVRO_CODEC = honoured(
    "the codec of Avro data files, by Avro's CodecFactory names (default: zstandard at "
    "'file.compression.zstd-level' when 'file.compression' is zstd, else snappy)",
    refuse_value=lambda v, opts: (
        uses_avro(opts) and v not in ("null", "deflate", "snappy", "bzip2", "xz", "zstandard")
    ),
    fix="use one of 'null', 'deflate', 'snappy', 'bzip2', 'xz', 'zstandard' (Paimon fails on "
    "any other name too)",
).row("avro.codec", STRING)
AVRO_ROW_NAME_MAPPING = honoured(
    "renames the records of Avro data files ('<record name>:<new name>,…')",
).row("avro.row-name-mapping", STRING)
MANIFEST_FORMAT = honoured(
    "the format of manifests, manifest lists and index manifests (Paimon 0.9's "
    "'manifest.format': avro, orc or parquet, with 'manifest.compression' as that format's "
    "codec); lakeops writes the table's format and reads each file by its magic bytes",
    refuse_value=lambda v, opts: (
        norm(v) not in ("avro", "orc", "parquet") or manifest_codec_refused(opts)
    ),
    fix="use 'avro', 'orc' or 'parquet', with a 'manifest.compression' (or 'orc.compress' / "
    "'parquet.compression') that format writes",
).row("manifest.format", STRING, "avro")
MANIFEST_COMPRESSION = honoured(
    "the codec of manifests, manifest lists and index manifests, in the naming of the "
    "'manifest.format' (Avro: null, deflate, snappy, bzip2, xz, zstd; ORC: none, zlib, "
    "snappy, lz4, zstd; Parquet: uncompressed, snappy, gzip, zstd)",
    refuse_value=lambda _, opts: manifest_codec_refused(opts),
    fix="use a codec of the table's 'manifest.format' (listed above; ORC's lzo and Parquet's "
    "lzo, brotli and lz4 are not written by lakeops)",
).row("manifest.compression", STRING, DEFAULT_COMPRESSION)
PARTITION_DEFAULT_NAME = honoured("the name of null/blank partition values").row(
    "partition.default-name", STRING, "__DEFAULT_PARTITION__"
)
#: Paimon 1.0+, default true; 0.9 always names as if true
PARTITION_LEGACY_NAME = honoured(
    "how partition values are rendered in directory names (lakeops renders every type as "
    "Paimon does, both ways)",
).row("partition.legacy-name", BOOL, True, rng())
_TYPE = honoured(
    "lakeops serves ordinary Paimon tables only (not format or materialized tables)",
    refuse_value=unless("table"),
    fix="use a 'table' table",
    reads_wrong=True,
).rows("type")
_BRANCH = honoured(
    "lakeops reads and writes the main branch only",
    refuse_value=unless("main"),
    fix="remove it (use the main branch)",
    reads_wrong=True,
).rows("branch")
_PRIMARY_KEY_NULLABLE = honoured(
    "primary-key fields are NOT NULL, as Paimon's default",
    refuse_value=TRUE_REFUSED,
    fix="keep primary keys NOT NULL",
).row("primary-key.nullable", BOOL, False, rng())
_DYNAMIC = honoured("dynamic bucket assignment")
DYNAMIC_BUCKET_TARGET_ROW_NUM = _DYNAMIC.row(
    "dynamic-bucket.target-row-num", INT, 2_000_000, rng(1, LONG_MAX, meaning="rows per bucket")
)
DYNAMIC_BUCKET_MAX_BUCKETS = _DYNAMIC.row(
    "dynamic-bucket.max-buckets",
    INT,
    -1,
    rng(1, INT_MAX, -1, meaning="buckets per partition (-1: unlimited)"),
)
DYNAMIC_BUCKET_INITIAL_BUCKETS = _DYNAMIC.row(
    "dynamic-bucket.initial-buckets", INT, None, rng(1, INT_MAX, meaning=_COUNT)
)
DYNAMIC_BUCKET_ASSIGNER_PARALLELISM = _DYNAMIC.row(
    "dynamic-bucket.assigner-parallelism", INT, None, rng(1, INT_MAX, meaning=_COUNT)
)
_CROSS_PARTITION = honoured("cross-partition upsert index")
#: unset: the writer's ``parallelism`` or the cores available stand in for Paimon's 10
CROSS_PARTITION_BOOTSTRAP_PARALLELISM = _CROSS_PARTITION.row(
    "cross-partition-upsert.bootstrap-parallelism", INT, None, rng(1, INT_MAX, meaning=_COUNT)
)
CROSS_PARTITION_INDEX_TTL = _CROSS_PARTITION.row(
    "cross-partition-upsert.index-ttl", DURATION, None, rng(1, meaning="how long keys are kept")
)


def bucket_count_set(options: Mapping[str, str]) -> bool:
    """Whether ``options`` give a bucket count (anything but unset, blank or -1), read as the
    text is, before :data:`BUCKET` parses it."""
    return (BUCKET.text(options) or "-1") not in ("-1", "")


# DDL-only keys, refused at creation
_KEYS = refused(
    "keys are given as arguments, not as options",
    "pass primary_keys=[...] / partition_keys=[...] to create_table",
).rows("primary-key", "partition")
_PATH = refused(
    "the table always lives at <warehouse>/<database>.db/<table>",
    "remove it",
).rows("path")

ROWS: tuple[Option[Any], ...] = (
    BUCKET,
    POSTPONE_DEFAULT_BUCKET_NUM,
    POSTPONE_TARGET_ROW_NUM_PER_BUCKET,
    POSTPONE_TARGET_SIZE_PER_BUCKET,
    POSTPONE_MERGE_ON_READ,
    POSTPONE_BATCH_WRITE_FIXED_BUCKET,
    BUCKET_KEY,
    *_BUCKET_FUNCTION,
    FILE_FORMAT,
    FILE_FORMAT_PER_LEVEL,
    CHANGELOG_FILE_FORMAT,
    FILE_COMPRESSION,
    FILE_COMPRESSION_PER_LEVEL,
    FILE_COMPRESSION_ZSTD_LEVEL,
    CHANGELOG_FILE_COMPRESSION,
    AVRO_CODEC,
    AVRO_ROW_NAME_MAPPING,
    MANIFEST_FORMAT,
    MANIFEST_COMPRESSION,
    PARTITION_DEFAULT_NAME,
    PARTITION_LEGACY_NAME,
    *_TYPE,
    *_BRANCH,
    _PRIMARY_KEY_NULLABLE,
    DYNAMIC_BUCKET_TARGET_ROW_NUM,
    DYNAMIC_BUCKET_MAX_BUCKETS,
    DYNAMIC_BUCKET_INITIAL_BUCKETS,
    DYNAMIC_BUCKET_ASSIGNER_PARALLELISM,
    CROSS_PARTITION_BOOTSTRAP_PARALLELISM,
    CROSS_PARTITION_INDEX_TTL,
    *_KEYS,
    *_PATH,
)


def manifest_format(options: Mapping[str, str]) -> ManifestFormat:
    """How a table with ``options`` writes its manifests (``manifest.format``,
    ``manifest.compression`` and the ORC / Parquet codec options that win over it, read
    through their rows); :class:`ConfigurationError` for a format or codec Paimon does not
    write (or lakeops cannot write exactly)."""
    return ManifestFormat.of(
        MANIFEST_FORMAT.get(options),
        MANIFEST_COMPRESSION.get(options),
        orc_compress=ORC_OPTIONS.find(options, key="orc.compress"),
        parquet_compression=PARQUET_OPTIONS.find(options, key="parquet.compression"),
    )


def manifest_codec_refused(options: Mapping[str, str]) -> bool:
    """Whether the manifest format and codec of ``options`` are ones lakeops cannot write
    (an unknown format is the 'manifest.format' rule's to name)."""
    if norm(options.get("manifest.format", "avro")) not in ("avro", "orc", "parquet"):
        return False
    try:
        manifest_format(options)
    except ConfigurationError:
        return True
    return False
