"""Paimon's fixed bucket computed inside the JVM, as Spark SQL expressions.

Shipping every row to a Python worker only to hash its key costs a full JVM -> Python -> JVM round
trip (about as much as the write itself). For keys made only of integer-like fields (BOOLEAN,
TINYINT, SMALLINT, INT, DATE, BIGINT), Paimon's hash is cheap to state in SQL: the bucket key's
BinaryRow is a header of zero words (primary-key fields are never null) followed by one 8-byte
little-endian slot per field, hashed with MurmurHash3 x86-32 (seed 42) over 4-byte words, then
``abs(hash % num_buckets)``.

Spark 4 runs in ANSI mode, where a ``BIGINT`` overflow is an error, so every 32-bit
multiplication modulo 2**32 is split into 16-bit halves whose products stay below 2**49. Each
step is materialised as its own column, so no sub-expression is duplicated in the plan; Spark's
``CollapseProject`` keeps shared non-trivial expressions in separate projections.

Other key types (strings, decimals, timestamps, floats) return ``None`` from
:func:`bucket_steps`, and the caller falls back to the vectorised Arrow UDF.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from lakeops.format.binary_row import null_bits_size
from lakeops.format.bucket_hash import assign_buckets
from lakeops.format.types import DataType

__all__ = ["JVM_KEY_TYPES", "bucket_steps", "with_bucket"]

JVM_KEY_TYPES = frozenset({"BOOLEAN", "TINYINT", "SMALLINT", "INT", "DATE", "BIGINT"})

_MASK = 0xFFFFFFFF
_C1 = 0xCC9E2D51
_C2 = 0x1B873593
_SEED = 42
_INLINE_CHARS = 48


def _rotl_int(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def _mix_int(h: int, word: int) -> int:
    """One MurmurHash3 body round in Python, to fold constant words at planning time."""
    k = (word * _C1) & _MASK
    k = (_rotl_int(k, 15) * _C2) & _MASK
    h = _rotl_int(h ^ k, 13)
    return (h * 5 + 0xE6546B64) & _MASK


class _Program:
    """Straight-line SQL: every step becomes a column named ``{prefix}{n}``."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.steps: list[tuple[str, str]] = []

    def let(self, expr: str) -> str:
        """A reference to ``expr``: inlined when short (each step costs the driver an analysis
        pass), otherwise materialised as the next column."""
        if len(expr) <= _INLINE_CHARS:
            return f"({expr})"
        name = f"{self.prefix}{len(self.steps)}"
        self.steps.append((name, expr))
        return f"`{name}`"

    def mul32(self, a: str, c: int) -> str:
        """``(a * c) mod 2**32`` for ``a`` in [0, 2**32) and a constant ``c``, without
        overflowing a signed 64-bit product."""
        low = f"(({a} & 65535) * {c})"
        high = f"shiftleft((shiftright({a}, 16) * {c & 0xFFFF}) & 65535, 16)"
        return self.let(f"({low} + {high}) & {_MASK}")

    def rotl(self, x: str, r: int) -> str:
        return self.let(f"(shiftleft({x}, {r}) & {_MASK}) | shiftright({x}, {32 - r})")

    def mix(self, h: str, word: str) -> str:
        k = self.rotl(self.mul32(word, _C1), 15)
        k = self.mul32(k, _C2)
        h = self.rotl(self.let(f"{h} ^ {k}"), 13)
        return self.let(f"({h} * 5 + {0xE6546B64}) & {_MASK}")

    def fmix(self, h: str, length: int) -> str:
        h = self.let(f"{h} ^ {length}")
        h = self.let(f"{h} ^ shiftright({h}, 16)")
        h = self.mul32(h, 0x85EBCA6B)
        h = self.let(f"{h} ^ shiftright({h}, 13)")
        h = self.mul32(h, 0xC2B2AE35)
        return self.let(f"{h} ^ shiftright({h}, 16)")


def _slot_words(column: str, data_type: DataType) -> tuple[str, str | None]:
    """The low and high 32-bit words of a field's 8-byte slot (``None`` when always zero)."""
    c = f"`{column}`"
    root = data_type.root
    if root == "BOOLEAN":
        return f"CASE WHEN {c} THEN 1 ELSE 0 END", None
    if root == "TINYINT":
        return f"CAST({c} AS BIGINT) & 255", None
    if root == "SMALLINT":
        return f"CAST({c} AS BIGINT) & 65535", None
    if root == "INT":
        return f"CAST({c} AS BIGINT) & {_MASK}", None
    if root == "DATE":
        return f"CAST(unix_date({c}) AS BIGINT) & {_MASK}", None
    return f"{c} & {_MASK}", f"shiftrightunsigned({c}, 32)"  # BIGINT


def bucket_steps(
    keys: Sequence[str], key_types: Sequence[DataType], num_buckets: int, output: str
) -> list[tuple[str, str]] | None:
    """Columns to add, in order, so that the last one (``output``, INT) is Paimon's bucket of
    the (non-null) key columns ``keys``; ``None`` if a key type is not integer-like."""
    if not keys or any(t.root not in JVM_KEY_TYPES for t in key_types):
        return None
    program = _Program(f"{output}_h")
    header_words = null_bits_size(len(keys)) // 4
    seed = _SEED
    for _ in range(header_words):  # no null bits: the header hashes to a constant
        seed = _mix_int(seed, 0)
    h = program.let(str(seed))
    for key, data_type in zip(keys, key_types, strict=True):
        low, high = _slot_words(key, data_type)
        h = program.mix(h, program.let(low))
        h = program.mix(h, program.let(high) if high is not None else "0")
    h = program.fmix(h, 4 * header_words + 8 * len(keys))
    signed = f"CASE WHEN {h} >= 2147483648 THEN {h} - 4294967296 ELSE {h} END"
    program.steps.append((output, f"CAST(abs(({signed}) % {num_buckets}) AS INT)"))
    return program.steps


def with_bucket(
    df: Any,
    keys: Sequence[str],
    key_types: Sequence[DataType],
    num_buckets: int,
    output: str,
    *,
    in_jvm: bool,
) -> Any:
    """``df`` with Paimon's bucket of the key columns ``keys`` in a new INT column ``output``:
    in the JVM (:func:`bucket_steps`) when ``in_jvm`` and every key type is integer-like (the
    caller vouches that the DataFrame's columns have exactly those types and hold no nulls),
    else by a vectorised Arrow UDF hashing as the writers do
    (:func:`lakeops.format.bucket_hash.assign_buckets`, nulls included)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegerType, StructField, StructType

    steps = bucket_steps(keys, key_types, num_buckets, output) if in_jvm else None
    if steps is not None:
        out = df
        for name, expr in steps:
            out = out.withColumn(name, F.expr(expr))
        return out.drop(*[name for name, _ in steps[:-1]])
    arrow_types = [t.to_arrow() for t in key_types]

    def add_bucket(batches: Any) -> Any:
        for batch in batches:
            cols = [
                batch.column(batch.schema.get_field_index(k)).cast(a)
                for k, a in zip(keys, arrow_types, strict=True)
            ]
            buckets = (
                assign_buckets(cols, key_types, num_buckets)
                if batch.num_rows
                else np.zeros(0, np.int32)
            )
            yield batch.append_column(output, pa.array(buckets, pa.int32()))

    return df.mapInArrow(
        add_bucket, StructType([*df.schema.fields, StructField(output, IntegerType(), False)])
    )
