"""The branch commands against the library's own view of the table: create from a tag or
snapshot, list, fast-forward (confirmed or --yes), delete; errors exit non-zero, one line."""

from __future__ import annotations

from tests.cli.conftest import Cli, sorted_rows


def test_branch_commands(cli: Cli, loaded: str) -> None:
    table = cli.table()
    first = sorted_rows(table.read(snapshot_id=1))
    cli.ok("tag", "create", loaded, "t1", "--snapshot", "1")
    out = cli.json("branch", "create", loaded, "dev", "--tag", "t1")
    assert out["branch"] == "dev"
    cli.ok("branch", "create", loaded, "s2", "--snapshot", "2")
    listed = cli.json("branch", "list", loaded)
    assert [b["name"] for b in listed["branches"]] == ["dev", "s2"]
    assert "dev" in cli.ok("branch", "list", loaded).stdout
    assert sorted_rows(cli.table(f"{loaded}$branch_dev").read()) == first
    refused = cli("branch", "fast-forward", loaded, "dev", input="n\n")
    assert refused.exit_code != 0 and len(cli.table().snapshots()) == 3
    done = cli.json("branch", "fast-forward", loaded, "dev", "--yes")
    assert done["snapshot_id"] == 1
    assert sorted_rows(cli.table().read()) == first
    cli.ok("branch", "delete", loaded, "s2")
    assert [b.name for b in cli.table().branches()] == ["dev"]
    bad = cli("branch", "create", loaded, "main")
    assert bad.exit_code != 0 and "main branch" in bad.stderr
    missing = cli("branch", "delete", loaded, "nope")
    assert missing.exit_code != 0 and "does not exist" in missing.stderr
