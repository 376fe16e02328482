"""Nesting of duration events on one lane (a CPU thread or a GPU stream): parent, depth, self time;
and the innermost event holding an instant (a [memory] event's CPU op).

Vectorised with numpy, so a trace with millions of ops nests in a fraction of a second and a few
arrays of memory. With events sorted by (lane, start ascending, duration descending):
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
    lane_of = np.cumsum(np.r_[False, lanes[1:] != lanes[:-1]])  # lane number per event
    started_before = np.arange(n) - first[lane_of]
    depths = (started_before - _ended_before(first, starts, durs)).astype(np.int32)
    parents = _parents(depths, lane_of)
    child = np.bincount(parents[parents >= 0], weights=durs[parents >= 0], minlength=n)
    selfs = np.maximum(durs - child.astype(np.int64), 0)
    return parents, depths, selfs


def _ended_before(first: np.ndarray, starts: np.ndarray, durs: np.ndarray) -> np.ndarray:
    """How many events of each event's lane ended at or before it starts. A zero-length event
    counts as ending just after its start, so it never looks finished to an event starting with it."""
    ends = starts + np.maximum(durs, 1)
    result = np.empty(len(starts), dtype=np.int64)
    bounds = np.r_[first, len(starts)]
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        result[lo:hi] = np.searchsorted(np.sort(ends[lo:hi]), starts[lo:hi], side="right")
    return result


def _parents(depths: np.ndarray, lane_of: np.ndarray) -> np.ndarray:
    """Index of the latest earlier event on the same lane one level up, or -1."""
    parents = np.full(len(depths), -1, dtype=np.int64)
    for depth in range(1, int(depths.max(initial=0)) + 1):
        children = np.flatnonzero(depths == depth)
        above = np.flatnonzero(depths == depth - 1)
        if len(children) == 0 or len(above) == 0:
            continue
        k = np.searchsorted(above, children) - 1
        found = k >= 0
        candidate = above[np.where(found, k, 0)]
        same_lane = found & (lane_of[candidate] == lane_of[children])
        parents[children[same_lane]] = candidate[same_lane]
    return parents


def innermost(lanes: np.ndarray, starts: np.ndarray, ends: np.ndarray, depths: np.ndarray,
              at_lanes: np.ndarray, at: np.ndarray) -> np.ndarray:
    """For each instant (`at_lanes`, `at`): the index of the deepest event on its lane whose span
    [start, end] holds it, both ends included, or -1 where none does; of several at that depth
    (an event ending at the instant and its sibling starting at it), the one that starts first.

    Exact for any events, nested properly or not: for each lane, depths are tried from the deepest
    down; on one depth, the events sorted by start, the first whose end reaches the instant (a
    running maximum of ends, searched) holds it if it starts at or before the instant.
    """
    found = np.full(len(at), -1, dtype=np.int64)
    if len(at) == 0 or len(starts) == 0:
        return found
    order = np.lexsort((starts, -depths.astype(np.int64), lanes))  # by lane, depth down, start
    lanes, depths, starts, ends = lanes[order], depths[order], starts[order], ends[order]
    groups = np.flatnonzero(np.r_[True, (lanes[1:] != lanes[:-1]) | (depths[1:] != depths[:-1]), True])
    by_lane = np.argsort(at_lanes, kind="stable")
    lane_bounds = np.flatnonzero(np.r_[True, at_lanes[by_lane][1:] != at_lanes[by_lane][:-1], True])
    for lo, hi in zip(lane_bounds[:-1], lane_bounds[1:]):
        pending = by_lane[lo:hi]
        lane = at_lanes[pending[0]]
        first, last = np.searchsorted(lanes[groups[:-1]], [lane, lane + 1])  # this lane's depths
        for g in range(first, last):
            if not len(pending):
                break
            a, b = groups[g], groups[g + 1]
            times = at[pending]
            reach = np.searchsorted(np.maximum.accumulate(ends[a:b]), times, side="left")
            held = reach < np.searchsorted(starts[a:b], times, side="right")
            found[pending[held]] = order[a + reach[held]]
            pending = pending[~held]
    return found
