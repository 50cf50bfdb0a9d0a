"""The one rule for the names of tags and branches as file names.

A tag is the file ``tag/tag-<name>`` and a branch the directory ``branch/branch-<name>``, so a
name a caller passes — to create, read, roll back to or delete a tag — becomes one path
component. Whatever a name asks, it is checked before any storage call:

* a string, not blank (Paimon's own rule);
* no control characters (NUL, tab, newline …; Unicode category Cc) and no lone surrogates —
  neither can be a file name everywhere;
* no path separators (``/``, ``\\``) and not ``.`` or ``..``;
* at most :data:`MAX_REF_NAME_BYTES` bytes in UTF-8: the file-system limit of one path
  component (255 bytes) less the ``tag-`` / ``branch-`` prefix and the temporary name a
  publish writes beside it (``.tag-<name>.<32 hex>.tmp``).

Names refused only when a tag is created (digits only, a leading ``.``, a ``.tmp`` suffix) are
:func:`lakeops.store.tags.check_tag_name`'s: a tag of such a name that Paimon created is
still read by name.
"""

from __future__ import annotations

import unicodedata

from lakeops.errors import ConfigurationError

__all__ = ["MAX_REF_NAME_BYTES", "check_ref_name"]

#: 255 bytes (one path component) less the longest name built around it:
#: ``.branch-<name>.<32 hex digits>.tmp`` (45 bytes), rounded down
MAX_REF_NAME_BYTES = 200


def _problem(name: str) -> str | None:
    if not name.strip():
        return "is blank"
    if name in (".", ".."):
        return "is a relative path ('.' or '..')"
    for ch in name:
        if ch in "/\\":
            return f"holds a path separator ({ch!r})"
        category = unicodedata.category(ch)
        if category in ("Cc", "Cs"):
            kind = "a control character" if category == "Cc" else "a lone surrogate"
            return f"holds {kind} (U+{ord(ch):04X})"
    size = len(name.encode("utf-8"))
    if size > MAX_REF_NAME_BYTES:
        return (
            f"is {size} bytes long in UTF-8, over the limit of {MAX_REF_NAME_BYTES} (the name "
            "is a file name)"
        )
    return None


def check_ref_name(kind: str, name: object) -> str:
    """``name`` if it can name a ``kind`` (``tag`` or ``branch``) on storage, else a
    :class:`ConfigurationError` saying what is wrong with it (see the module docstring)."""
    if not isinstance(name, str):
        raise ConfigurationError(f"a {kind} name must be a string, not {type(name).__name__}")
    problem = _problem(name)
    if problem is not None:
        shown = name if len(name) <= 60 else name[:60] + "…"
        raise ConfigurationError(
            f"{kind} name {shown!r} {problem}; name the {kind} with printable characters, "
            f"no '/' or '\\', at most {MAX_REF_NAME_BYTES} bytes"
        )
    return name
