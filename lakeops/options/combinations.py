"""Combinations of options and table shape that Paimon's ``SchemaValidation`` refuses.

Checked where a schema is made (``create_table``, ``alter``), so lakeops never writes a schema
Java Paimon cannot open. Each rule is Paimon's (0.9 and today's master, unless said):

* a table without a primary key takes no ``changelog-producer`` but ``none``;
* a table without a primary key takes no ``streaming-read-overwrite``;
* ``streaming-read-overwrite`` is refused with the ``lookup`` and ``full-compaction`` changelog
  producers (their changelog already holds the overwrite's changes: read twice);
* an append table with ``bucket = -1`` takes no ``full-compaction.delta-commits``;
* ``full-compaction.delta-commits`` is refused with ``changelog-producer = lookup`` (Paimon
  1.x's master; 0.9 accepted it, so an ALTER of a table that already had both is let through).
"""

from __future__ import annotations

from collections.abc import Mapping

from lakeops.errors import ConfigurationError
from lakeops.format.schema import TableSchema
from lakeops.options.rows_layout import BUCKET

__all__ = ["check_combinations"]


def _true(options: Mapping[str, str], key: str) -> bool:
    return options.get(key, "false").strip().lower() == "true"


def _producer(options: Mapping[str, str]) -> str:
    return options.get("changelog-producer", "none").strip().lower()


def _violations(schema: TableSchema, options: Mapping[str, str]) -> list[str]:
    keyed = bool(schema.primary_keys)
    producer = _producer(options)
    out = []
    if not keyed and producer != "none":
        out.append(
            f"option 'changelog-producer' = {producer!r} needs a primary key (Paimon refuses a "
            "changelog producer on a table without one): remove the option or define a "
            "primary key"
        )
    if _true(options, "streaming-read-overwrite"):
        if not keyed:
            out.append(
                "option 'streaming-read-overwrite' needs a primary key (Paimon refuses it on "
                "an append table): remove it (Paimon's 'streaming-read-append-overwrite' is "
                "the append table's)"
            )
        elif producer in ("lookup", "full-compaction"):
            out.append(
                f"option 'streaming-read-overwrite' cannot be used with 'changelog-producer' = "
                f"{producer!r}: a streaming read would see the overwrite's changes twice "
                "(Paimon refuses it); remove one of them"
            )
    delta_commits = options.get("full-compaction.delta-commits", "").strip()
    if delta_commits:
        if not keyed and BUCKET.get(options) == -1:
            out.append(
                "option 'full-compaction.delta-commits' cannot be used on an append table with "
                "bucket = -1 (Paimon refuses it): remove it or set a bucket count and "
                "'bucket-key'"
            )
        if keyed and producer == "lookup":
            out.append(
                "option 'full-compaction.delta-commits' cannot be used with "
                "'changelog-producer' = 'lookup' (Paimon refuses the pair): use "
                "'changelog-producer' = 'full-compaction' for a periodic full compaction "
                "with a changelog, or remove 'full-compaction.delta-commits'"
            )
    return out


def check_combinations(schema: TableSchema, before: TableSchema | None = None) -> None:
    """Raise :class:`ConfigurationError` naming every rule ``schema`` breaks; with ``before``
    (the schema an ALTER changes), only the rules ``before`` did not break already."""
    broken = _violations(schema, schema.options)
    if before is not None:
        already = set(_violations(before, before.options))
        broken = [v for v in broken if v not in already]
    if broken:
        raise ConfigurationError("; ".join(broken))
