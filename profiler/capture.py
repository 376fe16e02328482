"""Profile attention variants with torch.profiler and write one Chrome trace per run.

A run is one variant at one shape, either *cold* (the very first call of a fresh shape, so the
CPU cost of compiling or of cuDNN building its plan shows) or *warm* (``warmup_calls`` calls
outside the profiler, then the walkthrough's ``schedule(wait, warmup, active)``).

The whole capture uses one ``torch.profiler.profile`` object, started once: a driver sets the
schedule's next action before each ``prof.step()``, so each run is one profiler cycle, and
``on_trace_ready`` writes it to ``<out_dir>/<run name>_<UTC time>.json.gz``. Each trace
describes itself: while its cycle records, ``prof.add_metadata_json("attention_run", ...)`` adds
the run's metadata (``run_meta`` lists the fields), which lands at the trace's top level (checked
on torch 2.11 + CUDA and 2.13 CPU).

Progress: ``progress(variant, fraction, message)`` is called as the capture moves on;
``fraction`` is the share of the whole capture done (0.0 to 1.0, never decreasing, 1.0 at the
end) and ``message`` is a short sentence such as ``"s1024 cold call"`` or ``"skipped: ..."``.
"""
from __future__ import annotations

import json
import os
import platform
import statistics
import time
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable

import torch
from torch.profiler import ProfilerAction, ProfilerActivity, profile, record_function

from profiler.errors import ProfilerError
from profiler.variants import (DTYPES, VARIANTS, Setting, Variant, default_device, get_variant, make_inputs,
                               reference_attention, relative_error)

Progress = Callable[[str, float, str], None]
METADATA_KEY = "attention_run"
TOLERANCE = {"bf16": 2e-2, "fp16": 5e-3, "fp32": 1e-3}  # relative error against the fp32 reference


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
    timing_calls: int = 20  # calls timed outside the profiler (median)
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


def validate(config: CaptureConfig) -> CaptureConfig:
    """Raise CaptureError naming the first bad field; return the config with a sweep id set."""
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
                 timing_calls=config.timing_calls)
    sizes.update({f"seq_len {s}": s for s in config.seq_lens} or {"seq_lens": 0})
    for what, value in sizes.items():
        if value < 1:
            raise CaptureError(f"{what} must be at least 1, not {value}")
    if min(config.wait, config.warmup, config.warmup_calls) < 0:
        raise CaptureError("wait, warmup and warmup_calls must not be negative")
    _check_memory(config)
    if config.sweep is False and len(config.seq_lens) > 1:
        config = replace(config, sweep=time.strftime("sweep-%Y%m%dT%H%M%SZ", time.gmtime()))
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


def run_name(config: CaptureConfig, variant: str, seq_len: int, cold: bool) -> str:
    mask = "causal" if config.causal else "full"
    return (f"{variant}_b{config.batch}_h{config.heads}_s{seq_len}_d{config.head_dim}_{config.dtype}"
            f"_{mask}_{'cold' if cold else 'warm'}")


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


def _timed(fn, inputs, device: str):
    """One call: (output, milliseconds by CUDA events on cuda / wall clock on cpu, wall ms)."""
    if device != "cuda":
        wall = time.perf_counter()
        out = fn(*inputs)
        wall_ms = (time.perf_counter() - wall) * 1e3
        return out, wall_ms, wall_ms
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    wall = time.perf_counter()
    start.record()
    out = fn(*inputs)
    end.record()
    torch.cuda.synchronize()
    return out, start.elapsed_time(end), (time.perf_counter() - wall) * 1e3


def _reset_peak(device: str) -> int:
    if device != "cuda":
        return 0
    _sync(device)
    torch.cuda.reset_peak_memory_stats()
    return torch.cuda.memory_allocated()


def _peak_since(device: str, before: int) -> int | None:
    """Peak bytes allocated above what was held before the call (inputs); None on CPU."""
    return torch.cuda.max_memory_allocated() - before if device == "cuda" else None


def _timing_key(device: str) -> str:
    return "cuda_ms_median" if device == "cuda" else "wall_ms_median"


def cold_call(fn, inputs, reference, variant: str, device: str) -> dict:
    """The first call of a fresh shape, inside the recording cycle. Its output is then checked
    under a ``check_output`` label against the reference on the CPU: one device-to-host copy."""
    before = _reset_peak(device)
    with record_function(label(variant)):
        out, ms, wall_ms = _timed(fn, inputs, device)
    peak = _peak_since(device, before)
    with record_function("check_output"):
        error = relative_error(out, reference)
    return {_timing_key(device): ms, "timing_calls": 1, "cold_wall_ms": wall_ms,
            "peak_mem_bytes": peak, "rel_error": error}


def warm_numbers(fn, inputs, reference, config: CaptureConfig) -> dict:
    """Outside the profiler: warm-up calls (the first one checked), peak memory, median timing."""
    error = relative_error(fn(*inputs), reference)
    for _ in range(max(0, config.warmup_calls - 1)):
        fn(*inputs)
    before = _reset_peak(config.device)
    _timed(fn, inputs, config.device)
    peak = _peak_since(config.device, before)
    ms = statistics.median(_timed(fn, inputs, config.device)[1] for _ in range(config.timing_calls))
    return {_timing_key(config.device): ms, "timing_calls": config.timing_calls, "peak_mem_bytes": peak,
            "rel_error": error}


def profiled_call(fn, inputs, variant: str, device: str) -> None:
    with record_function(label(variant)):
        fn(*inputs)
    _sync(device)


def _device_name(device: str) -> str:
    if device == "cuda":
        return torch.cuda.get_device_name()
    return f"CPU {platform.processor() or platform.machine()}"


def run_meta(config: CaptureConfig, variant: str, seq_len: int, cold: bool, numbers: dict) -> dict:
    """The "attention_run" object: what ran, where, with which versions, and what it measured.

    Timing: ``cuda_ms_median`` (CUDA events, cuda) or ``wall_ms_median`` (wall clock, cpu), the
    median of ``timing_calls`` calls outside the profiler; a cold run times its one call and adds
    ``cold_wall_ms``. ``peak_mem_bytes``: most allocated during one call above the inputs (None on
    cpu). ``rel_error`` against the fp32 reference, ``ok`` when within ``tolerance``.
    ``ran_before``: variants already run at this shape in this process (caches they warmed).
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
        "warmup_calls": 0 if cold else config.warmup_calls, **numbers, "tolerance": tolerance,
        "ok": error is not None and error <= tolerance, "sweep": config.sweep,
    }


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
    def __init__(self, config: CaptureConfig, progress: Progress | None, extra: Iterable[Variant]):
        self.config = config
        self.progress = progress or (lambda variant, fraction, message: None)
        self.variants = [get_variant(n) for n in config.variants] + list(extra)
        self.kinds = (True, False) if config.cold else (False,)
        self.total = len(self.variants) * len(config.seq_lens) * len(self.kinds)
        self.driver = _Driver()
        self.outcomes: list[RunOutcome] = []
        self.before: list[str] = []  # variants already run at the current shape (caches they warmed)
        self.stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())  # keeps earlier captures' files

    def tell(self, variant: str, message: str) -> None:
        self.progress(variant, len(self.outcomes) / self.total, message)

    def run(self) -> list[RunOutcome]:
        self.config.out_dir.mkdir(parents=True, exist_ok=True)
        cuda = self.config.device == "cuda"
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
        # record_shapes: each op's input dims, dtypes and scalar values, which the op-level cost
        # model (profiler/costmodel.py) prices
        with warnings.catch_warnings(), profile(activities=activities, schedule=self.driver.schedule,
                                                on_trace_ready=self.driver.on_trace_ready,
                                                record_shapes=True) as prof:
            # each cycle is one run on purpose: the "clears events at the end of each cycle" note is noise
            warnings.filterwarnings("ignore", message=".*clears events at the end of each cycle")
            for seq_len in self.config.seq_lens:
                self.shape(prof, seq_len)
        return self.outcomes

    def shape(self, prof: profile, seq_len: int) -> None:
        c = self.config
        inputs = make_inputs(c.batch, c.heads, seq_len, c.head_dim, c.dtype, c.device, c.seed)
        reference = reference_attention(*inputs, causal=c.causal).cpu()
        self.before = []
        for variant in self.variants:
            reason = self.variant(prof, variant, seq_len, inputs, reference)
            if reason is not None:
                self.skip(variant.name, seq_len, reason)
            else:
                self.before.append(variant.name)
        del inputs, reference
        if c.device == "cuda":
            torch.cuda.empty_cache()

    def variant(self, prof: profile, variant: Variant, seq_len: int, inputs, reference) -> str | None:
        reason = variant.why_not(self.config.setting())
        if reason is not None:
            return reason
        self.tell(variant.name, f"s{seq_len}: preparing")
        fn, reason = _attempt(lambda: variant.build(self.config.setting()))
        if reason is None and self.config.cold:
            reason = self.cold(prof, variant.name, fn, seq_len, inputs, reference)
        if reason is None:
            reason = self.warm(prof, variant.name, fn, seq_len, inputs, reference)
        return reason

    def skip(self, variant: str, seq_len: int, reason: str) -> None:
        recorded = {(o.variant, o.seq_len, o.cold) for o in self.outcomes}
        for cold in self.kinds:
            if (variant, seq_len, cold) not in recorded:
                name = run_name(self.config, variant, seq_len, cold)
                self.outcomes.append(RunOutcome(variant, seq_len, cold, name, skipped=reason))
        self.tell(variant, f"s{seq_len} skipped: {reason}")

    def record(self, prof: profile, variant: str, seq_len: int, cold: bool, numbers: dict) -> None:
        meta = run_meta(self.config, variant, seq_len, cold, {**numbers, "ran_before": list(self.before)})
        name = run_name(self.config, variant, seq_len, cold)
        self.driver.path = self.config.out_dir / f"{name}_{self.stamp}.json.gz"
        prof.add_metadata_json(METADATA_KEY, json.dumps(meta))
        self.driver.enter(prof, ProfilerAction.NONE)  # ends the cycle: on_trace_ready writes it
        self.outcomes.append(RunOutcome(variant, seq_len, cold, name, path=self.driver.path, meta=meta))
        self.driver.path = None
        self.tell(variant, f"s{seq_len}: {'cold' if cold else 'warm'} run written")

    def cold(self, prof: profile, variant: str, fn, seq_len: int, inputs, reference) -> str | None:
        self.tell(variant, f"s{seq_len}: cold call")
        self.driver.enter(prof, ProfilerAction.WARMUP)
        self.driver.enter(prof, ProfilerAction.RECORD_AND_SAVE)
        numbers, reason = _attempt(lambda: cold_call(fn, inputs, reference, variant, self.config.device))
        if reason is not None:
            self.driver.enter(prof, ProfilerAction.NONE)  # closes the cycle; path None: not written
            return reason
        self.record(prof, variant, seq_len, True, numbers)
        return None

    def warm(self, prof: profile, variant: str, fn, seq_len: int, inputs, reference) -> str | None:
        self.tell(variant, f"s{seq_len}: warm-up and timing")
        numbers, reason = _attempt(lambda: warm_numbers(fn, inputs, reference, self.config))
        if reason is not None:
            return reason
        self.tell(variant, f"s{seq_len}: profiling")
        c = self.config
        steps = [ProfilerAction.NONE] * c.wait + [ProfilerAction.WARMUP] * c.warmup
        steps += [ProfilerAction.RECORD] * (c.active - 1) + [ProfilerAction.RECORD_AND_SAVE]

        def profiled_steps() -> None:
            for action in steps:
                self.driver.enter(prof, action)
                profiled_call(fn, inputs, variant, c.device)
        _, reason = _attempt(profiled_steps)
        if reason is not None:
            self.driver.enter(prof, ProfilerAction.NONE)  # closes the cycle; path None: not written
            return reason
        self.record(prof, variant, seq_len, False, numbers)
        return None


def capture(config: CaptureConfig, progress: Progress | None = None,
            extra_variants: Iterable[Variant] = ()) -> list[RunOutcome]:
    """Profile every asked-for variant at every sequence length; one RunOutcome per run.

    ``extra_variants`` adds variants that are not in the registry (tests use it to check that a
    wrong result is flagged). A variant that cannot run is skipped with its reason and never stops
    the others.
    """
    config = validate(config)
    outcomes = _Capture(config, progress, extra_variants).run()
    if progress:
        profiled = sum(o.path is not None for o in outcomes)
        progress("", 1.0, f"{profiled} of {len(outcomes)} runs profiled")
    return outcomes


def ingest_outcomes(store, outcomes: list[RunOutcome], progress: Progress | None = None) -> list:
    """Ingest every profiled run into ``store`` (a profiler.store.Store) as source 'captured'."""
    profiled = [o for o in outcomes if o.path is not None]
    results = []
    for i, outcome in enumerate(profiled):
        results.append(store.ingest(outcome.path, name=outcome.name, source="captured"))
        if progress:
            progress(outcome.variant, (i + 1) / len(profiled), f"ingested {outcome.name}")
    return results
