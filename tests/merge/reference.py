"""A small, obviously sequential reference of Paimon's merge functions (tests only).

Records of one key are ``(kind, row)`` pairs already in merge order. ``merge`` returns
``(kind, row)``; a retraction kind means the key is absent from reads. Written record by record
from Paimon's Java merge functions (``AggregateMergeFunction`` and ``PartialUpdateMergeFunction``
as of Paimon 1.4.1 / 2.0, whose ``initRow`` copies every field of the record), independently of
the vectorised engines it checks.
"""

from __future__ import annotations

from typing import Any

RETRACT = {"-U", "-D"}


class Agg:
    """One aggregate function with Paimon's agg / aggReversed / retract rules."""

    def __init__(self, name: str, delimiter: str = ",") -> None:
        self.name = name
        self.delimiter = delimiter
        self.initialized = False

    def reset(self) -> None:
        self.initialized = False

    def agg(self, acc: Any, x: Any) -> Any:
        n = self.name
        if n == "last_value":
            return x
        if n == "last_non_null_value":
            return acc if x is None else x
        if n == "first_value":
            if not self.initialized:
                self.initialized = True
                return x
            return acc
        if n == "first_non_null_value":
            if not self.initialized and x is not None:
                self.initialized = True
                return x
            return acc
        if n == "listagg":  # Paimon 2.0 (apache/paimon#8480): blank strings are skipped
            if x is None or x.strip(" \t\n\r\x0b\x0c") == "":
                return acc
            if acc is None or acc.strip(" \t\n\r\x0b\x0c") == "":
                return x
            return acc + self.delimiter + x
        if acc is None or x is None:
            return x if acc is None else acc
        if n == "merge_map_with_keytime":
            return _merge_map_with_keytime(acc, x)
        return {
            "sum": lambda: acc + x,
            "product": lambda: acc * x,
            "min": lambda: min(acc, x),
            "max": lambda: max(acc, x),
            "bool_and": lambda: acc and x,
            "bool_or": lambda: acc or x,
        }[n]()

    def agg_reversed(self, acc: Any, x: Any) -> Any:
        return self.agg(x, acc)

    def retract(self, acc: Any, x: Any) -> Any:
        n = self.name
        if n == "sum":
            if acc is None or x is None:
                return -x if acc is None and x is not None else acc
            return acc - x
        if n == "product":
            if acc is None or x is None:
                return acc
            q = abs(acc) // abs(x)
            return q if (acc >= 0) == (x > 0) else -q
        if n == "last_value":
            return None
        if n == "last_non_null_value":
            return acc if x is None else None
        raise ValueError(f"Aggregate function '{n}' does not support retraction")


def _merge_map_with_keytime(acc: list, x: list) -> list:
    """FieldMergeMapWithKeyTimeAgg.agg for non-null maps of ``(key, {"v": …, "ts": str})``:
    entry by entry, a null row removes, a null ts is skipped, an absent / null / null-ts old
    value is replaced, otherwise a strictly greater ts (Java String order: UTF-16) wins."""
    result = dict(acc)
    for key, row in x:
        if row is None:
            result.pop(key, None)
            continue
        if row["ts"] is None:
            continue
        old = result.get(key)
        if (
            old is None
            or old["ts"] is None
            or row["ts"].encode("utf-16-be") > old["ts"].encode("utf-16-be")
        ):
            result[key] = row
    return list(result.items())


def dedup(records: list[tuple[str, dict]]) -> tuple[str, dict]:
    return records[-1]


def first_row(records: list[tuple[str, dict]]) -> tuple[str, dict]:
    return records[0]


def aggregation(
    records: list[tuple[str, dict]],
    keys: list[str],
    aggs: dict[str, Agg],
    remove_on_delete: bool = False,
) -> tuple[str, dict]:
    if len(records) == 1:
        return records[0]
    for a in aggs.values():
        a.reset()
    row: dict[str, Any] = {}
    deleted = False
    for kind, rec in records:
        deleted = remove_on_delete and kind == "-D"
        if deleted:  # initRow: every field of the -D record; aggregator state is kept
            row = dict(rec)
            continue
        for k in keys:
            row[k] = rec[k]
        for f, a in aggs.items():
            acc = row.get(f)
            row[f] = a.retract(acc, rec[f]) if kind in RETRACT else a.agg(acc, rec[f])
    return ("-D" if deleted else "+I"), row


def _cmp(a: tuple, b: tuple) -> int:
    """Compare sequence values left to right, nulls smallest."""
    for x, y in zip(a, b, strict=True):
        if x == y:
            continue
        if x is None:
            return -1
        if y is None:
            return 1
        return -1 if x < y else 1
    return 0


def partial_update(
    records: list[tuple[str, dict]],
    fields: list[str],
    keys: list[str],
    groups: list[tuple[list[str], list[str]]],
    aggs: dict[str, Agg],
    ignore_delete: bool = False,
    remove_on_delete: bool = False,
    remove_groups: tuple[str, ...] = (),
) -> tuple[str, dict]:
    """Paimon's PartialUpdateMergeFunction, field by field in schema order."""
    if len(records) == 1:
        return records[0]
    for a in aggs.values():
        a.reset()
    group_of: dict[str, tuple[list[str], list[str]]] = {}
    for g in groups:
        for f in g[0] + g[1]:
            group_of[f] = g
    row: dict[str, Any] = {f: None for f in fields}
    meet_insert = False
    delete_row = False
    filled = False
    for kind, rec in records:
        delete_row = False
        for k in keys:
            row[k] = rec[k]
        if kind in RETRACT:
            if not filled:  # a leading retraction initialises the row, even an ignored one
                row = {f: rec[f] for f in fields}
                filled = True
            if ignore_delete:
                continue
            if groups:
                processed: set[str] = set()
                stop = False
                for f in fields:
                    g = group_of.get(f)
                    if g is None or f in processed or stop:
                        continue
                    seq, _protected = g
                    if all(rec[s] is None for s in seq):
                        processed.update(seq)
                        continue
                    newer = _cmp(tuple(rec[s] for s in seq), tuple(row[s] for s in seq)) >= 0
                    if newer:
                        if f in seq:
                            for s in seq:
                                if kind == "-D" and s in remove_groups:
                                    delete_row = True
                                    row = {x: rec[x] for x in fields}
                                    stop = True
                                    break
                                row[s] = rec[s]
                                processed.add(s)
                        elif f in aggs:
                            row[f] = aggs[f].retract(row[f], rec[f])
                        else:
                            row[f] = None
                    elif f in aggs and f not in seq:
                        row[f] = aggs[f].retract(row[f], rec[f])
                continue
            if remove_on_delete:
                if kind == "-D":
                    delete_row = True
                    row = {x: rec[x] for x in fields}
                continue
            raise ValueError("By default, Partial update can not accept delete records")
        if not groups:
            for f in fields:
                if rec[f] is not None:
                    row[f] = rec[f]
        else:
            processed = set()
            for f in fields:
                g = group_of.get(f)
                if g is None:
                    if f in aggs:
                        row[f] = aggs[f].agg(row[f], rec[f])
                    elif rec[f] is not None:
                        row[f] = rec[f]
                    continue
                if f in processed:
                    continue
                seq, _protected = g
                if all(rec[s] is None for s in seq):
                    processed.update(seq)
                    continue
                if _cmp(tuple(rec[s] for s in seq), tuple(row[s] for s in seq)) >= 0:
                    if f in seq:
                        for s in seq:
                            row[s] = rec[s]
                            processed.add(s)
                        continue
                    row[f] = aggs[f].agg(row[f], rec[f]) if f in aggs else rec[f]
                elif f in aggs:
                    row[f] = aggs[f].agg_reversed(row[f], rec[f])
        meet_insert = True
        filled = True
    return ("-D" if delete_row or not meet_insert else "+I"), row
