"""The write buffer numbers records in arrival order, from the bucket's next sequence number
(as a column, or, for an append table's rows, for the file writer to number them)."""

from __future__ import annotations

import pyarrow as pa

from lakeops.format.kv import SEQ
from lakeops.write.buffer import BucketBuffer


def test_records_are_numbered_in_arrival_order_across_takes() -> None:
    buffer = BucketBuffer(next_sequence=5)
    buffer.append(pa.table({"id": [3, 1]}))
    buffer.append(pa.table({"id": [2]}))
    assert buffer.nbytes > 0
    taken = buffer.take()
    assert [t[SEQ].to_pylist() for t in taken] == [[5, 6], [7]]
    assert [t["id"].to_pylist() for t in taken] == [[3, 1], [2]]
    assert (buffer.batches, buffer.nbytes) == ([], 0)
    buffer.append(pa.table({"id": [9]}))
    buffer.clear()  # dropped records keep their numbers used
    buffer.append(pa.table({"id": [4]}))
    assert [t[SEQ].to_pylist() for t in buffer.take()] == [[9]]


def test_an_append_buffer_numbers_rows_without_a_sequence_column() -> None:
    buffer = BucketBuffer(next_sequence=10, numbered=False)
    buffer.append(pa.table({"id": [3, 1]}))
    buffer.append(pa.table({"id": [2]}))
    taken = buffer.take()
    assert [t.column_names for t in taken] == [["id"], ["id"]]
    # the file writer numbers them on from the first taken row's number
    assert buffer.first_sequence(taken) == 10
    buffer.append(pa.table({"id": [7, 8]}))
    assert buffer.first_sequence(buffer.take()) == 13
