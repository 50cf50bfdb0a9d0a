"""TEMPORARY STUB (replaced by the real module from branch mergefix)."""

from typing import Any


class SchemaChange: ...


def apply_changes(schema: Any, changes: Any, has_snapshots: bool) -> Any:
    raise NotImplementedError
