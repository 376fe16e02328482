"""Graph replays in the cost model's walk from a kernel to its op (issue 37; op_charges calls it).

A kernel replayed by a graph launch was launched, for real, when the graph was captured: its
launch call is the graph launch, which no captured op encloses. Where the replay was joined with
its capture (profiler/parse/graph_join.py), the kernel carries the External id of the captured op
that launched it, written into the replay inside the graph launch's span. That op owns it,
although it does not enclose the graph launch call (the rule for every other kernel).
"""
from __future__ import annotations

import numpy as np


def replayed(work: dict, n: int) -> np.ndarray:
    """True where the row of `work` (op_charges.launched_work) was launched by a graph launch
    (sql/op_kernels.sql: replayed); all False for work without the column."""
    got = work.get("replayed")
    return np.zeros(n, dtype=bool) if got is None else np.asarray(got, dtype=bool)
