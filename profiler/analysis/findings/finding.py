"""A finding: one sentence about a run or a pair of runs, its evidence, and how much it is about.

A value type on its own, so that every module that finds something (`findings`, `why`, `memory`,
`counters`, `finding_kinds`) can make one without importing the module that ranks them all;
`Runs` is the runs' tables the kinds read.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd


@dataclass(frozen=True)
class Finding:
    kind: str      # 'gpu_time' | 'kernel_delta' | 'bound' | 'kernels_per_iteration' | 'memcpy' |
                   # 'cuda_core_math' | 'zero_occupancy' | 'tiny_grid' | 'launch_api' |
                   # 'cpu_ops' | 'crossover' | 'cold_start' | 'memory' | 'no_memory' |
                   # 'bytes_moved' | 'fp32_cuda_core_gemm' | 'kernel_arch' | 'counters' |
                   # 'decode_bandwidth' | 'probability_matrix' | 'gqa_bytes'
    text: str
    evidence: dict = field(default_factory=dict)
    impact_us: float = 0.0   # GPU or CPU µs per iteration the finding is about (ranks it)


@dataclass(frozen=True)
class Runs:
    ids: list[str]
    labels: dict[str, str]
    kernels: pd.DataFrame        # kernel_queries.kernel_details
    memops: pd.DataFrame         # queries.memop_table
    metrics: pd.DataFrame        # run_queries.run_metrics, indexed by run_id
