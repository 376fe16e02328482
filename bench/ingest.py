"""Ingest benchmark (issue 2): wall time and peak RSS of three parsers on one large trace.

Each tool runs as its own process on the same plain-JSON file (made by make_large_trace.py if
missing): this project's `python -m profiler ingest` into a fresh database, HTA's
`parse_trace_file`, and plain `json.load`. Wall time covers the whole process (interpreter start
and imports included); peak RSS is the larger of ru_maxrss from wait4 and the summed RSS of the process
and its worker processes, sampled.
Usage: python -m bench.ingest [--trace PATH] [--mb 500] [--only ingest,hta,json] [--write-results]
"""
import argparse
import compileall
import contextlib
import datetime
from importlib import metadata
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.make_large_trace import make_large_trace
from bench.results import commit_of, write_section

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TRACE = ROOT / "bench" / "out" / "large.trace.json"

HTA = """import sys
from hta.common.trace import parse_trace_file
meta, df, symbols = parse_trace_file(sys.argv[1])
kernels = int((df["cat"] == symbols.sym_index.get("kernel", -1)).sum())
print(f"{len(df)} rows, {kernels} kernels")"""
JSON = """import json, sys
with open(sys.argv[1], "rb") as f:
    doc = json.load(f)
print(f"{len(doc['traceEvents'])} events")"""


def commands(trace: Path, db: Path) -> dict[str, list[str]]:
    py = sys.executable
    return {"ingest": [py, "-m", "profiler", "ingest", str(trace), "--db", str(db)],
            # one process: the file parsed whole (the default on one core)
            "ingest1": [py, "-m", "profiler", "ingest", str(trace), "--db", str(db) + "1", "--in-process"],
            # in chunks, by this process and a worker process per other core (the default from 2 cores)
            "chunked": [py, "-m", "profiler", "ingest", str(trace), "--db", str(db) + "c",
                        "--workers", str(max(2, os.cpu_count() or 2))],
            "hta": [py, "-c", HTA, str(trace)],
            "json": [py, "-c", JSON, str(trace)]}


def tree_rss(pid: int, peak: list[int], stop: threading.Event) -> None:
    """Sample the summed RSS of `pid` and its descendants every 20 ms; keep the largest in peak[0]."""
    import psutil

    try:
        root = psutil.Process(pid)
        while not stop.is_set():
            total = 0
            for p in [root, *root.children(recursive=True)]:
                with contextlib.suppress(psutil.Error):
                    total += p.memory_info().rss
            peak[0] = max(peak[0], total)
            stop.wait(0.02)
    except psutil.Error:
        pass


def measure(cmd: list[str]) -> dict:
    """Run cmd to completion; its wall seconds, peak RSS (bytes: ru_maxrss, the largest single
    process; and the summed RSS of the process and its workers, sampled), exit code, last line."""
    load = os.getloadavg()[0]
    with tempfile.TemporaryFile() as log:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        peak, stop = [0], threading.Event()
        sampler = threading.Thread(target=tree_rss, args=(proc.pid, peak, stop), daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
        stop.set()
        sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        log.seek(0)
        lines = log.read().decode(errors="replace").strip().splitlines() or [""]
    return {"seconds": seconds, "rss": max(usage.ru_maxrss * 1024, peak[0]), "rc": proc.returncode, "load": load,
            "said": lines[-1][-100:]}


def measure_median(cmd: list[str], repeat: int) -> dict:
    """`measure` run `repeat` times: the run of median wall time, with the largest peak RSS of all
    and every wall time (`all`)."""
    got = []
    for _ in range(repeat):
        if "--db" in cmd:  # a fresh store each time: a second ingest of the same file is a no-op
            db = Path(cmd[cmd.index("--db") + 1])
            for stale in db.parent.glob(db.name + "*"):
                stale.unlink()
        got.append(measure(cmd))
    got.sort(key=lambda r: r["seconds"])
    median = dict(got[len(got) // 2])
    median["rss"] = max(r["rss"] for r in got)
    median["all"] = [r["seconds"] for r in got]
    return median


def table(size: int, runs: dict[str, dict]) -> str:
    rows = ["| tool | MB | seconds | MB/s | peak RSS MB | RSS / file | load at start | exit | last output line |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for name, r in runs.items():
        seconds = f"{r['seconds']:.2f}" + (f" ({', '.join(f'{t:.2f}' for t in r['all'])})" if len(r.get("all", ())) > 1 else "")
        rows.append(f"| {name} | {size / 1e6:.0f} | {seconds} | {size / 1e6 / r['seconds']:.1f}"
                    f" | {r['rss'] / 1e6:.0f} | {r['rss'] / size:.2f} | {r['load']:.1f} | {r['rc']} | `{r['said']}` |")
    return "\n".join(rows)


def verdict(runs: dict[str, dict], size: int) -> str:
    if "ingest" not in runs or runs["ingest"]["rc"] != 0:
        return "Targets not checked: the project's ingest did not run or failed."
    ing = runs["ingest"]  # the default: worker processes for a large file
    lines = [f"- ingest peak RSS / file = {ing['rss'] / size:.2f} (target <= 1.5): "
             f"{'met' if ing['rss'] <= 1.5 * size else 'MISSED'}"]
    if "hta" in runs and runs["hta"]["rc"] == 0:
        speedup = runs["hta"]["seconds"] / ing["seconds"]
        lines.insert(0, f"- ingest throughput / HTA's = {speedup:.1f}x (target >= 10x): "
                        f"{'met' if speedup >= 10 else 'MISSED'}")
    return "\n".join(lines)


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                if line.startswith("model name")), platform.processor())
    ram = next(int(line.split()[1]) for line in open("/proc/meminfo") if line.startswith("MemTotal"))
    return (f"{os.cpu_count()} CPUs ({cpu}), {ram / 2**20:.1f} GiB RAM, Python {platform.python_version()}; "
            f"uptime before the run: `{uptime()}`")


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def code_version() -> str:
    """The commit measured, and whether profiler/ had uncommitted changes (others edit it live)."""
    git = ["git", "-C", str(ROOT)]
    head = commit_of()
    dirty = subprocess.run(git + ["status", "--porcelain", "profiler"], capture_output=True, text=True).stdout
    return f"commit {head}" + (" plus uncommitted changes in profiler/" if dirty.strip() else "")


def section(trace: Path, info: str, runs: dict, before: str, name: str = "Ingest", mix: str | None = None) -> str:
    size = trace.stat().st_size
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    made = mix or ("by `bench/make_large_trace.py`: "
                   "the object-layout traces of `../shared/traces` repeated with times shifted and ids offset, on "
                   "the epoch-microsecond clock of the largest (timestamps too big for an exact double)")
    return (f"## {name}\n\n`python -m bench.ingest {' '.join(sys.argv[1:])}`, {now}, code at {code_version()}.\n\n"
            f"Machine: {before}; after: `{uptime()}`.\n"
            f"(The machine is shared with other engineers: read the load averages next to the times.)\n\n"
            f"Trace: {info}, plain JSON, {size / 1e6:.0f} MB (MB = 10^6 bytes), {made}. Each tool is a fresh "
            f"process; wall time includes interpreter start and imports; peak RSS is the larger of ru_maxrss and the "
            f"summed RSS of the process and its worker processes (sampled every 20 ms); `ingest` is the command's "
            f"default (in chunks on every core from 2 cores; parsed whole on one), `ingest1` one process, "
            f"`chunked` the file in chunks on every core. "
            f"HTA {metadata.version('HolisticTraceAnalysis')} with its default ParserConfig. The project's modules are "
            f"compiled before the runs (as after a first run). With --repeat, each of the project's tools ran that "
            f"many times: the median wall time, every time in brackets, the largest peak RSS.\n\n"
            f"{table(size, runs)}\n\n{verdict(runs, size)}\n")


def count_events(trace: Path) -> int:
    """Events in a trace written by make_large_trace (one event per line)."""
    with open(trace, "rb") as f:
        return sum(1 for line in f if line.startswith(b'{"'))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    ap.add_argument("--mb", type=float, default=500, help="minimum trace size, MB")
    ap.add_argument("--only", default="ingest,hta,json", help="comma-separated tools to run (ingest, ingest1, chunked, hta, json)")
    ap.add_argument("--write-results", action="store_true", help="update bench/RESULTS.md")
    ap.add_argument("--section", default="Ingest", help="the RESULTS.md section to write")
    ap.add_argument("--mix", default=None, help="describes the trace given with --trace (for the results)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs of each of the project's tools, the median reported (HTA and json run once)")
    args = ap.parse_args()
    too_small = args.trace == DEFAULT_TRACE and args.trace.exists() and args.trace.stat().st_size < args.mb * 1e6
    if too_small or not args.trace.exists():  # never overwrite a trace the user named
        args.trace.parent.mkdir(parents=True, exist_ok=True)
        print("writing", make_large_trace(args.trace, int(args.mb * 1e6)), file=sys.stderr)
    info = f"`{args.trace.name}`, {count_events(args.trace):,} events"
    before = machine()
    with tempfile.TemporaryDirectory() as tmp:
        cmds = commands(args.trace, Path(tmp) / "bench.duckdb")
        with open(args.trace, "rb") as f:  # warm the page cache so no tool pays for the first read
            while f.read(1 << 24):
                pass
        # the project's modules compiled first, as after its first run (a machine that sets
        # PYTHONDONTWRITEBYTECODE would otherwise compile them in every process timed)
        compileall.compile_dir(ROOT / "profiler", quiet=1)
        runs = {}
        for name in args.only.split(","):
            print(f"running {name} ...", file=sys.stderr)
            runs[name] = measure_median(cmds[name], 1 if name in ("hta", "json") else args.repeat)
    text = section(args.trace, info, runs, before, args.section, args.mix)
    print(text)
    if args.write_results:
        write_section(args.section, text)


if __name__ == "__main__":
    main()
