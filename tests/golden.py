"""Golden outputs: `summary --json`, `ops --json` and `compare --json` of every default-shape
sample and every third-party trace, written to tests/golden/ and compared byte for byte by
tests/test_golden.py, so that a change meant to keep behaviour (a refactor) can show it did.

    python -m tests.golden            # write them again after a change that means to change them

Floats are written to 12 significant digits (`_round`). A change that alters an answer on purpose regenerates them in the same commit, and the commit
says which figures changed and why. Times of ingest and added_at are not part of any output.
"""
from __future__ import annotations

import contextlib
import gzip
import io
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
SAMPLES = sorted((ROOT / "data" / "samples" / "default").glob("*.json.gz"))
VOLATILE = ("added_at",)  # when the run was stored: not an answer


def traces(shared: Path | None) -> list[Path]:
    third = sorted(p for p in shared.iterdir() if p.name.endswith((".json", ".json.gz"))) if shared else []
    return SAMPLES + third


def _cli(argv: list[str]) -> str:
    from profiler.cli.main import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    if code != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {code}")
    return out.getvalue()


def _round(value):
    """Floats to 12 significant digits: DuckDB sums doubles in parallel, in no fixed order, so the
    last bits of a sum of fractions vary from run to run (75.819 / 75.81899999999999)."""
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, dict):
        return {k: _round(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_round(v) for v in value]
    return value


def _strip(text: str) -> str:
    data = _round(json.loads(text))
    if isinstance(data, list):
        for row in data:
            for key in VOLATILE:
                if isinstance(row, dict):
                    row.pop(key, None)
    return json.dumps(data, indent=1, ensure_ascii=False, sort_keys=True) + "\n"


def outputs(db: Path, files: list[Path]) -> dict[str, str]:
    """{output file name: text} for a fresh store at `db` holding `files` (stored in one batch)."""
    from profiler.storage.store import Store

    from tests.conftest import ingest_all

    store = Store(db)
    ids = {p.name.removesuffix(".gz").removesuffix(".json"): run for p, run in zip(files, ingest_all(store, files))}
    found = {"summary.json": _strip(_cli(["summary", "--json", "--db", str(db)]))}
    for name, run in ids.items():
        found[f"ops__{name}.json"] = _strip(_cli(["ops", run, "--json", "--db", str(db)]))
    names = list(ids)
    for a, b in zip(names, names[1:]):   # each trace against the next: every run on both sides
        found[f"compare__{a}__vs__{b}.json"] = _strip(_cli(["compare", ids[a], ids[b], "--json", "--db", str(db)]))
    return found


def names() -> list[str]:
    """The golden outputs kept (each stored gzip'd as <name>.gz)."""
    return sorted(p.name.removesuffix(".gz") for p in GOLDEN.glob("*.json.gz"))


def read(name: str) -> str:
    return gzip.decompress((GOLDEN / f"{name}.gz").read_bytes()).decode("utf-8")


def write(name: str, text: str) -> None:
    (GOLDEN / f"{name}.gz").write_bytes(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0))


def main() -> int:
    import tempfile

    from tests.conftest import HAVE_SHARED, SHARED_TRACES

    if not HAVE_SHARED:
        print(f"the third-party traces are needed ({SHARED_TRACES})", file=sys.stderr)
        return 1
    GOLDEN.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        found = outputs(Path(tmp) / "golden.duckdb", traces(SHARED_TRACES))
    for old in GOLDEN.glob("*.json.gz"):
        old.unlink()
    for name, text in found.items():
        write(name, text)
    print(f"wrote {len(found)} golden outputs to {GOLDEN}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
