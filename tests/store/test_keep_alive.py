"""Tags, branches and consumers that Paimon keeps alive survive lakeops maintenance (pypaimon
writes the tags and branches in tests/interop/test_pypaimon_matrix.py; here the consumer files
and unknown files are written in Paimon's layout by hand)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa

from lakeops import Catalog

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _table(catalog: Catalog, **options: str):
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1", **options}
    )
    for n in range(6):
        table.write(pa.table({"id": [n, n + 100], "v": [f"v{n}", "x"]}, schema=SCHEMA))
    return table


def test_expiry_keeps_a_live_consumers_next_snapshot(catalog: Catalog, warehouse: Path) -> None:
    table = _table(catalog)
    consumer = warehouse / "db.db/t/consumer/consumer-flink-job"
    consumer.parent.mkdir()
    consumer.write_text(json.dumps({"nextSnapshot": 3}))
    result = table.expire_snapshots(retain_min=1, retain_max=1, time_retained="0 ms")
    assert result.expired_snapshots == (1, 2)
    assert table.store.snapshot_ids()[0] == 3
    assert consumer.exists()
    # a consumer not updated for longer than consumer.expiration-time no longer holds expiry
    table.alter([_set("consumer.expiration-time", "1 ms")])
    later = catalog.get_table("db.t")
    import os
    import time

    old = time.time() - 3600
    os.utime(consumer, (old, old))
    later.expire_snapshots(retain_min=1, retain_max=1, time_retained="0 ms")
    ids = later.store.snapshot_ids()
    assert ids == [ids[-1]] and ids[-1] > 3
    assert not consumer.exists()  # expired: deleted first, as Paimon's ConsumerManager.expire


def _set(key: str, value: str):
    from lakeops.format.schema_change import SetOption

    return SetOption(key, value)


def test_orphan_cleanup_keeps_what_it_does_not_know(catalog: Catalog, warehouse: Path) -> None:
    _table(catalog)
    root = warehouse / "db.db/t"
    unknown = [
        root / "consumer/consumer-x",
        root / "tag/.tag-y.tmp",
        root / "README.operators",
        root / "_backup/notes.txt",
    ]
    for path in unknown:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
    orphan = root / "bucket-0/data-crashed-0.parquet"
    orphan.write_bytes(b"junk")
    removed = catalog.get_table("db.t").remove_orphan_files(older_than=dt.timedelta(0), force=True)
    assert [r.rsplit("/", 1)[-1] for r in removed.deleted] == ["data-crashed-0.parquet"]
    assert all(p.exists() for p in unknown)
