"""The planner's job files: what a distributed compaction's tasks write carries the job's name
token, and removing a job's files removes exactly those (in the bucket directories and under
external paths)."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.compact.planner import compact_jobs, plan_buckets, remove_job_files
from lakeops.store.locations import new_name_token

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64())])
UUID_NAME = re.compile(
    r"data-([0-9a-f]{8}-[0-9a-f]{4})-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-\d+\.parquet"
)


@pytest.mark.parametrize("external", [False, True])
def test_job_files_carry_the_token_and_only_they_are_removed(
    warehouse: Path, tmp_path: Path, external: bool
) -> None:
    options = {"bucket": "2", "write-only": "true"}
    if external:
        options |= {
            "data-file.external-paths": f"file:{tmp_path / 'ext'}",
            "data-file.external-paths.strategy": "round-robin",
        }
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options=options)
    for i in range(3):
        t.write(pa.table({"id": list(range(i, 3000, 2)), "v": [i] * len(range(i, 3000, 2))}))
    data_home = tmp_path / "ext" if external else Path(t.root)

    def on_disk() -> set[str]:
        return {str(p) for p in data_home.rglob("*.parquet")}

    before = on_disk()
    jobs = plan_buckets(t.store, t.schema)
    token = new_name_token()
    plan = compact_jobs(t.context, jobs, full=True, parallelism=1, name_token=token)
    new = sorted(plan.written)
    assert len(new) == 2 and on_disk() == before | set(new)  # one file per bucket
    tail = f"{token[:8]}-{token[8:]}"
    for path in new:  # still uuid-shaped, the token where the uuid starts
        match = UUID_NAME.fullmatch(Path(path).name)
        assert match is not None and match.group(1) == tail
    assert remove_job_files(t.context, jobs, new_name_token()) == []
    removed = remove_job_files(t.context, jobs, token, keep=new[:1])
    assert sorted(removed) == new[1:]
    assert on_disk() == before | {new[0]}
