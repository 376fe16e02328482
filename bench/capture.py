"""Time a whole capture end to end in one process (profiler started once).

    python -m bench.capture [--seq 1024] [--no-cold] [--repeats N] [--compile-cache DIR]
                            [--no-isolate] [--variants a,b] [--out-dir DIR] [--json-out FILE]

Prints (and optionally writes) a JSON object: the machine, the versions, seconds spent importing
torch, seconds in `capture()`, the whole process time, and for each variant the seconds from its
first progress report to its last. Trace files are written only, never ingested. By default each
variant runs in fresh processes with fresh caches (the capture's default); `--compile-cache DIR`
keeps the compile caches (inductor, Triton, flashinfer) in DIR, so a second capture finds them warm.
"""
from __future__ import annotations

import time

PROCESS_START = time.perf_counter()

import argparse
import json
import platform
import sys
from dataclasses import replace
from pathlib import Path

import torch

from profiler.capture.recorder import capture
from profiler.capture.config import CaptureConfig

IMPORTED = time.perf_counter()


class Clock:
    """A progress callback that notes when each variant was first and last heard from."""

    def __init__(self) -> None:
        self.spans: dict[str, list[float]] = {}

    def __call__(self, variant: str, fraction: float, message: str) -> None:
        now = time.perf_counter()
        if variant:
            self.spans.setdefault(variant, [now, now])[1] = now
        print(f"{now - PROCESS_START:7.2f} s  {fraction * 100:5.1f}%  {variant} {message}", file=sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq", default="1024")
    parser.add_argument("--cold", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--compile-cache", type=Path, default=None)
    parser.add_argument("--isolate", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--variants", default=None)
    parser.add_argument("--sweep", default=None, help="join the runs to this sweep id")
    parser.add_argument("--out-dir", type=Path, default=Path("bench/out/capture"))
    parser.add_argument("--json-out", type=Path, default=None)
    args = parser.parse_args()
    config = CaptureConfig(seq_lens=tuple(int(s) for s in args.seq.split(",")), cold=args.cold,
                           repeats=args.repeats, isolate=args.isolate, compile_cache=args.compile_cache,
                           out_dir=args.out_dir)
    if args.variants:
        config = replace(config, variants=tuple(args.variants.split(",")))
    if args.sweep:
        config = replace(config, sweep=args.sweep)
    clock = Clock()
    started = time.perf_counter()
    outcomes = capture(config, progress=clock)
    finished = time.perf_counter()
    cuda = torch.cuda.is_available()
    result = {
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": f"{platform.node()} {platform.machine()}, {torch.get_num_threads()} torch threads",
        "device_name": torch.cuda.get_device_name() if cuda else "cpu",
        "torch": torch.__version__, "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if cuda else None,
        "config": {"seq_lens": list(config.seq_lens), "cold": config.cold, "batch": config.batch,
                   "heads": config.heads, "head_dim": config.head_dim, "dtype": config.dtype,
                   "repeats": config.repeats, "isolate": config.isolate,
                   "compile_cache": str(config.compile_cache) if config.compile_cache else None},
        "caches_warm": sorted({f"{o.variant}:{name}" for o in outcomes if o.meta
                               for name, c in o.meta["process"]["caches"].items() if c["warm"]}),
        "import_s": round(IMPORTED - PROCESS_START, 2),
        "capture_s": round(finished - started, 2),
        "process_s": round(finished - PROCESS_START, 2),
        "variant_s": {v: round(b - a, 2) for v, (a, b) in clock.spans.items()},
        # per worker: seconds importing before its turn, seconds then waiting for it, and whether
        # anything touched the GPU before the turn (it must not)
        "workers": {o.name: {k: o.meta["process"].get(k) for k in
                             ("preloaded", "preload_s", "waited_s", "cuda_initialized_before_turn")}
                    for o in outcomes if o.meta and o.cold},
        "profiled": [o.name for o in outcomes if o.path is not None],
        "skipped": {o.name: o.skipped for o in outcomes if o.skipped},
        "trace_bytes": sum(o.path.stat().st_size for o in outcomes if o.path is not None),
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.json_out:
        args.json_out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
