"""The recorder inside one process: torch.profiler over every asked-for run, one Chrome trace each.

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

import os
import time
import warnings
from pathlib import Path
from typing import Iterable

import torch
from torch.profiler import ProfilerAction, ProfilerActivity, profile, record_function

from profiler.capture import graphed, record as measurement
from profiler.capture.config import MAX_WARMUP_CALLS, CaptureConfig, Progress, RunOutcome, run_name, runs_per_variant
from profiler.capture.measure import (attempt, clear_cublas_workspaces, sync, graph_time, label, run_meta,
                                      time_calls, write_meta)
from profiler.capture.variants import Variant, get_variant
from profiler.capture.attention_fns import make_inputs, reference_attention, reference_train, relative_error, train_step


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


class InProcessCapture:
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
        self.grad_errors: dict = {}  # a train step's relative error per gradient (check)

    def tell(self, variant: str, message: str) -> None:
        self.progress(variant, len(self.outcomes) / self.total, message)

    def run(self) -> list[RunOutcome]:
        self.config.out_dir.mkdir(parents=True, exist_ok=True)
        cuda = self.config.device == "cuda"
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
        # record_shapes: each op's input dims, dtypes and scalar values, which the op-level cost
        # model (profiler/analysis/model/costmodel.py) prices
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
        inputs = make_inputs(c.batch, c.heads, seq_len, c.head_dim, c.dtype, c.device, c.seed,
                             kv_heads=c.n_kv_heads, kv_len=c.kv_len_of(seq_len), train=c.mode == "train")
        sync(c.device)
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
        call, so it warms nothing a cold call would pay for) and kept on the CPU. A train step's
        error is the largest of its output's and its gradients' (each kept in ``grad_errors``)."""
        q, k = inputs[0], inputs[1]
        spec = self.config.setting().spec(q.shape[-2], k.shape[-2])
        if self.reference is None:
            if self.config.mode == "train":
                self.reference = tuple(t.cpu() for t in reference_train(*inputs, spec=spec))
            else:
                self.reference = (reference_attention(*inputs[:3], causal=self.config.causal, spec=spec).cpu(),)
            if self.config.device == "cuda":  # leave no reference-sized blocks or cuBLAS workspace behind
                torch.cuda.synchronize()
                clear_cublas_workspaces()
                torch.cuda.empty_cache()
        if self.config.mode != "train":
            return relative_error(out, self.reference[0])
        errors = [relative_error(got, want) for got, want in zip((out,) + tuple(t.grad for t in inputs[:3]),
                                                                 self.reference)]
        self.grad_errors = dict(zip(("dq", "dk", "dv"), errors[1:]))
        return None if None in errors else max(errors)

    def variant(self, prof: profile, variant: Variant, seq_len: int, inputs) -> str | None:
        reason = variant.why_not(self.config.setting())
        if reason is not None:
            return reason
        self.tell(variant.name, f"s{seq_len}: preparing")
        fn, reason = attempt(lambda: variant.build(self.config.setting()))
        if reason is None and self.config.mode == "train":
            fn = train_step(fn)
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
        grads = {"grad_rel_error": dict(self.grad_errors)} if self.config.mode == "train" else {}
        meta = run_meta(self.config, variant, seq_len, cold, {**numbers, **grads, "repeat": repeat,
                                                              "ran_before": list(self.before), "process": self.process})
        write_meta(path, meta)
        name = run_name(self.config, variant, seq_len, cold, repeat)
        self.outcomes.append(RunOutcome(variant, seq_len, cold, name, path=path, meta=meta, repeat=repeat))
        self.tell(variant, f"s{seq_len}: {'cold' if cold else 'warm'} run written")

    def cold(self, prof: profile, variant: str, fn, seq_len: int, inputs) -> str | None:
        """The first call, alone in its cycle; checked once the cycle has closed."""
        device = self.config.device
        self.tell(variant, f"s{seq_len}: cold call (a first use compiles or plans here)")
        self.begin(variant, seq_len, True, 0)
        flushed = measurement.flush_l2(device) if self.config.flush_l2 else False
        self.driver.enter(prof, ProfilerAction.WARMUP)
        self.driver.enter(prof, ProfilerAction.RECORD_AND_SAVE)

        def call():
            with record_function(label(variant)):
                return time_calls(fn, inputs, device, 1)
        sampler = measurement.sampler(device)
        timed, reason = attempt(call)
        gpu = sampler.stop() if sampler else None
        path = self.close(prof)
        if reason is not None:
            if path is not None and path.exists():
                path.unlink()
            return reason
        us, out = timed
        error, reason = attempt(lambda: self.check(out, inputs))
        if reason is not None:
            return reason
        numbers = {"wall_us_per_call": us, "wall_calls": 1, "graph_us_per_call": None, "graph_calls": 0,
                   "graph_note": "a cold run is its one first call", "rel_error": error,
                   "record": measurement.build(device, gpu, l2_flushed=flushed)}
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
            sync(c.device)
            until, calls = time.perf_counter() + c.warmup_s, c.warmup_calls
            while time.perf_counter() < until and calls < MAX_WARMUP_CALLS:  # one call at a time: GPU time
                fn(*inputs)
                sync(c.device)
                calls += 1
            return error
        error, reason = attempt(warm_up)
        if reason is not None:
            return reason
        if c.cuda_graph:  # captured into a CUDA graph, replayed under the profiler (graphed.py)
            return graphed.warm_graphed(self, prof, variant, fn, seq_len, inputs, repeat, error)
        self.tell(variant, f"s{seq_len}: profiling{again}")
        steps = [ProfilerAction.NONE] * c.wait + [ProfilerAction.WARMUP] * c.warmup
        steps += [ProfilerAction.RECORD] * (c.active - 1) + [ProfilerAction.RECORD_AND_SAVE]
        self.begin(variant, seq_len, False, repeat)
        sampler = measurement.sampler(c.device)  # from the profiled steps to the end of the graph replays

        def profiled_steps() -> None:
            for action in steps:
                self.driver.enter(prof, action)
                with record_function(label(variant)):
                    fn(*inputs)
                sync(c.device)
        _, reason = attempt(profiled_steps)
        path = self.close(prof)
        if reason is not None:
            if sampler:
                sampler.stop()
            if path is not None and path.exists():
                path.unlink()
            return reason
        self.tell(variant, f"s{seq_len}: timing{again}")
        timed, reason = attempt(lambda: time_calls(fn, inputs, c.device, c.timing_calls))
        if reason is not None:
            if sampler:
                sampler.stop()
            return reason
        graph_us, note = graph_time(fn, inputs, c.device, c.timing_calls)
        gpu = sampler.stop() if sampler else None
        numbers = {"wall_us_per_call": timed[0], "wall_calls": c.timing_calls, "graph_us_per_call": graph_us,
                   "graph_calls": c.timing_calls if graph_us is not None else 0, "graph_note": note,
                   "rel_error": error if repeat == 0 else self.first_error(variant, seq_len),
                   "record": measurement.build(c.device, gpu)}
        self.record(variant, seq_len, False, repeat, path, numbers)
        return None

    def first_error(self, variant: str, seq_len: int) -> float | None:
        """A repeat reports the error its point's first warm run measured (same inputs, same code)."""
        for o in self.outcomes:
            if o.variant == variant and o.seq_len == seq_len and not o.cold and o.meta:
                return o.meta["rel_error"]
        return None
