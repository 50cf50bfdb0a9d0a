"""The pypaimon-written matrix (issue 26): every table option pypaimon 2.1 writes, against a
plain model of Paimon's merge.

For each case pypaimon 2.1 creates a table with the case's options (merge engines, sequence
fields in both orders, fixed / dynamic buckets and bucket keys, partitions of several types,
file formats and codecs, manifest codecs, data paths and external paths, index placement,
changelog producers) and writes several commits of awkward data (NULLs, NaN, -0.0, ±inf,
empty / blank / non-ASCII strings, extreme decimals, dates and timestamps, duplicate keys
across commits, deletes through ``rowkind.field``), sometimes with schema changes, overwrites,
tags, rollbacks and branches in between. Then lakeops reads the table (it must equal the
model), appends a commit and compacts fully (every read must still equal the model, and the
files it wrote must have the format, codec and location the options ask for), and pypaimon
reads the result back (it must equal the model too; so must tags and branches). The model is
plain Python written here, never lakeops.

Options lakeops cannot honour exactly (and tables without a primary key, until issue 19) must
be refused with a :class:`LakeopsError` naming the option (or the kind of table), leaving
every file of the table and of its external roots byte-identical; a wrong row or any other
exception fails. Cases that need a data file format lakeops does not serve yet (Avro) are
skipped until ``READABLE_FORMATS`` and ``WRITABLE_FORMATS`` name it.

Where pypaimon 2.1 itself departs from Paimon the data avoids the difference, or the model
says so (see :meth:`Model.add` and the ``tag-rollback-dynamic-bucket`` case).

pypaimon takes seconds to start, so it runs twice for the whole matrix (see
:class:`Matrix`): every case's writes in one process, every read-back in another.
"""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

from lakeops import Catalog
from lakeops.errors import LakeopsError
from lakeops.io.data_formats import READABLE_FORMATS
from lakeops.options.registry import WRITABLE_FORMATS
from tests.interop.oracle import oracle_batch, oracle_read, oracle_script

pytestmark = pytest.mark.interop

TABLE = "db.t"
Row = dict[str, Any]

# ------------------------------------------------------------------------------ the data
NAN = float("nan")
INF = float("inf")
F32_MAX = 3.4028234663852886e38  # float32's largest value, exact as a double
F32_TINY = 1.401298464324817e-45  # float32's smallest subnormal
DEC_MAX = Decimal("99999999999999999999999999999.999999999")  # DECIMAL(38, 9)
DEC_MIN = Decimal("-99999999999999999999999999999.999999999")  # (not -DEC_MAX: 28 digits)

S_POOL = [
    "",
    "ünïcödé",
    None,
    "日本語テキスト",
    "emoji 🎉🚀",
    " ",
    "tab\tnew\nline",
    "x" * 300,
    "plain",
    "NUL\x00byte",
]
D_POOL = [NAN, -0.0, None, INF, -INF, 1.7976931348623157e308, 5e-324, 0.0, -1.5]
F_POOL = [NAN, -0.0, INF, None, F32_MAX, F32_TINY, -2.5, -INF]
DEC_POOL = [DEC_MAX, DEC_MIN, Decimal("0E-9"), None, Decimal("0.000000001"), Decimal("-1.5")]
N_POOL = [-(2**31), 2**31 - 1, 0, None, -1, 42, 7]
DAY_POOL = [
    dt.date(1, 1, 1),
    dt.date(9999, 12, 31),
    None,
    dt.date(1970, 1, 1),
    dt.date(1969, 12, 31),
    dt.date(2024, 2, 29),
]
TS_POOL = [
    dt.datetime(1, 1, 1),
    dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
    dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
    None,
    dt.datetime(1970, 1, 1),
    dt.datetime(2024, 2, 29, 12, 0, 0, 1),
]
#: pyarrow reads ORC timestamps as nanoseconds: the extremes are those a ns timestamp holds;
#: before 1970 only whole milliseconds (lakeops refuses to write others as ORC: Java Paimon
#: 0.9's ORC reader misreads them — the case ``orc-pre-1970-microseconds``)
TS_POOL_NS = [
    dt.datetime(1677, 9, 22),
    dt.datetime(2262, 4, 11, 23, 47, 16, 854775),
    dt.datetime(1969, 12, 31, 23, 59, 59, 999000),
    None,
    dt.datetime(1970, 1, 1),
    dt.datetime(2024, 2, 29, 12, 0, 0, 1),
]
TS_POOL_NS_MICROS = [
    *TS_POOL_NS[:2],
    dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
    *TS_POOL_NS[3:],
]
UTC = dt.UTC
LTZ_POOL = [
    dt.datetime(1677, 9, 22, tzinfo=UTC),
    None,
    dt.datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC),
    dt.datetime(2262, 4, 11, 23, 47, 16, 854000, tzinfo=UTC),
    dt.datetime(2024, 3, 31, 1, 30, tzinfo=UTC),
]
TS3_POOL = [
    dt.datetime(1, 1, 1),
    dt.datetime(9999, 12, 31, 23, 59, 59, 999000),
    None,
    dt.datetime(1969, 12, 31, 23, 59, 59, 1000),
]
TS3_POOL_NS = [
    dt.datetime(1677, 9, 22),
    dt.datetime(2262, 4, 11, 23, 47, 16, 854000),
    None,
    dt.datetime(1969, 12, 31, 23, 59, 59, 1000),
]
I64_POOL = [-(2**63), 2**63 - 1, None, 0, -1]
I16_POOL = [-(2**15), 2**15 - 1, None, 0]
B_POOL = [True, None, False]
BIN_POOL = [b"", b"\x00\xff\x00", None, bytes(range(256)), b"abc"]

#: aggregation columns get values their functions treat alike in Paimon and pypaimon (no
#: NaN or signed zeros under min/max; sums that cannot overflow)
AGG_FUNCS = {
    "n": "sum",
    "s": "listagg",
    "d": "last_value",
    "f": "min",
    "dec": "max",
    "ts": "max",
    "day": "min",
    "b": "bool_or",
    "bin": "first_non_null_value",
    "op": "first_value",
}
AGG_POOLS: dict[str, list[Any]] = {
    "n": [1, -3, None, 7, 0, 11],
    "f": [-2.5, None, 0.5, F32_MAX, -F32_MAX, F32_TINY],
    "dec": DEC_POOL,
}

DATA_COLUMNS: list[tuple[str, pa.DataType, list[Any]]] = [
    ("n", pa.int32(), N_POOL),
    ("s", pa.string(), S_POOL),
    ("d", pa.float64(), D_POOL),
    ("f", pa.float32(), F_POOL),
    ("dec", pa.decimal128(38, 9), DEC_POOL),
    ("ts", pa.timestamp("us"), TS_POOL),
    ("day", pa.date32(), DAY_POOL),
    ("b", pa.bool_(), B_POOL),
    ("bin", pa.binary(), BIN_POOL),
    ("ltz", pa.timestamp("us", tz="UTC"), LTZ_POOL),
    ("ts3", pa.timestamp("ms"), TS3_POOL),
    ("i64", pa.int64(), I64_POOL),
    ("i16", pa.int16(), I16_POOL),
]

#: keys of the commits: pypaimon's three, then lakeops' append; overlapping on purpose
KEYS_1 = list(range(0, 10))
KEYS_2 = list(range(5, 15))
KEYS_3 = [0, 1, 2, 3, 12, 13, 14, 15, 16, 17]
KEYS_L = [2, 3, 4, 5, 6, 16, 17, 18, 19, 20]
#: deletes (``rowkind.field``) in commit 2 and in lakeops' commit
DELETES_2 = frozenset({5, 7, 12})  # 12: a delete of a key never written
DELETES_L = {3, 12, 17}


# ------------------------------------------------------------------------------ the cases
Partition = tuple[str, pa.DataType, list[Any]]


@dataclass(frozen=True)
class Case:
    """One table of the matrix.

    Attributes:
        options: the table options (``{ext1}`` / ``{ext2}`` stand for external roots).
        partitions: partition columns ``(name, type, values)``; a key's partition values are
            ``values[key % len(values)]``, so a key always lands in the same partition.
        flow: what pypaimon does besides its three commits: ``plain``, ``schema``,
            ``overwrite-partition``, ``overwrite-table``, ``tag-rollback``, ``branch``.
        refused: the option lakeops refuses for this table (None: lakeops must serve it).
        refused_reads: the refusal covers reads too.
        refused_rollback: a rollback is refused as well (the refusal is of an option, not of
            the data).
        needs_format: a data file format the case needs lakeops to read and write.
        orc_micros: the ORC case's data holds a time before 1970 with microseconds.
        deletes_2: the keys pypaimon's second commit deletes.
        primary_key: False for an append table (no primary key).
    """

    options: dict[str, str]
    partitions: tuple[Partition, ...] = ()
    flow: str = "plain"
    refused: str | None = None
    refused_reads: bool = False
    refused_rollback: bool = True
    needs_format: str | None = None
    orc_micros: bool = False
    deletes_2: frozenset[int] = DELETES_2
    primary_key: bool = True

    @property
    def engine(self) -> str:
        if not self.primary_key:
            return "append"
        return self.options.get("merge-engine", "deduplicate")

    @property
    def rowkind(self) -> bool:
        return "rowkind.field" in self.options

    @property
    def file_format(self) -> str:
        return self.options.get("file.format", "parquet")


DEDUP = {"rowkind.field": "op"}
P_INT: Partition = ("p", pa.int32(), [-(2**31), 0, 7, 2**31 - 1])
P_STRING: Partition = ("p", pa.string(), ["a", "ünï", "x/y", "sp ace", "日本"])
P_DATE: Partition = (
    "p",
    pa.date32(),
    [dt.date(1970, 1, 1), dt.date(1969, 12, 31), dt.date(2024, 2, 29)],
)
P_BIGINT: Partition = ("p1", pa.int64(), [-(2**63), 2**63 - 1])
P_STRING2: Partition = ("p2", pa.string(), ["äöü", "b=c"])
P_BOOL: Partition = ("p", pa.bool_(), [True, False])
P_TINYINT: Partition = ("p", pa.int8(), [-128, 0, 127])
AGG_OPTIONS = {
    "merge-engine": "aggregation",
    **{f"fields.{c}.aggregate-function": f for c, f in AGG_FUNCS.items()},
}


def _avro(options: dict[str, str]) -> Case:
    return Case({"bucket": "2", "file.format": "avro", **DEDUP, **options}, needs_format="avro")


CASES: dict[str, Case] = {
    # engines and sequence fields
    "dedup-parquet": Case({"bucket": "2", **DEDUP}),
    "dedup-orc": Case({"bucket": "2", "file.format": "orc", **DEDUP}),
    "sequence-ascending": Case({"bucket": "2", "sequence.field": "n", **DEDUP}),
    "sequence-descending": Case(
        {"bucket": "2", "sequence.field": "n", "sequence.field.sort-order": "descending", **DEDUP}
    ),
    "sequence-two-fields-descending": Case(
        {
            "bucket": "2",
            "sequence.field": "day,n",
            "sequence.field.sort-order": "descending",
            **DEDUP,
        }
    ),
    "sequence-two-fields": Case({"bucket": "1", "sequence.field": "day,n", **DEDUP}, (P_INT,)),
    "dedup-ignore-delete": Case({"bucket": "2", "ignore-delete": "true", **DEDUP}),
    "changelog-input": Case({"bucket": "2", "changelog-producer": "input", **DEDUP}),
    "changelog-full-compaction": Case(
        {"bucket": "2", "changelog-producer": "full-compaction", **DEDUP}, (P_STRING,)
    ),
    "changelog-lookup": Case({"bucket": "2", "changelog-producer": "lookup", **DEDUP}, (P_DATE,)),
    "partial-update": Case({"bucket": "2", "merge-engine": "partial-update"}),
    "aggregation": Case({"bucket": "2", **AGG_OPTIONS}, (P_STRING,)),
    "aggregation-sequence-descending": Case(
        {
            "bucket": "2",
            **{k: v for k, v in AGG_OPTIONS.items() if k != "fields.n.aggregate-function"},
            "fields.b.aggregate-function": "bool_and",
            "fields.default-aggregate-function": "max",
            "sequence.field": "n",
            "sequence.field.sort-order": "descending",
        }
    ),
    "partial-update-sequence": Case(
        {"bucket": "2", "merge-engine": "partial-update", "sequence.field": "ts3"}, (P_INT,)
    ),
    "aggregation-orc": Case({"bucket": "1", "file.format": "orc", **AGG_OPTIONS}),
    "first-row": Case({"bucket": "2", "merge-engine": "first-row"}),
    # buckets
    "dynamic-bucket": Case(
        {"bucket": "-1", "dynamic-bucket.target-row-num": "3", **DEDUP}, (P_STRING,)
    ),
    "single-bucket": Case({"bucket": "1", **DEDUP}),
    "first-row-dynamic-bucket": Case(
        {"bucket": "-1", "merge-engine": "first-row", "dynamic-bucket.target-row-num": "4"},
        (P_INT,),
    ),
    "partial-update-dynamic-bucket-orc": Case(
        {"bucket": "-1", "merge-engine": "partial-update", "file.format": "orc"}, (P_STRING,)
    ),
    "bucket-key": Case({"bucket": "3", "bucket-key": "k", **DEDUP}, (P_STRING,)),
    # formats, codecs and partitions of each type
    "parquet-snappy-int-part": Case(
        {"bucket": "2", "file.compression": "snappy", "manifest.compression": "snappy", **DEDUP},
        (P_INT,),
    ),
    "parquet-gzip-string-part": Case(
        {"bucket": "2", "file.compression": "gzip", "manifest.compression": "deflate", **DEDUP},
        (P_STRING,),
    ),
    "parquet-lz4-two-level-part": Case(
        {"bucket": "2", "file.compression": "lz4", "manifest.compression": "null", **DEDUP},
        (P_BIGINT, P_STRING2),
    ),
    "parquet-brotli-tinyint-part": Case(
        {"bucket": "1", "file.compression": "brotli", "manifest.compression": "bzip2", **DEDUP},
        (P_TINYINT,),
    ),
    "parquet-none-bool-part": Case(
        {"bucket": "2", "file.compression": "none", "manifest.compression": "xz", **DEDUP},
        (P_BOOL,),
    ),
    "orc-zlib-date-part": Case(
        {"bucket": "2", "file.format": "orc", "file.compression": "zlib", **DEDUP}, (P_DATE,)
    ),
    "orc-snappy": Case(
        {"bucket": "2", "file.format": "orc", "file.compression": "snappy", **DEDUP}, (P_INT,)
    ),
    "orc-lz4": Case({"bucket": "2", "file.format": "orc", "file.compression": "lz4", **DEDUP}),
    "orc-uncompressed": Case(
        {"bucket": "2", "file.format": "orc", "file.compression": "uncompressed", **DEDUP}
    ),
    "orc-then-parquet-per-level": Case(
        {
            "bucket": "2",
            "file.format": "orc",
            "file.format.per.level": ",".join(f"{lv}:parquet" for lv in range(1, 8)),
            "file.compression.per.level": ",".join(f"{lv}:snappy" for lv in range(1, 8)),
            **DEDUP,
        },
        (P_STRING,),
    ),
    "avro": _avro({}),
    "avro-snappy-part": Case(
        {"bucket": "2", "file.format": "avro", "file.compression": "snappy", **DEDUP},
        (P_DATE,),
        needs_format="avro",
    ),
    # where files live
    "path-directory": Case({"bucket": "2", "data-file.path-directory": "data", **DEDUP}, (P_INT,)),
    "external-round-robin": Case(
        {
            "bucket": "2",
            "data-file.external-paths": "{ext1},{ext2}",
            "data-file.external-paths.strategy": "round-robin",
            **DEDUP,
        },
        (P_STRING,),
    ),
    "external-specific-fs-path-directory": Case(
        {
            "bucket": "2",
            "data-file.path-directory": "data",
            "data-file.external-paths": "{ext1}",
            "data-file.external-paths.strategy": "specific-fs",
            "data-file.external-paths.specific-fs": "file",
            "file.format": "orc",
            **DEDUP,
        }
    ),
    "index-in-data-dir": Case(
        {"bucket": "-1", "index-file-in-data-file-dir": "true", **DEDUP}, (P_STRING,)
    ),
    "data-file-prefix": Case({"bucket": "2", "data-file.prefix": "dp-", **DEDUP}),
    # schema changes, overwrite, tags, rollback, branches
    "schema-change": Case({"bucket": "2", **DEDUP}, flow="schema"),
    "schema-change-orc": Case({"bucket": "2", "file.format": "orc", **DEDUP}, flow="schema"),
    "overwrite-partition": Case({"bucket": "2", **DEDUP}, (P_STRING,), flow="overwrite-partition"),
    "overwrite-table": Case({"bucket": "2", **DEDUP}, (P_INT,), flow="overwrite-table"),
    "tag-rollback": Case({"bucket": "2", **DEDUP}, flow="tag-rollback"),
    # no delete of a key never written: pypaimon 2.1 reads such a lone -D of a dynamic-bucket
    # table back as a row (its own read of tag t2, before lakeops touches the table)
    "tag-rollback-dynamic-bucket": Case(
        {"bucket": "-1", "dynamic-bucket.target-row-num": "4", **DEDUP},
        flow="tag-rollback",
        deletes_2=frozenset({5, 7}),
    ),
    "overwrite-partition-dynamic-bucket": Case(
        {"bucket": "-1", "dynamic-bucket.target-row-num": "3", **DEDUP},
        (P_STRING,),
        flow="overwrite-partition",
    ),
    "branch": Case({"bucket": "2", **DEDUP}, flow="branch"),
    # append tables (no primary key, issue 19): read, appended to and compacted exactly
    "append": Case({"bucket": "-1"}, (P_STRING,), primary_key=False),
    "append-bucketed": Case({"bucket": "2", "bucket-key": "k"}, primary_key=False),
    "append-bucketed-partitioned": Case(
        {"bucket": "3", "bucket-key": "k"}, (P_DATE,), primary_key=False
    ),
    # deletion vectors (pypaimon writes none): read, appended to and compacted exactly
    "append-deletion-vectors": Case(
        {"bucket": "-1", "deletion-vectors.enabled": "true"}, primary_key=False
    ),
    # primary-key deletion vectors: lakeops' writes lift level 0 and mark the rows they
    # supersede; pypaimon's level-0 writes stay invisible until lakeops compacts them
    "deletion-vectors": Case({"bucket": "2", "deletion-vectors.enabled": "true", **DEDUP}),
    # row tracking: read exactly (the values), appended to (new row ids), compacted (files
    # whose row ids follow one another, each row keeping its id)
    "append-row-tracking": Case(
        {"bucket": "-1", "row-tracking.enabled": "true"}, primary_key=False
    ),
    # read exactly (merged by row id), appended to, compacted (row-id groups merged)
    "append-data-evolution": Case(
        {"bucket": "-1", "row-tracking.enabled": "true", "data-evolution.enabled": "true"},
        primary_key=False,
    ),
    # options lakeops cannot honour: refused, table untouched
    "chain-table": Case(
        {"bucket": "2", "chain-table.enabled": "true", **DEDUP},
        refused="chain-table.enabled",
        refused_reads=True,
    ),
    "orc-pre-1970-microseconds": Case(
        {"bucket": "2", "file.format": "orc", **DEDUP},
        refused="file.format",
        refused_rollback=False,
        orc_micros=True,
    ),
}


def _formats_served() -> set[str]:
    return set(READABLE_FORMATS) & set(WRITABLE_FORMATS)


def _params(refused: bool = True) -> list[Any]:
    """The cases as test parameters (``refused`` False: only those lakeops serves)."""
    out = []
    for name, case in CASES.items():
        if case.refused is not None and not refused:
            continue
        marks = []
        if case.needs_format and case.needs_format not in _formats_served():
            marks.append(pytest.mark.skip(reason="Avro data files land separately"))
        out.append(pytest.param(name, marks=marks, id=name))
    return out


# ------------------------------------------------------------------------------ the schema
def _base_schema(case: Case) -> pa.Schema:
    fields = [pa.field("k", pa.int32(), nullable=False)]
    fields += [pa.field(name, typ, nullable=False) for name, typ, _ in case.partitions]
    fields += [pa.field(name, typ) for name, typ, _ in DATA_COLUMNS]
    fields.append(pa.field("op", pa.string()))
    return pa.schema(fields)


#: the schema-change flow: before commit 2 and before commit 3 (pypaimon alters)
ALTER_1 = [
    {"op": "rename", "field": "s", "new_name": "s_new"},
    {"op": "add", "field": "extra", "type": "BIGINT"},
    {"op": "drop", "field": "bin"},
    {"op": "type", "field": "n", "type": "BIGINT"},
    {"op": "type", "field": "f", "type": "DOUBLE"},
]
ALTER_2 = [
    {"op": "add", "field": "late", "type": "STRING", "after": "k"},
    # names used before, new field ids: older files' columns of that name must not show
    {"op": "add", "field": "bin", "type": "STRING"},
    {"op": "add", "field": "s", "type": "INT"},
]


def _evolve_schema(schema: pa.Schema, stage: int) -> pa.Schema:
    """The Arrow schema after ``stage`` alters (0: the base schema)."""
    if stage >= 1:
        fields = []
        for f in schema:
            if f.name == "bin":
                continue
            if f.name == "s":
                f = pa.field("s_new", f.type)
            elif f.name == "n":
                f = pa.field("n", pa.int64())
            elif f.name == "f":
                f = pa.field("f", pa.float64())
            fields.append(f)
        fields.append(pa.field("extra", pa.int64()))
        schema = pa.schema(fields)
    if stage >= 2:
        fields = list(schema)
        fields.insert(1, pa.field("late", pa.string()))
        fields += [pa.field("bin", pa.string()), pa.field("s", pa.int32())]
        schema = pa.schema(fields)
    return schema


def _evolve_row(row: Row, from_stage: int, to_stage: int, fresh: bool) -> Row:
    """A row of schema ``from_stage`` as schema ``to_stage`` has it: a model row (``fresh``
    False: added columns are NULL) or a new row being written (added columns get values)."""
    row = dict(row)
    k = row["k"]
    if from_stage < 1 <= to_stage:
        row["s_new"] = row.pop("s")
        row.pop("bin")
        row["extra"] = (k * 10**15 if k % 2 else None) if fresh else None
    if from_stage < 2 <= to_stage:
        row["late"] = f"late-{k}-ü" if fresh else None
        row["bin"] = f"re-{k}" if fresh else None
        row["s"] = -k if fresh else None
    return row


# ------------------------------------------------------------------------------ the rows
def _pool(case: Case, column: str, pool: list[Any]) -> list[Any]:
    if case.engine == "aggregation" and column in AGG_POOLS:
        return AGG_POOLS[column]
    if column == "ts" and case.file_format == "orc":
        return TS_POOL_NS_MICROS if case.orc_micros else TS_POOL_NS
    if column == "ts3" and case.file_format == "orc":
        return TS3_POOL_NS
    return pool


def _rows(case: Case, keys: Iterable[int], commit: int, deletes: Iterable[int] = ()) -> list[Row]:
    """Rows of one commit: each column cycles through its pool, shifted per commit, so a key
    written again gets other values."""
    deleted = set(deletes) if case.rowkind else set()
    rows = []
    for key in keys:
        row: Row = {"k": key}
        for name, _, values in case.partitions:
            row[name] = values[key % len(values)]
        for offset, (name, _, pool) in enumerate(DATA_COLUMNS):
            values = _pool(case, name, pool)
            row[name] = values[(key * 5 + commit * 3 + offset) % len(values)]
        row["op"] = "-D" if key in deleted else ("+U" if commit > 1 else "+I")
        rows.append(row)
    return rows


def _table(rows: list[Row], schema: pa.Schema) -> pa.Table:
    return pa.Table.from_pylist([{c: r[c] for c in schema.names} for r in rows], schema=schema)


# ------------------------------------------------------------------------------ the model
def _listagg(acc: Any, value: Any) -> Any:
    if value is None or str(value).strip() == "":
        return acc
    if acc is None or str(acc).strip() == "":
        return value
    return f"{acc},{value}"


def _either(pick: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """A function of two values that keeps the non-NULL one when the other is NULL."""
    return lambda acc, v: acc if v is None else v if acc is None else pick(acc, v)


_AGGREGATORS: dict[str, Callable[[Any, Any], Any]] = {
    "sum": _either(lambda a, v: a + v),
    "max": _either(max),
    "min": _either(min),
    "bool_or": _either(lambda a, v: a or v),
    "bool_and": _either(lambda a, v: a and v),
    "listagg": _listagg,
    "last_value": lambda acc, v: v,
    "last_non_null_value": lambda acc, v: acc if v is None else v,
}


@dataclass
class Model:
    """Paimon's merge of one table, in plain Python: the records in the order of their
    sequence numbers (commit order, then row order), merged per key by the engine."""

    case: Case
    keys: list[str]
    records: list[Row] = field(default_factory=list)

    def add(self, rows: list[Row], by_pypaimon: bool = False) -> None:
        """Append a commit's records. pypaimon 2.1's writer runs the merge function on every
        key of a commit, a lone record too (Paimon's writers pass it through), so what it
        writes of an aggregation table is each record merged alone (``listagg`` of a blank
        string: NULL)."""
        rows = copy.deepcopy(rows)
        if self.case.options.get("ignore-delete") == "true":
            rows = [r for r in rows if r["op"] not in ("-D", "-U")]
        if by_pypaimon and self.case.engine == "aggregation":
            rows = [self._merge([r], lone_passthrough=False) or r for r in rows]
        self.records.extend(rows)

    def overwrite(self, partition: dict[str, Any] | None) -> None:
        """Drop every record (``None``) or those of one partition, as an overwrite does."""
        if partition is None:
            self.records = []
        else:
            self.records = [r for r in self.records if any(r[c] != v for c, v in partition.items())]

    def evolve(self, from_stage: int, to_stage: int) -> None:
        self.records = [_evolve_row(r, from_stage, to_stage, False) for r in self.records]

    def _ordered(self, records: list[Row]) -> list[Row]:
        seq = [f.strip() for f in self.case.options.get("sequence.field", "").split(",") if f]
        if not seq:
            return records
        descending = self.case.options.get("sequence.field.sort-order") == "descending"

        # field by field, a NULL sequence value sorts first (loses) in both orders; ties
        # keep commit order (the sort is stable)
        def rank(r: Row) -> tuple[tuple[bool, Any], ...]:
            return tuple(
                (r[f] is not None, (-_number(r[f]) if descending else _number(r[f])))
                if r[f] is not None
                else (False, 0)
                for f in seq
            )

        return sorted(records, key=rank)

    def _merge(self, records: list[Row], lone_passthrough: bool = True) -> Row | None:
        engine = self.case.engine
        if engine == "first-row":
            return records[0]
        if engine == "partial-update":
            records = self._ordered(records)
            merged = dict(records[0])
            for r in records[1:]:
                merged.update({c: v for c, v in r.items() if v is not None})
            return merged
        if engine == "aggregation":
            if len(records) == 1 and lone_passthrough:  # Paimon: no merge of a lone record
                return records[0]
            records = self._ordered(records)
            merged = {c: records[0][c] for c in self.keys}
            options = self.case.options
            sequence = options.get("sequence.field", "").split(",")
            for column in records[0]:
                if column in self.keys:
                    continue
                function = options.get(
                    f"fields.{column}.aggregate-function",
                    options.get("fields.default-aggregate-function", "last_non_null_value"),
                )
                if column in sequence:  # Paimon: a sequence field is its last value
                    function = "last_value"
                values = [r[column] for r in records]
                if function == "first_value":
                    merged[column] = values[0]
                elif function == "first_non_null_value":
                    merged[column] = next((v for v in values if v is not None), None)
                else:
                    acc = None
                    for v in values:
                        acc = _AGGREGATORS[function](acc, v)
                    merged[column] = acc
            return merged
        last = self._ordered(records)[-1]
        if self.case.rowkind and last["op"] == "-D":
            return None
        return last

    def rows(self) -> list[Row]:
        """The merged table. A key's lone record passes through unmerged, as in Paimon
        (``ReducerMergeFunctionWrapper``). An append table keeps every record."""
        if self.case.engine == "append":
            return list(self.records)
        groups: dict[tuple[Any, ...], list[Row]] = {}
        for r in self.records:
            groups.setdefault(tuple(r[k] for k in self.keys), []).append(r)
        merged = [self._merge(rs) for rs in groups.values()]
        return [r for r in merged if r is not None]


def _number(v: Any) -> Any:
    """A sequence value as a number that negates (dates and times as their ordinal)."""
    if isinstance(v, dt.datetime):
        return (v - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
    if isinstance(v, dt.date):
        return v.toordinal()
    return v


def _canon_value(v: Any) -> Any:
    if isinstance(v, float):
        return ("float", "nan" if math.isnan(v) else repr(v))
    return v


def _canon(rows: Iterable[Row], keys: list[str]) -> list[tuple[tuple[str, Any], ...]]:
    """Rows as sorted tuples of (column, value) with floats as text (NaN, -0.0 compare)."""
    out = [tuple(sorted((c, _canon_value(v)) for c, v in r.items())) for r in rows]
    return sorted(out, key=lambda t: (repr([v for c, v in t if c in keys]), repr(t)))


def _check(got: pa.Table, model_rows: list[Row], keys: list[str], what: str) -> None:
    expected = _canon(model_rows, keys)
    actual = _canon(got.to_pylist(), keys)
    if actual != expected:
        exp_keys = {repr([v for c, v in t if c in keys]): t for t in expected}
        act_keys = {repr([v for c, v in t if c in keys]): t for t in actual}
        diff = [
            (k, exp_keys.get(k), act_keys.get(k))
            for k in sorted(set(exp_keys) | set(act_keys))
            if exp_keys.get(k) != act_keys.get(k)
        ]
        pytest.fail(
            f"{what}: {len(actual)} rows, the model has {len(expected)}; "
            f"{len(diff)} keys differ, first: {diff[:3]}"
        )


# ------------------------------------------------------------------------------ the files
def _tree(root: Path) -> dict[str, str]:
    """Every file below ``root`` with its SHA-256."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _live_files(table: Any) -> dict[str, tuple[int, str]]:
    """Name -> (level, storage path) of every live data file."""
    store = table.store
    loc = store.locations(table.schema)
    out = {}
    for e in store.live_entries(store.latest_snapshot()):
        path = loc.entry_path(e.partition, e.bucket, e.file.file_name, e.file.external_path)
        out[e.file.file_name] = (e.file.level, path)
    return out


def _per_level(options: dict[str, str], key: str) -> dict[int, str]:
    pairs = [p.split(":", 1) for p in options.get(key, "").split(",") if p.strip()]
    return {int(level): value.strip().lower() for level, value in pairs}


_PARQUET_CODECS = {
    "zstd": {"ZSTD"},
    "snappy": {"SNAPPY"},
    "gzip": {"GZIP"},
    "lz4": {"LZ4", "LZ4_RAW"},
    "brotli": {"BROTLI"},
    "none": {"UNCOMPRESSED"},
    "uncompressed": {"UNCOMPRESSED"},
}
_ORC_CODECS = {
    "zstd": {"ZSTD"},
    "snappy": {"SNAPPY"},
    "zlib": {"ZLIB"},
    "lz4": {"LZ4"},
    "none": {"UNCOMPRESSED"},
    "uncompressed": {"UNCOMPRESSED"},
}


def _check_written_files(
    case: Case, options: dict[str, str], files: dict[str, tuple[int, str]], tmp: Path
) -> None:
    """Files lakeops wrote are in the format and codec the table asks for at their level, and
    where the table's location options put them."""
    formats = _per_level(options, "file.format.per.level")
    codecs = _per_level(options, "file.compression.per.level")
    assert files
    for name, (level, path) in files.items():
        fmt = formats.get(level, case.file_format)
        codec = codecs.get(level, options.get("file.compression", "zstd")).lower()
        assert name.endswith("." + fmt), f"level-{level} file {name} is not {fmt}"
        if fmt == "parquet":
            meta = pq.ParquetFile(path).metadata
            used = {meta.row_group(0).column(i).compression for i in range(meta.num_columns)}
            assert used <= _PARQUET_CODECS[codec], (name, used, codec)
        elif fmt == "orc":
            assert orc.ORCFile(path).compression in _ORC_CODECS[codec], (name, codec)
        if options.get("data-file.external-paths.strategy", "none") != "none":
            roots = (str(tmp / "ext1") + "/", str(tmp / "ext2") + "/")
            assert path.startswith(roots), f"{name} is not below an external root: {path}"
        elif options.get("data-file.path-directory"):
            directory = tmp / "wh" / "db.db" / "t" / options["data-file.path-directory"]
            assert path.startswith(f"{directory}/"), f"{name} is not below {directory}: {path}"


# ------------------------------------------------------------------------------ the test
@dataclass
class Run:
    """One case being played: the pypaimon operations so far and the models they imply."""

    case: Case
    schema: pa.Schema
    model: Model
    ops: list[dict[str, Any]] = field(default_factory=list)
    #: extra reads pypaimon does at the end: (op fields, model rows, what)
    checks: list[tuple[dict[str, Any], Model]] = field(default_factory=list)
    stage: int = 0

    def write(
        self, rows: list[Row], overwrite: dict[str, Any] | None = None, branch: str = ""
    ) -> None:
        op: dict[str, Any] = {
            "op": "write",
            "table": TABLE + (f"$branch_{branch}" if branch else ""),
            "data": _table(rows, self.schema),
        }
        if overwrite is not None:
            op["overwrite"] = overwrite
        self.ops.append(op)


def _options(case: Case, tmp: Path) -> dict[str, str]:
    ext = {"ext1": f"file://{tmp / 'ext1'}", "ext2": f"file:{tmp / 'ext2'}"}
    return {k: v.format(**ext) for k, v in case.options.items()}


def _play_pypaimon(case: Case, options: dict[str, str]) -> Run:
    """The pypaimon operations of the case, with the model of each table state."""
    schema = _base_schema(case)
    keys = [name for name, _, _ in case.partitions] + ["k"]
    run = Run(case, schema, Model(case, keys))
    run.ops.append(
        {
            "op": "create",
            "table": TABLE,
            "schema": schema,
            "primary_keys": keys if case.primary_key else [],
            "partition_keys": [name for name, _, _ in case.partitions],
            "options": options,
        }
    )

    def commit(keys_: Iterable[int], number: int, deletes: Iterable[int] = ()) -> None:
        rows = [_evolve_row(r, 0, run.stage, True) for r in _rows(case, keys_, number, deletes)]
        run.model.add(rows, by_pypaimon=True)
        run.write(rows)

    commit(KEYS_1, 1)
    if case.flow == "schema":
        run.ops.append({"op": "alter", "table": TABLE, "changes": ALTER_1})
        run.model.evolve(0, 1)
        run.stage, run.schema = 1, _evolve_schema(schema, 1)
    commit(KEYS_2, 2, case.deletes_2)
    if case.flow == "schema":
        run.ops.append({"op": "alter", "table": TABLE, "changes": ALTER_2})
        run.model.evolve(1, 2)
        run.stage, run.schema = 2, _evolve_schema(schema, 2)
    elif case.flow == "overwrite-partition":
        target = {"p": "a"}
        rows = [r for r in _rows(case, range(0, 30), 7) if r["p"] == "a"]
        run.model.overwrite(target)
        run.model.add(rows, by_pypaimon=True)
        run.write(rows, overwrite=target)
    elif case.flow == "overwrite-table":
        rows = _rows(case, range(3, 12), 8)
        run.model.overwrite(None)
        run.model.add(rows, by_pypaimon=True)
        run.write(rows, overwrite={})
    elif case.flow == "tag-rollback":
        # snapshots 1, 2; tag t2; 3 (rolled back to the tag); 3 again; tag t3; 4 (rolled
        # back to snapshot 3 by id)
        run.ops.append({"op": "tag", "table": TABLE, "name": "t2", "snapshot_id": 2})
        at_t2 = copy.deepcopy(run.model)
        commit(range(20, 26), 5)
        run.ops.append({"op": "rollback", "table": TABLE, "to": "t2"})
        run.model = copy.deepcopy(at_t2)
        commit(range(4, 9), 6)
        run.ops.append({"op": "tag", "table": TABLE, "name": "t3"})
        at_t3 = copy.deepcopy(run.model)
        commit(range(0, 12), 9)
        run.ops.append({"op": "rollback", "table": TABLE, "to": 3})
        run.model = copy.deepcopy(at_t3)
        run.checks += [({"tag": "t2"}, at_t2), ({"tag": "t3"}, at_t3)]
    elif case.flow == "branch":
        run.ops.append({"op": "tag", "table": TABLE, "name": "t2"})
        run.ops.append({"op": "branch", "table": TABLE, "name": "b", "tag": "t2"})
        branch = copy.deepcopy(run.model)
        rows = _rows(case, range(8, 20), 11, deletes=[9])
        branch.add(rows, by_pypaimon=True)
        run.write(rows, branch="b")
        run.checks += [({"table": f"{TABLE}$branch_b"}, branch)]
    commit(KEYS_3, 3)
    run.ops.append({"op": "read", "table": TABLE})
    return run


def _visible(case: Case, model: Model, compacted: bool) -> list[Row]:
    """What a batch read returns: first-row and deletion-vector tables skip level 0, which
    is all pypaimon writes (it never compacts)."""
    skips_level0 = case.primary_key and (
        case.engine == "first-row" or case.options.get("deletion-vectors.enabled") == "true"
    )
    return model.rows() if compacted or not skips_level0 else []


_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "=": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "in": lambda a, b: a in b,
    "not in": lambda a, b: a not in b,
}


def _matches(row: Row, dnf: list[list[tuple[str, str, Any]]]) -> bool:
    """SQL semantics: a comparison with NULL holds for no row."""
    return any(all(row[c] is not None and _OPS[op](row[c], v) for c, op, v in conj) for conj in dnf)


def _filters(case: Case) -> list[list[list[tuple[str, str, Any]]]]:
    """Filters (OR of ANDs) on keys, partitions and plain columns: the scan prunes partitions
    and files by the first two, so a wrong partition value or key range loses rows."""
    out: list[list[list[tuple[str, str, Any]]]] = [
        [[("k", ">=", 5), ("k", "<", 13)]],
        [[("k", "in", [0, 3, 12, 17, 19])]],
        [[("k", "=", 2)], [("k", ">", 15)]],
        [[("d", ">", 0.0)]],
        [[("ts", "<", dt.datetime(1970, 1, 1))]],
    ]
    for name, _, values in case.partitions:
        out.append([[(name, "=", values[-1])]])
        out.append([[(name, "!=", values[0]), ("k", "<", 10)]])
    return out


def _check_filtered(
    case: Case, table: Any, model_rows: list[Row], keys: list[str], when: str
) -> None:
    for dnf in _filters(case):
        want = [r for r in model_rows if _matches(r, dnf)]
        _check(table.read(filter=dnf), want, keys, f"lakeops' read {when} with filter {dnf}")


def _check_lookup(case: Case, table: Any, model_rows: list[Row], keys: list[str]) -> None:
    """Point lookups of every key ever written (present or deleted) and of absent keys
    (primary-key tables: an append table has no key to look up)."""
    if not case.primary_key:
        return
    written = {tuple(r[k] for k in keys) for r in model_rows}
    probes = sorted(written, key=repr)
    part_values = [values for _, _, values in case.partitions]
    for k in (-1, 99, 2**31 - 1):  # absent keys, in the partitions they would fall in
        probes.append((*(v[k % len(v)] for v in part_values), k))
    probes += [(*(v[k % len(v)] for v in part_values), k) for k in DELETES_L]
    schema = table.arrow_schema
    lookup_keys = pa.table(
        {k: pa.array([p[i] for p in probes], schema.field(k).type) for i, k in enumerate(keys)}
    )
    want = [r for r in model_rows if tuple(r[k] for k in keys) in set(probes)]
    _check(table.lookup(lookup_keys), want, keys, "lakeops' lookup after full compaction")


def _lakeops_phase(case: Case, run: Run, options: dict[str, str], tmp: Path) -> None:
    """lakeops reads the pypaimon-written table, appends a commit and compacts fully, each
    read against the model (or, for a refused option, is refused with nothing changed)."""
    keys = run.model.keys
    catalog = Catalog(str(tmp / "wh"))
    if case.refused is not None:
        _check_refused(case, catalog, tmp, run, keys)
        return
    table = catalog.get_table(TABLE)
    _check(table.read(), _visible(case, run.model, False), keys, "lakeops' read")
    _check_filtered(case, table, _visible(case, run.model, False), keys, "of pypaimon's files")
    before = set(_live_files(table))

    rows = _rows(case, KEYS_L, 4, DELETES_L)
    rows = [_evolve_row(r, 0, run.stage, True) for r in rows]
    run.model.add(rows)
    table.write(_table(rows, table.arrow_schema))
    if case.engine != "first-row":  # lakeops' writer may lift level 0 of a lookup table
        # a deletion-vector table's commit lifts every level-0 file, pypaimon's too
        lifted = case.primary_key and case.options.get("deletion-vectors.enabled") == "true"
        want = _visible(case, run.model, lifted)
        _check(table.read(), want, keys, "lakeops' read after append")
    table.compact(full=True)
    _check(table.read(), run.model.rows(), keys, "lakeops' read after full compaction")
    _check_filtered(case, table, run.model.rows(), keys, "after full compaction")
    _check_lookup(case, table, run.model.rows(), keys)
    files = _live_files(table)
    _check_written_files(case, options, {n: f for n, f in files.items() if n not in before}, tmp)


def _readback_ops(run: Run) -> list[dict[str, Any]]:
    """pypaimon's reads of the result: the latest snapshot, then each tag / branch checked."""
    reads: list[dict[str, Any]] = [{"op": "read", "table": TABLE}]
    return reads + [{"op": "read", "table": TABLE, **extra} for extra, _ in run.checks]


@dataclass
class Played:
    """One case after pypaimon's part: its run, options, directory and pypaimon's own read
    (or the error that ended pypaimon's part)."""

    case: Case
    run: Run
    options: dict[str, str]
    tmp: Path
    theirs: pa.Table | None
    error: str | None


class Matrix:
    """The whole matrix, played in three steps so that pypaimon (seconds to start) runs twice
    in all: every case's pypaimon part in ONE process, then lakeops' part per case, then
    pypaimon's read-back of every case in ONE process. Each step runs on first demand, so any
    subset of the tests can run alone."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._played: dict[str, Played] | None = None
        self._lakeops: dict[str, BaseException | None] = {}
        self._readback: dict[str, tuple[list[pa.Table], str | None]] | None = None

    def played(self, name: str) -> Played:
        if self._played is None:
            self._played = {}
            ops: list[dict[str, Any]] = []
            for n in _served_cases():
                case = CASES[n]
                tmp = self.root / n
                (tmp / "wh").mkdir(parents=True)
                options = _options(case, tmp)
                run = _play_pypaimon(case, options)
                ops += [{**op, "group": n, "warehouse": tmp / "wh"} for op in run.ops]
                self._played[n] = Played(case, run, options, tmp, None, None)
            reads, errors = oracle_batch(ops)
            for n, played in self._played.items():
                played.error = errors.get(n)
                played.theirs = reads.get(n, [None])[0] if played.error is None else None
        return self._played[name]

    def lakeops(self, name: str) -> Played:
        """Play lakeops' part of a case once; raise what it raised, every time asked."""
        played = self.played(name)
        if name not in self._lakeops:
            self._lakeops[name] = None
            try:
                if played.error is not None:
                    pytest.fail(f"pypaimon's part failed: {played.error}")
                case, run = played.case, played.run
                if case.refused is None or not case.refused_reads:
                    assert played.theirs is not None
                    want = _visible(case, run.model, False)
                    _check(played.theirs, want, run.model.keys, "pypaimon's own read")
                _lakeops_phase(case, run, played.options, played.tmp)
            except (Exception, pytest.fail.Exception) as exc:
                self._lakeops[name] = exc
        error = self._lakeops[name]
        if error is not None:
            raise error
        return played

    def readback(self, name: str) -> tuple[list[pa.Table], str | None]:
        """pypaimon's reads of a case's result (and its error, if any)."""
        if self._readback is None:
            ops: list[dict[str, Any]] = []
            done = []
            for n in _served_cases():
                if CASES[n].refused is not None:
                    continue
                try:
                    played = self.lakeops(n)
                except (Exception, pytest.fail.Exception):
                    continue
                done.append(n)
                warehouse = played.tmp / "wh"
                ops += [
                    {**op, "group": n, "warehouse": warehouse} for op in _readback_ops(played.run)
                ]
            reads, errors = oracle_batch(ops)
            self._readback = {n: (reads.get(n, []), errors.get(n)) for n in done}
        return self._readback[name]


def _served_cases() -> list[str]:
    """The cases that run today (not those waiting for a data file format)."""
    return [
        n for n, c in CASES.items() if c.needs_format is None or c.needs_format in _formats_served()
    ]


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> Matrix:
    return Matrix(tmp_path_factory.mktemp("matrix"))


@pytest.mark.parametrize("name", _params())
def test_lakeops_serves_what_pypaimon_writes(matrix: Matrix, name: str) -> None:
    """pypaimon's part (its own read equals the model), then lakeops reads, appends and
    compacts, each read equal to the model; or the refusal leaves every file unchanged."""
    matrix.lakeops(name)


@pytest.mark.parametrize("name", _params(refused=False))
def test_pypaimon_reads_what_lakeops_wrote(matrix: Matrix, name: str) -> None:
    """pypaimon reads lakeops' result (and the case's tags and branches) as the model."""
    try:
        played = matrix.lakeops(name)
    except (Exception, pytest.fail.Exception):
        pytest.fail(f"lakeops' part failed: see test_lakeops_serves_what_pypaimon_writes[{name}]")
    tables, error = matrix.readback(name)
    assert error is None, f"pypaimon could not read lakeops' result: {error}"
    run = played.run
    keys = run.model.keys
    _check(tables[0], run.model.rows(), keys, "pypaimon's read of lakeops' result")
    for (extra, model), got in zip(run.checks, tables[1:], strict=True):
        _check(got, _visible(played.case, model, False), keys, f"pypaimon's read of {extra}")


def _check_refused(case: Case, catalog: Catalog, tmp: Path, run: Run, keys: list[str]) -> None:
    """Every lakeops operation on the table is refused naming the option (reads may be
    served, exactly), and no file anywhere below the test's directory changes."""
    assert case.refused is not None
    before = _tree(tmp)

    def refused(action: Callable[[], object], what: str) -> None:
        with pytest.raises(LakeopsError) as err:
            action()
        assert case.refused in str(err.value), f"{what}: {err.value}"
        assert _tree(tmp) == before, f"{what} changed files"

    table = catalog.get_table(TABLE)
    if case.refused_reads:
        refused(table.read, "read")
    else:
        _check(table.read(), _visible(case, run.model, False), keys, "lakeops' read")
    rows = _rows(case, KEYS_L, 4)
    refused(lambda: table.write(_table(rows, table.arrow_schema)), "write")
    refused(lambda: table.compact(full=True), "compact")
    if case.refused_rollback:
        refused(lambda: table.rollback_to(1), "rollback")
    assert _tree(tmp) == before


def _tagged_and_branched(warehouse: Path) -> tuple[Model, Model, Model]:
    """pypaimon: commit 1, tag t1, branch b from t1 with a commit of its own, commits 2 and 3
    on main. Returns the models of main, of the tag and of the branch."""
    case = Case({"bucket": "2", **DEDUP})
    schema = _base_schema(case)
    model = Model(case, ["k"])
    c1 = _rows(case, KEYS_1, 1)
    model.add(c1, by_pypaimon=True)
    at_t1 = copy.deepcopy(model)
    branch = copy.deepcopy(model)
    on_branch = _rows(case, range(8, 20), 11, deletes=[9])
    branch.add(on_branch, by_pypaimon=True)
    c2, c3 = _rows(case, KEYS_2, 2, DELETES_2), _rows(case, KEYS_3, 3)
    model.add(c2, by_pypaimon=True)
    model.add(c3, by_pypaimon=True)
    ops: list[dict[str, Any]] = [
        {
            "op": "create",
            "table": TABLE,
            "schema": schema,
            "primary_keys": ["k"],
            "options": case.options,
        },
        {"op": "write", "table": TABLE, "data": _table(c1, schema)},
        {"op": "tag", "table": TABLE, "name": "t1"},
        {"op": "branch", "table": TABLE, "name": "b", "tag": "t1"},
        {"op": "write", "table": f"{TABLE}$branch_b", "data": _table(on_branch, schema)},
        {"op": "write", "table": TABLE, "data": _table(c2, schema)},
        {"op": "consumer", "table": TABLE, "name": "stream", "next_snapshot": 2},
        {"op": "write", "table": TABLE, "data": _table(c3, schema)},
    ]
    oracle_script(warehouse, ops)
    return model, at_t1, branch


def _check_tag_and_branch(warehouse: Path, models: tuple[Model, Model, Model]) -> None:
    """pypaimon reads main, tag t1 and branch b as their models (one lost file does not hide
    the others: each read is a group of its own)."""
    model, at_t1, branch = models
    reads = {
        "main": ({"table": TABLE}, model),
        "tag t1": ({"table": TABLE, "tag": "t1"}, at_t1),
        "branch b": ({"table": f"{TABLE}$branch_b"}, branch),
    }
    ops = [
        {"op": "read", "group": what, "warehouse": warehouse, **extra}
        for what, (extra, _) in reads.items()
    ]
    tables, errors = oracle_batch(ops)
    failures = [f"{what}: {error.strip().splitlines()[-1][:300]}" for what, error in errors.items()]
    for what, (_, expected) in reads.items():
        if what in errors:
            continue
        try:
            _check(tables[what][0], expected.rows(), ["k"], f"pypaimon's read of {what}")
        except pytest.fail.Exception as exc:
            failures.append(str(exc)[:300])
    assert not failures, failures


def test_expiring_snapshots_keeps_what_tags_and_branches_reference(warehouse: Path) -> None:
    """lakeops compacts and expires every snapshot but the latest; Paimon keeps each file a
    tag or a branch references, so the tag and the branch still read as they were."""
    models = _tagged_and_branched(warehouse)
    table = Catalog(str(warehouse)).get_table(TABLE)
    consumer = Path(table.root) / "consumer" / "consumer-stream"
    written = consumer.read_bytes()
    table.compact(full=True)
    table.expire_snapshots(retain_min=1, retain_max=1)
    # pypaimon's consumer reads snapshot 2 next: it and every later snapshot stay, readable
    assert table.store.snapshot_ids() == [2, 3, 4] and consumer.read_bytes() == written
    kept = oracle_read(warehouse, TABLE, snapshot_id=2)
    assert kept.num_rows == table.read(snapshot_id=2).num_rows > 0
    _check_tag_and_branch(warehouse, models)


def test_removing_orphan_files_keeps_tags_and_branches(warehouse: Path) -> None:
    """lakeops compacts and removes orphan files (nothing expired): tags, branches and every
    file they reference are not orphans."""
    models = _tagged_and_branched(warehouse)
    table = Catalog(str(warehouse)).get_table(TABLE)
    table.compact(full=True)
    table.remove_orphan_files(older_than=dt.timedelta(0), force=True)
    _check_tag_and_branch(warehouse, models)


def test_rolling_back_leaves_no_tag_on_deleted_files(warehouse: Path) -> None:
    """pypaimon writes three commits and tags snapshots 1 and 3; lakeops rolls back to
    snapshot 2. Tag t1 still reads as it was; tag t3 is gone (as Paimon's rollback removes
    it) or still reads as it was, never left pointing at deleted files. (lakeops' rollback is
    a commit that deletes nothing, so both tags keep reading.)"""
    case = Case({"bucket": "2", **DEDUP})
    schema = _base_schema(case)
    model = Model(case, ["k"])
    commits = [_rows(case, KEYS_1, 1), _rows(case, KEYS_2, 2, DELETES_2), _rows(case, KEYS_3, 3)]
    states = []
    for rows in commits:
        model.add(rows, by_pypaimon=True)
        states.append(copy.deepcopy(model))
    ops: list[dict[str, Any]] = [
        {
            "op": "create",
            "table": TABLE,
            "schema": schema,
            "primary_keys": ["k"],
            "options": case.options,
        }
    ]
    for i, rows in enumerate(commits, 1):
        ops.append({"op": "write", "table": TABLE, "data": _table(rows, schema)})
        if i in (1, 3):
            ops.append({"op": "tag", "table": TABLE, "name": f"t{i}"})
    oracle_script(warehouse, ops)
    table = Catalog(str(warehouse)).get_table(TABLE)
    table.rollback_to(2)
    reads = {"main": {}, "t1": {"tag": "t1"}, "t3": {"tag": "t3"}}
    tables, errors = oracle_batch(
        [
            {"op": "read", "table": TABLE, "group": what, "warehouse": warehouse, **extra}
            for what, extra in reads.items()
        ]
    )
    assert "main" not in errors and "t1" not in errors, errors
    _check(tables["main"][0], states[1].rows(), ["k"], "pypaimon's read after the rollback")
    _check(tables["t1"][0], states[0].rows(), ["k"], "pypaimon's read of tag t1")
    if "t3" in errors:
        assert "doesn't exist" in errors["t3"], errors["t3"].strip().splitlines()[-1]
    else:
        _check(tables["t3"][0], states[2].rows(), ["k"], "pypaimon's read of tag t3")
