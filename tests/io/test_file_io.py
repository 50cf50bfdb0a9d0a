"""Local files of ``lakeops.io.file_io.FileIO``: a new file's missing directories are made, each
directory once per FileIO however many files go into it, and a directory removed after it was
made (a dropped table, another process) is made again when a file is written into it."""

from __future__ import annotations

import os
import shutil
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakeops.io import file_io as file_io_module
from lakeops.io.file_io import FileIO


@pytest.fixture
def mkdir_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every directory the FileIO module asks the os to make (``mkdir`` or ``makedirs``; the
    calls ``makedirs`` makes itself are not counted)."""
    calls: list[str] = []
    depth = [0]
    real_mkdir, real_makedirs = os.mkdir, os.makedirs

    def counted(real: Callable[..., None]) -> Callable[..., None]:
        def call(path: str, *args: object, **kwargs: object) -> None:
            if not depth[0]:
                calls.append(str(path))
            depth[0] += 1
            try:
                real(path, *args, **kwargs)
            finally:
                depth[0] -= 1

        return call

    monkeypatch.setattr(file_io_module.os, "mkdir", counted(real_mkdir))
    monkeypatch.setattr(file_io_module.os, "makedirs", counted(real_makedirs))
    return calls


def _write_parquet(io: FileIO, path: str, value: int) -> None:
    sink = io.open_output_stream(path)
    try:
        pq.write_table(pa.table({"v": [value]}), sink)
    finally:
        sink.close()


def test_files_of_many_directories_make_each_directory_once(
    tmp_path: Path, mkdir_calls: list[str]
) -> None:
    """Model: 3 partitions x 4 buckets x 5 files, written through open_output_stream and
    write_bytes: every file holds what was written, and each of the 15 directories was asked
    for once."""
    io = FileIO(str(tmp_path))
    expected: dict[str, int] = {}
    for n in range(5):
        for p in range(3):
            for b in range(4):
                directory = f"{tmp_path}/t/p={p}/bucket-{b}"
                value = n * 100 + p * 10 + b
                _write_parquet(io, f"{directory}/data-{n}.parquet", value)
                io.write_bytes(f"{directory}/data-{n}.index", str(value).encode())
                expected[f"{directory}/data-{n}"] = value
    for stem, value in expected.items():
        assert pq.read_table(stem + ".parquet").column("v").to_pylist() == [value]
        assert Path(stem + ".index").read_bytes() == str(value).encode()
    assert sorted(set(mkdir_calls)) == sorted(mkdir_calls)  # no directory asked for twice
    made = {c for c in mkdir_calls if "bucket-" in c}
    assert made == {f"{tmp_path}/t/p={p}/bucket-{b}" for p in range(3) for b in range(4)}


@pytest.mark.parametrize("removed", ["bucket", "partition"])
def test_a_directory_removed_after_it_was_made_is_made_again(tmp_path: Path, removed: str) -> None:
    io = FileIO(str(tmp_path))
    bucket = f"{tmp_path}/t/p=1/bucket-0"
    _write_parquet(io, f"{bucket}/a.parquet", 1)
    io.write_bytes(f"{tmp_path}/t/p=1/bucket-9/x", b"x")  # the partition is remembered
    shutil.rmtree(bucket if removed == "bucket" else f"{tmp_path}/t/p=1")
    _write_parquet(io, f"{bucket}/b.parquet", 2)  # remembered, gone: made again
    io.write_bytes(f"{bucket}/c", b"c")
    _write_parquet(io, f"{tmp_path}/t/p=1/bucket-1/d.parquet", 3)  # parent remembered, gone
    assert pq.read_table(f"{bucket}/b.parquet").column("v").to_pylist() == [2]
    assert Path(f"{bucket}/c").read_bytes() == b"c"
    assert pq.read_table(f"{tmp_path}/t/p=1/bucket-1/d.parquet").column("v").to_pylist() == [3]


def test_a_file_where_a_directory_should_be_is_an_error(tmp_path: Path) -> None:
    io = FileIO(str(tmp_path))
    (tmp_path / "t").write_bytes(b"not a directory")
    with pytest.raises(OSError):
        io.write_bytes(f"{tmp_path}/t/bucket-0/x", b"x")
    with pytest.raises(OSError):
        io.open_output_stream(f"{tmp_path}/t/bucket-0/y")


@pytest.mark.parametrize("size", [10, 1000])
def test_a_capped_read_allocates_what_the_file_holds_not_the_cap(tmp_path: Path, size: int) -> None:
    """Every metadata read passes a cap of hundreds of MiB: the read must not allocate the cap
    (``read(n)`` allocates ``n`` bytes up front, a failure where memory is not overcommitted)."""
    path = tmp_path / "small"
    path.write_bytes(b"x" * size)
    io = FileIO(str(tmp_path))
    tracemalloc.start()
    try:
        got = io.read_bytes(str(path), max_bytes=256 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got == b"x" * size
    assert peak < 1 << 20, peak


def test_a_capped_read_of_a_larger_file_reads_one_byte_past_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "large"
    path.write_bytes(b"y" * 5000)
    assert FileIO(str(tmp_path)).read_bytes(str(path), max_bytes=100) == b"y" * 101
