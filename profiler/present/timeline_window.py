"""The timeline's time window and its notes: the window (ns from the start of the iteration, or of
the whole trace) moved by the page's buttons, the chart's wheel zoom and dragged range read back
from Streamlit's selection state, why a panel is empty, and a dragged range's table."""
from __future__ import annotations

import pandas as pd

from profiler.analysis.reads import units

def zoom_window(window: tuple[int, int], extent: int, factor: float) -> tuple[int, int]:
    """``window`` scaled by ``factor`` about its centre (0.5: zoom in twice), kept in [0, extent]."""
    start, end = window
    half = max((end - start) * factor / 2, 500)  # no closer than 1 µs across
    centre = (start + end) / 2
    return _clamp(int(centre - half), int(centre + half), extent)


def pan_window(window: tuple[int, int], extent: int, fraction: float) -> tuple[int, int]:
    """``window`` moved by ``fraction`` of its width (negative: earlier), kept in [0, extent]."""
    shift = int((window[1] - window[0]) * fraction)
    return _clamp(window[0] + shift, window[1] + shift, extent)


def _clamp(start: int, end: int, extent: int) -> tuple[int, int]:
    width = min(end - start, extent)
    start = min(max(start, 0), extent - width)
    return start, start + width


def brushed_ns(selection, name: str = "brush") -> tuple[int, int] | None:
    """The range dragged on the chart (Streamlit's selection state; ``name="zoom"``: the range
    the wheel zoom and pan show), as ns from the iteration start, or None when there is none."""
    brush = (selection or {}).get(name) or {}
    values = brush.get("start_us")
    if not values or len(values) != 2:
        return None
    start, end = sorted(float(v) for v in values)
    return (int(start * 1e3), int(end * 1e3)) if end > start else None


def empty_note(label: str, panel) -> str:
    """Why a run's panel is empty: its step ended before the window, or nothing ran in it."""
    lo, hi = panel.domain
    if lo >= panel.step_end_us:
        return (f"{label}: {panel.step} ends at {units.duration(panel.step_end_us)}, before this "
                f"window ({units.duration(lo)} – {units.duration(hi)}); later steps are not drawn.")
    return f"{label}: {panel.step} has no events in this window."


def range_table(stats: pd.DataFrame, labels: dict[str, str]) -> pd.DataFrame:
    """``queries.timeline_range_stats`` for the page: run label, readable total and self time."""
    return stats.assign(run=stats["run_id"].map(labels).fillna(stats["run_id"]),
                        total=(stats["total_ns"] / 1e3).map(units.duration),
                        self_time=(stats["self_ns"] / 1e3).map(units.duration),
                        total_us=stats["total_ns"] / 1e3, self_us=stats["self_ns"] / 1e3)
