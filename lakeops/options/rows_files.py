"""The rows of where files live (:mod:`lakeops.store.locations` resolves every file's location)
and of table features: deletion vectors, thin mode, clustering, row tracking and data
evolution (honoured), chain tables, fallback branches, BLOB columns, primary-key indexes,
query auth."""

from __future__ import annotations

from typing import Any

from lakeops.options.option import BOOL, LIST, STRING, Option, honoured, ignorable, refused, rng
from lakeops.options.rules import REMOVE, TRUE_REFUSED, external_strategy, unless

__all__ = [
    "CHANGELOG_FILE_PREFIX",
    "DATA_EVOLUTION_ENABLED",
    "DATA_FILE_EXTERNAL_PATHS",
    "DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS",
    "DATA_FILE_EXTERNAL_PATHS_STRATEGY",
    "DATA_FILE_PATH_DIRECTORY",
    "DATA_FILE_PREFIX",
    "DELETION_VECTORS_ENABLED",
    "INDEX_FILE_IN_DATA_FILE_DIR",
    "ROWS",
    "ROW_TRACKING_ENABLED",
]

# primary-key tables: reads skip level 0 and apply each file's vector (lakeops.read.scan);
# writes and compactions are refused here. Append tables: vectors are applied on read, and
# writes are allowed (TableOptions.require_writable drops this option for them;
# lakeops.compact.append refuses to rewrite files that have vectors)
DELETION_VECTORS_ENABLED = honoured(
    "lakeops reads deletion vectors of primary-key tables but neither writes nor maintains "
    "them; its writes would stay invisible in level 0 and its compactions would leave rows "
    "that Paimon's deletion-vector reads return twice",
    refuse_value=TRUE_REFUSED,
    fix="use Paimon to write and compact this table, or disable deletion vectors",
).row("deletion-vectors.enabled", BOOL, False, rng())
_VECTOR_VARIANTS = honoured(
    "deletion-vector variants (deletion vectors are not written by lakeops)",
    refuse_value=TRUE_REFUSED,
    fix="remove it",
)
_VARIANTS = tuple(
    _VECTOR_VARIANTS.row(k, BOOL, False, rng())
    for k in (
        "deletion-vectors.bitmap64",
        "deletion-vectors.modifiable",
        "deletion-vectors.merge-on-read",
    )
)

# where files live
DATA_FILE_EXTERNAL_PATHS = honoured(
    "files at an entry's _EXTERNAL_PATH are read when they lie below one of these roots on the "
    "table's own file system; new files go there with the strategy "
    "(data-file.external-paths.strategy)",
).row("data-file.external-paths", LIST, ())
DATA_FILE_EXTERNAL_PATHS_STRATEGY = honoured(
    "none (files stay in the table), round-robin and specific-fs (round robin over the roots "
    "of one scheme) are written as Paimon does; entropy-inject and weight-robin are not",
    refuse_value=external_strategy,
    fix="set it to 'round-robin' (or 'none')",
).row("data-file.external-paths.strategy", STRING, "none")
DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS = honoured(
    "the scheme of the roots the specific-fs strategy writes to",
).row("data-file.external-paths.specific-fs", STRING)
_WEIGHTS = ignorable(
    "only with the weight-robin strategy, which lakeops refuses to write",
).rows("data-file.external-paths.weights")
DATA_FILE_PATH_DIRECTORY = honoured(
    "bucket directories are <table>/<dir>/<partition>/bucket-N, read and written",
).row("data-file.path-directory", STRING)
INDEX_FILE_IN_DATA_FILE_DIR = honoured(
    "bucket (HASH) index files are read from and written to the bucket directory (or the "
    "external path of the entry) instead of index/",
).row("index-file-in-data-file-dir", BOOL, False, rng())
_PREFIXES = honoured("file name prefixes of the data and changelog files lakeops writes")
DATA_FILE_PREFIX = _PREFIXES.row("data-file.prefix", STRING, "data-")
CHANGELOG_FILE_PREFIX = _PREFIXES.row("changelog-file.prefix", STRING, "changelog-")

# features lakeops refuses
_THIN_MODE = honoured(
    "lakeops reads thin-mode files but writes files with the _KEY_ columns",
    refuse_value=TRUE_REFUSED,
    fix="remove it",
).row("data-file.thin-mode", BOOL, False, rng())
_CLUSTERING = honoured(
    "files are sorted by the primary key; clustering by other columns changes how files merge",
    refuse_value=TRUE_REFUSED,
    fix="remove it",
    reads_wrong=True,
).row("pk-clustering-override", BOOL, False, rng())
# row tracking: reads give _ROW_ID / _SEQUENCE_NUMBER (lakeops.read.row_tracking); each
# commit gives new files first row ids from the snapshot's nextRowId (lakeops.commit.row_ids);
# compaction is refused (lakeops.table.append) as it would have to keep every row's id
ROW_TRACKING_ENABLED = honoured(
    "rows carry _ROW_ID / _SEQUENCE_NUMBER: read, and assigned to new files at commit as "
    "Paimon does (snapshot nextRowId); lakeops refuses to compact such tables",
).row("row-tracking.enabled", BOOL, False, rng())
DATA_EVOLUTION_ENABLED = honoured(
    "files holding some columns of rows are merged by row id on read; whole rows and "
    "column subsets of existing rows (AppendTable.update_columns) are written; lakeops "
    "refuses to compact or alter such tables",
).row("data-evolution.enabled", BOOL, False, rng())
_CHAIN = honoured(
    "chain tables read across partitions of several branches",
    refuse_value=TRUE_REFUSED,
    fix="remove it",
    reads_wrong=True,
).row("chain-table.enabled", BOOL, False, rng())
_FALLBACK_BRANCHES = refused(
    "Paimon reads partitions missing from this branch from another branch",
    REMOVE,
    reads_wrong=True,
).rows(
    "scan.fallback-branch",
    "scan.fallback-delta-branch",
    "scan.fallback-snapshot-branch",
    "scan.primary-branch",
)
# BLOB columns (type BLOB, their values in .blob files: lakeops.format.blob_file) are read;
# lakeops writes no .blob files, so writes to such tables are refused
BLOB_FIELD = refused(
    "BLOB columns are read from their .blob files; lakeops does not write them",
    "write this table with Paimon (Spark, Flink) or pypaimon",
).rows("blob-field")
_BLOB_FIELDS = refused(
    "VECTOR / BLOB descriptor and view column storage is not implemented",
    REMOVE,
    reads_wrong=True,
).rows("vector-field", "blob-descriptor-field", "blob-view-field")
_PK_INDEXES = refused(
    "lakeops does not maintain primary-key table indexes; they would go stale",
    REMOVE,
).rows(
    "pk-bitmap.index.columns",
    "pk-btree.index.columns",
    "pk-full-text.index.columns",
    "pk-multivalue.index.columns",
    "pk-vector.index.columns",
)
_QUERY_AUTH = honoured(
    "catalog query authorisation (row/column permissions) cannot be applied by lakeops",
    refuse_value=TRUE_REFUSED,
    fix="read and write this table through its REST catalog",
    reads_wrong=True,
).row("query-auth.enabled", BOOL, False, rng())
_SEQUENCE_INIT = honoured(
    "a writer's first sequence number follows the existing files (scan)",
    refuse_value=unless("scan"),
    fix="use 'scan'",
).rows("write.sequence-number-init-mode")

ROWS: tuple[Option[Any], ...] = (
    DELETION_VECTORS_ENABLED,
    *_VARIANTS,
    DATA_FILE_EXTERNAL_PATHS,
    DATA_FILE_EXTERNAL_PATHS_STRATEGY,
    DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS,
    *_WEIGHTS,
    DATA_FILE_PATH_DIRECTORY,
    INDEX_FILE_IN_DATA_FILE_DIR,
    DATA_FILE_PREFIX,
    CHANGELOG_FILE_PREFIX,
    _THIN_MODE,
    _CLUSTERING,
    ROW_TRACKING_ENABLED,
    DATA_EVOLUTION_ENABLED,
    _CHAIN,
    *_FALLBACK_BRANCHES,
    *BLOB_FIELD,
    *_BLOB_FIELDS,
    *_PK_INDEXES,
    _QUERY_AUTH,
    *_SEQUENCE_INIT,
)
