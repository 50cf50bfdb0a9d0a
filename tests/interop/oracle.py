"""Drive the pypaimon 2.1.0 oracle from tests running in the main venv.

pypaimon pins an old pyarrow, so it lives in its own virtualenv
(``.venv-oracle``) and is only ever run as a subprocess executing
``tests/interop/pypaimon_oracle.py`` (one kept per test process, answering request after
request). This module never imports pypaimon: it
serialises inputs to temporary files (a JSON schema, parquet data), runs the
CLI, and reads results back from parquet.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tests.interop.served import Served, ServedError

REPO_ROOT: Path = Path(__file__).resolve().parents[2]
ORACLE_SCRIPT: Path = Path(__file__).resolve().with_name("pypaimon_oracle.py")
ORACLE_PYTHON: Path = Path(
    os.environ.get("LAKEOPS_ORACLE_PYTHON", str(REPO_ROOT / ".venv-oracle" / "bin" / "python"))
)
ORACLE_TIMEOUT_S: int = 300

_TIMESTAMP_PRECISION = {"s": 0, "ms": 3, "us": 6, "ns": 9}


def require_oracle() -> Path:
    """Return the oracle interpreter path; raise RuntimeError if it is missing (never skip)."""
    if not ORACLE_PYTHON.exists():
        raise RuntimeError(
            "pypaimon oracle venv missing: run `bash scripts/setup.sh --oracle` "
            "(creates .venv-oracle with pypaimon==2.1.0)"
        )
    return ORACLE_PYTHON


_VARIANT = pa.struct(
    [pa.field("value", pa.binary(), False), pa.field("metadata", pa.binary(), False)]
)


#: Arrow type tests and the Paimon type each maps to (parameterless types)
_SIMPLE_TYPES: tuple[tuple[Any, str], ...] = (
    (pa.types.is_int8, "TINYINT"),
    (pa.types.is_int16, "SMALLINT"),
    (pa.types.is_int32, "INT"),
    (pa.types.is_int64, "BIGINT"),
    (pa.types.is_float32, "FLOAT"),
    (pa.types.is_float64, "DOUBLE"),
    (pa.types.is_boolean, "BOOLEAN"),
    (pa.types.is_string, "STRING"),
    (pa.types.is_large_string, "STRING"),
    (pa.types.is_binary, "BYTES"),
    (pa.types.is_large_binary, "BLOB"),  # Paimon 1.x BLOB (values in .blob files)
    (pa.types.is_date32, "DATE"),
    (pa.types.is_time32, "TIME(3)"),  # Paimon's TIME is milliseconds of the day at any precision
)


def paimon_type(arrow_type: pa.DataType) -> str:
    """Map an Arrow type to the Paimon SQL type string pypaimon stores (no nullability)."""
    for test, name in _SIMPLE_TYPES:
        if test(arrow_type):
            return name
    if pa.types.is_timestamp(arrow_type):
        precision = _TIMESTAMP_PRECISION[arrow_type.unit]
        if arrow_type.tz is None:
            return f"TIMESTAMP({precision})"
        return f"TIMESTAMP_LTZ({precision})"
    if pa.types.is_decimal128(arrow_type):
        return f"DECIMAL({arrow_type.precision}, {arrow_type.scale})"
    raise TypeError(f"no Paimon type mapping for arrow type {arrow_type}")


def paimon_type_json(arrow_type: pa.DataType, ids: list[int]) -> str | dict[str, Any]:
    """Paimon's schema JSON for a (nullable) type: a string, or for MAP / ARRAY / ROW the JSON
    object Paimon writes (nested ROW fields take ids from ``ids``, counting up)."""
    t = pa.types
    if t.is_map(arrow_type):
        return {
            "type": "MAP",
            "key": paimon_type_json(arrow_type.key_type, ids) + " NOT NULL",  # type: ignore[operator]
            "value": paimon_type_json(arrow_type.item_type, ids),
        }
    if t.is_list(arrow_type):
        return {"type": "ARRAY", "element": paimon_type_json(arrow_type.value_type, ids)}
    if t.is_struct(arrow_type) and arrow_type == _VARIANT:  # pypaimon's VARIANT
        return "VARIANT"
    if t.is_struct(arrow_type):
        fields = []
        for f in arrow_type:
            ids[0] += 1
            fields.append({"id": ids[0], "name": f.name, "type": paimon_type_json(f.type, ids)})
        return {"type": "ROW", "fields": fields}
    return paimon_type(arrow_type)


def paimon_schema_json(schema: pa.Schema) -> list[dict[str, Any]]:
    """Convert an Arrow schema to the oracle's JSON column list (not-null adds " NOT NULL")."""
    ids = [len(schema) - 1]
    out: list[dict[str, Any]] = []
    for field in schema:
        ptype = paimon_type_json(field.type, ids)
        if isinstance(ptype, str) and not field.nullable:
            ptype += " NOT NULL"
        out.append({"name": field.name, "type": ptype})
    return out


_SERVER: Served | None = None


def _run(args: list[str], what: str) -> None:
    """Run one oracle CLI subcommand in this process's oracle process (started on first use
    and kept, see :mod:`tests.interop.served`); raise RuntimeError with its output on failure."""
    global _SERVER
    if _SERVER is None:
        _SERVER = Served([str(require_oracle()), str(ORACLE_SCRIPT), "serve"], "pypaimon-oracle")
    try:
        reply = json.loads(_SERVER.request(json.dumps(args), ORACLE_TIMEOUT_S))
    except ServedError as exc:
        raise RuntimeError(f"pypaimon oracle {what}: {exc} (arguments {args})") from exc
    if reply["rc"] != 0:
        raise RuntimeError(
            f"pypaimon oracle {what} failed (exit {reply['rc']}): {args}\n"
            f"--- output ---\n{reply['output'].rstrip()}"
        )


def oracle_create(
    warehouse: str | os.PathLike[str],
    table: str,
    schema: pa.Schema,
    primary_keys: Iterable[str],
    partition_keys: Iterable[str] = (),
    options: Mapping[str, str] | None = None,
) -> None:
    """Create database (if needed) and primary-key table ``table`` ("db.name") with pypaimon."""
    pks = list(primary_keys)
    parts = list(partition_keys)
    with tempfile.TemporaryDirectory(prefix="lakeops-oracle-") as tmp:
        schema_file = Path(tmp) / "schema.json"
        schema_file.write_text(json.dumps(paimon_schema_json(schema)), encoding="utf-8")
        args = [
            "create",
            "--warehouse",
            os.fspath(warehouse),
            "--table",
            table,
            "--schema",
            str(schema_file),
            "--primary-keys",
            ",".join(pks),
        ]
        if parts:
            args += ["--partition-keys", ",".join(parts)]
        if options:
            args += ["--options", json.dumps({str(k): str(v) for k, v in options.items()})]
        _run(args, "create")


def oracle_write(warehouse: str | os.PathLike[str], table: str, data: pa.Table) -> None:
    """Write ``data`` to ``table`` with pypaimon as exactly one commit (one snapshot)."""
    with tempfile.TemporaryDirectory(prefix="lakeops-oracle-") as tmp:
        data_file = Path(tmp) / "data.parquet"
        pq.write_table(data, data_file)
        _run(
            [
                "write",
                "--warehouse",
                os.fspath(warehouse),
                "--table",
                table,
                "--data",
                str(data_file),
            ],
            "write",
        )


def oracle_alter(
    warehouse: str | os.PathLike[str], table: str, changes: list[dict[str, object]]
) -> None:
    """Alter ``table`` with pypaimon. Each change is ``{"op": ...}``: ``add`` (field, type,
    first/after), ``rename`` (field, new_name), ``drop`` (field), ``type`` (field, type),
    ``set`` (key, value), ``remove`` (key)."""
    args = ["alter", "--warehouse", os.fspath(warehouse), "--table", table]
    _run([*args, "--changes", json.dumps(changes)], "alter")


def oracle_read(
    warehouse: str | os.PathLike[str], table: str, snapshot_id: int | None = None
) -> pa.Table:
    """Read the merged ``table`` via pypaimon (latest, or ``snapshot_id``); rows unordered."""
    with tempfile.TemporaryDirectory(prefix="lakeops-oracle-") as tmp:
        out_file = Path(tmp) / "out.parquet"
        args = [
            "read",
            "--warehouse",
            os.fspath(warehouse),
            "--table",
            table,
            "--out",
            str(out_file),
        ]
        if snapshot_id is not None:
            args += ["--snapshot-id", str(snapshot_id)]
        _run(args, "read")
        return pq.read_table(out_file)


def oracle_changes(
    warehouse: str | os.PathLike[str],
    table: str,
    from_snapshot: int | None = None,
    to_snapshot: int | None = None,
) -> pa.Table:
    """Read ``table``'s changelog via pypaimon's streaming read, with row kinds.

    Returns the change records of snapshots ``from_snapshot + 1 .. to_snapshot``
    (default: from the first snapshot, including its changes, up to the latest) as
    one table whose first column is ``_row_kind`` (``"+I"``, ``"-U"``, ``"+U"``,
    ``"-D"``) followed by the table's columns. Rows are concatenated per snapshot in
    commit order; within a snapshot they follow pypaimon's split order. For
    ``changelog-producer=none`` the rows are each APPEND snapshot's records as
    written, not a normalised changelog. See ``cmd_changes`` in
    ``pypaimon_oracle.py``.
    """
    with tempfile.TemporaryDirectory(prefix="lakeops-oracle-") as tmp:
        out_file = Path(tmp) / "changes.parquet"
        args = [
            "changes",
            "--warehouse",
            os.fspath(warehouse),
            "--table",
            table,
            "--out",
            str(out_file),
        ]
        if from_snapshot is not None:
            args += ["--from-snapshot", str(from_snapshot)]
        if to_snapshot is not None:
            args += ["--to-snapshot", str(to_snapshot)]
        _run(args, "changes")
        return pq.read_table(out_file)


def _script_ops(ops: list[dict[str, Any]], tmp: Path) -> tuple[list[dict[str, Any]], list[Path]]:
    """The ops as the ``script`` subcommand takes them (data and schemas to files / JSON),
    and the output file of each ``read`` op, in order."""
    sent: list[dict[str, Any]] = []
    outs: list[Path] = []
    for index, op in enumerate(ops):
        op = dict(op)
        if "warehouse" in op:
            op["warehouse"] = os.fspath(op["warehouse"])
        if op["op"] in ("write", "update"):
            data_file = tmp / f"data-{index}.parquet"
            pq.write_table(op["data"], data_file)
            op["data"] = str(data_file)
        elif op["op"] == "read":
            op["out"] = str(tmp / f"out-{index}.parquet")
            outs.append(Path(op["out"]))
        elif op["op"] == "create" and isinstance(op["schema"], pa.Schema):
            op["schema"] = paimon_schema_json(op["schema"])
        sent.append(op)
    return sent, outs


def oracle_script(warehouse: str | os.PathLike[str], ops: list[dict[str, Any]]) -> list[pa.Table]:
    """Run pypaimon operations in ONE oracle process (see ``script`` in
    ``pypaimon_oracle.py``) and return the tables of its ``read`` ops, in order.

    Ops are dicts as the script takes them, except: a ``write`` op's ``data`` is a
    :class:`pyarrow.Table` (written to a temporary parquet file here), a ``read`` op needs
    no ``out``, and a ``create`` op's ``schema`` may be a :class:`pyarrow.Schema`.
    """
    with tempfile.TemporaryDirectory(prefix="lakeops-oracle-") as tmp:
        sent, outs = _script_ops(ops, Path(tmp))
        ops_file = Path(tmp) / "ops.json"
        ops_file.write_text(json.dumps(sent), encoding="utf-8")
        _run(["script", "--warehouse", os.fspath(warehouse), "--ops", str(ops_file)], "script")
        return [pq.read_table(out) for out in outs]


def oracle_batch(
    ops: list[dict[str, Any]],
) -> tuple[dict[str, list[pa.Table]], dict[str, str]]:
    """Run the ops of many independent groups (tables, each in its own ``warehouse``) in ONE
    oracle process; a failing op ends only its ``group``. Ops are as for
    :func:`oracle_script`, each with a ``group`` and a ``warehouse``.

    Returns the tables of each group's ``read`` ops, in order (groups that failed have only
    the reads before the failure), and each failed group's error text.
    """
    with tempfile.TemporaryDirectory(prefix="lakeops-oracle-") as tmp:
        sent, outs = _script_ops(ops, Path(tmp))
        ops_file = Path(tmp) / "ops.json"
        errors_file = Path(tmp) / "errors.json"
        ops_file.write_text(json.dumps(sent), encoding="utf-8")
        args = ["script", "--ops", str(ops_file), "--keep-going", "--errors", str(errors_file)]
        _run(args, "script")
        errors: dict[str, str] = json.loads(errors_file.read_text(encoding="utf-8"))
        reads: dict[str, list[pa.Table]] = {}
        for op, out in zip((o for o in sent if o["op"] == "read"), outs, strict=True):
            group = str(op.get("group", ""))
            reads.setdefault(group, [])
            if out.exists():
                reads[group].append(pq.read_table(out))
        return reads, errors
