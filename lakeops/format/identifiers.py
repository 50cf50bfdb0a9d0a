"""The one rule for database and table names (each becomes a directory of the warehouse).

Paimon lets engines name tables fairly freely; lakeops must also keep every name a single,
visible, portable path component. A name is valid when:

* it is 1 to 255 bytes in UTF-8 (a database: 252, because its directory is ``<name>.db``),
  the file-system limit of one path component;
* every character is a letter, mark, digit, punctuation or symbol (Unicode categories L, M, N,
  P, S) or the ASCII space — so no control characters (NUL, tab, newline …), no format
  characters (zero-width spaces and joiners, bidirectional overrides and isolates, the byte
  order mark), no other spaces or line separators, no private-use or unassigned code points;
* it neither starts nor ends with a space;
* it contains none of ``/`` and ``\\`` (path separators), ``.`` (the separator of
  ``database.table``) or ``$`` (Paimon's separator of system tables and branches, ``t$files``).

:func:`check_identifier` applies exactly this rule and its message states it;
:func:`parse_identifier` splits a table identifier ``database.table`` and applies it to both
parts — the one parser of identifiers that the catalog, the Airflow assets and links use.
"""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Iterable

from lakeops.errors import ConfigurationError

__all__ = [
    "MAX_NAME_BYTES",
    "RULE",
    "check_identifier",
    "closest_identifiers",
    "parse_identifier",
]

#: the longest path component of common file systems (ext4, xfs, APFS, NTFS, HDFS default)
MAX_NAME_BYTES = 255
_ALLOWED_CATEGORIES = ("L", "M", "N", "P", "S")
_CATEGORY_LABELS = {
    "Cc": "a control character",
    "Cf": "a format character",
    "Co": "a private-use character",
    "Cn": "an unassigned code point",
    "Cs": "a surrogate",
}
_FORBIDDEN = {"/": "'/'", "\\": "'\\'", ".": "'.'", "$": "'$'"}

#: the rule, as every refusal states it
RULE = (
    "a name is 1-255 UTF-8 bytes (a database 252) of letters, marks, digits, punctuation and "
    "symbols (Unicode categories L, M, N, P, S) and inner ASCII spaces: no control, format "
    "(zero-width, bidirectional), private-use or other space characters, and no '/', '\\', "
    "'.' or '$'"
)


def _problem(name: str, max_bytes: int) -> str | None:
    if not name:
        return "it is empty"
    size = len(name.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        return f"it is {size} bytes long in UTF-8, over the limit of {max_bytes} bytes"
    for ch in name:
        if ch in _FORBIDDEN:
            return f"it contains {_FORBIDDEN[ch]}"
        if ch == " ":
            continue
        category = unicodedata.category(ch)
        if not category.startswith(_ALLOWED_CATEGORIES):
            label = unicodedata.name(ch, "") or _CATEGORY_LABELS.get(category, category)
            return f"it contains U+{ord(ch):04X} ({label.lower()}, Unicode category {category})"
    if name.strip(" ") != name:
        return "it starts or ends with a space"
    return None


def check_identifier(kind: str, name: object) -> str:
    """Return ``name`` if it is a valid ``kind`` (``database`` or ``table``) name, else raise
    :class:`ConfigurationError` saying which part of the rule it breaks and the rule."""
    if not isinstance(name, str):
        raise ConfigurationError(f"a {kind} name must be a string, got {type(name).__name__}")
    max_bytes = MAX_NAME_BYTES - len(".db") if kind == "database" else MAX_NAME_BYTES
    problem = _problem(name, max_bytes)
    if problem is not None:
        shown = name if len(name) <= 80 else name[:80] + "…"
        raise ConfigurationError(f"invalid {kind} name {shown!r}: {problem}; {RULE}")
    return name


def parse_identifier(identifier: object) -> tuple[str, str]:
    """``(database, table)`` of a table identifier ``'database.table'``; raises
    :class:`ConfigurationError` unless it is a string of exactly two names joined by one ``.``,
    each valid by :func:`check_identifier` (so neither can contain ``.``)."""
    if not isinstance(identifier, str):
        raise ConfigurationError(
            f"a table identifier must be a string 'database.table', got {type(identifier).__name__}"
        )
    parts = identifier.split(".")
    if len(parts) != 2:
        shown = identifier if len(identifier) <= 80 else identifier[:80] + "…"
        raise ConfigurationError(
            f"table identifier {shown!r} must be 'database.table', e.g. 'db.orders'"
        )
    return check_identifier("database", parts[0]), check_identifier("table", parts[1])


def closest_identifiers(identifier: str, existing: Iterable[str], n: int = 3) -> list[str]:
    """At most ``n`` names of ``existing`` (``database.table``) that ``identifier`` was probably
    meant to be, best first: those with the same table name in another database, then the
    closest spellings (``difflib``, similarity at least 0.7). Empty when none is close."""
    names = list(existing)
    table = identifier.rsplit(".", 1)[-1]
    same = [name for name in names if name != identifier and name.rsplit(".", 1)[-1] == table]
    close = difflib.get_close_matches(identifier, names, n=n, cutoff=0.7)
    return list(dict.fromkeys([*same, *close]))[:n]
