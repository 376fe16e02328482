"""`rank_task.place`: where a rank file sits in its job, the one rule both rank tasks (one file,
a batch) follow. Expected values are read off the inputs by hand."""
from __future__ import annotations

from profiler.errors import TraceError
from profiler.storage.jobs.rank_task import place
from profiler.storage.job_layout import MAX_RANKS


def test_distributed_info_wins_over_the_file_name():
    assert place("/x/rank7.json", 3, 8) == (3, "distributedInfo")


def test_the_file_name_says_the_rank_when_the_trace_does_not():
    assert place("/x/worker5.pt.trace.json", None, None) == (5, "file name")


def test_no_rank_anywhere_is_a_trace_error_naming_the_file():
    got = place("/x/trace.json", None, 4)
    assert isinstance(got, TraceError) and "trace.json" in str(got) and "does not say its rank" in str(got)


def test_an_impossible_rank_is_refused():
    for rank, world in ((4, 4), (MAX_RANKS, None), (-1, 2)):
        got = place("/x/r.json", rank, world)
        assert isinstance(got, TraceError), (rank, world)
