"""Nesting of duration events on one lane (a CPU thread or a GPU stream): parent, depth, self time;
and the innermost event holding an instant (a [memory] event's CPU op).

Vectorised with numpy and O(n log n) whatever the events' shape: a million ops at one timestamp, or
nested a million deep, take the same few sorts and searches as a million ops side by side (no loop
runs once per lane or once per depth). With events sorted by (lane, start ascending, duration
descending):
- an event's depth is the number of earlier events on its lane that have not yet ended when it
  starts (an event ending exactly when the next one starts does not enclose it);
- its parent is the latest earlier event on its lane one level up;
- its self time is its duration minus its children's durations (never below zero).
"""
from __future__ import annotations

import numpy as np


def nest(lanes: np.ndarray, starts: np.ndarray, durs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For sorted events (see module doc) return parent index (-1 at the top), depth and self time.

    `lanes` holds one integer code per lane, `starts` and `durs` integer nanoseconds.
    """
    n = len(starts)
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty.astype(np.int32), empty
    lanes = np.asarray(lanes, dtype=np.int64)
    starts = np.asarray(starts, dtype=np.int64)
    durs = np.asarray(durs, dtype=np.int64)
    first = np.flatnonzero(np.r_[True, lanes[1:] != lanes[:-1]])  # first index of each lane
    lane_of = np.cumsum(np.r_[False, lanes[1:] != lanes[:-1]])  # lane number per event, 0, 1, ...
    ended = _ended_before(lane_of, starts, durs) - first[lane_of]
    depths = (np.arange(n) - first[lane_of] - ended).astype(np.int32)
    parents = _parents(depths, lane_of)
    child = np.bincount(parents[parents >= 0], weights=durs[parents >= 0], minlength=n)
    selfs = np.maximum(durs - child.astype(np.int64), 0)
    return parents, depths, selfs


def _ranks(*arrays: np.ndarray) -> list[np.ndarray]:
    """Dense ranks of the values of all `arrays` taken together (equal values, equal ranks; order
    kept), one array of ranks per array given: small integers that compare like the values."""
    ranks = np.unique(np.concatenate(arrays), return_inverse=True)[1].astype(np.int64)
    return np.split(ranks, np.cumsum([len(a) for a in arrays])[:-1])


def _ended_before(lane_of: np.ndarray, starts: np.ndarray, durs: np.ndarray) -> np.ndarray:
    """For each event, how many events of its lane or of an earlier lane ended at or before it
    starts. A zero-length event counts as ending just after its start, so it never looks finished
    to an event starting with it. (One search of the sorted (lane, end) keys.)"""
    end_rank, start_rank = _ranks(starts + np.maximum(durs, 1), starts)
    width = int(max(end_rank.max(), start_rank.max())) + 1
    ends = np.sort(lane_of * width + end_rank)
    return np.searchsorted(ends, lane_of * width + start_rank, side="right")


def _parents(depths: np.ndarray, lane_of: np.ndarray) -> np.ndarray:
    """Index of the latest earlier event on the same lane one level up, or -1: with the events
    grouped by (lane, depth), the last event before the child in its parent level's group."""
    n = len(depths)
    parents = np.full(n, -1, dtype=np.int64)
    levels = int(depths.max(initial=0)) + 1
    level, up = _ranks(lane_of * levels + depths, lane_of * levels + depths - 1)  # (lane, depth) groups
    keys = level * n + np.arange(n)  # group, then position: sorted by group, each group in order
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    children = np.flatnonzero(depths > 0)
    found = np.searchsorted(keys, up[children] * n + children) - 1
    holds = found >= 0
    holds[holds] = keys[found[holds]] // n == up[children[holds]]
    parents[children[holds]] = order[found[holds]]
    return parents


def innermost(lanes: np.ndarray, starts: np.ndarray, ends: np.ndarray, depths: np.ndarray,
              at_lanes: np.ndarray, at: np.ndarray) -> np.ndarray:
    """For each instant (`at_lanes`, `at`): the index of the deepest event on its lane whose span
    [start, end] holds it, both ends included, or -1 where none does; of several at that depth
    (an event ending at the instant and its sibling starting at it), the one that starts first
    (then the one given first).

    Exact for any events, nested properly or not: each event is a range of the instants sorted by
    (lane, time), and ranks its candidates by (depth, then earliest start); a segment tree over the
    instants keeps, at O(log m) nodes per event, the best rank whose range covers the node; each
    instant takes the best along its leaf's path to the root.
    """
    found = np.full(len(at), -1, dtype=np.int64)
    n = len(starts)
    if len(at) == 0 or n == 0:
        return found
    lane_rank, at_lane_rank = _ranks(np.asarray(lanes, dtype=np.int64), np.asarray(at_lanes, dtype=np.int64))
    start_rank, end_rank, at_rank = _ranks(*(np.asarray(a, dtype=np.int64) for a in (starts, ends, at)))
    width = int(max(start_rank.max(), end_rank.max(), at_rank.max())) + 1
    points = np.sort(at_lane_rank * width + at_rank)  # the instants' (lane, time), sorted
    lo = np.searchsorted(points, lane_rank * width + start_rank, side="left")
    hi = np.searchsorted(points, lane_rank * width + end_rank, side="right")
    by_start = np.lexsort((np.arange(n), starts))  # earliest start first, then the one given first
    score = np.empty(n, dtype=np.int64)
    score[by_start] = n - 1 - np.arange(n)
    score += (np.asarray(depths, dtype=np.int64) - int(np.min(depths))) * n
    best = _stab_max(len(points), lo, hi, score)[np.searchsorted(points, at_lane_rank * width + at_rank)]
    held = best >= 0
    found[held] = by_start[n - 1 - best[held] % n]
    return found


def _stab_max(size: int, lo: np.ndarray, hi: np.ndarray, score: np.ndarray) -> np.ndarray:
    """For each of `size` points, the highest score of the ranges [lo, hi) that hold it, or -1.
    A bottom-up segment tree, every range climbed one level per round (about log2(size) rounds)."""
    leaves = 1 << max(size - 1, 0).bit_length()
    tree = np.full(2 * leaves, -1, dtype=np.int64)
    keep = lo < hi
    left, right, score = lo[keep] + leaves, hi[keep] + leaves, score[keep]
    while len(left):
        take = (left & 1) == 1
        np.maximum.at(tree, left[take], score[take])
        left = left + take
        take = (right & 1) == 1
        right = right - take
        np.maximum.at(tree, right[take], score[take])
        left, right = left >> 1, right >> 1
        keep = left < right
        left, right, score = left[keep], right[keep], score[keep]
    best = tree[leaves:leaves + size].copy()
    node = np.arange(leaves, leaves + size) >> 1
    while node[0] >= 1:
        np.maximum(best, tree[node], out=best)
        node >>= 1
    return best
