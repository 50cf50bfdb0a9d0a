"""Storage failures that say what failed, quickly: bounded connection attempts on object stores
and one error class for each cause.

* :func:`bounded_options` — the storage options with S3's client bounded by default: a
  connection attempt gives up after :data:`S3_CONNECT_TIMEOUT_S` seconds and a failed request
  is tried :data:`S3_MAX_RETRIES` more times (botocore's ``standard`` retry mode, jittered), so
  an endpoint that does not answer is reported within seconds rather than after botocore's
  default five attempts per call. ``config_kwargs`` the caller sets (``connect_timeout``,
  ``retries``) win.
* :func:`classify` — a storage library's exception as the lakeops error for its cause: the
  endpoint unreachable (:class:`~lakeops.errors.StorageUnreachableError`) or the credentials
  refused (:class:`~lakeops.errors.StorageAccessDeniedError`); None for anything else (a
  missing file stays a :class:`FileNotFoundError`). Messages name the endpoint, with any
  user-info redacted, and never a credential.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lakeops.errors import StorageAccessDeniedError, StorageError, StorageUnreachableError
from lakeops.redact import redact_text, redact_uri

__all__ = [
    "S3_CONNECT_TIMEOUT_S",
    "S3_MAX_RETRIES",
    "bounded_options",
    "classify",
    "endpoint_of",
]

S3_CONNECT_TIMEOUT_S = 2
"""Seconds one connection attempt to an S3 endpoint may take (botocore's default is 60)."""

S3_MAX_RETRIES = 2
"""Retries of a failed S3 request after the first attempt (botocore's default: 4)."""

_S3_PROTOCOLS = ("s3", "s3a")


def bounded_options(protocol: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with the S3 client's connect timeout and retries bounded unless set (see
    the module docstring); unchanged for other stores. The caller's mapping is not modified."""
    out = dict(options)
    if protocol not in _S3_PROTOCOLS:
        return out
    config = dict(out.get("config_kwargs") or {})
    config.setdefault("connect_timeout", S3_CONNECT_TIMEOUT_S)
    config.setdefault("retries", {"max_attempts": S3_MAX_RETRIES, "mode": "standard"})
    out["config_kwargs"] = config
    return out


def endpoint_of(protocol: str, options: Mapping[str, Any]) -> str:
    """The endpoint the storage client talks to, for messages: ``client_kwargs.endpoint_url``
    or ``endpoint_url`` (user-info redacted), else the protocol's default service."""
    client = options.get("client_kwargs") or {}
    url = client.get("endpoint_url") if isinstance(client, Mapping) else None
    url = url or options.get("endpoint_url")
    if url:
        return redact_uri(str(url))
    return f"the default {protocol.upper()} endpoint" if protocol in _S3_PROTOCOLS else protocol


def _is_connection_failure(exc: BaseException) -> bool:
    if isinstance(exc, (ConnectionRefusedError, ConnectionResetError, TimeoutError)):
        return True
    try:  # botocore: EndpointConnectionError, ConnectTimeoutError, ConnectionClosedError …
        from botocore.exceptions import ConnectionError as BotoConnectionError
    except ImportError:  # pragma: no cover - the S3 extra is not installed
        return False
    return isinstance(exc, BotoConnectionError)


def classify(exc: BaseException, *, endpoint: str, what: str) -> StorageError | None:
    """The lakeops error for ``exc``, raised while ``what`` (e.g. ``"checking bucket 'wh'"``)
    talked to ``endpoint``; None when ``exc`` is not an unreachable endpoint or refused
    credentials (or already a lakeops storage error)."""
    if isinstance(exc, (StorageError, FileNotFoundError)):
        return None
    detail = redact_text(str(exc))[:300]
    if _is_connection_failure(exc):
        return StorageUnreachableError(
            f"storage endpoint {endpoint} is unreachable ({type(exc).__name__}: {detail}) "
            f"while {what}: check the endpoint URL and port in the storage options "
            "(client_kwargs.endpoint_url) and that the server is running",
            endpoint=endpoint,
        )
    if isinstance(exc, PermissionError):
        return StorageAccessDeniedError(
            f"storage endpoint {endpoint} refused the credentials while {what} ({detail}): "
            "check the access key and secret in the storage options (or the Airflow "
            "connection) and their permissions on the bucket",
            endpoint=endpoint,
        )
    return None
