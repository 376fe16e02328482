"""A trace's JSON read by hand, apart from the parser and the store: the independent side of the
tests that check the store's figures against the raw file."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

GPU_WORK = ("kernel", "gpu_memcpy", "gpu_memset")   # what a call's GPU time is made of


def load(path: str | Path) -> dict:
    """The whole trace (gzipped or not)."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def steps(events: list) -> list[tuple[float, float]]:
    """(start, end) in µs of each ProfilerStep the CPU recorded (the GPU's copy of the annotation left out)."""
    return [(e["ts"], e["ts"] + e["dur"]) for e in events
            if e.get("ph") == "X" and e.get("cat") != "gpu_user_annotation"
            and str(e.get("name", "")).startswith("ProfilerStep#")]


def us_per_step(events: list, cats=("kernel",), inside_steps: bool = False) -> float:
    """The summed durations of the events of `cats` over the number of steps: all of them, or with
    `inside_steps` those that start inside a step."""
    windows = steps(events)
    picked = [e for e in events if e.get("cat") in cats]
    if inside_steps:
        picked = [e for e in picked if any(a <= e["ts"] < b for a, b in windows)]
    return sum(e["dur"] for e in picked) / len(windows)
