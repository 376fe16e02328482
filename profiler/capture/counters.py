"""Hardware counters for a capture: one warm call of each variant under Nsight Compute (`ncu`).

`why_not(device)` says why counters cannot be read here (no CUDA device, no `ncu`), or None.
`collect(request, csv_path, runs)` runs `ncu` over a fresh process (profiler/capture/counted.py)
that warms the variant up outside the profiler range and counts exactly one call, once per group
of metrics in `runs` (the command line passes `profiler.parse.ncu.METRIC_RUNS`), then joins the
exported reports, kernel by kernel, into the one raw CSV that `python -m profiler counters`
imports. Occupancy and the SM and DRAM throughputs are counted in a run of their own: with the
whole set in one run, ncu's passes spread them differently and a kernel of a few microseconds read
1-2.5 pt less achieved occupancy than Nsight Compute's own Occupancy section shows (measured on an
H100: bench/RESULTS.md, "Counters against a plain Nsight Compute run"). The
seconds spent under ncu come back on their own (`Counted.seconds`) and never enter a run's timings:
ncu replays each kernel once per counter pass, so a call under ncu takes many times longer.

`request(config, outcome)` is the one description of the workload a trace captured, for every
mode and shape; the counted process builds it the same way (profiler/capture/counted.py).

Clock and cache settings (`SETTINGS`, stated in the MANIFEST of samples counted here): clocks as
the trace saw them (`--clock-control none`: ncu's default would lock them to base), caches
flushed before each replay pass (`--cache-control all`, ncu's default, so every pass starts from
the same cold L2).
"""
from __future__ import annotations

import csv
import glob
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

NCU_ENV = "PROFILER_NCU"  # the ncu executable, when it is not on PATH
NCU_GLOBS = ("/opt/nvidia/nsight-compute/*/ncu", "/usr/local/cuda/bin/ncu", "/usr/local/cuda-*/bin/ncu")
TIMEOUT_S = 600.0
REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Counted:
    variant: str
    csv_path: Path | None   # the raw CSV export, when ncu counted the call
    seconds: float          # wall time under ncu (start, warm-up, replays, export)
    reason: str | None      # why there are no counters, in one line


def find_ncu() -> str | None:
    """The ncu executable: $PROFILER_NCU, else on PATH, else where CUDA installs put it."""
    named = os.environ.get(NCU_ENV)
    if named:
        return named if Path(named).is_file() else None
    found = shutil.which("ncu")
    if found:
        return found
    candidates = sorted((p for pattern in NCU_GLOBS for p in glob.glob(pattern)), reverse=True)
    return candidates[0] if candidates else None


def why_not(device: str) -> str | None:
    """None when counters can be tried here, else why not (one line)."""
    if device != "cuda":
        return "hardware counters need a CUDA GPU; this capture runs on the CPU"
    if find_ncu() is None:
        return (f"Nsight Compute (ncu) is not installed here (not on PATH, not under /opt/nvidia; "
                f"set {NCU_ENV} to its path)")
    return None


SETTINGS = ("--clock-control", "none", "--cache-control", "all")
REQUEST_KEYS = ("variant", "mode", "batch", "heads", "kv_heads", "seq_len", "kv_len", "head_dim", "dtype",
                "causal", "window", "varlen", "warmup_calls", "seed", "flush_l2")


def request(config, outcome) -> dict:
    """The workload of ``outcome`` (a RunOutcome of ``config``, a CaptureConfig): what the counted
    process builds, with every mode and shape field the trace's run has (REQUEST_KEYS)."""
    return {"variant": outcome.variant, "mode": config.mode, "batch": config.batch, "heads": config.heads,
            "kv_heads": config.n_kv_heads, "seq_len": outcome.seq_len, "kv_len": config.kv_len_of(outcome.seq_len),
            "head_dim": config.head_dim, "dtype": config.dtype, "causal": config.causal, "window": config.window,
            "varlen": list(config.varlen) if config.varlen is not None else None,
            "warmup_calls": config.warmup_calls, "seed": config.seed, "flush_l2": config.flush_l2}


def command(ncu: str, report: Path, request: dict, metrics: list[str]) -> list[str]:
    """The ncu command line that counts one warm call described by ``request``."""
    return [ncu, "--profile-from-start", "off", *SETTINGS, "--target-processes", "all",
            "--metrics", ",".join(metrics), "--force-overwrite", "--export", str(report),
            sys.executable, "-m", "profiler.capture.counted", json.dumps(request)]


def collect(request: dict, csv_path: Path, runs: list[list[str]], timeout_s: float = TIMEOUT_S) -> Counted:
    """Count one warm call of ``request["variant"]`` once per group of metrics in ``runs`` and
    write the joined raw CSV to ``csv_path``."""
    started = time.perf_counter()
    variant = request["variant"]
    ncu = find_ncu()
    if ncu is None:
        return Counted(variant, None, 0.0, why_not("cuda"))
    joined: str | None = None  # the runs so far, as one export
    for metrics in runs:
        text, reason = _count(ncu, request, metrics, started + timeout_s - time.perf_counter(), timeout_s)
        if reason is None and joined is not None:
            text, reason = join_reports(joined, text)
        if reason is not None:
            return Counted(variant, None, time.perf_counter() - started, reason)
        joined = text
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    csv_path.write_text(joined or "", encoding="utf-8")
    return Counted(variant, csv_path, time.perf_counter() - started, None)


def _count(ncu: str, request: dict, metrics: list[str], left_s: float, limit_s: float) -> tuple[str, str | None]:
    """(the raw CSV of one ncu run over the counted call with ``metrics``, why there is none), in
    the ``left_s`` seconds left of the count's ``limit_s``."""
    with tempfile.TemporaryDirectory(prefix="ncu-") as tmp:
        report = Path(tmp) / "report.ncu-rep"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
        try:
            run = subprocess.run(command(ncu, report, request, metrics), capture_output=True, text=True,
                                 timeout=max(left_s, 1.0), env=env, cwd=tmp)
        except subprocess.TimeoutExpired:
            return "", f"ncu ran past {limit_s:.0f} s"
        if not report.is_file():
            return "", ncu_failure(run)
        export = subprocess.run([ncu, "--import", str(report), "--csv", "--page", "raw", "--print-units", "base"],
                                capture_output=True, text=True, timeout=max(left_s, 60.0))
        if export.returncode != 0 or not export.stdout.strip():
            return "", f"ncu could not export its report: {ncu_error_line(export.stderr + export.stdout)}"
        return export.stdout, None


def join_reports(first: str, second: str) -> tuple[str, str | None]:
    """One raw CSV from two exports of the same call counted with different metrics: the first's
    columns, then the second's columns the first lacks, row by row (kernel by kernel, in launch
    order). Lines before the header (ncu's own messages) are the first's. (text, why not)."""
    (head, a), (_, b) = _table(first), _table(second)
    if not a or not b:
        return "", "ncu's export has no header row"
    names = [r[a[0].index("Kernel Name")] if "Kernel Name" in a[0] else None for r in a[2:]]
    if names != [r[b[0].index("Kernel Name")] if "Kernel Name" in b[0] else None for r in b[2:]]:
        return "", "the two ncu runs over the same call counted different kernels"
    extra = [i for i, name in enumerate(b[0]) if name not in a[0]]
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    for row_a, row_b in zip(a, b):
        writer.writerow([*row_a, *(row_b[i] if i < len(row_b) else "" for i in extra)])
    return head + out.getvalue(), None


def _table(text: str) -> tuple[str, list[list[str]]]:
    """(the lines before the CSV header, the header, units and data rows)."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        return text, []
    return "".join(lines[:start]), list(csv.reader(io.StringIO("".join(lines[start:]))))


def ncu_failure(run: subprocess.CompletedProcess) -> str:
    """Why a run under ncu left no report, in one line: the counted call's own reason, ncu's
    first error (ERR_NVGPUCTRPERM: the machine does not let users read the counters), or the status."""
    for line in reversed(run.stdout.splitlines()):
        if line.startswith('{"ok"'):
            outcome = json.loads(line)
            if not outcome.get("ok"):
                return f"the variant did not run: {outcome.get('reason')}"
    text = run.stdout + run.stderr
    if "ERR_NVGPUCTRPERM" in text:
        return "this machine does not let ncu read the GPU's performance counters (ERR_NVGPUCTRPERM)"
    if "No kernels were profiled" in text:
        return "ncu counted no kernel in the call"
    return ncu_error_line(text) or f"ncu exited with status {run.returncode}"


def ncu_error_line(text: str) -> str:
    for line in text.splitlines():
        if "==ERROR==" in line:
            return line.split("==ERROR==", 1)[1].strip()[:200]
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


def csv_beside(trace: Path) -> Path:
    """Where a trace's counters go: ``<name>.ncu.csv`` beside ``<name>.json.gz``."""
    return trace.with_name(trace.name.removesuffix(".json.gz").removesuffix(".json") + ".ncu.csv")
