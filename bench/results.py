"""bench/RESULTS.md: each benchmark script owns one '## <name>' section and rewrites only that."""
from __future__ import annotations

import datetime
import resource
import subprocess
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
ROOT = RESULTS.parents[1]


def commit_of(checkout: Path = ROOT) -> str:
    """The short hash of the commit checked out at `checkout` (this repository by default); "?" for
    a folder that is not a git checkout."""
    return subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip() or "?"


def children_cpu_s() -> float:
    """CPU seconds (user + system) of every child process this one has waited for so far: the
    difference over a `subprocess.run` is that command's (and its own waited-for children's)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def write_section(name: str, text: str, path: Path = RESULTS) -> None:
    """Replace the '## <name>' section (up to the next '## ' heading) with `text`, or append it."""
    old = path.read_text() if path.exists() else "# Benchmark results\n"
    start = old.find(f"## {name}\n")
    if start < 0:
        new = old.rstrip("\n") + "\n\n" + text
    else:
        end = old.find("\n## ", start + 1)
        new = old[:start] + text.rstrip("\n") + "\n" + (old[end:] if end >= 0 else "")
    path.write_text(new.rstrip("\n") + "\n")


def run_report(section: str, script: str, code: str, before: str, after: str, parts: list[str],
               started: str = "") -> str:
    """A '## <section>' of a script's run: its command line, when, the code measured, the machine's
    load before (`before`) and after, `started` (a line on what was started and not timed), the
    driver's peak RSS, then `parts`."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3
    return (f"## {section}\n\n`python -m bench.{Path(script).stem} {' '.join(sys.argv[1:])}`, {now}, code at {code}.\n\n"
            f"Machine: {before}; after: `{after}`. {started}Driver peak RSS {peak_mb:.0f} MB.\n\n" + "\n".join(parts))
