"""Keeping credentials out of messages, reprs, logs and command lines.

* :func:`redact_uri` / :func:`redact_text` — the text with the user-info of every URI
  (``s3://KEY:SECRET@bucket/wh`` → ``s3://***@bucket/wh``) and every ``password=…``-like
  assignment (libpq key/value DSNs, signed-URL query parameters) replaced by ``***``; for error
  messages that echo a warehouse URI, a DSN or a library's error text.
* :func:`uri_has_password` — whether a URI carries a password in its user-info (lakeops refuses
  such warehouse URIs: credentials belong in storage options).
* :func:`is_secret_key` — whether a configuration key (a Spark conf, a storage option) names a
  credential, e.g. ``spark.hadoop.fs.s3a.secret.key``.
* :func:`register_secret` — hand a value to Airflow's secrets masker when running inside
  Airflow (the task process has imported ``airflow``); a no-op elsewhere.
"""

from __future__ import annotations

import re
import sys
from urllib.parse import urlsplit

__all__ = [
    "REDACTED",
    "is_secret_key",
    "redact_text",
    "redact_uri",
    "register_secret",
    "uri_has_password",
]

REDACTED = "***"

# scheme://userinfo@ — up to the last "@" before a blank: an unencoded "/" or "@" in a secret
# must not leave part of it behind (a path holding "@" is redacted too: the safe side)
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>(?:[^\s@]*@)+)")
# name=value where the name looks like a credential (libpq DSN words, query parameters)
_ASSIGNMENT = re.compile(
    r"(?i)(?P<name>\b[\w.\-]*(?:password|passwd|pwd|secret|token|credential|signature|"
    r"apikey|api_key|access_key|accesskey|sig)[\w.\-]*\s*=\s*)"
    r"(?P<value>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^\s&;,]+)"
)
_SECRET_WORDS = ("secret", "password", "passwd", "token", "credential", "signature")


def redact_uri(uri: str) -> str:
    """``uri`` with any user-info replaced by ``***`` (``s3://***@bucket/wh``)."""
    return _USERINFO.sub(lambda m: f"{m.group('scheme')}{REDACTED}@", uri)


def redact_text(text: str) -> str:
    """``text`` with the user-info of every URI in it and every credential-like ``name=value``
    assignment redacted."""
    text = redact_uri(text)
    return _ASSIGNMENT.sub(lambda m: f"{m.group('name')}{REDACTED}", text)


def uri_has_password(uri: str) -> bool:
    """Whether ``uri`` is ``scheme://user:password@…`` (a password in its user-info)."""
    try:
        if urlsplit(uri).password is not None:
            return True
    except ValueError:  # e.g. an unbalanced "[" in the host
        pass
    m = _USERINFO.match(uri.strip())
    return m is not None and ":" in m.group("userinfo")


def is_secret_key(name: str) -> bool:
    """Whether a configuration key names a credential: it contains ``secret``, ``password``,
    ``token``, ``credential``…, or one of its ``.``/``_``/``-`` separated words is or ends
    with ``key`` (``fs.s3a.access.key``, ``fs.azure.account.key.acct``, ``apiKey``) — but not
    ``keytab``/``keyStore`` paths or ``keySizeBits``."""
    lowered = name.lower()
    if any(word in lowered for word in _SECRET_WORDS):
        return True
    return any(part.endswith("key") for part in re.split(r"[._\-]", lowered))


def register_secret(value: object) -> None:
    """Register ``value`` with Airflow's secrets masker, so task logs show ``***`` instead,
    when this process runs Airflow (``airflow`` is imported); otherwise nothing to do."""
    if value is None or value == "" or "airflow" not in sys.modules:
        return
    try:
        from airflow.sdk.log import mask_secret
    except ImportError:  # an Airflow without the Task SDK: nothing lakeops can register with
        return
    mask_secret(str(value))
