"""The kept oracle process (:mod:`tests.interop.served`), driven with a small Python echo
server in place of an oracle: one process answers many requests, a changed environment gets a
new one (as a fresh subprocess would see it), and a process that dies or hangs is killed and
named with what it printed, the next request starting a new one."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from tests.interop.served import Served, ServedError

#: replies "<pid> <TZ> <line>"; "die" exits at once, "hang" never answers
ECHO = r"""
import os, sys, time
for line in sys.stdin:
    line = line.rstrip("\n")
    if line == "die":
        print("dying on request", file=sys.stderr, flush=True)
        sys.exit(3)
    if line == "hang":
        time.sleep(60)
    print(os.getpid(), os.environ.get("TZ", "-"), line, flush=True)
"""


@pytest.fixture
def served() -> Iterator[Served]:
    server = Served([sys.executable, "-c", ECHO], "echo")
    yield server
    server.close()


def test_one_process_answers_request_after_request(served: Served) -> None:
    first = served.request("a", 30).split()
    second = served.request("b", 30).split()
    assert first[2:] == ["a"] and second[2:] == ["b"]
    assert first[0] == second[0]  # the same process


def test_a_changed_environment_gets_a_new_process(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TZ", raising=False)
    pid, tz, _ = served.request("a", 30).split()
    assert tz == "-"
    monkeypatch.setenv("TZ", "America/Sao_Paulo")
    new_pid, new_tz, _ = served.request("b", 30).split()
    assert new_tz == "America/Sao_Paulo" and new_pid != pid


def test_the_next_test_keeps_the_process(served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest names the running test in ``PYTEST_CURRENT_TEST``, which changes from test to test
    but not what an oracle does: the process is kept across tests."""
    pid = served.request("a", 30).split()[0]
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "tests/x.py::test_other (call)")
    assert served.request("b", 30).split()[0] == pid


def test_a_dead_process_is_named_and_replaced(served: Served) -> None:
    pid = served.request("a", 30).split()[0]
    with pytest.raises(ServedError, match="died") as err:
        served.request("die", 30)
    assert "dying on request" in str(err.value)
    assert served.request("b", 30).split()[0] != pid


def test_a_hanging_process_is_killed_after_the_timeout(served: Served) -> None:
    pid = served.request("a", 30).split()[0]
    with pytest.raises(ServedError, match="timed out"):
        served.request("hang", 0.5)
    assert served.request("b", 30).split()[0] != pid
