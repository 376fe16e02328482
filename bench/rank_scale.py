"""`rank` at scale: over every shipped sample, and over 10,000 run ids (issue 36).

The store: every sample of data/samples (seeded as the app seeds them), then copies of the warm
default-shape samples (each with another `traceName`, so another run id and the same
measurements) until it holds `--runs` runs; built once at `--store` and reused.

Timed, each in a fresh process (`python -m profiler rank ... --json`, wall time, interpreter start
and imports included; ids passed on the command line):
  samples   every sample's id (the whole seeded store)
  all       every id of the store (`--runs`)
and in this process, on a store handle with nothing kept yet, the same ids through the phases of
`rank`: resolving the arguments (`cli/run_args.Runs`), the per-run reads and grouping
(`ranking.runs_of`, `ranking.groups`), the rating of each group's representative run by the op
cost model (`roofline.roofline_table`: one per group, not per run), and the whole ranking after
them (each set's order, same-kernel check, "why" and sentence; the reads above kept). `--profile`
prints cProfile's top functions of one in-process ranking of the samples.

Usage: python -m bench.rank_scale [--runs 10000] [--store /tmp/rank_scale.duckdb] [--profile] [--write-results]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from bench.ingest import code_version, machine, uptime
from bench.results import run_report, write_section
from profiler.capture import samples
from profiler.storage.store import Store

ROOT = Path(__file__).resolve().parents[1]

SECTION = "Rank: every sample and 10,000 run ids"


def build(path: Path, runs: int) -> list[str]:
    """The store's run ids (built when missing): the samples, then copies of the default warm ones."""
    import gzip

    store = Store(path)
    samples.seed_if_empty(store)
    have = store.query("SELECT count(*) AS n FROM traces")["n"].iloc[0]
    bases = sorted((samples.SAMPLES_DIR / "default").glob("*_warm.json.gz"))
    texts = [json.loads(gzip.decompress(p.read_bytes())) for p in bases]
    n = int(have)
    while n < runs:
        batch = []
        for k in range(min(200, runs - n)):
            trace = texts[(n + k) % len(texts)]
            trace["traceName"] = f"copy {n + k}"
            batch.append((json.dumps(trace).encode(), f"copy_{n + k}"))
        store.ingest_many(batch, source="captured")
        n += len(batch)
        print(f"  {n:,} runs", file=sys.stderr)
    return store.query("SELECT run_id FROM traces ORDER BY added_at, run_id")["run_id"].tolist()


def timed_process(ids: list[str], db: Path) -> tuple[float, dict]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "profiler", "rank", *ids, "--json", "--db", str(db)],
                          cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(done.stderr[-2000:])
    return seconds, json.loads(done.stdout)


def phases(ids: list[str], db: Path) -> dict:
    from profiler.analysis.findings import ranking
    from profiler.analysis.reads import roofline
    from profiler.cli import run_args

    out = {}
    store = Store(db, read_only=True)           # a fresh handle: nothing kept from an earlier ranking
    with store.session() as s:
        t = time.perf_counter()
        resolved = run_args.Runs(s).resolve(ids)
        out["resolve"] = time.perf_counter() - t
        t = time.perf_counter()
        groups = ranking.groups(ranking.keyed(ranking.runs_of(s, resolved)))
        out["per-run reads and grouping"] = time.perf_counter() - t
        t = time.perf_counter()
        roofline.roofline_table(s, groups["run_id"].tolist())
        out["rating each group's run (op cost model)"] = time.perf_counter() - t
        t = time.perf_counter()
        ranking.rank_sets(s, resolved)
        out["whole ranking after them"] = time.perf_counter() - t
    out["groups"] = len(groups)
    return out


def profile(ids: list[str], db: Path, top: int = 25) -> None:
    """cProfile's top functions (cumulative) of one ranking of ``ids`` on a fresh store handle."""
    import cProfile
    import pstats

    from profiler.analysis.findings import ranking

    store = Store(db, read_only=True)
    with store.session() as s, cProfile.Profile() as prof:
        ranking.rank_sets(s, ids)
    pstats.Stats(prof).sort_stats("cumulative").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--store", type=Path, default=Path("/tmp/rank_scale.duckdb"))
    parser.add_argument("--profile", action="store_true", help="print cProfile's top functions of one ranking")
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    before = machine()
    ids = build(args.store, args.runs)
    sample_ids = ids[:len(samples.sample_files())]
    rows = []
    for what, chosen in (("every sample", sample_ids), (f"{len(ids):,} ids", ids)):
        seconds, got = timed_process(chosen, args.store)
        sets = len(got.get("sets", [got]))
        rows.append(f"| {what} | {len(chosen):,} | {seconds:.2f} | {1000 * seconds / len(chosen):.2f} | {sets} |")
        print(rows[-1])
    if args.profile:
        profile(sample_ids, args.store)
    split = {what: phases(chosen, args.store) for what, chosen in (("every sample", sample_ids),
                                                                    (f"{len(ids):,} ids", ids))}
    print(split)
    parts = ["Fresh process each (`python -m profiler rank IDS --json`), wall time with interpreter start and "
             "imports; per thousand: seconds × 1000 / ids.", "",
             "| ids | count | seconds | seconds per 1,000 | ranked sets |", "|---|---:|---:|---:|---:|", *rows, "",
             "In one process (a fresh store handle each), seconds:", "",
             "| ids | groups | " + " | ".join(k for k in split["every sample"] if k != "groups") + " |",
             "|---|---:|" + "---:|" * (len(split["every sample"]) - 1),
             *[f"| {what} | {got['groups']} | " + " | ".join(f"{v:.2f}" for k, v in got.items() if k != "groups") + " |"
               for what, got in split.items()]]
    report = run_report(SECTION, "rank_scale.py", code_version(), before, uptime(), parts)
    print(report)
    if args.write_results:
        write_section(SECTION, report)


if __name__ == "__main__":
    main()
