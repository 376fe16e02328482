"""Whether a trace is whole: the completeness verdict of a run and of its steps (issue 37).

`storage/sql/completeness.sql` counts what each run is missing (one definition per check), at
ingest (kept in the store's `stored_completeness`, profiler/storage/completeness.py); this module
puts each count in words, with what it costs the figures, and sorts it by weight:
- damage: records a profiler dropped or wrote wrong; the run is *incomplete* and figures that rest
  on them are qualified (GPU time, idle time, kernels per op, the step's own work);
- limits: options that were off when the trace was recorded (no FLOPs without shapes); the run is
  complete, and the figures that need them are withheld elsewhere, with this reason;
- notes: what every trace holds (work launched before the trace began, runtime calls that launch
  nothing, a last step cut by the profiler's stop): listed, never a fault.
The stored rows are read once per run and kept in the store's run cache (`kept.per_run`).
"""
from __future__ import annotations

import pandas as pd

from profiler.analysis.reads import kept
from profiler.storage import completeness as stored
from profiler.storage.session import StoreHandle

DAMAGE, LIMIT, NOTE = "damage", "limit", "note"
# reason: (weight, sentence with {count} {of} {pct}, what it costs)
REASONS = {
    "launch_no_gpu": (DAMAGE, "{count:,} of {of:,} kernel launch calls ({pct}) have no GPU event: dropped "
                              "(CUPTI buffer overflow) or filtered", "GPU time and kernels per op are low"),
    "graph_no_gpu": (DAMAGE, "{count:,} of {of:,} graph launches have no replayed kernel",
                     "the graphs' GPU time is missing"),
    "gpu_no_launch": (DAMAGE, "{count:,} of {of:,} GPU events ({pct}) have no launch call although launched "
                              "inside the trace: CPU records dropped", "these kernels belong to no op or step"),
    "gpu_before_launch": (DAMAGE, "{count:,} of {of:,} GPU events ({pct}) start before their launch call: "
                                  "clocks that cannot be right", "launch delays and the timeline are wrong"),
    "step_no_gpu": (DAMAGE, "step {iteration}: no GPU event while the other steps have some",
                    "this step's GPU figures are missing"),
    "step_sparse": (DAMAGE, "step {iteration}: {count:,} GPU events, under half the median step's {of:,}",
                    "this step's GPU figures are low"),
    "step_one_event": (DAMAGE, "step {iteration}: one GPU event of {count:,} µs, longer than the step "
                               "({of:,} µs), holds most of its GPU time: malformed",
                       "this step's GPU busy and idle time are wrong"),
    "graph_replayed": (LIMIT, "{count:,} of {of:,} GPU events ({pct}) were replayed from CUDA/HIP graphs",
                       "no op, shapes or FLOPs for them: the launches are in the graph's capture trace"),
    "shapes_off": (LIMIT, "record_shapes was off: none of {of:,} CPU ops has input shapes",
                   "no FLOPs or bytes: shapes were not recorded"),
    "memory_off": (LIMIT, "profile_memory was off: no memory events", "no memory figures"),
    "carried_in": (NOTE, "{count:,} of {of:,} GPU events were launched before the trace began", "counted apart"),
    "no_launch_calls": (NOTE, "{count:,} runtime calls launch nothing (queries, syncs, attributes)", "none"),
    "captured": (NOTE, "{count:,} launch calls were captured into a graph (recorded, not run)", "none"),
    "last_step_partial": (NOTE, "the last step ({iteration}) was cut by the profiler's stop: no GPU event",
                          "none"),
}


def rows(store: StoreHandle, run_ids) -> pd.DataFrame:
    """run_id, iteration (None: the whole run), reason, count, of_count, expected: the checks of
    storage/sql/completeness.sql that found something, as stored at ingest (computed now for a
    run that has none stored: a job's rank), kept per run."""
    ids = list(run_ids)
    return kept.per_run(store, "run_completeness", ids, lambda missing: stored.read(store, missing), "given")


def _item(r) -> dict:
    weight, text, cost = REASONS[r.reason]
    of = int(r.of_count)
    pct = f"{100 * r.count / of:.1f} %" if of else "-"
    it = None if pd.isna(r.iteration) else int(r.iteration)
    return {"reason": r.reason, "iteration": it, "count": int(r.count), "of": of, "weight": weight,
            "text": text.format(count=int(r.count), of=of, pct=pct, iteration=it), "costs": cost}


def verdicts(store: StoreHandle, run_ids) -> dict[str, dict]:
    """{run_id: {"complete", "damage", "limits", "notes", "steps", "qualifier"}} : complete when no
    damage; each list holds {reason, iteration, count, of, weight, text, costs}; the run-wide checks
    first, `steps` {iteration: [damage of that step]} (a launch check per step is in steps only);
    `qualifier` the phrase every figure of an incomplete run is shown with (`qualifier`), else None."""
    df = rows(store, run_ids)
    out = {rid: {"complete": True, "damage": [], "limits": [], "notes": [], "steps": {}} for rid in run_ids}
    for r in df.itertuples():
        item = _item(r)
        v = out[r.run_id]
        if item["weight"] == DAMAGE and item["iteration"] is not None:
            v["steps"].setdefault(item["iteration"], []).append(item)
            if r.reason == "launch_no_gpu":
                continue    # per step; the run-wide row says it once
        key = {DAMAGE: "damage", LIMIT: "limits", NOTE: "notes"}[item["weight"]]
        v[key].append(item)
        v["complete"] = v["complete"] and item["weight"] != DAMAGE
    for v in out.values():
        v["qualifier"] = qualifier(v)
    return out


def qualifier(verdict: dict) -> str | None:
    """The phrase a figure of an incomplete run is shown with, wherever it is shown (summary,
    rank and check, the Runs page, ranking sentences): 'incomplete trace: ' and what the damage
    costs, each once ('incomplete trace: GPU time and kernels per op are low'); None when whole."""
    if verdict["complete"]:
        return None
    return "incomplete trace: " + "; ".join(dict.fromkeys(i["costs"] for i in verdict["damage"]))


def warnings(store: StoreHandle, run_ids, labels: dict | None = None) -> list[str]:
    """One sentence per incomplete run among `run_ids` (`line`), for the warnings that rank, check
    and compare print and the Runs page shows; none when every run is whole."""
    found = verdicts(store, list(dict.fromkeys(run_ids)))
    labels = labels or {}
    return [line(labels.get(r, r), v) for r, v in found.items() if not v["complete"]]


def badge(verdict: dict) -> str:
    """The runs table's word for a verdict: 'complete', 'complete, limits' or 'incomplete: N'."""
    if not verdict["complete"]:
        return f"incomplete: {len(verdict['damage'])}"
    return "complete, limits" if verdict["limits"] else "complete"


def line(name: str, verdict: dict) -> str:
    """One sentence for a run: whether it is whole and, if not, what is missing and what it costs."""
    if verdict["complete"]:
        lim = "; ".join(f"{i['costs']}" for i in verdict["limits"])
        return f"{name}: complete" + (f" (limits: {lim})" if lim else "")
    return f"{name}: INCOMPLETE: " + "; ".join(f"{i['text']} ({i['costs']})" for i in verdict["damage"])


def compare_line(store: StoreHandle, run_ids, labels: dict) -> tuple[bool, str]:
    """(all complete, one sentence) for the top of Compare: which of the runs are incomplete and
    why, or that all are whole (limits named)."""
    found = verdicts(store, list(run_ids))
    bad = [line(labels.get(r, r), v) for r, v in found.items() if not v["complete"]]
    if bad:
        return False, "Figures below rest on incomplete traces: " + " | ".join(bad)
    limits = sorted({i["costs"] for v in found.values() for i in v["limits"]})
    return True, "Every trace compared is complete" + (f" (limits: {'; '.join(limits)})" if limits else "") + "."


def with_badge(store: StoreHandle, runs: pd.DataFrame) -> pd.DataFrame:
    """The runs table with a `completeness` column: `badge` of each run's verdict."""
    found = verdicts(store, list(runs["run_id"]))
    return runs.assign(completeness=[badge(found[r]) for r in runs["run_id"]])
