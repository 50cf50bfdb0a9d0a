"""Partitions dropped by name (lakeops.maintenance.drop_partitions), against a plain model of
the rows: full and partial specs, typed values, one OVERWRITE snapshot that deletes no file, the
snapshot before still readable; a spec matching nothing refused (nothing committed) unless
if_exists; a dry run commits nothing; bad specs refused before anything is read; a file another
writer added to a dropped partition after the plan goes too (Paimon filters at commit)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.errors import ConfigurationError, PartitionNotFoundError
from lakeops.format.snapshot import CommitKind

SCHEMA = pa.schema(
    [("d", pa.date32()), ("region", pa.string()), ("id", pa.int64()), ("v", pa.string())]
)
DAYS = [dt.date(2024, 1, 1), dt.date(2024, 1, 2), dt.date(2024, 1, 3)]
REGIONS = ["eu", "us", None]


def _rows() -> list[dict[str, Any]]:
    return [
        {"d": d, "region": r, "id": i * 10 + j, "v": f"{d}-{r}"}
        for i, d in enumerate(DAYS)
        for j, r in enumerate(REGIONS)
    ]


def _table(catalog: Catalog) -> Any:
    """An append table (a NULL region partition: no primary key may hold it)."""
    table = catalog.create_table("db.t", schema=SCHEMA, partition_keys=["d", "region"])
    table.write(pa.Table.from_pylist(_rows(), schema=SCHEMA))
    return table


def _ids(table: Any, **kw: Any) -> list[int]:
    return sorted(table.read(**kw)["id"].to_pylist())


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


@pytest.mark.parametrize(
    ("specs", "gone"),
    [
        # full specs, values as users write them (a DATE as text, a date object, NULL)
        ([{"d": "2024-01-01", "region": "eu"}], {(0, "eu")}),
        ([{"d": dt.date(2024, 1, 2), "region": None}], {(1, None)}),
        # a partial spec: every region of that day
        ([{"d": "2024-01-03"}], {(2, r) for r in REGIONS}),
        ([{"region": "us"}, {"d": "2024-01-01", "region": "eu"}], {(0, "us"), (1, "us"),
                                                                    (2, "us"), (0, "eu")}),
    ],
)  # fmt: skip
def test_dropped_partitions_match_the_model(
    catalog: Catalog, warehouse: Path, specs: list[dict[str, Any]], gone: set[tuple[int, Any]]
) -> None:
    table = _table(catalog)
    files = _files(warehouse)
    before = table.latest_snapshot().id
    result = table.drop_partitions(specs)
    want = [r["id"] for r in _rows() if (DAYS.index(r["d"]), r["region"]) not in gone]
    assert _ids(table) == sorted(want)
    assert {(DAYS.index(p["d"]), p["region"]) for p in result.partitions} == gone
    snapshot = table.latest_snapshot()
    assert result.snapshot_id == snapshot.id == before + 1
    assert snapshot.commit_kind == CommitKind.OVERWRITE
    assert set(files) <= set(_files(warehouse))  # no file deleted
    assert _ids(table, snapshot_id=before) == sorted(r["id"] for r in _rows())


def test_a_spec_matching_nothing_is_refused_unless_if_exists(
    catalog: Catalog, warehouse: Path
) -> None:
    table = _table(catalog)
    files = _files(warehouse)
    specs = [{"d": "2024-01-01", "region": "eu"}, {"d": "2030-01-01"}]
    with pytest.raises(PartitionNotFoundError, match="2030-01-01"):
        table.drop_partitions(specs)
    assert _files(warehouse) == files
    dry = table.drop_partitions(specs, if_exists=True, dry_run=True)
    assert dry.partitions == [{"d": DAYS[0], "region": "eu"}] and dry.snapshot_id is None
    assert _files(warehouse) == files
    done = table.drop_partitions(specs, if_exists=True)
    assert done.snapshot_id is not None and 0 not in _ids(table)
    assert table.drop_partitions([{"d": "2030-01-01"}], if_exists=True).snapshot_id is None


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        ([{"nope": "x"}], "not partition columns"),
        ([{"d": "January"}], "'d'"),
        ([{}], "at least one partition column"),
        ([], "a list of partition specs"),
        ({"d": "2024-01-01"}, "a list of partition specs"),
    ],
)
def test_bad_specs_are_refused_before_anything(
    catalog: Catalog, warehouse: Path, specs: Any, message: str
) -> None:
    table = _table(catalog)
    files = _files(warehouse)
    with pytest.raises(ConfigurationError, match=message):
        table.drop_partitions(specs)
    assert _files(warehouse) == files


def test_an_unpartitioned_table_is_refused(catalog: Catalog) -> None:
    table = catalog.create_table("db.u", schema=SCHEMA, primary_keys=["id"])
    with pytest.raises(ConfigurationError, match="no partition keys"):
        table.drop_partitions([{"d": "2024-01-01"}])


def test_a_file_written_into_a_dropped_partition_meanwhile_goes_too(catalog: Catalog) -> None:
    """The drop plans on snapshot 1; another writer adds a row to 2024-01-01/eu before the
    drop commits: the OVERWRITE filters at commit, so the new row goes as well."""
    table = _table(catalog)
    real = table._committer

    def committer_after_a_write() -> Any:
        extra = {"d": DAYS[0], "region": "eu", "id": 999, "v": "late"}
        catalog.get_table("db.t").write(pa.Table.from_pylist([extra], schema=SCHEMA))
        return real()

    table._committer = committer_after_a_write  # type: ignore[method-assign]
    table.drop_partitions([{"d": "2024-01-01", "region": "eu"}])
    assert 999 not in _ids(catalog.get_table("db.t"))
    assert 0 not in _ids(catalog.get_table("db.t"))
