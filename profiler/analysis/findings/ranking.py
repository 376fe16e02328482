"""Which variant wins, with statistics: runs grouped into repeats, groups ranked, ties called ties.

- `per_call(store, run_ids)`: **the** time of one call every ranking, `check` and sweep reads:
  `timings`' ``gpu_us_per_call`` (the GPU time of one iteration: kernels, copies and sets; a
  captured run calls the variant once per iteration); for a run recorded on the CPU (no GPU work),
  the CPU time of its attention call (`sql/cpu_call_us.sql`), with ``timed_on`` saying which.
- A **group** is the runs of one variant, workload (`SHAPE`: mode, sizes, K/V heads and length,
  window, packed lengths, dtype, causality), device and cold/warm state: its repeats. Its figure,
  interval and outliers follow `repeats` (the median of the repeats, their least to their most).
  A run that records no shape (an upload) is a group of its own.
- A **set** is the groups that may be ranked together: one workload, device and state; runs of
  different GPUs are ranked apart unless ``compare_devices`` (then the device is part of a group).
- `rank_table(store, run_ids)`: one row per group (`COLUMNS`), each set's groups fastest first,
  with the set's noise floor, ties (``tied_with``: the group above it, when the two cannot be told
  apart; tied groups share a rank), ``same_kernels_as`` (a variant that launches the very work of
  another: named with it, not ranked as a rival; `rank_why.same_work`), outliers with their run
  ids, and the representative run's rating (`roofline`), cold first call, timings and verdict.
- `rank_sets(store, run_ids)`: each set of two or more groups ranked, with its sentence
  (`rank_sentence`); the sets of one group left alone.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from profiler.analysis.reads import op_pricing, queries, query_files, reads, roofline, run_queries
from profiler.analysis.findings import rank_sentences, rank_why, repeats, timings
from profiler.analysis.model import rating
from profiler.storage.session import StoreHandle

COLD_SQL = """
SELECT w.run_id, TRY_CAST(c.run_meta->>'wall_us_per_call' AS DOUBLE) AS cold_us
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
CPU = "CPU attention call"
NO_SHAPE = "no shape"   # the set of runs that record no shape (uploads): each run a group of its own
COLUMNS = ["set", "rank", "variant", "label", "run_id", "us_per_call", "us_min", "us_max", "repeats", "runs",
           "run_ids", "outliers", "timed_on", "times_fastest", "tied_with", "same_kernels_as", "noise_pct",
           "gpu_us_per_call", "kernel_us_per_call", "tflops", "tbps", "pct_of_roof", "roof_bound",
           "peak_allocated_bytes", "cold_us", "wall_us_per_call", "graph_us_per_call", "bound", "device", "cold",
           "pct_of_measured_peak", "pct_of_measured_bandwidth", "pct_of_measured_roof"]


def per_call(store: StoreHandle, run_ids) -> pd.DataFrame:
    """run_id, us_per_call, timed_on ('GPU' | `CPU` | None when neither recorded a time)."""
    ids = list(dict.fromkeys(query_files.ids(run_ids)))
    metrics = run_queries.run_metrics(store, ids).set_index("run_id")   # all it needs of `timings.run_timings`
    table = pd.DataFrame({"run_id": ids})
    gpu = table["run_id"].map(timings.gpu_us_per_call(metrics))
    cpu_rows = table.loc[gpu.isna(), "run_id"].tolist()
    cpu = query_files.read(store, "cpu_call_us", run_ids=cpu_rows).set_index("run_id")["cpu_us_per_call"] \
        if cpu_rows else pd.Series(dtype=float)
    table["us_per_call"] = gpu.fillna(table["run_id"].map(cpu))
    table["timed_on"] = np.where(gpu.notna(), "GPU", np.where(table["us_per_call"].notna(), CPU, None))
    return table[["run_id", "us_per_call", "timed_on"]]


def runs_of(store: StoreHandle, run_ids) -> pd.DataFrame:
    """One row per run: run_id, variant, `SHAPE`, device, cold, us_per_call, timed_on, and
    ``set`` / ``group``: the text keys of its set and group (`compare_devices` off)."""
    ids = list(dict.fromkeys(query_files.ids(run_ids)))
    shapes = queries.run_shapes(store, ids)
    runs = shapes.merge(per_call(store, ids), on="run_id", how="left")
    runs["device"] = runs["gpu_name"].fillna("device not recorded")
    runs["cold"] = runs["cold"].fillna(False).astype(bool)
    return keyed(runs)


def keyed(runs: pd.DataFrame, compare_devices: bool = False) -> pd.DataFrame:
    """``runs`` with ``set`` and ``group`` keys: a set is a workload and state (and device, unless
    `compare_devices`); a group adds the variant (and then the device)."""
    known = runs[list(SHAPE)].notna().all(axis=1) & runs["variant"].notna()
    shape = pd.Series("", index=runs.index, dtype=object)
    for i, column in enumerate(SHAPE):          # column by column: a row-wise join took seconds over 10,000 runs
        shape = shape + ("|" if i else "") + runs[column].map(str)
    state = np.where(runs["cold"], "cold", "warm")
    device = "" if compare_devices else "|" + runs["device"].astype(str)
    runs = runs.copy()
    runs["set"] = np.where(known, shape + "|" + state + device, NO_SHAPE)   # uploads: ranked together
    runs["group"] = np.where(known, runs["set"] + "|" + runs["variant"].astype(str)
                             + ("|" + runs["device"].astype(str) if compare_devices else ""), NO_SHAPE + runs["run_id"])
    return runs


def groups(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per group of `runs_of`: set, group, variant, device, cold, runs, run_ids, the figure
    (us_per_call: median; us_min, us_max; repeats: used), outliers (run ids), run_id (the repeat
    nearest the median: the one its label, rating and links show) and timed_on."""
    rows = []
    for key, part in runs.groupby("group", sort=False):
        values = part["us_per_call"].tolist()
        fig = repeats.figure(values)
        ids = part["run_id"].tolist()
        odd = [ids[i] for i in fig.outliers]
        kept = [(abs(v - fig.median), r) for r, v in zip(ids, values) if r not in odd and v == v and v > 0]
        first = part.iloc[0]
        rows.append({"set": first["set"], "group": key, "variant": first["variant"], "device": first["device"],
                     "cold": bool(first["cold"]), "runs": len(ids), "run_ids": ids, "us_per_call": fig.median,
                     "us_min": fig.lo, "us_max": fig.hi, "repeats": fig.n, "outliers": odd,
                     "outlier_us": [values[i] for i in fig.outliers],
                     "run_id": min(kept)[1] if kept else ids[0], "timed_on": first["timed_on"], "figure": fig})
    return pd.DataFrame(rows, columns=["set", "group", "variant", "device", "cold", "runs", "run_ids", "us_per_call",
                                       "us_min", "us_max", "repeats", "outliers", "outlier_us", "run_id",
                                       "timed_on", "figure"])


def order(store: StoreHandle, found: pd.DataFrame) -> pd.DataFrame:
    """Each set's groups fastest first with rank, times_fastest, tied_with, same_kernels_as and the
    set's noise_pct; groups without a figure last, unranked."""
    parts = []
    for _, part in found.groupby("set", sort=False):
        part = part.sort_values(["us_per_call", "variant", "run_id"], na_position="last").reset_index(drop=True)
        figs = list(part["figure"])
        floor = repeats.noise_floor(figs)
        alias = rank_why.same_work(store, part)      # {position: position of the group it runs the work of}
        part["same_kernels_as"] = [part.at[alias[i], "variant"] if i in alias else None for i in range(len(part))]
        ranks, tied_with, best, prev, k = [None] * len(part), [None] * len(part), None, None, 0
        for i, fig in enumerate(figs):
            if not fig.known or i in alias:
                continue
            k += 1
            tie = prev is not None and repeats.tied(figs[prev], fig, repeats.pair_noise(figs[prev], fig, floor))
            ranks[i], tied_with[i] = (ranks[prev], part.at[prev, "variant"]) if tie else (k, None)
            best, prev = best or fig, i
        for i, j in alias.items():
            ranks[i] = ranks[j]
        part["rank"] = pd.array(ranks, dtype="Int64")
        part["tied_with"] = tied_with
        part["times_fastest"] = part["us_per_call"] / best.median if best else math.nan
        part["noise_pct"] = 100 * floor
        parts.append(part)
    return pd.concat(parts, ignore_index=True) if parts else found.assign(
        rank=pd.array([], dtype="Int64"), tied_with=None, same_kernels_as=None, times_fastest=None, noise_pct=None)


def rank_table(store: StoreHandle, run_ids, compare_devices: bool = False) -> pd.DataFrame:
    """One row per group (`COLUMNS`), sets in the order of their first run, fastest first in each."""
    found = groups(keyed(runs_of(store, run_ids), compare_devices))
    rank_why.work(store, found["run_id"])        # every group's work in one read, before the sets use it
    table = order(store, found)
    reps = table["run_id"].tolist()
    labels = run_queries.run_labels(store, reps).set_index("run_id")["label"]
    table["label"] = [group_label(labels.get(r, r), n) for r, n in zip(reps, table["runs"])]
    several = table.groupby("set", sort=False)["device"].transform("nunique") > 1    # --compare-gpus: name each GPU
    table.loc[several, "label"] = table.loc[several, "label"] + " on " + table.loc[several, "device"].astype(str)
    timed = timings.run_timings(store, reps).set_index("run_id")
    for column in ("kernel_us_per_call", "peak_allocated_bytes", "wall_us_per_call", "graph_us_per_call"):
        table[column] = table["run_id"].map(timed[column])
    table["gpu_us_per_call"] = table["us_per_call"].where(table["timed_on"] == "GPU")
    roof = roofline.roofline_table(store, reps)
    rated = roof.set_index("run_id") if not roof.empty else None
    for column, source in (("tflops", "tflops"), ("tbps", "tbps"), ("pct_of_roof", "pct_of_roof"),
                           ("roof_bound", "bound"), ("pct_of_measured_peak", "pct_of_measured_peak"),
                           ("pct_of_measured_bandwidth", "pct_of_measured_bandwidth")):
        table[column] = table["run_id"].map(rated[source]) if rated is not None else None
    table["pct_of_measured_roof"] = rating.pct_of_measured_roof(table["roof_bound"], table["pct_of_measured_peak"],
                                                                table["pct_of_measured_bandwidth"])
    cold = store.query(COLD_SQL, {"run_ids": reps}).set_index("run_id")["cold_us"]
    table["cold_us"] = table["run_id"].map(cold)
    table["bound"] = table["run_id"].map(run_queries.run_metrics(store, reps).set_index("run_id")["bound"])
    archs = {r: op_pricing.arch_of(op_pricing.device_of(i)) for r, i in reads.run_devices(store, reps).items()}
    table["arch"] = table["run_id"].map(archs)       # the "why" parses kernel names with it: read once, not per pair
    return table[COLUMNS + ["figure", "outlier_us", "arch"]]


def group_label(run_label: str, runs: int) -> str:
    """A group's name: its run's label for one run, else the label without the run id and the count."""
    return run_label if runs == 1 else f"{run_label.rsplit(' · ', 1)[0]} ({runs} runs)"


@dataclass(frozen=True)
class Ranked:
    title: str
    table: pd.DataFrame      # rank_table rows of one set
    sentence: str
    evidence: dict


def set_title(row, devices=None) -> str:
    """A set in words: the workload, the state and the device (``devices``: the set's, when several)."""
    if row["set"] == NO_SHAPE:
        return "shape not recorded"
    s = dict(zip(SHAPE, str(row["set"]).split("|")))
    heads = s["heads"] if s["kv_heads"] == s["heads"] else f"{s['heads']}/{s['kv_heads']}"
    kv = f" KV={s['kv_len']}" if s["kv_len"] != s["seq_len"] else ""
    extra = (f" window {s['window']}" if s["window"] not in ("0", "") else "") + (
        f" packed {s['varlen']}" if s["varlen"] else "")
    state = "cold" if row["cold"] else "warm"
    return (f"{s['mode']} B={s['batch']} H={heads} L={s['seq_len']}{kv} D={s['head_dim']} {s['dtype']} "
            f"{'causal' if s['causal'] == 'True' else 'not causal'}{extra}, {state}, "
            f"{' and '.join(devices) if devices and len(devices) > 1 else row['device']}")


def rank_sets(store: StoreHandle, run_ids, compare_devices: bool = False) -> tuple[list[Ranked], list[str]]:
    """(each set of two or more groups ranked with its sentence; the titles of the sets of one group)."""
    table = rank_table(store, run_ids, compare_devices)
    ranked, alone = [], []
    for _, part in table.groupby("set", sort=False):
        part = part.reset_index(drop=True)
        if len(part) < 2:
            row = part.iloc[0]
            figure = rank_sentences.figure_words(row) if row["figure"].known else "no time per call"
            alone.append(f"{set_title(row)}: {row['label']}, {figure}")
            continue
        devices = list(dict.fromkeys(part["device"].astype(str)))
        ranked.append(Ranked(set_title(part.iloc[0], devices), part, *rank_sentences.sentence(store, part)))
    return ranked, alone


def rank_sentence(store: StoreHandle, table: pd.DataFrame) -> tuple[str, dict]:
    """(the sentence, its evidence) for one set's rows of a `rank_table`."""
    return rank_sentences.sentence(store, table)
