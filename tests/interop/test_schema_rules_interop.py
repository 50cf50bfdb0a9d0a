"""What lakeops refuses at create for Paimon's schema rules (tests/options/test_combinations.py)
Java Paimon 0.9 refuses too, and it accepts the neighbours lakeops accepts: lakeops makes no
table Java cannot open, and refuses none Java makes (but the one rule newer than 0.9)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.interop.java_oracle import run_ops
from tests.options.test_combinations import ACCEPTED, REFUSED

pytestmark = pytest.mark.interop

FIELDS = [{"name": "k", "type": "INT NOT NULL"}, {"name": "v", "type": "BIGINT"}]
NEWER_THAN_09 = {"full-compaction.delta-commits": "2", "changelog-producer": "lookup"}


def _java_opens(warehouse: Path, classpath: str, options: dict[str, str], keyed: bool) -> bool:
    create = {
        "op": "create",
        "table": "db.t",
        "fields": FIELDS,
        "primary_keys": ["k"] if keyed else [],
        "partition_keys": [],
        "options": {"bucket": "1", "bucket-key": "k"} if not keyed else {"bucket": "1"},
    }
    create["options"] = {**create["options"], **options}
    if create["options"].get("bucket") == "-1":
        create["options"].pop("bucket-key", None)
    try:
        run_ops(classpath, str(warehouse), [create, {"op": "read", "table": "db.t"}])
    except RuntimeError:
        return False
    return True


@pytest.mark.parametrize(("options", "keyed", "message"), REFUSED)
def test_java_refuses_what_lakeops_refuses(
    tmp_path: Path, java_classpath: str, options: dict[str, str], keyed: bool, message: str
) -> None:
    del message
    assert _java_opens(tmp_path, java_classpath, options, keyed) is (options == NEWER_THAN_09)


@pytest.mark.parametrize(("options", "keyed"), ACCEPTED)
def test_java_accepts_what_lakeops_accepts(
    tmp_path: Path, java_classpath: str, options: dict[str, str], keyed: bool
) -> None:
    assert _java_opens(tmp_path, java_classpath, options, keyed)
