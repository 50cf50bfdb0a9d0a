"""``head`` and ``count``, checked against a plain model of the rows written: the last write of
each key for the primary-key table, every row for the append table, filtered by plain Python
predicates (SQL null semantics written out), at each snapshot."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from lakeops import Catalog
from lakeops.cli.main import app
from lakeops.table import Scan
from tests.cli.conftest import Cli

PK = "db.events"
LOG = "db.log"
TRACKED = "db.tracked"
EMPTY = "db.empty"

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.date32(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        pa.field("v", pa.float64()),
        pa.field("name", pa.string()),
        pa.field("ts", pa.timestamp("us")),
    ]
)
NAMES = ["plain", "it's", 'say "hi"', "a,b", None, "x y"]
DAYS = [dt.date(2024, 1, 1), dt.date(2024, 1, 2), dt.date(2024, 1, 3)]
COMMITS = 3

Row = dict[str, Any]


def commit_rows(c: int) -> list[Row]:
    """The rows of commit ``c`` (0-based): keys overlap the previous commit's."""
    out = []
    for day in DAYS[: 2 + min(c, 1)]:
        for i in range(c * 10, c * 10 + 30):
            out.append(
                {
                    "dt": day,
                    "id": i,
                    "v": None if i % 7 == 0 else i + c / 2,
                    "name": NAMES[(i + c) % len(NAMES)],
                    "ts": dt.datetime(2024, 1, 1) + dt.timedelta(hours=i, minutes=c),
                }
            )
    return out


def pk_model(commits: int) -> list[Row]:
    """The primary-key table after ``commits`` commits: the last row of every key."""
    state: dict[tuple[dt.date, int], Row] = {}
    for c in range(commits):
        for row in commit_rows(c):
            state[(row["dt"], row["id"])] = row
    return list(state.values())


def log_model(commits: int) -> list[Row]:
    """The append table after ``commits`` commits: every row."""
    return [row for c in range(commits) for row in commit_rows(c)]


MODELS: dict[str, Callable[[int], list[Row]]] = {PK: pk_model, LOG: log_model}


def plain(row: Row) -> Row:
    """A model row as the JSON output spells it (dates and times ISO 8601)."""
    return {k: v.isoformat() if isinstance(v, dt.date) else v for k, v in row.items()}


def ordered(rows: list[Row]) -> list[str]:
    """Rows as sorted JSON texts: a comparison independent of read order, duplicates kept."""
    return sorted(json.dumps(r, sort_keys=True) for r in rows)


class Warehouse:
    """The tables of this module, written once: their snapshots' commit times."""

    def __init__(self, root: Path) -> None:
        self.cli = Cli(root, CliRunner(env={"COLUMNS": "200"}))
        catalog = Catalog(str(root))
        catalog.create_database("db")
        options = {"bucket": "2", "write-only": "true"}
        pk = catalog.create_table(
            PK, schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"], options=options
        )
        log = catalog.create_table(
            LOG, schema=SCHEMA, partition_keys=["dt"], options={"write-only": "true"}
        )
        for c in range(COMMITS):
            data = pa.Table.from_pylist(commit_rows(c), schema=SCHEMA)
            pk.write(data)
            log.write(data)
            time.sleep(0.03)  # commit times at least 30 ms apart (for --as-of)
        for table in (pk, log):
            assert [s.id for s in table.snapshots()] == [1, 2, 3]
            table.create_tag("first", 1)
        self.times = {
            name: [s.time_millis for s in t.snapshots()] for name, t in ((PK, pk), (LOG, log))
        }
        tracked = catalog.create_table(
            TRACKED,
            schema=pa.schema([("id", pa.int64()), ("name", pa.string())]),
            options={"row-tracking.enabled": "true"},
        )
        tracked.write(pa.table({"id": [10, 11, 12, 13], "name": ["a", "b", "c", "d"]}))
        catalog.create_table(EMPTY, schema=SCHEMA, primary_keys=["dt", "id"])


@pytest.fixture(scope="module")
def wh(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    return Warehouse(tmp_path_factory.mktemp("read") / "wh")


# --------------------------------------------------------------------------- --where
WHERES: list[tuple[str, Callable[[Row], bool]]] = [
    ("id = 5", lambda r: r["id"] == 5),
    ("id != 5", lambda r: r["id"] != 5),
    ("id < 12", lambda r: r["id"] < 12),
    ("id <= 12", lambda r: r["id"] <= 12),
    ("id > 40", lambda r: r["id"] > 40),
    ("id >= 40", lambda r: r["id"] >= 40),
    ("v > 20.5", lambda r: r["v"] is not None and r["v"] > 20.5),
    ("v <> 3", lambda r: r["v"] is not None and r["v"] != 3),
    ("name = 'it''s'", lambda r: r["name"] == "it's"),
    ("name IN ('a,b', 'say \"hi\"')", lambda r: r["name"] in ("a,b", 'say "hi"')),
    ("name NOT IN ('plain')", lambda r: r["name"] is not None and r["name"] != "plain"),
    ("name IS NULL", lambda r: r["name"] is None),
    ("v IS NOT NULL AND name IS NOT NULL", lambda r: None not in (r["v"], r["name"])),
    ("dt = '2024-01-02'", lambda r: r["dt"] == dt.date(2024, 1, 2)),
    (
        "dt >= '2024-01-02' AND id < 15",
        lambda r: r["dt"] >= dt.date(2024, 1, 2) and r["id"] < 15,
    ),
    ("ts < '2024-01-01 12:00:00'", lambda r: r["ts"] < dt.datetime(2024, 1, 1, 12)),
    ("NOT (id < 30) OR name IS NULL", lambda r: r["id"] >= 30 or r["name"] is None),
    (
        "(dt = '2024-01-01' OR dt = '2024-01-03') AND NOT v IS NULL",
        lambda r: r["dt"] in (DAYS[0], DAYS[2]) and r["v"] is not None,
    ),
    ('"id" IN (1, 2, 3, 100)', lambda r: r["id"] in (1, 2, 3)),
    ("NOT (v < 10)", lambda r: r["v"] is not None and not r["v"] < 10),
]


@pytest.mark.parametrize("table", [PK, LOG])
@pytest.mark.parametrize(("where", "predicate"), WHERES, ids=[w for w, _ in WHERES])
def test_where_matches_the_model(
    wh: Warehouse, table: str, where: str, predicate: Callable[[Row], bool]
) -> None:
    expected = [plain(r) for r in MODELS[table](COMMITS) if predicate(r)]
    counted = wh.cli.json("count", table, "--where", where)
    assert counted == {"table": table, "rows": len(expected), "snapshot": 3}
    shown = wh.cli.json("head", table, "--where", where, "-n", "100000")
    assert ordered(shown["rows"]) == ordered(expected)
    assert shown["more"] is False and shown["snapshot"] == 3


def test_every_where_case_keeps_some_rows_and_drops_some() -> None:
    """The cases above can fail: none keeps nothing or everything of both tables."""
    for where, predicate in WHERES:
        for model in MODELS.values():
            rows = model(COMMITS)
            assert 0 < sum(map(predicate, rows)) < len(rows), where


# ------------------------------------------------------------------------------ head
@pytest.mark.parametrize("table", [PK, LOG])
def test_head_without_options_is_all_rows_up_to_n(wh: Warehouse, table: str) -> None:
    model = [plain(r) for r in MODELS[table](COMMITS)]
    everything = wh.cli.json("head", table, "-n", str(len(model) + 50))  # -n beyond the table
    assert ordered(everything["rows"]) == ordered(model)
    assert everything["more"] is False
    assert [c["name"] for c in everything["columns"]] == SCHEMA.names
    assert everything["columns"][0]["type"] == "date32[day]"
    first = wh.cli.json("head", table)
    assert len(first["rows"]) == 10 and first["more"] is True
    assert first["rows"] == everything["rows"][:10]  # the first rows, in read order
    exact = wh.cli.json("head", table, "-n", str(len(model)))
    assert len(exact["rows"]) == len(model) and exact["more"] is False
    none = wh.cli.json("head", table, "-n", "0")
    assert none["rows"] == [] and none["more"] is True


def test_head_columns_in_the_order_asked(wh: Warehouse) -> None:
    out = wh.cli.json("head", PK, "--columns", "name, id", "--where", "id = 3", "-n", "99")
    assert [c["name"] for c in out["columns"]] == ["name", "id"]
    expected = [{"name": r["name"], "id": r["id"]} for r in pk_model(COMMITS) if r["id"] == 3]
    assert ordered(out["rows"]) == ordered(expected)


def test_head_human_output(wh: Warehouse) -> None:
    result = wh.cli.ok("head", PK, "-n", "3", "--where", "name = 'it''s'")
    lines = result.stdout.splitlines()
    assert lines[0] == f"{PK} (snapshot 3): first 3 row(s)"
    assert sum("it's" in line for line in lines) == 3
    for name in SCHEMA.names:
        assert name in result.stdout
    result = wh.cli.ok("head", PK, "--where", "id = 44")
    assert result.stdout.splitlines()[0] == f"{PK} (snapshot 3): all 3 row(s)"
    assert "2024-01-03" in result.stdout and "│ null │" in result.stdout  # name of id 44
    result = wh.cli.ok("head", PK, "--where", "id > 1000")
    assert result.stdout.strip() == f"no rows matching --where in {PK} (snapshot 3)"


def test_head_csv_parses_back_to_the_model(wh: Warehouse) -> None:
    where = "dt = '2024-01-01' AND id < 20"
    result = wh.cli.ok("head", LOG, "--csv", "-n", "1000", "--where", where)
    reader = csv.DictReader(io.StringIO(result.stdout))
    assert reader.fieldnames == SCHEMA.names
    got = [
        {
            "dt": dt.date.fromisoformat(r["dt"]),
            "id": int(r["id"]),
            "v": float(r["v"]) if r["v"] else None,
            "name": r["name"] or None,  # null is an empty field
            "ts": dt.datetime.fromisoformat(r["ts"]),
        }
        for r in reader
    ]
    expected = [r for r in log_model(COMMITS) if r["dt"] == DAYS[0] and r["id"] < 20]
    assert ordered([plain(r) for r in got]) == ordered([plain(r) for r in expected])
    assert {r["name"] for r in got} >= {"it's", 'say "hi"', "a,b", None}


def test_head_csv_of_no_rows_is_the_header(wh: Warehouse) -> None:
    result = wh.cli.ok("head", PK, "--csv", "--columns", "id,name", "--where", "id < 0")
    assert result.stdout == '"id","name"\n'


def test_head_stops_reading_early(wh: Warehouse, monkeypatch: pytest.MonkeyPatch) -> None:
    pulled: list[int] = []
    original = Scan.to_batches

    def counting(self: Scan, **kwargs: Any) -> Iterator[pa.RecordBatch]:
        for batch in original(self, **kwargs):
            pulled.append(batch.num_rows)
            yield batch

    monkeypatch.setattr(Scan, "to_batches", counting)
    assert len(wh.cli.json("head", PK, "-n", "1")["rows"]) == 1
    assert len(pulled) == 1
    pulled.clear()
    assert wh.cli.json("count", PK)["rows"] == len(pk_model(COMMITS))
    assert len(pulled) >= 6  # 3 partitions x 2 buckets: count read them all


# ----------------------------------------------------------------------------- count
@pytest.mark.parametrize("table", [PK, LOG])
def test_count_human_and_json(wh: Warehouse, table: str) -> None:
    total = len(MODELS[table](COMMITS))
    assert wh.cli.json("count", table) == {"table": table, "rows": total, "snapshot": 3}
    assert wh.cli.ok("count", table).stdout.strip() == f"{total:,} row(s) in {table} (snapshot 3)"
    text = wh.cli.ok("count", table, "--where", "id = 5").stdout.strip()
    assert text.endswith(f"row(s) matching --where in {table} (snapshot 3)")


def test_count_reads_one_narrow_column(wh: Warehouse, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, ...]] = []
    original = Scan.to_batches

    def recording(self: Scan, **kwargs: Any) -> Iterator[pa.RecordBatch]:
        seen.append(self.columns)
        return original(self, **kwargs)

    monkeypatch.setattr(Scan, "to_batches", recording)
    wh.cli.json("count", PK)
    wh.cli.json("count", LOG)
    wh.cli.json("count", LOG, "--where", "name IS NULL")
    # a key of the primary-key table; the narrowest column; the filter's own column
    assert seen == [("dt",), ("dt",), ("name",)]


# ----------------------------------------------------------------------- time travel
@pytest.mark.parametrize("table", [PK, LOG])
def test_time_travel(wh: Warehouse, table: str) -> None:
    model = MODELS[table]
    times = wh.times[table]

    def check(args: list[str], commits: int, snapshot: int | None) -> None:
        expected = [plain(r) for r in model(commits) if r["id"] >= 25]
        where = ["--where", "id >= 25"]
        counted = wh.cli.json("count", table, *args, *where)
        assert counted == {"table": table, "rows": len(expected), "snapshot": snapshot}, args
        shown = wh.cli.json("head", table, *args, *where, "-n", "5000")
        assert ordered(shown["rows"]) == ordered(expected), args
        assert shown["snapshot"] == snapshot

    check(["--snapshot", "1"], 1, 1)
    check(["--snapshot", "2"], 2, 2)
    check(["--tag", "first"], 1, 1)
    check(["--as-of", str(times[1])], 2, 2)  # epoch millis: at or before
    check(["--as-of", str(times[2] - 1)], 2, 2)
    utc = dt.datetime.fromtimestamp((times[0] + 5) / 1000, dt.UTC)
    check(["--as-of", utc.isoformat()], 1, 1)
    local = dt.datetime.fromtimestamp((times[1] + 5) / 1000)  # no offset: local time
    check(["--as-of", local.isoformat()], 2, 2)
    check(["--as-of", str(times[0] - 1)], 0, None)  # before the first snapshot: empty
    assert model(1) != model(2) != model(3)


# ----------------------------------------------------------------- system and empty tables
def test_system_columns_of_a_row_tracking_table(wh: Warehouse) -> None:
    out = wh.cli.json("head", TRACKED, "--columns", "id,_ROW_ID", "--where", "_ROW_ID >= 2")
    assert sorted(map(tuple, (r.values() for r in out["rows"]))) == [(12, 2), (13, 3)]
    assert wh.cli.json("count", TRACKED, "--where", "_ROW_ID IN (0, 3)")["rows"] == 2
    assert [c["name"] for c in wh.cli.json("head", TRACKED)["columns"]] == ["id", "name"]


def test_a_table_never_written(wh: Warehouse) -> None:
    assert wh.cli.json("count", EMPTY) == {"table": EMPTY, "rows": 0, "snapshot": None}
    out = wh.cli.json("head", EMPTY)
    assert out["rows"] == [] and out["snapshot"] is None and out["more"] is False
    assert wh.cli.ok("head", EMPTY).stdout.strip() == f"no rows in {EMPTY} (no snapshot yet)"
    assert wh.cli.ok("count", EMPTY).stdout.strip() == f"0 row(s) in {EMPTY} (no snapshot yet)"


# ---------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["head", PK, "--where", "id = "], ["--where: at the end of the expression"]),
        (["count", PK, "--where", "nope = 1"], ["position 1", "unknown column 'nope'"]),
        (["head", PK, "--where", "dt = 5"], ["5 does not fit column 'dt'"]),
        (["head", PK, "--where", "name = 'x"], ["unterminated string"]),
        (["count", LOG, "--where", "id IN (1,"], ["expected a value"]),
        (["head", PK, "--snapshot", "99"], ["snapshot 99 does not exist", "kept: 1 to 3"]),
        (["count", LOG, "--snapshot", "99"], ["snapshot 99 does not exist"]),
        (["count", PK, "--tag", "nope"], ["tag 'nope' does not exist"]),
        (["head", "db.nope"], ["table 'db.nope' does not exist"]),
        (["count", "db.nope"], ["table 'db.nope' does not exist"]),
        (["head", PK, "--snapshot", "1", "--tag", "first"], ["--snapshot and --tag", "one"]),
        (["count", PK, "--tag", "first", "--as-of", "0"], ["--tag and --as-of"]),
        (["head", PK, "--as-of", "soon"], ["--as-of 'soon'", "ISO 8601"]),
        (["head", PK, "--columns", "id,zz"], ["unknown column(s) zz"]),
        (["head", PK, "--columns", "id,,v"], ["empty column name"]),
        (["head", PK, "--columns", "id,id"], ["names id more than once"]),
        (["head", PK, "--csv", "--json"], ["--csv and --json"]),
        (["head", PK, "-n", "-1"], ["-n"]),
        (["head", TRACKED, "--columns", "_ROW_ID", "--csv", "--where", "id = "], ["--where"]),
    ],
)
def test_errors_are_one_line(wh: Warehouse, args: list[str], says: list[str]) -> None:
    result = wh.cli(*args)
    assert result.exit_code == 1, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for part in says:
        assert part in lines[0], (part, lines[0])
    assert "Traceback" not in result.output and result.stdout == ""


def test_csv_refuses_nested_columns(tmp_path: Path) -> None:
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("tags", pa.list_(pa.string()))])
    catalog.create_table("db.nested", schema=schema).write(
        pa.table({"id": [1], "tags": [["a", "b"]]}, schema=schema)
    )
    cli = Cli(tmp_path, CliRunner())
    result = cli("head", "db.nested", "--csv")
    assert result.exit_code == 1 and "nested column(s) tags" in result.stderr
    assert cli.ok("head", "db.nested", "--csv", "--columns", "id").stdout == '"id"\n1\n'
    assert cli.json("head", "db.nested")["rows"] == [{"id": 1, "tags": ["a", "b"]}]
    assert cli.json("count", "db.nested", "--where", "tags IS NOT NULL")["rows"] == 1


@pytest.mark.parametrize("command", ["head", "count"])
def test_help(command: str) -> None:
    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert f"Usage: lakeops {command}" in text and "--where" in text and "--as-of" in text
    for placeholder in ("<bool>", "<str>", "<int>"):
        assert placeholder not in result.stdout
