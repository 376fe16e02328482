"""Nesting of duration events on one lane (thread or GPU stream): parent, depth and self time."""
from __future__ import annotations

from collections.abc import Sequence


def nest(lanes: Sequence, starts: Sequence[int], durs: Sequence[int]) -> tuple[list, list[int], list[int]]:
    """For events sorted by (lane, start ascending, duration descending), return for each event the
    index of its parent (the innermost event on the same lane that contains it, or None), its depth,
    and its self time (its duration minus its children's durations, never below 0)."""
    n = len(starts)
    parents: list[int | None] = [None] * n
    depths = [0] * n
    child_ns = [0] * n
    ends = [s + d for s, d in zip(starts, durs)]
    stack: list[int] = []
    lane = object()
    for i in range(n):
        if lanes[i] != lane:
            lane = lanes[i]
            stack.clear()
        while stack and ends[stack[-1]] < ends[i]:
            stack.pop()
        if stack:
            parent = stack[-1]
            parents[i] = parent
            depths[i] = len(stack)
            child_ns[parent] += durs[i]
        stack.append(i)
    selfs = [max(0, d - c) for d, c in zip(durs, child_ns)]
    return parents, depths, selfs
