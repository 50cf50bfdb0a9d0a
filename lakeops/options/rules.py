"""The "refused when" rules of honoured options: which values lakeops cannot honour."""

from __future__ import annotations

from collections.abc import Mapping

from lakeops.options.option import ValueRule

__all__ = [
    "REMOVE",
    "SET_REFUSED",
    "TRUE_REFUSED",
    "WRITABLE_FORMATS",
    "auto_tags_on",
    "changelog_format",
    "external_strategy",
    "norm",
    "per_level_formats",
    "unless",
    "uses_avro",
]

#: data file formats lakeops writes (lakeops.kv.formats writes them)
WRITABLE_FORMATS = ("parquet", "orc", "avro")

REMOVE = "remove the option (ALTER TABLE ... RESET) or use Paimon itself for this table"


def norm(value: str) -> str:
    return value.strip().lower()


def unless(*allowed: str) -> ValueRule:
    """Refuse every value but ``allowed`` (case-insensitive, trimmed)."""
    return lambda value, _: norm(value) not in allowed


TRUE_REFUSED = unless("false")
SET_REFUSED: ValueRule = lambda value, _: value.strip() != ""  # noqa: E731


def external_strategy(value: str, options: Mapping[str, str]) -> bool:
    writes = ("none", "round-robin", "specific-fs")
    return norm(value) not in writes and options.get("data-file.external-paths", "").strip() != ""


def per_level_formats(value: str, _: Mapping[str, str]) -> bool:
    formats = [p.split(":", 1)[-1] for p in value.split(",") if p.strip()]
    return any(norm(f) not in WRITABLE_FORMATS for f in formats)


def changelog_format(value: str, _: Mapping[str, str]) -> bool:
    return value.strip() != "" and norm(value) not in WRITABLE_FORMATS


def uses_avro(options: Mapping[str, str]) -> bool:
    """Whether a table writes Avro data files at some level (only then 'avro.codec' counts)."""
    keys = ("file.format", "file.format.per.level", "changelog-file.format")
    return any("avro" in options.get(k, "").lower() for k in keys)


def auto_tags_on(options: Mapping[str, str]) -> bool:
    """Whether tags are named by ``tag.creation-period`` (the modes that tag periods)."""
    mode = norm(options.get("tag.automatic-creation", "none"))
    return mode in ("process-time", "watermark")
