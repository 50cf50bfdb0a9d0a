"""Every registered table option is read through its row (lakeops.options.option.Option), never
with a raw ``options.get("<key>")`` or ``options["<key>"]`` outside ``lakeops/options/``: the row
owns the option's parsing, range and default.

The walk finds ``<x>.get(<key>, ...)`` calls and ``<x>[<key>]`` reads whose key is a string literal
(or a module-level constant bound to one) that the option registry knows. A few reads use a
registered key's spelling on a mapping that is not a table's options; each is listed in
``NOT_TABLE_OPTIONS`` by module, mapping expression and key, with what that mapping is."""

from __future__ import annotations

import ast
from pathlib import Path

from lakeops.options.registry import rule_for

ROOT = Path(__file__).resolve().parents[2] / "lakeops"

#: (module, mapping expression, key) -> what the mapping is instead of a table's options
NOT_TABLE_OPTIONS: dict[tuple[str, str, str], str] = {
    # 'type' is a field of JSON type and schema documents, and of fsspec's file info
    ("cli/schema_file.py", "item", "type"): "a column of a JSON schema file",
    ("cli/views.py", "f", "type"): "a field of a schema JSON document",
    ("format/manifest_format.py", "f", "type"): "a field of an Avro schema",
    ("format/puffin.py", "b", "type"): "a blob's type in a Puffin footer",
    ("format/manifest_format.py", "t", "type"): "an Avro type",
    ("format/schema.py", "d", "type"): "a field of a schema file",
    ("format/types.py", "d", "type"): "a Paimon type's JSON",
    ("format/types.py", "f", "type"): "a row field's JSON",
    ("io/avro_data.py", "schema", "type"): "an Avro schema",
    ("io/avro_data.py", "f", "type"): "an Avro record field",
    ("io/avro_jit.py", "schema", "type"): "an Avro schema",
    ("io/avro_jit.py", "f", "type"): "an Avro record field",
    ("maintenance/orphan.py", "info", "type"): "fsspec's file info ('file' / 'directory')",
    ("io/avro_data.py", "header['meta']", "avro.schema"): "an Avro file header's metadata",
    # the options of one Spark read, stream or write call (DataFrameReader / DataStreamReader /
    # DataFrameWriter .option(...)), which reuse Paimon's read-option names; a table's options
    # are never passed there (lakeops.spark.options splits them off)
    ("spark/options.py", "opts", "incremental-between"): "one Spark read's options",
    ("spark/options.py", "opts", "incremental-between-scan-mode"): "one Spark read's options",
    ("spark/options.py", "opts", "primary-key"): "one Spark write's options (create_table args)",
    ("spark/options.py", "opts", "partition"): "one Spark write's options (create_table args)",
    ("spark/streaming.py", "options", "scan.mode"): "one Spark stream's options",
    ("spark/streaming.py", "options", "scan.snapshot-id"): "one Spark stream's options",
    ("spark/streaming.py", "options", "consumer-id"): "one Spark stream's options",
    ("spark/tables.py", "options", "path"): "a Spark catalog table's data source options",
    ("spark/registry.py", "registered_location(schema)", "path"): "a registered location",
}

#: raw reads in format/, which lies below options/ in the layer order and so cannot import the
#: rows: the bucket key of TableSchema.bucket_keys, which some twenty readers above use
BELOW_OPTIONS: dict[tuple[str, str, str], str] = {
    ("format/schema.py", "self.options", "bucket-key"): "TableSchema.bucket_keys",
    ("format/schema_change.py", "options", "bucket-key"): "the bucket-key check of ALTER",
    ("format/schema_change.py", "options", "deletion-vectors.enabled"): (
        "the deletion-vector switch check of ALTER"
    ),
    ("format/schema_change.py", "options", "deletion-vectors.modifiable"): (
        "the deletion-vector switch check of ALTER"
    ),
}


def _constants(tree: ast.Module) -> dict[str, str]:
    """Module-level names bound to a string literal (``KEY = "bucket"``)."""
    out: dict[str, str] = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            out.update({t.id: node.value.value for t in node.targets if isinstance(t, ast.Name)})
    return out


def _key(node: ast.expr, constants: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    return None


def raw_reads(source: str) -> list[tuple[int, str, str]]:
    """``(line, mapping expression, key)`` of every raw read of a registered option key."""
    tree = ast.parse(source)
    constants = _constants(tree)
    found = []
    for node in ast.walk(tree):
        key: str | None = None
        mapping: ast.expr | None = None
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
        ):
            key, mapping = _key(node.args[0], constants), node.func.value
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            key, mapping = _key(node.slice, constants), node.value
        if key is not None and mapping is not None and rule_for(key) is not None:
            assert isinstance(node, ast.Call | ast.Subscript)
            found.append((node.lineno, ast.unparse(mapping), key))
    return found


def _all_reads() -> dict[tuple[str, str, str], list[int]]:
    reads: dict[tuple[str, str, str], list[int]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        module = path.relative_to(ROOT).as_posix()
        if module.startswith("options/"):
            continue
        for line, mapping, key in raw_reads(path.read_text(encoding="utf-8")):
            reads.setdefault((module, mapping, key), []).append(line)
    return reads


def test_no_registered_option_is_read_raw_outside_options() -> None:
    allowed = NOT_TABLE_OPTIONS.keys() | BELOW_OPTIONS.keys()
    bad = [
        f"lakeops/{module}:{line}: {mapping}[{key!r}]"
        for (module, mapping, key), lines in sorted(_all_reads().items())
        if (module, mapping, key) not in allowed
        for line in lines
    ]
    assert not bad, "read these options through their rows (lakeops.options.rows_*):\n" + (
        "\n".join(bad)
    )


def test_every_exception_is_still_there() -> None:
    """An exception whose read went away is removed from the list (it would excuse a new one)."""
    reads = _all_reads()
    stale = [k for k in (*NOT_TABLE_OPTIONS, *BELOW_OPTIONS) if k not in reads]
    assert not stale


def test_the_walk_finds_each_form_of_raw_read() -> None:
    source = (
        'KEY = "merge-engine"\n'
        'a = options.get("bucket")\n'
        "b = schema.options['target-file-size']\n"
        'c = o.get("write-only", "false")\n'
        "d = o.get(KEY)\n"
        'e = o.get("not-an-option")\n'
        'o["bucket"] = "4"\n'
    )
    assert raw_reads(source) == [
        (2, "options", "bucket"),
        (3, "schema.options", "target-file-size"),
        (4, "o", "write-only"),
        (5, "o", "merge-engine"),
    ]
