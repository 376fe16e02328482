"""Repeats of one variant at one shape, and the one run that stands for them.

A capture repeats each variant and shape (`repeat` 1, 2, 3 in the runs table); comparing variants
wants one run each, and not the luckiest: `median_repeats(runs)` keeps, per group of repeats, the
run whose GPU time per call (`timings.gpu_us_per_call`, what runs are ranked by) is nearest the
group's median: the Sweep page's rule (`sweeps.sweep_curves`: the run a point opens) applied to
the runs page's rows. A group is one variant at one shape (`queries.SHAPE_KEYS`), warm or cold, on
one GPU; an upload (no variant) stands for itself.
"""
from __future__ import annotations

import pandas as pd

from profiler.analysis import queries

GROUP = [*queries.SHAPE_KEYS, "cold", "gpu_name"]
MEASURE = "gpu_us_per_call"


def median_repeats(runs: pd.DataFrame) -> list[str]:
    """The run ids of ``runs`` (catalog rows with timings: ``timings.catalog_with_timings``) that
    stand for their group of repeats, in the order the groups first appear in ``runs``. Ties go
    to the earlier repeat, then the smaller run id; a run without a time is picked only when its
    group has no timed run."""
    if runs.empty:
        return []
    keys = runs[GROUP].apply(lambda row: "\x1f".join(map(str, row)), axis=1)
    keys = keys.where(runs["variant"].notna(), "upload:" + runs["run_id"])
    picked = []
    for _, group in runs.groupby(keys, sort=False):
        value = group[MEASURE].astype(float)
        distance = (value - value.median()).abs().fillna(float("inf"))
        order = group.assign(_d=distance, _r=group.get("repeat", pd.Series(0, index=group.index)).fillna(0))
        picked.append(order.sort_values(["_d", "_r", "run_id"], kind="stable")["run_id"].iloc[0])
    return picked
