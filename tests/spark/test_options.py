"""The data source's option names and their validation (no Spark needed: the checks run before
any table is touched)."""

from __future__ import annotations

import pytest

from lakeops.errors import ConfigurationError, UnsupportedFeatureError
from lakeops.spark.options import (
    READ_OPTIONS,
    ScanSpec,
    parse_read_options,
    split_write_options,
)


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"path": "/wh/db.db/t"}, ScanSpec()),
        ({"scan.snapshot-id": "3"}, ScanSpec(snapshot_id=3)),
        ({"versionasof": "2"}, ScanSpec(snapshot_id=2)),  # Spark lower-cases the keys
        ({"versionAsOf": "2", "scan.snapshot-id": "2"}, ScanSpec(snapshot_id=2)),
        ({"incremental-between": "1, 4"}, ScanSpec(incremental=(1, 4), mode="auto")),
        (
            {"incremental-between": "2,3", "incremental-between-scan-mode": "DIFF"},
            ScanSpec(incremental=(2, 3), mode="diff"),
        ),
    ],
)
def test_read_options(options: dict[str, str], expected: ScanSpec) -> None:
    assert parse_read_options(options) == expected


@pytest.mark.parametrize(
    ("options", "error", "words"),
    [
        ({"snapshot_id": "1"}, ConfigurationError, ["'snapshot_id'", *READ_OPTIONS]),
        ({"scan.snapshot-id": "0"}, ConfigurationError, ["positive integer"]),
        ({"scan.snapshot-id": "x"}, ConfigurationError, ["'x'"]),
        ({"scan.snapshot-id": "1", "versionasof": "2"}, ConfigurationError, ["different"]),
        ({"scan.timestamp-millis": "1700000000000"}, UnsupportedFeatureError, ["timestamp"]),
        ({"timestampasof": "2024-01-01"}, UnsupportedFeatureError, ["timestampAsOf"]),
        ({"scan.tag-name": "t1"}, UnsupportedFeatureError, ["scan.tag-name"]),
        ({"versionasof": "my-tag"}, UnsupportedFeatureError, ["tag name"]),
        ({"incremental-between": "3"}, ConfigurationError, ["'start,end'"]),
        ({"incremental-between": "3,1"}, ConfigurationError, ["earlier"]),
        ({"incremental-between": "a,b"}, UnsupportedFeatureError, ["tag names"]),
        (
            {"incremental-between": "1,2", "incremental-between-scan-mode": "all"},
            ConfigurationError,
            ["'all'", "changelog"],
        ),
        ({"incremental-between-scan-mode": "delta"}, ConfigurationError, ["needs"]),
        ({"incremental-between": "1,2", "scan.snapshot-id": "1"}, ConfigurationError, ["one"]),
    ],
)
def test_read_option_refusals(
    options: dict[str, str], error: type[Exception], words: list[str]
) -> None:
    with pytest.raises(error) as info:
        parse_read_options(options)
    assert type(info.value) is error
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
