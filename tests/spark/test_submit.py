"""``spark_submit`` keeps credentials off the command line: a stand-in ``spark-submit`` (first on
``SPARK_HOME/bin``) records the argv and the properties file it was handed, so what a process
listing would show is checked directly. Spark itself reads such a file in
``tests/airflow/test_operators.py``'s spark-submit test."""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from lakeops.errors import ConfigurationError, JobError
from lakeops.spark.submit import properties_file, spark_submit, spark_submit_command

SECRET = "s3cr3t/Value+with=odd:chars#!é"
ACCESS = "AKIA-TEST-ACCESS-KEY"

FAKE = """#!{python}
import json, os, stat, sys
args = sys.argv[1:]
record = {{"argv": sys.argv, "env_storage": os.environ.get("LAKEOPS_STORAGE_OPTIONS")}}
if "--properties-file" in args:
    path = args[args.index("--properties-file") + 1]
    record["properties_path"] = path
    record["properties_mode"] = stat.S_IMODE(os.stat(path).st_mode)
    with open(path, encoding="ascii") as f:
        record["properties"] = f.read()
with open({record!r}, "w") as out:
    json.dump(record, out)
print("log line naming " + {echo!r})
print("26/11/26 07:47:58 INFO SparkContext: Running Spark version 4.3.0")
print('{{"ts":"2026-11-26T07:47:58.1Z","level":"INFO","msg":"Running Spark version 4.3.0"}}')
print("26/11/26 07:47:59 WARN NativeCodeLoader: Unable to load native-hadoop library")
print("a line the job printed itself")
if os.environ.get("FAKE_FAIL"):
    sys.exit(3)
print(json.dumps({{"job": "compact", "snapshot_id": 7}}))
"""


@pytest.fixture
def fake_spark(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``SPARK_HOME`` whose ``bin/spark-submit`` records its call in ``record.json`` and
    prints a line holding the secret and a credentialed URI."""
    home = tmp_path / "spark"
    (home / "bin").mkdir(parents=True)
    record = tmp_path / "record.json"
    script = home / "bin" / "spark-submit"
    echo = f"{SECRET} and s3://{ACCESS}:{SECRET}@bkt/wh"
    script.write_text(FAKE.format(python=sys.executable, record=str(record), echo=echo))
    script.chmod(0o755)
    monkeypatch.setenv("SPARK_HOME", str(home))
    return record


def _submit(**kwargs: Any) -> dict[str, Any]:
    return spark_submit(
        "compact",
        ["--table", "/wh/db.db/t"],
        master="local[1]",
        conf={
            "spark.executor.memory": "1g",
            "spark.hadoop.fs.s3a.access.key": ACCESS,
            "spark.hadoop.fs.s3a.secret.key": SECRET,
        },
        storage_options={"key": ACCESS, "secret": SECRET},
        **kwargs,
    )


def test_secrets_go_in_a_private_properties_file_not_argv(fake_spark: Path) -> None:
    lines: list[str] = []
    assert _submit(log=lines.append) == {"job": "compact", "snapshot_id": 7}
    record = json.loads(fake_spark.read_text())
    argv = " ".join(record["argv"])
    assert SECRET not in argv and ACCESS not in argv
    assert "spark.executor.memory=1g" in argv  # plain settings stay --conf arguments
    # Spark redacts lakeops' JSON options (they may hold credentials) in plans and its UI
    assert "spark.sql.redaction.options.regex=(?i)url|storage_options|catalog_options" in argv
    assert "--load-spark-defaults" in record["argv"]
    assert record["properties_mode"] == stat.S_IRUSR | stat.S_IWUSR
    # java.util.Properties escapes, read back as Java reads them
    assert record["properties"].splitlines() == [
        "spark.hadoop.fs.s3a.access.key=AKIA-TEST-ACCESS-KEY",
        "spark.hadoop.fs.s3a.secret.key=s3cr3t/Value+with\\=odd\\:chars\\#\\!\\u00e9",
    ]
    assert not os.path.exists(record["properties_path"])  # removed afterwards
    assert json.loads(record["env_storage"]) == {"key": ACCESS, "secret": SECRET}
    # the job's output reaches the log with every credential blanked out
    assert lines[0] == "log line naming *** and s3://***@bkt/wh"


SPARK_INFO = re.compile(r'^(\d\d/\d\d/\d\d \S+ INFO |\{"ts":[^,]*,"level":"INFO")')


@pytest.mark.parametrize("level", [None, "WARN", "info"])
def test_spark_log_relayed_at_warn_unless_asked(fake_spark: Path, level: str | None) -> None:
    """Spark starts with ``spark.log.level`` at WARN (or the level asked for), and its log lines
    below that level are not relayed; the job's own lines always are."""
    lines: list[str] = []
    _submit(log=lines.append, **({} if level is None else {"log_level": level}))
    argv = json.loads(fake_spark.read_text())["argv"]
    expected = "INFO" if level == "info" else "WARN"
    assert f"spark.log.level={expected}" in argv
    relayed_info = [line for line in lines if SPARK_INFO.match(line)]
    assert len(relayed_info) == (2 if expected == "INFO" else 0)
    assert "a line the job printed itself" in lines
    assert any(" WARN NativeCodeLoader" in line for line in lines)


def test_unknown_spark_log_level_is_refused(fake_spark: Path) -> None:
    with pytest.raises(ConfigurationError, match="WARN"):
        _submit(log_level="LOUD")


def test_failure_message_holds_no_credential(
    fake_spark: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_FAIL", "1")
    with pytest.raises(JobError, match="exited with code 3") as info:
        _submit()
    assert SECRET not in str(info.value) and ACCESS not in str(info.value)
    assert "log line naming ***" in str(info.value)
    assert not os.path.exists(json.loads(fake_spark.read_text())["properties_path"])


def test_command_builder_refuses_credentials_in_conf(fake_spark: Path) -> None:
    with pytest.raises(ConfigurationError, match="properties file"):
        spark_submit_command("compact", [], conf={"spark.hadoop.fs.s3a.secret.key": SECRET})


def test_properties_file_refuses_values_spark_would_trim() -> None:
    with pytest.raises(ConfigurationError, match="white space"), properties_file({"k.token": " x"}):
        pass
