"""Run a capture's variants each in a fresh Python process, with fresh caches.

``capture_isolated(config)`` (called by ``capture.capture``) starts one worker process
(``python -m profiler.capture.worker``) per variant, and one per variant and length when cold
runs are asked for, so every cold call is the first of its process. Each worker gets an empty,
private CUDA compute cache (``CUDA_CACHE_PATH``) and fresh compile caches (torch inductor,
Triton, flashinfer) in a temporary folder, or the ones kept under ``config.compile_cache``. The
worker reads its share of the config as JSON on stdin, runs it with ``capture.InProcessCapture``, and
writes JSON lines on stdout: ``{"progress": [variant, fraction, message]}`` and finally
``{"outcomes": [...]}``. The parent relays progress, and while a worker is quiet (a first-use
compile) reports the seconds it has waited. The next workers are started while one measures, so
their Python start and imports (torch, and the modules their variant's build imports: the
compiler, flashinfer; CPU work only) overlap with it; a worker touches the GPU only once its
request comes.
"""
from __future__ import annotations

import importlib
import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path

import torch

from profiler.capture import attention_fns, config as cap, variants
from profiler.capture.inprocess import InProcessCapture

REPO_ROOT = Path(__file__).resolve().parents[2]
HEARTBEAT_S = 2.0
# workers started (and importing: ~3 s for torch, ~6 s for the compiler modules, single-threaded)
# ahead of the one that measures; a turn on the GPU is ~1 s once imports are done, so on a machine
# with cores to spare several import at once, leaving one core for the worker that measures
AHEAD = max(1, min(8, (os.cpu_count() or 2) // 2 - 1))
WORKER_TIMEOUT_S = 1800.0  # a first-use compile of every flashinfer backend fits well inside
# cache -> the environment variable that points it at a folder
CACHE_ENV = {
    "cuda_compute_cache": "CUDA_CACHE_PATH",  # the driver's JIT cache of PTX (default ~/.nv/ComputeCache)
    "torchinductor": "TORCHINDUCTOR_CACHE_DIR",
    "triton": "TRITON_CACHE_DIR",
    "flashinfer": "FLASHINFER_WORKSPACE_BASE",  # flashinfer's JIT builds go under <base>/.cache/flashinfer
}


def _holds_files(path: Path) -> bool:
    return path.is_dir() and any(p.is_file() for p in path.rglob("*"))


def cache_env(private: Path, keep: Path | None) -> tuple[dict, dict]:
    """(environment additions, {cache: {"path", "warm"}}) for one worker: the compute cache always
    in ``private`` (empty), compile caches in ``keep`` when given, else in ``private`` too."""
    env, caches = {}, {}
    for cache, var in CACHE_ENV.items():
        root = private if cache == "cuda_compute_cache" or keep is None else keep
        path = root / cache
        path.mkdir(parents=True, exist_ok=True)
        env[var] = str(path)
        caches[cache] = {"path": str(path), "warm": _holds_files(path)}
    return env, caches


def _jobs(config: cap.CaptureConfig) -> list[cap.CaptureConfig]:
    """One worker per variant, or per variant and length when there are cold runs."""
    jobs = []
    for name in config.variants:
        lengths = [(s,) for s in config.seq_lens] if config.cold else [config.seq_lens]
        jobs += [replace(config, variants=(name,), seq_lens=seqs) for seqs in lengths]
    return jobs


def config_to_json(config: cap.CaptureConfig) -> str:
    data = asdict(config)
    data["out_dir"] = str(config.out_dir)
    data["compile_cache"] = str(config.compile_cache) if config.compile_cache else None
    return json.dumps(data)


def config_from_json(text: str) -> cap.CaptureConfig:
    data = json.loads(text)
    for key in ("variants", "seq_lens"):
        data[key] = tuple(data[key])
    data["varlen"] = tuple(data["varlen"]) if data.get("varlen") is not None else None
    data["out_dir"] = Path(data["out_dir"])
    data["compile_cache"] = Path(data["compile_cache"]) if data["compile_cache"] else None
    return cap.CaptureConfig(**data)


def _outcome_json(o: cap.RunOutcome) -> dict:
    return {**asdict(o), "path": str(o.path) if o.path else None}


def _outcome(data: dict) -> cap.RunOutcome:
    return cap.RunOutcome(**{**data, "path": Path(data["path"]) if data["path"] else None})


class _Relay:
    """Maps one worker's progress onto the whole capture's."""

    def __init__(self, progress: cap.Progress | None, total: int):
        self.progress = progress or (lambda variant, fraction, message: None)
        self.total, self.done = total, 0
        self.last = ("", 0.0, "")

    def worker(self, variant: str, fraction: float, message: str, runs: int) -> None:
        self.last = (variant, (self.done + fraction * runs) / self.total, message)
        self.progress(*self.last)

    def waiting(self, seconds: float) -> None:
        variant, fraction, message = self.last
        self.progress(variant, fraction, f"{message} ({seconds:.0f} s)")


class _Worker:
    """One worker process. It starts at once and imports torch and the capture code while the
    worker before it is still measuring (pure CPU work), then waits for its share of the config
    on stdin before it touches the GPU."""

    def __init__(self, job: cap.CaptureConfig):
        self.job = job
        self.folder = tempfile.TemporaryDirectory(prefix="attention-capture-")
        private = Path(self.folder.name)
        env, self.caches = cache_env(private, job.compile_cache)
        env = {**os.environ, **env, "PYTHONPATH": os.pathsep.join(
            [str(REPO_ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
        self.stderr = open(private / "stderr.txt", "w+b")
        variant = variants.get_variant(job.variants[0])
        preload = ",".join(dict.fromkeys(attention_fns.COMPILER_MODULES + variant.preload))
        self.proc = subprocess.Popen([sys.executable, "-m", "profiler.capture.worker", preload], env=env,
                                     cwd=os.getcwd(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr, bufsize=0)

    def run(self, relay: _Relay, runs: int) -> list[cap.RunOutcome]:
        """Send the request, relay progress, and return the worker's outcomes (or every run
        skipped with the worker's last words)."""
        try:
            request = json.dumps({"config": json.loads(config_to_json(self.job)), "caches": self.caches})
            try:
                self.proc.stdin.write(request.encode())
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
            outcomes, why = _read(self.proc, relay, runs)
            if outcomes is not None:
                return outcomes
            self.stderr.seek(0)
            lines = [line.strip() for line in self.stderr.read().decode(errors="replace").splitlines()
                     if line.strip()]
            why = why or (lines[-1][:200] if lines else f"the worker process ended with code {self.proc.returncode}")
            return _all_skipped(self.job, f"the capture process failed: {why}")
        finally:
            self.close()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.stderr.close()
        self.folder.cleanup()


def _read(proc: subprocess.Popen, relay: _Relay, runs: int) -> tuple[list | None, str | None]:
    """(the worker's outcomes or None, why it was stopped or None), relaying progress meanwhile.
    Reads the pipe unbuffered, so every line is relayed the moment it is written."""
    fd = proc.stdout.fileno()
    started = quiet_since = time.monotonic()
    outcomes, pending = None, b""
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            if time.monotonic() - started > WORKER_TIMEOUT_S:
                proc.kill()
                proc.wait()
                return None, f"it ran longer than {WORKER_TIMEOUT_S:.0f} s and was stopped"
            if not selector.select(timeout=HEARTBEAT_S):
                relay.waiting(time.monotonic() - quiet_since)
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                try:
                    message = json.loads(line)
                except ValueError:  # a library printing to stdout: not ours
                    continue
                if not isinstance(message, dict):
                    continue
                if "progress" in message:
                    relay.worker(*message["progress"], runs)
                    quiet_since = time.monotonic()
                elif "outcomes" in message:
                    outcomes = [_outcome(o) for o in message["outcomes"]]
    proc.wait()
    return outcomes, None


def _all_skipped(job: cap.CaptureConfig, reason: str) -> list[cap.RunOutcome]:
    runs = [(True, 0)] * job.cold + [(False, r) for r in range(job.repeats or 1)]
    return [cap.RunOutcome(v, s, cold, cap.run_name(job, v, s, cold, r), skipped=reason, repeat=r)
            for v in job.variants for s in job.seq_lens for cold, r in runs]


def capture_isolated(config: cap.CaptureConfig, progress: cap.Progress | None) -> list[cap.RunOutcome]:
    """Every job in its own worker, one after the other (so no two measure on the GPU at once);
    the next worker starts, and imports, while the one before it measures."""
    relay = _Relay(progress, len(config.variants) * cap.runs_per_variant(config))
    jobs = [(job, variants.get_variant(job.variants[0]).why_not(job.setting())) for job in _jobs(config)]
    runnable = [job for job, reason in jobs if reason is None]
    started: dict[int, _Worker] = {}
    outcomes = []
    try:
        for job, reason in jobs:
            runs, name = cap.runs_per_variant(job), job.variants[0]
            if reason is not None:  # no process needed to say why not
                found = _all_skipped(job, reason)
                relay.worker(name, 0.0, f"skipped: {reason}", runs)
            else:
                worker = started.pop(id(job), None) or _Worker(job)
                for later in runnable[runnable.index(job) + 1:][:AHEAD]:
                    if id(later) not in started:
                        started[id(later)] = _Worker(later)
                relay.worker(name, 0.0, "starting a fresh process", runs)
                found = worker.run(relay, runs)
            outcomes += found
            relay.done += runs
            relay.worker(name, 0.0, f"{sum(o.path is not None for o in found)} of {len(found)} runs written", runs)
    finally:
        for worker in started.values():
            worker.close()
    return outcomes


def preload_modules(modules: list[str]) -> list[str]:
    """Import what the variant's build will import; a module that fails to import is left for
    the build to report in its own words."""
    loaded = []
    for module in modules:
        try:
            importlib.import_module(module)
            loaded.append(module)
        except Exception:
            pass
    return loaded


def main() -> int:
    started = time.monotonic()
    preloaded = preload_modules([m for m in (sys.argv[1] if len(sys.argv) > 1 else "").split(",") if m])
    imported_s = time.monotonic() - started
    request = json.loads(sys.stdin.read())  # torch, the capture code and the preloads are imported by now
    config = config_from_json(json.dumps(request["config"]))

    def progress(variant: str, fraction: float, message: str) -> None:
        print(json.dumps({"progress": [variant, fraction, message]}), flush=True)

    # cuda_initialized_before_turn: whether an import touched the GPU before this worker's turn
    process = {"pid": os.getpid(), "fresh": True, "caches": request["caches"], "preloaded": preloaded,
               "preload_s": round(imported_s, 2), "waited_s": round(time.monotonic() - started - imported_s, 2),
               "cuda_initialized_before_turn": torch.cuda.is_initialized()}
    outcomes = InProcessCapture(config, progress, (), process=process).run()
    print(json.dumps({"outcomes": [_outcome_json(o) for o in outcomes]}), flush=True)
    # every trace is written and closed: skip the interpreter's teardown (compiler worker pools
    # take seconds to shut down)
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
