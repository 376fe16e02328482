"""`python -m profiler rank RUN... [filters] [--json]` and `python -m profiler check BASELINE CANDIDATE`.

`rank` groups the runs into repeats (one variant, workload, device and cold/warm state) and ranks
the groups of each workload by their median time per call, with its interval (the repeats' least
to most), ties, outliers and one sentence: who wins, by how much within what noise, and why
(profiler/analysis/findings/ranking.py). RUN is a run id or unique prefix, a variant name (all its runs), a
trace file or a folder of them (ingested into a temporary store), or a comma-separated list of
these; repeated runs count once; filters (`--mode decode --kv-len 32768`, ...) keep the runs that
match, and with no RUN they choose from the whole store. `--json`: {"runs": [...the first set's
groups, fastest first...], "sentence", "evidence", "set"} and `sets` with every set when there are
several. Runs of different GPUs are ranked apart unless `--compare-gpus`.

`check` is a regression gate for CI. BASELINE and CANDIDATE are each a run id, comma-separated run
ids (the repeats), trace files or a folder of them. Exit 1 when the candidate is slower than the
baseline by more than `--max-slowdown` (default 5%) *and* outside the noise (profiler/analysis/
gate.py); 0 when not ("ok", or "within noise"); 2 with one sentence when it cannot judge:
different workloads (unless `--allow-different-workloads`), no time per call, unknown runs. `--json`
prints the verdict with the ratio's interval, the repeats used and the noise floor.
"""
from __future__ import annotations

import argparse
import json
import sys

from profiler import errors
from profiler.cli import conditions, run_args
from profiler.cli.terminal import printable
from profiler.storage.store import default_db_path
from profiler.storage.session import StoreHandle

SHOWN = ["rank", "variant", "label", "run_id", "us_per_call", "us_min", "us_max", "repeats", "runs", "run_ids",
         "outliers", "timed_on", "times_fastest", "tied_with", "same_kernels_as", "noise_pct", "gpu_us_per_call",
         "kernel_us_per_call", "tflops", "tbps", "pct_of_roof", "roof_bound", "peak_allocated_bytes", "cold_us",
         "wall_us_per_call", "graph_us_per_call", "bound", "device", "cold", "pct_of_measured_peak",
         "pct_of_measured_bandwidth", "pct_of_measured_roof"]


def register(subparsers) -> None:
    db_help = f"store file (default: $PROFILER_DB or {default_db_path()})"
    rank = subparsers.add_parser("rank", help="rank runs by time per call (repeats grouped), and say why the winner wins")
    rank.add_argument("runs", nargs="*", metavar="RUN",
                      help="run ids or unique prefixes, variant names, trace files or folders (comma lists too)")
    run_args.add_filters(rank)
    rank.add_argument("--compare-gpus", action="store_true", help="rank runs of different GPUs together")
    rank.add_argument("--json", action="store_true", help="print one JSON object")
    rank.add_argument("--db", default=None, help=db_help)
    rank.set_defaults(func=run_rank)
    gate = subparsers.add_parser("check", help="exit 1 when CANDIDATE is slower than BASELINE beyond a bound and the noise")
    for side in ("baseline", "candidate"):
        gate.add_argument(side, metavar=side.upper(), help="run id(s), comma-separated repeats, trace files or a folder")
    gate.add_argument("--max-slowdown", type=_percent, default=5.0, metavar="PCT",
                      help="allowed slowdown of the time per call, e.g. 5%% (default 5%%)")
    gate.add_argument("--allow-different-workloads", action="store_true",
                      help="compare sides of different modes, shapes, dtypes or devices")
    gate.add_argument("--json", action="store_true", help="print one JSON object")
    gate.add_argument("--db", default=None, help=db_help)
    gate.set_defaults(func=run_check)


def _percent(text: str) -> float:
    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a percentage such as 5% or 2.5, got {text!r}") from None
    if not 0 <= value < 10_000:
        raise argparse.ArgumentTypeError(f"expected a percentage between 0 and 10000, got {text!r}")
    return value


def chosen_runs(store: StoreHandle, texts, ingested, filters: dict) -> list[str]:
    """The run ids the arguments name (all runs when none), kept where every filter matches."""
    from profiler.analysis.reads import queries

    runs = run_args.Runs(store)
    ids = runs.resolve(texts, ingested) if texts else list(runs.ids)
    if filters:
        shapes = queries.run_shapes(store, ids)
        keep = shapes["run_id"].notna()
        for column, value in filters.items():
            keep &= shapes[column] == value
        ids = shapes.loc[keep, "run_id"].tolist()
    if not ids:
        raise errors.NothingMatchedError("no run matches these arguments and filters")
    return ids


def run_rank(args: argparse.Namespace) -> int:
    from profiler.analysis.findings import ranking

    texts = run_args.split(args.runs)
    with run_args.opened(texts, args.db) as (store, ingested), store.session() as db:   # one cursor for every read
        ids = chosen_runs(db, texts, ingested, run_args.filters_of(args))
        conditions.warn(db, ids)
        ranked, alone = ranking.rank_sets(db, ids, args.compare_gpus)
    if args.json:
        print(json.dumps(rank_json(ranked, alone), indent=2, ensure_ascii=False, allow_nan=False))
        return 0
    if len(ranked) > 1:
        print("These runs are of several workloads or states: each is ranked on its own.")
        print()
    for one in ranked:
        if len(ranked) > 1:
            print(f"== {printable(one.title)}")
        _print_table(one.table, one.sentence)
    for title in alone:
        print(printable(f"Not ranked, one variant alone: {title}"))
    if not ranked and not alone:
        print("No runs to rank.")
    return 0


def rank_json(ranked, alone) -> dict:
    """The JSON `rank --json` prints: the first set on top, every set under `sets` when several."""
    from profiler.analysis.reads.units import json_value

    out = [{"set": r.title, "runs": [{k: json_value(v) for k, v in row.items()} for row in r.table[SHOWN].to_dict("records")],
            "sentence": r.sentence, "evidence": json_value(r.evidence)} for r in ranked]
    first = dict(out[0]) if out else {"set": None, "runs": [], "sentence": "Nothing to rank: fewer than two variants "
                                      "of one workload.", "evidence": {}}
    if len(out) > 1:
        first["sets"] = out
    first["alone"] = alone
    return first


def _print_table(table, sentence: str) -> None:
    print(printable(sentence))
    print()
    measured = table["pct_of_measured_roof"].notna().any()   # a column only where a GPU's ceilings are kept
    print(f"{'#':>2s}  {'µs/call':>9s}  {'min–max':>17s}  {'n':>3s}  {'× best':>6s}  {'TFLOP/s':>8s}  {'TB/s':>6s}  "
          f"{'% roof':>6s}  " + (f"{'% meas':>6s}  " if measured else "") + f"{'peak MiB':>9s}  {'cold 1st':>10s}  group")
    for r in table.to_dict("records"):
        same, tied = (x if isinstance(x, str) else None for x in (r["same_kernels_as"], r["tied_with"]))
        rank = "=" if same else ("-" if r["rank"] is None or r["rank"] != r["rank"] else str(r["rank"]))
        span = f"{r['us_min']:,.1f}–{r['us_max']:,.1f}" if r["us_min"] == r["us_min"] else "-"
        note = (f"  (same kernels as {same})" if same else f"  (tied with {tied})" if tied else "") + (
            f"  outliers: {', '.join(r['outliers'])}" if r["outliers"] else "") + (
            "  [CPU time]" if r["timed_on"] not in (None, "GPU") else "")
        print(f"{rank:>2s}  {_n(r['us_per_call'], '9,.1f')}  {span:>17s}  {r['repeats']:>3d}  "
              f"{_n(r['times_fastest'], '6.2f')}  {_n(r['tflops'], '8.1f')}  {_n(r['tbps'], '6.2f')}  "
              f"{_n(r['pct_of_roof'], '6.1f')}  " + (f"{_n(r['pct_of_measured_roof'], '6.1f')}  " if measured else "")
              + f"{_n(_mib(r['peak_allocated_bytes']), '9,.1f')}  "
              f"{_cold(r['cold_us']):>10s}  {r['run_id']}  {printable(r['label'])}{printable(note)}")
    print()


def _cold(us) -> str:
    """A cold run's first call in the unit that reads best ('2.24 s', '850 µs'); '-' without one."""
    from profiler.analysis.reads.units import duration

    return "-" if us is None or us != us else duration(float(us))


def run_check(args: argparse.Namespace) -> int:
    from profiler.analysis.findings import gate

    try:
        sides = [run_args.split([args.baseline]), run_args.split([args.candidate])]
        with run_args.opened(sides[0] + sides[1], args.db) as (store, ingested), store.session() as db:
            runs = run_args.Runs(db)
            base, cand = (runs.resolve(side, ingested) for side in sides)
            verdict = gate.check(db, base, cand, args.max_slowdown, args.allow_different_workloads)
            conditions.warn(db, [*base, *cand])
    except errors.ProfilerError as e:
        if args.json:
            print(json.dumps({"status": "refused", "reason": str(e)}, indent=2, ensure_ascii=False))
        print(f"refused: {e}", file=sys.stderr)
        return 2
    code = 1 if verdict.failed else 0
    if args.json:
        print(json.dumps(check_json(verdict), indent=2, ensure_ascii=False, allow_nan=False))
        return code
    _print_check(verdict)
    return code


def check_json(v) -> dict:
    r = v.ratio
    nan = (lambda x: None if x != x else x)
    return {"status": v.status, "failed": v.failed, "baseline": v.baseline, "candidate": v.candidate,
            "timed_on": v.timed_on, "workloads": list(v.workloads),
            "baseline_us_per_call": v.base.median, "candidate_us_per_call": v.cand.median,
            "baseline_interval_us": [v.base.lo, v.base.hi], "candidate_interval_us": [v.cand.lo, v.cand.hi],
            "baseline_repeats": v.base.n, "candidate_repeats": v.cand.n,
            "ratio": r.mid, "ratio_interval": [r.lo, r.hi], "slowdown_pct": round(v.slowdown_pct, 3),
            "noise_floor_pct": nan(100 * v.noise), "max_slowdown_pct": v.max_slowdown_pct,
            "outside_noise": v.outside_noise, "outliers": v.outliers, "grew": v.grew}


def _print_check(v) -> None:
    change = (f"{v.slowdown_pct:.1f}% slower than" if v.slowdown_pct >= 0
              else f"{-v.slowdown_pct:.1f}% less time per call than")
    head = {"fail": "FAIL", "ok": "ok", "within noise": "ok (within noise)"}[v.status]
    cand = ",".join(v.candidate) if len(v.candidate) < 4 else f"{len(v.candidate)} candidate runs"
    base = ",".join(v.baseline) if len(v.baseline) < 4 else f"{len(v.baseline)} baseline runs"
    print(f"{head}: {cand} is {change} {base} ({v.cand.median:,.1f} vs {v.base.median:,.1f} µs per call; "
          f"at most {v.max_slowdown_pct:g}% slower is allowed)")
    noise = ("one run a side: the noise is not measured (give repeats, comma-separated)" if v.noise != v.noise
             else f"noise floor {100 * v.noise:.1f} %")
    r = v.ratio
    print(f"  ratio {r.mid:.3f} (interval {r.lo:.3f}–{r.hi:.3f}) over {v.base.n} baseline and {v.cand.n} candidate "
          f"repeats; {noise}" + ("" if v.timed_on == "GPU" else f"; timed as the {v.timed_on}"))
    for o in v.outliers:
        print(f"  outlier set aside: {o['side']} run {o['run_id']} ({o['us_per_call']:,.1f} µs)")
    if v.failed:
        for k in v.grew:
            print(f"  grew: {k['us_per_iter_baseline']:9,.1f} -> {k['us_per_iter_candidate']:9,.1f} µs per "
                  f"iteration  {printable(k['kernel'])[:160]}")


def _n(value, spec: str) -> str:
    width = spec.split(",")[0].split(".")[0]
    return f"{'-':>{width}s}" if value is None or value != value else format(value, spec)


def _mib(value):
    return None if value is None or value != value else value / 2**20
