"""Typed partitions (DATE, TIMESTAMP, DECIMAL, BOOLEAN, INT, STRING) shared with an oracle.

An oracle engine creates and writes a primary-key table; lakeops reads it, appends to it
(existing and new partitions), compacts it (a partition named the way users write it,
``{"pd": "2024-01-01"}``), and the oracle reads every row back. The partition directories on
disk are checked against a hand-written model of Paimon's names (see tests/format/test_paths.py),
for ``partition.legacy-name`` true (Paimon's default: ``pd=19723``) and false
(``pd=2024-01-01``).

Oracles are adapters in :data:`ORACLES` (create / write / read); a Java Paimon adapter with the
same three functions can be added there and every test runs against it too.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeops import Catalog
from tests.interop.oracle import oracle_create, oracle_read, oracle_write

pytestmark = pytest.mark.interop


@dataclass(frozen=True)
class Oracle:
    """One reference engine: create a PK table, write one commit, read the merged rows."""

    create: Callable[..., None]
    write: Callable[[str | os.PathLike[str], str, pa.Table], None]
    read: Callable[[str | os.PathLike[str], str], pa.Table]


ORACLES: dict[str, Oracle] = {
    "pypaimon": Oracle(oracle_create, oracle_write, oracle_read),
}

SCHEMA = pa.schema(
    [
        ("pd", pa.date32()),
        ("ts", pa.timestamp("ms")),
        ("amount", pa.decimal128(10, 2)),
        ("flag", pa.bool_()),
        ("region", pa.string()),
        ("id", pa.int32()),
        ("v", pa.string()),
    ]
)
PARTITION_KEYS = ["pd", "ts", "amount", "flag", "region"]

#: partitions as Python values, with their directory names under each legacy-name setting
#: (the model: Paimon's InternalRowPartitionComputer + PartitionPathUtils.escapePathName)
PARTITIONS: list[tuple[tuple[Any, ...], str, str]] = [
    (
        (dt.date(2024, 1, 1), dt.datetime(2024, 1, 1, 12, 30), Decimal("12.50"), True, "eu/west"),
        "pd=19723/ts=2024-01-01T12%3A30/amount=12.50/flag=true/region=eu%2Fwest",
        "pd=2024-01-01/ts=2024-01-01 12%3A30%3A00.000/amount=12.50/flag=true/region=eu%2Fwest",
    ),
    (
        (
            dt.date(2024, 1, 2),
            dt.datetime(2024, 1, 2, 0, 0, 5, 123000),
            Decimal("-0.05"),
            False,
            "us",
        ),
        "pd=19724/ts=2024-01-02T00%3A00%3A05.123/amount=-0.05/flag=false/region=us",
        "pd=2024-01-02/ts=2024-01-02 00%3A00%3A05.123/amount=-0.05/flag=false/region=us",
    ),
]
#: a partition only lakeops writes (appended later)
NEW_PARTITION = (
    (dt.date(1969, 12, 31), dt.datetime(1969, 12, 31, 23, 59, 59), Decimal("0.00"), True, "a:b"),
    "pd=-1/ts=1969-12-31T23%3A59%3A59/amount=0.00/flag=true/region=a%3Ab",
    "pd=1969-12-31/ts=1969-12-31 23%3A59%3A59.000/amount=0.00/flag=true/region=a%3Ab",
)


def _rows(partition: tuple[Any, ...], ids: range, tag: str) -> pa.Table:
    columns: dict[str, list[Any]] = {
        k: [v] * len(ids) for k, v in zip(PARTITION_KEYS, partition, strict=True)
    }
    columns["id"] = list(ids)
    columns["v"] = [f"{tag}-{i}" for i in ids]
    return pa.table(columns, schema=SCHEMA)


def _sorted(table: pa.Table) -> list[dict[str, Any]]:
    keys = [*PARTITION_KEYS, "id"]
    return table.select(SCHEMA.names).sort_by([(k, "ascending") for k in keys]).to_pylist()


def _partition_dirs(root: Path) -> set[str]:
    """Every ``…/bucket-N`` directory's partition part, relative to the table root."""
    return {str(p.parent.relative_to(root)) for p in root.rglob("bucket-*") if p.is_dir()}


def _options(legacy: bool | None) -> dict[str, str]:
    options = {"bucket": "2"}
    if legacy is not None:
        options["partition.legacy-name"] = str(legacy).lower()
    return options


def _expected(legacy: bool | None, entries: list[tuple[tuple[Any, ...], str, str]]) -> set[str]:
    return {cast if legacy is False else legacy_name for _, legacy_name, cast in entries}


@pytest.mark.parametrize("oracle_name", sorted(ORACLES))
@pytest.mark.parametrize("legacy", [None, True, False], ids=["default", "legacy", "cast"])
def test_oracle_table_read_appended_compacted_and_read_back(
    warehouse: Path, oracle_name: str, legacy: bool | None
) -> None:
    oracle = ORACLES[oracle_name]
    oracle.create(
        warehouse,
        "db.parts",
        SCHEMA,
        primary_keys=[*PARTITION_KEYS, "id"],
        partition_keys=PARTITION_KEYS,
        options=_options(legacy),
    )
    oracle.write(
        warehouse,
        "db.parts",
        pa.concat_tables([_rows(p, range(20), "o1") for p, _, _ in PARTITIONS]),
    )
    root = warehouse / "db.db" / "parts"
    assert _partition_dirs(root) == _expected(legacy, PARTITIONS)

    table = Catalog(str(warehouse)).get_table("db.parts")
    assert _sorted(table.read()) == _sorted(oracle.read(warehouse, "db.parts"))

    # lakeops appends: updates in both existing partitions and a new one
    table.write(
        pa.concat_tables(
            [_rows(p, range(10, 30), "l1") for p, _, _ in PARTITIONS]
            + [_rows(NEW_PARTITION[0], range(5), "l1")]
        )
    )
    expected = _expected(legacy, [*PARTITIONS, NEW_PARTITION])
    assert _partition_dirs(root) == expected
    ours = table.read()
    assert ours.num_rows == 2 * 30 + 5
    assert _sorted(oracle.read(warehouse, "db.parts")) == _sorted(ours)

    # compaction of one partition named as users write it, then of everything
    first = PARTITIONS[0][0]
    spec: Mapping[str, Any] = {
        "pd": "2024-01-01",
        "ts": "2024-01-01 12:30:00",
        "amount": "12.5",
        "flag": "true",
        "region": "eu/west",
    }
    before = table.latest_snapshot()
    snapshot = table.compact(full=True, partitions=[spec])
    assert snapshot is not None and before is not None and snapshot.id == before.id + 1
    compacted = {e.partition for e in table.store.delta_entries(snapshot)}
    assert len(compacted) == 1, "the spec names exactly one partition"
    assert _sorted(table.read().filter(pa.compute.equal(table.read()["pd"], first[0]))) == [
        r for r in _sorted(ours) if r["pd"] == first[0]
    ]
    table.compact(full=True)
    assert _partition_dirs(root) == expected
    assert _sorted(oracle.read(warehouse, "db.parts")) == _sorted(ours)
    assert _sorted(Catalog(str(warehouse)).get_table("db.parts").read()) == _sorted(ours)

    # the oracle keeps writing after lakeops: still one directory per partition
    oracle.write(warehouse, "db.parts", _rows(NEW_PARTITION[0], range(3, 8), "o2"))
    assert _partition_dirs(root) == expected
    final = oracle.read(warehouse, "db.parts")
    assert final.num_rows == 2 * 30 + 8
    assert _sorted(Catalog(str(warehouse)).get_table("db.parts").read()) == _sorted(final)


@pytest.mark.parametrize("oracle_name", sorted(ORACLES))
@pytest.mark.parametrize("legacy", [None, False], ids=["default", "cast"])
def test_lakeops_table_with_null_and_blank_partitions_reads_in_oracle(
    warehouse: Path, oracle_name: str, legacy: bool | None
) -> None:
    """NULL and '' partition values share Paimon's default-name directory; both read back."""
    schema = pa.schema(
        [("pd", pa.date32()), ("s", pa.string()), ("id", pa.int32()), ("v", pa.int64())]
    )
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    table = catalog.create_table(
        "db.nulls",
        schema=schema,
        primary_keys=["id"],  # partition columns outside the key may be NULL
        partition_keys=["pd", "s"],
        options={**_options(legacy), "bucket": "-1"},
    )
    data = pa.table(
        {
            "pd": [dt.date(2024, 3, 1), None, dt.date(2024, 3, 1), dt.date(2024, 3, 1)],
            "s": ["x y", "k", None, ""],
            "id": [1, 2, 3, 4],
            "v": [10, 20, 30, 40],
        },
        schema=schema,
    )
    table.write(data)
    day = "19783" if legacy is None else "2024-03-01"
    d = "__DEFAULT_PARTITION__"
    assert _partition_dirs(warehouse / "db.db" / "nulls") == {
        f"pd={day}/s=x y",
        f"pd={d}/s=k",
        f"pd={day}/s={d}",
    }
    oracle = ORACLES[oracle_name]
    key = ["id"]
    theirs = oracle.read(warehouse, "db.nulls").sort_by([(k, "ascending") for k in key])
    assert theirs.to_pylist() == data.to_pylist()
    assert table.read().sort_by([("id", "ascending")]).to_pylist() == data.to_pylist()
