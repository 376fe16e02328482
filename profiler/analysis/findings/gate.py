"""The `check` gate: is the candidate slower than the baseline, beyond the noise?

Each side is a group of repeats (`ranking`: one workload, device and state; `repeats`: the median,
the interval, outliers set aside). The verdict comes from the ratio candidate / baseline and its
interval (`repeats.ratio`): **fail** when the slowdown exceeds the allowed one *and* is outside the
noise (the candidate's fastest repeat is slower than the baseline's slowest, and the slowdown is
above the noise floor, the larger spread of the two sides); **within noise** when it exceeds the
allowed slowdown but not the noise; **ok** otherwise. With one run a side the noise is not
measured: the figure alone decides, and the verdict says so.

Refused (`Refusal`, one sentence): sides whose workloads differ (mode, shape, dtype, device)
unless allowed; a side whose runs are not repeats of one workload and state; a side without a
time per call (0 µs or none recorded); sides timed on different clocks (GPU against CPU).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from profiler import errors
from profiler.analysis.reads import pair_queries
from profiler.analysis.findings import ranking, repeats
from profiler.storage.session import StoreHandle


class Refusal(errors.ProfilerError):
    """`check` cannot judge these sides: the sentence says why."""


@dataclass(frozen=True)
class Verdict:
    baseline: list[str]
    candidate: list[str]
    base: repeats.Figure
    cand: repeats.Figure
    noise: float                 # relative; NaN when neither side has repeats
    max_slowdown_pct: float
    timed_on: str
    workloads: tuple[str, str]   # each side's workload in words
    grew: list[dict] = field(default_factory=list)
    outliers: list[dict] = field(default_factory=list)

    @property
    def ratio(self) -> repeats.Ratio:
        return repeats.ratio(self.base, self.cand)

    @property
    def slowdown_pct(self) -> float:
        return 100.0 * (self.ratio.mid - 1.0)

    @property
    def outside_noise(self) -> bool:
        return self.ratio.lo > 1.0 and (math.isnan(self.noise) or self.ratio.mid - 1.0 > self.noise)

    @property
    def failed(self) -> bool:
        return self.slowdown_pct > self.max_slowdown_pct and self.outside_noise

    @property
    def status(self) -> str:
        if self.failed:
            return "fail"
        return "within noise" if self.slowdown_pct > self.max_slowdown_pct else "ok"


def _side(runs, name: str):
    """The one group a side's runs form (its figure), or a Refusal."""
    if runs.empty:
        raise Refusal(f"the {name} names no run")
    sets = runs["set"].unique()
    if len(sets) > 1 or runs["variant"].astype(str).nunique() > 1:
        raise Refusal(f"the {name}'s runs are not repeats of one variant, workload and state "
                      f"({len(sets)} workloads or states, variants {', '.join(sorted(runs['variant'].astype(str).unique()))})")
    found = ranking.groups(runs.assign(group=name)).iloc[0]   # uploads too: the side is its repeats
    if not found["figure"].known:
        raise Refusal(f"the {name} ({', '.join(found['run_ids'])}) has no time per call: 0 µs, no GPU work "
                      "and no timed attention call, so there is nothing to compare")
    return found


def _workload(row) -> str:
    return ranking.set_title(row).rsplit(", ", 2)[0] + f", {row['device']}"


def check(store: StoreHandle, baseline: list[str], candidate: list[str], max_slowdown_pct: float,
          allow_different_workloads: bool = False, most: int = 5) -> Verdict:
    """The verdict of the candidate's runs against the baseline's (see the module docstring)."""
    runs = ranking.runs_of(store, [*baseline, *candidate])
    base = _side(runs[runs["run_id"].isin(baseline)], "baseline")
    cand = _side(runs[runs["run_id"].isin(candidate)], "candidate")
    words = (_workload(base), _workload(cand))
    if words[0] != words[1] and not allow_different_workloads:
        raise Refusal(f"the baseline is {words[0]} and the candidate {words[1]}: different workloads are not "
                      "compared (pass --allow-different-workloads to compare them anyway)")
    if base["timed_on"] != cand["timed_on"]:
        raise Refusal(f"the baseline is timed on the {base['timed_on']} and the candidate on the "
                      f"{cand['timed_on']}: the two times do not compare")
    noise = repeats.pair_noise(base["figure"], cand["figure"])
    delta = pair_queries.kernel_delta(store, base["run_id"], cand["run_id"])
    grown = delta.assign(grew=delta["us_b"] - delta["us_a"]).sort_values(["grew", "kernel"], ascending=[False, True])
    grew = [{"kernel": r["kernel"], "us_per_iter_baseline": float(r["us_a"]), "us_per_iter_candidate": float(r["us_b"])}
            for r in grown[grown["grew"] > 0].head(most).to_dict("records")]
    odd = [{"side": side, "run_id": r, "us_per_call": us}
           for side, g in (("baseline", base), ("candidate", cand)) for r, us in zip(g["outliers"], g["outlier_us"])]
    return Verdict(list(base["run_ids"]), list(cand["run_ids"]), base["figure"], cand["figure"], noise,
                   max_slowdown_pct, base["timed_on"], words, grew, odd)
