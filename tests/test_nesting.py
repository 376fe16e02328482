"""Nesting on hand-drawn lanes: parent, depth and self time; the innermost event holding an instant."""
from __future__ import annotations

import numpy as np

from profiler.parse.nesting import innermost, nest


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


def held_by(events, instants):
    """events: (lane, start, end, depth) in any order; instants: (lane, time). Index or -1 each."""
    lanes, starts, ends, depths = (np.array(c, dtype=np.int64) for c in zip(*events))
    at_lanes, at = (np.array(c, dtype=np.int64) for c in zip(*instants))
    return innermost(lanes, starts, ends, depths, at_lanes, at).tolist()


def test_innermost_holds_both_ends_and_prefers_the_deeper():
    # 0 [0,100] holds 1 [10,40] and 2 [40,90]; 3 [30,40] in 1 ends where 2 starts
    events = [(0, 0, 100, 0), (0, 10, 40, 1), (0, 40, 90, 1), (0, 30, 40, 2)]
    assert held_by(events, [(0, 0), (0, 10), (0, 20), (0, 40), (0, 90), (0, 100), (0, 101), (0, -1)]) == \
        [0, 1, 1, 3, 2, 0, -1, -1]


def test_innermost_tie_at_one_depth_goes_to_the_one_that_starts_first():
    # siblings 1 [10,40] and 2 [40,90]: at 40 both hold it at depth 1
    events = [(0, 0, 100, 0), (0, 40, 90, 1), (0, 10, 40, 1)]
    assert held_by(events, [(0, 40)]) == [2]


def test_innermost_parent_and_child_starting_together_and_zero_length():
    events = [(0, 10, 50, 0), (0, 10, 20, 1), (0, 20, 20, 2), (1, 10, 10, 0)]
    assert held_by(events, [(0, 10), (0, 20), (0, 21), (1, 10), (1, 11), (2, 10)]) == [1, 2, 0, 3, -1, -1]


def test_innermost_with_overlapping_events_of_one_depth_and_no_events():
    # improperly nested: 0 [0,50] and 1 [40,100] both at depth 0; 2 [60,70] at depth 1
    events = [(0, 0, 50, 0), (0, 40, 100, 0), (0, 60, 70, 1)]
    assert held_by(events, [(0, 45), (0, 55), (0, 65), (0, 100)]) == [0, 1, 2, 1]
    empty = np.zeros(0, dtype=np.int64)
    assert innermost(empty, empty, empty, empty, np.array([0]), np.array([5])).tolist() == [-1]
    assert innermost(*(np.array([0]),) * 4, empty, empty).tolist() == []
