"""The data source's option names and their validation (no Spark needed: the checks run before
any table is touched)."""

from __future__ import annotations

import pytest

from lakeops.errors import ConfigurationError
from lakeops.spark.options import (
    READ_OPTIONS,
    ScanSpec,
    parse_read_options,
    source_options,
    split_write_options,
)


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"path": "/wh/db.db/t"}, ScanSpec()),
        ({"scan.snapshot-id": "3"}, ScanSpec(snapshot_id=3)),
        ({"versionasof": "2"}, ScanSpec(version="2")),  # Spark lower-cases the keys
        ({"versionAsOf": "2", "scan.snapshot-id": "2"}, ScanSpec(snapshot_id=2)),
        ({"versionAsOf": "my-tag"}, ScanSpec(version="my-tag")),
        ({"scan.tag-name": "t1"}, ScanSpec(tag="t1")),
        ({"scan.timestamp-millis": "1700000000123"}, ScanSpec(as_of_millis=1700000000123)),
        ({"timestampasof": "1700000000"}, ScanSpec(as_of_millis=1700000000000)),
        (
            {"timestampAsOf": "2024-01-01 01:00:00.123+01:00"},
            ScanSpec(as_of_millis=1704067200123),
        ),
        ({"incremental-between": "1, 4"}, ScanSpec(incremental=(1, 4), mode="auto")),
        ({"incremental-between": "t1,t3"}, ScanSpec(incremental=("t1", "t3"))),
        (
            {"incremental-between": "2,3", "incremental-between-scan-mode": "DIFF"},
            ScanSpec(incremental=(2, 3), mode="diff"),
        ),
    ],
)
def test_read_options(options: dict[str, str], expected: ScanSpec) -> None:
    assert parse_read_options(options) == expected


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"snapshot_id": "1"}, ["'snapshot_id'", *READ_OPTIONS]),
        ({"scan.snapshot-id": "0"}, ["positive integer"]),
        ({"scan.snapshot-id": "x"}, ["'x'"]),
        ({"scan.snapshot-id": "1", "versionasof": "2"}, ["give one"]),
        ({"scan.tag-name": "t1", "scan.timestamp-millis": "5"}, ["give one"]),
        ({"scan.timestamp-millis": "2024-01-01"}, ["epoch milliseconds"]),
        ({"timestampasof": "2024-01-01 00:00:00"}, ["zone offset"]),
        ({"timestampasof": "yesterday"}, ["'yesterday'"]),
        ({"scan.tag-name": " "}, ["empty"]),
        ({"incremental-between": "3"}, ["'start,end'"]),
        ({"incremental-between": "3,1"}, ["earlier"]),
        (
            {"incremental-between": "1,2", "incremental-between-scan-mode": "all"},
            ["'all'", "changelog"],
        ),
        ({"incremental-between-scan-mode": "delta"}, ["needs"]),
        ({"incremental-between": "1,2", "scan.tag-name": "t"}, ["contradict"]),
    ],
)
def test_read_option_refusals(options: dict[str, str], words: list[str]) -> None:
    with pytest.raises(ConfigurationError) as info:
        parse_read_options(options)
    for word in words:
        assert word in str(info.value)


def test_write_options_keep_table_options_and_column_spelling() -> None:
    spec = split_write_options(
        {
            "path": "/wh/db.db/t",
            "primary-key": "dt, Id",
            "partition": "dt",
            "bucket": "2",
            "merge-engine": "aggregation",
            "fields.amount.aggregate-function": "sum",  # as Spark hands it: lower-cased
            "parallelism": "2",
        },
        ["dt", "Id", "Amount"],
    )
    assert spec.primary_keys == ["dt", "Id"]
    assert spec.partition_keys == ["dt"]
    assert spec.options == {
        "bucket": "2",
        "merge-engine": "aggregation",
        "fields.Amount.aggregate-function": "sum",
    }
    plain = split_write_options({"path": "/wh/db.db/t"}, ["id"])
    assert (plain.primary_keys, plain.partition_keys, plain.options) == (None, None, {})


def test_unknown_write_option_names_the_known_ones() -> None:
    with pytest.raises(ConfigurationError) as info:
        split_write_options({"primary_key": "id", "bucket": "2"}, ["id"])
    assert "'primary_key'" in str(info.value)
    assert "primary-key" in str(info.value) and "overwrite_partitions" in str(info.value)
    with pytest.raises(ConfigurationError, match="differ only in case"):
        split_write_options({"fields.a.aggregate-function": "sum"}, ["a", "A"])


def test_a_session_catalog_tables_options_are_the_ones_registered() -> None:
    """What Spark hands the source for a table of its session catalog (as seen from Spark 4.3):
    its properties, every option again under ``option.``, the path qualified as a URI."""
    handed = {
        "location": "file:/wh/db.db/orders",
        "path": "file:/wh/db.db/orders",
        "option.path": "/wh/db.db/orders",
        "storage_options_secret": "{}",
        "option.storage_options_secret": "{}",
        "external": "true",
        "owner": "root",
        "provider": "lakeops",
    }
    options = source_options(handed)
    assert options == {"path": "/wh/db.db/orders", "storage_options_secret": "{}"}
    assert parse_read_options(options) == ScanSpec()
    with pytest.raises(ConfigurationError, match="owner2"):
        parse_read_options(source_options({**handed, "owner2": "x"}))
