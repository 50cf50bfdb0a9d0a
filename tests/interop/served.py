"""One long-lived oracle process per test process, answering one request line at a time.

Starting the Java oracle costs about a second of JVM start and class loading, and the pypaimon
oracle half a second of imports, on every call; the interop suites make hundreds of calls. A
:class:`Served` process is started on first use and kept while the calling process's
environment and working directory stay what they were when it started (a test that sets
``TZ`` or a credential gets a process of its own, exactly as a fresh subprocess would see it;
``PYTEST_CURRENT_TEST``, which pytest changes for every test, does not count), so one process
serves a whole test session; it is restarted when it dies and killed when the tests end.

The protocol: one request line in, one reply line out, on the process's standard input and
output; the process sends anything else it prints to its standard error, which goes to a file
(read back for a failure's report), never a pipe that could fill and stall it.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import select
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path


class ServedError(RuntimeError):
    """The served process died or did not answer in time (it has been killed)."""


#: variables that change from test to test without changing what an oracle does
_VOLATILE = frozenset({"PYTEST_CURRENT_TEST"})


def _environment_key() -> tuple[str, tuple[tuple[str, str], ...]]:
    return os.getcwd(), tuple(sorted(i for i in os.environ.items() if i[0] not in _VOLATILE))


class Served:
    """A process started from ``command`` on first :meth:`request`, kept while the environment
    is unchanged; requests are serialized (one outstanding at a time)."""

    def __init__(self, command: Sequence[str], what: str) -> None:
        self._command = list(command)
        self._what = what
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[str] | None = None
        self._key: tuple[str, tuple[tuple[str, str], ...]] | None = None
        self._stderr: Path | None = None
        self._pid = os.getpid()
        atexit.register(self.close)

    def request(self, line: str, timeout_s: float) -> str:
        """Send one line; return the reply line (without its newline).

        Raises :class:`ServedError` with the process's standard error when it dies or takes
        longer than ``timeout_s``.
        """
        with self._lock:
            proc = self._started()
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write(line + "\n")
                proc.stdin.flush()
            except BrokenPipeError:
                raise self._failed("died before the request") from None
            ready, _, _ = select.select([proc.stdout], [], [], timeout_s)
            if not ready:
                raise self._failed(f"timed out after {timeout_s}s")
            reply = proc.stdout.readline()
            if not reply.endswith("\n"):
                raise self._failed("died")
            return reply[:-1]

    def _started(self) -> subprocess.Popen[str]:
        if self._pid != os.getpid():  # a forked child: the process is its parent's to use
            self._proc, self._stderr, self._pid = None, None, os.getpid()
        key = _environment_key()
        if self._proc is not None and (self._proc.poll() is not None or key != self._key):
            self._stop()
        if self._proc is None:
            fd, name = tempfile.mkstemp(prefix=f"lakeops-{self._what}-", suffix=".stderr")
            self._stderr = Path(name)
            self._proc = subprocess.Popen(
                self._command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=fd,
                text=True,
                encoding="utf-8",
            )
            os.close(fd)
            self._key = key
        return self._proc

    def _failed(self, how: str) -> ServedError:
        stderr = self._stderr.read_text(encoding="utf-8", errors="replace") if self._stderr else ""
        self._stop()
        return ServedError(f"the {self._what} process {how}:\n{stderr[-20_000:].rstrip()}")

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError):  # a pipe to a killed process
                        stream.close()
        if self._stderr is not None:
            self._stderr.unlink(missing_ok=True)
            self._stderr = None

    def close(self) -> None:
        """Stop the process (at exit; a later request starts a new one)."""
        with self._lock:
            if self._pid == os.getpid():
                self._stop()
