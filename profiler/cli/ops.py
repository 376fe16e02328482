"""`python -m profiler ops RUN [--json] [--kind attention|gemm|all]`: the op-level cost model.

Under the table (kind all, or when nothing is modelled), the GPU time the model gives no FLOPs
or bytes, per launching op, with the real reason (`profiler.analysis.reads.unmodelled`).

One row per op and shape of the run (calls aggregated): op, backend, shape, dtype, calls,
flops and bytes per call, kernel_us_mean (kernel time per call), tflops and tbps from that mean,
pct_of_peak (datasheet peak for the dtype on the engine the kernels ran on; the text table's
%limit is the share of the peak that limits the op: pct_of_bandwidth where it is memory-bound,
else pct_of_peak), intensity
(FLOP / byte), bound (memory or compute, from the ridge point) and kernels (name [library, arch,
instruction, tile]); the text table adds mode and waste% (the share of issued FLOPs the mask makes
useless: `costmodel.wasted_pct`). The JSON rows add kind, mode (prefill, decode or train:
`profiler.analysis.model.modes`), flops_useful (what the mask makes useful: flops) and flops_issued
(what the kernel's tiles compute), engine, the peaks and shape_source. RUN is a run id or a unique prefix of one (`python -m profiler summary`).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from profiler.cli import terminal
from profiler.analysis.reads.units import json_value
from profiler.errors import StoreOutdatedError
from profiler.storage.store import Store, default_db_path
from profiler.storage.session import StoreHandle

COLUMNS = ("op", "backend", "shape", "dtype", "calls", "flops", "bytes", "kernel_us_mean", "tflops",
           "tbps", "pct_of_peak", "intensity", "bound", "kernels")
EXTRA = ("kind", "mode", "flops_useful", "flops_issued", "engine", "peak_tflops", "pct_of_bandwidth", "pct_of_roof", "shape_source", "suspect")
# the run's own figure beside its ops: the GPU work one step launched (the metrics layer's
# gpu_work_us_per_iter, step_work.sql), the same in every row and in every other output
RUN_FIGURE = "gpu_work_us_per_iter"


def register(subparsers) -> None:
    """Add the `ops` subcommand to the `python -m profiler` parser."""
    parser = subparsers.add_parser("ops", help="FLOPs, bytes and %% of peak of each attention / GEMM op")
    parser.add_argument("run", metavar="RUN", help="run id or unique prefix")
    parser.add_argument("--kind", choices=("attention", "gemm", "all"), default="all",
                        help="which ops (default all: attention, GEMMs and memory-bound ops)")
    parser.add_argument("--json", action="store_true", help="print a JSON list of rows")
    parser.add_argument("--db", default=None, help=f"store file (default: $PROFILER_DB or {default_db_path()})")
    parser.set_defaults(func=run)


def rows(store: StoreHandle, run_id: str, kind: str) -> list[dict]:
    """The table as plain dicts (None for numbers the model has no peak or time for), each with
    the run's step GPU work (`RUN_FIGURE`)."""
    from profiler.analysis.reads import op_costs  # numpy and duckdb; no pandas

    table = op_costs.ops_columns(store, [run_id], kind)
    if not table:
        return []
    names = COLUMNS + EXTRA
    step = {RUN_FIGURE: step_gpu_work_us(store, run_id)}
    return [{**{k: json_value(v) for k, v in zip(names, row)}, **step}
            for row in zip(*(table[k].tolist() for k in names))]


def step_gpu_work_us(store: StoreHandle, run_id: str) -> float | None:
    """The run's GPU work per step, read from the metrics layer (no pandas)."""
    from profiler.analysis.reads import reads

    got = store.arrays(reads.sql_text("run_metrics"), {"run_ids": [run_id]})[RUN_FIGURE]
    return json_value(got[0]) if len(got) else None


def _lookup(store: Store, args: argparse.Namespace) -> tuple[str, list[dict], list[dict]]:
    from profiler.analysis.reads import unmodelled
    from profiler.cli.compare import resolve_run

    with store.session() as db:     # one connection for the lookup and the model
        run_id = resolve_run(db, args.run)
        table = rows(db, run_id, args.kind)
        # the reasons cover the whole run: shown with every kind of op, or when nothing is modelled
        wanted = not args.json and (args.kind == "all" or not table)
        return run_id, table, unmodelled.unmodelled(db, run_id) if wanted else []


def _is_file(path: Path) -> bool:
    """Whether `path` is a file; True for a path the system refuses (a name over 255 bytes), so
    that the read-only open names the problem."""
    try:
        return path.is_file()
    except OSError:
        return True


def run(args: argparse.Namespace) -> int:
    from profiler.analysis.reads import unmodelled

    path = Path(args.db or default_db_path())
    try:  # read-only skips the schema upkeep of a read-write open (~0.15 s on the bench store)
        run_id, table, missing = _lookup(Store(path, read_only=_is_file(path)), args)
    except StoreOutdatedError:  # an older store is opened read-write, as before, and migrated
        run_id, table, missing = _lookup(Store(path), args)
    if args.json:
        print(json.dumps(table, indent=2, ensure_ascii=False, allow_nan=False))
        return 0
    if not table:
        print(f"run {run_id}: no modelled {'' if args.kind == 'all' else args.kind + ' '}op launched GPU work")
    else:
        print(format_table(terminal.inert(table)))
        step = table[0][RUN_FIGURE]
        print(f"\nrun {run_id}: each step launches {'-' if step is None else format(step, ',.1f')} µs of GPU "
              "work (a union over streams; us/call above: one call's kernels as a union)")
    if missing:   # the true reason for each op's GPU time without FLOPs / bytes
        print("\nnot modelled (GPU time without FLOPs or bytes, by launching op):")
        print("\n".join(terminal.inert(unmodelled.lines(missing))))
    return 0


def _num(value, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def _pct_of_limit(r: dict):
    """The share of the peak that limits the op: of bandwidth where it is memory-bound, else of
    the compute peak (a memory-bound op's share of the FLOP peak says nothing)."""
    return r.get("pct_of_bandwidth") if r.get("bound") == "memory" else r["pct_of_peak"]


def format_table(table: list[dict]) -> str:
    from profiler.analysis.model.costmodel import wasted_pct

    head = (f"{'op':44s} {'backend':11s} {'shape':34s} {'dtype':5s} {'mode':7s} {'calls':>5s} {'GFLOP':>9s} "
            f"{'waste%':>6s} "
            f"{'MB':>9s} {'us/call':>9s} {'TFLOP/s':>8s} {'TB/s':>6s} {'%limit':>6s} {'FLOP/B':>8s} "
            f"{'bound':7s} kernels")
    lines = [head]
    for r in table:
        lines.append(
            f"{r['op'][:44]:44s} {(r['backend'] or '-')[:11]:11s} {r['shape'][:34]:34s} {r['dtype'] or '-':5s} "
            f"{r.get('mode') or '-':7s} {r['calls']:>5d} {r['flops'] / 1e9:>9.3f} "
            f"{_num(wasted_pct(r.get('flops_useful'), r.get('flops_issued')), '6.1f')} {r['bytes'] / 1e6:>9.2f} "
            f"{_num(r['kernel_us_mean'], '9.2f')} {_num(r['tflops'], '8.2f')} {_num(r['tbps'], '6.2f')} "
            f"{_num(_pct_of_limit(r), '6.1f')} {_num(r['intensity'], '8.1f')} {r['bound'] or '-':7s} "
            f"{r['kernels'][:160]}")
        if r.get("suspect"):   # a share above 100 % is not shown: say which figure is wrong
            lines.append(f"{'':44s} % of peak not shown: {r['suspect']}")
    return "\n".join(lines)
