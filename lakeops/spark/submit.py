"""Run a lakeops Spark job (:mod:`lakeops.spark.jobs`) through ``spark-submit``.

The job file is this installed package's ``lakeops/spark/jobs.py``. Storage and catalog options
(credentials, lock DSNs) reach the job through the environment of the ``spark-submit`` process
(``LAKEOPS_STORAGE_OPTIONS`` / ``LAKEOPS_CATALOG_OPTIONS``), never its command line, so they do not
show in process listings, Spark's UI or task logs. Spark configuration entries whose key names a
credential (:func:`lakeops.redact.is_secret_key`: ``spark.hadoop.fs.s3a.secret.key``,
``…access.key``, ``…password``, ``…token`` …) go to ``spark-submit`` in a properties file
(``--properties-file``, mode 0600, ``--load-spark-defaults`` so ``spark-defaults.conf`` still
applies) that is deleted when the job ends; the other entries stay ``--conf`` arguments. Every
credential is registered with Airflow's secrets masker (inside Airflow) and blanked out of the
output tail of a :class:`~lakeops.errors.JobError`. ``spark-submit`` is taken from
``SPARK_HOME``, else the installed ``pyspark`` package, else ``PATH``.

Spark's own log is kept at ``WARN`` unless asked otherwise (``log_level``): the job starts with
``spark.log.level`` set (a ``spark.log.level`` in ``conf`` wins), and the few lines Spark logs
below that level before its context applies it are not relayed to ``log`` (they stay in the
output tail of a :class:`~lakeops.errors.JobError`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from lakeops.errors import ConfigurationError, JobError
from lakeops.redact import REDACTED, is_secret_key, redact_text, register_secret

__all__ = [
    "OPTIONS_REDACTION",
    "SPARK_LOG_LEVELS",
    "check_log_level",
    "is_spark_log_below",
    "find_spark_home",
    "job_file",
    "properties_file",
    "split_secret_conf",
    "spark_submit",
    "spark_submit_command",
]


def job_file() -> str:
    """Path of the job entry point to hand to ``spark-submit``."""
    return str(Path(__file__).with_name("jobs.py"))


def find_spark_home() -> str:
    """``SPARK_HOME``, or the directory of the installed ``pyspark`` package."""
    if os.environ.get("SPARK_HOME"):
        return os.environ["SPARK_HOME"]
    try:
        import pyspark
    except ImportError:
        submit = shutil.which("spark-submit")
        if submit is None:
            raise ConfigurationError(
                "spark-submit not found: install lakeops[spark] or set SPARK_HOME"
            ) from None
        return str(Path(submit).resolve().parent.parent)
    return str(Path(pyspark.__file__).parent)


#: where Spark prints data-source options (plans of V1 sources, its UI) it redacts those whose
#: names match this regex (Spark's default is ``(?i)url``): lakeops' JSON options may hold
#: credentials. A defence in depth: Spark 4.3 prints no options of a Python data source's scan.
OPTIONS_REDACTION = ("spark.sql.redaction.options.regex", "(?i)url|storage_options|catalog_options")


#: Spark's log levels (``spark.log.level``, ``SparkContext.setLogLevel``), most verbose first.
SPARK_LOG_LEVELS = ("ALL", "TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF")

# a log4j line of Spark's default pattern ("26/11/26 07:47:58 INFO SparkContext: …") or of its
# structured JSON layout ({"ts": …, "level": "INFO", …})
_PLAIN_LOG = re.compile(r"^\d{2}/\d{2}/\d{2} \d{2}:\d{2}:\d{2} ([A-Z]+) ")
_JSON_LOG = re.compile(r'^\{"ts":[^,]*,\s*"level":\s*"([A-Z]+)"')


def check_log_level(level: str) -> str:
    """``level`` upper-cased if it is one of :data:`SPARK_LOG_LEVELS`, else a
    :class:`~lakeops.errors.ConfigurationError` naming them."""
    upper = str(level).strip().upper()
    if upper not in SPARK_LOG_LEVELS:
        raise ConfigurationError(
            f"Spark log level must be one of {', '.join(SPARK_LOG_LEVELS)}, got {level!r}"
        )
    return upper


def is_spark_log_below(line: str, level: str) -> bool:
    """Whether ``line`` is a Spark (log4j) log line of a level below ``level``."""
    match = _PLAIN_LOG.match(line) or _JSON_LOG.match(line)
    if match is None or match.group(1) not in SPARK_LOG_LEVELS:
        return False
    return SPARK_LOG_LEVELS.index(match.group(1)) < SPARK_LOG_LEVELS.index(level)


def split_secret_conf(conf: Mapping[str, str] | None) -> tuple[dict[str, str], dict[str, str]]:
    """``conf`` as (plain entries, credential entries) by :func:`~lakeops.redact.is_secret_key`."""
    plain: dict[str, str] = {}
    secret: dict[str, str] = {}
    for key, value in (conf or {}).items():
        (secret if is_secret_key(str(key)) else plain)[str(key)] = str(value)
    return plain, secret


def _escape_properties(text: str, *, key: bool) -> str:
    """``text`` as a ``java.util.Properties`` key or value (``\\uXXXX`` outside ASCII)."""
    out = []
    for i, ch in enumerate(text):
        code = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch in "=:#!":
            out.append("\\" + ch)
        elif ch == " " and (key or i == 0):
            out.append("\\ ")
        elif ch in "\t\n\r\f":
            out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}[ch])
        elif code < 0x20 or code > 0x7E:
            data = ch.encode("utf-16-be")  # a surrogate pair outside the BMP, as Java reads it
            out.extend(f"\\u{int.from_bytes(data[j : j + 2]):04x}" for j in range(0, len(data), 2))
        else:
            out.append(ch)
    return "".join(out)


@contextlib.contextmanager
def properties_file(entries: Mapping[str, str]) -> Iterator[str]:
    """A private (0600) Spark properties file holding ``entries``, deleted on exit.

    Spark trims the values it reads from a properties file, so a value with leading or
    trailing white space is refused rather than silently changed."""
    for key, value in entries.items():
        if value != value.strip():
            raise ConfigurationError(
                f"spark_conf {key!r}: the value has leading or trailing white space, which "
                "spark-submit's properties file would strip; remove it"
            )
    fd, path = tempfile.mkstemp(prefix="lakeops-spark-", suffix=".properties")  # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="ascii") as out:
            for key, value in entries.items():
                line = f"{_escape_properties(key, key=True)}={_escape_properties(value, key=False)}"
                out.write(line + "\n")
        yield path
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def spark_submit_command(
    job: str,
    job_args: Sequence[str],
    *,
    master: str = "local[*]",
    conf: Mapping[str, str] | None = None,
    py_files: Sequence[str] = (),
    python: str = sys.executable,
    properties: str | None = None,
    log_level: str = "WARN",
) -> list[str]:
    """The ``spark-submit`` argument list for ``job`` (``write``, ``compact``, ``flush``…),
    with ``spark.log.level`` at ``log_level`` unless ``conf`` sets it.

    ``conf`` entries become ``--conf`` arguments, which anyone can read in a process listing:
    a credential among them is refused — pass it in the ``properties`` file (see
    :func:`properties_file`; :func:`spark_submit` does this itself)."""
    _, secret = split_secret_conf(conf)
    if secret:
        raise ConfigurationError(
            f"spark conf {sorted(secret)} hold credentials and would show on the command "
            "line; pass them through a properties file (spark_submit does)"
        )
    command = [
        str(Path(find_spark_home()) / "bin" / "spark-submit"),
        "--master",
        master,
        "--name",
        f"lakeops-{job}",
        "--conf",
        f"spark.pyspark.python={python}",
        "--conf",
        f"spark.pyspark.driver.python={python}",
    ]
    defaults = {
        OPTIONS_REDACTION[0]: OPTIONS_REDACTION[1],
        "spark.log.level": check_log_level(log_level),
    }
    for key, value in {**defaults, **(conf or {})}.items():
        command += ["--conf", f"{key}={value}"]
    if properties is not None:
        command += ["--properties-file", properties, "--load-spark-defaults"]
    if py_files:
        command += ["--py-files", ",".join(py_files)]
    return [*command, job_file(), job, *job_args]


def _secret_values(
    secret_conf: Mapping[str, str],
    storage_options: Mapping[str, Any] | None,
    catalog_options: Mapping[str, str] | None,
) -> list[str]:
    """Every credential value that must not show in a log line or an error."""
    values = list(secret_conf.values())

    def walk(options: Mapping[str, Any]) -> None:
        for key, value in options.items():
            if isinstance(value, Mapping):
                walk(value)
            elif is_secret_key(str(key)) or str(key).lower().endswith("dsn"):
                values.append(str(value))

    walk(storage_options or {})
    walk(catalog_options or {})
    return [v for v in values if v]


def _scrub(line: str, secrets: Sequence[str]) -> str:
    """``line`` without any of ``secrets`` (of 5 characters or more, as Airflow's masker) and
    without URI user-info or ``password=…`` assignments."""
    for value in sorted(secrets, key=len, reverse=True):
        if len(value) >= 5:
            line = line.replace(value, REDACTED)
    return redact_text(line)


def spark_submit(
    job: str,
    job_args: Sequence[str],
    *,
    master: str = "local[*]",
    conf: Mapping[str, str] | None = None,
    py_files: Sequence[str] = (),
    storage_options: Mapping[str, Any] | None = None,
    catalog_options: Mapping[str, str] | None = None,
    python: str = sys.executable,
    log: Callable[[str], None] | None = None,
    timeout: float | None = None,
    log_level: str = "WARN",
) -> dict[str, Any]:
    """Submit a job, stream its output lines to ``log`` (Spark's log lines only from
    ``log_level`` up), and return its JSON summary (the last output line). Raises
    :class:`~lakeops.errors.JobError` with the tail of the output when it fails. Credential entries
    of ``conf`` travel in a private properties file, never the command line; every credential is
    registered with Airflow's secrets masker and blanked out of the lines passed to ``log`` and of
    the error."""
    plain, secret = split_secret_conf(conf)
    secrets = _secret_values(secret, storage_options, catalog_options)
    for value in secrets:
        register_secret(value)
    with contextlib.ExitStack() as stack:
        properties = stack.enter_context(properties_file(secret)) if secret else None
        command = spark_submit_command(
            job,
            job_args,
            master=master,
            conf=plain,
            py_files=py_files,
            python=python,
            properties=properties,
            log_level=log_level,
        )
        level = str((conf or {}).get("spark.log.level") or log_level).upper()
        if log is not None and level in SPARK_LOG_LEVELS:
            relay = log

            def log(line: str) -> None:
                if not is_spark_log_below(line, level):
                    relay(line)

        return _run(command, job, secrets, storage_options, catalog_options, python, log, timeout)


def _run(
    command: list[str],
    job: str,
    secrets: Sequence[str],
    storage_options: Mapping[str, Any] | None,
    catalog_options: Mapping[str, str] | None,
    python: str,
    log: Callable[[str], None] | None,
    timeout: float | None,
) -> dict[str, Any]:
    env = {
        **os.environ,
        "SPARK_HOME": find_spark_home(),
        "PYSPARK_PYTHON": python,
        "PYSPARK_DRIVER_PYTHON": python,
        "LAKEOPS_STORAGE_OPTIONS": json.dumps(dict(storage_options or {})),
        "LAKEOPS_CATALOG_OPTIONS": json.dumps(dict(catalog_options or {})),
    }
    tail: list[str] = []
    summary: dict[str, Any] | None = None
    with subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            line = _scrub(line.rstrip("\n"), secrets)
            if log is not None:
                log(line)
            tail = [*tail[-39:], line]
            if line.startswith("{") and '"job"' in line:
                with contextlib.suppress(json.JSONDecodeError):
                    summary = json.loads(line)
        code = proc.wait(timeout=timeout)
    if code != 0 or summary is None:
        raise JobError(
            f"spark-submit {job} exited with code {code}"
            + (" without a summary line" if code == 0 else "")
            + ":\n"
            + "\n".join(tail[-20:])
        )
    return summary
