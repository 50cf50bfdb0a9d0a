"""Random filtered reads against pyarrow filtering a plain model: tables with and without a
primary key, partitions, buckets, bloom-filter and bitmap file indexes (in the manifest or in
their own files), deletion vectors, statistics modes down to none, Parquet, ORC and Avro, a
widened and an added column; files written and compacted by lakeops and by Java Paimon 0.9.
Every file, row-group or index that a read skips on the strength of statistics or an index must
hold no row the filter keeps, so each read must return exactly the model's rows."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lakeops import Catalog
from lakeops.format.schema_change import AddColumn, UpdateColumnType
from lakeops.format.types import DataType
from tests.interop.java_oracle import run_ops

pytestmark = pytest.mark.interop

Row = dict[str, Any]
STRINGS = ["", "a", "ab", "abc", "b", "zz", "é", "a" * 20, "a" * 20 + "b", "Z"]
DOUBLES = [-1.5, 0.0, 3.25, 10.0, 33.0]


def _predicate(
    rng: random.Random, columns: dict[str, str], model: pa.Table
) -> tuple[pc.Expression, str]:
    """A random predicate of up to three comparisons over ``columns`` (name -> type), its
    numbers mostly next to values the table holds (where pruning decides at a file's edge)."""

    def number(name: str) -> Any:
        held = [v for v in model.column(name).to_pylist() if v is not None]
        if held and rng.random() < 0.7:
            return rng.choice(held) + rng.choice([-1, 0, 1])
        return rng.choice(DOUBLES) if columns[name] == "DOUBLE" else rng.randint(-5, 40)

    def atom() -> tuple[pc.Expression, str]:
        name = rng.choice(sorted(columns))
        f = pc.field(name)
        if columns[name] == "STRING":
            kind, v = (
                rng.choice(["eq", "in", "null", "valid", "lt", "ge", "starts"]),
                rng.choice(STRINGS),
            )
            exprs = {
                "eq": f == v,
                "in": f.isin(rng.sample(STRINGS, 3)),
                "null": f.is_null(),
                "valid": f.is_valid(),
                "lt": f < v,
                "ge": f >= v,
                "starts": pc.starts_with(f, v),
            }
            return exprs[kind], f"{name} {kind} {v!r}"
        n = number(name)
        kind = rng.choice(["eq", "ne", "in", "lt", "gt", "le", "null", "between"])
        exprs = {
            "eq": f == n,
            "ne": f != n,
            "in": f.isin([number(name) for _ in range(3)]),
            "lt": f < n,
            "gt": f > n,
            "le": f <= n,
            "ge": f >= n,
            "null": f.is_null(),
            "between": (f >= n) & (f <= n + 7),
        }
        return exprs[kind], f"{name} {kind} {n}"

    expr, text = atom()
    for _ in range(rng.randint(0, 2)):
        other, more = atom()
        if rng.random() < 0.5:
            expr, text = expr & other, f"({text} and {more})"
        else:
            expr, text = expr | other, f"({text} or {more})"
    if rng.random() < 0.15:
        expr, text = ~expr, f"not {text}"
    return expr, text


class Run:
    """One random table written by both engines; ``model`` is its rows (by key, or a list)."""

    def __init__(self, warehouse: Path, classpath: str, seed: int) -> None:
        self.rng = rng = random.Random(seed)
        self.keyed, self.partitioned = rng.random() < 0.6, rng.random() < 0.5
        options = {"write-buffer-size": "256 kb"}
        if self.keyed:
            options["bucket"] = rng.choice(["1", "2"])
        else:
            options["bucket"] = rng.choice(["-1", "2"])
            if options["bucket"] == "2":
                options["bucket-key"] = "k"
        choices = {
            "file-index.bloom-filter.columns": ["v", "w", "v,w"],
            "file-index.bitmap.columns": ["w", "v"],
            "file-index.in-manifest-threshold": ["1", "100000"],
            "deletion-vectors.enabled": ["true"],
            "metadata.stats-mode": ["none", "counts", "full", "truncate(4)"],
            "fields.w.stats-mode": ["none", "truncate(2)", "full"],
            "file.format": ["orc", "avro"],
        }
        for option, values in choices.items():
            if rng.random() < 0.35:
                options[option] = rng.choice(values)
        self.columns = {"k": "INT", "v": "INT", "w": "STRING", "d": "DOUBLE"}
        if self.partitioned:
            self.columns = {"p": "STRING", **self.columns}
        self.keys = (["p", "k"] if self.partitioned else ["k"]) if self.keyed else []
        self.warehouse, self.classpath = warehouse, classpath
        fields = [
            {"name": c, "type": t + (" NOT NULL" if c in ("k", "p") else "")}
            for c, t in self.columns.items()
        ]
        create = {"op": "create", "table": "db.t", "fields": fields, "options": options}
        parts = ["p"] if self.partitioned else []
        self.java([{**create, "primary_keys": self.keys, "partition_keys": parts}])
        self.catalog = Catalog(str(warehouse))
        self.by_key: dict[tuple[Any, ...], Row] = {}
        self.appended: list[Row] = []
        self.added = 0
        self.trail = [f"seed {seed}: keyed {self.keyed}, partitioned {self.partitioned}, {options}"]

    def java(self, ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return run_ops(self.classpath, str(self.warehouse), ops)

    def schema(self) -> pa.Schema:
        return pa.schema(
            [
                pa.field(c, DataType.parse(t).to_arrow(), c not in ("k", "p"))
                for c, t in self.columns.items()
            ]
        )

    def rows(self) -> list[Row]:
        """A batch whose values cluster (narrow statistics per file, so that pruning decides
        at the edges of the ranges the predicates probe)."""
        rng = self.rng
        low, first = rng.randint(-5, 35), rng.randrange(len(STRINGS) - 2)
        out = []
        for _ in range(rng.randint(1, 30)):
            row = {
                "p": rng.choice("xy"),
                "k": rng.randint(0, 25),
                "v": rng.choice([None, rng.randint(low, low + 4)]),
                "w": rng.choice([None, *STRINGS[first : first + 3]]),
                "d": rng.choice([None, *DOUBLES[first % 4 : first % 4 + 2]]),
            }
            out.append({c: row.get(c) for c in self.columns})
        return out

    def remember(self, rows: list[Row]) -> None:
        for r in rows:
            if self.keyed:
                self.by_key[tuple(r[k] for k in self.keys)] = dict(r)
            else:
                self.appended.append(dict(r))

    def model(self) -> list[Row]:
        return list(self.by_key.values()) if self.keyed else self.appended

    def step(self) -> None:
        rng = self.rng
        op = rng.choices(
            ["ours", "java", "compact", "java_compact", "widen", "add", "delete"],
            [5, 5, 2, 2, 1, 1, 1],
        )[0]
        self.trail.append(op)
        table = self.catalog.get_table("db.t")
        if op == "ours":
            rows = self.rows()
            self.trail.append(f"  {rows}")
            table.write(pa.Table.from_pylist(rows, schema=self.schema()))
            self.remember(rows)
        elif op == "java":
            rows = self.rows()
            self.trail.append(f"  {rows}")
            self.java([{"op": "write", "table": "db.t", "rows": rows}])
            self.remember(rows)
        elif op == "compact":
            table.compact(full=rng.random() < 0.5)
        elif op == "java_compact":
            self.java([{"op": "compact", "table": "db.t"}])
        elif op == "widen" and self.columns["v"] == "INT":
            table.alter([UpdateColumnType(("v",), DataType.parse("BIGINT"))])
            self.columns["v"] = "BIGINT"
        elif op == "add":
            self.added += 1
            name = f"c{self.added}"
            table.alter([AddColumn((name,), DataType.parse("INT"))])
            self.columns[name] = "INT"
            for r in self.model():
                r[name] = None
        elif op == "delete" and self.keyed:
            gone = rng.sample(range(26), 4)
            self.trail.append(f"  k in {gone}")
            table.delete(pc.field("k").isin(gone))
            self.by_key = {k: r for k, r in self.by_key.items() if r["k"] not in gone}
        table = self.catalog.get_table("db.t")
        model = pa.Table.from_pylist(
            [{c: r.get(c) for c in self.columns} for r in self.model()], schema=self.schema()
        )
        for _ in range(8):
            expr, text = _predicate(rng, self.columns, model)
            expected = sorted(map(repr, model.filter(expr).to_pylist()))
            got = sorted(map(repr, table.read(filter=expr).to_pylist()))
            assert got == expected, f"read(filter={text})"


@pytest.mark.parametrize("seed", range(12))
def test_filtered_reads_match_the_filtered_model(
    tmp_path: Path, java_classpath: str, seed: int
) -> None:
    run = Run(tmp_path / "wh", java_classpath, seed)
    try:
        for _ in range(run.rng.randint(5, 10)):
            run.step()
    except AssertionError as failure:
        raise AssertionError("\n".join([*run.trail, str(failure)])) from None
