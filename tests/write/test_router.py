"""Routing records to (partition, bucket) groups, against a plain model: every input row lands
in exactly one group, each group holds one partition value and one bucket, its rows keep their
input order, and dynamic-bucket hashes stay aligned with their rows."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.format.bucket_hash import hash_rows
from lakeops.write.records import to_records
from lakeops.write.router import Router

SCHEMA = pa.schema([("p", pa.string()), ("id", pa.int64()), ("n", pa.int64())])


@pytest.mark.parametrize("bucket", ["4", "-1"])
def test_groups_partition_and_bucket_in_input_order(catalog: Catalog, bucket: str) -> None:
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["p", "id"],
        partition_keys=["p"],
        options={"bucket": bucket, "dynamic-bucket.target-row-num": "7"},
    )
    rng = random.Random(3)
    size = 200
    data = pa.table(
        {
            "p": [rng.choice(["a", "b", "c"]) for _ in range(size)],
            "id": [rng.randrange(60) for _ in range(size)],
            "n": list(range(size)),  # the input position of each row
        },
        schema=SCHEMA,
    )
    records = to_records(data, table.schema, table.options)
    router = Router(table.context, table.latest_snapshot())
    groups = router.route(records)

    seen: list[int] = []
    keys = set()
    for g in groups:
        keys.add((g.partition, g.bucket))
        positions = g.records["n"].to_pylist()
        assert positions == sorted(positions)  # input order kept within the group
        assert set(g.records["p"].to_pylist()) == {g.partition[0]}
        seen += positions
        if bucket == "-1":
            assert g.key_hashes is not None
            keys_ = table.schema.bucket_keys
            expected = hash_rows([g.records.column(k) for k in keys_], table.schema.types_of(keys_))
            np.testing.assert_array_equal(g.key_hashes, expected)
            assert g.bucket >= 0
        else:
            assert g.key_hashes is None
            assert 0 <= g.bucket < 4
    assert sorted(seen) == list(range(size))  # every row exactly once
    assert len(keys) == len(groups)  # one group per (partition, bucket)
    if bucket == "-1":  # 7 rows per bucket at most: every partition needed several buckets
        per_partition: dict[object, set[int]] = {}
        for g in groups:
            per_partition.setdefault(g.partition, set()).add(g.bucket)
        assert all(len(b) > 1 for b in per_partition.values())
