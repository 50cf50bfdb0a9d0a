"""Which partitions expire, against a plain model of Paimon 0.9's strategies."""

from __future__ import annotations

import datetime as dt

import pytest

from lakeops.maintenance.partition_expire import (
    UPDATE_TIME,
    PartitionInfo,
    PartitionTimeExtractor,
    parse_default,
    select_expired,
)

NOW = dt.datetime(2024, 3, 10, 12, 0, 0)


def _parts(*specs: dict[str, str]) -> list[PartitionInfo]:
    return [PartitionInfo(spec, 0) for spec in specs]


def _names(parts: list[PartitionInfo], key: str = "dt") -> list[str]:
    return [p.spec[key] for p in parts]


def test_default_formatter_date_and_timestamp() -> None:
    assert parse_default("2024-03-01") == dt.datetime(2024, 3, 1)
    assert parse_default("2024-3-1 7:05:09") == dt.datetime(2024, 3, 1, 7, 5, 9)
    assert parse_default("2024-03-01 00:00:00.5") == dt.datetime(2024, 3, 1, 0, 0, 0, 500000)
    # lenient, as Java's ResolverStyle.LENIENT
    assert parse_default("2024-13-01") == dt.datetime(2025, 1, 1)
    for bad in ("20240301", "2024-03-01T00:00:00", "x", "2024-03-01 10:00"):
        with pytest.raises(ValueError):
            parse_default(bad)


def test_values_time_default_skips_unparseable() -> None:
    parts = _parts(
        {"dt": "2024-03-01"}, {"dt": "2024-03-09"}, {"dt": "default"}, {"dt": "2024-03-08"}
    )
    expired = select_expired(parts, keys=["dt"], expiration=dt.timedelta(days=2), now=NOW)
    # 2024-03-08 00:00 is before 2024-03-08 12:00: expired; 03-09 is not
    assert _names(expired) == ["2024-03-01", "2024-03-08"]


def test_values_time_strictly_after() -> None:
    parts = _parts({"dt": "2024-03-08 12:00:00"})
    assert select_expired(parts, keys=["dt"], expiration=dt.timedelta(days=2), now=NOW) == []


def test_formatter_yyyymmdd() -> None:
    ext = PartitionTimeExtractor(formatter="yyyyMMdd")
    parts = _parts({"dt": "20240301"}, {"dt": "20240310"}, {"dt": "2024-03-01"})
    expired = select_expired(
        parts, keys=["dt"], expiration=dt.timedelta(days=1), now=NOW, extractor=ext
    )
    assert _names(expired) == ["20240301"]


def test_pattern_with_hour() -> None:
    ext = PartitionTimeExtractor(pattern="$dt $hour:00:00", formatter="yyyyMMdd HH:mm:ss")
    parts = [
        PartitionInfo({"dt": "20240310", "hour": "09"}, 0),
        PartitionInfo({"dt": "20240310", "hour": "11"}, 0),
        PartitionInfo({"dt": "20240309", "hour": "23"}, 0),
    ]
    expired = select_expired(
        parts, keys=["dt", "hour"], expiration=dt.timedelta(hours=2), now=NOW, extractor=ext
    )
    assert [(p.spec["dt"], p.spec["hour"]) for p in expired] == [
        ("20240310", "09"),
        ("20240309", "23"),
    ]


def test_pattern_default_formatter() -> None:
    ext = PartitionTimeExtractor(pattern="$year-$month-$day")
    parts = [PartitionInfo({"year": "2024", "month": "1", "day": "5"}, 0)]
    assert (
        select_expired(
            parts,
            keys=["year", "month", "day"],
            expiration=dt.timedelta(days=1),
            now=NOW,
            extractor=ext,
        )
        == parts
    )


def test_update_time() -> None:
    limit = int((NOW - dt.timedelta(hours=1)).astimezone().timestamp() * 1000)
    parts = [PartitionInfo({"dt": "a"}, limit - 1), PartitionInfo({"dt": "b"}, limit)]
    expired = select_expired(
        parts, keys=["dt"], expiration=dt.timedelta(hours=1), now=NOW, strategy=UPDATE_TIME
    )
    assert _names(expired) == ["a"]


def test_max_num_and_batches_follow_paimon_1x() -> None:
    """Paimon 1.x's ``NormalPartitionExpire``: expired partitions sorted by their values joined
    with ',' (Java string order: UTF-16 code units, so U+1F600 sorts before U+FFFF), the first
    ``max-num`` kept, split into batches of ``batch-size`` (model: the lists written out)."""
    from lakeops.maintenance.partition_expire import plan_drops

    parts = [
        PartitionInfo({"dt": d, "h": h}, 0)
        for d, h in [("2024-03-02", "1"), ("2024-03-01", "10"), ("2024-03-01", "2"), ("b", "x")]
    ]
    parts.append(PartitionInfo({"dt": "\uffff", "h": "0"}, 0))
    parts.append(PartitionInfo({"dt": "\U0001f600", "h": "0"}, 0))

    def names(batches: list[list[PartitionInfo]]) -> list[list[str]]:
        return [[",".join(p.spec.values()) for p in batch] for batch in batches]

    java_order = [
        "2024-03-01,10",
        "2024-03-01,2",
        "2024-03-02,1",
        "b,x",
        "\U0001f600,0",
        "\uffff,0",
    ]
    assert names(plan_drops(parts, 100, None)) == [java_order]
    assert names(plan_drops(parts, 4, None)) == [java_order[:4]]
    assert names(plan_drops(parts, 5, 2)) == [java_order[0:2], java_order[2:4], java_order[4:5]]
    assert names(plan_drops(parts, 3, 3)) == [java_order[:3]]  # not smaller: one commit
    assert names(plan_drops(parts, 3, 0)) == [java_order[:3]]  # 0: all together
    assert plan_drops(parts, 0, 2) == []
