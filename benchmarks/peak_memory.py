"""The peak resident memory a benchmark's process reports for itself."""

from __future__ import annotations

import resource


def peak_rss_mib() -> float:
    """This process's peak RSS in MiB: ``VmHWM`` (Linux), which starts afresh at ``exec``.
    ``ru_maxrss`` (the fallback elsewhere) carries the spawning parent's peak over into a child,
    so a child of a parent that built the table in-process would report the parent's."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
