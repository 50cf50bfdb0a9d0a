"""Snapshot files written by pypaimon 2.1 and Java Paimon 0.9 (the golden warehouses) read with
:mod:`lakeops.format.snapshot` and written back: every field lakeops models keeps its JSON key and
value; the few it does not model are named, and nothing else is dropped or added."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lakeops.errors import CorruptTableError
from lakeops.format.snapshot import Snapshot
from tests.conftest import GOLDEN

FILES = sorted(p for p in GOLDEN.rglob("snapshot-*") if p.parent.name == "snapshot")
#: keys lakeops reads past and does not write (Paimon's readers default every one of them)
NOT_KEPT = {"uuid", "writerVersion", "logOffsets"}


def test_the_golden_warehouses_hold_snapshots_of_both_writers() -> None:
    writers = {json.loads(p.read_text()).get("logOffsets") is not None for p in FILES}
    assert len(FILES) >= 20 and writers == {True, False}  # Java writes logOffsets, pypaimon not


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(GOLDEN)))
def test_paimon_snapshot_round_trips_field_by_field(path: Path) -> None:
    original = json.loads(path.read_text())
    snapshot = Snapshot.from_json(path.read_text())
    written = json.loads(snapshot.to_json())
    # nulls are omitted (both readers take a missing key as null); everything else is kept
    assert written == {k: v for k, v in original.items() if v is not None and k not in NOT_KEPT}
    assert Snapshot.from_json(snapshot.to_json()) == snapshot


def _golden(**changes: object) -> str:
    return json.dumps({**json.loads(FILES[0].read_text()), **changes})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"id": 1', "malformed snapshot file snapshot/snapshot-1"),
        (_golden(commitUser=None), "malformed snapshot file snapshot/snapshot-1"),
        (_golden(baseManifestList="../../x"), "baseManifestList"),
        (_golden(deltaManifestList=None), "delta_manifest_list"),
    ],
)
def test_malformed_snapshot_is_corruption(text: str, message: str) -> None:
    with pytest.raises(CorruptTableError, match=message):
        Snapshot.from_json(text, "snapshot/snapshot-1")
