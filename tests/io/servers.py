"""Real servers the storage tests start themselves: moto (S3 protocol) and PostgreSQL, both on
free loopback ports, both stopped at the end."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def moto_server() -> Iterator[str]:
    """A moto S3 server in its own process; yields its endpoint URL."""
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def s3_options(endpoint: str) -> dict[str, Any]:
    return {
        "key": "testing",
        "secret": "testing",
        "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"},
    }


def make_bucket(endpoint: str, name: str) -> None:
    import boto3

    boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    ).create_bucket(Bucket=name)


def postgres_binaries() -> str | None:
    for candidate in (
        "/usr/lib/postgresql/15/bin",
        "/usr/lib/postgresql/16/bin",
        "/usr/lib/postgresql/17/bin",
    ):
        if os.path.exists(os.path.join(candidate, "postgres")):
            return candidate
    found = shutil.which("postgres")
    return os.path.dirname(found) if found else None


@contextmanager
def postgres_server() -> Iterator[str | None]:
    """A throwaway PostgreSQL cluster on loopback (run as the ``postgres`` user, since the
    server refuses root); yields a DSN, or None if no server can be started here."""
    bindir = postgres_binaries()
    if bindir is None or (os.geteuid() != 0 and shutil.which("initdb") is None):
        yield None
        return
    data = tempfile.mkdtemp(prefix="lakeops-pg-")
    os.chmod(data, 0o777)
    port = free_port()
    run_as = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    try:
        subprocess.run(
            [*run_as, f"{bindir}/initdb", "-D", f"{data}/db", "-A", "trust", "-U", "postgres"],
            check=True,
            capture_output=True,
        )
        subprocess.run(
            [
                *run_as,
                f"{bindir}/pg_ctl",
                "-D",
                f"{data}/db",
                "-l",
                f"{data}/log",
                "-w",
                "-o",
                f"-p {port} -k {data} -h 127.0.0.1",
                "start",
            ],
            check=True,
            capture_output=True,
            timeout=60,
        )
    except (subprocess.SubprocessError, OSError):
        shutil.rmtree(data, ignore_errors=True)
        yield None
        return
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            [*run_as, f"{bindir}/pg_ctl", "-D", f"{data}/db", "-m", "immediate", "stop"],
            capture_output=True,
            timeout=60,
        )
        time.sleep(0.2)
        shutil.rmtree(data, ignore_errors=True)


@contextmanager
def moto_server_process(env: dict[str, str] | None = None) -> Iterator[str]:
    """A moto S3 server in a child process (its own interpreter, as a remote store would be),
    with ``env`` added to its environment; yields its endpoint URL."""
    import sys

    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the moto server process did not start") from None
                time.sleep(0.05)  # polling a port that is not listening yet
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=30)


@contextmanager
def moto_server_requiring_auth() -> Iterator[str]:
    """A moto S3 server that checks credentials on every request (moto's IAM mode,
    ``INITIAL_NO_AUTH_ACTION_COUNT=0``): no access key is known to it, so every request is
    refused as AWS refuses an unknown key. Yields its endpoint URL."""
    with moto_server_process({"INITIAL_NO_AUTH_ACTION_COUNT": "0"}) as url:
        yield url
