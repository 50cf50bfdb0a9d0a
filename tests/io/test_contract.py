"""One storage contract, run against every store: local disk and S3 (moto, a real S3-protocol
server on loopback); plus the HDFS adapter's contract and a store that ignores conditions."""

from __future__ import annotations

import multiprocessing as mp
import uuid
from typing import Any

import fsspec
import pytest
from fsspec.implementations.memory import MemoryFileSystem

from lakeops import Catalog
from lakeops.io.file_io import FileIO, join
from lakeops.io.publish import RenamePublish, StoreRefusedError


class StoreContract:
    """Subclasses provide ``fio`` (a FileIO) and ``base`` (a fresh directory on it)."""

    @pytest.fixture
    def store(self, request) -> tuple[FileIO, str]:  # type: ignore[no-untyped-def]
        raise NotImplementedError

    def test_bytes_round_trip_and_listing(self, store) -> None:
        fio, base = store
        fio.write_bytes(join(base, "a/one"), b"1")
        fio.write_bytes(join(base, "a/two"), b"22")
        assert fio.read_bytes(join(base, "a/two")) == b"22"
        assert fio.size(join(base, "a/two")) == 2
        assert sorted(fio.list_names(join(base, "a"))) == ["one", "two"]
        assert fio.list_names(join(base, "missing")) == []
        fio.delete(join(base, "a/one"))
        fio.delete(join(base, "a/one"))  # idempotent
        assert not fio.exists(join(base, "a/one"))

    def test_publish_is_exclusive_and_whole(self, store) -> None:
        fio, base = store
        target = join(base, "snapshot/snapshot-1")
        assert fio.publish_exclusive(target, b"first" * 100) is True
        assert fio.publish_exclusive(target, b"second") is False
        assert fio.read_bytes(target) == b"first" * 100

    def test_overwrite_atomic_replaces(self, store) -> None:
        fio, base = store
        hint = join(base, "snapshot/LATEST")
        fio.overwrite_atomic(hint, b"1")
        fio.overwrite_atomic(hint, b"2")
        assert fio.read_bytes(hint) == b"2"

    def test_file_io_pickles_without_losing_its_store(self, store) -> None:
        import pickle

        fio, base = store
        fio.write_bytes(join(base, "p"), b"x")
        clone = pickle.loads(pickle.dumps(fio))
        assert clone.read_bytes(join(base, "p")) == b"x"
        assert "secret" not in repr(clone) and "testing" not in repr(clone)

    @pytest.mark.slow  # 3 rounds of 6 spawned processes racing to publish
    def test_racing_processes_one_winner(self, store) -> None:
        fio, base = store
        ctx = mp.get_context("spawn")
        for round_ in range(3):
            target = join(base, f"race{round_}/snapshot-1")
            barrier, results = ctx.Barrier(6), ctx.Queue()
            procs = [
                ctx.Process(
                    target=_race, args=(fio, target, f"w{i}".encode() * 50, barrier, results)
                )
                for i in range(6)
            ]
            for p in procs:
                p.start()
            wins = [results.get(timeout=120) for _ in procs]
            for p in procs:
                p.join(timeout=60)
            assert wins.count(True) == 1
            content = fio.read_bytes(target)
            assert content == content[:2] * 50


def _race(fio: FileIO, target: str, content: bytes, barrier: Any, results: Any) -> None:
    barrier.wait()
    results.put(fio.publish_exclusive(target, content))


class TestLocalStore(StoreContract):
    @pytest.fixture
    def store(self, tmp_path) -> tuple[FileIO, str]:  # type: ignore[no-untyped-def]
        return FileIO(str(tmp_path)), str(tmp_path)


class TestS3Store(StoreContract):
    @pytest.fixture
    def store(self, s3_warehouse) -> tuple[FileIO, str]:  # type: ignore[no-untyped-def]
        uri, options = s3_warehouse
        fio = FileIO(uri, options)
        return fio, fio.root


# ------------------------------------------------------------ a store that ignores conditions
class IgnoringConditionsFS(MemoryFileSystem):
    """An S3-like store that accepts If-None-Match but ignores it (like old emulators)."""

    protocol = "nocond"

    def pipe_file(self, path: str, value: bytes, mode: str = "overwrite", **kw: Any) -> None:
        super().pipe_file(path, value, **kw)  # mode="create" silently overwrites


fsspec.register_implementation("nocond", IgnoringConditionsFS, clobber=True)


def test_store_ignoring_conditions_is_refused_not_corrupted() -> None:
    import pyarrow as pa

    root = f"nocond://wh-{uuid.uuid4().hex}"
    catalog = Catalog(root)
    catalog.create_database("db")
    with pytest.raises(StoreRefusedError, match="lock"):
        catalog.create_table(
            "db.t",
            schema=pa.schema([("id", pa.int64())]),
            primary_keys=["id"],
            options={"bucket": "1"},
        )
    fs = IgnoringConditionsFS()
    assert not [p for p in fs.find(root) if "/db.db/t/" in p]  # nothing of the table written


def test_store_ignoring_conditions_works_with_a_lock(tmp_path) -> None:
    import pyarrow as pa

    catalog = Catalog(
        f"nocond://wh-{uuid.uuid4().hex}",
        options={
            "lock.enabled": "true",
            "lock.type": "sqlite",
            "lock.sqlite.path": str(tmp_path / "locks.db"),
        },
    )
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t", schema=pa.schema([("id", pa.int64())]), primary_keys=["id"], options={"bucket": "1"}
    )
    table.write(pa.table({"id": [1, 2]}))
    assert table.read().num_rows == 2


# ------------------------------------------------------------------------ HDFS adapter
class FakeNameNode:
    """Stands in for an HDFS client: rename fails when the destination exists."""

    def __init__(self, fs: MemoryFileSystem) -> None:
        self.fs = fs
        self.calls: list[tuple[str, str, bool]] = []

    def rename(self, src: str, dst: str, overwrite: bool = False) -> bool:
        self.calls.append((src, dst, overwrite))
        if self.fs.exists(dst) and not overwrite:
            raise OSError(f"FileAlreadyExistsException: {dst} already exists")
        self.fs.mv(src, dst)
        return True


def test_hdfs_adapter_renames_without_overwrite() -> None:
    fs = MemoryFileSystem()
    fs.client = FakeNameNode(fs)  # type: ignore[attr-defined]
    base = f"/hdfs-{uuid.uuid4().hex}"
    publish = RenamePublish()
    assert publish.publish(fs, f"{base}/snapshot-1", b"one") is True
    assert publish.publish(fs, f"{base}/snapshot-1", b"two") is False  # lost, not overwritten
    assert fs.cat_file(f"{base}/snapshot-1") == b"one"
    assert all(overwrite is False for _, _, overwrite in fs.client.calls)
    assert fs.ls(base, detail=False) == [f"{base}/snapshot-1"]  # temporary files cleaned


def test_hdfs_adapter_maps_false_to_lost() -> None:
    fs = MemoryFileSystem()

    class Refusing:
        def rename(self, src: str, dst: str, overwrite: bool = False) -> bool:
            return False

    fs.client = Refusing()  # type: ignore[attr-defined]
    assert RenamePublish().publish(fs, f"/h-{uuid.uuid4().hex}/s", b"x") is False


@pytest.mark.skipif(
    "LAKEOPS_HDFS_URL" not in __import__("os").environ,
    reason="real HDFS only when LAKEOPS_HDFS_URL is set (not in CI)",
)
def test_real_hdfs_publish() -> None:
    import os

    fio = FileIO(os.environ["LAKEOPS_HDFS_URL"])
    target = join(fio.root, f"lakeops-test-{uuid.uuid4().hex}/snapshot-1")
    assert fio.publish_exclusive(target, b"a") is True
    assert fio.publish_exclusive(target, b"b") is False
