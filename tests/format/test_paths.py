"""Partition directory names: Paimon's, per type, both ``partition.legacy-name`` values.

The expected names below are a hand-written model of Java Paimon's rules, not lakeops output:

* ``InternalRowPartitionComputer.generatePartValues`` (paimon-common): legacy (the only mode of
  Paimon 0.9; default ``true`` in 1.0+) is ``toString`` of the internal value, otherwise
  ``CastExecutors.resolve(type, STRING)``; NULL and whitespace-only strings become
  ``partition.default-name``.
* legacy ``toString``: DATE → ``Integer`` epoch day; TIMESTAMP/_LTZ → ``Timestamp.toString`` =
  ``LocalDateTime.toString`` (``HH:mm``, ``:ss`` only if non-zero, fraction in 3/6/9 digits);
  DECIMAL → ``BigDecimal.toPlainString``; FLOAT/DOUBLE → Java ``Float``/``Double.toString``.
* cast: ``DateTimeUtils.formatDate`` (``yyyy-MM-dd``) and ``formatTimestamp(ts, precision)``
  (``yyyy-MM-dd HH:mm:ss`` + 9-digit fraction with trailing zeros cut down to the precision);
  TIMESTAMP_LTZ first converted to the JVM's default zone.
* ``PartitionPathUtils.escapePathName``: ``%XX`` for 0x00-0x1F, ``"#%'*/:=?\\{}[]^`` and DEL.

Each row is ``(type, internal value, legacy name, cast name)``; internal values are what a
partition BinaryRow holds (DATE epoch day, TIMESTAMP ``(epoch millis, nano-of-milli)``).
"""

from __future__ import annotations

import datetime as dt
import posixpath
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import pyarrow as pa
import pytest

from lakeops.errors import UnsupportedFeatureError
from lakeops.format import binary_row
from lakeops.format.paths import PartitionPaths, escape_path_name, unescape_path_name
from lakeops.format.types import DataType

D = "__DEFAULT_PARTITION__"
NOON_2024 = 1_704_112_200_000  # 2024-01-01 12:30:00 UTC, epoch millis
BERLIN = ZoneInfo("Europe/Berlin")  # UTC+1 in January

#: (type, internal value, legacy directory value, cast directory value) — values escaped
MODEL: list[tuple[str, Any, str, str]] = [
    ("DATE", 19723, "19723", "2024-01-01"),
    ("DATE", 0, "0", "1970-01-01"),
    ("DATE", -1, "-1", "1969-12-31"),
    ("DATE", -719162, "-719162", "0001-01-01"),
    ("DATE", None, D, D),
    ("TIMESTAMP(0)", (NOON_2024, 0), "2024-01-01T12%3A30", "2024-01-01 12%3A30%3A00"),
    ("TIMESTAMP(3)", (NOON_2024, 0), "2024-01-01T12%3A30", "2024-01-01 12%3A30%3A00.000"),
    (
        "TIMESTAMP(3)",
        (NOON_2024 + 5_123, 0),
        "2024-01-01T12%3A30%3A05.123",
        "2024-01-01 12%3A30%3A05.123",
    ),
    ("TIMESTAMP(3)", (-1, 0), "1969-12-31T23%3A59%3A59.999", "1969-12-31 23%3A59%3A59.999"),
    (
        "TIMESTAMP(6)",
        (NOON_2024 + 5_120, 0),
        "2024-01-01T12%3A30%3A05.120",
        "2024-01-01 12%3A30%3A05.120000",
    ),
    (
        "TIMESTAMP(6)",
        (NOON_2024 + 5_123, 456_000),
        "2024-01-01T12%3A30%3A05.123456",
        "2024-01-01 12%3A30%3A05.123456",
    ),
    ("TIMESTAMP(6)", (NOON_2024, 0), "2024-01-01T12%3A30", "2024-01-01 12%3A30%3A00.000000"),
    (
        "TIMESTAMP(9)",
        (NOON_2024 + 5_123, 456_789),
        "2024-01-01T12%3A30%3A05.123456789",
        "2024-01-01 12%3A30%3A05.123456789",
    ),
    (
        "TIMESTAMP(9)",
        (NOON_2024, 1),
        "2024-01-01T12%3A30%3A00.000000001",
        "2024-01-01 12%3A30%3A00.000000001",
    ),
    # a value carrying more digits than its precision keeps them (formatTimestamp only cuts 0s)
    (
        "TIMESTAMP(3)",
        (NOON_2024, 500),
        "2024-01-01T12%3A30%3A00.000000500",
        "2024-01-01 12%3A30%3A00.0000005",
    ),
    # TIMESTAMP_LTZ: legacy is the UTC wall clock; cast is the local zone (Berlin here)
    ("TIMESTAMP_LTZ(3)", (NOON_2024, 0), "2024-01-01T12%3A30", "2024-01-01 13%3A30%3A00.000"),
    (
        "TIMESTAMP_LTZ(6)",
        (1_719_837_000_000, 0),  # 2024-07-01 12:30 UTC, Berlin summer time (UTC+2)
        "2024-07-01T12%3A30",
        "2024-07-01 14%3A30%3A00.000000",
    ),
    ("DECIMAL(10, 2)", Decimal("12.50"), "12.50", "12.50"),
    ("DECIMAL(10, 2)", Decimal("-0.05"), "-0.05", "-0.05"),
    ("DECIMAL(10, 2)", Decimal("0.00"), "0.00", "0.00"),
    ("DECIMAL(5, 0)", Decimal("7"), "7", "7"),
    (
        "DECIMAL(38, 10)",
        Decimal("12345678901234567890.0000000001"),
        "12345678901234567890.0000000001",
        "12345678901234567890.0000000001",
    ),
    ("BOOLEAN", True, "true", "true"),
    ("BOOLEAN", False, "false", "false"),
    ("TINYINT", -5, "-5", "-5"),
    ("SMALLINT", 300, "300", "300"),
    ("INT", -2147483648, "-2147483648", "-2147483648"),
    ("BIGINT", 9223372036854775807, "9223372036854775807", "9223372036854775807"),
    ("FLOAT", 1.5, "1.5", "1.5"),
    ("FLOAT", 0.10000000149011612, "0.1", "0.1"),  # float32 0.1
    ("FLOAT", 1.0e7, "1.0E7", "1.0E7"),
    ("DOUBLE", 100.0, "100.0", "100.0"),
    ("DOUBLE", 0.001, "0.001", "0.001"),
    ("DOUBLE", 1.0e-4, "1.0E-4", "1.0E-4"),
    ("DOUBLE", -2.5e300, "-2.5E300", "-2.5E300"),
    ("DOUBLE", -0.0, "-0.0", "-0.0"),
    ("DOUBLE", float("nan"), "NaN", "NaN"),
    ("DOUBLE", float("-inf"), "-Infinity", "-Infinity"),
    ("STRING", "2024-01-01", "2024-01-01", "2024-01-01"),
    ("STRING", "", D, D),
    ("STRING", " \t\n", D, D),
    ("STRING", "\u3000", D, D),  # ideographic space: Java whitespace
    ("STRING", "\u00a0", "\u00a0", "\u00a0"),  # no-break space: not Java whitespace
    ("STRING", " x ", " x ", " x "),
    ("STRING", "a/b", "a%2Fb", "a%2Fb"),
    ("STRING", "../x", "..%2Fx", "..%2Fx"),
    ("STRING", "..", "..", ".."),
    ("STRING", "k=v:1?#%", "k%3Dv%3A1%3F%23%25", "k%3Dv%3A1%3F%23%25"),
    ("STRING", "{}[]^*'\"\\", "%7B%7D%5B%5D%5E%2A%27%22%5C", "%7B%7D%5B%5D%5E%2A%27%22%5C"),
    ("STRING", "a\x00b\x1fc\x7f", "a%00b%1Fc%7F", "a%00b%1Fc%7F"),
    ("STRING", "été ☃ 😀", "été ☃ 😀", "été ☃ 😀"),
    (
        "STRING",
        "a b&c+d~e!f@g$h(i),j;k<l>m|n`o",
        "a b&c+d~e!f@g$h(i),j;k<l>m|n`o",
        "a b&c+d~e!f@g$h(i),j;k<l>m|n`o",
    ),
    ("STRING", None, D, D),
    ("CHAR(3)", "ab ", "ab ", "ab "),
    ("VARCHAR(10)", "x", "x", "x"),
]


def _paths(type_text: str, legacy: bool, default: str = D) -> PartitionPaths:
    return PartitionPaths(["p"], [DataType.parse(type_text)], default, legacy, zone=BERLIN)


@pytest.mark.parametrize(("type_text", "value", "legacy_name", "cast_name"), MODEL)
def test_model_names(type_text: str, value: Any, legacy_name: str, cast_name: str) -> None:
    assert _paths(type_text, True).dir_of_internal([value]) == f"p={legacy_name}"
    assert _paths(type_text, False).dir_of_internal([value]) == f"p={cast_name}"


def _arrow_value(t: DataType, value: Any) -> pa.Array:
    """One-element Arrow array holding the internal ``value`` (no Python datetime rounding)."""
    if t.root == "DATE":
        return pa.array([value], pa.int32()).cast(pa.date32())
    if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and value is not None:
        millis, nanos = value
        per_milli = {"s": 0, "ms": 1, "us": 1000, "ns": 1_000_000}[t.to_arrow().unit]
        raw = (
            millis // 1000
            if per_milli == 0
            else millis * per_milli + nanos * per_milli // 1_000_000
        )
        return pa.array([raw], pa.int64()).cast(t.to_arrow())
    return pa.array([value], t.to_arrow())


@pytest.mark.parametrize(("type_text", "value", "legacy_name", "cast_name"), MODEL)
def test_names_from_manifest_bytes(
    type_text: str, value: Any, legacy_name: str, cast_name: str
) -> None:
    """The same names from the serialized BinaryRow a manifest holds (exact nanoseconds)."""
    t = DataType.parse(type_text)
    if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and value is not None:
        millis, nanos = value
        if t.precision is not None and t.precision <= 3 and nanos:
            pytest.skip("a compact TIMESTAMP(<=3) slot has no nanoseconds")
        if t.precision == 0 and millis % 1000:
            pytest.skip("TIMESTAMP(0) holds whole seconds")
    encoded = binary_row.encode_rows([_arrow_value(t, value)], [t]).row(0)
    partition = b"\x00\x00\x00\x01" + encoded
    assert _paths(type_text, True).dir_of(partition) == f"p={legacy_name}"
    assert _paths(type_text, False).dir_of(partition) == f"p={cast_name}"


def test_multi_level_custom_default_and_escaped_names() -> None:
    types = [DataType.parse(t) for t in ("DATE", "INT", "STRING", "BOOLEAN")]
    names = ["d", "n", "k=1", "b"]
    values = [19723, None, "", True]
    legacy = PartitionPaths(names, types, "NULLP", True)
    cast = PartitionPaths(names, types, "NULLP", False)
    assert legacy.dir_of_internal(values) == "d=19723/n=NULLP/k%3D1=NULLP/b=true"
    assert cast.dir_of_internal(values) == "d=2024-01-01/n=NULLP/k%3D1=NULLP/b=true"
    assert PartitionPaths([], []).dir_of(b"\x00\x00\x00\x00" + bytes(8)) == ""
    assert (
        legacy.bucket_dir(binary_row.serialize([dt.date(2024, 1, 1), 3, "x", False], types), 2)
        == "d=19723/n=3/k%3D1=x/b=false/bucket-2"
    )


def test_binary_partitions() -> None:
    """Legacy names a BINARY value by a JVM identity hash: refused; cast names it by its text."""
    with pytest.raises(UnsupportedFeatureError, match=r"partition\.legacy-name"):
        _paths("BYTES", True)
    assert _paths("BYTES", False).dir_of_internal([b"a/b"]) == "p=a%2Fb"
    assert _paths("BINARY(2)", False).dir_of_internal([None]) == f"p={D}"


@pytest.mark.parametrize("value", ["../../etc", "/abs", "a/../../b", "\\..\\x", "..\x00/"])
def test_no_value_escapes_the_table(value: str) -> None:
    rel = _paths("STRING", True).dir_of_internal([value])
    assert "/" not in rel
    assert posixpath.normpath(posixpath.join("/table", rel, "bucket-0")).startswith("/table/")


@pytest.mark.parametrize("text", ["plain", "a%2Fb", "x%", "%4", "%zz", "100%25", "é%3A"])
def test_unescape_inverts_escape(text: str) -> None:
    assert unescape_path_name(escape_path_name(text)) == text
    assert escape_path_name("ok_name-1") == "ok_name-1"
