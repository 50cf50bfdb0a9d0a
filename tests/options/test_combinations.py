"""Option combinations Paimon's schema validation refuses are refused at create and alter,
before anything is written (Java Paimon 0.9 agrees: tests/interop/test_schema_rules_interop.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.errors import ConfigurationError
from lakeops.format.schema_change import SetOption

SCHEMA = pa.schema([pa.field("k", pa.int32(), False), pa.field("v", pa.int64())])

#: (options, primary key?, what the error names)
REFUSED = [
    ({"changelog-producer": "input"}, False, "'changelog-producer' = 'input' needs a primary key"),
    ({"changelog-producer": "lookup"}, False, "needs a primary key"),
    ({"streaming-read-overwrite": "true"}, False, "'streaming-read-overwrite' needs a primary"),
    (
        {"streaming-read-overwrite": "true", "changelog-producer": "lookup"},
        True,
        "would see the overwrite's changes twice",
    ),
    (
        {"streaming-read-overwrite": "true", "changelog-producer": "full-compaction"},
        True,
        "twice",
    ),
    ({"bucket": "-1", "full-compaction.delta-commits": "2"}, False, "append table with bucket"),
    (
        {"full-compaction.delta-commits": "2", "changelog-producer": "lookup"},
        True,
        "use 'changelog-producer' = 'full-compaction'",
    ),
]

#: their neighbours, which Paimon accepts
ACCEPTED = [
    ({"changelog-producer": "none"}, False),
    ({"streaming-read-overwrite": "true", "changelog-producer": "input"}, True),
    ({"streaming-read-overwrite": "false"}, False),
    ({"bucket": "2", "bucket-key": "k", "full-compaction.delta-commits": "2"}, False),
    ({"full-compaction.delta-commits": "2", "changelog-producer": "full-compaction"}, True),
]


@pytest.mark.parametrize(("options", "keyed", "message"), REFUSED)
def test_refused_at_create(
    catalog: Catalog, warehouse: Path, options: dict[str, str], keyed: bool, message: str
) -> None:
    with pytest.raises(ConfigurationError, match="Paimon") as info:
        catalog.create_table(
            "db.t", schema=SCHEMA, primary_keys=["k"] if keyed else None, options=options
        )
    assert message in str(info.value)
    assert not (warehouse / "db.db" / "t").exists()


@pytest.mark.parametrize(("options", "keyed"), ACCEPTED)
def test_neighbours_accepted(catalog: Catalog, options: dict[str, str], keyed: bool) -> None:
    catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["k"] if keyed else None, options=options
    )


@pytest.mark.parametrize(("options", "keyed", "message"), REFUSED)
def test_refused_at_alter(
    catalog: Catalog, options: dict[str, str], keyed: bool, message: str
) -> None:
    table = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["k"] if keyed else None)
    before = table.store.latest_schema().id
    with pytest.raises(ConfigurationError) as info:
        table.alter([SetOption(k, v) for k, v in options.items()])
    assert message in str(info.value)
    assert table.store.latest_schema().id == before


def test_an_alter_of_a_table_that_already_broke_a_newer_rule_goes_through(
    catalog: Catalog, warehouse: Path
) -> None:
    """Paimon 0.9 made tables with full-compaction.delta-commits and the lookup changelog;
    lakeops opens them, and an unrelated ALTER is not refused for the pair."""
    table = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["k"])
    schema_file = warehouse / "db.db" / "t" / "schema" / "schema-0"
    written = json.loads(schema_file.read_text())
    written["options"].update(
        {"full-compaction.delta-commits": "2", "changelog-producer": "lookup"}
    )
    schema_file.write_text(json.dumps(written))
    table = catalog.get_table("db.t")
    assert table.schema.options["full-compaction.delta-commits"] == "2"
    table.alter([SetOption("snapshot.num-retained.max", "20")])
    assert catalog.get_table("db.t").schema.options["snapshot.num-retained.max"] == "20"
