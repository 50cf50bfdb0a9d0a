"""DATE partition values under ``partition.expiration-strategy = values-time``, judged by Java
Paimon 0.9's own ``PartitionExpire``: Paimon renders a DATE partition value with ``toString``
of its internal form (the day number), which the time extractor cannot parse, so the partition
is skipped, never expired; a STRING partition holding the same dates expires. lakeops lists
(dry run) exactly what Java then drops, on the same table states."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from lakeops import Catalog

pytestmark = pytest.mark.interop

# set after the writes: Java's batch commit itself expires partitions when these are set
EXPIRY = {"partition.expiration-time": "1 d", "partition.expiration-check-interval": "0 s"}
DAYS = ["2020-01-01", "2020-01-02", "2999-01-01"]


def test_date_partitions_expire_as_java_paimon_expires_them(
    warehouse: Path, java_classpath: str
) -> None:
    from tests.interop.java_oracle import run_ops

    ops: list[dict[str, object]] = []
    for name, kind in (("db.dates", "DATE"), ("db.texts", "STRING")):
        ops.append(
            {
                "op": "create",
                "table": name,
                "fields": [
                    {"name": "dt", "type": f"{kind} NOT NULL"},
                    {"name": "k", "type": "BIGINT NOT NULL"},
                ],
                "primary_keys": ["dt", "k"],
                "partition_keys": ["dt"],
                "options": {"bucket": "1"},
            }
        )
        ops.append(
            {"op": "write", "table": name, "rows": [{"dt": d, "k": i} for i, d in enumerate(DAYS)]}
        )
        changes = [{"change": "setOption", "key": k, "value": v} for k, v in EXPIRY.items()]
        ops.append({"op": "alter", "table": name, "changes": changes})
    run_ops(java_classpath, warehouse, ops)

    catalog = Catalog(str(warehouse))
    now = dt.datetime.now()
    ours = {
        name: catalog.get_table(name).expire_partitions(dry_run=True, now=now).partitions
        for name in ("db.dates", "db.texts")
    }
    results = run_ops(
        java_classpath,
        warehouse,
        [
            op
            for t in ("db.dates", "db.texts")
            for op in ({"op": "expire_partitions", "table": t}, {"op": "read", "table": t})
        ],
    )
    # what Java dropped: the partitions its read no longer holds
    left = {t: {r["dt"] for r in results[i]["rows"]} for i, t in ((1, "db.dates"), (3, "db.texts"))}
    dropped = {t: sorted(set(DAYS) - left[t]) for t in left}
    assert dropped["db.dates"] == [] == ours["db.dates"]  # the day numbers never parse
    assert dropped["db.texts"] == ["2020-01-01", "2020-01-02"]
    assert ours["db.texts"] == [{"dt": "2020-01-01"}, {"dt": "2020-01-02"}]
    # what lakeops reads after Java's run: every DATE partition, the future STRING one
    assert len(catalog.get_table("db.dates").read()) == 3
    assert catalog.get_table("db.texts").read().column("dt").to_pylist() == ["2999-01-01"]
