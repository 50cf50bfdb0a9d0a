"""Option values are typed and range-checked when a table is created or altered: a refused
value names the option and the fix, and the warehouse is byte-identical afterwards."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog, ConfigurationError
from lakeops.format.schema_change import SetOption
from lakeops.options.registry import REGISTRY, check_option_values

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64())])


def tree(root: Path) -> dict[str, str]:
    """Every file and directory under ``root`` with a digest of its bytes."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "/"
        for p in sorted(root.rglob("*"))
    }


# (option, bad value) from issue 24, then one per kind of check
REFUSED = [
    ("dynamic-bucket.target-row-num", "-5"),
    ("num-levels", "1"),
    ("compaction.size-ratio", "-1"),
    ("commit.max-retries", "-1"),
    ("compaction.offpeak.start.hour", "99"),
    ("compaction.offpeak.end.hour", "24"),
    ("compaction.offpeak-ratio", "-3"),
    ("compaction.max-size-amplification-percent", "-1"),
    ("num-sorted-run.compaction-trigger", "0"),
    ("num-sorted-run.stop-trigger", "1.5"),
    ("dynamic-bucket.max-buckets", "0"),
    ("dynamic-bucket.initial-buckets", "-2"),
    ("snapshot.num-retained.min", "0"),
    ("snapshot.expire.limit", "0"),
    ("changelog.num-retained.max", "abc"),
    ("full-compaction.delta-commits", "0"),
    ("lookup-compact.max-interval", "0"),
    ("manifest.merge-min-count", "-1"),
    ("file.compression.zstd-level", "23"),
    ("compaction.small-file-ratio", "1.5"),
    ("compaction.small-file-ratio", "nan"),
    ("target-file-size", "0 mb"),
    ("write-buffer-size", "lots"),
    ("lookup.cache-max-memory-size", "-1 mb"),
    ("snapshot.time-retained", "forever"),
    ("record-level.expire-time", "0 s"),
    ("write-only", "yes"),
    ("ignore-delete", "1"),
    ("bucket", "2147483648"),
    ("fields.v.ignore-retract", "maybe"),
    ("commit.timeout", "-1 s"),
    ("commit.timeout", "soon"),
    ("commit.min-retry-wait", "0 ms"),
    ("commit.max-retry-wait", "25 d"),
]


@pytest.mark.parametrize(("key", "value"), REFUSED)
def test_create_table_refuses_the_value_and_writes_nothing(
    catalog: Catalog, warehouse: Path, key: str, value: str
) -> None:
    before = tree(warehouse)
    options = {"bucket": "2", key: value}
    with pytest.raises(ConfigurationError) as err:
        catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options=options)
    message = str(err.value)
    assert repr(key) in message and repr(value) in message
    assert "must be" in message and "remove" in message  # the valid range and the fix
    assert tree(warehouse) == before


@pytest.mark.parametrize(("key", "value"), REFUSED[:6])
def test_alter_refuses_the_value_and_writes_nothing(
    catalog: Catalog, warehouse: Path, key: str, value: str
) -> None:
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "2"}
    )
    table.write(pa.table({"id": [1], "v": [2]}))
    before = tree(warehouse)
    with pytest.raises(ConfigurationError, match=key.replace(".", r"\.")):
        table.alter(SetOption(key, value))
    assert tree(warehouse) == before
    assert catalog.get_table("db.t").read().to_pylist() == [{"id": 1, "v": 2}]


@pytest.mark.parametrize(
    "options",
    [
        {"num-levels": "2", "compaction.size-ratio": "0", "commit.max-retries": "0"},
        {"compaction.offpeak.start.hour": "0", "compaction.offpeak.end.hour": "23"},
        {"compaction.offpeak.start.hour": "-1", "compaction.offpeak-ratio": " 30 "},
        {"dynamic-bucket.max-buckets": "-1", "write-only": "TRUE", "target-file-size": "1 b"},
        {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"},
        {"compaction.small-file-ratio": "0", "file.compression.zstd-level": "22"},
    ],
)
def test_boundary_values_are_accepted(catalog: Catalog, options: dict[str, str]) -> None:
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "2", **options}
    )
    table.write(pa.table({"id": [1, 2], "v": [3, 4]}))
    assert table.read().num_rows == 2


def test_enumerations_are_checked_at_create(catalog: Catalog, warehouse: Path) -> None:
    before = tree(warehouse)
    options = {"bucket": "2", "record-level.time-field-type": "millis"}
    with pytest.raises(ConfigurationError, match="'seconds-int' or 'millis-long'"):
        catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options=options)
    assert tree(warehouse) == before


def test_minimum_above_maximum_is_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"snapshot\.num-retained\.min.*larger"):
        check_option_values({"snapshot.num-retained.min": "5", "snapshot.num-retained.max": "3"})
    with pytest.raises(ConfigurationError, match=r"commit\.min-retry-wait.*longer"):
        check_option_values({"commit.min-retry-wait": "2 s", "commit.max-retry-wait": "1 s"})


def test_every_checked_option_is_one_lakeops_honours() -> None:
    """Only the values of options lakeops honours are checked: an ignorable option is stored
    and written back whatever its value."""
    checked = [r for r in REGISTRY if r.range is not None]
    assert len(checked) >= 70
    assert all(r.status == "honoured" for r in checked)


def test_a_table_altered_elsewhere_to_a_bad_value_is_not_written(
    catalog: Catalog, warehouse: Path
) -> None:
    """Another engine stored 'num-levels' = 1: lakeops refuses to write, before any file."""
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "2"}
    )
    schema_file = warehouse / "db.db" / "t" / "schema" / "schema-0"
    doc = json.loads(schema_file.read_text())
    doc["options"]["num-levels"] = "1"
    schema_file.write_text(json.dumps(doc))
    before = tree(warehouse)
    with pytest.raises(ConfigurationError, match=r"refuses to write .*'num-levels' = '1'"):
        catalog.get_table("db.t").write(pa.table({"id": [1], "v": [2]}))
    assert tree(warehouse) == before
    assert table.read().num_rows == 0  # reads are still allowed
