"""The verdict of a run in words: what bounds it, with the evidence an engineer would ask for.

Every number is a column of the metrics layer's per-run row (`run_queries.run_metrics`, defined in
`profiler/storage/sql/metrics.sql`, `step_work.sql` and `idle_causes.sql`); the rule itself
(`bound`) is defined there and written out in docs/analysis.md. This module only says it: the
GPU's time split into its own work, work launched before the iteration began (carried) and idle;
the idle time split by what the host was doing meanwhile (who waited for whom). Every part is
stated with its whole, and no part exceeds it.
"""
from __future__ import annotations

BOUND_WORDS = {"gpu": "GPU-bound", "cpu": "CPU-bound", "sync": "sync-bound", "launch": "launch-bound",
               "collective": "waiting on other ranks", "input": "input-bound",
               "annotation": "bound by host work inside an annotation",
               "unrecorded": "idle for reasons the trace does not record", "capture": "a graph capture",
               "none": "without GPU work"}

# the idle parts (idle_causes.sql), in the order the host's activity claims idle time
IDLE_PARTS = (("idle_sync_us_per_iter", "blocked in synchronize or copy calls (waiting for the GPU)"),
              ("idle_collective_us_per_iter", "in collectives (waiting for other ranks)"),
              ("idle_input_us_per_iter", "in the DataLoader (waiting for input)"),
              ("idle_launch_us_per_iter", "in launch calls"),
              ("idle_cpu_us_per_iter", "running other CPU ops"),
              ("idle_annotation_us_per_iter", "inside annotations with nothing else recorded"),
              ("idle_unrecorded_us_per_iter", "with nothing recorded"))

# the columns a verdict rests on (a finding's evidence)
BOUND_EVIDENCE = ("bound", "wall_us_per_iter", "gpu_active_pct", "gpu_busy_pct", "gpu_idle_pct",
                  "carried_pct", "span_busy_pct", "gpu_work_us_per_iter", "gpu_busy_us_per_iter",
                  "gpu_idle_us_per_iter", "idle_gaps_per_iter", "max_gap_us", *(c for c, _ in IDLE_PARTS),
                  "idle_names", "cpu_busy_us_per_iter", "launch_api_us_per_iter", "sync_us_per_iter",
                  "cpu_events_per_iter", "launching_threads", "capture_calls", "profiler_overhead_likely")


def _get(row, key: str, default: float = 0.0) -> float:
    try:
        value = row[key]
    except (KeyError, IndexError):
        return default
    return default if value is None or value != value else float(value)


def _text(row, key: str) -> str:
    try:
        value = row[key]
    except (KeyError, IndexError):
        return ""
    return value if isinstance(value, str) else ""


def gpu_split(row) -> str:
    """'the GPU runs work 91.8% of it (63.2% its own, 28.6% work launched before the iteration
    began) and is idle 8.2%': every share is of the iteration's wall time."""
    own, carried, idle = _get(row, "gpu_busy_pct"), _get(row, "carried_pct"), _get(row, "gpu_idle_pct")
    active = _get(row, "gpu_active_pct", own + carried)
    text = f"the GPU runs work {active:.1f}% of it"
    other = active - own - carried
    if carried >= 0.05 or other >= 0.05:
        text += f" ({own:.1f}% its own, {carried:.1f}% work launched before the iteration began"
        text += f", {other:.1f}% work with no launch call in the trace)" if other >= 0.05 else ")"
    else:
        text += " (all of it launched in the iteration)"
    return text + f" and is idle {idle:.1f}%"


def _gaps(row, wall: float) -> str:
    """The idle gaps per iteration and the longest of any step; a longest gap that exceeds the mean
    iteration `wall` beside it lies in a longer step, and says so (never a part over its whole)."""
    gaps, longest = _get(row, "idle_gaps_per_iter"), _get(row, "max_gap_us")
    if gaps <= 0:
        return ""
    where = ", in a step longer than the mean" if longest > wall else ""
    return f" in {gaps:,.0f} gap{'s' if round(gaps) != 1 else ''} per iteration (the longest {longest:,.1f} µs{where})"


def idle_split(row) -> str:
    """'of the 644.0 µs of idle time, 600.1 µs (93.2%) the host was in the DataLoader (…), …':
    the idle parts, largest first, each with its share of the idle time."""
    idle = _get(row, "gpu_idle_us_per_iter")
    parts = sorted(((_get(row, c), words) for c, words in IDLE_PARTS), reverse=True)
    shown = [(us, words) for us, words in parts[:3] if idle > 0 and us >= 0.05]
    said = [f"{us:,.1f} µs ({100 * us / idle:.1f}%) {words}" for us, words in shown]
    rest = idle - sum(us for us, _ in shown)
    if rest >= 0.05 and said:
        said.append(f"{rest:,.1f} µs otherwise")
    threads = int(_get(row, "launching_threads"))
    host = f"the host ({threads} launching thread{'s' if threads != 1 else ''})" if threads else "the host"
    return f"of the {idle:,.1f} µs of idle time per iteration, {host} spent " + "; ".join(said or ["none"])


def bound_sentence(row, label: str) -> str:
    """The verdict of one run (a ``run_queries.run_metrics`` row, or a dict of it) in words."""
    bound, wall = row["bound"], _get(row, "wall_us_per_iter")
    if bound == "none":
        return f"{label} ran no GPU work."
    if bound == "capture":
        return (f"{label} is a graph capture: its trace records {_get(row, 'capture_calls'):,.0f} capture "
                f"call(s) and {_get(row, 'launch_calls_per_iter'):,.0f} launch calls per iteration that record "
                "work into a graph rather than run it; time the graph's replays, not this trace.")
    head = f"{label} is {BOUND_WORDS[bound]}: in its {wall:,.1f} µs iteration {gpu_split(row)}{_gaps(row, wall)}"
    if bound == "gpu":
        text = head + "; the GPU sets the pace: feeding it faster could save at most its idle time"
        sync_us = _get(row, "sync_us_per_iter")
        if sync_us > 0:
            text += f", and the host waits {sync_us:,.1f} µs per iteration in synchronize calls for it"
        threads = int(_get(row, "launching_threads"))
        if threads > 1:
            text += f" (the host launches from {threads} threads)"
        return text + "."
    text = head + "; " + idle_split(row) + "."
    text += _sync_said(row, wall)
    names = _text(row, "idle_names")
    if bound in ("input", "collective", "cpu", "annotation") and names:
        text += f" Inside (µs, idlest step): {names}."
    if bound == "unrecorded":
        text += " No verdict: the trace records nothing the host did during most of the idle time."
    if bool(row["profiler_overhead_likely"]):
        idle_us, events = _get(row, "gpu_idle_us_per_iter"), _get(row, "cpu_events_per_iter")
        text += (f" The profiler's own overhead may be the cause: {idle_us / max(events, 1):.1f} µs of idle "
                 f"per recorded CPU event ({events:.0f} per iteration), the order of recording one; "
                 "time it without the profiler.")
    return text


def _sync_said(row, wall: float) -> str:
    """The host's synchronize time and how much of it the GPU was running work meanwhile: at least
    the synchronize time less the idle time claimed by synchronize calls (idle during a call is
    claimed by it, so the rest of the call is GPU time). Such waiting does not make the GPU idle:
    the idle parts above say what did (sdpa_math: 2,071 µs of synchronize per 3,194 µs step,
    >2,000 µs of it over queued work, while the GPU idles as the host runs the math path's ops)."""
    sync_us = _get(row, "sync_us_per_iter")
    if sync_us <= 0:
        return ""
    text = (f" In all, the host spends {sync_us:,.1f} µs per iteration in synchronize calls "
            f"({100 * sync_us / max(wall, 1e-9):.1f}% of the iteration)")
    busy = max(0.0, sync_us - _get(row, "idle_sync_us_per_iter"))
    if row["bound"] != "sync" and busy >= 0.5 * sync_us:
        text += (f", at least {busy:,.1f} µs of it while the GPU ran work queued before the call: waiting "
                 "for the GPU, not a cause of its idle time")
    return text + "."


def rank_wait_sentences(waits, steps, stragglers) -> dict[int, str]:
    """Per rank of a job, who it waits for: {rank: sentence}. ``waits`` is the job view's
    `job_queries.rank_waits`, ``steps`` its `rank_iterations`, ``stragglers`` its `stragglers`
    (all read, not recomputed). A rank's wait runs inside its collective kernels: GPU time spent
    waiting for a peer, not work. The rank the others wait for is named; no sentence for a rank
    that waited no time."""
    late = dict(zip(stragglers["iteration"], stragglers["straggler_rank"])) if len(stragglers) else {}
    out: dict[int, str] = {}
    for rank, g in waits.groupby("rank", sort=True):
        wait = float(g["wait_us"].sum())
        mine = steps[steps["rank"] == rank]
        step = float(mine["step_us"].sum())
        whom = sorted({int(late[i]) for i in g["iteration"] if i in late and int(late[i]) != int(rank)})
        if wait <= 0 or not whom or step <= 0:
            continue
        named = ", ".join(f"rank {r}" for r in whom)
        share = min(100.0, 100 * wait / step)
        out[int(rank)] = (f"rank {int(rank)} waits {wait:,.1f} µs ({share:.1f}% of its {step:,.1f} µs of "
                          f"steps) inside collectives for {named}, the last to arrive: that GPU time is "
                          "waiting on another rank, not work.")
    return out
