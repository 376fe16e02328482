"""`python -m profiler compare RUN_A RUN_B [--json]`: findings and the aligned kernel diff.

RUN_A / RUN_B are run ids (`python -m profiler summary` lists them) or unique prefixes of them.
Text output: the findings, the kernels per iteration side by side, and one iteration's kernel
sequences aligned by family. `--json` prints the same as one object of strict JSON (no NaN or
Infinity: a missing number is null):

* `run_a`, `run_b`, `iteration` (the aligned iteration);
* `metrics`: {"a": ..., "b": ...}, each the run's `run_queries.run_metrics` row (per-iteration µs,
  among them `gpu_work_us_per_iter`, the step's GPU work; shares of the iteration in %, `bound`,
  `profiler_overhead_likely`);
* `findings`: the sentences, ranked by impact; `evidence`: one dict per finding with its `kind`
  and `impact_us` (µs per iteration) and the numbers and names it rests on;
* `kernels`: per kernel name `kernel`, `family`, `presence`, `calls_a`, `calls_b`, `us_a`, `us_b`
  (per iteration: the GPU work each iteration launched; `us_a` sums to `gpu_work_sum_us_per_iter`), `tensor_cores` (the engine), `precision`, and per run as {"a": ..., "b": ...}
  `occupancy_reported_pct`, `occupancy_theoretical_pct`, `occupancy_limiter`, and Nsight
  Compute's counters where attached (`python -m profiler counters`; null otherwise):
  `occupancy_achieved_pct`, `occupancy_theoretical_ncu_pct`, `sm_throughput_pct`,
  `dram_throughput_pct`, `l2_throughput_pct`, `tensor_pipe_active_pct`, `local_memory_instructions`,
  `ncu_limiter`, `ncu_limit_blocks_per_sm`, `counted_launches`;
* `alignment`: the aligned kernel sequences, one slot each.
"""
from __future__ import annotations

import argparse
import json

from profiler.analysis.reads.units import json_value
from profiler.cli import conditions, terminal
from profiler.cli.numbers import whole
from profiler.errors import UnknownRunError
from profiler.parse import demangled
from profiler.storage import job_layout

# Nsight Compute's counters each kernel carries per run (counters.COUNTER_COLUMNS but the mean time under ncu)
COUNTERS_SHOWN = ("occupancy_achieved_pct", "occupancy_theoretical_ncu_pct", "sm_throughput_pct",
                  "dram_throughput_pct", "l2_throughput_pct", "tensor_pipe_active_pct", "local_memory_instructions",
                  "ncu_limiter", "ncu_limit_blocks_per_sm", "counted_launches")
from profiler.storage.store import Store, default_db_path
from profiler.storage.session import StoreHandle


def register(subparsers) -> None:
    """Add the `compare` subcommand to the `python -m profiler` parser."""
    parser = subparsers.add_parser("compare", help="explain the difference between two runs")
    parser.add_argument("run_a", metavar="RUN_A", help="run id or unique prefix")
    parser.add_argument("run_b", metavar="RUN_B", help="run id or unique prefix")
    parser.add_argument("--iteration", type=whole(0, 2**31 - 1), default=0,
                        help="iteration whose kernel sequences are aligned (default 0)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--db", default=None,
                        help=f"store file (default: $PROFILER_DB or {default_db_path()})")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the comparison; 0 on success (errors of this project propagate to the CLI's edge)."""
    store = Store(args.db, read_only=True)
    with store.session() as db:  # one cursor for the command's reads (each read opened its own: ~30 ms with jobs)
        run_a, run_b = resolve_run(db, args.run_a), resolve_run(db, args.run_b)
        conditions.warn(db, [run_a, run_b])
        report = compare_report(db, run_a, run_b, args.iteration)
    text = json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False, default=_json_default)
    print(text if args.json else format_report(terminal.inert(report)))
    return 0


def resolve_run(store: StoreHandle, text: str) -> str:
    """The run id that `text` is, or uniquely starts; UnknownRunError otherwise."""

    found = store.arrays("SELECT run_id FROM traces ORDER BY added_at DESC, run_id")["run_id"]
    ids = [str(r) for r in found.tolist()]
    matches = [r for r in ids if r == text] or [r for r in ids if r.startswith(text)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise UnknownRunError(damaged_run(store, text) or f"no run {text!r} in the store {store.path} "
                              "(`python -m profiler summary` lists them)")
    raise UnknownRunError(f"{text!r} matches {len(matches)} runs ({', '.join(matches[:4])}); "
                          "give more of the id")


def damaged_run(store: StoreHandle, text: str) -> str | None:
    """Why run `text` cannot be read when it is a rank of a damaged job (its file and reason), else None."""
    from profiler.storage import job_check

    root = job_layout.job_root(store)
    if not text or not job_layout.has_manifests(root):
        return None
    for d in job_check.read_jobs(root).damaged:
        if any(rid.startswith(text) for rid in d.run_ids):
            return f"run {text!r} is a rank of a damaged {d} (`job NAME --delete` removes it)"
    return None


def compare_report(store: StoreHandle, run_a: str, run_b: str, iteration: int = 0) -> dict:
    """Everything `compare` prints, as plain JSON-ready data."""
    from profiler.analysis.model import diff
    from profiler.analysis.findings import findings
    from profiler.analysis.reads import kernel_queries, pair_queries, run_queries

    found = findings.compare_findings(store, run_a, run_b)
    details = kernel_queries.kernel_details(store, [run_a, run_b])
    kernels = diff.kernel_comparison(pair_queries.kernel_delta(store, run_a, run_b), details, run_a, run_b)
    aligned = diff.align_kernel_sequences(pair_queries.kernel_sequence(store, run_a, iteration),
                                          pair_queries.kernel_sequence(store, run_b, iteration))
    metrics = run_queries.run_metrics(store, [run_a, run_b]).set_index("run_id")
    return {"run_a": run_a, "run_b": run_b, "iteration": iteration,
            "metrics": {side: json_value(metrics.loc[run].to_dict()) if run in metrics.index else None
                        for side, run in (("a", run_a), ("b", run_b))},
            "findings": [f.text for f in found],
            "evidence": [json_value(f.evidence | {"kind": f.kind, "impact_us": f.impact_us}) for f in found],
            "kernels": [_kernel_item(row) for row in kernels.to_dict("records")],
            "alignment": [json_value(row) for row in aligned.to_dict("records")]}


def _kernel_item(row: dict) -> dict:
    per_run = {"occupancy_reported_pct": "est_occupancy_pct", "occupancy_theoretical_pct":
               "theory_occupancy_pct", "occupancy_limiter": "occupancy_limiter",
               **{c: c for c in COUNTERS_SHOWN}}
    item = {k: json_value(row[k]) for k in ("kernel", "family", "presence", "calls_a", "calls_b",
                                               "us_a", "us_b")}
    item["tensor_cores"], item["precision"] = json_value(row["tc_engine"]), json_value(row["tc_precision"])
    for key, column in per_run.items():
        item[key] = {side: json_value(row[f"{column}_{side}"]) for side in ("a", "b")}
    return item


def _json_default(value):
    return value.item() if hasattr(value, "item") else str(value)


def format_report(report: dict) -> str:
    """The report as text for a terminal."""
    lines = [f"A = {report['run_a']}    B = {report['run_b']}", ""]
    for side, m in report["metrics"].items():
        if m:
            lines.append(f"{side.upper()}: GPU work {m['gpu_work_us_per_iter']:,.1f} µs per iteration "
                         f"(kernels {m['kernel_work_us_per_iter']:,.1f} µs; summed {m['gpu_work_sum_us_per_iter']:,.1f} µs; "
                         f"{m['spilled_us_per_iter']:,.1f} µs ran after its iteration); of its "
                         f"{m['wall_us_per_iter']:,.1f} µs iteration the GPU is busy with its own work "
                         f"{m['gpu_busy_pct']:.1f}%, carried-in {m['carried_pct']:.1f}%, idle {m['gpu_idle_pct']:.1f}%; "
                         f"bound: {m['bound']}")
    lines += ["", "Findings:"]
    lines += [f"  - {text}" for text in report["findings"]]
    lines += ["", "Kernels per iteration (A vs B):",
              f"  {'presence':9s} {'calls A':>7s} {'calls B':>7s} {'µs A':>9s} {'µs B':>9s}  "
              f"{'engine':13s} {'occ':>6s} {'theory':>6s} {'ncu':>6s}  kernel   (occupancy of A, else B: "
              "reported, theoretical, achieved by ncu's counters)"]
    lines += [_kernel_line(k) for k in report["kernels"]]
    lines += ["", f"Iteration {report['iteration']} aligned by kernel family:"]
    lines += [_slot_line(s) for s in report["alignment"]]
    return "\n".join(lines)


def _kernel_line(k: dict) -> str:
    side = "a" if k["calls_a"] else "b"
    occ, theory = k["occupancy_reported_pct"][side], k["occupancy_theoretical_pct"][side]
    achieved = k["occupancy_achieved_pct"][side]
    return (f"  {k['presence']:9s} {k['calls_a']:7.1f} {k['calls_b']:7.1f} {k['us_a']:9.1f} "
            f"{k['us_b']:9.1f}  {k['tensor_cores'] or '-':13s} {_pct(occ):>6s} {_pct(theory):>6s} "
            f"{_pct(achieved):>6s}  "
            f"{demangled.short(k['kernel'], 90)}")


def _slot_line(s: dict) -> str:
    left = demangled.short(s["name_a"] or "", 50)
    right = demangled.short(s["name_b"] or "", 50)
    return f"  {s['slot']:4d} {s['status']:11s} {left:50s} | {right}"


def _pct(value) -> str:
    return "-" if value is None else f"{value:.1f}%"
