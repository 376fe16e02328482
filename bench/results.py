"""bench/RESULTS.md: each benchmark script owns one '## <name>' section and rewrites only that."""
from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


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
