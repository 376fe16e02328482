"""Results kept between page runs, per run.

A run id is a hash of the trace's bytes, so whatever is computed from a run's stored rows never
changes while the run stays in the store. Every key holds the store file and each run's stamp: its
`added_at`, so a run deleted and ingested again (perhaps with other options) is a new entry, and
its name, the one thing about a stored run that changes (`catalog.rename_run`), so findings that
print a run's label never show an old one. A run no longer in the store is computed afresh
(empty, or an error), never read from here.

`per_run(store, name, run_ids, compute, order)` keeps a table one run at a time: the runs not kept
yet are computed together in one call of `compute(missing_ids)` and split by `run_id`; the result
is the kept parts in the order the uncached query gives (`"given"`: the order of `run_ids`;
`"run_id"`: sorted by run id). `value(store, key, run_ids, compute)` keeps any other result (a
pair's delta, findings) under `key` plus the runs' stamps.

Kept frames are returned as shallow copies (pandas copy-on-write: a caller adding a column does
not change the kept one); at most `MAX_ENTRIES` entries and `MAX_BYTES` of frames (shallow
size: the text of object columns is not counted), least recently
used dropped first, and a frame over `MAX_ROWS` rows is not kept.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

import pandas as pd

MAX_ENTRIES = 1024
MAX_ROWS = 200_000
MAX_BYTES = 256 * 2**20
# a run's stamp: when it was added, its name, and when hardware counters were attached to it
STAMPS_SQL = ("SELECT t.run_id, t.added_at, t.name, c.attached_at FROM traces t "
              "LEFT JOIN counter_reports c ON c.run_id = t.run_id "
              "WHERE t.run_id IN (SELECT unnest($run_ids::VARCHAR[]))")

_KEPT: OrderedDict[tuple, tuple[object, int]] = OrderedDict()   # key -> (result, its bytes)
_LOCK = threading.Lock()
_MISSING = object()
_held = [0]  # bytes of the kept frames


def clear() -> None:
    """Forget every kept result (benchmarks of a cold page, tests)."""
    with _LOCK:
        _KEPT.clear()
        _held[0] = 0


def stamps(store, run_ids) -> dict[str, tuple]:
    """{run_id: (added_at, name, counters' attached_at or None)} of those of ``run_ids`` in the store."""
    rows = store.query(STAMPS_SQL, {"run_ids": [str(r) for r in run_ids]})
    attached = [None if pd.isna(a) else a for a in rows["attached_at"]]
    return {r: (added, name, at) for r, added, name, at in zip(rows["run_id"], rows["added_at"], rows["name"], attached)}


def _get(key: tuple):
    with _LOCK:
        found = _KEPT.get(key)
        if found is None:
            return _MISSING
        _KEPT.move_to_end(key)
        return found[0]


def _put(key: tuple, result) -> None:
    size = int(result.memory_usage(index=False).sum()) if isinstance(result, pd.DataFrame) else 0
    if isinstance(result, pd.DataFrame) and len(result) > MAX_ROWS:
        return
    with _LOCK:
        if key in _KEPT:
            _held[0] -= _KEPT.pop(key)[1]
        _KEPT[key] = (result, size)
        _held[0] += size
        while len(_KEPT) > MAX_ENTRIES or (_held[0] > MAX_BYTES and len(_KEPT) > 1):
            _held[0] -= _KEPT.popitem(last=False)[1][1]


def _copy(result):
    if isinstance(result, pd.DataFrame):
        return result.copy(deep=False)
    if isinstance(result, list):
        return list(result)
    return result


def _path(store) -> str:
    return str(getattr(store, "path", ""))


def per_run(store, name: Hashable, run_ids, compute: Callable[[list[str]], pd.DataFrame],
            order: str = "given") -> pd.DataFrame:
    """``compute(run_ids)`` (a frame with a ``run_id`` column, each run's rows independent of the
    other runs) with each run's rows kept under ``name``; see the module docstring."""
    ids = list(dict.fromkeys(str(r) for r in run_ids))
    present = stamps(store, ids)
    if not present:
        return compute(ids)
    keys = {r: (_path(store), name, r, present[r]) for r in ids if r in present}
    parts = {r: _get(k) for r, k in keys.items()}
    missing = [r for r, part in parts.items() if part is _MISSING]
    if missing:
        fresh = compute(missing)
        split = dict(tuple(fresh.groupby("run_id", sort=False))) if len(fresh) else {}
        empty = fresh.iloc[0:0]
        for r in missing:
            parts[r] = split.get(r, empty).reset_index(drop=True)
            _put(keys[r], parts[r])
    ordered = sorted(parts) if order == "run_id" else [r for r in ids if r in parts]
    frames = [parts[r] for r in ordered if len(parts[r])] or [parts[ordered[0]]]
    return pd.concat(frames, ignore_index=True)


def value(store, key: tuple, run_ids, compute: Callable[[], object]):
    """``compute()``, kept under ``key`` and the stamps of ``run_ids`` (computed afresh, and not
    kept, when one of them is not in the store)."""
    ids = [str(r) for r in run_ids]
    present = stamps(store, ids)
    if not set(ids) <= set(present):
        return compute()
    full = (_path(store), *key, tuple((r, present[r]) for r in ids))
    found = _get(full)
    if found is _MISSING:
        found = compute()
        _put(full, found)
    return _copy(found)
