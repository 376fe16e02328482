"""`python -m profiler rank RUN... [--json]` and `python -m profiler check BASELINE CANDIDATE`.

`rank` orders any number of runs by time per call and says in one sentence who wins, by how much
and why (profiler/analysis/ranking.py). `--json`: {"runs": [...fastest first, each with `run_id`,
`rank`, `label` and its figures...], "sentence": ..., "evidence": {...}}. Runs of different modes
or shapes (`ranking.SHAPE`) are never ranked against each other: each group is ranked apart,
`runs`/`sentence` are the first group's and `groups` lists every group with its `shape`.

`check` is a regression gate for CI: exit status 1 when the candidate's time per call is slower
than the baseline's by more than `--max-slowdown` (default 5%), naming by how much and the
kernels that grew; 0 otherwise. `--json` prints the same as one object.
"""
from __future__ import annotations

import argparse
import json
import sys

from profiler import errors
from profiler.cli import conditions
from profiler.cli.terminal import printable
from profiler.storage.store import Store, default_db_path


def register(subparsers) -> None:
    db_help = f"store file (default: $PROFILER_DB or {default_db_path()})"
    rank = subparsers.add_parser("rank", help="rank runs by time per call, and say why the winner wins")
    rank.add_argument("runs", nargs="+", metavar="RUN", help="run ids or unique prefixes")
    rank.add_argument("--json", action="store_true", help="print one JSON object")
    rank.add_argument("--db", default=None, help=db_help)
    rank.set_defaults(func=run_rank)
    gate = subparsers.add_parser("check", help="exit 1 when CANDIDATE is slower than BASELINE by more than a bound")
    gate.add_argument("baseline", metavar="BASELINE", help="run id or unique prefix")
    gate.add_argument("candidate", metavar="CANDIDATE", help="run id or unique prefix")
    gate.add_argument("--max-slowdown", type=_percent, default=5.0, metavar="PCT",
                      help="allowed slowdown of the time per call, e.g. 5%% (default 5%%)")
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


def run_rank(args: argparse.Namespace) -> int:
    from profiler.analysis import ranking
    from profiler.cli.compare import _clean_value, resolve_run

    store = Store(args.db, read_only=True)
    ids = [resolve_run(store, r) for r in args.runs]
    conditions.warn(store, ids)
    groups = ranking.shape_groups(store, ids)
    if sum(g.shape is not None for g in groups) < 2:   # one mode and shape (or uploads): one table
        groups = [ranking.Group(None, tuple(dict.fromkeys(ids)))]
    ranked = []
    for group in groups:
        table = ranking.rank_table(store, group.run_ids)
        ranked.append((group, table, *ranking.rank_sentence(store, table)))
    if args.json:
        out = [{"shape": g.title if g.shape is not None else None,
                "runs": [{k: _clean_value(v) for k, v in row.items()} for row in t.to_dict("records")],
                "sentence": s, "evidence": _clean_value(e)} for g, t, s, e in ranked]
        first = dict(out[0])
        first.pop("shape")
        if len(out) > 1:   # runs of several modes or shapes: each ranked apart; the first group on top
            first["groups"] = out
        print(json.dumps(first, indent=2, ensure_ascii=False, allow_nan=False))
        return 0
    if len(ranked) > 1:
        print("These runs are of different modes or shapes: each group is ranked on its own.")
        print()
    for group, table, sentence, _ in ranked:
        if len(ranked) > 1:
            print(f"== {group.title}")
        _print_table(table, sentence)
    return 0


def _print_table(table, sentence: str) -> None:
    print(printable(sentence))
    print()
    print(f"{'#':>2s}  {'µs/call':>9s}  {'× best':>6s}  {'TFLOP/s':>8s}  {'TB/s':>6s}  {'% roof':>6s}  "
          f"{'bound by':8s}  {'peak MiB':>9s}  {'cold µs':>10s}  run")
    for r in table.to_dict("records"):
        print(f"{r['rank']:>2d}  {_n(r['gpu_us_per_call'], '9,.1f')}  {_n(r['times_fastest'], '6.2f')}  "
              f"{_n(r['tflops'], '8.1f')}  {_n(r['tbps'], '6.2f')}  {_n(r['pct_of_roof'], '6.1f')}  "
              f"{_text(r['roof_bound']):8s}  {_n(_mib(r['peak_allocated_bytes']), '9,.1f')}  "
              f"{_n(r['cold_us'], '10,.0f')}  {r['run_id']}  {printable(r['label'])}")
    print()


def run_check(args: argparse.Namespace) -> int:
    from profiler.analysis import ranking
    from profiler.cli.compare import resolve_run

    try:
        store = Store(args.db, read_only=True)
        result = ranking.check(store, resolve_run(store, args.baseline), resolve_run(store, args.candidate),
                               args.max_slowdown)
        conditions.warn(store, [result.baseline, result.candidate])
    except errors.ProfilerError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({"baseline": result.baseline, "candidate": result.candidate,
                          "baseline_us_per_call": result.baseline_us, "candidate_us_per_call": result.candidate_us,
                          "slowdown_pct": round(result.slowdown_pct, 3), "max_slowdown_pct": result.max_slowdown_pct,
                          "failed": result.failed, "grew": result.grew}, indent=2, ensure_ascii=False))
        return 1 if result.failed else 0
    change = (f"{result.slowdown_pct:.1f}% slower than" if result.slowdown_pct >= 0
              else f"{-result.slowdown_pct:.1f}% less time per call than")
    verdict = "FAIL" if result.failed else "ok"
    print(f"{verdict}: {result.candidate} is {change} {result.baseline} ({result.candidate_us:,.1f} vs "
          f"{result.baseline_us:,.1f} µs per call; at most {result.max_slowdown_pct:g}% slower is allowed)")
    if result.failed:
        for k in result.grew:
            print(f"  grew: {k['us_per_iter_baseline']:9,.1f} -> {k['us_per_iter_candidate']:9,.1f} µs per "
                  f"iteration  {printable(k['kernel'])[:160]}")
    return 1 if result.failed else 0


def _n(value, spec: str) -> str:
    width = spec.split(",")[0].split(".")[0]
    return f"{'-':>{width}s}" if value is None or value != value else format(value, spec)


def _text(value) -> str:
    return "-" if value is None or value != value else str(value)


def _mib(value):
    return None if value is None or value != value else value / 2**20
