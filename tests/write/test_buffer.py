"""The write buffer numbers records in arrival order, from the bucket's next sequence number."""

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
