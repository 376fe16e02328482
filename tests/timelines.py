"""Small traces built from a timeline description, for the truth tests (own vs carried GPU time,
stragglers, verdicts). Times are in µs, as Kineto writes them; every launch call carries the
correlation id of the GPU work it launched, like a real trace.
"""
from __future__ import annotations

import json

PID, TID = 100, 100


class Timeline:
    """Events of one rank: steps on the CPU thread, launches and the GPU work they launched."""

    def __init__(self, rank: int | None = None, world_size: int | None = None):
        self.events: list[dict] = []
        self.header: dict = {}
        if rank is not None:
            self.header["distributedInfo"] = {"rank": rank, "world_size": world_size, "backend": "nccl"}
        self._corr = 1000

    def step(self, n: int, ts: float, dur: float) -> Timeline:
        self.events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}",
                            "pid": PID, "tid": TID, "ts": ts, "dur": dur, "args": {}})
        return self

    def op(self, name: str, ts: float, dur: float, cat: str = "cpu_op") -> Timeline:
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": TID,
                            "ts": ts, "dur": dur, "args": {}})
        return self

    def kernel(self, name: str, ts: float, dur: float, launch_at: float | None = None,
               stream: int = 7, launch_dur: float = 2.0) -> Timeline:
        """A kernel, and its launch call at `launch_at` (None: no launch in the trace, as for work
        launched before profiling began)."""
        self._corr += 1
        if launch_at is not None:
            self.events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                                "pid": PID, "tid": TID, "ts": launch_at, "dur": launch_dur,
                                "args": {"correlation": self._corr}})
        self.events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream,
                            "ts": ts, "dur": dur,
                            "args": {"device": 0, "stream": stream, "correlation": self._corr,
                                     "grid": [1, 1, 1], "block": [128, 1, 1]}})
        return self

    def sync(self, ts: float, dur: float) -> Timeline:
        self._corr += 1
        self.events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize",
                            "pid": PID, "tid": TID, "ts": ts, "dur": dur, "args": {"correlation": self._corr}})
        return self

    def bytes(self) -> bytes:
        return json.dumps({**self.header, "traceEvents": self.events}).encode()
