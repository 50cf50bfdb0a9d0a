"""The option registry: unknown keys and refused options at create, on tables written elsewhere.

Tables with options lakeops refuses are made the way Paimon makes them — pypaimon creates and
writes them, or a ``schema-N`` file is added as Paimon's ``ALTER TABLE ... SET`` does — never
through lakeops' own ``create_table``, which refuses them. Every refused call must leave the
table directory byte-for-byte unchanged (file names and contents).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeops import Catalog, Table
from lakeops.compact.planner import plan_buckets
from lakeops.errors import ConfigurationError, UnsupportedFeatureError
from lakeops.format import binary_row
from lakeops.format.index_manifest import IndexFileMeta, IndexManifestEntry, write_index_manifest
from lakeops.format.schema_change import SetOption
from lakeops.options.registry import (
    REGISTRY,
    check_create_options,
    check_writable,
    file_format,
    rule_for,
    suggest,
)
from tests.interop.oracle import oracle_create, oracle_read, oracle_write

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), pa.field("v", pa.string())])
ROWS = pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA)


def tree_digest(root: Path) -> dict[str, str]:
    """Every file and directory under ``root``: relative name -> sha256 of its bytes."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        out[rel] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "<dir>"
    return out


def add_schema_options(table_dir: Path, options: dict[str, str]) -> None:
    """Publish ``schema-(N+1)`` with ``options`` set, as Paimon's ALTER TABLE ... SET does."""
    schema_dir = table_dir / "schema"
    latest = max(int(p.name.split("-")[1]) for p in schema_dir.glob("schema-*"))
    doc = json.loads((schema_dir / f"schema-{latest}").read_text())
    doc["id"] = latest + 1
    doc["options"] = {**doc["options"], **options}
    (schema_dir / f"schema-{latest + 1}").write_text(json.dumps(doc, indent=2))


@pytest.fixture
def written(catalog: Catalog, warehouse: Path) -> Path:
    """A lakeops table with two commits (so expire and rollback have something to do)."""
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"}
    )
    table.write(ROWS)
    table.write(pa.table({"id": [2], "v": ["B"]}, schema=SCHEMA))
    table.compact(full=True)  # nothing at level 0, which deletion-vector reads skip
    return warehouse / "db.db" / "t"


EXPECTED = pa.table({"id": [1, 2, 3], "v": ["a", "B", "c"]}, schema=SCHEMA)

MUTATIONS: dict[str, Callable[[Table], Any]] = {
    "new_write": lambda t: t.new_write(),
    "write": lambda t: t.write(pa.table({"id": [9], "v": ["z"]}, schema=SCHEMA)),
    "commit": lambda t: t.commit([]),
    "compact": lambda t: t.compact(full=True),
    "flush_level0": lambda t: t.flush_level0(),
    "expire_snapshots": lambda t: t.expire_snapshots(retain_min=1, retain_max=1),
    "remove_orphan_files": lambda t: t.remove_orphan_files(),
    "rollback_to": lambda t: t.rollback_to(1),
}


# ------------------------------------------------------------------------------- registry
def test_every_entry_is_classified_with_a_reason() -> None:
    assert {r.status for r in REGISTRY} == {"honoured", "ignorable", "refused"}
    for r in REGISTRY:
        assert r.note, r.key
        if r.status == "refused" or r.refuse_value is not None:
            assert r.fix, f"{r.key}: a refusal must say what to do"
    keys = [r.key for r in REGISTRY]
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize(
    ("key", "status"),
    [
        ("bucket", "honoured"),
        ("merge-engine", "honoured"),
        ("sequence.field", "honoured"),
        ("rowkind.field", "honoured"),
        ("fields.price.aggregate-function", "honoured"),
        ("fields.a,b.sequence-group", "honoured"),
        ("fields.price.default-value", "refused"),
        ("fields.m.ts-field", "honoured"),
        ("sink.parallelism", "ignorable"),
        ("sink.some-future-flink-setting", "ignorable"),
        ("scan.snapshot-id", "ignorable"),
        ("manifest.target-file-size", "ignorable"),
        ("metadata.stats-mode", "ignorable"),
        ("lookup.cache-rows", "ignorable"),
        ("file-index.bloom-filter.columns", "honoured"),
        ("file-index.bloom-filter.id.fpp", "honoured"),
        ("file-index.bsi.columns", "honoured"),
        ("file-index.range-bitmap.columns", "honoured"),
        ("file-index.range-bitmap.v.chunk-size", "honoured"),
        ("file-index.read.enabled", "honoured"),
        ("parquet.block.size", "ignorable"),
        ("data-file.path-directory", "honoured"),
        ("index-file-in-data-file-dir", "honoured"),
        ("data-file.prefix", "honoured"),
        ("scan.fallback-branch", "refused"),
    ],
)
def test_rule_for(key: str, status: str) -> None:
    rule = rule_for(key)
    assert rule is not None and rule.status == status


@pytest.mark.parametrize(
    ("options", "key"),
    [
        ({"file.format": "lance"}, "file.format"),
        ({"file.format": "CSV"}, "file.format"),
        (
            {"deletion-vectors.enabled": "true", "changelog-producer": "full-compaction"},
            "deletion-vectors.enabled",
        ),
        ({"chain-table.enabled": "true"}, "chain-table.enabled"),
        ({"merge-engine": "first-row", "changelog-producer": "input"}, "changelog-producer"),
        (
            {"merge-engine": "first-row", "changelog-producer": "full-compaction"},
            "changelog-producer",
        ),
        ({"changelog-file.format": "lance"}, "changelog-file.format"),
        ({"file.format.per.level": "0:lance"}, "file.format.per.level"),
        ({"file.format.per.level": "0:orc,3:csv"}, "file.format.per.level"),
        ({"bucket-function.type": "mod"}, "bucket-function.type"),
        ({"file.format": "avro", "avro.codec": "gzip"}, "avro.codec"),
        ({"tag.automatic-creation": "event-time"}, "tag.automatic-creation"),
        (
            {
                "tag.automatic-creation": "process-time",
                "tag.period-formatter": "without_dashes_and_spaces",
            },
            "tag.period-formatter",
        ),
    ],
)
def test_values_lakeops_cannot_honour(options: dict[str, str], key: str) -> None:
    with pytest.raises(UnsupportedFeatureError, match=key.replace(".", r"\.")):
        check_create_options(options)


def test_values_lakeops_honours() -> None:
    check_create_options(
        {
            "file.format": "parquet",
            "bucket": "4",
            "deletion-vectors.enabled": "false",
            "file.format.per.level": "0:ORC,5:parquet",
            "changelog-file.format": "orc",
            "file.compression.per.level": "0:lz4",
            "data-file.external-paths": "s3://elsewhere/x",  # inert: strategy 'none'
            "tag.automatic-creation": "process-time",
            "tag.period-formatter": "without_dashes",
            "sink.parallelism": "8",
            "merge-engine": "aggregation",
            "fields.v.aggregate-function": "max",
        }
    )


def test_external_path_strategies_lakeops_cannot_write_are_refused() -> None:
    for strategy in ("none", "round-robin", "specific-fs"):
        check_create_options(
            {
                "data-file.external-paths": "s3://elsewhere/x",
                "data-file.external-paths.strategy": strategy,
            }
        )
    for strategy in ("entropy-inject", "weight-robin"):
        with pytest.raises(UnsupportedFeatureError, match=r"data-file\.external-paths"):
            check_create_options(
                {
                    "data-file.external-paths": "s3://elsewhere/x",
                    "data-file.external-paths.strategy": strategy,
                }
            )


def test_suggestions() -> None:
    assert suggest("merge-engin")[0] == "merge-engine"
    assert suggest("bukcet")[0] == "bucket"
    assert suggest("fields.price.aggregate-functon")[0] == "fields.price.aggregate-function"
    assert suggest("snapshot.num-retained-min")[0] == "snapshot.num-retained.min"


def test_avro_codec_counts_only_where_avro_files_are_written() -> None:
    check_create_options({"avro.codec": "gzip"})  # Paimon never reads it for Parquet files
    check_create_options({"file.format.per.level": "0:avro", "avro.codec": "xz"})
    with pytest.raises(UnsupportedFeatureError, match=r"avro\.codec"):
        check_create_options({"changelog-file.format": "avro", "avro.codec": "ZSTD"})


def test_file_format_is_the_last_extension() -> None:
    assert file_format("data-1a2b-0.parquet") == "parquet"
    assert file_format("data-1a2b-0.orc") == "orc"
    assert file_format("data-1a2b-0.zstd.avro") == "avro"


def test_unknown_keys_on_existing_tables_refuse_writes() -> None:
    with pytest.raises(UnsupportedFeatureError, match="merge-engine"):
        check_writable({"merge-engin": "first-row"}, "write")


# ------------------------------------------------------------------------- create_table
@pytest.mark.parametrize(
    ("key", "closest"),
    [
        ("merge-engin", "merge-engine"),
        ("snapshot.time-retaind", "snapshot.time-retained"),
        ("num-sorted-run.compaction-triger", "num-sorted-run.compaction-trigger"),
        ("fields.v.aggregate-functon", "fields.v.aggregate-function"),
    ],
)
def test_create_table_refuses_a_typo_with_did_you_mean(
    catalog: Catalog, warehouse: Path, key: str, closest: str
) -> None:
    before = tree_digest(warehouse)
    with pytest.raises(ConfigurationError) as err:
        catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={key: "first-row"})
    assert not isinstance(err.value, UnsupportedFeatureError)
    assert repr(key) in str(err.value) and repr(closest) in str(err.value)
    assert "did you mean" in str(err.value)
    assert tree_digest(warehouse) == before
    assert not catalog.table_exists("db.t")


REFUSED_AT_CREATE = [
    {"file.format.per.level": "0:lance"},
    {"file.format": "csv"},
    {"chain-table.enabled": "true"},
    {
        "data-file.external-paths": "file:/tmp/x",
        "data-file.external-paths.strategy": "weight-robin",
    },
    {"deletion-vectors.enabled": "true", "changelog-producer": "full-compaction"},
    {"merge-engine": "first-row", "changelog-producer": "full-compaction"},
    {"fields.v.default-value": "x"},
    {"scan.fallback-branch": "other"},
    {"primary-key": "id"},
    {"tag.automatic-creation": "event-time"},
    {"metadata.iceberg.storage": "hive-catalog"},
]


@pytest.mark.parametrize("options", REFUSED_AT_CREATE, ids=lambda o: ",".join(o))
def test_create_table_refuses_what_lakeops_cannot_honour(
    catalog: Catalog, warehouse: Path, options: dict[str, str]
) -> None:
    before = tree_digest(warehouse)
    with pytest.raises(UnsupportedFeatureError) as err:
        catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options=options)
    assert any(repr(k) in str(err.value) for k in options)
    assert tree_digest(warehouse) == before


@pytest.mark.parametrize(
    ("created", "altered"),
    [
        ({"merge-engine": "first-row"}, {"changelog-producer": "input"}),
        ({"changelog-producer": "full-compaction"}, {"merge-engine": "first-row"}),
        (
            {"merge-engine": "first-row", "deletion-vectors.modifiable": "true"},
            {"deletion-vectors.enabled": "true"},
        ),
        ({"deletion-vectors.enabled": "true"}, {"changelog-producer": "full-compaction"}),
    ],
)
def test_alter_refuses_a_value_the_table_s_other_options_rule_out(
    catalog: Catalog, warehouse: Path, created: dict[str, str], altered: dict[str, str]
) -> None:
    """Paimon's ``SchemaValidation`` rules that pair two options (first-row takes only the none
    and lookup changelog producers, deletion vectors neither first-row nor full-compaction)
    hold whichever of the two an ALTER sets; nothing is written."""
    table = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options=created)
    before = tree_digest(warehouse)
    with pytest.raises(UnsupportedFeatureError, match=r"first-row|full-compaction"):
        table.alter([SetOption(k, v) for k, v in altered.items()])
    assert tree_digest(warehouse) == before


def test_create_table_keeps_ignorable_options(catalog: Catalog) -> None:
    opts = {
        "bucket": "2",
        "sink.parallelism": "4",
        "scan.mode": "latest",
        "file.compression": "lz4",
    }
    table = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options=opts)
    assert table.schema.options == opts


# ------------------------------------------------------- existing tables written elsewhere
def _ids(value: object) -> str:
    return ",".join(value) if isinstance(value, dict) else str(value)


REFUSED_ON_EXISTING: list[tuple[dict[str, str], bool]] = [
    # (options set by another engine, whether reads are refused too)
    ({"file.format": "lance"}, False),
    ({"chain-table.enabled": "true"}, True),
    (
        {
            "data-file.external-paths": "file:/x",
            "data-file.external-paths.strategy": "entropy-inject",
        },
        False,
    ),
    ({"deletion-vectors.enabled": "true", "changelog-producer": "full-compaction"}, False),
    ({"fields.v.default-value": "x"}, True),
    ({"scan.fallback-branch": "b"}, True),
    ({"fields.v.count-limit": "3"}, False),
    ({"commit.callbacks": "com.example.Callback"}, False),
    ({"some.option-from-a-newer-paimon": "1"}, False),  # unknown key: writes refused
    ({"manifest.format": "orc", "manifest.compression": "lzo"}, False),  # pyarrow lacks lzo
]


@pytest.mark.parametrize(("options", "reads_refused"), REFUSED_ON_EXISTING, ids=_ids)
@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_existing_table_refuses_mutations_and_stays_unchanged(
    catalog: Catalog, written: Path, options: dict[str, str], reads_refused: bool, mutation: str
) -> None:
    add_schema_options(written, options)
    table = catalog.get_table("db.t")
    before = tree_digest(written)
    with pytest.raises(UnsupportedFeatureError) as err:
        MUTATIONS[mutation](table)
    assert any(repr(k) in str(err.value) for k in options), str(err.value)
    assert tree_digest(written) == before


@pytest.mark.parametrize(("options", "reads_refused"), REFUSED_ON_EXISTING, ids=_ids)
def test_existing_table_reads_only_where_right(
    catalog: Catalog, written: Path, options: dict[str, str], reads_refused: bool
) -> None:
    add_schema_options(written, options)
    table = catalog.get_table("db.t")
    before = tree_digest(written)
    if reads_refused:
        with pytest.raises(UnsupportedFeatureError) as err:
            table.read()
        assert any(repr(k) in str(err.value) for k in options)
    else:
        assert table.read().sort_by("id").equals(EXPECTED)
    assert tree_digest(written) == before


def test_ignorable_options_set_elsewhere_do_not_block_writes(
    catalog: Catalog, written: Path
) -> None:
    add_schema_options(
        written, {"sink.parallelism": "4", "scan.mode": "latest", "metadata.stats-mode": "none"}
    )
    table = catalog.get_table("db.t")
    table.write(pa.table({"id": [4], "v": ["d"]}, schema=SCHEMA))
    table.compact(full=True)
    expected = pa.concat_tables([EXPECTED, pa.table({"id": [4], "v": ["d"]}, schema=SCHEMA)])
    assert table.read().sort_by("id").equals(expected)


# ----------------------------------------------------------------- ORC data files (pypaimon)
@pytest.fixture
def orc_table(warehouse: Path) -> Path:
    """A table pypaimon created with file.format = orc and wrote ORC data files into."""
    oracle_create(warehouse, "db.o", SCHEMA, ["id"], options={"bucket": "1", "file.format": "orc"})
    oracle_write(warehouse, "db.o", ROWS)
    table_dir = warehouse / "db.db" / "o"
    assert list(table_dir.glob("bucket-0/*.orc"))
    return table_dir


@pytest.mark.interop
def test_orc_table_reads_takes_writes_and_compacts(warehouse: Path, orc_table: Path) -> None:
    table = Catalog(str(warehouse)).get_table("db.o")
    assert table.read().sort_by("id").equals(ROWS)
    table.write(pa.table({"id": [2, 4], "v": ["B", "d"]}, schema=SCHEMA))
    new = {p.name for p in orc_table.glob("bucket-0/data-*")}
    assert all(n.endswith(".orc") for n in new)
    table.compact(full=True)
    want = pa.table({"id": [1, 2, 3, 4], "v": ["a", "B", "c", "d"]}, schema=SCHEMA)
    assert oracle_read(warehouse, "db.o").sort_by("id").equals(want)
    assert table.read().sort_by("id").equals(want)


@pytest.mark.interop
@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_a_format_lakeops_cannot_write_refuses_mutations(
    warehouse: Path, orc_table: Path, mutation: str
) -> None:
    add_schema_options(orc_table, {"file.format": "lance"})
    table = Catalog(str(warehouse)).get_table("db.o")
    before = tree_digest(orc_table)
    with pytest.raises(UnsupportedFeatureError, match=r"file\.format"):
        MUTATIONS[mutation](table)
    assert tree_digest(orc_table) == before


@pytest.mark.interop
def test_avro_files_lakeops_writes_into_an_orc_table_are_read_by_pypaimon(
    warehouse: Path, orc_table: Path
) -> None:
    add_schema_options(orc_table, {"file.format": "avro"})
    table = Catalog(str(warehouse)).get_table("db.o")
    table.write(pa.table({"id": [2, 4], "v": ["B", None]}, schema=SCHEMA))
    assert {p.suffix for p in orc_table.glob("bucket-0/data-*")} == {".orc", ".avro"}
    want = pa.table({"id": [1, 2, 3, 4], "v": ["a", "B", "c", None]}, schema=SCHEMA)
    assert oracle_read(warehouse, "db.o").sort_by("id").equals(want)
    table.compact(full=True)
    assert {p.suffix for p in orc_table.glob("bucket-0/data-*")} >= {".avro"}
    assert oracle_read(warehouse, "db.o").sort_by("id").equals(want)
    assert table.read().sort_by("id").equals(want)


@pytest.mark.interop
def test_orc_files_left_after_switching_to_parquet_take_parquet_writes(
    warehouse: Path, orc_table: Path
) -> None:
    """file.format set back to parquet while the live files are still ORC: new files are
    Parquet, old ones stay readable by their extension."""
    add_schema_options(orc_table, {"file.format": "parquet"})
    table = Catalog(str(warehouse)).get_table("db.o")
    table.write(pa.table({"id": [3, 5], "v": ["C", "e"]}, schema=SCHEMA))
    suffixes = {p.suffix for p in orc_table.glob("bucket-0/data-*")}
    assert suffixes == {".orc", ".parquet"}
    want = pa.table({"id": [1, 2, 3, 5], "v": ["a", "b", "C", "e"]}, schema=SCHEMA)
    assert oracle_read(warehouse, "db.o").sort_by("id").equals(want)
    table.compact(full=True)
    assert oracle_read(warehouse, "db.o").sort_by("id").equals(want)


# ------------------------------------------------------------------------ deletion vectors
def add_deletion_vector_snapshot(table_dir: Path) -> None:
    """Publish a snapshot whose index manifest holds a deletion-vector file of bucket 0, as a
    Paimon compaction of a deletion-vector table does."""
    snapshot_dir = table_dir / "snapshot"
    latest = max(int(p.name.split("-")[1]) for p in snapshot_dir.glob("snapshot-*"))
    doc = json.loads((snapshot_dir / f"snapshot-{latest}").read_text())
    dv_name = "index-0b1f2c3d-0"
    (table_dir / "index").mkdir(exist_ok=True)
    (table_dir / "index" / dv_name).write_bytes(b"\x01" + b"\x00" * 15)
    partition = binary_row.serialize([], [])
    entry = IndexManifestEntry(0, partition, 0, IndexFileMeta("DELETION_VECTORS", dv_name, 16, 1))
    manifest = "index-manifest-0b1f2c3d-0"
    (table_dir / "manifest" / manifest).write_bytes(write_index_manifest([entry]))
    doc["id"] = latest + 1
    doc["indexManifest"] = manifest
    doc["commitKind"] = "COMPACT"
    (snapshot_dir / f"snapshot-{latest + 1}").write_text(json.dumps(doc))
    (snapshot_dir / "LATEST").write_text(str(latest + 1))


def test_snapshot_with_deletion_vectors_is_read_writes_refused(
    catalog: Catalog, written: Path
) -> None:
    """Reads apply the snapshot's vectors (this index names no data file: nothing is deleted;
    tests/read/test_scan.py deletes rows); writes of a combination Paimon forbids
    (full-compaction changelog) stay refused, the table byte-identical."""
    add_schema_options(
        written, {"deletion-vectors.enabled": "true", "changelog-producer": "full-compaction"}
    )
    table = catalog.get_table("db.t")
    assert table.read().sort_by("id").equals(EXPECTED)  # no deletion vectors yet: exact
    add_deletion_vector_snapshot(written)
    table = catalog.get_table("db.t")
    before = tree_digest(written)
    assert table.read().sort_by("id").equals(EXPECTED)
    assert table.lookup(pa.table({"id": [1]})).column("v").to_pylist() == ["a"]
    with pytest.raises(UnsupportedFeatureError, match=r"deletion-vectors\.enabled"):
        table.write(ROWS)
    assert tree_digest(written) == before


def test_distributed_compaction_plan_is_refused(catalog: Catalog, written: Path) -> None:
    """The Spark compaction driver plans with ``plan_buckets``; it refuses like Table.compact."""
    add_schema_options(written, {"fields.v.default-value": "x"})
    table = catalog.get_table("db.t")
    with pytest.raises(UnsupportedFeatureError, match=r"default-value"):
        plan_buckets(table.store, table.schema)


def test_changes_are_refused_where_reads_would_be_wrong(catalog: Catalog, written: Path) -> None:
    add_schema_options(written, {"fields.v.default-value": "x"})
    table = catalog.get_table("db.t")
    with pytest.raises(UnsupportedFeatureError, match="default-value"):
        table.read_changes(0)
