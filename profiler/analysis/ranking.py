"""Which run wins, and why: any number of runs ranked by time per call, with one sentence.

`rank_table(store, run_ids)` is one row per run, fastest first:

- ``gpu_us_per_call``: what the ranking sorts by (`timings`: the GPU time of one iteration, its
  kernels, copies and sets; a captured run calls the variant once per iteration); ties go to the
  run id; ``kernel_us_per_call``: the kernels alone;
- ``times_fastest``: that time over the fastest run's (1.0 for the winner);
- ``tflops``, ``tbps``, ``pct_of_roof``, ``roof_bound`` (``compute`` | ``memory``): the op cost
  model's rating of the run (`roofline.roofline_table`); missing where no op is modelled;
- ``peak_allocated_bytes``, ``wall_us_per_call``, ``graph_us_per_call``: `timings`;
- ``cold_us``: the first call of the same variant and shape when the store holds its cold run
  (its one timed call), else missing;
- ``bound``: the metrics layer's verdict of the run's iterations.

`rank_sentence(store, table)` names the winner, its margin over the runner-up and the cause: the
first of the pair's findings that explains a GPU-time gap (kernel architecture, bytes moved, fp32
GEMMs on CUDA cores, hardware counters), else the largest kernel change.

`shape_groups(store, run_ids)` splits runs by their attention shape (`SHAPE`): runs of different
shapes are never ranked against each other. `rank_groups(store, run_ids)` is the ranked table and
sentence of each group of two or more runs, and the runs left alone in their shape.

`check(store, baseline, candidate, max_slowdown_pct)` is the regression gate: slower than the bound
when the candidate's time per call exceeds the baseline's by more than ``max_slowdown_pct``; it
names the kernels that grew.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from profiler.analysis import findings, queries, roofline, timings

CAUSES = ("kernel_arch", "counters", "bytes_moved", "fp32_cuda_core_gemm", "kernel_delta")
COLD_SQL = """
SELECT w.run_id, c.run_id AS cold_run_id, TRY_CAST(c.run_meta->>'wall_us_per_call' AS DOUBLE) AS cold_us
FROM traces w JOIN traces c
  ON c.cold AND NOT w.cold AND c.variant = w.variant AND c.batch = w.batch AND c.heads = w.heads
 AND c.seq_len = w.seq_len AND c.head_dim = w.head_dim AND c.dtype = w.dtype AND c.causal = w.causal
 AND c.gpu_name IS NOT DISTINCT FROM w.gpu_name
 -- the whole workload (issue 35): mode, K/V heads and length, window, packed lengths
 AND coalesce(c.mode, 'prefill') = coalesce(w.mode, 'prefill')
 AND coalesce(c.kv_heads, c.heads) = coalesce(w.kv_heads, w.heads)
 AND coalesce(c.kv_len, c.seq_len) = coalesce(w.kv_len, w.seq_len)
 AND c."window" IS NOT DISTINCT FROM w."window" AND c.varlen IS NOT DISTINCT FROM w.varlen
WHERE w.run_id IN (SELECT unnest($run_ids::VARCHAR[]))
QUALIFY row_number() OVER (PARTITION BY w.run_id ORDER BY c.added_at DESC, c.run_id) = 1
"""
# what makes runs comparable: the mode and every size of the attention (queries.SHAPE_KEYS but the variant)
SHAPE = ("mode", "batch", "heads", "kv_heads", "seq_len", "kv_len", "head_dim", "window", "varlen", "dtype", "causal")
COLUMNS = ["rank", "run_id", "label", "gpu_us_per_call", "kernel_us_per_call", "times_fastest", "tflops", "tbps", "pct_of_roof",
           "roof_bound", "peak_allocated_bytes", "cold_us", "wall_us_per_call", "graph_us_per_call", "bound"]


def rank_table(store, run_ids) -> pd.DataFrame:
    """One row per run (`COLUMNS`), fastest first; runs without kernel time come last."""
    ids = queries._ids(dict.fromkeys(run_ids))
    table = timings.run_timings(store, ids)
    labels = queries.run_labels(store, ids).set_index("run_id")["label"]
    table["label"] = table["run_id"].map(labels)
    roof = roofline.roofline_table(store, ids)
    rated = roof.set_index("run_id") if not roof.empty else pd.DataFrame(
        columns=["tflops", "tbps", "pct_of_roof", "bound"])
    for column, source in (("tflops", "tflops"), ("tbps", "tbps"), ("pct_of_roof", "pct_of_roof"),
                           ("roof_bound", "bound")):
        table[column] = table["run_id"].map(rated[source]) if len(rated) else None
    cold = store.query(COLD_SQL, {"run_ids": ids}).set_index("run_id")["cold_us"]
    table["cold_us"] = table["run_id"].map(cold)
    table["bound"] = table["run_id"].map(queries.run_metrics(store, ids).set_index("run_id")["bound"])
    table = table.sort_values(["gpu_us_per_call", "run_id"], na_position="last", ignore_index=True)
    fastest = table["gpu_us_per_call"].min()
    table["times_fastest"] = table["gpu_us_per_call"] / fastest if fastest and fastest == fastest else None
    table["rank"] = range(1, len(table) + 1)
    return table[COLUMNS]


def rank_sentence(store, table: pd.DataFrame) -> tuple[str, dict]:
    """(the sentence, its evidence) for a `rank_table`."""
    timed = table[table["gpu_us_per_call"].notna()]
    if timed.empty:
        return "None of these runs recorded GPU kernels: there is nothing to rank.", {}
    win = timed.iloc[0]
    if len(timed) == 1:
        return f"{win['label']} is the only run with GPU kernels ({win['gpu_us_per_call']:,.1f} µs per call).", \
            {"winner": win["run_id"]}
    second = timed.iloc[1]
    ratio = second["gpu_us_per_call"] / win["gpu_us_per_call"]
    cause = _cause(store, win["run_id"], second["run_id"])
    text = (f"{win['label']} is fastest at {win['gpu_us_per_call']:,.1f} µs per call, "
            f"{ratio:.2f}× faster than {second['label']} ({second['gpu_us_per_call']:,.1f} µs)"
            + (f". Why: {cause.text}" if cause else "."))
    return text, {"winner": win["run_id"], "runner_up": second["run_id"], "ratio": round(float(ratio), 4),
                  "cause": cause.kind if cause else None}


def _cause(store, winner: str, runner_up: str):
    found = findings.compare_findings(store, winner, runner_up, limit=None)
    for kind in CAUSES:
        for f in found:
            if f.kind == kind:
                return f
    return None


@dataclass(frozen=True)
class Group:
    """Runs of one shape (``shape`` None: runs that record no shape, e.g. uploads)."""
    shape: tuple | None
    run_ids: tuple[str, ...]

    @property
    def title(self) -> str:
        if self.shape is None:
            return "shape not recorded"
        s = dict(zip(SHAPE, self.shape))
        heads = s["heads"] if s["kv_heads"] == s["heads"] else f"{s['heads']}/{s['kv_heads']}"
        kv = f" KV={s['kv_len']}" if s["kv_len"] != s["seq_len"] else ""
        extra = (f" window {s['window']}" if s["window"] else "") + (f" packed {s['varlen']}" if s["varlen"] else "")
        return (f"{s['mode']} B={s['batch']} H={heads} L={s['seq_len']}{kv} D={s['head_dim']} {s['dtype']} "
                f"{'causal' if s['causal'] else 'not causal'}{extra}")


@dataclass(frozen=True)
class Ranked:
    group: Group
    table: pd.DataFrame      # rank_table of the group's runs
    sentence: str
    evidence: dict


def shape_groups(store, run_ids) -> list[Group]:
    """The runs grouped by `SHAPE`, groups in the order of their first run in ``run_ids``. Runs
    without a recorded shape (uploads) form one group apiece: nothing says they are comparable."""
    ids = list(dict.fromkeys(run_ids))
    shapes = queries.run_shapes(store, ids).set_index("run_id")
    groups: dict = {}
    for run in ids:
        row = shapes.loc[run] if run in shapes.index else None
        known = row is not None and all(pd.notna(row[c]) for c in SHAPE)
        key = tuple(_plain(row[c]) for c in SHAPE) if known else ("no shape", run)
        groups.setdefault(key, []).append(run)
    return [Group(key if key[0] != "no shape" else None, tuple(runs)) for key, runs in groups.items()]


def rank_groups(store, run_ids) -> tuple[list[Ranked], list[Group]]:
    """(each shape group of two or more runs ranked, with its sentence; the groups of one run)."""
    ranked, alone = [], []
    for group in shape_groups(store, run_ids):
        if len(group.run_ids) < 2:
            alone.append(group)
            continue
        table = rank_table(store, group.run_ids)
        ranked.append(Ranked(group, table, *rank_sentence(store, table)))
    return ranked, alone


def _plain(value):
    return value.item() if hasattr(value, "item") else value


@dataclass(frozen=True)
class Check:
    baseline: str
    candidate: str
    baseline_us: float
    candidate_us: float
    slowdown_pct: float          # candidate over baseline, in % (negative: faster)
    max_slowdown_pct: float
    grew: list[dict]             # kernels whose time per iteration grew most: kernel, us_a, us_b

    @property
    def failed(self) -> bool:
        return self.slowdown_pct > self.max_slowdown_pct


def check(store, baseline: str, candidate: str, max_slowdown_pct: float, most: int = 5) -> Check:
    """Compare the candidate's time per call against the baseline's (see the module docstring)."""
    table = timings.run_timings(store, [baseline, candidate]).set_index("run_id")["gpu_us_per_call"]
    base, cand = float(table.get(baseline)), float(table.get(candidate))
    delta = queries.kernel_delta(store, baseline, candidate)
    grown = delta.assign(grew=delta["us_b"] - delta["us_a"]).sort_values(["grew", "kernel"], ascending=[False, True])
    grew = [{"kernel": r["kernel"], "us_per_iter_baseline": float(r["us_a"]), "us_per_iter_candidate": float(r["us_b"])}
            for r in grown[grown["grew"] > 0].head(most).to_dict("records")]
    return Check(baseline, candidate, base, cand, 100.0 * (cand / base - 1.0), max_slowdown_pct, grew)
