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


def per_run(store: StoreHandle, name: Hashable, run_ids, compute: Callable[[list[str]], pd.DataFrame],
            order: str = "given") -> pd.DataFrame:
    """``compute(run_ids)`` (a frame with a ``run_id`` column, each run's rows independent of the
    other runs) with each run's rows kept under ``name``; see the module docstring."""
    ids = list(dict.fromkeys(str(r) for r in run_ids))
    if not ids or len(ids) > BULK:   # thousands of runs at once: one read, not kept (see BULK)
        return compute(ids)

    def split(missing: list[str]) -> dict:
        fresh = compute(missing)
        parts = dict(tuple(fresh.groupby("run_id", sort=False))) if len(fresh) else {}
        empty = fresh.iloc[0:0]
        return {r: parts.get(r, empty).reset_index(drop=True) for r in missing}
    parts = store.cache.per_run(store, ("table", name), ids, split, frame_size)
    ordered = sorted(parts) if order == "run_id" else ids
    frames = [parts[r] for r in ordered if len(parts[r])] or [parts[ordered[0]]]
    return pd.concat(frames, ignore_index=True)


def value(store: StoreHandle, key: tuple, run_ids, compute: Callable[[], object]):
    """``compute()``, kept under ``key`` and the stamps of ``run_ids`` (computed afresh, and not
    kept, when one of them is not in the store)."""
    return _copy(store.cache.value(store, ("value", *key), run_ids, compute, frame_size))
