"""A process's memory in bytes: its RSS now and its peak, the peak resettable where Linux allows
it, so that a worker running many tasks reports each task's own peak."""
from __future__ import annotations

import resource


def _status_bytes(field: str) -> int | None:
    """A memory figure of this process from /proc/self/status (Linux), in bytes."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def reset_peak_rss() -> int:
    """This process's RSS now; and, where Linux allows it, its peak RSS reset to that, so that the
    peak read after a task is the task's own (a worker process runs many tasks)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    return _status_bytes("VmRSS") or 0


def peak_rss() -> int:
    return _status_bytes("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
