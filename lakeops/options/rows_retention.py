"""The rows of retention, commits and tags: snapshot and changelog retention, consumers, commit
retries, manifest merging, automatic tags, and the actions of Paimon's commit that lakeops'
commits do not perform (refused when set)."""

from __future__ import annotations

from typing import Any

from lakeops.options.option import (
    BOOL,
    DURATION,
    INT,
    INT_MAX,
    LONG_MAX,
    STRING,
    Option,
    enum,
    honoured,
    rng,
)
from lakeops.options.rules import SET_REFUSED, TRUE_REFUSED, auto_tags_on, norm, unless

__all__ = [
    "CHANGELOG_NUM_RETAINED_MAX",
    "CHANGELOG_NUM_RETAINED_MIN",
    "CHANGELOG_TIME_RETAINED",
    "COMMIT_MAX_RETRIES",
    "COMMIT_MAX_RETRY_WAIT",
    "COMMIT_MIN_RETRY_WAIT",
    "COMMIT_TIMEOUT",
    "CONSUMER_EXPIRATION_TIME",
    "ICEBERG_COMPATIBLE",
    "ICEBERG_DELETE_AFTER_COMMIT",
    "ICEBERG_FORMAT_VERSION",
    "ICEBERG_MANIFEST_COMPRESSION",
    "ICEBERG_PREVIOUS_VERSIONS_MAX",
    "ICEBERG_STORAGE",
    "ICEBERG_STORAGE_LOCATION",
    "MANIFEST_MERGE_MIN_COUNT",
    "ROWS",
    "SINK_WATERMARK_TIME_ZONE",
    "SNAPSHOT_EXPIRE_LIMIT",
    "SNAPSHOT_NUM_RETAINED_MAX",
    "SNAPSHOT_NUM_RETAINED_MIN",
    "SNAPSHOT_TIME_RETAINED",
    "TAG_AUTOMATIC_COMPLETION",
    "TAG_AUTOMATIC_CREATION",
    "TAG_CREATION_DELAY",
    "TAG_CREATION_PERIOD_DURATION",
    "TAG_CREATION_PERIOD",
    "TAG_DEFAULT_TIME_RETAINED",
    "TAG_NUM_RETAINED_MAX",
    "TAG_PERIOD_FORMATTER",
]

_RETENTION = honoured(
    "snapshot and changelog retention, and how long a consumer holds expiry back "
    "(table.expire_snapshots)",
)
_SNAPSHOTS_KEPT = "snapshots kept"
_CHANGELOGS_KEPT = "changelogs kept"
SNAPSHOT_NUM_RETAINED_MIN = _RETENTION.row(
    "snapshot.num-retained.min", INT, 10, rng(1, INT_MAX, meaning=_SNAPSHOTS_KEPT)
)
SNAPSHOT_NUM_RETAINED_MAX = _RETENTION.row(
    "snapshot.num-retained.max", INT, INT_MAX, rng(1, INT_MAX, meaning=_SNAPSHOTS_KEPT)
)
SNAPSHOT_TIME_RETAINED = _RETENTION.row("snapshot.time-retained", DURATION, 3_600_000, rng(0))
SNAPSHOT_EXPIRE_LIMIT = _RETENTION.row(
    "snapshot.expire.limit", INT, 50, rng(1, INT_MAX, meaning="snapshots expired per call")
)
# the changelog's retention defaults to the effective snapshot retention (no default of its own)
CHANGELOG_NUM_RETAINED_MIN = _RETENTION.row(
    "changelog.num-retained.min", INT, None, rng(1, INT_MAX, meaning=_CHANGELOGS_KEPT)
)
CHANGELOG_NUM_RETAINED_MAX = _RETENTION.row(
    "changelog.num-retained.max", INT, None, rng(1, INT_MAX, meaning=_CHANGELOGS_KEPT)
)
CHANGELOG_TIME_RETAINED = _RETENTION.row("changelog.time-retained", DURATION, None, rng(0))
#: unset: consumers never expire
CONSUMER_EXPIRATION_TIME = _RETENTION.row("consumer.expiration-time", DURATION, None, rng(1))

_RETRIES = honoured(
    "how long a commit that lost the race for the next snapshot keeps trying, and the jittered "
    "pauses between its attempts (lakeops.commit.retry)",
)
#: unset: no time bound (Paimon's default)
COMMIT_TIMEOUT = _RETRIES.row(
    "commit.timeout",
    DURATION,
    None,
    rng(0, LONG_MAX, meaning="how long a commit keeps retrying"),
)
#: unset: no count bound (lakeops.options.commit says why lakeops departs from Paimon's 10)
COMMIT_MAX_RETRIES = _RETRIES.row(
    "commit.max-retries", INT, None, rng(0, INT_MAX, meaning="retries after a lost race")
)
# Paimon keeps the pauses as Java ints of milliseconds; a zero pause would spin
COMMIT_MIN_RETRY_WAIT = _RETRIES.row(
    "commit.min-retry-wait", DURATION, 10, rng(1, INT_MAX, meaning="the first pause")
)
COMMIT_MAX_RETRY_WAIT = _RETRIES.row(
    "commit.max-retry-wait", DURATION, 10_000, rng(1, INT_MAX, meaning="the longest pause")
)
MANIFEST_MERGE_MIN_COUNT = honoured("base manifests are merged past this count").row(
    "manifest.merge-min-count", INT, 30, rng(0, INT_MAX, meaning="a count")
)

# actions Paimon's commit performs that lakeops does not
# Iceberg-compatible metadata after each commit (lakeops.maintenance.iceberg)
_ICEBERG = honoured(
    "Iceberg metadata (metadata.json, manifest list and manifests) is written after each lakeops "
    "commit, as Paimon's IcebergCommitCallback does (lakeops.maintenance.iceberg)"
)
ICEBERG_COMPATIBLE = _ICEBERG.row("metadata.iceberg-compatible", BOOL, False, rng())
ICEBERG_STORAGE = honoured(
    "Iceberg metadata is written after each lakeops commit: 'table-location' under "
    "<table>/metadata, 'hadoop-catalog' under <warehouse>/iceberg/<db>/<table>/metadata "
    "(lakeops.maintenance.iceberg); 'hive-catalog' and 'rest-catalog' need a catalog service",
    refuse_value=unless("disabled", "table-location", "hadoop-catalog"),
    fix="set it to 'table-location' or 'hadoop-catalog' (or use Paimon for a catalog-synced table)",
).row(
    "metadata.iceberg.storage",
    enum("disabled", "table-location", "hadoop-catalog", "hive-catalog", "rest-catalog"),
    "disabled",
)
ICEBERG_STORAGE_LOCATION = _ICEBERG.row(
    "metadata.iceberg.storage-location", enum("table-location", "catalog-location")
)
ICEBERG_FORMAT_VERSION = honoured(
    "Iceberg format version of the metadata lakeops writes: 2, or 3 (row lineage, and the "
    "deletion vectors of a table with deletion-vectors.enabled as Puffin delete files)"
).row("metadata.iceberg.format-version", INT, 2, rng(2, 3))
ICEBERG_DELETE_AFTER_COMMIT = _ICEBERG.row(
    "metadata.iceberg.delete-after-commit.enabled", BOOL, True, rng()
)
ICEBERG_MANIFEST_COMPRESSION = honoured(
    "codec of the Iceberg manifests and manifest lists lakeops writes",
    refuse_value=unless("null", "none", "deflate", "snappy", "bzip2", "xz", "zstd", "zstandard"),
    fix="use an Avro codec: 'snappy' (Paimon's default), 'deflate', 'zstd' or 'null'",
).row("metadata.iceberg.manifest-compression", STRING, "snappy")
ICEBERG_PREVIOUS_VERSIONS_MAX = _ICEBERG.row(
    "metadata.iceberg.previous-versions-max", INT, 0, rng(0, INT_MAX, meaning="a count")
)
_CALLBACKS = honoured(
    "Java callbacks cannot run in lakeops",
    refuse_value=SET_REFUSED,
    fix="remove it or use Paimon to write this table",
).rows("commit.callbacks", "tag.callbacks")
TAG_AUTOMATIC_CREATION = honoured(
    "'process-time' and 'watermark': lakeops commits create (and retire) Paimon's automatic "
    "tags, as Paimon's committer does (lakeops.maintenance.auto_tags); 'watermark' reads the "
    "snapshots' watermarks (a commit's watermark=), so commits without one create no tag; "
    "'batch': every batch commit tags its snapshot 'batch-write-<day>', as Paimon's batch sink",
    refuse_value=unless("none", "process-time", "watermark", "batch"),
    fix="use 'none', 'process-time', 'watermark' or 'batch' (Paimon 0.9's modes)",
).row("tag.automatic-creation", STRING, "none")
#: the time zone a snapshot's watermark is read in (mode 'watermark'), Java's ZoneId
SINK_WATERMARK_TIME_ZONE = honoured(
    "the time zone of snapshot watermarks when 'tag.automatic-creation' is 'watermark'",
).row("sink.watermark-time-zone", STRING, "UTC")
_TAGS = honoured(
    "automatic tags after lakeops commits (lakeops.maintenance.auto_tags); "
    "'tag.default-time-retained' is written into every tag created",
)
TAG_CREATION_PERIOD = _TAGS.row(
    "tag.creation-period", enum("daily", "hourly", "two-hours"), "daily"
)
TAG_CREATION_DELAY = _TAGS.row("tag.creation-delay", DURATION, 0, rng(0))
#: unset: automatic tags are kept
TAG_NUM_RETAINED_MAX = _TAGS.row(
    "tag.num-retained-max", INT, None, rng(1, INT_MAX, meaning="automatic tags kept")
)
#: unset: tags carry no retention
TAG_DEFAULT_TIME_RETAINED = _TAGS.row(
    "tag.default-time-retained", DURATION, None, rng(1, meaning="how long a tag is kept")
)
TAG_AUTOMATIC_COMPLETION = _TAGS.row("tag.automatic-completion", BOOL, False, rng())
TAG_PERIOD_FORMATTER = honoured(
    "names of automatic tags: 'with_dashes' and 'without_dashes' (Paimon 0.9); newer Paimon's "
    "'without_dashes_and_spaces' is refused while automatic tags are on",
    refuse_value=lambda value, options: (
        auto_tags_on(options) and norm(value) not in ("with_dashes", "without_dashes")
    ),
    fix="use 'with_dashes' or 'without_dashes', or set 'tag.automatic-creation' to 'none'",
).row("tag.period-formatter", enum("with_dashes", "without_dashes"), "with_dashes")
#: unset: periods are 'tag.creation-period'
TAG_CREATION_PERIOD_DURATION = honoured(
    "newer Paimon's custom tag period (Paimon 0.9 does not know it): periods of that length "
    "named yyyyMMddHHmm, replacing 'tag.creation-period', as newer Paimon does",
).row("tag.creation-period-duration", DURATION, None, rng(1, meaning="one tag period"))
_PARTITION_EXPIRY = honoured(
    "partition expiry: run by `expire_partitions` (a maintenance run, which always checks), "
    "not by lakeops' writes"
)
PARTITION_EXPIRATION_TIME = _PARTITION_EXPIRY.row(
    "partition.expiration-time", DURATION, None, rng(1)
)
PARTITION_EXPIRATION_CHECK_INTERVAL = _PARTITION_EXPIRY.row(
    "partition.expiration-check-interval", DURATION, 3_600_000, rng(0)
)
PARTITION_EXPIRATION_STRATEGY = _PARTITION_EXPIRY.row(
    "partition.expiration-strategy", enum("values-time", "update-time"), "values-time"
)
PARTITION_EXPIRATION_MAX_NUM = _PARTITION_EXPIRY.row(
    "partition.expiration-max-num",
    INT,
    100,
    rng(0, INT_MAX, meaning="partitions dropped per run (the first by their values)"),
)
PARTITION_EXPIRATION_BATCH_SIZE = _PARTITION_EXPIRY.row(
    "partition.expiration-batch-size",
    INT,
    None,
    rng(0, INT_MAX, meaning="partitions per OVERWRITE commit (0 or unset: all in one)"),
)
PARTITION_TIMESTAMP_FORMATTER = _PARTITION_EXPIRY.row("partition.timestamp-formatter", STRING)
PARTITION_TIMESTAMP_PATTERN = _PARTITION_EXPIRY.row("partition.timestamp-pattern", STRING)
_METASTORE_PARTITIONED = honoured(
    "lakeops does not register partitions in a metastore",
    refuse_value=TRUE_REFUSED,
    fix="remove it or use Paimon to write this table",
).row("metastore.partitioned-table", BOOL, False, rng())

ROWS: tuple[Option[Any], ...] = (
    SNAPSHOT_NUM_RETAINED_MIN,
    SNAPSHOT_NUM_RETAINED_MAX,
    SNAPSHOT_TIME_RETAINED,
    SNAPSHOT_EXPIRE_LIMIT,
    CHANGELOG_NUM_RETAINED_MIN,
    CHANGELOG_NUM_RETAINED_MAX,
    CHANGELOG_TIME_RETAINED,
    CONSUMER_EXPIRATION_TIME,
    COMMIT_TIMEOUT,
    COMMIT_MAX_RETRIES,
    COMMIT_MIN_RETRY_WAIT,
    COMMIT_MAX_RETRY_WAIT,
    MANIFEST_MERGE_MIN_COUNT,
    ICEBERG_COMPATIBLE,
    ICEBERG_STORAGE,
    ICEBERG_STORAGE_LOCATION,
    ICEBERG_FORMAT_VERSION,
    ICEBERG_DELETE_AFTER_COMMIT,
    ICEBERG_MANIFEST_COMPRESSION,
    ICEBERG_PREVIOUS_VERSIONS_MAX,
    *_CALLBACKS,
    TAG_AUTOMATIC_CREATION,
    SINK_WATERMARK_TIME_ZONE,
    TAG_CREATION_PERIOD,
    TAG_CREATION_DELAY,
    TAG_NUM_RETAINED_MAX,
    TAG_DEFAULT_TIME_RETAINED,
    TAG_AUTOMATIC_COMPLETION,
    TAG_PERIOD_FORMATTER,
    TAG_CREATION_PERIOD_DURATION,
    PARTITION_EXPIRATION_TIME,
    PARTITION_EXPIRATION_CHECK_INTERVAL,
    PARTITION_EXPIRATION_STRATEGY,
    PARTITION_EXPIRATION_MAX_NUM,
    PARTITION_EXPIRATION_BATCH_SIZE,
    PARTITION_TIMESTAMP_FORMATTER,
    PARTITION_TIMESTAMP_PATTERN,
    _METASTORE_PARTITIONED,
)
