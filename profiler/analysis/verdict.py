"""The verdict of a run in words: what bounds it, with the evidence an engineer would ask for.

Every number is a column of the metrics layer's per-run row (`queries.run_metrics`, defined in
`profiler/storage/sql/metrics.sql`); the rule itself (`bound`) is defined there and written out in
docs/analysis.md. This module only says it: the GPU's time split into its own work, work launched
before the iteration began (carried) and idle; the idle gaps; who waited for whom.
"""
from __future__ import annotations

BOUND_WORDS = {"gpu": "GPU-bound", "cpu": "CPU-bound", "sync": "sync-bound",
               "mixed": "partly CPU-, partly sync-bound", "none": "without GPU work"}

# the columns a verdict rests on (a finding's evidence)
BOUND_EVIDENCE = ("bound", "wall_us_per_iter", "gpu_active_pct", "gpu_busy_pct", "gpu_idle_pct",
                  "carried_pct", "span_busy_pct", "gpu_busy_us_per_iter", "gpu_idle_us_per_iter",
                  "idle_gaps_per_iter", "max_gap_us", "idle_sync_us_per_iter", "cpu_busy_us_per_iter",
                  "launch_api_us_per_iter", "sync_us_per_iter", "cpu_events_per_iter",
                  "profiler_overhead_likely")


def _get(row, key: str, default: float = 0.0) -> float:
    try:
        value = row[key]
    except (KeyError, IndexError):
        return default
    return default if value is None or value != value else float(value)


def gpu_split(row) -> str:
    """'the GPU runs work 91.8% of it (63.2% its own, 28.6% work launched before the iteration
    began) and is idle 8.2%': every share is of the iteration's wall time."""
    own, carried, idle = _get(row, "gpu_busy_pct"), _get(row, "carried_pct"), _get(row, "gpu_idle_pct")
    active = _get(row, "gpu_active_pct", own + carried)
    text = f"the GPU runs work {active:.1f}% of it"
    if carried >= 0.05:
        text += f" ({own:.1f}% its own, {carried:.1f}% work launched before the iteration began)"
    else:
        text += " (all of it launched in the iteration)"
    return text + f" and is idle {idle:.1f}%"


def _gaps(row) -> str:
    gaps, longest = _get(row, "idle_gaps_per_iter"), _get(row, "max_gap_us")
    if gaps <= 0:
        return ""
    return f" in {gaps:,.0f} gap{'s' if round(gaps) != 1 else ''} per iteration (the longest {longest:,.1f} µs)"


def bound_sentence(row, label: str) -> str:
    """The verdict of one run (a ``queries.run_metrics`` row, or a dict of it) in words."""
    bound, wall = row["bound"], _get(row, "wall_us_per_iter")
    if bound == "none":
        return f"{label} ran no GPU work."
    head = f"{label} is {BOUND_WORDS[bound]}: in its {wall:,.1f} µs iteration {gpu_split(row)}{_gaps(row)}"
    idle_us, sync_idle, sync_us = (_get(row, "gpu_idle_us_per_iter"), _get(row, "idle_sync_us_per_iter"),
                                   _get(row, "sync_us_per_iter"))
    cpu_us, launch_us = _get(row, "cpu_busy_us_per_iter"), _get(row, "launch_api_us_per_iter")
    if bound == "gpu":
        text = head + "; the GPU sets the pace: feeding it faster could save at most its idle time"
        if sync_us > 0:
            text += f", and the launching thread waits {sync_us:,.1f} µs per iteration in synchronize calls for it"
        text += "."
    elif bound == "cpu":
        text = (head + f"; during the {idle_us:,.1f} µs of idle time the launching thread was not "
                f"waiting for the GPU but working: {cpu_us:,.1f} µs of recorded CPU time (CPU ops and "
                f"runtime / driver calls) per iteration, {launch_us:,.1f} µs of it in launch calls.")
    else:
        text = (head + f"; {100 * sync_idle / idle_us:.1f}% of the {idle_us:,.1f} µs of idle time "
                "began while the launching thread waited in a synchronize call "
                f"({sync_us:,.1f} µs per iteration in such calls), so it could not queue work ahead.")
    if bool(row["profiler_overhead_likely"]):
        events = _get(row, "cpu_events_per_iter")
        text += (f" The profiler's own overhead is the likely cause: the idle time is "
                 f"{idle_us / max(events, 1):.1f} µs per recorded CPU event ({events:.0f} "
                 "per iteration), the order of what recording an event costs; time it without "
                 "the profiler before optimising.")
    return text
