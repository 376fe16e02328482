"""Whether a job's ranks can be compared in time: each rank's clock offset (sql/job_clock.sql and
the estimate in profiler/storage/sql/lib/job_clock.sql), the verdict on the estimate, and the
waits that cannot be right.

Waits and the straggler are computed on the consensus clock (each rank's offset taken off). They
are not stated at all when the estimate is inconsistent (a rank would have waited longer than its
own collective kernel ran), and a rank-iteration's wait larger than its step or than its own
collective time is flagged: never a finding, and the straggler of that iteration is not named.
"""
from __future__ import annotations

import pandas as pd

CLOCK_COLUMNS = ["rank", "matched", "offset_us", "uncertainty_us", "applied_us", "impossible", "worst_excess_us"]


def verdict(clock: pd.DataFrame) -> dict:
    """{"consistent": bool, "reason": str}: consistent when every rank's offset, once taken off,
    leaves no rank waiting longer than its own collective kernel ran (sql/job_clock.sql:
    `impossible`). A job without a collective on two ranks has nothing to estimate from."""
    if clock.empty:
        return {"consistent": True, "reason": "no collective ran on two ranks: clocks are not compared"}
    bad = clock[clock["impossible"] > 0]
    if bad.empty:
        return {"consistent": True, "reason": "every rank's collectives end together once its offset is "
                                                "taken off (within 6 x the median uncertainty)"}
    worst = bad.loc[bad["worst_excess_us"].idxmax()]
    return {"consistent": False,
            "reason": f"clock estimate inconsistent: on the consensus clock, rank(s) "
                      f"{', '.join(str(int(r)) for r in bad['rank'])} would have waited longer than their own "
                      f"collective kernel ran at {int(bad['impossible'].sum())} collective(s) (rank "
                      f"{int(worst['rank'])}: by up to {float(worst['worst_excess_us']):,.1f} µs); the ranks' "
                      f"clocks do not differ by one offset (a clock that jumps or drifts, or collectives "
                      f"matched wrongly), so waits and the straggler are not stated"}


def flag_waits(per_rank: pd.DataFrame, waits: pd.DataFrame, clock: pd.DataFrame) -> pd.DataFrame:
    """`waits` with a column `flag`: why a rank-iteration's wait cannot be right, else None. A wait
    is flagged when it is larger than the rank's step (step_us) or than its own collective time
    (collective_us: the union of its communication kernels, in which all its waiting happens) by
    more than the clock check's tolerance (6 x the job's median uncertainty) per collective."""
    if waits.empty:
        return waits.assign(flag=pd.Series(dtype=object))
    tolerance = 6 * (float(clock["uncertainty_us"].median()) if not clock.empty else 1.0)
    rows = per_rank.set_index(["rank", "iteration"])[["step_us", "collective_us"]]
    flags = []
    for w in waits.itertuples():
        key = (w.rank, w.iteration)
        step, coll = (rows.loc[key, "step_us"], rows.loc[key, "collective_us"]) if key in rows.index else (None, None)
        slack = tolerance * max(int(w.collectives), 1)
        if step is not None and w.wait_us > step:
            flags.append(f"waited {w.wait_us:,.1f} µs in a {step:,.1f} µs step")
        elif coll is not None and w.wait_us > coll + slack:
            flags.append(f"waited {w.wait_us:,.1f} µs but its collectives ran {coll:,.1f} µs")
        else:
            flags.append(None)
    return waits.assign(flag=pd.Series(flags, index=waits.index, dtype=object))


def sentences(clock: pd.DataFrame, verdict_: dict) -> list[str]:
    """The clock offsets in words, for the CLI and the Job page (ranks whose offset was taken off,
    then the verdict)."""
    if clock.empty:
        return [verdict_["reason"]]
    moved = clock[clock["applied_us"] != 0]
    lines = [f"rank {int(r.rank)}'s clock reads {r.offset_us:+,.1f} ± {r.uncertainty_us:,.1f} µs from the "
             f"ranks' consensus (from {int(r.matched)} collectives); its times are corrected by it"
             for r in moved.itertuples()]
    if moved.empty:
        lines.append(f"clocks agree: every rank within 3 x its uncertainty of the consensus (largest offset "
                     f"{clock['offset_us'].abs().max():,.1f} µs, uncertainty up to "
                     f"{clock['uncertainty_us'].max():,.1f} µs); no correction")
    if not verdict_["consistent"]:
        lines.append(verdict_["reason"])
    return lines
