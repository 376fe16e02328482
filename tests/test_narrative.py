"""narrative.py: the sentences the pages show, from DataFrames queried out of the hand-written
store of test_queries (a real DuckDB file); every number in them is checked by hand."""
from __future__ import annotations


from profiler.analysis.reads import pair_queries, queries as q, run_queries, timeline_queries
from profiler.present import charts, narrative
from tests.tiny_store import RUNS




def test_timeline_caption_says_what_was_left_out(tiny):
    marks = timeline_queries.timeline_marks(tiny, "runa", 0, (0, 200_000), max_marks=3)
    text = narrative.timeline_caption(marks, "ProfilerStep#1")
    assert "3 marks" in text and "12 shortest of 15 are left out" in text
    assert "no events" in narrative.timeline_caption(marks.iloc[0:0], "ProfilerStep#1")


def test_alignment_summary_names_kernels_in_one_run_only(tiny):
    with tiny.connect() as con:     # runc: runa's iteration 0 without its copy
        con.execute("INSERT INTO traces (run_id, name, source, added_at, size_bytes, events,"
                    " kernels, skipped_events, start_ns, end_ns)"
                    " VALUES ('runc', 'c.json', 'uploaded', now(), 1, 1, 1, 0, 0, 100000)")
        con.execute("INSERT INTO kernels (run_id, name, ts_ns, dur_ns) VALUES ('runc', 'cudnn_fwd', 0, 9000)")
    tiny.upkeep()
    aligned = pair_queries.kernel_alignment(tiny, "runa", "runc", 0)
    text = narrative.alignment_summary(aligned, "A", "B")
    assert text.startswith("Kernels in both runs (same job): 1; replaced by another kind of kernel: 0.")
    assert "Only in **A**: `Memcpy DtoD (Device -> Device)` ×1." in text
    assert narrative.alignment_summary(aligned.iloc[0:0], "A", "B").startswith("Neither run")


def _story(tiny, runs, labels):
    return narrative.cudnn_story(q.cudnn_op_time(tiny, runs), q.run_shapes(tiny, runs), labels)


def test_cudnn_story_of_a_cold_run(tiny, labels):
    (text,) = _story(tiny, RUNS, labels)     # runa is cold: first call 10 µs, kernels 15 µs/call
    assert text.startswith(f"**{labels['runa']}** (cold: the first call of this shape")
    assert "took 10 µs of CPU time for 15 µs of GPU work" in text and "execution plan" in text


def test_cudnn_story_of_warm_runs_and_a_cold_partner(tiny):
    with tiny.connect() as con:
        con.execute("UPDATE traces SET cold = false WHERE run_id = 'runa'")
        con.execute("INSERT INTO traces (run_id, name, source, added_at, size_bytes, events,"
                    " kernels, skipped_events, variant, seq_len, dtype, cold, start_ns, end_ns)"
                    " VALUES ('runk', 'k', 'captured', now(), 1, 1, 1, 0, 'cudnn', 1024, 'bf16',"
                    " true, 0, 500000)")
        con.execute("INSERT INTO ops (run_id, op_id, depth, cat, name, tid, ts_ns, dur_ns, self_ns)"
                    " VALUES ('runk', 1, 0, 'cpu_op', 'aten::_cudnn_attention_forward', '7', 0,"
                    " 400000, 400000)")
    tiny.upkeep()
    labels = charts.label_map(run_queries.run_labels(tiny, ["runa", "runk"]))
    warm, cold = _story(tiny, ["runa", "runk"], labels)
    # runa warm: 5 µs per later call, the first 10 µs, 15 µs of kernels per call
    assert "costs 5 µs of CPU time (the first profiled call 10 µs) for 15 µs of GPU work" in warm
    assert "GPU work outweighs the CPU work" in warm
    assert cold.endswith(f"The warm run of this shape ({labels['runa']}) needs 5 µs per call, 80× less.")
    with tiny.connect() as con:    # a slower warm call: 50 µs of CPU for 15 µs of GPU
        con.execute("UPDATE ops SET dur_ns = 50000 WHERE run_id = 'runa' AND op_id = 6")
    tiny.cache.clear()  # a stored run's rows never change (its id hashes its trace); this test edits them
    warm, _ = _story(tiny, ["runa", "runk"], labels)
    assert "the GPU waits between calls" in warm and "costs 50 µs" in warm


def test_cudnn_story_without_cudnn_runs(tiny, labels):
    assert _story(tiny, ["runb"], labels) == []   # the section is left out
