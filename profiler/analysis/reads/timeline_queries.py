"""The timeline's reads: marks of each panel (events merged below a pixel, capped per panel and
per page), the extent of an iteration or of the whole trace, the steps and lanes of a whole-trace
panel, and statistics of a dragged range."""
from __future__ import annotations

from typing import NamedTuple

import pandas as pd

from profiler.analysis.reads import kept, query_files
from profiler.analysis.reads.run_queries import iteration_bounds, run_iterations
from profiler.errors import QueryError
from profiler.storage.session import StoreHandle

TIMELINE_MAX_MARKS = 3000     # marks per panel the browser draws quickly
TIMELINE_PAGE_MARKS = 8000    # marks per timeline page: many panels share it (keeps a run < 1 s)
TIMELINE_WIDTH_PX = 1200      # events shorter than window / width merge into one mark


# ── timeline ─────────────────────────────────────────────────────────────────────────────────

class Panel(NamedTuple):
    """One run's timeline panel: its step (iteration name), x domain in µs from the step's start,
    its marks, and where the step ends (µs from its start). A whole-trace panel (``trace_panels``)
    has its times from the trace's start, ``step`` "whole trace", ``step_end_us`` the trace's end,
    ``steps`` (name, start_us, end_us: every iteration) and ``lanes`` (lane_group, lane, level of
    the whole trace: they do not change with the window, so neither does the chart's height)."""
    run_id: str
    step: str
    domain: tuple[float, float]
    marks: pd.DataFrame
    step_end_us: float
    steps: pd.DataFrame | None = None
    lanes: pd.DataFrame | None = None


def timeline_marks(store: StoreHandle, run_id: str, origin_ns: int, window_ns: tuple[int, int],
                   width_px: int = TIMELINE_WIDTH_PX, max_depth: int = 6,
                   max_marks: int = TIMELINE_MAX_MARKS, step: int | None = None) -> pd.DataFrame:
    """The marks of one timeline panel: ``window_ns`` is (start, end) relative to ``origin_ns``.
    Sub-pixel events are merged per lane in DuckDB; at most ``max_marks`` rows come back (the
    longest); ``marks_before_cap`` says how many there were. Times in µs from ``origin_ns``.
    ``step``: only the events of that iteration (None: every event in the window)."""
    marks = _panel_marks(store, [(run_id, origin_ns, window_ns, step)], width_px, max_depth,
                         max_marks)
    return marks.drop(columns="run_id")


def _panel_marks(store, panels: list[tuple[str, int, tuple[int, int], int | None]], width_px: int,
                 max_depth: int, max_marks: int) -> pd.DataFrame:
    """Marks of several panels (run_id, origin_ns, window_ns, step) in one query, with a run_id
    column; kept per panels and limits (a timeline opened again with the same window costs no
    query)."""
    for _, _, (start, end), _ in panels:
        if end <= start:
            raise QueryError(f"time window {start}..{end} ns is empty: its end must follow its start")
    key = ("timeline_marks", tuple((str(r), int(o), (int(w[0]), int(w[1])), s)
                                   for r, o, w, s in panels),
           int(width_px), int(max_depth), int(max_marks))
    return kept.value(store, key, list(dict.fromkeys(str(p[0]) for p in panels)),
                      lambda: _read_panel_marks(store, panels, width_px, max_depth, max_marks))


def _read_panel_marks(store, panels, width_px: int, max_depth: int, max_marks: int) -> pd.DataFrame:
    return query_files.read(store, "timeline_marks", run_ids=[p[0] for p in panels],
                origins_ns=[int(p[1]) for p in panels],
                t0s_ns=[int(p[1] + p[2][0]) for p in panels],
                t1s_ns=[int(p[1] + p[2][1]) for p in panels],
                buckets_ns=[max(1, (p[2][1] - p[2][0]) // max(1, width_px)) for p in panels],
                steps=[None if p[3] is None else int(p[3]) for p in panels], max_depth=max_depth, max_marks=max_marks)


def timeline_extent_ns(store: StoreHandle, run_ids, iteration: int) -> int:
    """Length of the longest chosen iteration among the runs (the default time window)."""
    bounds = iteration_bounds(store, run_ids, iteration)
    return max(int((bounds["end_ns"] - bounds["start_ns"]).max()), 1) if len(bounds) else 1


def timeline_panels(store: StoreHandle, run_ids, iteration: int, window_ns: tuple[int, int],
                    shared_scale: bool, max_marks_total: int = TIMELINE_PAGE_MARKS) -> list[Panel]:
    """A ``Panel`` per run, aligned at the start of its ``iteration`` (its last when it has
    fewer), all read in one query. A panel draws only its own step's events: those of the
    iteration it is captioned with (its GPU work past the step's end included, the next step's
    never). ``window_ns`` is in the time of the longest chosen iteration: with ``shared_scale``
    every panel shows it as it is; else each run the same share of its own iteration (the middle
    half of the longest is the middle half of each). Marks per panel shrink with many runs."""
    bounds = iteration_bounds(store, run_ids, iteration)
    if bounds.empty:
        return []
    lengths, windows, per_panel = _layout(bounds, window_ns, shared_scale, max_marks_total)
    marks = _panel_marks(store, [(r.run_id, int(r.start_ns), w, int(r.iteration))
                                 for r, w in zip(bounds.itertuples(), windows)],
                         TIMELINE_WIDTH_PX, 6, per_panel)
    by_run = dict(tuple(marks.groupby("run_id", sort=False)))
    empty = marks.iloc[0:0].drop(columns="run_id")
    panels = []
    for r, w, n in zip(bounds.itertuples(), windows, lengths):
        own = by_run.get(r.run_id)
        own = empty if own is None else own.drop(columns="run_id").reset_index(drop=True)
        panels.append(Panel(r.run_id, r.name, (w[0] / 1e3, w[1] / 1e3), own, n / 1e3))
    return panels


def _layout(bounds: pd.DataFrame, window_ns: tuple[int, int], shared_scale: bool,
            max_marks_total: int) -> tuple[list[int], list[tuple[int, int]], int]:
    """(each run's length, its window, marks per panel) of panels over ``bounds`` (start_ns, end_ns
    per run): ``window_ns`` as it is with ``shared_scale``, else the same share of each run's own."""
    lengths = [int(r.end_ns - r.start_ns) for r in bounds.itertuples()]
    extent = max(max(lengths), 1)
    windows = [window_ns if shared_scale else _share_of(window_ns, n / extent) for n in lengths]
    return lengths, windows, max(300, min(TIMELINE_MAX_MARKS, max_marks_total // len(bounds)))


WHOLE_TRACE = "whole trace"  # the step name of a whole-trace panel


def trace_bounds(store: StoreHandle, run_ids) -> pd.DataFrame:
    """Per run, in ``run_ids`` order: run_id, start_ns and end_ns of its trace (the events the
    timeline draws); runs without events are left out."""
    bounds = query_files.run(store, "timeline_trace_bounds", run_ids=query_files.ids(run_ids))
    order = {run: i for i, run in enumerate(query_files.ids(run_ids))}
    return bounds.sort_values("run_id", key=lambda ids: ids.map(order), ignore_index=True)


def trace_extent_ns(store: StoreHandle, run_ids) -> int:
    """Length of the longest chosen trace (the whole-trace view's default window)."""
    bounds = trace_bounds(store, run_ids)
    return max(int((bounds["end_ns"] - bounds["start_ns"]).max()), 1) if len(bounds) else 1


def trace_lanes(store: StoreHandle, run_id: str, origin_ns: int, length_ns: int,
                read: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every lane of a run's whole trace (lane_group, lane, level): the marks of the whole trace
    merged into one bucket, so one row a lane (the very query the panels draw, so the names agree).
    ``read``: marks of the whole trace already read; their lanes when none was cut by the cap."""
    if read is None or read.empty or int(read["marks_before_cap"].iloc[0]) > len(read):
        read = _panel_marks(store, [(run_id, origin_ns, (0, length_ns), None)], 1, 6, 100_000)
    return read[["lane_group", "lane", "level"]].drop_duplicates("lane", ignore_index=True)


def trace_panels(store: StoreHandle, run_ids, window_ns: tuple[int, int], shared_scale: bool,
                 max_marks_total: int = TIMELINE_PAGE_MARKS) -> list[Panel]:
    """A ``Panel`` per run over its whole trace, times from the trace's start: every event in the
    window, whatever its step (only those are read; shorter than a pixel merged per lane, at most
    ``TIMELINE_MAX_MARKS`` a panel), the run's steps and the lanes of its whole trace.
    ``window_ns`` is in the time of the longest trace; without ``shared_scale`` each run shows the
    same share of its own."""
    bounds = trace_bounds(store, run_ids)
    if bounds.empty:
        return []
    lengths, windows, per_panel = _layout(bounds, window_ns, shared_scale, max_marks_total)
    marks = _panel_marks(store, [(r.run_id, int(r.start_ns), w, None)
                                 for r, w in zip(bounds.itertuples(), windows)],
                         TIMELINE_WIDTH_PX, 6, per_panel)
    by_run = dict(tuple(marks.groupby("run_id", sort=False)))
    empty = marks.iloc[0:0].drop(columns="run_id")
    steps = run_iterations(store, list(bounds["run_id"]))
    panels = []
    for r, w, n in zip(bounds.itertuples(), windows, lengths):
        own = by_run.get(r.run_id)
        own = empty if own is None else own.drop(columns="run_id").reset_index(drop=True)
        mine = steps[steps["run_id"] == r.run_id]
        mine = pd.DataFrame({"name": mine["name"].astype(str).to_numpy(),
                             "start_us": (mine["start_ns"] - r.start_ns).to_numpy() / 1e3,
                             "end_us": (mine["end_ns"] - r.start_ns).to_numpy() / 1e3})
        lanes = trace_lanes(store, r.run_id, int(r.start_ns), n, own if tuple(w) == (0, n) else None)
        panels.append(Panel(r.run_id, WHOLE_TRACE, (w[0] / 1e3, w[1] / 1e3), own, n / 1e3, mine, lanes))
    return panels


def _share_of(window_ns: tuple[int, int], share: float) -> tuple[int, int]:
    start, end = int(window_ns[0] * share), int(window_ns[1] * share)
    return start, max(end, start + 1)


def timeline_range_stats(store: StoreHandle, run_ids, iteration: int | None, range_ns: tuple[int, int],
                         limit: int = 40) -> pd.DataFrame:
    """Per run, what ran inside ``range_ns`` (ns from the start of its ``iteration``; like its
    panel, only that iteration's events; ``iteration=None``: ns from the start of the whole trace,
    every event): run_id, kind, name, events, total_ns (time inside the range) and self_ns, the
    ``limit`` longest."""
    if iteration is None:
        bounds = trace_bounds(store, run_ids).assign(iteration=None)
    else:
        bounds = iteration_bounds(store, run_ids, iteration)
    start, end = range_ns
    if end <= start:
        raise QueryError(f"time range {start}..{end} ns is empty: its end must follow its start")
    return query_files.run(store, "timeline_range_stats", run_ids=list(bounds["run_id"]),
                t0s_ns=[int(r.start_ns + start) for r in bounds.itertuples()],
                t1s_ns=[int(r.start_ns + end) for r in bounds.itertuples()],
                steps=[None if r.iteration is None else int(r.iteration) for r in bounds.itertuples()],
                max_depth=6, limit=limit)
