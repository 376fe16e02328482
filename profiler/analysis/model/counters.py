"""Nsight Compute's counters as the dashboard shows them: the columns, the limiter in words, and
the finding that compares two runs' main kernels by what they achieved.

The counters are attached to a run by `python -m profiler counters` or `capture --counters`
(profiler/storage/counters.py) and read per kernel name by `kernel_queries.kernel_counters`. Runs
without counters have none of these columns filled, and nothing here says anything about them.
"""
from __future__ import annotations

import math

import pandas as pd

# per kernel name (sql/kernel_counters.sql); kernels without counters have them missing
COUNTER_COLUMNS = ["counted_launches", "occupancy_achieved_pct", "occupancy_theoretical_ncu_pct",
                   "sm_throughput_pct", "dram_throughput_pct", "l2_throughput_pct", "tensor_pipe_active_pct",
                   "local_memory_instructions", "ncu_limiter", "ncu_limit_blocks_per_sm", "ncu_mean_us"]


# the kernels page's columns that only runs with counters fill (hidden when no selected run has any)
SHOWN_ON_KERNELS = ("occupancy_achieved_pct", "ncu_limiter_text", "sm_throughput_pct", "dram_throughput_pct",
                    "l2_throughput_pct", "tensor_pipe_active_pct", "local_memory_instructions")


def counted_kernels(kernels: pd.DataFrame) -> int:
    """How many rows of a `kernel_queries.kernel_details` frame carry counters."""
    return int(kernels["occupancy_achieved_pct"].notna().sum()) if "occupancy_achieved_pct" in kernels else 0


def with_limiter_text(kernels: pd.DataFrame) -> pd.DataFrame:
    """`kernels` with ncu_limiter_text: ncu's limiter in words (`limiter_text`)."""
    if "ncu_limiter" not in kernels:
        return kernels.assign(ncu_limiter_text=None)
    return kernels.assign(ncu_limiter_text=[limiter_text(l, b) for l, b in
                                            zip(kernels["ncu_limiter"], kernels["ncu_limit_blocks_per_sm"])])


def present(value) -> bool:
    return value is not None and value is not pd.NA and not (isinstance(value, float) and math.isnan(value))


def limiter_text(limiter, blocks) -> str | None:
    """ncu's limiter in words: 'registers and shared memory (2 blocks per SM each)'; None without one."""
    if not present(limiter):
        return None
    if not present(blocks):
        return str(limiter)
    each = " each" if " and " in str(limiter) else ""
    return f"{limiter} ({int(blocks)} block{'s' * (int(blocks) != 1)} per SM{each})"


def main_kernel(kernels: pd.DataFrame, run_id: str) -> dict | None:
    """The run's kernel with the most GPU time per iteration (a `kernel_queries.kernel_details` row), when
    it has counters; None otherwise."""
    mine = kernels[kernels["run_id"] == run_id]
    if mine.empty or "occupancy_achieved_pct" not in mine:
        return None
    top = mine.sort_values(["us_per_iter", "kernel"], ascending=[False, True]).iloc[0].to_dict()
    return top if present(top.get("occupancy_achieved_pct")) else None


def _pct(value) -> str:
    return "-" if not present(value) else f"{float(value):.1f} %"


def run_sentence(label: str, top: dict) -> tuple[str, dict]:
    """One run's main kernel as the counters saw it: (sentence, evidence)."""
    from profiler.storage.counters import base_name

    limiter = limiter_text(top.get("ncu_limiter"), top.get("ncu_limit_blocks_per_sm"))
    text = (f"Hardware counters (Nsight Compute) for {label}'s main kernel {base_name(top['kernel'])}: "
            f"{_pct(top['occupancy_achieved_pct'])} of warps active, against "
            f"{_pct(top['occupancy_theoretical_ncu_pct'])} theoretical"
            + (f" (limited by {limiter})" if limiter else "")
            + f"; SM throughput {_pct(top['sm_throughput_pct'])}, DRAM {_pct(top['dram_throughput_pct'])}, "
              f"tensor pipes active {_pct(top['tensor_pipe_active_pct'])}.")
    return text, _evidence(top)


def compare_sentence(labels: dict, tops: dict) -> tuple[str, dict]:
    """Two runs' main kernels side by side (``tops``: {run_id: kernel_details row}), the faster
    run first: (sentence, evidence)."""
    from profiler.storage.counters import base_name

    fast, slow = sorted(tops, key=lambda r: (tops[r]["us_per_iter"], r))
    f, s = tops[fast], tops[slow]
    text = (f"Hardware counters (Nsight Compute): {labels[fast]}'s kernel {base_name(f['kernel'])} keeps "
            f"{_pct(f['occupancy_achieved_pct'])} of warps active (of {_pct(f['occupancy_theoretical_ncu_pct'])} "
            f"possible) against {_pct(s['occupancy_achieved_pct'])} (of "
            f"{_pct(s['occupancy_theoretical_ncu_pct'])}) for {labels[slow]}'s {base_name(s['kernel'])}, "
            f"and drives DRAM at {_pct(f['dram_throughput_pct'])} vs {_pct(s['dram_throughput_pct'])}, "
            f"the tensor pipes {_pct(f['tensor_pipe_active_pct'])} vs {_pct(s['tensor_pipe_active_pct'])} "
            f"of active cycles.")
    return text, {"runs": {fast: _evidence(f), slow: _evidence(s)}, "faster": fast}


def _evidence(top: dict) -> dict:
    keys = ("kernel", "us_per_iter", *COUNTER_COLUMNS)
    return {k: (None if not present(top.get(k)) else (top[k].item() if hasattr(top[k], "item") else top[k]))
            for k in keys}
