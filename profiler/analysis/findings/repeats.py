"""The statistics of repeats: one group's figure, its interval and outliers, the noise floor, ties;
and the one run that stands for its repeats on the runs page (`median_repeats`).

Every comparison of runs in `ranking` (the rank table, `rank --json`, the pages), `gate` (`check`)
and `sweeps` (the Sweep page, crossovers) reads these rules; nothing else decides what a figure
of several repeats is or whether two figures differ.

- **Outlier**: with three or more repeats, a repeat further from the group's median than both
  ``OUTLIER_REL`` (5 %) of it and ``OUTLIER_MADS`` (3) median absolute deviations; never half
  the repeats or more (then nothing says which are the odd ones). It is flagged with its run id
  and set aside.
- **Figure**: the median of the repeats left; **interval**: their least to their most. With a
  few repeats, the range is the honest interval (a standard error of 3 values claims more than
  they know).
- **Spread** of a group: its interval's width over its median (none for one repeat).
- **Noise floor** of a comparison: the larger spread of the two groups; where neither has
  repeats, the median spread of the other groups compared with them (`noise_floor`); unmeasured
  (NaN) when no group has two repeats.
- **Tie**: two groups whose intervals overlap, or whose medians differ by less than the noise
  floor (relative to the smaller).
- **Ratio** of two groups (candidate over baseline): the medians' ratio, within the least and the
  most the intervals allow (``cand.lo / base.hi`` to ``cand.hi / base.lo``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from profiler.analysis.reads import queries

OUTLIER_REL = 0.05
OUTLIER_MADS = 3.0
RULE = ("figure: the median of the repeats; interval: their least to their most; a repeat more than "
        f"{OUTLIER_REL:.0%} and {OUTLIER_MADS:g} median absolute deviations from the median is an outlier, "
        "set aside; tied: intervals overlap or the medians differ by less than the noise floor (the larger "
        "spread, max - min over median, of the two groups' repeats)")


@dataclass(frozen=True)
class Figure:
    median: float
    lo: float
    hi: float
    n: int                      # repeats the figure uses (outliers aside)
    outliers: tuple[int, ...]   # positions, in the values given, of the repeats set aside

    @property
    def spread(self) -> float:
        """(max - min) / median of the repeats used; NaN with fewer than two."""
        return (self.hi - self.lo) / self.median if self.n >= 2 and self.median > 0 else math.nan

    @property
    def known(self) -> bool:
        return self.n > 0 and self.median > 0


NONE = Figure(math.nan, math.nan, math.nan, 0, ())


def outliers(values) -> tuple[int, ...]:
    """Positions of the repeats that are outliers (see the module docstring)."""
    v = np.asarray(values, dtype=float)
    if len(v) < 3:
        return ()
    median = float(np.median(v))
    dev = np.abs(v - median)
    mad = float(np.median(dev))
    far = np.flatnonzero(dev > max(OUTLIER_REL * median, OUTLIER_MADS * mad))
    return tuple(int(i) for i in far) if 2 * len(far) < len(v) else ()


def figure(values) -> Figure:
    """The figure of a group's repeats; values that are not positive numbers (no time recorded)
    are left out, and a group with none has no figure (`NONE`)."""
    v = np.asarray([x if x is not None else math.nan for x in values], dtype=float)
    usable = np.flatnonzero(np.isfinite(v) & (v > 0))
    if not len(usable):
        return NONE
    odd = {int(usable[i]) for i in outliers(v[usable])}
    kept = np.array([v[i] for i in usable if int(i) not in odd])
    return Figure(float(np.median(kept)), float(kept.min()), float(kept.max()), len(kept), tuple(sorted(odd)))


def noise_floor(figures) -> float:
    """The median spread of the figures with two or more repeats; NaN when none has."""
    spreads = [f.spread for f in figures if f.n >= 2 and not math.isnan(f.spread)]
    return float(np.median(spreads)) if spreads else math.nan


def pair_noise(a: Figure, b: Figure, floor: float = math.nan) -> float:
    """The noise floor of comparing a and b: the larger of their spreads, else ``floor``."""
    spreads = [s for s in (a.spread, b.spread) if not math.isnan(s)]
    return max(spreads) if spreads else floor


def difference(a: Figure, b: Figure) -> float:
    """How far apart the medians are, relative to the smaller."""
    return abs(a.median - b.median) / min(a.median, b.median)


def tied(a: Figure, b: Figure, noise: float) -> bool:
    """Whether a and b cannot be told apart (see the module docstring)."""
    if not (a.known and b.known):
        return False
    overlap = a.lo <= b.hi and b.lo <= a.hi
    return overlap or (not math.isnan(noise) and difference(a, b) < noise)


@dataclass(frozen=True)
class Ratio:
    mid: float
    lo: float
    hi: float


def ratio(base: Figure, cand: Figure) -> Ratio:
    """The candidate's figure over the baseline's, with the least and most the intervals allow."""
    return Ratio(cand.median / base.median, cand.lo / base.hi, cand.hi / base.lo)


GROUP = [*queries.SHAPE_KEYS, "cold", "gpu_name"]
MEASURE = "gpu_us_per_call"


def median_repeats(runs: pd.DataFrame) -> list[str]:
    """A group is one variant at one shape (`queries.SHAPE_KEYS`), warm or cold, on one GPU; an
    upload (no variant) stands for itself. The run ids of ``runs`` (catalog rows with timings: ``timings.catalog_with_timings``) that
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
