"""Query tables and findings kept between page runs, per run: pandas on top of the store's one
cache of per-run results (`store.cache`, profiler/storage/run_cache.py: keyed by run id and the
run's stamp, so a run deleted and ingested again, renamed, or given counters is computed afresh).

`per_run(store, name, run_ids, compute, order)` keeps a table one run at a time: the runs not kept
yet are computed together in one call of `compute(missing_ids)` and split by `run_id`; the result
is the kept parts in the order the uncached query gives (`"given"`: the order of `run_ids`;
`"run_id"`: sorted by run id). `value(store, key, run_ids, compute)` keeps any other result (a
pair's delta, findings) under `key` plus the runs' stamps. `store`: a `Store` or a `Session`.

Kept frames are returned as shallow copies (pandas copy-on-write: a caller adding a column does
not change the kept one); their size is counted as `CELL_BYTES` per cell (a number's size; the
text of string columns is not counted: pandas' `memory_usage` of a string column took ~1.4 ms a
frame, most of the runs page's first visit), and a frame over `MAX_ROWS` rows is not kept.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable

import numpy as np
import pandas as pd
from profiler.storage.session import StoreHandle

MAX_ROWS = 200_000
CELL_BYTES = 8


def frame_size(result) -> int | None:
    """The bytes a kept result counts for (None: too many rows to keep): a frame's cells, a
    chart's by the frames it holds (its data and its layers')."""
    if not isinstance(result, pd.DataFrame):
        layers = getattr(result, "layer", None)
        parts = [result, *(layers if isinstance(layers, list) else ())]
        frames = [getattr(part, "data", None) for part in parts]
        sizes = [frame_size(f) for f in frames if isinstance(f, pd.DataFrame)]
        return None if None in sizes else sum(sizes)
    if len(result) > MAX_ROWS:
        return None
    return len(result) * len(result.columns) * CELL_BYTES


def _copy(result):
    if isinstance(result, pd.DataFrame):
        return result.copy(deep=False)
    if isinstance(result, list):
        return list(result)
    return result


# More runs than this in one read are read straight and not kept: cutting thousands of runs' rows
# into a kept piece apiece and joining them again cost more than the read (10,000 runs: ~40 s of a
# `rank` over 10,000 ids on 2 busy cores), and would push the cache's 32,768 entries out.
BULK = 2_048
# A query over more runs than this is read straight by the callers that only run SQL (a query file,
# `query_files.run`): one query of the 401 shipped runs took ~11 ms, cutting its rows into a kept
# piece per run ~25 ms more and joining the pieces on the next visit ~20 ms (the runs page's first
# script run 0.51-0.72 -> 0.30-0.38 s in AppTest, its later ones no slower: bench/RESULTS.md, "Kept
# per run: many runs read straight"); a few runs' query costs its fixed ~5-10 ms, which keeping saves.
# What computes more than a query (the cost model's kernel details) keeps up to BULK runs.
SQL_BULK = 64


def per_run(store: StoreHandle, name: Hashable, run_ids, compute: Callable[[list[str]], pd.DataFrame],
            order: str = "given", bulk: int | None = None) -> pd.DataFrame:
    """``compute(run_ids)`` (a frame with a ``run_id`` column, each run's rows independent of the
    other runs) with each run's rows kept under ``name``; more than ``bulk`` runs at once (default
    BULK) are computed and not kept; see the module docstring."""
    ids = list(dict.fromkeys(str(r) for r in run_ids))
    if not ids or len(ids) > (BULK if bulk is None else bulk):   # many runs at once: one read, not kept (see BULK)
        return compute(ids)
    computed = {}

    def split(missing: list[str]) -> dict:
        fresh = compute(missing)
        if len(missing) == len(ids):
            computed["all"] = fresh
        rows, bounds = _grouped(fresh, missing)
        return {r: rows.iloc[bounds[i]:bounds[i + 1]].reset_index(drop=True) for i, r in enumerate(missing)}
    parts = store.cache.per_run(store, ("table", name), ids, split, frame_size)
    ordered = sorted(parts) if order == "run_id" else ids
    if "all" in computed:  # every run computed just now: its rows in that order, not pieces joined again
        return _grouped(computed["all"], ordered)[0]
    frames = [parts[r] for r in ordered if len(parts[r])] or [parts[ordered[0]]]
    return _joined(frames) if len(frames) > 1 else _copy(frames[0])


def _joined(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """The parts one after another, each column typed as one read of all their runs types it: DuckDB
    gives a text column whose values are all missing as object (None), not as text as it does when
    some are there (numbers and booleans come typed either way), so a part read alone with such a
    column made the joined column object, None beside NaN (and `astype(str)` then spelt one missing
    value two ways: 'None' and 'nan')."""
    joined = pd.concat(frames, ignore_index=True)
    for column in joined.columns[joined.dtypes.eq(object)]:
        typed = {f[column].dtype for f in frames if f[column].dtype != object}
        if (len(typed) == 1 and isinstance(dtype := typed.pop(), pd.StringDtype)
                and all(f[column].isna().all() for f in frames if f[column].dtype == object)):
            joined[column] = joined[column].astype(dtype)
    return joined


def _grouped(frame: pd.DataFrame, run_ids: list[str]) -> tuple[pd.DataFrame, np.ndarray]:
    """The rows of ``run_ids`` (unique), run after run in that order and each run's in its own
    order, with a fresh index; and where each run's rows begin and end (``bounds[i]:bounds[i+1]``).
    One sort and one take: a groupby's pieces, reset and joined again cost ~0.3 s over 400 runs."""
    codes = pd.Index(run_ids).get_indexer(frame["run_id"]) if len(frame) else np.empty(0, dtype=np.intp)
    order = np.argsort(codes, kind="stable")
    order = order[codes[order] >= 0]  # rows of no run asked for (none, from a `compute`) left out
    rows = frame.take(order).reset_index(drop=True)
    return rows, np.searchsorted(codes[order], np.arange(len(run_ids) + 1))


def value(store: StoreHandle, key: tuple, run_ids, compute: Callable[[], object]):
    """``compute()``, kept under ``key`` and the stamps of ``run_ids`` (computed afresh, and not
    kept, when one of them is not in the store)."""
    return _copy(store.cache.value(store, ("value", *key), run_ids, compute, frame_size))
