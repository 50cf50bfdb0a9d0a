"""Checks an image's Python environment at build time (both Dockerfiles run it), and
tests/test_infra.py runs it against the project's own environment.

    python check_image.py --pyspark 4.3.0 [--airflow]

Fails (exit 1, one line per problem) unless:

* ``pyspark`` is installed at exactly the requested version, and its files are its own
  (``pyspark.__version__`` agrees with the package metadata: ``pyspark-client``, which
  ``apache-airflow-providers-apache-spark`` pulls in, overwrites them without telling pip);
* neither ``pyspark-client`` nor ``apache-airflow-providers-apache-spark`` is installed;
* lakeops imports with its Spark, S3 and PostgreSQL dependencies;
* a Java runtime Spark 4 supports (17 or 21) is on PATH;
* with ``--airflow``: Airflow 3 is installed and lists lakeops as a provider.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata as metadata
import re
import shutil
import subprocess
import sys

FORBIDDEN = ("pyspark-client", "apache-airflow-providers-apache-spark")
JAVA_MAJORS = (17, 21)


def _installed(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _java_major() -> int | None:
    java = shutil.which("java")
    if java is None:
        return None
    out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    match = re.search(r'version "(\d+)', out.stderr + out.stdout)
    return int(match.group(1)) if match else None


def problems(pyspark_version: str, airflow: bool) -> list[str]:
    found: list[str] = []
    installed = _installed("pyspark")
    if installed != pyspark_version:
        found.append(f"pyspark {installed} is installed, expected {pyspark_version}")
    else:
        import pyspark

        if pyspark.__version__ != installed:
            found.append(
                f"pyspark's files say {pyspark.__version__} but pip installed {installed}: "
                "another package (pyspark-client?) overwrote them"
            )
    for name in FORBIDDEN:
        if _installed(name) is not None:
            found.append(f"{name} is installed: it overwrites pyspark's files; remove it")
    for module in ("lakeops", "lakeops.spark", "s3fs", "psycopg"):
        try:
            importlib.import_module(module)
        except Exception as exc:
            found.append(f"cannot import {module}: {exc}")
    major = _java_major()
    if major not in JAVA_MAJORS:
        found.append(f"Java {major} on PATH; Spark 4 needs Java 17 or 21")
    if airflow:
        version = _installed("apache-airflow")
        if version is None or not version.startswith("3."):
            found.append(f"Airflow 3 expected, found {version}")
        providers = {e.value for e in metadata.entry_points(group="apache_airflow_provider")}
        if not any(v.startswith("lakeops.") for v in providers):
            found.append("lakeops is not registered as an Airflow provider")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pyspark", required=True, help="the exact pyspark version expected")
    parser.add_argument("--airflow", action="store_true", help="also check the Airflow side")
    args = parser.parse_args(argv)
    found = problems(args.pyspark, args.airflow)
    for line in found:
        print(f"check_image: {line}", file=sys.stderr)
    if not found:
        print(f"check_image: ok (pyspark {args.pyspark}, Java {_java_major()})")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
