"""Hardware counters for a capture: one warm call of each variant under Nsight Compute (`ncu`).

`why_not(device)` says why counters cannot be read here (no CUDA device, no `ncu`), or None.
`collect(request, csv_path, metrics)` runs `ncu` over a fresh process (profiler/capture/counted.py)
that warms the variant up outside the profiler range and counts exactly one call, with the given
metrics (the command line passes the fixed set `profiler.parse.ncu.METRICS` reads), then exports the report as the raw CSV that `python -m profiler counters` imports. The
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

import glob
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


def collect(request: dict, csv_path: Path, metrics: list[str], timeout_s: float = TIMEOUT_S) -> Counted:
    """Count one warm call of ``request["variant"]`` and write the raw CSV to ``csv_path``."""
    started = time.perf_counter()
    variant = request["variant"]
    ncu = find_ncu()
    if ncu is None:
        return Counted(variant, None, 0.0, why_not("cuda"))
    with tempfile.TemporaryDirectory(prefix="ncu-") as tmp:
        report = Path(tmp) / "report.ncu-rep"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
        try:
            run = subprocess.run(command(ncu, report, request, metrics), capture_output=True, text=True,
                                 timeout=timeout_s, env=env, cwd=tmp)
        except subprocess.TimeoutExpired:
            return Counted(variant, None, time.perf_counter() - started, f"ncu ran past {timeout_s:.0f} s")
        reason = ncu_failure(run) if not report.is_file() else None
        if reason is None:
            export = subprocess.run([ncu, "--import", str(report), "--csv", "--page", "raw", "--print-units", "base"],
                                    capture_output=True, text=True, timeout=timeout_s)
            if export.returncode != 0 or not export.stdout.strip():
                reason = f"ncu could not export its report: {ncu_error_line(export.stderr + export.stdout)}"
            else:
                csv_path.parent.mkdir(parents=True, exist_ok=True)
                csv_path.write_text(export.stdout, encoding="utf-8")
    seconds = time.perf_counter() - started
    return Counted(variant, None if reason else csv_path, seconds, reason)


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
