"""Graph mode (`capture --cuda-graph`): a warm run whose calls are captured into a CUDA graph and
replayed under the profiler, the way serving engines run decode (issue 37).

Two traces come out of one run, both gzip Chrome traces with the run's "attention_run" object:
- the capture-side trace (`<run>.capture.json.gz`): one profiler cycle around
  `torch.cuda.graph(...)`, holding the launch calls, ops and shapes that were recorded into the
  graph (almost no kernel runs); its object says `"graph": "capture"` and names its replay trace;
- the replay trace (the run's own file): the profiled steps, each one `graph.replay()` inside the
  variant's label, holding `cudaGraphLaunch` and the kernels it replayed (no op, no shapes); its
  object says `"graph": "replay"` and names the capture trace (`capture_trace`).
`capture` ingests the replay joined with its capture (`ingest REPLAY --capture CAPTURE` does the
same for any pair), so the replay's kernels are attributed to the captured ops. A variant that cannot be captured (it syncs, allocates on the host,
recompiles) is skipped with that reason, as eager capture skips what cannot run.
"""
from __future__ import annotations

import torch
from torch.profiler import ProfilerAction, record_function

from profiler.capture.measure import attempt, sync, label, time_calls, write_meta

CAPTURE_SUFFIX = ".capture.json.gz"


def capture_path(replay_path):
    """The capture-side trace written beside a replay trace."""
    return replay_path.with_name(replay_path.name.removesuffix(".json.gz") + CAPTURE_SUFFIX)


def _build(fn, inputs):
    """Warm `fn` on a side stream (as torch.cuda.graph asks), then return an empty CUDAGraph."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn(*inputs)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    return torch.cuda.CUDAGraph()


def warm_graphed(run, prof, variant: str, fn, seq_len: int, inputs, repeat: int, error) -> str | None:
    """One warm run of `variant` in graph mode (`run`: the process's `inprocess.InProcessCapture`, already
    warmed up); None when written, else why it could not run."""
    c = run.config
    if c.device != "cuda":
        return "graph mode needs a CUDA GPU"
    graph, reason = attempt(lambda: _build(fn, inputs))
    if reason is not None:
        return reason
    replay_path = run.config.out_dir / f"{run.begin(variant, seq_len, False, repeat)}_{run.stamp}.json.gz"
    cap_path = capture_path(replay_path)
    run.driver.path = cap_path   # the capture-side cycle first
    run.driver.enter(prof, ProfilerAction.WARMUP)
    run.driver.enter(prof, ProfilerAction.RECORD_AND_SAVE)

    def record_capture() -> None:
        with record_function(label(variant)), torch.cuda.graph(graph):
            fn(*inputs)
        torch.cuda.synchronize()
    _, reason = attempt(record_capture)
    run.close(prof)
    if reason is not None:
        cap_path.unlink(missing_ok=True)
        return f"cannot be captured in a CUDA graph: {reason}"
    run.tell(variant, f"s{seq_len}: replaying the graph under the profiler")
    steps = [ProfilerAction.NONE] * c.wait + [ProfilerAction.WARMUP] * c.warmup
    steps += [ProfilerAction.RECORD] * (c.active - 1) + [ProfilerAction.RECORD_AND_SAVE]
    run.driver.path = replay_path

    def replays() -> None:
        for action in steps:
            run.driver.enter(prof, action)
            with record_function(label(variant)):
                graph.replay()
            sync(c.device)
    _, reason = attempt(replays)
    run.close(prof)
    if reason is not None:
        replay_path.unlink(missing_ok=True)
        cap_path.unlink(missing_ok=True)
        return reason
    eager, reason = attempt(lambda: time_calls(fn, inputs, c.device, c.timing_calls))
    if reason is not None:
        return reason
    timed, reason = attempt(lambda: time_calls(lambda: graph.replay(), (), c.device, c.timing_calls))
    if reason is not None:
        return reason
    numbers = {"wall_us_per_call": eager[0], "wall_calls": c.timing_calls, "graph_us_per_call": timed[0],
               "graph_calls": c.timing_calls, "graph_note": None, "graph": "replay",
               "capture_trace": cap_path.name,
               "rel_error": error if repeat == 0 else run.first_error(variant, seq_len)}
    run.record(variant, seq_len, False, repeat, replay_path, numbers)
    meta = dict(run.outcomes[-1].meta, graph="capture", replay_trace=replay_path.name)
    meta.pop("capture_trace", None)
    write_meta(cap_path, meta)
    return None
