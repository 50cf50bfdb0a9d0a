"""Drive the Java Paimon 0.9 oracle (``tests/interop/java/PaimonOracle.java``) from tests.

The Paimon 0.9 jar ships inside the pypaimon 0.2.0 sdist; ``bash scripts/setup.sh --oracle``
extracts it into ``.cache/java/``. The Hadoop client jars come from the main venv's pyspark
``jars/`` directory and the JDK (17) is the one Spark uses. :func:`compile_oracle` compiles the
program once per source version into ``.cache/java/classes-<hash>/``; :func:`run_ops` runs a
batch of ops in this process's oracle JVM and returns one result dict per op.

Values cross the boundary as JSON, typed by the column type (see the Java file's header):
:func:`json_rows` renders an Arrow table in that form, and :func:`normalize` brings the rows of
an Arrow table and the rows Java returned to the same plain Python objects for comparison.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from tests.interop.served import Served, ServedError

REPO_ROOT: Path = Path(__file__).resolve().parents[2]
JAVA_SOURCE: Path = Path(__file__).resolve().with_name("java") / "PaimonOracle.java"
JAVA_CACHE: Path = REPO_ROOT / ".cache" / "java"
BRIDGE_JAR: Path = JAVA_CACHE / "paimon-python-java-bridge-0.9.0.jar"
JAVA_TIMEOUT_S: int = 300
SETUP_HINT = "run `bash scripts/setup.sh --oracle` (fetches the Paimon 0.9 jar into .cache/java/)"
#: the pyspark jars Paimon 0.9's bundle needs beside it (Hadoop's FileSystem and Configuration;
#: snappy-java and xz for Avro's snappy and xz codecs, which the bundle leaves to the engine's
#: classpath: without them Avro's CodecFactory says "Unrecognized codec: snappy")
_PYSPARK_JARS = ("hadoop-client-api-", "hadoop-client-runtime-", "snappy-java-", "xz-")

#: short runs: the C1 compiler alone and the serial collector halve the JVM's CPU time
_JVM_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")

_EPOCH = dt.datetime(1970, 1, 1)
_NANOS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


def _pyspark_jars() -> list[Path]:
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"pyspark is not installed in this venv: {SETUP_HINT}")
    jars_dir = Path(next(iter(spec.submodule_search_locations))) / "jars"
    found = []
    for prefix in _PYSPARK_JARS:
        matches = sorted(jars_dir.glob(f"{prefix}*.jar"))
        if not matches:
            raise RuntimeError(f"no {prefix}*.jar in {jars_dir}: {SETUP_HINT}")
        found.append(matches[-1])
    return found


def require_java_oracle() -> list[Path]:
    """The oracle's classpath jars; raise RuntimeError (never skip) when anything is missing."""
    for tool in ("java", "javac"):
        if shutil.which(tool) is None:
            raise RuntimeError(
                f"`{tool}` is not on PATH: install a JDK 17 (Debian: openjdk-17-jdk-headless) "
                f"and {SETUP_HINT}"
            )
    if not BRIDGE_JAR.is_file():
        raise RuntimeError(f"Java Paimon 0.9 oracle jar {BRIDGE_JAR} is missing: {SETUP_HINT}")
    return [BRIDGE_JAR, *_pyspark_jars()]


def compile_oracle() -> str:
    """Compile PaimonOracle.java if its source changed; return the full runtime classpath."""
    jars = require_java_oracle()
    digest = hashlib.sha256(JAVA_SOURCE.read_bytes()).hexdigest()[:16]
    classes = JAVA_CACHE / f"classes-{digest}"
    classpath = os.pathsep.join(str(p) for p in jars)
    if not (classes / "PaimonOracle.class").is_file():
        JAVA_CACHE.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix="staging-", dir=JAVA_CACHE))
        cmd = ["javac", "-nowarn", "-d", str(staging), "-cp", classpath, str(JAVA_SOURCE)]
        proc = subprocess.run(cmd, check=False, capture_output=True, text=True)
        if proc.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            raise RuntimeError(f"javac failed (exit {proc.returncode}):\n{proc.stderr}")
        try:
            staging.rename(classes)
        except OSError:  # another process compiled the same source first
            shutil.rmtree(staging, ignore_errors=True)
        for stale in JAVA_CACHE.glob("classes-*"):  # builds of older sources
            if stale != classes:
                shutil.rmtree(stale, ignore_errors=True)
    return os.pathsep.join([str(classes), classpath])


_SERVERS: dict[str, Served] = {}


def _server(classpath: str) -> Served:
    """The JVM serving ``classpath``'s oracle in this process (see :mod:`tests.interop.served`)."""
    if classpath not in _SERVERS:
        command = ["java", *_JVM_FLAGS, "-cp", classpath, "PaimonOracle", "--serve"]
        _SERVERS[classpath] = Served(command, "java-oracle")
    return _SERVERS[classpath]


def run_ops(
    classpath: str,
    warehouse: str | os.PathLike[str],
    ops: Sequence[dict[str, Any]],
    *,
    exclusive_commits: bool = False,
) -> list[dict[str, Any]]:
    """Run ``ops`` against ``warehouse`` in this process's oracle JVM (started on first use and
    kept, see :func:`_server`); one result dict per op, in order. ``exclusive_commits``: Java
    publishes its snapshots with an exclusive rename (the Java file's ``ExclusiveLocalFileIO``):
    Paimon 0.9's local rename moves over a snapshot another process published meanwhile.

    Raises RuntimeError with the failing op's stack trace when any op fails.
    """
    with tempfile.TemporaryDirectory(prefix="lakeops-java-oracle-") as tmp:
        spec_file = Path(tmp) / "ops.json"
        out_file = Path(tmp) / "results.jsonl"
        errors_file = Path(tmp) / "errors.txt"
        spec_file.write_text(
            json.dumps(
                {
                    "warehouse": os.fspath(warehouse),
                    "ops": list(ops),
                    "exclusive_commits": exclusive_commits,
                }
            ),
            encoding="utf-8",
        )
        try:
            reply = _server(classpath).request(
                f"{spec_file}\t{out_file}\t{errors_file}", JAVA_TIMEOUT_S
            )
        except ServedError as exc:
            raise RuntimeError(f"Java Paimon oracle: {exc}") from exc
        if reply != "ok":
            errors = errors_file.read_text(encoding="utf-8") if errors_file.exists() else ""
            raise RuntimeError(f"Java Paimon oracle failed ({reply}):\n{errors.rstrip()}")
        lines = out_file.read_text(encoding="utf-8").splitlines()
    results = [json.loads(line) for line in lines if line.strip()]
    if len(results) != len(ops):
        raise RuntimeError(f"Java Paimon oracle returned {len(results)} results for {len(ops)} ops")
    return results


# ---------------------------------------------------------------------------- value rendering
def _timestamp_text(value: int, unit: str) -> str:
    nanos = value * _NANOS[unit]
    seconds, frac = divmod(nanos, 1_000_000_000)
    wall = _EPOCH + dt.timedelta(seconds=seconds)
    return f"{wall:%Y-%m-%dT%H:%M:%S}.{frac:09d}"


def _render(value: Any, arrow_type: pa.DataType) -> Any:
    """One Python value (from ``as_py``, timestamps as raw integers) in the oracle's JSON form."""
    if value is None:
        return None
    t = pa.types
    if t.is_decimal(arrow_type):
        return format(value, "f")
    if t.is_date(arrow_type):
        return value.isoformat()
    if t.is_timestamp(arrow_type):
        return _timestamp_text(value, arrow_type.unit)
    if (
        t.is_binary(arrow_type)
        or t.is_large_binary(arrow_type)
        or t.is_fixed_size_binary(arrow_type)
    ):
        return base64.b64encode(value).decode("ascii")
    if t.is_map(arrow_type):
        return [
            [_render(k, arrow_type.key_type), _render(v, arrow_type.item_type)] for k, v in value
        ]
    if t.is_list(arrow_type) or t.is_large_list(arrow_type):
        return [_render(v, arrow_type.value_type) for v in value]
    if t.is_struct(arrow_type):
        return {f.name: _render(value[f.name], f.type) for f in arrow_type}
    if t.is_floating(arrow_type):
        # JSON has no NaN or infinity: Java's Double.parseDouble reads these strings
        value = float(value)
        if value != value:
            return "NaN"
        return value if abs(value) != float("inf") else ("Infinity" if value > 0 else "-Infinity")
    return value


def _timestamps_as_ints(arrow_type: pa.DataType) -> pa.DataType:
    """``arrow_type`` with every timestamp replaced by int64 (so ns values survive ``as_py``)."""
    t = pa.types
    if t.is_timestamp(arrow_type):
        return pa.int64()
    if t.is_time32(arrow_type):  # TIME travels as its millisecond of the day
        return pa.int32()
    if t.is_map(arrow_type):
        return pa.map_(
            _timestamps_as_ints(arrow_type.key_type),
            pa.field("value", _timestamps_as_ints(arrow_type.item_type)),
        )
    if t.is_list(arrow_type):
        return pa.list_(pa.field("element", _timestamps_as_ints(arrow_type.value_type)))
    if t.is_struct(arrow_type):
        return pa.struct([pa.field(f.name, _timestamps_as_ints(f.type)) for f in arrow_type])
    return arrow_type


def json_rows(table: pa.Table, kinds: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Rows of ``table`` in the oracle's JSON form (``kinds``: a row kind per row, e.g. "+I")."""
    columns = {}
    for field in table.schema:
        column = table.column(field.name)
        raw = column.cast(_timestamps_as_ints(field.type)).to_pylist()
        columns[field.name] = [_render(v, field.type) for v in raw]
    rows = [{name: values[i] for name, values in columns.items()} for i in range(table.num_rows)]
    if kinds is not None:
        for row, kind in zip(rows, kinds, strict=True):
            row["__kind__"] = kind
    return rows


def normalize(rows: Sequence[dict[str, Any]], keys: Sequence[str]) -> list[dict[str, Any]]:
    """Rows (without their ``__kind__``) sorted by ``keys``, NULL keys last."""
    out = [{k: v for k, v in r.items() if k != "__kind__"} for r in rows]
    return sorted(out, key=lambda r: tuple((r[k] is None, r[k]) for k in keys))


def id_v_model(*batches: pa.Table) -> dict[int, Any]:
    """The plain model of upserts of ``(id, v)`` batches in order: the last ``v`` per id."""
    out: dict[int, Any] = {}
    for b in batches:
        out.update(zip(b.column("id").to_pylist(), b.column("v").to_pylist(), strict=True))
    return out


def java_id_v_rows(result: dict[str, Any]) -> dict[int, Any]:
    """The ``(id, v)`` rows of a Java ``read`` result, by id."""
    return {int(r["id"]): r["v"] for r in result["rows"]}
