"""Nesting at scale (issue 22, class 7): random lanes against the definitions written out by brute
force, and the shapes that were quadratic (one timestamp, one deep chain, many lanes) at sizes the
old code could not finish in minutes."""
from __future__ import annotations

import time

import numpy as np
import pytest

from profiler.parse.nesting import innermost, nest


def reference_nest(lanes, starts, durs):
    """The module doc's definitions, one event at a time (quadratic)."""
    n = len(starts)
    ends = [s + max(d, 1) for s, d in zip(starts, durs)]
    depths = [sum(1 for j in range(i) if lanes[j] == lanes[i] and ends[j] > starts[i]) for i in range(n)]
    parents = [max((j for j in range(i) if lanes[j] == lanes[i] and depths[j] == depths[i] - 1), default=-1)
               for i in range(n)]
    selfs = [max(durs[i] - sum(durs[j] for j in range(n) if parents[j] == i), 0) for i in range(n)]
    return parents, depths, selfs


def reference_innermost(lanes, starts, ends, depths, at_lanes, at):
    found = []
    for lane, t in zip(at_lanes, at):
        holders = [i for i in range(len(starts)) if lanes[i] == lane and starts[i] <= t <= ends[i]]
        found.append(max(holders, key=lambda i: (depths[i], -starts[i], -i), default=-1))
    return found


@pytest.mark.parametrize("seed", range(4))
def test_random_lanes_match_the_definitions(seed):
    rng = np.random.default_rng(seed)
    for _ in range(150):
        n = int(rng.integers(1, 40))
        lanes, starts = rng.integers(0, 3, n), rng.integers(0, 25, n)
        durs = rng.integers(0, 3 if rng.random() < 0.3 else 15, n)  # many zero-length and touching events
        order = np.lexsort((-durs, starts, lanes))
        lanes, starts, durs = lanes[order], starts[order], durs[order]
        got = [a.tolist() for a in nest(lanes, starts, durs)]
        assert got == list(reference_nest(lanes.tolist(), starts.tolist(), durs.tolist()))
        depths = got[1] if rng.random() < 0.5 else rng.integers(0, 4, n).tolist()  # or improperly nested
        shuffle = rng.permutation(n)
        args = [np.asarray(a)[shuffle] for a in (lanes, starts, starts + durs, depths)]
        at_lanes, at = rng.integers(0, 4, 20), rng.integers(-2, 45, 20)
        assert innermost(*args, at_lanes, at).tolist() == \
            reference_innermost(*(a.tolist() for a in args), at_lanes.tolist(), at.tolist())


N = 300_000  # the old code: 100k at one timestamp 7.7 s, 400k 92 s (bench/slow_inputs.py measures 1M)


def _timed(fn, *args):
    started = time.monotonic()
    out = fn(*args)
    return out, time.monotonic() - started


def test_one_timestamp_nests_in_one_chain():
    zeros = np.zeros(N, dtype=np.int64)
    (parents, depths, selfs), seconds = _timed(nest, zeros, zeros + 10, zeros + 5)
    assert depths.tolist() == list(range(N)) and parents.tolist() == list(range(-1, N - 1))
    assert selfs.tolist() == [0] * (N - 1) + [5]
    assert seconds < 30, seconds  # loose: a quadratic pass takes minutes here


def test_a_deep_chain_and_its_innermost_event():
    starts = np.arange(N, dtype=np.int64)
    durs = 2 * (N - starts)
    zeros = np.zeros(N, dtype=np.int64)
    (parents, depths, selfs), seconds = _timed(nest, zeros, starts, durs)
    assert depths[-1] == N - 1 and parents[-1] == N - 2 and selfs[0] == 2
    held, more = _timed(innermost, zeros, starts, starts + durs, depths, np.zeros(3, dtype=np.int64),
                        np.array([N, 0, 3 * N]))
    assert held.tolist() == [N - 1, 0, -1]
    assert seconds + more < 30, (seconds, more)


def test_a_lane_per_event():
    lanes = np.arange(N, dtype=np.int64)
    (parents, depths, _), seconds = _timed(nest, lanes, lanes * 0, lanes * 0 + 5)
    assert not depths.any() and (parents == -1).all()
    held, more = _timed(innermost, lanes, lanes * 0, lanes * 0 + 5, depths, lanes[::-1], lanes * 0 + 5)
    assert held.tolist() == lanes[::-1].tolist()
    assert seconds + more < 30, (seconds, more)
