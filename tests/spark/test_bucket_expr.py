"""The JVM bucket expression agrees with Paimon's hash as implemented in numpy (itself checked
against Paimon's test vector and golden warehouses) on random and extreme keys, under ANSI mode."""

from __future__ import annotations

import datetime as dt
import random

import pyarrow as pa
import pytest

from lakeops.format.bucket_hash import assign_buckets
from lakeops.format.types import DataType
from lakeops.spark.bucket_expr import bucket_steps

_EXTREMES = {
    "BIGINT": [0, 1, -1, 2**31 - 1, -(2**31), 2**32, 2**63 - 1, -(2**63)],
    "INT": [0, 1, -1, 2**31 - 1, -(2**31), 65536],
    "SMALLINT": [0, 1, -1, 2**15 - 1, -(2**15)],
    "TINYINT": [0, 1, -1, 127, -128],
}


def _values(root: str, n: int, rng: random.Random) -> list:
    if root == "BOOLEAN":
        return [rng.random() < 0.5 for _ in range(n)]
    if root == "DATE":
        epoch = dt.date(1970, 1, 1)
        return [epoch + dt.timedelta(days=rng.randint(-719_000, 2_900_000)) for _ in range(n)]
    bits = {"BIGINT": 64, "INT": 32, "SMALLINT": 16, "TINYINT": 8}[root]
    extremes = _EXTREMES[root]
    rand = [rng.randint(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) for _ in range(n)]
    return (extremes * (n // len(extremes) + 1))[: n // 4] + rand[: n - n // 4]


@pytest.mark.spark
@pytest.mark.parametrize(
    ("roots", "buckets"),
    [
        (["BIGINT"], 4),
        (["BIGINT"], 7),
        (["INT"], 16),
        (["SMALLINT"], 3),
        (["TINYINT"], 5),
        (["BOOLEAN"], 2),
        (["DATE"], 10),
        (["INT", "BIGINT", "DATE"], 13),
    ],
)
def test_jvm_bucket_equals_paimon_hash(spark, roots: list[str], buckets: int) -> None:
    assert spark.conf.get("spark.sql.ansi.enabled") == "true"  # overflow would raise, not wrap
    rng = random.Random(hash((tuple(roots), buckets)))
    n = 3000
    types = [DataType.parse(f"{r} NOT NULL") for r in roots]
    names = [f"k{i}" for i in range(len(roots))]
    columns = [
        pa.array(_values(r, n, rng), t.to_arrow()) for r, t in zip(roots, types, strict=True)
    ]
    expected = assign_buckets(columns, types, buckets)

    steps = bucket_steps(names, types, buckets, "b")
    assert steps is not None and steps[-1][0] == "b"
    df = spark.createDataFrame(pa.table(dict(zip(names, columns, strict=True))))
    from pyspark.sql import functions as F

    for name, expr in steps:
        df = df.withColumn(name, F.expr(expr))
    got = df.select(*names, "b").toArrow()
    assert got.select(names).equals(pa.table(dict(zip(names, columns, strict=True))))
    assert got.column("b").to_pylist() == expected.tolist()


def test_other_key_types_fall_back_to_the_udf() -> None:
    assert bucket_steps(["s"], [DataType.parse("STRING NOT NULL")], 4, "b") is None
    assert bucket_steps(["d"], [DataType.parse("DECIMAL(10, 2) NOT NULL")], 4, "b") is None
