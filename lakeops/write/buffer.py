"""The write buffer of one (partition, bucket): records waiting for a flush, numbered.

Records get their ``_SEQUENCE_NUMBER`` when they enter the buffer, in arrival order, continuing
from the bucket's largest committed number: the numbers never depend on when or where the
buffer is flushed.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lakeops.format.kv import SEQ

__all__ = ["BucketBuffer"]


class BucketBuffer:
    """Records of one (partition, bucket) not yet flushed."""

    def __init__(self, next_sequence: int, *, numbered: bool = True) -> None:
        #: the sequence number of the next record to arrive
        self.next_sequence = next_sequence
        #: records carry their numbers as a ``_SEQUENCE_NUMBER`` column (False: an append
        #: table's rows, numbered by the file writer from the first buffered row's number)
        self.numbered = numbered
        self.batches: list[pa.Table] = []
        #: in-memory size of the buffered records (without their sequence numbers)
        self.nbytes = 0

    def append(self, records: pa.Table) -> None:
        """Buffer ``records`` (the table's fields, and ``_VALUE_KIND`` for a primary-key
        table), numbering them."""
        n = records.num_rows
        if self.numbered:
            seq = pa.array(np.arange(self.next_sequence, self.next_sequence + n, dtype=np.int64))
            self.batches.append(records.append_column(pa.field(SEQ, pa.int64(), False), seq))
        else:
            self.batches.append(records)
        self.next_sequence += n
        self.nbytes += records.nbytes

    def first_sequence(self, batches: list[pa.Table]) -> int:
        """The number of the first row of ``batches``, the last ones buffered."""
        return self.next_sequence - int(sum(b.num_rows for b in batches))

    def take(self) -> list[pa.Table]:
        """The buffered batches, in arrival order; the buffer is empty afterwards."""
        batches = self.batches
        self.batches, self.nbytes = [], 0
        return batches

    def clear(self) -> None:
        """Drop everything buffered (the sequence numbers stay used)."""
        self.take()
