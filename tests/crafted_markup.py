"""Hostile text for the markup, table and terminal tests of issue 22, generated on demand.

`payload(tag)` is Markdown, HTML, a Streamlit colour directive, KaTeX, autolinks, a formula and
terminal control characters at once. `hostile_trace(tag)` is a small trace with every kind of
event the store keeps (metadata lane names, steps, CPU ops with input shapes, runtime and driver
calls, kernels, copies and sets, GPU annotations, a collective, `[memory]` allocations and frees)
and the payload in every text a trace can set: event names, lane names, shapes, the collective's
name and dtype, the run's variant, dtype and GPU name, the distributed backend (a short one). `hostile_ranks`
is a job of such traces. `formula_cells()` generates cells that a spreadsheet would run.
"""
from __future__ import annotations

import itertools
import json

HOST = "evil.invalid"
# ESC CSI (colour, cursor up, clear screen), an OSC title, BEL, CR, TAB, DEL, C1 CSI, a bidi
# override, and a line break that starts a line of its own
CONTROLS = "\x1b[31m\x1b[1A\x1b[2J\x1b]0;owned\x07\x07\r\t\x7f\x9b31m\u202e\nSPOOFED line "
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n", "\r\n", "\t=", "\r=", "\n=", " =")


def payload(tag: str) -> str:
    return (f"{tag} ![img](http://{HOST}/{tag}.png) [link](http://{HOST}/{tag}) :red[red-{tag}] "
            f"$x^{tag}$ <img src=http://{HOST}/h.png> www.{HOST} a@{HOST} **bold** `code` # heading "
            f"{CONTROLS}end")


def formula_cells() -> list[str]:
    """Each formula start, alone and before a payload, and cells with a line break inside."""
    bodies = ['HYPERLINK("http://evil.invalid","x")', "1+1", "cmd|' /C calc'!A0"]
    cells = [start + body for start, body in itertools.product(FORMULA_STARTS, bodies)]
    return cells + ["ok\r=1+1", "ok\n=1+1", "ok\r\n@SUM(A1)", '"quoted",=1+1']


def _x(cat: str, name: str, ts: float, dur: float, pid: int = 10, tid: int = 10, **args) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _memory(ts: float, size: int, total: int, addr: int) -> dict:
    return {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 10, "tid": 10, "ts": ts,
            "args": {"Total Reserved": 1 << 24, "Total Allocated": total, "Bytes": size, "Addr": addr,
                     "Device Id": 0, "Device Type": 1}}


def _step(i: int, tag: str, base: float) -> list[dict]:
    """One iteration: every kind of event, with the payload in each name it carries."""
    p, t, c = payload(tag), base, 100 * i
    return [
        _x("user_annotation", f"ProfilerStep#{i}", t, 400, **{"External id": c}),
        _x("cpu_op", f"aten::mm {p}", t + 10, 100, **{"External id": c + 1, "Input Dims": [[64, 64], [64, 64]],
                                                      "Input type": [p, "float"]}),
        _x("cuda_runtime", "cudaLaunchKernel", t + 20, 10, **{"External id": c + 1, "correlation": c + 1, "cbid": 211}),
        _x("cuda_driver", f"cuLaunchKernel {p}", t + 32, 4, **{"External id": c + 1, "correlation": c + 2}),
        _x("cuda_runtime", f"cudaMemcpyAsync {p}", t + 40, 5, **{"correlation": c + 3, "cbid": 41}),
        _x("kernel", f"=HYPERLINK(\"http://{HOST}\") {p}", t + 60, 150, pid=0, tid=7, device=0, stream=7,
           correlation=c + 1, grid=[16, 1, 1], block=[128, 1, 1], **{"External id": c + 1}),
        _x("kernel", f"+cmd {p}", t + 215, 20, pid=0, tid=7, device=0, stream=7, correlation=c + 2),
        _x("gpu_memcpy", f"Memcpy DtoD {p}", t + 240, 5, pid=0, tid=7, device=0, stream=7, correlation=c + 3,
           bytes=1 << 20),
        _x("gpu_memset", f"Memset {p}", t + 250, 2, pid=0, tid=7, device=0, stream=7, bytes=1024),
        _x("gpu_user_annotation", f"@annot {p}", t + 60, 200, pid=0, tid=7),
        _x("cpu_op", "record_param_comms", t + 300, 20, **{"External id": c + 5, "Collective name": f"all_reduce {p}",
                                                         "In msg nelems": 1024, "Out msg nelems": 1024,
                                                         "dtype": f"Float {p}", "Group size": 2}),
        _x("kernel", f"ncclDevKernel_AllReduce {p}", t + 320, 30, pid=0, tid=7, device=0, stream=7,
           correlation=c + 5),
        _memory(t + 12, 4096, 8192 + 4096 * i, 1000 + i),
        _memory(t + 14, 1 << 20, 8192 + 4096 * i + (1 << 20), 2000 + i),
        _memory(t + 380, -(1 << 20), 8192 + 4096 * i, 2000 + i),
    ]


def hostile_trace(tag: str, rank: int | None = None, world: int = 2) -> bytes:
    """A trace of two iterations with every kind of event and the payload in every text."""
    p = payload(tag)
    meta = [{"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": f"GPU 0 {p}"}},
            {"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": f"stream 7 {p}"}},
            {"ph": "M", "name": "thread_name", "pid": 10, "tid": 10, "args": {"name": f"python {p}"}},
            {"ph": "M", "name": "process_labels", "pid": 10, "tid": 0, "args": {"labels": p}}]
    doc = {"schemaVersion": 1, "displayTimeUnit": "ms", "traceName": p,
           "deviceProperties": [{"id": 0, "name": f"NVIDIA H200 {p}", "totalGlobalMem": 150_000_000_000,
                                 "computeMajor": 9, "computeMinor": 0, "numSms": 132}],
           "attention_run": {"variant": f"naive {p}", "batch": 2, "heads": 4, "seq_len": 256, "head_dim": 64,
                             "dtype": f"bf16 {p}", "causal": True, "cold": False},
           "traceEvents": meta + _step(1, tag, 1000) + _step(2, tag, 1500)}
    if rank is not None:
        # the backend is read from the top of the file, up to 40 characters without escapes
        doc["distributedInfo"] = {"backend": f"![b](http://{HOST}/{tag}.png):red[b]"[:40], "rank": rank,
                                  "world_size": world}
    return json.dumps(doc).encode()


def hostile_ranks(tag: str, world: int = 2) -> list[tuple[str, bytes]]:
    """The rank traces of a job: (file name with a payload, bytes) per rank."""
    return [(f"{payload(tag)[:60]} rank{r}.json".replace("/", "_"), hostile_trace(f"{tag}{r}", rank=r, world=world))
            for r in range(world)]
