"""Profile attention variants with torch.profiler and write one Chrome trace per run.

A run is one variant at one shape, either *cold* (the very first call of the variant in a fresh
process, so the CPU cost of compiling, of loading kernels or of building a plan shows) or *warm*
(``warmup_calls`` calls outside the profiler, then the walkthrough's ``schedule(wait, warmup,
active)``). A warm run is repeated ``repeats`` times (3 in a sweep) so charts can show spread.

Isolation (the default): each variant runs in its own fresh Python process (``capture_worker``),
and each cold shape in one of its own, with an empty private CUDA compute cache
(``CUDA_CACHE_PATH``) and fresh compile caches (torch inductor, Triton, flashinfer), unless
``compile_cache`` names a folder to keep them in. The run's metadata says which caches held files
when the process started (``process.caches``). Inside a process one ``torch.profiler.profile`` is
started once (with ``profile_memory`` and ``record_shapes``); a driver sets the schedule's next
action before each ``prof.step()``, so each run is one profiler cycle, written by
``on_trace_ready`` to ``<out_dir>/<run name>_<UTC time>.json.gz``.

Nothing of ours is recorded: inputs are made before, and the correctness check against the fp32
reference, the timings and the CUDA-graph replay run after each cycle has closed. The trace then
gets its top-level ``"attention_run"`` object (``run_meta`` lists the fields).

Timings, each with its own name: ``wall_us_per_call`` is CUDA events (host clock on the CPU)
around ``wall_calls`` back-to-back calls, divided by that count (a cold run: its one call);
``graph_us_per_call`` is the same over ``graph_calls`` replays of a CUDA graph of one call (host
dispatch removed), None with ``graph_note`` where the variant cannot be captured. Kernel time per
call comes from the trace itself (``queries``).

Progress: ``progress(variant, fraction, message)`` is called as the capture moves on;
``fraction`` is the share of the capture's runs done (0.0 to 1.0, never decreasing, 1.0 at the
end) and ``message`` is a short sentence such as ``"s1024: cold call"`` or ``"skipped: ..."``;
while a long first call (a compile) runs, the same fraction is reported again with the seconds.
"""
from __future__ import annotations

import gzip
import json
import os
import platform
import time
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable

import torch
from torch.profiler import ProfilerAction, ProfilerActivity, profile, record_function

from profiler.errors import ProfilerError
from profiler.capture.variants import (DTYPES, VARIANTS, Setting, Variant, default_device, get_variant, make_inputs,
                               reference_attention, relative_error)

Progress = Callable[[str, float, str], None]
METADATA_KEY = "attention_run"
TOLERANCE = {"bf16": 2e-2, "fp16": 5e-3, "fp32": 1e-3}  # relative error against the fp32 reference
SWEEP_REPEATS = 3  # warm runs per point of a sweep, unless asked otherwise


class CaptureError(ProfilerError):
    """The capture was asked for something it cannot do; the message says what."""


@dataclass(frozen=True)
class CaptureConfig:
    variants: tuple[str, ...] = tuple(VARIANTS)
    batch: int = 8
    heads: int = 16
    seq_lens: tuple[int, ...] = (1024,)
    head_dim: int = 64
    dtype: str = "bf16"
    causal: bool = True
    device: str = field(default_factory=default_device)
    cold: bool = True
    warmup_calls: int = 3  # outside the profiler, before a warm run
    wait: int = 1
    warmup: int = 1
    active: int = 3
    timing_calls: int = 20  # back-to-back calls (and graph replays) timed outside the profiler
    repeats: int | None = None  # warm runs per point; None: 3 in a sweep, else 1
    isolate: bool = True  # each variant (and each cold shape) in a fresh process with fresh caches
    compile_cache: Path | None = None  # keep compile caches here (warm after the first capture)
    out_dir: Path = Path("data/traces")
    sweep: str | bool = False  # an id shared by the runs of a sweep, or False
    seed: int = 0

    def setting(self) -> Setting:
        return Setting(device=self.device, dtype=self.dtype, head_dim=self.head_dim, causal=self.causal)


@dataclass
class RunOutcome:
    variant: str
    seq_len: int
    cold: bool
    name: str
    path: Path | None = None  # the trace file, when the run was profiled
    meta: dict | None = None  # the "attention_run" object written into the trace
    skipped: str | None = None  # why the run did not happen
    repeat: int = 0  # which warm run of its point (0 for a cold run)


def runs_per_variant(config: CaptureConfig) -> int:
    """How many runs (traces) each variant makes: a cold one per length, and the warm repeats."""
    return len(config.seq_lens) * (int(config.cold) + (config.repeats or _default_repeats(config)))


def _default_repeats(config: CaptureConfig) -> int:
    return SWEEP_REPEATS if len(config.seq_lens) > 1 else 1


def validate(config: CaptureConfig) -> CaptureConfig:
    """Raise CaptureError naming the first bad field; return the config with a sweep id and
    repeats set."""
    for name in config.variants:
        if name not in VARIANTS:
            raise CaptureError(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}")
    if not config.variants:
        raise CaptureError("no variants were asked for")
    if config.dtype not in DTYPES:
        raise CaptureError(f"dtype must be one of {', '.join(DTYPES)}, not {config.dtype!r}")
    if config.device not in ("cuda", "cpu"):
        raise CaptureError(f"device must be 'cuda' or 'cpu', not {config.device!r}")
    if config.device == "cuda" and not torch.cuda.is_available():
        raise CaptureError("device 'cuda' was asked for but torch sees no CUDA GPU; use --device cpu")
    sizes = dict(batch=config.batch, heads=config.heads, head_dim=config.head_dim, active=config.active,
                 timing_calls=config.timing_calls,
                 repeats=1 if config.repeats is None else config.repeats)
    sizes.update({f"seq_len {s}": s for s in config.seq_lens} or {"seq_lens": 0})
    for what, value in sizes.items():
        if value < 1:
            raise CaptureError(f"{what} must be at least 1, not {value}")
    if min(config.wait, config.warmup, config.warmup_calls) < 0:
        raise CaptureError("wait, warmup and warmup_calls must not be negative")
    _check_memory(config)
    if config.sweep is False and len(config.seq_lens) > 1:
        config = replace(config, sweep=time.strftime("sweep-%Y%m%dT%H%M%SZ", time.gmtime()))
    if config.repeats is None:
        config = replace(config, repeats=_default_repeats(config))
    return config


def _free_bytes(device: str) -> int:
    if device == "cuda":
        return torch.cuda.mem_get_info()[0]
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def _check_memory(config: CaptureConfig) -> None:
    """The fp32 reference holds about three batch×heads×seq² score matrices at once."""
    seq = max(config.seq_lens)
    need, free = 3 * 4 * config.batch * config.heads * seq * seq, _free_bytes(config.device)
    if need > free:
        raise CaptureError(f"seq_len {seq} is too long here: the fp32 reference needs about "
                           f"{need / 2**30:.1f} GiB, the {config.device} has {free / 2**30:.1f} GiB free")


def run_name(config: CaptureConfig, variant: str, seq_len: int, cold: bool, repeat: int = 0) -> str:
    mask = "causal" if config.causal else "full"
    again = f"_r{repeat + 1}" if not cold and (config.repeats or 1) > 1 else ""
    return (f"{variant}_b{config.batch}_h{config.heads}_s{seq_len}_d{config.head_dim}_{config.dtype}"
            f"_{mask}_{'cold' if cold else 'warm'}{again}")


# ---- measuring one variant ----------------------------------------------------------------

def _attempt(thunk):
    """(value, None) or (None, a one-line reason): a failing variant never stops the capture."""
    try:
        return thunk(), None
    except ProfilerError as exc:  # our own errors already say it in one sentence
        return None, str(exc)
    except Exception as exc:  # any failure of third-party kernels, compilers or hubs becomes a skip
        lines = str(exc).strip().splitlines()
        return None, f"{type(exc).__name__}: {lines[0][:200] if lines else 'no message'}"


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def label(variant: str) -> str:
    return f"attention:{variant}"


def time_calls(fn, inputs, device: str, calls: int) -> tuple[float, object]:
    """Microseconds per call over ``calls`` back-to-back calls: CUDA events around them all on
    cuda (one synchronize at the end), the host clock on cpu. Returns the last output too."""
    if device != "cuda":
        started = time.perf_counter()
        for _ in range(calls):
            out = fn(*inputs)
        return (time.perf_counter() - started) * 1e6 / calls, out
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        out = fn(*inputs)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3 / calls, out


def graph_time(fn, inputs, device: str, calls: int) -> tuple[float | None, str | None]:
    """(µs per replay of a CUDA graph of one call, None) or (None, why the variant has none)."""
    if device != "cuda":
        return None, "CUDA graphs need a CUDA GPU"
    graph = None
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            fn(*inputs)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn(*inputs)
        graph.replay()
        us, _ = time_calls(lambda: graph.replay(), (), device, calls)
        return us, None
    except Exception as exc:  # a variant that syncs, allocates on the host or recompiles cannot be captured
        lines = str(exc).strip().splitlines()
        return None, f"cannot be captured in a CUDA graph ({type(exc).__name__}: {lines[0][:160] if lines else ''})"
    finally:
        del graph
        torch.cuda.synchronize()
        _clear_cublas_workspaces()  # the side stream got a cuBLAS workspace of its own
        torch.cuda.empty_cache()


def _clear_cublas_workspaces() -> None:
    if hasattr(torch._C, "_cuda_clearCublasWorkspaces"):
        torch._C._cuda_clearCublasWorkspaces()


def _device_name(device: str) -> str:
    if device == "cuda":
        return torch.cuda.get_device_name()
    return f"CPU {platform.processor() or platform.machine()}"


def run_meta(config: CaptureConfig, variant: str, seq_len: int, cold: bool, numbers: dict) -> dict:
    """The "attention_run" object: what ran, where, with which versions, and what it measured.

    ``wall_us_per_call`` / ``wall_calls`` / ``wall_clock``: see the module docstring (a cold run
    times its one call). ``graph_us_per_call`` / ``graph_calls`` / ``graph_note``: CUDA-graph
    replay. ``rel_error`` against the fp32 reference (checked after the profiled cycle), ``ok``
    when within ``tolerance``. ``repeat`` of ``repeats`` for warm runs. ``process``: the process's
    ``pid``, whether it was ``fresh`` (started for this variant), and its ``caches`` (path, and
    whether it held files at the start). ``ran_before``: variants already run at this shape in
    this process (caches they warmed).
    """
    cudnn = torch.backends.cudnn.version() if config.device == "cuda" else None
    schedule = ({"wait": 0, "warmup": 0, "active": 1} if cold else
                {"wait": config.wait, "warmup": config.warmup, "active": config.active})
    error = numbers.get("rel_error")
    tolerance = TOLERANCE[config.dtype]
    return {
        "variant": variant, "batch": config.batch, "heads": config.heads, "seq_len": seq_len,
        "head_dim": config.head_dim, "dtype": config.dtype, "causal": config.causal, "cold": cold,
        "device": config.device, "device_name": _device_name(config.device),
        "torch_version": torch.__version__, "cuda_version": torch.version.cuda,
        "cudnn_version": str(cudnn) if cudnn else None, "label": label(variant), "schedule": schedule,
        "warmup_calls": 0 if cold else config.warmup_calls, "profile_memory": True, "record_shapes": True,
        "wall_clock": "cuda events" if config.device == "cuda" else "host clock",
        **numbers, "tolerance": tolerance, "ok": error is not None and error <= tolerance,
        "sweep": config.sweep, "repeats": 0 if cold else config.repeats,
    }


def write_meta(path: Path, meta: dict) -> None:
    """Put ``meta`` at the top level of the gzip trace at ``path`` (as ``"attention_run"``)."""
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    if isinstance(doc, list):
        doc = {"traceEvents": doc}
    doc[METADATA_KEY] = meta
    with gzip.open(path, "wt", compresslevel=9) as f:
        json.dump(doc, f, separators=(",", ":"))


# ---- one profiler, many runs --------------------------------------------------------------

class _Driver:
    """The profiler's schedule: returns whatever action the capture asks for next."""

    def __init__(self) -> None:
        self.action = ProfilerAction.NONE
        self.path: Path | None = None  # where the cycle now recording is written; None: discard

    def schedule(self, step: int) -> ProfilerAction:
        return self.action

    def on_trace_ready(self, prof: profile) -> None:
        if self.path is not None:
            prof.export_chrome_trace(str(self.path))

    def enter(self, prof: profile, action: ProfilerAction) -> None:
        self.action = action
        prof.step()


class _Capture:
    """Every asked-for variant and length in this process (a worker's share, or all of it)."""

    def __init__(self, config: CaptureConfig, progress: Progress | None, extra: Iterable[Variant],
                 process: dict | None = None):
        self.config = config
        self.progress = progress or (lambda variant, fraction, message: None)
        self.variants = [get_variant(n) for n in config.variants] + list(extra)
        self.total = len(self.variants) * runs_per_variant(config)
        self.driver = _Driver()
        self.outcomes: list[RunOutcome] = []
        self.before: list[str] = []  # variants already run at the current shape (caches they warmed)
        self.process = process or {"pid": os.getpid(), "fresh": False, "caches": {}}
        self.stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())  # keeps earlier captures' files
        self.reference = None

    def tell(self, variant: str, message: str) -> None:
        self.progress(variant, len(self.outcomes) / self.total, message)

    def run(self) -> list[RunOutcome]:
        self.config.out_dir.mkdir(parents=True, exist_ok=True)
        cuda = self.config.device == "cuda"
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
        # record_shapes: each op's input dims, dtypes and scalar values, which the op-level cost
        # model (profiler/analysis/costmodel.py) prices
        with warnings.catch_warnings(), profile(activities=activities, schedule=self.driver.schedule,
                                                on_trace_ready=self.driver.on_trace_ready,
                                                profile_memory=True, record_shapes=True) as prof:
            # each cycle is one run on purpose: the "clears events at the end of each cycle" note is noise
            warnings.filterwarnings("ignore", message=".*clears events at the end of each cycle")
            for seq_len in self.config.seq_lens:
                self.shape(prof, seq_len)
        return self.outcomes

    def shape(self, prof: profile, seq_len: int) -> None:
        c = self.config
        inputs = make_inputs(c.batch, c.heads, seq_len, c.head_dim, c.dtype, c.device, c.seed)
        _sync(c.device)
        self.before, self.reference = [], None
        for variant in self.variants:
            reason = self.variant(prof, variant, seq_len, inputs)
            if reason is not None:
                self.skip(variant.name, seq_len, reason)
            else:
                self.before.append(variant.name)
        del inputs
        self.reference = None
        if c.device == "cuda":
            torch.cuda.empty_cache()

    def check(self, out, inputs) -> float | None:
        """Relative error against the fp32 reference, computed on first need (after the first cold
        call, so it warms nothing a cold call would pay for) and kept on the CPU."""
        if self.reference is None:
            self.reference = reference_attention(*inputs, causal=self.config.causal).cpu()
            if self.config.device == "cuda":  # leave no reference-sized blocks or cuBLAS workspace behind
                torch.cuda.synchronize()
                _clear_cublas_workspaces()
                torch.cuda.empty_cache()
        return relative_error(out, self.reference)

    def variant(self, prof: profile, variant: Variant, seq_len: int, inputs) -> str | None:
        reason = variant.why_not(self.config.setting())
        if reason is not None:
            return reason
        self.tell(variant.name, f"s{seq_len}: preparing")
        fn, reason = _attempt(lambda: variant.build(self.config.setting()))
        if reason is None and self.config.cold:
            reason = self.cold(prof, variant.name, fn, seq_len, inputs)
        for repeat in range(self.config.repeats or 1):
            if reason is None:
                reason = self.warm(prof, variant.name, fn, seq_len, inputs, repeat)
        return reason

    def skip(self, variant: str, seq_len: int, reason: str) -> None:
        c = self.config
        recorded = {(o.variant, o.seq_len, o.cold, o.repeat) for o in self.outcomes}
        runs = [(True, 0)] * c.cold + [(False, r) for r in range(c.repeats or 1)]
        for cold, repeat in runs:
            if (variant, seq_len, cold, repeat) not in recorded:
                name = run_name(c, variant, seq_len, cold, repeat)
                self.outcomes.append(RunOutcome(variant, seq_len, cold, name, skipped=reason, repeat=repeat))
        self.tell(variant, f"s{seq_len} skipped: {reason}")

    def begin(self, variant: str, seq_len: int, cold: bool, repeat: int) -> str:
        name = run_name(self.config, variant, seq_len, cold, repeat)
        self.driver.path = self.config.out_dir / f"{name}_{self.stamp}.json.gz"
        return name

    def close(self, prof: profile) -> Path | None:
        """End the recording cycle (on_trace_ready writes it); the written path, if any."""
        path = self.driver.path
        self.driver.enter(prof, ProfilerAction.NONE)
        self.driver.path = None
        return path

    def record(self, variant: str, seq_len: int, cold: bool, repeat: int, path: Path, numbers: dict) -> None:
        meta = run_meta(self.config, variant, seq_len, cold,
                        {**numbers, "repeat": repeat, "ran_before": list(self.before), "process": self.process})
        write_meta(path, meta)
        name = run_name(self.config, variant, seq_len, cold, repeat)
        self.outcomes.append(RunOutcome(variant, seq_len, cold, name, path=path, meta=meta, repeat=repeat))
        self.tell(variant, f"s{seq_len}: {'cold' if cold else 'warm'} run written")

    def cold(self, prof: profile, variant: str, fn, seq_len: int, inputs) -> str | None:
        """The first call, alone in its cycle; checked once the cycle has closed."""
        device = self.config.device
        self.tell(variant, f"s{seq_len}: cold call (a first use compiles or plans here)")
        self.begin(variant, seq_len, True, 0)
        self.driver.enter(prof, ProfilerAction.WARMUP)
        self.driver.enter(prof, ProfilerAction.RECORD_AND_SAVE)

        def call():
            with record_function(label(variant)):
                return time_calls(fn, inputs, device, 1)
        timed, reason = _attempt(call)
        path = self.close(prof)
        if reason is not None:
            if path is not None and path.exists():
                path.unlink()
            return reason
        us, out = timed
        error, reason = _attempt(lambda: self.check(out, inputs))
        if reason is not None:
            return reason
        numbers = {"wall_us_per_call": us, "wall_calls": 1, "graph_us_per_call": None, "graph_calls": 0,
                   "graph_note": "a cold run is its one first call", "rel_error": error}
        self.record(variant, seq_len, True, 0, path, numbers)
        return None

    def warm(self, prof: profile, variant: str, fn, seq_len: int, inputs, repeat: int) -> str | None:
        c = self.config
        again = f" (repeat {repeat + 1} of {c.repeats})" if (c.repeats or 1) > 1 else ""
        self.tell(variant, f"s{seq_len}: warm-up{again}")

        def warm_up() -> float | None:
            out = fn(*inputs)
            error = self.check(out, inputs) if repeat == 0 else None
            for _ in range(max(0, c.warmup_calls - 1)):
                fn(*inputs)
            _sync(c.device)
            return error
        error, reason = _attempt(warm_up)
        if reason is not None:
            return reason
        self.tell(variant, f"s{seq_len}: profiling{again}")
        steps = [ProfilerAction.NONE] * c.wait + [ProfilerAction.WARMUP] * c.warmup
        steps += [ProfilerAction.RECORD] * (c.active - 1) + [ProfilerAction.RECORD_AND_SAVE]
        self.begin(variant, seq_len, False, repeat)

        def profiled_steps() -> None:
            for action in steps:
                self.driver.enter(prof, action)
                with record_function(label(variant)):
                    fn(*inputs)
                _sync(c.device)
        _, reason = _attempt(profiled_steps)
        path = self.close(prof)
        if reason is not None:
            if path is not None and path.exists():
                path.unlink()
            return reason
        self.tell(variant, f"s{seq_len}: timing{again}")
        timed, reason = _attempt(lambda: time_calls(fn, inputs, c.device, c.timing_calls))
        if reason is not None:
            return reason
        graph_us, note = graph_time(fn, inputs, c.device, c.timing_calls)
        numbers = {"wall_us_per_call": timed[0], "wall_calls": c.timing_calls, "graph_us_per_call": graph_us,
                   "graph_calls": c.timing_calls if graph_us is not None else 0, "graph_note": note,
                   "rel_error": error if repeat == 0 else self.first_error(variant, seq_len)}
        self.record(variant, seq_len, False, repeat, path, numbers)
        return None

    def first_error(self, variant: str, seq_len: int) -> float | None:
        """A repeat reports the error its point's first warm run measured (same inputs, same code)."""
        for o in self.outcomes:
            if o.variant == variant and o.seq_len == seq_len and not o.cold and o.meta:
                return o.meta["rel_error"]
        return None


def capture(config: CaptureConfig, progress: Progress | None = None,
            extra_variants: Iterable[Variant] = ()) -> list[RunOutcome]:
    """Profile every asked-for variant at every sequence length; one RunOutcome per run.

    With ``config.isolate`` (the default) each variant runs in fresh worker processes
    (``profiler/capture/worker.py``); ``extra_variants`` (variants that are not in the registry,
    which tests use to check that a wrong result is flagged) can only run in this process, so
    passing any runs the whole capture here. A variant that cannot run is skipped with its
    reason and never stops the others.
    """
    config = validate(config)
    extra = tuple(extra_variants)
    if config.isolate and not extra:
        from profiler.capture.worker import capture_isolated

        outcomes = capture_isolated(config, progress)
    else:
        outcomes = _Capture(config, progress, extra).run()
    if progress:
        profiled = sum(o.path is not None for o in outcomes)
        progress("", 1.0, f"{profiled} of {len(outcomes)} runs profiled")
    return outcomes


def ingest_outcomes(store, outcomes: list[RunOutcome], progress: Progress | None = None) -> list:
    """Ingest every profiled run into ``store`` (a profiler.storage.store.Store) as source 'captured'."""
    profiled = [o for o in outcomes if o.path is not None]
    results = []
    for i, outcome in enumerate(profiled):
        results.append(store.ingest(outcome.path, name=outcome.name, source="captured"))
        if progress:
            progress(outcome.variant, (i + 1) / len(profiled), f"ingested {outcome.name}")
    return results
