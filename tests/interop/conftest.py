"""Fixtures of the interop tests: the Java Paimon 0.9 oracle, compiled once per session."""

from __future__ import annotations

import pytest

from tests.interop.java_oracle import compile_oracle


@pytest.fixture(scope="session")
def java_classpath() -> str:
    """Classpath of the compiled PaimonOracle (raises, never skips, when Java or the jar is
    missing: run ``bash scripts/setup.sh --oracle``)."""
    return compile_oracle()
