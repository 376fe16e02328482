"""The `variants` and `capture` subcommands (registered by profiler/cli/main.py).

torch is imported only when one of these commands runs, so `python -m profiler summary` stays fast.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

from profiler.cli import terminal
from profiler.cli.numbers import whole, wholes
from profiler.present.markup import printable

DTYPES = ("bf16", "fp16", "fp32")
MODES = ("prefill", "decode", "train")  # profiler.capture.setting.MODES (torch is imported only to capture)


_ints = wholes(1, 2**31 - 1)  # lengths, heads, head dims: each positive (the memory check bounds them together)
MAX_CAPTURES = 500  # trace files one command may ask for (a sweep of many points, several variants)


def _names(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def register(subparsers) -> None:
    variants = subparsers.add_parser("variants", help="list the attention variants and whether each can run here")
    variants.add_argument("--json", action="store_true", help="print a JSON list")
    variants.add_argument("--device", choices=("cuda", "cpu"), default=None, help="default: cuda if present")
    variants.add_argument("--dtype", choices=DTYPES, default="bf16")
    variants.add_argument("--head-dim", type=whole(1, 2**31 - 1), default=64)
    variants.add_argument("--mode", choices=MODES, default="prefill",
                          help="the mode whose availability is listed first (--json lists every mode)")
    variants.add_argument("--heads", type=whole(1, 2**31 - 1), default=16)
    variants.add_argument("--kv-heads", type=whole(1, 2**31 - 1), default=None, help="K/V heads (GQA/MQA); default: --heads")
    variants.add_argument("--window", type=whole(1, 2**31 - 1), default=None, help="a sliding window of this many keys")
    variants.add_argument("--varlen", type=_ints, default=None, help="packed sequence lengths, e.g. 128,384")
    variants.add_argument("--causal", action=argparse.BooleanOptionalAction, default=True)
    variants.set_defaults(func=run_variants)

    cap = subparsers.add_parser("capture", help="profile attention variants and ingest each run into the store")
    cap.add_argument("--variants", type=_names, default=None, help="comma-separated names (default: all)")
    cap.add_argument("--mode", choices=MODES, default="prefill",
                     help="prefill: forward over the sequence; decode: --seq query tokens (default 1) against a "
                          "KV cache of --kv-len keys; train: forward and backward, gradients for q, k and v")
    cap.add_argument("--batch", type=whole(1, 2**31 - 1), default=None, help="default: 8 (1 with --varlen)")
    cap.add_argument("--heads", type=whole(1, 2**31 - 1), default=16)
    cap.add_argument("--kv-heads", type=_ints, default=None,
                     help="K/V heads, fewer than --heads for GQA/MQA (default: --heads); several: a sweep")
    cap.add_argument("--seq", type=_ints, default=None,
                     help="query length(s), e.g. 512,1024,2048 (default: 1024; decode: 1)")
    cap.add_argument("--kv-len", type=_ints, default=None,
                     help="keys per sequence: the KV cache length in decode (needed there); several: a sweep")
    cap.add_argument("--window", type=_ints, default=None,
                     help="a sliding window of this many keys (naive, flex, SDPA by an explicit mask); several: a sweep")
    cap.add_argument("--varlen", type=_ints, default=None,
                     help="packed sequences of these lengths, laid end to end in one batch row, e.g. 128,384,512")
    cap.add_argument("--head-dim", type=_ints, default=(64,), help="head dim(s); several: a sweep")
    cap.add_argument("--dtype", choices=DTYPES, default="bf16")
    cap.add_argument("--causal", action=argparse.BooleanOptionalAction, default=True)
    cap.add_argument("--device", choices=("cuda", "cpu"), default=None, help="default: cuda if present")
    cap.add_argument("--cold", action=argparse.BooleanOptionalAction, default=True,
                     help="also profile the first call of each fresh shape as its own run")
    cap.add_argument("--flush-l2", action=argparse.BooleanOptionalAction, default=True,
                     help="evict L2 before a cold run's first call (its inputs, just made, would sit in L2)")
    cap.add_argument("--cuda-graph", action="store_true",
                     help="graph mode: each warm run's calls captured into a CUDA graph and replayed under the "
                          "profiler (as serving engines run decode); the capture-side trace is kept beside it "
                          "(<run>.capture.json.gz); no cold runs; CUDA, prefill or decode only")
    cap.add_argument("--timing-calls", type=whole(1, 100_000), default=20,
                     help="back-to-back calls (and CUDA-graph replays) timed outside the profiler")
    cap.add_argument("--repeats", type=whole(1, 100), default=None,
                     help="warm runs per variant and length (default: 3 in a sweep, else 1)")
    cap.add_argument("--isolate", action=argparse.BooleanOptionalAction, default=True,
                     help="run each variant (and each cold length) in a fresh process with fresh caches")
    cap.add_argument("--compile-cache", type=Path, default=None,
                     help="keep compile caches (inductor, Triton, flashinfer) in this folder instead of fresh ones")
    cap.add_argument("--sweep", default=None,
                     help="a sweep id to put these runs in (several commands, e.g. variants over different "
                          "lengths, in one sweep); letters, digits, '-' and '_'")
    cap.add_argument("--out-dir", type=Path, default=Path("data/traces"), help="where trace files go")
    cap.add_argument("--db", default=None, help="store file (default: $PROFILER_DB or data/traces.duckdb)")
    cap.add_argument("--no-ingest", action="store_true", help="only write trace files")
    cap.add_argument("--counters", action="store_true",
                     help="also count one warm call of each variant under Nsight Compute (ncu) and attach "
                          "its hardware counters to the run (time under ncu is reported, never timed)")
    cap.add_argument("--ceilings", action=argparse.BooleanOptionalAction, default=True,
                     help="measure this GPU's sustained GEMM TFLOP/s and HBM TB/s once per GPU and software "
                          "stack and keep them in the store (rates are shown against them too)")
    cap.set_defaults(func=run_capture)


def run_variants(args: argparse.Namespace) -> int:
    from profiler.capture.variants import availability_by_mode, default_device
    from profiler.capture.setting import Setting

    setting = Setting(device=args.device or default_device(), dtype=args.dtype, head_dim=args.head_dim,
                      causal=args.causal, mode=args.mode, gqa=args.kv_heads not in (None, args.heads),
                      window=args.window, varlen=args.varlen)
    by_mode = availability_by_mode(setting)
    rows = [{"name": a.name, "available": a.available, "reason": a.reason,
             "modes": {mode: {"available": rows[i].available, "reason": rows[i].reason}
                       for mode, rows in by_mode.items()}}
            for i, a in enumerate(by_mode[args.mode])]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    shape = ", ".join(part for part in (
        f"{args.kv_heads} KV heads of {args.heads}" if setting.gqa else "",
        f"window {args.window}" if args.window else "", "packed lengths" if args.varlen else "") if part)
    print(f"variants on {setting.device}, {setting.dtype}, head dim {setting.head_dim}{', ' + shape if shape else ''}:")
    width = max(15, *(len(row["name"]) for row in rows))
    print(f"  {'':{width}s} {'  '.join(f'{m:7s}' for m in by_mode)}")
    for row in rows:
        marks = "  ".join(f"{'yes' if row['modes'][m]['available'] else 'no':7s}" for m in by_mode)
        said = {m: v["reason"] for m, v in row["modes"].items() if v["reason"]}
        same = len(said) == len(by_mode) and len(set(said.values())) == 1
        reasons = next(iter(said.values())) if same else "; ".join(f"{m}: {r}" for m, r in said.items())
        print(f"  {row['name']:{width}s} {marks}  {printable(reasons)}")
    return 0


class _Bar:
    """A one-line progress bar on stderr, driven by the capture's progress callback."""

    def __init__(self, width: int = 30):
        self.width = width

    def __call__(self, variant: str, fraction: float, message: str) -> None:
        filled = int(self.width * fraction)
        line = f"[{'#' * filled}{'-' * (self.width - filled)}] {fraction * 100:5.1f}% {variant} {message}"
        terminal.control(sys.stderr, "\r" + printable(line)[:110].ljust(110))
        sys.stderr.flush()

    def close(self) -> None:
        sys.stderr.write("\n")


SWEEP_AXES = {"kv_heads": "--kv-heads", "kv_len": "--kv-len", "window": "--window", "head_dim": "--head-dim"}


def _configs(args: argparse.Namespace) -> list:
    """The capture's configs: one, or one per point of a sweep over --kv-heads, --kv-len, --window
    or --head-dim (--seq sweeps inside one config). A sweep is over one axis at a time."""
    from profiler.capture.config import CaptureConfig, CaptureError, sweep_points
    from profiler.capture.variants import VARIANTS, default_device

    seq = args.seq or ((1,) if args.mode == "decode" else (1024,))
    lists = {axis: getattr(args, axis) for axis in SWEEP_AXES if getattr(args, axis) is not None}
    several = [axis for axis, values in lists.items() if len(values) > 1] + ["seq"] * (len(seq) > 1)
    if len(several) > 1:
        raise CaptureError("a sweep is over one axis at a time, not " + " and ".join(
            SWEEP_AXES.get(axis, "--seq") for axis in several))
    base = CaptureConfig(variants=args.variants or tuple(VARIANTS), batch=args.batch or (1 if args.varlen else 8),
                         heads=args.heads, seq_lens=seq, head_dim=lists.get("head_dim", (64,))[0], dtype=args.dtype,
                         causal=args.causal, device=args.device or default_device(), cold=args.cold,
                         flush_l2=args.flush_l2,
                         timing_calls=args.timing_calls, repeats=args.repeats, isolate=args.isolate,
                         compile_cache=args.compile_cache, out_dir=args.out_dir, mode=args.mode,
                         kv_heads=lists.get("kv_heads", (None,))[0], kv_len=lists.get("kv_len", (None,))[0],
                         window=lists.get("window", (None,))[0], varlen=args.varlen,
                         sweep=_sweep_id(args.sweep), cuda_graph=args.cuda_graph)
    axis = next((a for a in several if a != "seq"), None)
    configs = sweep_points(base, axis, lists[axis]) if axis else [base]
    _check_count(configs)
    return configs


def _check_count(configs: list) -> None:
    """Refuse a command that asks for more than MAX_CAPTURES traces, before any is captured."""
    from profiler.capture.config import CaptureError, runs_per_variant

    total = sum(len(c.variants) * runs_per_variant(c) for c in configs)
    if total > MAX_CAPTURES:
        raise CaptureError(f"this asks for {total:,} captures ({len(configs):,} sweep points); at most "
                           f"{MAX_CAPTURES:,} in one command: sweep fewer points or variants")


def _sweep_id(given: str | None) -> str | bool:
    from profiler.capture.config import CaptureError

    if given is None:
        return False
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", given):
        raise CaptureError(f"a sweep id is 1 to 64 letters, digits, '-' or '_', not {given[:80]!r}")
    return given


def _report(outcomes, seconds: float) -> None:
    for o in outcomes:
        if o.skipped:
            print(f"skipped   {o.name}: {o.skipped}")
            continue
        m = o.meta
        flag = "ok" if m["ok"] else "WRONG"
        error = "n/a" if m["rel_error"] is None else f"{m['rel_error']:.2e}"
        print(f"profiled  {o.name}: {timing_text(m)}, rel error {error} ({flag}) -> {o.path}")
        if m.get("capture_trace"):
            print(f"          graph capture-side trace -> {o.path.with_name(m['capture_trace'])}")
    print(f"captured {sum(o.path is not None for o in outcomes)} of {len(outcomes)} runs in {seconds:.1f} s")


def timing_text(meta: dict) -> str:
    """A run's timings in words: a cold run's one call, or the per-call wall and graph times."""
    if meta["cold"]:
        return f"first call {meta['wall_us_per_call']:,.0f} µs (one call)"
    text = f"wall {meta['wall_us_per_call']:,.1f} µs/call over {meta['wall_calls']} back-to-back calls"
    if meta.get("graph_us_per_call") is not None:
        text += f", graph replay {meta['graph_us_per_call']:,.1f} µs/call"
    return text


def run_capture(args: argparse.Namespace) -> int:
    from profiler.capture.recorder import capture, ingest_outcomes
    from profiler.capture.config import CaptureError

    started = time.perf_counter()
    bar = _Bar()
    outcomes, counted = [], {}
    try:
        configs = _configs(args)
        for config in configs:
            found = capture(config, progress=bar)
            outcomes += found
            if args.counters:
                counted.update(count_outcomes(config, found))
    except CaptureError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    finally:
        bar.close()
    _report(outcomes, time.perf_counter() - started)
    if not args.no_ingest:
        from profiler.storage.store import Store

        store = Store(args.db)
        if args.ceilings:
            measure_ceilings(store, configs[0].device)
        profiled = [o for o in outcomes if o.path is not None]
        for outcome, result in zip(profiled, ingest_outcomes(store, outcomes, joined=_joined)):
            status = "already in store" if result.duplicate else "ingested"
            print(f"{result.run_id}  {status:16s}  {result.kernels:>6,d} kernels  {result.name}")
            if outcome.path in counted:
                _attach(store, result.run_id, counted[outcome.path])
    return 0 if any(o.path is not None for o in outcomes) else 1


def measure_ceilings(store, device: str) -> None:
    """This GPU's ceilings, measured once per GPU and software stack (profiler/capture/ceilings.py)."""
    from profiler import errors
    from profiler.capture import ceilings
    from profiler.storage import ceilings as kept

    if device != "cuda":
        print("ceilings  not measured: a CPU capture (ceilings are a GPU's)")
        return
    name, stack = ceilings.identity(device)
    if kept.has(store, name, stack):
        print(f"ceilings  already measured for {printable(name)} ({printable(stack)})")
        return
    measured = ceilings.measure(device)
    try:
        kept.keep(store, measured.to_json())
    except errors.ProfilerError as e:
        print(f"ceilings  not kept: {e}")
        return
    values = ", ".join(f"{c.what} {c.value:,.1f} {c.unit}" for c in measured.ceilings)
    print(f"ceilings  {printable(name)}: {values} ({measured.seconds:.1f} s)"
          + "".join(f"; {w}: {printable(why)}" for w, why in measured.skipped.items()))
def _joined(outcome) -> bytes:
    """A graph-mode run's replay trace joined with its capture-side trace (parse/graph_join.py)."""
    from profiler.storage.graph_pair import read
    from profiler.parse import graph_join

    capture_side = outcome.path.with_name(outcome.meta["capture_trace"])
    result = graph_join.join(read(outcome.path), read(capture_side), outcome.path.name, capture_side.name)
    print(f"{outcome.name}: {result.notes()[0]}")
    return result.trace


def count_outcomes(config, outcomes) -> dict:
    """{trace path: Counted} for each variant's first warm run at each length, counted under ncu;
    one line per run, or one line saying why there are no counters here."""
    from profiler.capture import counters
    from profiler.parse.ncu import METRIC_RUNS

    reason = counters.why_not(config.device)
    if reason:
        print(f"counters  not collected: {reason}")
        return {}
    found = {}
    for o in outcomes:
        if o.path is not None and o.cold:
            _check_l2(config, o)
        if o.path is None or o.cold or o.repeat:
            continue
        request = counters.request(config, o)
        print(f"counters  {o.name}: counting one warm call under ncu ...", end="", flush=True)
        c = counters.collect(request, counters.csv_beside(o.path), METRIC_RUNS)
        print(f" {c.seconds:.1f} s under ncu (not in the run's timings)"
              + (f" -> {c.csv_path}" if c.csv_path else f"; no counters: {c.reason}"))
        if c.csv_path:
            found[o.path] = c
    return found


def _check_l2(config, outcome) -> None:
    """A cold run's first kernel under ncu: did it miss L2? Kept in its record (capture/l2check.py)."""
    from profiler.capture import counters, l2check

    print(f"l2 check  {outcome.name}: the first kernel under ncu, as run and after a flush ...", end="", flush=True)
    result = l2check.check(counters.request(config, outcome))
    l2check.keep(outcome.path, result)
    print(f" {printable(result['said'])}")


def _attach(store, run_id: str, counted) -> None:
    from profiler import errors
    from profiler.cli.counters import summary_line

    try:
        print(f"{'':16s}  {summary_line(store.attach_counters(run_id, counted.csv_path, counted.seconds))}")
    except errors.ProfilerError as e:
        print(f"{'':16s}  counters not attached: {e}")
