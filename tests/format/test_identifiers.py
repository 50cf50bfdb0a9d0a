"""Database and table names follow one rule, which the check applies and its message states."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog, ConfigurationError, DataValidationError
from lakeops.format.identifiers import RULE, check_identifier

SCHEMA = pa.schema([("id", pa.int64())])

BAD = [
    # (name, words of the reason)
    ("", "empty"),
    ("   ", "starts or ends with a space"),
    (" t", "starts or ends with a space"),
    ("t ", "starts or ends with a space"),
    ("a\x00b", "U+0000"),
    ("a\nb", "U+000A"),
    ("a\tb", "U+0009"),
    ("a\x7fb", "U+007F"),
    ("a\u200bb", "U+200B"),  # zero-width space
    ("a\u200db", "U+200D"),  # zero-width joiner
    ("a\ufeffb", "U+FEFF"),  # byte order mark
    ("abc\u202edcba", "U+202E"),  # right-to-left override
    ("a\u2066b", "U+2066"),  # left-to-right isolate
    ("a\u00a0b", "U+00A0"),  # no-break space
    ("a\u2028b", "U+2028"),  # line separator
    ("a\ue000b", "U+E000"),  # private use
    ("a/b", "'/'"),
    ("a\\b", "'\\'"),
    ("..", "'.'"),
    (".hidden", "'.'"),
    ("a$b", "'$'"),
    ("x" * 256, "256 bytes long in UTF-8, over the limit of 255 bytes"),
    ("é" * 128, "256 bytes long in UTF-8, over the limit of 255 bytes"),
]

GOOD = ["orders", "Orders_2024-v2", "my table", "заказы", "注文", "naïve", "a" * 255, "x+y=z!"]


@pytest.mark.parametrize(("name", "reason"), BAD)
def test_bad_names_are_refused_with_the_rule(name: str, reason: str) -> None:
    with pytest.raises(ConfigurationError, match=re.escape(reason)) as err:
        check_identifier("table", name)
    assert RULE in str(err.value)


@pytest.mark.parametrize("name", GOOD)
def test_good_names_pass(name: str) -> None:
    assert check_identifier("table", name) == name


def test_database_names_leave_room_for_the_suffix() -> None:
    assert check_identifier("database", "d" * 252)
    with pytest.raises(ConfigurationError, match="over the limit of 252 bytes"):
        check_identifier("database", "d" * 253)


def tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "/"
        for p in sorted(root.rglob("*"))
    }


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.create_database("a.."),
        lambda c: c.create_database("a.b"),
        lambda c: c.create_database("db\x00"),
        lambda c: c.create_database("d" * 300),
        lambda c: c.create_table("db." + "t" * 300, schema=SCHEMA, primary_keys=["id"]),
        lambda c: c.create_table("db.t\u202e", schema=SCHEMA, primary_keys=["id"]),
        lambda c: c.create_table("db. ", schema=SCHEMA, primary_keys=["id"]),
        lambda c: c.get_table("db." + "t" * 300),
        lambda c: c.table_exists("db.t\x00"),
        lambda c: c.list_tables("x" * 400),
    ],
)
def test_catalog_refuses_bad_names_before_touching_storage(
    catalog: Catalog, warehouse: Path, call
) -> None:
    before = tree(warehouse)
    with pytest.raises(ConfigurationError) as err:
        call(catalog)
    assert str(warehouse) not in str(err.value)  # a lakeops error, not an OSError with a path
    assert tree(warehouse) == before


def test_long_partition_values_are_a_lakeops_error(catalog: Catalog, warehouse: Path) -> None:
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64())])
    table = catalog.create_table(
        "db.p", schema=schema, primary_keys=["dt", "id"], partition_keys=["dt"],
        options={"bucket": "1"},
    )  # fmt: skip
    table.write(pa.table({"dt": ["short"], "id": [1]}))
    before = tree(warehouse)
    with pytest.raises(DataValidationError, match=r"column 'dt'.*over the limit of 255 bytes"):
        table.write(pa.table({"dt": ["x" * 300], "id": [2]}))
    assert tree(warehouse) == before


def test_closest_identifiers() -> None:
    from lakeops.format.identifiers import closest_identifiers

    existing = ["demo.orders", "demo.customers", "sales.order_lines", "db.users"]
    # the same name in another database first, then close spellings
    assert closest_identifiers("db.orders", existing) == ["demo.orders", "db.users"]
    assert closest_identifiers("demo.order", existing) == ["demo.orders"]
    assert closest_identifiers("demo.ordres", existing)[0] == "demo.orders"
    assert closest_identifiers("x.zzz", existing) == []
