"""`python -m profiler.cli.samples`: build data/samples.duckdb.gz, the shipped samples already
ingested, again (after a change to data/samples/ or to what ingest stores; see
profiler/capture/samples.py). ~15 s on 2 cores."""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from profiler.capture import samples
from profiler.storage.store import Store


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        runs = samples.build_shipped(Store(Path(tmp) / "samples.duckdb"))
    print(f"wrote {samples.SHIPPED} ({samples.SHIPPED.stat().st_size / 2**20:.1f} MiB, {runs} runs) "
          f"and {samples.SHIPPED_INDEX.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
