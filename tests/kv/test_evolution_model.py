"""Property test: random schema-change sequences interleaved with writes and compactions read
exactly like a plain model keyed by field id — compaction never changes what a reader sees.

The model knows nothing of lakeops: each row is a dict field-id -> value, the schema a list of
(id, name, kind); renames change names only, drops forget the id, adds get a fresh id (NULL in
every older row), widenings keep the values.
"""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.format.schema_change import AddColumn, DropColumn, RenameColumn, UpdateColumnType
from lakeops.format.types import DataType

_ARROW = {"INT": pa.int32(), "BIGINT": pa.int64(), "STRING": pa.string(), "DOUBLE": pa.float64()}


class Model:
    def __init__(self) -> None:
        self.fields: list[list] = [[0, "k", "BIGINT"], [1, "a", "INT"], [2, "b", "STRING"]]
        self.highest = 2
        self.rows: dict[int, dict[int, object]] = {}

    def names(self) -> list[str]:
        return [f[1] for f in self.fields]

    def arrow_schema(self) -> pa.Schema:
        return pa.schema([pa.field(n, _ARROW[t], nullable=(i != 0)) for i, n, t in self.fields])

    def expected(self) -> list[dict]:
        return [
            {name: row.get(fid) for fid, name, _ in self.fields}
            for _, row in sorted(self.rows.items())
        ]


def _value(rng: random.Random, kind: str) -> object:
    if rng.random() < 0.15:
        return None
    if kind == "INT":
        return rng.randrange(-(2**31), 2**31)
    if kind == "BIGINT":
        return rng.randrange(-(2**63), 2**63)
    if kind == "DOUBLE":
        return rng.choice([0.5, -1.25, 3.0e10, 7.0])
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(12))


def _step(rng: random.Random, model: Model, table, catalog: Catalog) -> object:
    op = rng.choice(["write", "write", "write", "alter", "alter", "compact"])
    values = [f for f in model.fields if f[0] != 0]
    if op == "write":
        keys = rng.sample(range(60), rng.randrange(1, 25))
        rows = {
            k: {fid: (k if fid == 0 else _value(rng, t)) for fid, _, t in model.fields}
            for k in keys
        }
        data = pa.table(
            {n: [rows[k][fid] for k in keys] for fid, n, _ in model.fields},
            schema=model.arrow_schema(),
        )
        table.write(data)
        model.rows.update(rows)
        return table
    if op == "compact":
        table.compact(full=rng.random() < 0.5)
        return table
    choice = rng.choice(["add", "rename", "drop", "widen"])
    used = set(model.names())
    if choice == "drop" and len(values) > 1:
        fid, name, _ = rng.choice(values)
        table.alter([DropColumn(name)])
        model.fields = [f for f in model.fields if f[0] != fid]
        for row in model.rows.values():
            row.pop(fid, None)
    elif choice == "rename" and values:
        field = rng.choice(values)
        new = rng.choice([n for n in ("a", "b", "c", "d", "e", "f") if n not in used] or ["z"])
        if new in used:
            return table
        table.alter([RenameColumn(field[1], new)])
        field[1] = new
    elif choice == "widen" and any(t == "INT" for _, _, t in values):
        field = rng.choice([f for f in values if f[2] == "INT"])
        table.alter([UpdateColumnType(field[1], DataType.parse("BIGINT"))])
        field[2] = "BIGINT"
    else:
        free = [n for n in ("a", "b", "c", "d", "e", "f") if n not in used]
        if not free:
            return table
        kind = rng.choice(["INT", "STRING", "DOUBLE"])
        name = rng.choice(free)
        table.alter([AddColumn(name, DataType.parse(kind))])
        model.highest += 1
        model.fields.append([model.highest, name, kind])
    # a second handle opened now sees the schema the alter published
    return catalog.get_table("db.t")


@pytest.mark.parametrize("seed", range(6))
def test_random_evolution_reads_like_the_model(catalog: Catalog, seed: int) -> None:
    rng = random.Random(seed)
    model = Model()
    table = catalog.create_table(
        "db.t",
        schema=model.arrow_schema(),
        primary_keys=["k"],
        options={"bucket": "2", "num-sorted-run.compaction-trigger": "3"},
    )
    for _ in range(30):
        table = _step(rng, model, table, catalog)
        got = table.read()
        assert got.column_names == model.names()
        assert got.sort_by("k").to_pylist() == model.expected()
    table.compact(full=True)
    assert catalog.get_table("db.t").read().sort_by("k").to_pylist() == model.expected()
