"""Tables as numpy columns ({name: array}, one row per index) and the few group-bys the cost model
needs on them, without pandas (the `ops` command does not load it). Groups are numbered in order
of first appearance, as pandas' `groupby(sort=False)` numbers them.
"""
from __future__ import annotations

import numpy as np


def take(cols: dict, index) -> dict:
    """The rows `index` (positions or a mask) of every column."""
    return {k: v[index] for k, v in cols.items()}


def concat(parts: list[dict]) -> dict:
    """The rows of each part, one after another ({} for no parts)."""
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]} if parts else {}


def rows(cols: dict) -> int:
    """How many rows (0 for {})."""
    return len(next(iter(cols.values()))) if cols else 0


def objects(values) -> np.ndarray:
    """An object array of `values` (numpy would make a 2-D array of lists, or a fixed-width str array)."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def first_appearance(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(group of each row, numbered by first appearance; the first row of each group)."""
    _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank[inverse.reshape(-1)], first[order]


def groups_of(keys: list) -> tuple[np.ndarray, np.ndarray]:
    """`first_appearance` of hashable keys (tuples with None in them, which numpy cannot sort)."""
    index: dict = {}
    group = np.fromiter((index.setdefault(k, len(index)) for k in keys), dtype=np.int64, count=len(keys))
    return group, np.unique(group, return_index=True)[1]


def sums(groups: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """The sum of `values` per group 0..n-1, in the values' dtype (int sums stay exact)."""
    out = np.zeros(n, dtype=values.dtype)
    np.add.at(out, groups, values)
    return out


def unions(groups: np.ndarray, starts: np.ndarray, ends: np.ndarray, n: int) -> np.ndarray:
    """The length of the union of the intervals [start, end) per group 0..n-1 (int64, exact):
    overlapping intervals of a group count once. Each group's intervals are shifted past the
    previous group's, so one running maximum over all rows, sorted by group and start, is the
    reach of the group's earlier intervals."""
    out = np.zeros(n, dtype=np.int64)
    if not len(groups):
        return out
    s, e = np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64)
    base = int(min(s.min(), e.min()))
    width = int(max(s.max(), e.max())) - base + 1
    if width * (n + 1) >= 2 ** 62:  # the shift would overflow (absurd timestamps): exact Python ints
        for g in range(n):
            mine = groups == g
            out[g] = min(_union_exact(s[mine].tolist(), e[mine].tolist()), np.iinfo(np.int64).max)
        return out
    order = np.lexsort((s, groups))
    shift = groups[order].astype(np.int64) * width - base
    s, e = s[order] + shift, np.maximum(e[order], s[order]) + shift
    reach = np.maximum.accumulate(np.r_[np.iinfo(np.int64).min, e[:-1]])
    np.add.at(out, groups[order], np.maximum(e - np.maximum(s, reach), 0))
    return out


def _union_exact(starts: list[int], ends: list[int]) -> int:
    """The union's length of [start, end) intervals in Python ints (no overflow at any timestamp)."""
    total, reach = 0, None
    for start, end in sorted(zip(starts, ends)):
        lo = start if reach is None else max(start, reach)
        total += max(end - lo, 0)
        reach = end if reach is None else max(reach, end)
    return total


def descending(values: np.ndarray) -> np.ndarray:
    """The order pandas' sort_values(ascending=False) gives (its quicksort; ties as pandas breaks them)."""
    idx = np.arange(len(values))[::-1]
    return idx[values[::-1].argsort(kind="quicksort")][::-1]


def rows_of_each(keys, wanted) -> dict:
    """{each of ``wanted``: the positions (ascending) of the rows whose key is it} in one sort of
    ``keys``, not one scan per key (a read of many runs' rows split by run id)."""
    keys = np.asarray(keys, dtype=object)
    order = np.argsort(keys, kind="stable")
    found, starts = np.unique(keys[order], return_index=True) if len(keys) else ([], np.array([], int))
    ends = [*starts[1:].tolist(), len(keys)]
    at = {k: order[a:b] for k, a, b in zip(list(found), starts.tolist(), ends)}
    return {k: at.get(k, order[:0]) for k in wanted}
