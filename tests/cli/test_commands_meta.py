"""``meta`` and ``tag``: the metadata tables and tags through the CLI, checked against the
library's tables and tags and against what the test wrote."""

from __future__ import annotations

import datetime as dt
import json

from typer.testing import Result

from lakeops.table.system_tables import SYSTEM_TABLES
from tests.cli.conftest import Cli


def test_meta_json_is_the_metadata_table(cli: Cli, loaded: str) -> None:
    for name in SYSTEM_TABLES:
        expected = cli.table().metadata_table(name)
        out = cli.json("meta", loaded, name)
        assert out["metadata_table"] == name and out["row_count"] == expected.num_rows
        assert [c["name"] for c in out["columns"]] == expected.schema.names
        # the same rows, times as ISO strings
        rows = json.loads(json.dumps(expected.to_pylist(), default=lambda v: v.isoformat()))
        assert out["rows"] == rows, name


def test_meta_paimon_spelling_snapshot_and_limit(cli: Cli, loaded: str) -> None:
    files1 = cli.json("meta", f"{loaded}$files", "--snapshot", "1")
    assert sum(r["record_count"] for r in files1["rows"]) == 130  # the first write's rows
    snaps = cli.json("meta", loaded, "snapshots", "--limit", "1")
    assert snaps["row_count"] == 3 and [r["snapshot_id"] for r in snaps["rows"]] == [1]
    text = cli.ok("meta", loaded, "options").stdout
    assert "write-only" in text and "db.orders$options (2" in " ".join(text.split())
    wide = cli.ok("meta", loaded, "snapshots").stdout  # more columns than fit: one table a row
    assert "row 3" in wide and "commit_kind" in wide and "APPEND" in wide


ERRORS = [
    (["db.orders", "file"], "unknown metadata table 'file'; the known ones are snapshots,"),
    (["db.orders"], "name the metadata table: one of snapshots"),
    (["db.orders$files", "files"], "already names a metadata table"),
    (["db.order", "files"], "did you mean db.orders?"),
    (["db.orders", "tags", "--snapshot", "1"], "takes no snapshot_id"),
]


def test_meta_errors_are_one_line(cli: Cli, orders: str) -> None:
    for args, message in ERRORS:
        result = cli("meta", *args)
        assert result.exit_code == 1
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines


def test_tag_create_list_delete(cli: Cli, loaded: str) -> None:
    assert cli.json("tag", "create", loaded, "first", "--snapshot", "1") == {
        "table": loaded,
        "tag": "first",
        "snapshot_id": 1,
    }
    cli.ok("tag", "create", loaded, "week", "--time-retained", "7 d")
    tags = cli.table().tags()
    assert [(t.name, t.snapshot.id) for t in tags] == [("first", 1), ("week", 3)]
    listed = cli.json("tag", "list", loaded)["tags"]
    assert [(t["tag_name"], t["snapshot_id"], t["time_retained"]) for t in listed] == [
        ("first", 1, None),
        ("week", 3, "PT168H"),
    ]
    assert "tagged snapshot" not in cli.ok("tag", "list", loaded).stdout
    assert "deleted tag first (snapshot 1)" in cli.ok("tag", "delete", loaded, "first").stdout
    assert [t.name for t in cli.table().tags()] == ["week"]
    result = cli("tag", "delete", loaded, "first")
    assert result.exit_code == 1 and result.stderr.startswith("error: tag 'first' does not exist")
    result = cli("tag", "create", loaded, "x", "--snapshot", "9")
    assert result.exit_code == 1 and len(result.stderr.strip().splitlines()) == 1


def test_tag_list_of_a_table_without_tags(cli: Cli, orders: str) -> None:
    assert cli.json("tag", "list", orders)["tags"] == []
    assert "has no tags" in cli.ok("tag", "list", orders).stdout


def test_describe_shows_the_metadata_tables(cli: Cli, loaded: str) -> None:
    table = cli.table()
    table.create_tag("t1", 2)
    out = cli.json("describe", loaded)
    assert [t["name"] for t in out["tags"]] == ["t1"] and out["tags"][0]["snapshot_id"] == 2
    assert out["schemas"][0]["id"] == 0 and out["schema_id"] == 0
    snaps = table.metadata_table("snapshots").to_pylist()
    assert out["snapshots"][0]["commit_time"] == snaps[-1]["commit_time"].isoformat(
        timespec="milliseconds"
    )
    text = cli.ok("describe", loaded).stdout
    assert "tags" in text and "t1" in text and "committed (local)" in text


def test_a_hostile_tag_name_is_one_clear_line(cli: Cli, loaded: str) -> None:
    for args in (("create", loaded, "t" * 300), ("delete", loaded, "t" * 300)):
        result = cli("tag", *args)
        assert result.exit_code == 1
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "over the limit of 200" in lines[0], lines
    result = cli("tag", "delete", loaded, "a\x00b")
    assert result.exit_code == 1 and "control character (U+0000)" in result.stderr


def _one_error_line(result: Result, message: str) -> None:
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines


def test_tag_create_as_of_rename_replace_and_expire(cli: Cli, loaded: str) -> None:
    times = [s.time_millis for s in cli.table().snapshots()]
    assert cli.json("tag", "create", loaded, "first", "--as-of", "0") == {
        "table": loaded,
        "tag": "first",
        "snapshot_id": 1,
    }
    assert cli.json("tag", "create", loaded, "second", "--as-of", str(times[1]))[
        "snapshot_id"
    ] == min(i for i, t in enumerate(times, 1) if t >= times[1])
    out = cli.ok("tag", "create", loaded, "old", "--as-of", "2000-01-01T00:00:00+00:00")
    assert f"tagged snapshot 1 of {loaded} as old" in out.stdout
    _one_error_line(cli("tag", "create", loaded, "x", "--as-of", "2999-01-01 00:00"), "at or after")
    _one_error_line(cli("tag", "create", loaded, "x", "--as-of", "yesterday"), "neither epoch")
    _one_error_line(cli("tag", "create", loaded, "x", "--snapshot", "1", "--as-of", "0"), "both")

    assert cli.json("tag", "rename", loaded, "first", "renamed") == {
        "table": loaded,
        "tag": "renamed",
        "old_name": "first",
        "snapshot_id": 1,
    }
    out = cli.ok("tag", "rename", loaded, "old", "older")
    assert f"renamed tag old of {loaded} to older (snapshot 1)" in out.stdout
    _one_error_line(cli("tag", "rename", loaded, "renamed", "second"), "already exists")
    _one_error_line(cli("tag", "rename", loaded, "nope", "x"), "tag 'nope' does not exist")

    assert cli.json("tag", "replace", loaded, "renamed", "--snapshot", "2")["snapshot_id"] == 2
    out = cli.ok("tag", "replace", loaded, "older", "--time-retained", "1 d")
    assert f"tag older of {loaded} now names snapshot 3" in out.stdout
    _one_error_line(cli("tag", "replace", loaded, "nope"), "tag 'nope' does not exist")
    tags = cli.table().tags()
    assert {t.name: t.snapshot.id for t in tags} == {"renamed": 2, "second": 2, "older": 3}
    assert next(t for t in tags if t.name == "older").time_retained == dt.timedelta(days=1)

    assert cli.json("tag", "expire", loaded) == {"table": loaded, "expired_tags": []}
    assert f"no tag of {loaded} expired" in cli.ok("tag", "expire", loaded).stdout
    _one_error_line(cli("tag", "expire", loaded, "--older-than", "soon"), "neither epoch")
    expired = cli.json("tag", "expire", loaded, "--older-than", "2999-01-01 00:00")
    assert sorted(expired["expired_tags"]) == ["older", "renamed", "second"]
    assert cli.table().tags() == []


def test_consumers_list_reset_and_clear(cli: Cli, loaded: str) -> None:
    """``consumers`` (list, the default), ``consumer reset`` and ``consumers clear`` against
    the library's consumers and what the commands were told."""
    assert cli.json("consumers", loaded) == {"table": loaded, "consumers": []}
    assert f"{loaded} has no consumers" in cli.ok("consumers", loaded).stdout
    assert cli.json("consumer", "reset", loaded, "flink-a", "--next-snapshot", "2") == {
        "table": loaded,
        "consumer_id": "flink-a",
        "next_snapshot": 2,
    }
    out = cli.ok("consumer", "reset", loaded, "flink-b", "--next-snapshot", "4")  # latest + 1
    assert f"consumer flink-b of {loaded} reads snapshot 4 next" in out.stdout
    cli.ok("consumer", "reset", loaded, "spark-a", "--next-snapshot", "1")
    listed = cli.json("consumers", "list", loaded)["consumers"]
    assert listed == cli.table().metadata_table("consumers").to_pylist()
    assert {c["consumer_id"]: c["next_snapshot_id"] for c in listed} == {
        "flink-a": 2,
        "flink-b": 4,
        "spark-a": 1,
    }
    text = cli.ok("consumers", loaded).stdout
    assert "consumers of" in text and "flink-b" in text and "next_snapshot_id" in text

    _one_error_line(cli("consumer", "reset", loaded, "x", "--next-snapshot", "9"), "not on storage")
    _one_error_line(cli("consumer", "reset", loaded, "../x"), "consumer id")
    _one_error_line(cli("consumers", "clear", loaded, "--including", "("), "not a regular exp")
    assert cli.json("consumers", "clear", loaded, "--including", "flink-.*", "--excluding", ".*b")[
        "cleared_consumers"
    ] == ["flink-a"]
    out = cli.ok("consumers", "clear", loaded, "--including", "nothing")
    assert f"no consumer of {loaded} matched" in out.stdout
    out = cli.ok("consumer", "reset", loaded, "spark-a")  # no --next-snapshot: deleted
    assert f"deleted consumer spark-a of {loaded}" in out.stdout
    out = cli.ok("consumers", "clear", loaded)
    assert f"cleared consumers of {loaded}: flink-b" in out.stdout
    assert cli.table().metadata_table("consumers").num_rows == 0
    assert "Usage: lakeops consumers" in cli.ok("consumers", "--help").stdout
