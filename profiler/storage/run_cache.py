"""Results kept between reads, per run: one cache per store handle (`Store.cache`), used by every
per-run result (the kept query tables and findings of profiler/analysis/reads/kept.py, the op costs of
profiler/analysis/reads/op_costs.py). Needs neither pandas nor pyarrow, so the `ops` command keeps its
quick start.

A run id is a hash of the trace's bytes, so whatever is computed from a run's stored rows never
changes while the run stays in the store. Every entry is keyed by the run id and the run's stamp
(`STAMPS_SQL`): its `added_at`, so a run deleted and ingested again (perhaps with other options)
is a new entry; its name, the one thing about a stored run that changes (`catalog.rename_run`), so
results that print a run's label never show an old one; and when hardware counters were attached
to it. A run no longer in the store is computed afresh (empty, or an error), never read from here.

`per_run(handle, name, run_ids, compute)` keeps a result one run at a time: the runs not kept yet
are computed together, `compute(missing_ids) -> {run_id: part}`. `value(handle, key, run_ids,
compute)` keeps any other result (a pair's delta, findings) under `key` plus the runs' stamps.
At most `MAX_ENTRIES` entries and `MAX_BYTES` of results (as the callers' `size` counts them),
least recently used dropped first; a result whose size is None is not kept.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

# The Sweep page over the 341 shipped sample runs keeps ~1,700 entries (about 5 a run): with room
# for 1,024 a visit evicted its own entries and every visit computed them again (3.3-4.6 s, not 1.1)
MAX_ENTRIES = 32768
MAX_BYTES = 256 * 2**20
# a run's stamp: when it was added, its name, and when hardware counters were attached to it
STAMPS_SQL = ("SELECT t.run_id, t.added_at, t.name, c.attached_at FROM traces t "
              "LEFT JOIN counter_reports c ON c.run_id = t.run_id "
              "WHERE t.run_id IN (SELECT unnest($run_ids::VARCHAR[]))")
MISSING = object()  # what `get` returns for a key not kept


def stamps_of(got: dict) -> dict[str, tuple]:
    """{run_id: (added_at, name, counters' attached_at or None)} from STAMPS_SQL's numpy columns
    (`tolist` gives plain Python values, and None where a value is missing)."""
    columns = [got[k].tolist() for k in ("run_id", "added_at", "name", "attached_at")]
    return {r: (added, name, at) for r, added, name, at in zip(*columns)}


def _no_size(result) -> int:
    return 0


class RunCache:
    """Kept results of one store, safe to share between threads."""

    def __init__(self):
        self.max_entries, self.max_bytes = MAX_ENTRIES, MAX_BYTES
        self._kept: OrderedDict[tuple, tuple[object, int]] = OrderedDict()  # key -> (result, its bytes)
        self._lock = threading.Lock()
        self._held = 0  # bytes of the kept results

    def __len__(self) -> int:
        return len(self._kept)

    def clear(self) -> None:
        """Forget every kept result (benchmarks of a cold page, tests that edit stored rows)."""
        with self._lock:
            self._kept.clear()
            self._held = 0

    def get(self, key: tuple):
        with self._lock:
            found = self._kept.get(key)
            if found is None:
                return MISSING
            self._kept.move_to_end(key)
            return found[0]

    def put(self, key: tuple, result, size: int | None) -> None:
        """Keep `result` (of `size` bytes; None: do not keep it), dropping the least recently used."""
        if size is None:
            return
        with self._lock:
            if key in self._kept:
                self._held -= self._kept.pop(key)[1]
            self._kept[key] = (result, size)
            self._held += size
            while len(self._kept) > self.max_entries or (self._held > self.max_bytes and len(self._kept) > 1):
                self._held -= self._kept.popitem(last=False)[1][1]

    def per_run(self, handle, name: Hashable, run_ids, compute: Callable[[list[str]], dict],
                size: Callable[[object], int | None] = _no_size) -> dict:
        """{run_id: part} for each of ``run_ids``: kept parts, and ``compute(missing)`` for the
        others (each run's part independent of the other runs); parts of runs in the store kept
        under ``name`` and their stamps (read through ``handle``, a `Store` or a `Session`)."""
        ids = list(dict.fromkeys(str(r) for r in run_ids))
        with handle.session() as db:  # one cursor for the stamps and what `compute` reads on the store
            present = db.stamps(ids)
            keys = {r: (name, r, present[r]) for r in ids if r in present}
            parts = {r: self.get(k) for r, k in keys.items()}
            missing = [r for r in ids if parts.get(r, MISSING) is MISSING]
            if missing:
                fresh = compute(missing)
                for r in missing:
                    parts[r] = fresh[r]
                    if r in keys:
                        self.put(keys[r], fresh[r], size(fresh[r]))
        return {r: parts[r] for r in ids}

    def value(self, handle, key: tuple, run_ids, compute: Callable[[], object],
              size: Callable[[object], int | None] = _no_size):
        """``compute()``, kept under ``key`` and the stamps of ``run_ids`` (computed afresh, and
        not kept, when one of them is not in the store)."""
        ids = [str(r) for r in run_ids]
        with handle.session() as db:  # one cursor for the stamps and what `compute` reads on the store
            present = db.stamps(ids)
            if not set(ids) <= set(present):
                return compute()
            full = (*key, tuple((r, present[r]) for r in ids))
            found = self.get(full)
            if found is MISSING:
                found = compute()
                self.put(full, found, size(found))
        return found
