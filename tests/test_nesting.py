"""Nesting on hand-drawn lanes: parent, depth and self time."""
from __future__ import annotations

import numpy as np

from profiler.parse.nesting import nest


def run(events):
    """events: (lane, start, dur), already sorted by lane, start, -dur."""
    lanes, starts, durs = (np.array(c, dtype=np.int64) for c in zip(*events))
    parents, depths, selfs = nest(lanes, starts, durs)
    return parents.tolist(), depths.tolist(), selfs.tolist()


def test_empty_and_single():
    assert [a.tolist() for a in nest(np.array([]), np.array([]), np.array([]))] == [[], [], []]
    assert run([(0, 5, 10)]) == ([-1], [0], [10])


def test_children_grandchildren_and_touching_siblings():
    # 0 [0,100) contains 1 [10,40) and 2 [40,90) (2 starts exactly when 1 ends); 3 [50,60) in 2
    parents, depths, selfs = run([(0, 0, 100), (0, 10, 30), (0, 40, 50), (0, 50, 10)])
    assert parents == [-1, 0, 0, 2]
    assert depths == [0, 1, 1, 2]
    assert selfs == [100 - 30 - 50, 30, 50 - 10, 10]


def test_zero_length_event_nests_inside_the_event_it_starts_with():
    parents, depths, _ = run([(0, 10, 20), (0, 10, 0), (0, 30, 0)])
    assert parents == [-1, 0, -1]  # the one at 30 starts as the first ends: a sibling
    assert depths == [0, 1, 0]


def test_lanes_never_parent_each_other():
    parents, depths, selfs = run([(1, 0, 100), (1, 10, 10), (2, 5, 50), (2, 6, 1)])
    assert parents == [-1, 0, -1, 2]
    assert depths == [0, 1, 0, 1]
    assert selfs == [90, 10, 49, 1]


def test_child_overrunning_its_parent_by_a_nanosecond_still_nests():
    parents, _, selfs = run([(0, 0, 100), (0, 50, 51)])
    assert parents == [-1, 0] and selfs == [49, 51]
