"""The one registry of Paimon's table options: what lakeops does with each of them.

Every option Paimon defines for a table (``CoreOptions`` of Paimon 0.9 and of today's master,
the Flink and Spark connector options, the Iceberg-compatibility, Hive, RocksDB, Kafka-log and
format options) has exactly one entry here, marked

* ``honoured``  — lakeops implements it exactly as Paimon does (possibly only for some values:
  the others are refused, e.g. ``bucket`` = -2 or ``file.format`` = ``lance``);
* ``ignorable`` — it is engine-specific or has no effect on the data and files lakeops reads and
  writes (Flink sink/source settings, streaming read-start settings, memory and parallelism
  tuning, manifest tuning, statistics collection, lookup caches …). It is stored and written
  back untouched, so Paimon's engines still see it;
* ``refused``   — lakeops cannot honour it exactly (again possibly only for some values).

Pattern keys (``fields.<field>.aggregate-function``, ``file-index.<type>.columns``,
``parquet.<option>`` …) are entries too.

How the registry is used:

* :func:`check_create_options` — at ``Catalog.create_table`` (and everything that funnels into it:
  the CLI, the demo, Airflow and Spark helpers): an unknown key is a
  :class:`~lakeops.errors.ConfigurationError` with the closest known keys (``difflib``); a
  refused option or value is an :class:`~lakeops.errors.UnsupportedFeatureError` naming it and
  what to do. Nothing is written.
* :func:`check_writable` — before lakeops writes, commits, compacts or runs a maintenance action
  that deletes files (expire, orphan removal, rollback) on an existing table, which may have been
  created and altered by another engine: every refused option or value is an
  :class:`~lakeops.errors.UnsupportedFeatureError`.
* :func:`check_readable` — before any read: only the refusals whose result would be wrong or
  unreadable (``reads_wrong``), e.g. postpone buckets, field default values, fallback branches.
* :func:`check_data_file` / :func:`check_data_files` — every data file must be Parquet, ORC or
  Avro (the format is the file name's extension, as Paimon's ``DataFileMeta.fileFormat()``);
  a file in another format refuses reads of it and writes/compactions of the table; a file at
  an external path on another file system is refused too.

Unknown keys on an existing table (typically an option of a newer Paimon than this registry):
lakeops cannot know whether the option changes how files must be written or merged, so it
**refuses to write, commit, compact and delete files** (an error naming the key), and **allows
reads** — reading never changes the table, and every option that changes what a read must return
that Paimon has today is in the registry. Keys under prefixes that only tune an engine or a
file-format library (``sink.``, ``source.``, ``rocksdb.``, ``parquet.``, ``orc.``, ``kafka.``,
``fs.`` …) are ignorable even when the exact key is new.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from lakeops.errors import ConfigurationError, UnsupportedFeatureError
from lakeops.io.data_formats import READABLE_FORMATS
from lakeops.io.data_formats import format_of as file_format

__all__ = [
    "OptionRule",
    "OptionStatus",
    "REGISTRY",
    "check_create_options",
    "check_data_file",
    "check_data_files",
    "check_readable",
    "check_writable",
    "file_format",
    "known_keys",
    "refusals",
    "rule_for",
    "suggest",
    "unknown_keys",
]

#: data file formats lakeops writes (lakeops.kv.formats writes them)
WRITABLE_FORMATS = ("parquet", "orc", "avro")

OptionStatus = Literal["honoured", "ignorable", "refused"]
#: ``(value, all options) -> True`` when lakeops cannot honour this value
ValueRule = Callable[[str, Mapping[str, str]], bool]


@dataclass(frozen=True)
class OptionRule:
    """What lakeops does with one option key (or key pattern).

    Attributes:
        key: the exact key, or a pattern such as ``fields.<field>.aggregate-function``.
        status: ``honoured``, ``ignorable`` or ``refused``.
        note: what lakeops does with it, or why it ignores / refuses it.
        fix: for refusals, what the user can do.
        refuse_value: for honoured and ignorable options, the values lakeops cannot honour.
        reads_wrong: a refusal of this option also refuses reads (their result would be wrong).
    """

    key: str
    status: OptionStatus
    note: str
    fix: str = ""
    refuse_value: ValueRule | None = None
    reads_wrong: bool = False

    @property
    def is_pattern(self) -> bool:
        return "<" in self.key

    def matches(self, key: str) -> bool:
        if not self.is_pattern:
            return key == self.key
        return _pattern_regex(self.key).fullmatch(key) is not None

    def refuses(self, value: str, options: Mapping[str, str]) -> bool:
        """Whether lakeops cannot honour this option with ``value``."""
        if self.status == "refused":
            return True
        return self.refuse_value is not None and self.refuse_value(value, options)


@functools.cache
def _pattern_regex(pattern: str) -> re.Pattern[str]:
    parts = re.split(r"<[^>]+>", pattern)
    return re.compile(".+".join(re.escape(p) for p in parts))


# ------------------------------------------------------------------------------ value rules
def _norm(value: str) -> str:
    return value.strip().lower()


def _unless(*allowed: str) -> ValueRule:
    """Refuse every value but ``allowed`` (case-insensitive, trimmed)."""
    return lambda value, _: _norm(value) not in allowed


def _manifest_codec_refused(options: Mapping[str, str]) -> bool:
    """Whether the manifest format and codec of ``options`` are ones lakeops cannot write
    (an unknown format is the 'manifest.format' rule's to name)."""
    from lakeops.format.manifest_format import ManifestFormat

    if _norm(options.get("manifest.format", "avro")) not in ("avro", "orc", "parquet"):
        return False
    try:
        ManifestFormat.of(options)
    except ConfigurationError:
        return True
    return False


_TRUE_REFUSED = _unless("false")
_SET_REFUSED: ValueRule = lambda value, _: value.strip() != ""  # noqa: E731


def _external_strategy(value: str, options: Mapping[str, str]) -> bool:
    writes = ("none", "round-robin", "specific-fs")
    return _norm(value) not in writes and options.get("data-file.external-paths", "").strip() != ""


def _per_level_formats(value: str, _: Mapping[str, str]) -> bool:
    formats = [p.split(":", 1)[-1] for p in value.split(",") if p.strip()]
    return any(_norm(f) not in WRITABLE_FORMATS for f in formats)


def _changelog_format(value: str, _: Mapping[str, str]) -> bool:
    return value.strip() != "" and _norm(value) not in WRITABLE_FORMATS


def _uses_avro(options: Mapping[str, str]) -> bool:
    """Whether a table writes Avro data files at some level (only then 'avro.codec' counts)."""
    keys = ("file.format", "file.format.per.level", "changelog-file.format")
    return any("avro" in options.get(k, "").lower() for k in keys)


# --------------------------------------------------------------------------------- registry
_ENTRIES: list[OptionRule] = []


def _add(
    status: OptionStatus,
    keys: Iterable[str],
    note: str,
    *,
    fix: str = "",
    refuse_value: ValueRule | None = None,
    reads_wrong: bool = False,
) -> None:
    for key in keys:
        _ENTRIES.append(OptionRule(key, status, note, fix, refuse_value, reads_wrong))


#: an option lakeops honours (``_add`` with the status bound)
_honoured = functools.partial(_add, "honoured")


def _ignorable(keys: Iterable[str], note: str) -> None:
    _add("ignorable", keys, note)


def _refused(keys: Iterable[str], note: str, fix: str, *, reads_wrong: bool = False) -> None:
    _add("refused", keys, note, fix=fix, reads_wrong=reads_wrong)


_REMOVE = "remove the option (ALTER TABLE ... RESET) or use Paimon itself for this table"

# ---- honoured: layout, keys, buckets
_honoured(
    ["bucket"],
    "postpone bucket mode (-2) is not supported: it keeps new files in 'bucket-postpone' "
    "directories that only Paimon's compaction moves into real buckets (lakeops serves fixed "
    "bucket counts > 0 and dynamic buckets, -1)",
    refuse_value=lambda v, _: v.strip() == "-2",
    fix="use a fixed bucket count (e.g. '4') or dynamic buckets ('-1'); for a postpone table, "
    "let Paimon compact it and change 'bucket' to a fixed count",
    reads_wrong=True,
)
_honoured(
    ["bucket-key"],
    "bucket keys (a subset of the trimmed primary key; for an append table with a bucket "
    "count, the columns whose hash picks the bucket)",
)
_honoured(
    ["bucket-function.type"],
    "Paimon's default bucket function (hash % buckets); 'mod' and 'hive' place keys differently",
    refuse_value=_unless("default"),
    fix="use 'default'",
)
_honoured(
    ["file.format"],
    "data files are written as Parquet, ORC or Avro, with Paimon's types and codecs per format "
    "(read by each file's extension)",
    refuse_value=lambda v, _: _norm(v) not in WRITABLE_FORMATS,
    fix="use 'parquet', 'orc' or 'avro'",
)
_honoured(
    ["file.format.per.level"],
    "the format of the files written at each level ('0:avro,5:parquet'); Parquet, ORC and Avro",
    refuse_value=_per_level_formats,
    fix="name only 'parquet', 'orc' or 'avro' per level",
)
_honoured(
    ["changelog-file.format"],
    "the format of changelog files (default: the level's format); Parquet, ORC and Avro",
    refuse_value=_changelog_format,
    fix="remove it or use 'parquet', 'orc' or 'avro'",
)
_honoured(
    [
        "file.compression",
        "file.compression.per.level",
        "file.compression.zstd-level",
        "changelog-file.compression",
    ],
    "the codec of each data file, per level; a codec pyarrow lacks for the format (lzo, ORC "
    "brotli) becomes zstd, which every Paimon reader decodes",
)
_honoured(
    ["avro.codec"],
    "the codec of Avro data files, by Avro's CodecFactory names (default: zstandard at "
    "'file.compression.zstd-level' when 'file.compression' is zstd, else snappy)",
    refuse_value=lambda v, opts: (
        _uses_avro(opts) and v not in ("null", "deflate", "snappy", "bzip2", "xz", "zstandard")
    ),
    fix="use one of 'null', 'deflate', 'snappy', 'bzip2', 'xz', 'zstandard' (Paimon fails on "
    "any other name too)",
)
_honoured(
    ["avro.row-name-mapping"],
    "renames the records of Avro data files ('<record name>:<new name>,…')",
)
_honoured(
    ["manifest.format"],
    "the format of manifests, manifest lists and index manifests (Paimon 0.9's "
    "'manifest.format': avro, orc or parquet, with 'manifest.compression' as that format's "
    "codec); lakeops writes the table's format and reads each file by its magic bytes",
    refuse_value=lambda v, opts: (
        _norm(v) not in ("avro", "orc", "parquet") or _manifest_codec_refused(opts)
    ),
    fix="use 'avro', 'orc' or 'parquet', with a 'manifest.compression' (or 'orc.compress' / "
    "'parquet.compression') that format writes",
)
_honoured(
    ["manifest.compression"],
    "the codec of manifests, manifest lists and index manifests, in the naming of the "
    "'manifest.format' (Avro: null, deflate, snappy, bzip2, xz, zstd; ORC: none, zlib, "
    "snappy, lz4, zstd; Parquet: uncompressed, snappy, gzip, zstd)",
    refuse_value=lambda _, opts: _manifest_codec_refused(opts),
    fix="use a codec of the table's 'manifest.format' (listed above; ORC's lzo and Parquet's "
    "lzo, brotli and lz4 are not written by lakeops)",
)
_honoured(["partition.default-name"], "the name of null/blank partition values")
_honoured(
    ["partition.legacy-name"],
    "how partition values are rendered in directory names (issue 14 item 3 makes lakeops "
    "render every type as Paimon does, both ways)",
)
_honoured(
    ["type"],
    "lakeops serves ordinary Paimon tables only (not format or materialized tables)",
    refuse_value=_unless("table"),
    fix="use a 'table' table",
    reads_wrong=True,
)
_honoured(
    ["branch"],
    "lakeops reads and writes the main branch only",
    refuse_value=_unless("main"),
    fix="remove it (use the main branch)",
    reads_wrong=True,
)
_honoured(
    ["primary-key.nullable"],
    "primary-key fields are NOT NULL, as Paimon's default",
    refuse_value=_TRUE_REFUSED,
    fix="keep primary keys NOT NULL",
)
_honoured(
    [
        "dynamic-bucket.target-row-num",
        "dynamic-bucket.max-buckets",
        "dynamic-bucket.initial-buckets",
        "dynamic-bucket.assigner-parallelism",
    ],
    "dynamic bucket assignment",
)
_honoured(
    ["cross-partition-upsert.bootstrap-parallelism", "cross-partition-upsert.index-ttl"],
    "cross-partition upsert index",
)

# ---- honoured: merging
_honoured(["merge-engine"], "deduplicate, partial-update, aggregation, first-row")
_honoured(
    [
        "ignore-delete",
        "first-row.ignore-delete",
        "deduplicate.ignore-delete",
        "partial-update.ignore-delete",
        "ignore-update-before",
    ],
    "dropping retractions",
)
_honoured(["sequence.field", "sequence.field.sort-order"], "sequence fields and their order")
_honoured(
    ["sequence.snapshot-ordering"],
    "records are ordered by sequence number / sequence.field, not by snapshot id",
    refuse_value=_TRUE_REFUSED,
    fix="remove it",
)
_honoured(["rowkind.field"], "row kind taken from a STRING column")
_honoured(
    [
        "aggregation.remove-record-on-delete",
        "partial-update.remove-record-on-delete",
        "partial-update.remove-record-on-sequence-group",
        "fields.default-aggregate-function",
        "fields.<field>.aggregate-function",
        "fields.<field>.ignore-retract",
        "fields.<field>.list-agg-delimiter",
        "fields.<field>.distinct",
        "fields.<field>.nested-key",
        "fields.<fields>.sequence-group",
        "fields.<field>.ts-field",
    ],
    "aggregation and partial-update merge options",
)
_refused(
    [
        "fields.<field>.nested-key-null-strategy",
        "fields.<field>.nested-sequence-field",
        "fields.<field>.count-limit",
        "fields.<field>.map.storage-layout",
    ],
    "this aggregate option is not implemented by lakeops",
    _REMOVE,
)
_refused(
    ["fields.<field>.default-value"],
    "Paimon fills NULLs of this column with a default value when reading; lakeops does not",
    _REMOVE,
    reads_wrong=True,
)
_refused(
    ["sequence.auto-padding"],
    "sequence-field padding (Paimon < 0.9) is not implemented",
    _REMOVE,
)

# ---- honoured: writing, compaction, changelog, retention
_honoured(
    [
        "target-file-size",
        "write-buffer-size",
        "write-only",
        "write.compaction-skip",
        "num-sorted-run.compaction-trigger",
        "num-sorted-run.stop-trigger",
        "num-levels",
        "compaction.max-size-amplification-percent",
        "compaction.size-ratio",
        "compaction.small-file-ratio",
        "compaction.optimization-interval",
        "compaction.total-size-threshold",
        "compaction.incremental-size-threshold",
        "compaction.offpeak.start.hour",
        "compaction.offpeak.end.hour",
        "compaction.offpeak-ratio",
        "compaction.force-up-level-0",
        "compaction.force-rewrite-all-files",
        "commit.force-compact",
        "lookup-compact",
        "lookup-compact.max-interval",
        "force-lookup",
        "record-level.expire-time",
        "record-level.time-field",
        "record-level.time-field-type",
    ],
    "writer and primary-key compaction",
)
_honoured(
    ["changelog-producer"],
    "none, input, lookup, full-compaction",
)
_honoured(
    [
        "changelog-producer.row-deduplicate",
        "changelog-producer.row-deduplicate-ignore-fields",
        "full-compaction.delta-commits",
        "lookup.cache-max-memory-size",
    ],
    "changelog production",
)
_honoured(
    [
        "snapshot.num-retained.min",
        "snapshot.num-retained.max",
        "snapshot.time-retained",
        "snapshot.expire.limit",
        "changelog.num-retained.min",
        "changelog.num-retained.max",
        "changelog.time-retained",
        "consumer.expiration-time",
    ],
    "snapshot and changelog retention, and how long a consumer holds expiry back "
    "(table.expire_snapshots)",
)
_honoured(
    ["commit.timeout", "commit.max-retries", "commit.min-retry-wait", "commit.max-retry-wait"],
    "how long a commit that lost the race for the next snapshot keeps trying, and the jittered "
    "pauses between its attempts (lakeops.commit.retry)",
)
_honoured(["manifest.merge-min-count"], "base manifests are merged past this count")
# primary-key tables: reads skip level 0 and apply each file's vector (lakeops.read.scan);
# writes and compactions are refused here. Append tables: vectors are applied on read, and
# writes are allowed (TableOptions.require_writable drops this option for them;
# lakeops.compact.append refuses to rewrite files that have vectors)
_honoured(
    ["deletion-vectors.enabled"],
    "lakeops reads deletion vectors of primary-key tables but neither writes nor maintains "
    "them; its writes would stay invisible in level 0 and its compactions would leave rows "
    "that Paimon's deletion-vector reads return twice",
    refuse_value=_TRUE_REFUSED,
    fix="use Paimon to write and compact this table, or disable deletion vectors",
)
_honoured(
    ["deletion-vectors.bitmap64", "deletion-vectors.modifiable", "deletion-vectors.merge-on-read"],
    "deletion-vector variants (deletion vectors are not written by lakeops)",
    refuse_value=_TRUE_REFUSED,
    fix="remove it",
)

# ---- where files live (lakeops.store.locations: one place resolves every file's location)
_honoured(
    ["data-file.external-paths"],
    "files at an entry's _EXTERNAL_PATH are read when they lie below one of these roots on the "
    "table's own file system; new files go there with the strategy "
    "(data-file.external-paths.strategy)",
)
_honoured(
    ["data-file.external-paths.strategy"],
    "none (files stay in the table), round-robin and specific-fs (round robin over the roots "
    "of one scheme) are written as Paimon does; entropy-inject and weight-robin are not",
    refuse_value=_external_strategy,
    fix="set it to 'round-robin' (or 'none')",
)
_honoured(
    ["data-file.external-paths.specific-fs"],
    "the scheme of the roots the specific-fs strategy writes to",
)
_ignorable(
    ["data-file.external-paths.weights"],
    "only with the weight-robin strategy, which lakeops refuses to write",
)
_honoured(
    ["data-file.path-directory"],
    "bucket directories are <table>/<dir>/<partition>/bucket-N, read and written",
)
_honoured(
    ["index-file-in-data-file-dir"],
    "bucket (HASH) index files are read from and written to the bucket directory (or the "
    "external path of the entry) instead of index/",
)
_honoured(
    ["data-file.prefix", "changelog-file.prefix"],
    "file name prefixes of the data and changelog files lakeops writes",
)
_honoured(
    ["data-file.thin-mode"],
    "lakeops reads thin-mode files but writes files with the _KEY_ columns",
    refuse_value=_TRUE_REFUSED,
    fix="remove it",
)
_honoured(
    ["pk-clustering-override"],
    "files are sorted by the primary key; clustering by other columns changes how files merge",
    refuse_value=_TRUE_REFUSED,
    fix="remove it",
    reads_wrong=True,
)
_honoured(
    ["row-tracking.enabled", "data-evolution.enabled"],
    "row tracking and data evolution (append tables) are not implemented",
    refuse_value=_TRUE_REFUSED,
    fix="remove it",
    reads_wrong=True,
)
_honoured(
    ["chain-table.enabled"],
    "chain tables read across partitions of several branches",
    refuse_value=_TRUE_REFUSED,
    fix="remove it",
    reads_wrong=True,
)
_refused(
    [
        "scan.fallback-branch",
        "scan.fallback-delta-branch",
        "scan.fallback-snapshot-branch",
        "scan.primary-branch",
    ],
    "Paimon reads partitions missing from this branch from another branch",
    _REMOVE,
    reads_wrong=True,
)
_refused(
    ["blob-field", "vector-field", "blob-descriptor-field", "blob-view-field"],
    "BLOB / VECTOR column storage is not implemented",
    _REMOVE,
    reads_wrong=True,
)
_refused(
    [
        "pk-bitmap.index.columns",
        "pk-btree.index.columns",
        "pk-full-text.index.columns",
        "pk-multivalue.index.columns",
        "pk-vector.index.columns",
    ],
    "lakeops does not maintain primary-key table indexes; they would go stale",
    _REMOVE,
)
_honoured(
    ["query-auth.enabled"],
    "catalog query authorisation (row/column permissions) cannot be applied by lakeops",
    refuse_value=_TRUE_REFUSED,
    fix="read and write this table through its REST catalog",
    reads_wrong=True,
)
_honoured(
    ["write.sequence-number-init-mode"],
    "a writer's first sequence number follows the existing files (scan)",
    refuse_value=_unless("scan"),
    fix="use 'scan'",
)

# ---- refused: actions Paimon's commit performs that lakeops does not
_honoured(
    ["metadata.iceberg-compatible"],
    "Iceberg metadata (Paimon 0.9) is not written by lakeops commits",
    refuse_value=_TRUE_REFUSED,
    fix="use Paimon to write this table, or disable Iceberg compatibility",
)
_honoured(
    ["metadata.iceberg.storage"],
    "Iceberg metadata is not written by lakeops commits",
    refuse_value=_unless("disabled"),
    fix="use Paimon to write this table, or set it to 'disabled'",
)
_honoured(
    ["commit.callbacks", "tag.callbacks"],
    "Java callbacks cannot run in lakeops",
    refuse_value=_SET_REFUSED,
    fix="remove it or use Paimon to write this table",
)
_honoured(
    ["tag.automatic-creation"],
    "'process-time': lakeops commits create (and retire) Paimon's automatic tags, as Paimon's "
    "committer does (lakeops.maintenance.auto_tags); 'watermark' needs the snapshot watermarks "
    "that only Flink writes, and 'batch' is Paimon's Flink batch sink replacing the day's tag, "
    "which lakeops never moves",
    refuse_value=_unless("none", "process-time"),
    fix="use 'process-time' or 'none', or write this table with Paimon's Flink jobs",
)


def _auto_tags_on(options: Mapping[str, str]) -> bool:
    return _norm(options.get("tag.automatic-creation", "none")) == "process-time"


_honoured(
    [
        "tag.creation-period",
        "tag.creation-delay",
        "tag.num-retained-max",
        "tag.default-time-retained",
        "tag.automatic-completion",
    ],
    "automatic tags after lakeops commits (lakeops.maintenance.auto_tags); "
    "'tag.default-time-retained' is written into every tag created",
)
_honoured(
    ["tag.period-formatter"],
    "names of automatic tags: 'with_dashes' and 'without_dashes' (Paimon 0.9); newer Paimon's "
    "'without_dashes_and_spaces' is refused while automatic tags are on",
    refuse_value=lambda value, options: (
        _auto_tags_on(options) and _norm(value) not in ("with_dashes", "without_dashes")
    ),
    fix="use 'with_dashes' or 'without_dashes', or set 'tag.automatic-creation' to 'none'",
)
_honoured(
    ["tag.creation-period-duration"],
    "newer Paimon's custom tag period, which replaces 'tag.creation-period'; refused while "
    "automatic tags are on (lakeops names periods as Paimon 0.9 does)",
    refuse_value=lambda value, options: _auto_tags_on(options) and value.strip() != "",
    fix="remove it and use 'tag.creation-period', or set 'tag.automatic-creation' to 'none'",
)
_honoured(
    ["partition.expiration-time"],
    "lakeops commits do not expire partitions",
    refuse_value=_SET_REFUSED,
    fix="remove it or use Paimon to write this table",
)
_honoured(
    ["metastore.partitioned-table"],
    "lakeops does not register partitions in a metastore",
    refuse_value=_TRUE_REFUSED,
    fix="remove it or use Paimon to write this table",
)

# ---- refused at creation: DDL-only keys
_refused(
    ["primary-key", "partition"],
    "keys are given as arguments, not as options",
    "pass primary_keys=[...] / partition_keys=[...] to create_table",
)
_refused(
    ["path"],
    "the table always lives at <warehouse>/<database>.db/<table>",
    "remove it",
)

# ---- ignorable: physical details Paimon's readers do not depend on
_ignorable(
    [
        "file.block-size",
        "file.suffix.include.compression",
        "target-file-row-num",
        "parquet.enable.dictionary",
        "write.batch-size",
        "write.batch-memory",
        "file-index.in-manifest-threshold",
        "file-index.read.enabled",
        "manifest.target-file-size",
        "manifest.full-compaction-threshold-size",
        "manifest.delete-file-drop-stats",
        "manifest.merge-optimize.enabled",
        "manifest-sort.enabled",
        "manifest-sort.max-rewrite-size",
        "manifest-sort.partition-field",
        "deletion-vector.index-file.target-size",
        "metadata.stats-mode",
        "metadata.stats-mode.per.level",
        "metadata.stats-dense-store",
        "metadata.stats-keep-first-n-columns",
        "changelog-file.stats-mode",
        "fields.<field>.stats-mode",
        "file-index.<type>.columns",
        "file-index.<type>.<option>",
        "lookup.remote-file.enabled",
        "lookup.remote-file.level-threshold",
        "overwrite-upgrade",
        "commit.discard-duplicate-files",
        "commit.force-create-snapshot",
        "snapshot.ignore-empty-commit",
        "snapshot.clean-empty-directories",
        "snapshot.expire.clean-empty-directories",
        "snapshot.expire.execution-mode",
    ],
    "file-layout and metadata details that Paimon's readers do not depend on",
)
# ---- ignorable: memory, spilling, threads, retries (how, not what, is written)
_ignorable(
    [
        "write-buffer-spillable",
        "write-buffer-spill.max-disk-size",
        "write-buffer-for-append",
        "write-max-writers-to-spill",
        "write-manifest-cache",
        "sort-engine",
        "sort-spill-threshold",
        "sort-spill-buffer-size",
        "spill-compression",
        "spill-compression.zstd-level",
        "page-size",
        "cache-page-size",
        "local-sort.max-num-file-handles",
        "local-merge-buffer-size",
        "async-file-write",
        "file-reader-async-threshold",
        "read.batch-size",
        "delete-file.thread-num",
        "file-operation.thread-num",
        "commit.user-prefix",
        "lookup-wait",
        "changelog-producer.lookup-wait",
        "lookup.merge-records-threshold",
        "lookup.merge-buffer-size",
        "local-kv-db.block-size",
    ],
    "execution tuning; the data written is the same",
)
# ---- ignorable: lookup joins and caches of Paimon's engines
_ignorable(
    [
        "lookup.local-file-type",
        "lookup.hash-load-factor",
        "lookup.cache-file-retention",
        "lookup.cache-max-disk-size",
        "lookup.cache-spill-compression",
        "lookup.cache.bloom.filter.enabled",
        "lookup.cache.bloom.filter.fpp",
        "lookup.cache-rows",
        "lookup.cache.high-priority-pool-ratio",
        "lookup.continuous.discovery-interval",
        "lookup.blob-as-descriptor",
        "lookup.async",
        "lookup.async-thread-number",
        "lookup.bootstrap-parallelism",
        "lookup.cache",
        "lookup.dynamic-partition",
        "lookup.dynamic-partition.refresh-interval",
        "lookup.dynamic-partition.refresh.async",
        "lookup.refresh.async",
        "lookup.refresh.async.pending-snapshot-count",
        "lookup.refresh.full-load-threshold",
        "lookup.refresh.time-periods-blacklist",
    ],
    "lookup-join caches of Paimon's engines",
)
# ---- ignorable: read-start and streaming settings (lakeops reads take snapshot_id explicitly)
_ignorable(
    [
        "scan.mode",
        "scan.timestamp",
        "scan.timestamp-millis",
        "scan.watermark",
        "scan.file-creation-time-millis",
        "scan.creation-time-millis",
        "scan.snapshot-id",
        "scan.tag-name",
        "scan.version",
        "scan.bounded.watermark",
        "scan.manifest.parallelism",
        "scan.max-splits-per-task",
        "scan.plan-sort-partition",
        "scan.bucket",
        "scan.ignore-corrupt-files",
        "scan.ignore-lost-files",
        "scan.fallback-branch.read-fail-fast",
        "scan.plan-auto-tag-for-read.time-retained",
        "scan.bounded",
        "scan.dedicated-split-generation",
        "scan.max-snapshot.count",
        "scan.remove-normalize",
        "scan.split-enumerator.batch-size",
        "scan.split-enumerator.mode",
        "scan.watermark.alignment.group",
        "scan.watermark.alignment.max-drift",
        "scan.watermark.alignment.update-interval",
        "scan.watermark.emit.strategy",
        "scan.watermark.idle-timeout",
        "scan.infer-parallelism",
        "scan.infer-parallelism.max",
        "scan.parallelism",
        "scan.push-down",
        "scan.partitions",
        "log.scan",
        "log.scan.timestamp-millis",
        "continuous.discovery-interval",
        "streaming.read.snapshot.delay",
        "stream-scan-mode",
        "streaming-read-mode",
        "streaming-read-overwrite",
        "streaming-read-append-overwrite",
        "batch-scan-mode",
        "incremental-between",
        "incremental-between-scan-mode",
        "incremental-between-timestamp",
        "incremental-between-tag-to-snapshot",
        "incremental-to-auto-tag",
        "consumer-id",
        "consumer.mode",
        "consumer.ignore-progress",
        "consumer.changelog-only",
        "source.split.target-size",
        "source.split.open-file-cost",
        "source.split.target-size-with-column-pruning",
        "key-value.sequence_number.enabled",
        "table-read.sequence-number.enabled",
        "global-index.enabled",
        "global-index.search-mode",
        "scalar-index.search-mode",
        "full-text-index.search-mode",
        "vector-index.search-mode",
        "vector-search.distribute.enabled",
        "vector-search.lateral-join.batch-size",
        "vector-search.lateral-join.parallelism",
        "read.shuffle-bucket-with-partition",
        "streaming-read.shuffle-bucket-with-partition",
        "bucket-append-ordered",
    ],
    "read-start and streaming-read settings of Paimon's engines",
)
# ---- ignorable: engine and connector settings (Flink, Spark, Hive, log system)
_ignorable(
    [
        "sink.parallelism",
        "sink.watermark-time-zone",
        "sink.process-time-zone",
        "sink.committer-cpu",
        "sink.committer-memory",
        "sink.committer-operator-chaining",
        "sink.cross-partition.managed-memory",
        "sink.managed.writer-buffer-memory",
        "sink.savepoint.auto-tag",
        "sink.use-managed-memory-allocator",
        "sink.writer-cpu",
        "sink.writer-memory",
        "sink.clustering.by-columns",
        "sink.clustering.sample-factor",
        "sink.clustering.sort-in-cluster",
        "sink.clustering.strategy",
        "sink.coordinator-commit.enabled",
        "sink.key-only-deletes.enabled",
        "sink.operator-uid.suffix",
        "sink.writer-refresh-detectors",
        "sink.writer-coordinator.cache-expire-after-access",
        "sink.writer-coordinator.cache-memory",
        "sink.writer-coordinator.cache-soft-values",
        "sink.writer-coordinator.enabled",
        "sink.writer-coordinator.page-size",
        "sink.writer-coordinator.prefetch-manifests",
        "source.checkpoint-align.enabled",
        "source.checkpoint-align.timeout",
        "source.operator-uid.suffix",
        "changelog-producer.compaction-interval",
        "changelog.precommit-compact.buffer-size",
        "changelog.precommit-compact.thread-num",
        "precommit-compact",
        "commit.custom-listeners",
        "end-input.watermark",
        "end-input.check-partition-expire",
        "filesystem.job-level-settings.enabled",
        "partition.idle-time-to-done",
        "partition.end-input-to-done",
        "partition.mark-done-action.mode",
        "partition.mark-done.recover-from-state",
        "partition.time-interval",
        "partition.mark-done-action",
        "partition.mark-done-action.custom.class",
        "partition.mark-done-action.http.params",
        "partition.mark-done-action.http.url",
        "partition.sink-strategy",
        "partition.idle-time-to-report-statistic",
        "unaware-bucket.compaction.parallelism",
        "unaware-bucket.no-shuffle",
        "compaction.bucket-distribution-strategy",
        "delete.force-produce-changelog",
        "auto-create",
        "dynamic-partition-overwrite",
        "log.system",
        "log.system.partitions",
        "log.system.replication",
        "log.consistency",
        "log.changelog-mode",
        "log.key.format",
        "log.format",
        "snapshot.watermark-idle-timeout",
        "read.allow.fullScan",
        "read.changelog",
        "read.stream.maxBytesPerTrigger",
        "read.stream.maxFilesPerTrigger",
        "read.stream.maxRowsPerTrigger",
        "read.stream.maxTriggerDelayMs",
        "read.stream.minRowsPerTrigger",
        "requiredSparkConfsCheck.enabled",
        "legacy-timestamp-mapping.enabled",
        "write.merge-schema",
        "write.merge-schema.explicit-cast",
        "write.merge-schema.type-widening",
        "write.use-v2-write",
        "write.hive-style-dynamic-partition.enabled",
        "write.data-evolution.update-conflict-retry.max-attempts",
        "write.data-evolution.update-conflict-retry.wait-ms",
        "paimon.respect.minmaxsplitsize.enabled",
        "paimon.split.openfilecost",
        "visibility-callback.enabled",
        "visibility-callback.check-interval",
        "visibility-callback.timeout",
    ],
    "Flink / Spark / Hive connector and job settings",
)
# ---- ignorable: features of other table kinds, or inert while a refused option is off
_ignorable(
    [
        "compaction.min.file-num",
        "compaction.max.file-num",
        "compaction.early-max.file-num",
        "compaction.delete-ratio-threshold",
        "compaction.file-num-limit",
        "compaction.skip-expired-partitions",
        "sort-compaction.range-strategy",
        "sort-compaction.local-sample.magnification",
        "zorder.var-length-contribution",
        "clustering.columns",
        "clustering.strategy",
        "clustering.incremental",
        "clustering.incremental.mode",
        "clustering.incremental.optimize-write",
        "clustering.history-partition.limit",
        "clustering.history-partition.idle-to-full-sort",
        "row-tracking.partition-group-on-commit",
        "data-evolution.compaction.rewrite-row-ids",
        "data-evolution.merge-into.file-pruning",
        "data-evolution.merge-into.source-persist",
        "data-evolution.reassign.skip-contiguous-row-count",
        "data-evolution.row-id-conflict-rewrite.max-size",
        "data-evolution.row-sidecar.enabled",
        "data-evolution.row-sidecar.max-selected-rows",
        "data-evolution.row-sidecar.max-selection-ratio",
        "format-table.implementation",
        "format-table.scan.list-parallelism",
        "format-table.repair.collect-statistics",
        "format-table.statistics.parallelism",
        "postpone.batch-write-fixed-bucket",
        "postpone.batch-write-fixed-bucket.max-parallelism",
        "postpone.batch-write-fixed-bucket.rescale-load-factor",
        "postpone.default-bucket-num",
        "postpone.merge-on-read",
        "postpone.target-row-num-per-bucket",
        "postpone.target-size-per-bucket",
        "chain-table.chain-partition-keys",
        "chain-table.split.key-range-enabled",
        "chain-table.streaming.merge-snapshot",
        "global-index.build.max-parallelism",
        "global-index.build.max-shard",
        "global-index.column-update-action",
        "global-index.external-path",
        "global-index.row-count-per-shard",
        "global-index.thread-num",
        "blob-as-descriptor",
        "blob-compaction.enabled",
        "blob-descriptor.source-table",
        "blob-view.resolve.enabled",
        "blob-write-null-on-fetch-failure",
        "blob-write-null-on-missing-file",
        "blob.copy-buffer-size",
        "blob.split-by-file-size",
        "blob.target-file-size",
        "blob.stored-descriptor-fields",
        "vector.file.format",
        "vector.target-file-size",
        "fields.<field>.pk-<index option>",
        "commit.callback.<class>.param",
        "tag.callback.<class>.param",
    ],
    "only affects append, format, postpone, clustered or indexed tables, or options that are "
    "refused on their own",
)
# ---- ignorable: maintenance settings lakeops does not trigger by itself
_ignorable(
    [
        "partition.expiration-strategy",
        "partition.expiration-check-interval",
        "partition.expiration-batch-size",
        "partition.expiration-max-num",
        "partition.timestamp-formatter",
        "partition.timestamp-pattern",
        "partition.timestamp-format.strict",
        "tag.batch.customized-name",
        "tag.create-success-file",
        "tag.time-expire-enabled",
        "metastore.tag-to-partition",
        "metastore.tag-to-partition.preview",
        "metadata.iceberg.<option>",
        "materialized-table.<option>",
    ],
    "settings of maintenance features whose switch is a separate option",
)
# ---- ignorable: pypaimon's own table options (execution paths and caches)
_ignorable(
    [
        "read.native.enabled",
        "write.native.enabled",
        "commit.native.enabled",
        "scan.native-plan.enabled",
        "read.parallelism",
        "file-format.metadata-cache.max-size",
        "manifest.sidecar.enabled",
        "add-column-before-partition",
        "global-index.build.parallelism",
        "global-index.filter.refine-from-data",
        "data-evolution.write-cols-optimization.enabled",
        "bitmap-index.<option>",
        "btree-index.<option>",
        "sorted-index.<option>",
        "mosaic.<option>",
        "file-io.<option>",
        "local-cache.<option>",
    ],
    "pypaimon execution settings",
)
_refused(
    ["video-frame-field"],
    "BLOB column storage is not implemented",
    _REMOVE,
    reads_wrong=True,
)
# ---- ignorable: prefixes of engine / library settings (also covers keys newer than this list)
_ignorable(
    [
        "sink.<option>",
        "source.<option>",
        "rocksdb.<option>",
        "kafka.<option>",
        "parquet.<option>",
        "orc.<option>",
        "avro.<option>",
        "csv.<option>",
        "json.<option>",
        "text.<option>",
        "variant.<option>",
        "fs.<option>",
        "hadoop.<option>",
    ],
    "engine, storage-client or file-format library settings",
)

REGISTRY: tuple[OptionRule, ...] = tuple(_ENTRIES)
_EXACT: dict[str, OptionRule] = {r.key: r for r in REGISTRY if not r.is_pattern}
_PATTERNS: tuple[OptionRule, ...] = tuple(r for r in REGISTRY if r.is_pattern)
assert len(_EXACT) + len(_PATTERNS) == len(REGISTRY), "duplicate registry entry"


def rule_for(key: str) -> OptionRule | None:
    """The rule of ``key`` (exact keys first, then the most specific pattern), or None."""
    rule = _EXACT.get(key)
    if rule is not None:
        return rule
    found = [r for r in _PATTERNS if r.matches(key)]
    if not found:
        return None
    # the longest literal text wins: 'fields.<field>.default-value' over 'fields.<field>.<x>'
    return max(found, key=lambda r: len(re.sub(r"<[^>]+>", "", r.key)))


def known_keys() -> list[str]:
    """Every exact key and key pattern of the registry."""
    return [r.key for r in REGISTRY]


def suggest(key: str, n: int = 3) -> list[str]:
    """The known keys closest to ``key`` (for a did-you-mean)."""
    candidates = list(_EXACT)
    m = re.fullmatch(r"fields\.(.+)\.([^.]+)", key)
    if m:  # offer the field patterns filled in with the user's field name
        for r in _PATTERNS:
            if r.key.startswith("fields.<") and r.key.count("<") == 1:
                candidates.append(re.sub(r"<[^>]+>", m.group(1), r.key))
    return difflib.get_close_matches(key, candidates, n=n, cutoff=0.6)


def unknown_keys(options: Mapping[str, str]) -> list[str]:
    """The keys of ``options`` that the registry does not know."""
    return sorted(k for k in options if rule_for(k) is None)


def refusals(options: Mapping[str, str], *, reads: bool = False) -> list[tuple[str, OptionRule]]:
    """``(key, rule)`` of every option lakeops cannot honour with its value (only those that
    make reads wrong when ``reads``)."""
    out = []
    for key in sorted(options):
        rule = rule_for(key)
        if rule is None or not rule.refuses(options[key], options):
            continue
        if reads and not rule.reads_wrong:
            continue
        out.append((key, rule))
    return out


def _describe(key: str, value: str, rule: OptionRule) -> str:
    text = f"option {key!r} = {value!r}: {rule.note}"
    return text + (f"; {rule.fix}" if rule.fix else "")


def _did_you_mean(key: str) -> str:
    close = suggest(key)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def check_create_options(options: Mapping[str, str]) -> None:
    """Refuse the options of a new table: unknown keys (ConfigurationError with a did-you-mean)
    first, then options or values lakeops cannot honour (UnsupportedFeatureError)."""
    unknown = unknown_keys(options)
    if unknown:
        raise ConfigurationError(
            "; ".join(f"unknown table option {k!r}{_did_you_mean(k)}" for k in unknown)
            + " (see lakeops.options.registry for every Paimon option lakeops knows)"
        )
    refused = refusals(options)
    if refused:
        raise UnsupportedFeatureError(
            "lakeops cannot create this table: "
            + "; ".join(_describe(k, options[k], r) for k, r in refused)
        )


def check_writable(options: Mapping[str, str], action: str, table: str = "table") -> None:
    """Refuse to ``action`` (write, commit, compact, expire …) a table whose options lakeops
    cannot honour exactly, or that carries option keys it does not know."""
    refused = refusals(options)
    problems = [_describe(k, options[k], r) for k, r in refused]
    problems += [
        f"option {k!r} is unknown to this lakeops version (perhaps from a newer Paimon) and "
        f"could change how files must be written{_did_you_mean(k)}; remove it if it is a "
        "mistake (reads are still allowed)"
        for k in unknown_keys(options)
    ]
    if problems:
        raise UnsupportedFeatureError(
            f"lakeops refuses to {action} {table}: " + "; ".join(problems)
        )


def check_readable(options: Mapping[str, str], table: str = "table") -> None:
    """Refuse to read a table whose options make lakeops' reads wrong."""
    refused = refusals(options, reads=True)
    if refused:
        raise UnsupportedFeatureError(
            f"lakeops cannot read {table} correctly: "
            + "; ".join(_describe(k, options[k], r) for k, r in refused)
        )


def check_data_file(file_name: str, what: str = "read") -> None:
    """Refuse a data or changelog file lakeops cannot handle: reads, writes and compactions
    take Parquet, ORC and Avro files; other formats are refused."""
    fmt = file_format(file_name)
    if fmt in READABLE_FORMATS:
        return
    raise UnsupportedFeatureError(
        f"data file {file_name!r} is in {fmt.upper() or 'an unknown'} format; lakeops reads "
        f"and writes Parquet, ORC and Avro only, so it refuses to {what} this table (option "
        "'file.format'): rewrite the table as Parquet with Paimon (file.format = "
        "'parquet' and a full compaction)"
    )


def check_data_files(file_names: Iterable[str], what: str) -> None:
    """:func:`check_data_file` for every name (before a write or compaction starts)."""
    for name in file_names:
        check_data_file(name, what)
