"""The one registry of Paimon's table options: what lakeops does with each of them.

Every option Paimon defines for a table (``CoreOptions`` of Paimon 0.9 and of today's master,
the Flink and Spark connector options, the Iceberg-compatibility, Hive, RocksDB, Kafka-log and
format options) has exactly one :class:`~lakeops.options.option.Option` row (in the
``lakeops.options.rows_*`` modules, one per theme; :data:`REGISTRY` is all of them), whose
status is

* ``honoured``  — lakeops implements it exactly as Paimon does (possibly only for some values:
  the others are refused, e.g. ``bucket`` = -2 or ``file.format`` = ``lance``);
* ``ignorable`` — it is engine-specific or has no effect on the data and files lakeops reads and
  writes (Flink sink/source settings, streaming read-start settings, memory and parallelism
  tuning, manifest tuning, statistics collection, lookup caches …). It is stored and written
  back untouched, so Paimon's engines still see it;
* ``refused``   — lakeops cannot honour it exactly (again possibly only for some values).

Pattern keys (``fields.<field>.aggregate-function``, ``file-index.<type>.columns``,
``parquet.<option>`` …) are entries too.

How the registry is used:

* :func:`check_create_options` — at ``Catalog.create_table`` (and everything that funnels into it:
  the CLI, the demo, Airflow and Spark helpers): an unknown key is a
  :class:`~lakeops.errors.ConfigurationError` with the closest known keys (``difflib``); a
  refused option or value is an :class:`~lakeops.errors.UnsupportedFeatureError` naming it and
  what to do. Nothing is written.
* :func:`check_writable` — before lakeops writes, commits, compacts or runs a maintenance action
  that deletes files (expire, orphan removal, rollback) on an existing table, which may have been
  created and altered by another engine: every refused option or value is an
  :class:`~lakeops.errors.UnsupportedFeatureError`.
* :func:`check_readable` — before any read: only the refusals whose result would be wrong or
  unreadable (``reads_wrong``), e.g. ``postpone.merge-on-read``, field default values,
  fallback branches.
* :func:`check_data_file` / :func:`check_data_files` — every data file must be Parquet, ORC or
  Avro (the format is the file name's extension, as Paimon's ``DataFileMeta.fileFormat()``);
  a file in another format refuses reads of it and writes/compactions of the table; a file at
  an external path on another file system is refused too.

Unknown keys on an existing table (typically an option of a newer Paimon than this registry):
lakeops cannot know whether the option changes how files must be written or merged, so it
**refuses to write, commit, compact and delete files** (an error naming the key), and **allows
reads** — reading never changes the table, and every option that changes what a read must return
that Paimon has today is in the registry. Keys under prefixes that only tune an engine or a
file-format library (``sink.``, ``source.``, ``rocksdb.``, ``parquet.``, ``orc.``, ``kafka.``,
``fs.`` …) are ignorable even when the exact key is new.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from typing import Any

from lakeops.errors import ConfigurationError, UnsupportedFeatureError
from lakeops.format.blob_file import BLOB_EXTENSION
from lakeops.io.data_formats import READABLE_FORMATS
from lakeops.io.data_formats import format_of as file_format
from lakeops.options import (
    rows_files,
    rows_ignorable,
    rows_layout,
    rows_merge,
    rows_retention,
    rows_write,
)
from lakeops.options.option import Option, OptionStatus
from lakeops.options.rows_retention import (
    CHANGELOG_NUM_RETAINED_MAX,
    CHANGELOG_NUM_RETAINED_MIN,
    COMMIT_MAX_RETRY_WAIT,
    COMMIT_MIN_RETRY_WAIT,
    SNAPSHOT_NUM_RETAINED_MAX,
    SNAPSHOT_NUM_RETAINED_MIN,
)
from lakeops.options.rules import WRITABLE_FORMATS

__all__ = [
    "OptionStatus",
    "REGISTRY",
    "WRITABLE_FORMATS",
    "check_create_options",
    "check_data_file",
    "check_data_files",
    "check_option_values",
    "check_ordered",
    "check_readable",
    "check_writable",
    "file_format",
    "known_keys",
    "refusals",
    "rule_for",
    "suggest",
    "unknown_keys",
]

REGISTRY: tuple[Option[Any], ...] = (
    *rows_layout.ROWS,
    *rows_merge.ROWS,
    *rows_write.ROWS,
    *rows_retention.ROWS,
    *rows_files.ROWS,
    *rows_ignorable.ROWS,
)
_EXACT: dict[str, Option[Any]] = {r.key: r for r in REGISTRY if not r.is_pattern}
_PATTERNS: tuple[Option[Any], ...] = tuple(r for r in REGISTRY if r.is_pattern)
assert len(_EXACT) + len(_PATTERNS) == len(REGISTRY), "duplicate registry entry"


def rule_for(key: str) -> Option[Any] | None:
    """The rule of ``key`` (exact keys first, then the most specific pattern), or None."""
    rule = _EXACT.get(key)
    if rule is not None:
        return rule
    found = [r for r in _PATTERNS if r.matches(key)]
    if not found:
        return None
    # the longest literal text wins: 'fields.<field>.default-value' over 'fields.<field>.<x>'
    return max(found, key=lambda r: len(re.sub(r"<[^>]+>", "", r.key)))


def known_keys() -> list[str]:
    """Every exact key and key pattern of the registry."""
    return [r.key for r in REGISTRY]


def suggest(key: str, n: int = 3) -> list[str]:
    """The known keys closest to ``key`` (for a did-you-mean)."""
    candidates = list(_EXACT)
    m = re.fullmatch(r"fields\.(.+)\.([^.]+)", key)
    if m:  # offer the field patterns filled in with the user's field name
        for r in _PATTERNS:
            if r.key.startswith("fields.<") and r.key.count("<") == 1:
                candidates.append(re.sub(r"<[^>]+>", m.group(1), r.key))
    return difflib.get_close_matches(key, candidates, n=n, cutoff=0.6)


def unknown_keys(options: Mapping[str, str]) -> list[str]:
    """The keys of ``options`` that the registry does not know."""
    return sorted(k for k in options if rule_for(k) is None)


def refusals(options: Mapping[str, str], *, reads: bool = False) -> list[tuple[str, Option[Any]]]:
    """``(key, rule)`` of every option lakeops cannot honour with its value (only those that
    make reads wrong when ``reads``)."""
    out = []
    for key in sorted(options):
        rule = rule_for(key)
        if rule is None or not rule.refuses(options[key], options):
            continue
        if reads and not rule.reads_wrong:
            continue
        out.append((key, rule))
    return out


def _describe(key: str, value: str, rule: Option[Any]) -> str:
    text = f"option {key!r} = {value!r}: {rule.note}"
    return text + (f"; {rule.fix}" if rule.fix else "")


def _did_you_mean(key: str) -> str:
    close = suggest(key)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def check_create_options(
    options: Mapping[str, str], before: Mapping[str, str] | None = None
) -> None:
    """Refuse the options of a new table: unknown keys (ConfigurationError with a did-you-mean)
    first, then options or values lakeops cannot honour (UnsupportedFeatureError).

    ``before``: the options of the schema an ALTER changes into ``options``; then only the keys
    it sets are checked for being known, and only refusals it brings about are raised (a value
    refused for another option's value counts when either of them changes)."""
    changed = {k: v for k, v in options.items() if before is None or before.get(k) != v}
    unknown = unknown_keys(changed)
    if unknown:
        raise ConfigurationError(
            "; ".join(f"unknown table option {k!r}{_did_you_mean(k)}" for k in unknown)
            + " (see lakeops.options.registry for every Paimon option lakeops knows)"
        )
    already = {k for k, _ in refusals(before)} if before is not None else set()
    refused = [(k, r) for k, r in refusals(options) if k in changed or k not in already]
    if refused:
        raise UnsupportedFeatureError(
            "lakeops cannot create this table: "
            + "; ".join(_describe(k, options[k], r) for k, r in refused)
        )


def check_writable(options: Mapping[str, str], action: str, table: str = "table") -> None:
    """Refuse to ``action`` (write, commit, compact, expire …) a table whose options lakeops
    cannot honour exactly, or that carries option keys it does not know."""
    refused = refusals(options)
    problems = [_describe(k, options[k], r) for k, r in refused]
    problems += [
        f"option {k!r} is unknown to this lakeops version (perhaps from a newer Paimon) and "
        f"could change how files must be written{_did_you_mean(k)}; remove it if it is a "
        "mistake (reads are still allowed)"
        for k in unknown_keys(options)
    ]
    if problems:
        raise UnsupportedFeatureError(
            f"lakeops refuses to {action} {table}: " + "; ".join(problems)
        )


def check_readable(options: Mapping[str, str], table: str = "table") -> None:
    """Refuse to read a table whose options make lakeops' reads wrong."""
    refused = refusals(options, reads=True)
    if refused:
        raise UnsupportedFeatureError(
            f"lakeops cannot read {table} correctly: "
            + "; ".join(_describe(k, options[k], r) for k, r in refused)
        )


def check_data_file(file_name: str, what: str = "read") -> None:
    """Refuse a data or changelog file lakeops cannot handle: reads, writes and compactions
    take Parquet, ORC and Avro files, reads BLOB files too (a BLOB column's values:
    :mod:`lakeops.format.blob_file`); other formats are refused."""
    fmt = file_format(file_name)
    if fmt in READABLE_FORMATS or (what == "read" and fmt == BLOB_EXTENSION):
        return
    raise UnsupportedFeatureError(
        f"data file {file_name!r} is in {fmt.upper() or 'an unknown'} format; lakeops reads "
        f"and writes Parquet, ORC and Avro only, so it refuses to {what} this table (option "
        "'file.format'): rewrite the table as Parquet with Paimon (file.format = "
        "'parquet' and a full compaction)"
    )


def check_data_files(file_names: Iterable[str], what: str) -> None:
    """:func:`check_data_file` for every name (before a write or compaction starts)."""
    for name in file_names:
        check_data_file(name, what)


def check_option_values(options: Mapping[str, str]) -> None:
    """Raise :class:`ConfigurationError` for the first option (in key order) whose value has
    the wrong form or lies outside its row's range; then :func:`check_ordered`."""
    for key in sorted(options):
        row = rule_for(key)
        if row is not None:
            row.check(str(options[key]), key)
    check_ordered(options)


def check_ordered(options: Mapping[str, str]) -> None:
    """Raise :class:`ConfigurationError` when a minimum lies above its maximum (snapshots and
    changelogs retained, the commit's retry pauses)."""
    for low_row, high_row in (
        (SNAPSHOT_NUM_RETAINED_MIN, SNAPSHOT_NUM_RETAINED_MAX),
        (CHANGELOG_NUM_RETAINED_MIN, CHANGELOG_NUM_RETAINED_MAX),
    ):
        low_key, high_key = low_row.key, high_row.key
        if low_key in options and high_key in options:
            low, high = int(options[low_key]), int(options[high_key])
            if low > high:
                raise ConfigurationError(
                    f"option {low_key!r} = {low} is larger than {high_key!r} = {high}; the "
                    f"minimum must not exceed the maximum (lower {low_key!r} or raise "
                    f"{high_key!r})"
                )
    low_wait, high_wait = COMMIT_MIN_RETRY_WAIT.key, COMMIT_MAX_RETRY_WAIT.key
    if (
        low_wait in options
        and high_wait in options
        and COMMIT_MIN_RETRY_WAIT.get(options) > COMMIT_MAX_RETRY_WAIT.get(options)
    ):
        raise ConfigurationError(
            f"option {low_wait!r} = {options[low_wait]!r} is longer than {high_wait!r} = "
            f"{options[high_wait]!r}; the first pause must not exceed the longest (lower "
            f"{low_wait!r} or raise {high_wait!r})"
        )
