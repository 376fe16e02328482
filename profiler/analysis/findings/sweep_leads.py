"""Who leads a sweep at each point, and which variants are no rivals there: each point's groups
ranked as `ranking.order` ranks them (the one definition: ties, a variant that runs another's
kernels), for the Sweep page, the sweep findings and `sweeps.crossovers`.

* `ranked_curves(store, curves, points)`: `sweeps.sweep_curves` rows with rank, tied_with and
  same_kernels_as per point; `sweeps.crossovers` of them never names a variant as a rival where
  it runs another's kernels (sdpa_auto dispatching to cuDNN).
* `leaders(curves)`: per point the leader and the best other rival, tied or by how much;
  `lead_sentence(found, axis)` in words; `same_kernel_sentence(curves, axis)`: where a variant
  runs another's kernels.
"""
from __future__ import annotations

import pandas as pd

from profiler.analysis.findings import rank_why, ranking, repeats
from profiler.analysis.findings.sweeps import AXIS_NAMES, amount
from profiler.storage.session import StoreHandle


def ranked_curves(store: StoreHandle, curves: pd.DataFrame, points: pd.DataFrame) -> pd.DataFrame:
    """``curves`` with each point's variants ranked as `ranking.order` ranks groups (the one
    definition: ties, a variant that runs the same kernels as another): rank, tied_with and
    same_kernels_as (the variant whose kernels this one runs at that point: not a rival there, so
    no crossover and no lead is ever reported for it)."""
    if curves.empty:
        return curves.assign(rank=pd.array([], dtype="Int64"), tied_with=None, same_kernels_as=None)
    timed = points.drop_duplicates("run_id").set_index("run_id")["timed_on"]
    rank_why.work(store, curves["run_id"])   # every point's runs in one query (kept), not one per point
    parts = []
    for (sweep, x), part in curves.groupby(["sweep", "x"], sort=False):
        groups = part.assign(set=sweep, timed_on=part["run_id"].map(timed), figure=[
            repeats.Figure(r["us_per_call"], r["us_min"], r["us_max"], int(r["repeats"]), ()) for r in part.to_dict("records")])
        ranked = ranking.order(store, groups.reset_index(drop=True))
        parts.append(ranked.drop(columns=["set", "timed_on", "figure", "times_fastest", "noise_pct"]))
    return pd.concat(parts, ignore_index=True)[[*curves.columns, "rank", "tied_with", "same_kernels_as"]]


def rivals(curves: pd.DataFrame) -> pd.DataFrame:
    """The points of `ranked_curves` that are rivals: ranked, not running another variant's kernels."""
    return curves[curves["same_kernels_as"].isna() & curves["rank"].notna()]


def same_kernel_sentence(curves: pd.DataFrame, axis: str) -> str | None:
    """Which variants of one sweep (`ranked_curves` rows) run another's kernels, and where."""
    alias = curves[curves["same_kernels_as"].notna()].sort_values("x")
    if alias.empty:
        return None
    said = [f"{v} runs the same kernels as {other} at {', '.join(amount(axis, int(x)) for x in part['x'])}"
            for (v, other), part in alias.groupby(["variant", "same_kernels_as"], sort=True)]
    return "; ".join(said) + ": named with it, not ranked as its rival there."


def leaders(curves: pd.DataFrame) -> pd.DataFrame:
    """Per sweep and axis value of `ranked_curves`, the leader and the best other rival: sweep, x,
    leader, runner_up, tied (the two cannot be told apart), margin_pct (the runner-up's time over
    the leader's, less 1)."""
    rows = []
    for (sweep, x), part in rivals(curves).groupby(["sweep", "x"], sort=False):
        if len(part) < 2:
            continue
        part = part.sort_values(["rank", "us_per_call", "variant"])
        win, second = part.iloc[0], part.iloc[1]
        rows.append((sweep, int(x), win["variant"], second["variant"], second["tied_with"] == win["variant"],
                     100 * (second["us_per_call"] / win["us_per_call"] - 1)))
    return pd.DataFrame(rows, columns=["sweep", "x", "leader", "runner_up", "tied", "margin_pct"])


def lead_sentence(found: pd.DataFrame, axis: str) -> str | None:
    """Who leads one sweep (`leaders` rows of one sweep) at each value, in words."""
    if found.empty:
        return None
    found = found.sort_values("x")
    each = [f"{amount(axis, r.x)}: " + (f"tied with {r.runner_up} ({r.margin_pct:.1f} % apart, within the noise)"
                                       if r.tied else f"by {r.margin_pct:.1f} % over {r.runner_up}")
            for r in found.itertuples()]
    names = found["leader"].unique()
    if len(names) == 1 and not found["tied"].any():
        return f"{names[0]} leads at every {AXIS_NAMES[axis]} ({'; '.join(each)})."
    return "Leaders: " + "; ".join(f"{amount(axis, r.x)} {r.leader}" + (f" tied with {r.runner_up}" if r.tied else
                                   f" by {r.margin_pct:.1f} % over {r.runner_up}") for r in found.itertuples()) + "."
