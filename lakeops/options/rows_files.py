"""The rows of where files live (:mod:`lakeops.store.locations` resolves every file's location)
and of table features: deletion vectors, thin mode, clustering, row tracking and data
evolution (honoured), chain tables, fallback branches, BLOB columns, primary-key indexes,
query auth."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lakeops.options.option import (
    BOOL,
    INT,
    LIST,
    MEMORY,
    STRING,
    Option,
    enum,
    honoured,
    ignorable,
    refused,
    rng,
)
from lakeops.options.rules import REMOVE, TRUE_REFUSED, external_strategy, norm, unless

__all__ = [
    "BLOB_TARGET_FILE_SIZE",
    "CHANGELOG_FILE_PREFIX",
    "CLUSTERING_COLUMNS",
    "CLUSTERING_INCREMENTAL",
    "CLUSTERING_STRATEGY",
    "DATA_EVOLUTION_ENABLED",
    "DATA_FILE_EXTERNAL_PATHS",
    "DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS",
    "DATA_FILE_EXTERNAL_PATHS_STRATEGY",
    "DATA_FILE_PATH_DIRECTORY",
    "DATA_FILE_PREFIX",
    "DELETION_VECTORS_BITMAP64",
    "DELETION_VECTORS_ENABLED",
    "DELETION_VECTORS_MERGE_ON_READ",
    "DV_INDEX_FILE_TARGET_SIZE",
    "FILE_INDEX_COLUMNS",
    "FILE_INDEX_IN_MANIFEST_THRESHOLD",
    "FILE_INDEX_OPTION",
    "FILE_INDEX_READ_ENABLED",
    "INDEX_FILE_IN_DATA_FILE_DIR",
    "ROWS",
    "ROW_TRACKING_ENABLED",
    "ZORDER_VAR_LENGTH_CONTRIBUTION",
]


# primary-key tables: reads skip level 0 and apply each file's vector (lakeops.read.scan);
# writes land in level 0 and are compacted up at once, compactions keep the vectors
# (lakeops.compact.vectors). Append tables: vectors are applied on read, writes carry the index
# forward and compactions retire the vectors of the files they rewrite (lakeops.compact.append)
def _vector_rules(value: str, options: Mapping[str, str]) -> bool:
    """Paimon's ``SchemaValidation``: deletion vectors refuse merge-engine first-row and the
    full-compaction changelog producer."""
    from lakeops.options.rows_merge import MERGE_ENGINE
    from lakeops.options.rows_write import CHANGELOG_PRODUCER

    if norm(value) != "true":
        return False
    engine = norm(MERGE_ENGINE.text(options) or "")
    producer = norm(CHANGELOG_PRODUCER.text(options) or "")
    return engine == "first-row" or producer == "full-compaction"


DELETION_VECTORS_ENABLED = honoured(
    "primary-key tables: writes land in level 0 and are compacted up at once (an APPEND then "
    "a COMPACT snapshot); every compaction marks the rows it supersedes in files it keeps, "
    "drops the vectors of the files it rewrites and replaces the bucket's index file; reads "
    "skip level 0. Append tables: vectors applied on read, retired by compaction. Refused "
    "with merge-engine first-row or changelog-producer full-compaction, as in Paimon. On a "
    "postpone-bucket table (bucket = -2) writes stay postponed; compaction moves them into "
    "level 0 of real buckets and compacts them up, marking vectors",
    refuse_value=_vector_rules,
    fix="disable deletion vectors, or use a merge engine other than first-row and a changelog "
    "producer other than full-compaction",
).row("deletion-vectors.enabled", BOOL, False, rng())
DELETION_VECTORS_BITMAP64 = honoured(
    "vectors are written in the 64-bit layout (Roaring64, Paimon 1.x; Paimon 0.9 cannot read "
    "it) instead of the 32-bit one; both are read",
).row("deletion-vectors.bitmap64", BOOL, False, rng())
DELETION_VECTORS_MERGE_ON_READ = honoured(
    "batch reads of a deletion-vector primary-key table also read level 0, merged",
).row("deletion-vectors.merge-on-read", BOOL, False, rng())
_MODIFIABLE = honoured(
    "only whether an ALTER may switch deletion-vectors.enabled; lakeops' writes and "
    "compactions are the same either way",
).row("deletion-vectors.modifiable", BOOL, False, rng())
DV_INDEX_FILE_TARGET_SIZE = honoured(
    "unaware-bucket append tables: the vectors a compaction keeps of an index file it touches "
    "are rewritten into index files rolled at this size, as Paimon's writeWithRolling (a file "
    "closes once a vector takes it past the target); fixed buckets keep one index file each, "
    "as Paimon's bucketed maintainer does",
).row("deletion-vector.index-file.target-size", MEMORY, 2 << 20, rng(1, meaning="a size"))
_VARIANTS = (
    DELETION_VECTORS_BITMAP64,
    DELETION_VECTORS_MERGE_ON_READ,
    _MODIFIABLE,
    DV_INDEX_FILE_TARGET_SIZE,
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

# append tables' clustering (lakeops.compact.sort): honoured by full compactions of
# unaware-bucket append tables, which Paimon's clustering is limited to
_APPEND_CLUSTERING = honoured(
    "unaware-bucket append tables (bucket = -1, no row tracking): a full compaction "
    "(compact(full=True)) sorts every selected partition whole by these columns with "
    "clustering.strategy (auto: order for 1 column, zorder for 2 to 4, hilbert for 5 or more, "
    "as Paimon's CoreOptions.clusteringStrategy) and replaces it in one OVERWRITE, as Paimon's "
    "sort compaction does; Paimon 1.x's incremental clustering (only the files not yet "
    "clustered) and range-sorted batch writes are not done. Other tables ignore them, as "
    "Paimon does"
)
CLUSTERING_COLUMNS = _APPEND_CLUSTERING.row(
    "clustering.columns", LIST, (), fallbacks=("sink.clustering.by-columns",)
)
CLUSTERING_STRATEGY = _APPEND_CLUSTERING.row(
    "clustering.strategy",
    enum("auto", "order", "zorder", "hilbert", "none"),
    "auto",
    fallbacks=("sink.clustering.strategy",),
)
CLUSTERING_INCREMENTAL = ignorable(
    "Paimon 1.x's incremental clustering, which lakeops does not do: its compactions of such "
    "a table are the usual ones (clustering.columns on full compactions), and a sort "
    "compaction by order_by is refused, as Paimon's procedure refuses it"
).row("clustering.incremental", BOOL, False)
ZORDER_VAR_LENGTH_CONTRIBUTION = honoured(
    "the bytes of a CHAR, VARCHAR, BINARY or VARBINARY column's value (its first bytes, "
    "zero-padded) in a z-order sort key, as Paimon's ZIndexer"
).row("zorder.var-length-contribution", INT, 8, rng(1))
# row tracking: reads give _ROW_ID / _SEQUENCE_NUMBER (lakeops.read.row_tracking); each
# commit gives new files first row ids from the snapshot's nextRowId (lakeops.commit.row_ids);
# compaction is refused (lakeops.table.append) as it would have to keep every row's id
ROW_TRACKING_ENABLED = honoured(
    "rows carry _ROW_ID / _SEQUENCE_NUMBER: read, and assigned to new files at commit as "
    "Paimon does (snapshot nextRowId); lakeops refuses to compact such tables",
).row("row-tracking.enabled", BOOL, False, rng())
DATA_EVOLUTION_ENABLED = honoured(
    "files holding some columns of rows are merged by row id on read; whole rows and "
    "column subsets of existing rows (AppendTable.update_columns) are written, BLOB columns "
    "to .blob files; alters served; lakeops refuses to compact such tables",
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
# BLOB columns (type BLOB, their values in .blob files: lakeops.format.blob_file) are read
# and written (appends of data-evolution tables: lakeops.write.append_write; updates by row
# id: lakeops.write.update_columns)
BLOB_FIELD = honoured(
    "BLOB columns (the columns pypaimon's blob-field names) keep their values in .blob files: "
    "read, and written by appends (one data file of the other columns, then the .blob files "
    "of each BLOB column, rolled at blob.target-file-size) and by updates by row id "
    "(placeholders for the rows left, as pypaimon)",
).rows("blob-field")
BLOB_TARGET_FILE_SIZE = honoured(
    "the size at which a BLOB column's .blob files roll (default: target-file-size)",
).row("blob.target-file-size", MEMORY, None, rng(1, 2**63 - 1, meaning="a size"))
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

# data-file indexes (lakeops.kv.file_index writes them with every data file)
_FILE_INDEX = honoured(
    "every data file lakeops writes (new data and compaction output of both table kinds) "
    "carries the indexes these options ask for, embedded in its manifest entry or as an "
    "extra '<data file>.index' file as Paimon decides by size"
)
#: the columns of one index type (read with ``key=f"file-index.{type}.columns"``)
FILE_INDEX_COLUMNS = _FILE_INDEX.row("file-index.<type>.columns", STRING)
#: one option of one indexed column (``file-index.bloom-filter.<column>.fpp``)
FILE_INDEX_OPTION = _FILE_INDEX.row("file-index.<type>.<option>", STRING)
#: whether reads use the indexes to skip files (lakeops.read.file_index)
FILE_INDEX_READ_ENABLED = honoured(
    "lakeops' reads of append tables skip a file whose embedded index rules out every value "
    "an equality or IN filter allows"
).row("file-index.read.enabled", BOOL, True, rng())
#: the largest index container embedded in the manifest entry (larger: an extra file)
FILE_INDEX_IN_MANIFEST_THRESHOLD = _FILE_INDEX.row(
    "file-index.in-manifest-threshold", MEMORY, 500, rng(0)
)

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
    CLUSTERING_COLUMNS,
    CLUSTERING_STRATEGY,
    CLUSTERING_INCREMENTAL,
    ZORDER_VAR_LENGTH_CONTRIBUTION,
    ROW_TRACKING_ENABLED,
    DATA_EVOLUTION_ENABLED,
    _CHAIN,
    *_FALLBACK_BRANCHES,
    *BLOB_FIELD,
    BLOB_TARGET_FILE_SIZE,
    *_BLOB_FIELDS,
    *_PK_INDEXES,
    _QUERY_AUTH,
    *_SEQUENCE_INIT,
    FILE_INDEX_COLUMNS,
    FILE_INDEX_OPTION,
    FILE_INDEX_IN_MANIFEST_THRESHOLD,
    FILE_INDEX_READ_ENABLED,
)
