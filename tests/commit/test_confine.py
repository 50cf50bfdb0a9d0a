"""Maintenance and reads never follow crafted metadata outside the table (issue 24).

A table whose metadata was written by someone else (a Flink job, a shared bucket) names a data
file ``../../../../victim/data_victim``, a manifest ``../../../../victim/manifest_victim`` or an
``_EXTERNAL_PATH`` outside the roots its ``data-file.external-paths`` declares. Expiry, orphan
cleanup, rollback and reads must each refuse with an error naming the entry, and a victim
directory beside the warehouse must stay byte-identical. The crafted metadata is written with
lakeops' own spec writers (the model is "the victim's bytes before"; the attack deletes or copies
them on a lakeops that follows the names).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

from lakeops import Catalog
from lakeops.errors import ConfigurationError, CorruptTableError, UnsupportedFeatureError
from lakeops.format import paths
from lakeops.format.data_file import SimpleStats
from lakeops.format.manifest import (
    FileKind,
    ManifestEntry,
    ManifestFileMeta,
    write_manifest,
    write_manifest_list,
)
from lakeops.store import TableStore

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64())])
UP = "../../../../victim/"  # from <wh>/db.db/t/bucket-0 and <wh>/db.db/t/manifest: <tmp>/victim


def _manifest(store: TableStore, entries: list[ManifestEntry]) -> ManifestFileMeta:
    name = paths.manifest_name()
    data = write_manifest(entries)
    store.file_io.write_bytes(store.path(paths.manifest_path(name)), data)
    adds = sum(e.kind == FileKind.ADD for e in entries)
    return ManifestFileMeta(name, len(data), adds, len(entries) - adds, SimpleStats(), 0)


def _list(store: TableStore, metas: list[ManifestFileMeta]) -> str:
    name = paths.manifest_list_name()
    store.file_io.write_bytes(store.path(paths.manifest_path(name)), write_manifest_list(metas))
    return name


def _publish(store: TableStore, base: str, delta: str) -> int:
    latest = store.latest_snapshot()
    assert latest is not None
    snapshot = dataclasses.replace(
        latest, id=latest.id + 1, base_manifest_list=base, delta_manifest_list=delta
    )
    store.file_io.write_bytes(
        store.path(paths.snapshot_path(snapshot.id)), snapshot.to_json().encode()
    )
    return snapshot.id


def _tree(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes() for p in directory.rglob("*") if p.is_file()
    }


@pytest.mark.parametrize("attack", ["data_victim", "manifest_victim", "ext_victim"])
def test_crafted_metadata_never_reaches_outside_the_table(warehouse: Path, attack: str) -> None:
    victim = warehouse.parent / "victim"
    victim.mkdir()
    (victim / "data_victim").write_bytes(b"victim data")
    (victim / "ext_victim").write_bytes(b"victim external file")
    # a valid (empty) manifest, so a reader that follows the name finds something to delete
    (victim / "manifest_victim").write_bytes(write_manifest([]))
    before = _tree(victim)

    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    declared = warehouse.parent / "ext"  # the table's only external root
    table = catalog.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["id"],
        options={"bucket": "1", "data-file.external-paths": f"file:{declared}"},
    )
    for i in range(3):
        table.write(pa.table({"id": [i, i + 1], "v": [i, i]}, schema=SCHEMA))
    store = table.store
    three = store.latest_snapshot()
    assert three is not None and three.id == 3
    carried = store.manifest_list(three.base_manifest_list) + store.manifest_list(
        three.delta_manifest_list
    )

    # snapshot 4 adds the crafted entry (or names the crafted manifest); snapshot 5 deletes it
    # again, so expiry of 1..4 has it to delete
    if attack == "manifest_victim":
        bad = dataclasses.replace(carried[0], file_name=UP + "manifest_victim")
        _publish(store, _list(store, carried), _list(store, [bad]))
        _publish(store, _list(store, carried), _list(store, []))
    else:
        real = store.live_entries(three)[0]  # a real entry, its file renamed or moved
        crafted = (
            dataclasses.replace(real.file, file_name=UP + "data_victim")
            if attack == "data_victim"
            else dataclasses.replace(real.file, external_path=f"file:{victim}/ext_victim")
        )
        add = dataclasses.replace(real, kind=FileKind.ADD, file=crafted)
        delete = dataclasses.replace(add, kind=FileKind.DELETE)
        _publish(store, _list(store, carried), _list(store, [_manifest(store, [add])]))
        _publish(store, _list(store, carried), _list(store, [_manifest(store, [delete])]))
    refused = UnsupportedFeatureError if attack == "ext_victim" else CorruptTableError
    names = rf"{attack}.*data-file\.external-paths" if attack == "ext_victim" else attack

    with pytest.raises(refused, match=names):
        table.read(snapshot_id=4)
    with pytest.raises(refused, match=names):
        table.expire_snapshots(retain_min=1, retain_max=1, time_retained="0 ms")
    with pytest.raises(refused, match=names):
        table.remove_orphan_files(older_than=dt.timedelta(days=1))
    with pytest.raises(refused, match=names):
        table.rollback_to(4)
    assert _tree(victim) == before
    assert store.snapshot_ids() == [1, 2, 3, 4, 5]  # nothing expired, nothing committed


@pytest.mark.parametrize("directory", ["/abs", "../up", "file:/x"])
def test_a_path_directory_outside_the_table_is_refused_before_writing(
    warehouse: Path, directory: str
) -> None:
    """Paimon resolves ``data-file.path-directory`` against the table root as a URI, so these
    would put its files outside the table: create_table refuses them and writes nothing."""
    catalog = Catalog(str(warehouse))
    catalog.create_database("db")
    before = sorted(p.relative_to(warehouse) for p in warehouse.rglob("*"))
    with pytest.raises(ConfigurationError, match=r"data-file\.path-directory"):
        catalog.create_table(
            "db.t",
            schema=SCHEMA,
            primary_keys=["id"],
            options={"bucket": "1", "data-file.path-directory": directory},
        )
    assert sorted(p.relative_to(warehouse) for p in warehouse.rglob("*")) == before
