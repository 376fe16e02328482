"""DataFrame ▶ plain-language sentences for the analysis pages (presentation layer).

What a number means is said here, once: the timeline panel caption, the one-line summary of an
aligned kernel sequence, and the cuDNN story of the CPU-cost page (a cold first call builds an
execution plan; warm calls cost CPU time per call that may exceed the GPU work).
"""
from __future__ import annotations

import pandas as pd

from profiler.analysis.reads import units
from profiler.analysis.reads.queries import SHAPE_KEYS
from profiler.parse import demangled
from profiler.present.markup import code, md


def timeline_caption(marks: pd.DataFrame, step: str, search: str | None = None) -> str:
    """What a panel shows: the iteration, how many marks, whether some were left out, and how
    many match the search. Plain text (a chart subtitle, never Markdown)."""
    if marks.empty:
        return f"{step}: no events in this window."
    shown, total = len(marks), int(marks["marks_before_cap"].iloc[0])
    merged = int((marks["kind"] == "merged").sum())
    text = f"{step}: {shown:,} marks ({merged:,} merge events shorter than a pixel)"
    if total > shown:
        text += f"; the {total - shown:,} shortest of {total:,} are left out, zoom in to see them"
    if search:
        hits = marks["name"].astype(str).str.contains(search, case=False, regex=False)
        text += f"; {int((hits & (marks['kind'] != 'merged')).sum()):,} match “{search}”"
    return text + "."


def panel_caption(panel, search: str | None = None) -> str:
    """A timeline panel's caption: ``trace_caption`` for a whole-trace panel (it has ``steps``),
    else ``timeline_caption``."""
    if panel.steps is not None:
        return trace_caption(panel.marks, panel.steps, search)
    return timeline_caption(panel.marks, panel.step, search)


def trace_caption(marks: pd.DataFrame, steps: pd.DataFrame | None, search: str | None = None) -> str:
    """What a whole-trace panel shows: its steps, how many events its marks draw, how many of
    them (shorter than a pixel) were merged into how many marks, and whether the cap left marks
    out. Plain text (a chart subtitle, never Markdown)."""
    n = 0 if steps is None else len(steps)
    named = f" ({steps['name'].iloc[0]} – {steps['name'].iloc[-1]})" if n > 1 else ""
    text = f"Whole trace, {n:,} step{'s' if n != 1 else ''}{named}"
    if marks.empty:
        return text + ": no events in this window."
    shown, total = len(marks), int(marks["marks_before_cap"].iloc[0])
    merged = marks["kind"] == "merged"
    text += (f": {shown:,} marks draw {int(marks['events'].sum()):,} events; "
             f"{int(marks.loc[merged, 'events'].sum()):,} shorter than a pixel are merged into "
             f"{int(merged.sum()):,} grey marks")
    if total > shown:
        text += f"; the {total - shown:,} shortest of {total:,} marks are left out, zoom in to see them"
    if search:
        hits = marks["name"].astype(str).str.contains(search, case=False, regex=False)
        text += f"; {int((hits & ~merged).sum()):,} match “{search}”"
    return text + "."


def alignment_summary(aligned: pd.DataFrame, label_a: str, label_b: str) -> str:
    """One sentence: how many aligned kernels match and which appear in one run only."""
    if aligned.empty:
        return "Neither run launched GPU work in this iteration."
    same = int(aligned["status"].isin(["same", "same family"]).sum())
    replaced = int((aligned["status"] == "replaced").sum())
    parts = [f"Kernels in both runs (same job): {same}; replaced by another kind of kernel: "
             f"{replaced}."]
    for status, label, column in (("only in a", label_a, "name_a"), ("only in b", label_b, "name_b")):
        names = aligned.loc[aligned["status"] == status, column].value_counts()
        if not names.empty:
            listed = ", ".join(f"`{code(demangled.short(n, 60))}` ×{c}" for n, c in names.head(5).items())
            more = f" and {len(names) - 5} more" if len(names) > 5 else ""
            parts.append(f"Only in **{md(label)}**: {listed}{more}.")
    return " ".join(parts)


# ── the cuDNN story (plain words from the selected runs' numbers) ────────────────────────────

def cudnn_story(cudnn: pd.DataFrame, shapes: pd.DataFrame, labels: dict[str, str]) -> list[str]:
    """One paragraph per run that calls cuDNN attention (``queries.cudnn_op_time`` rows; ``shapes``
    from ``queries.run_shapes``): what a cold first call costs and why, per-call CPU vs GPU when
    warm, and the warm run of the same shape next to a cold one. An empty list when no run calls
    it (cuDNN convolutions or batch norms are not this story)."""
    if cudnn.empty:  # no cuDNN attention call: the story does not apply
        return []
    calls = {run: _cudnn_calls(rows) for run, rows in cudnn.groupby("run_id", sort=False)}
    info = shapes.set_index("run_id")
    return [_cold_paragraph(run, calls, info, labels) if _is_cold(info, run)
            else _warm_paragraph(labels.get(run, run), *calls[run]) for run in calls]


def _shape(info: pd.DataFrame, run: str) -> tuple[str, ...]:
    return tuple(str(v) for v in info.loc[run, SHAPE_KEYS])    # str: NA never equals itself


def _is_cold(info: pd.DataFrame, run: str) -> bool:
    cold = info.loc[run, "cold"] if run in info.index else None
    return bool(cold) if not pd.isna(cold) else False


def _cudnn_calls(rows: pd.DataFrame) -> tuple[float, float | None, float]:
    """(first call CPU µs, later calls' mean CPU µs or None, GPU µs per call)."""
    rows = rows.sort_values("iteration")
    cpu = rows["cudnn_cpu_us"] / rows["cudnn_calls"]
    later = cpu.iloc[1:].mean() if len(cpu) > 1 else None
    return cpu.iloc[0], later, (rows["cudnn_kernel_us"] / rows["cudnn_calls"]).mean()


def _warm_paragraph(label: str, first: float, later: float | None, kernel: float) -> str:
    per_call = later if later is not None else first
    text = f"**{md(label)}**: a cuDNN attention call costs {units.duration(per_call)} of CPU time"
    if later is not None and first > 1.5 * later:
        text += f" (the first profiled call {units.duration(first)})"
    text += f" for {units.duration(kernel)} of GPU work. "
    if per_call > kernel:
        return text + ("The CPU needs longer to issue a call than the GPU needs to run it: unless "
                       "the CPU runs ahead (more work per call, a CUDA graph, or a path with less "
                       "per-call work such as flash), the GPU waits between calls. The run's "
                       "verdict above says whether it does.")
    return text + ("The GPU work outweighs the CPU work per call, so the CPU cost stays hidden "
                   "as long as the CPU keeps ahead of the GPU.")


def _cold_paragraph(run: str, calls: dict, info: pd.DataFrame, labels: dict[str, str]) -> str:
    first, _, kernel = calls[run]
    text = (f"**{md(labels.get(run, run))}** (cold: the first call of this shape in the process): "
            f"the cuDNN call took {units.duration(first)} of CPU time for {units.duration(kernel)} of GPU work. cuDNN "
            "spends it building and compiling an execution plan for the new shape. The plan is "
            "cached, so this is paid once per shape and process: it matters for short jobs, for "
            "many distinct shapes (varying sequence lengths) and for a service's first request, "
            "and a warm-up call hides it.")
    shape = _shape(info, run)
    warm = [w for w in calls if w != run and not _is_cold(info, w) and _shape(info, w) == shape]
    if warm:
        _, later, _ = calls[warm[0]]
        per_call = later if later is not None else calls[warm[0]][0]
        text += (f" The warm run of this shape ({md(labels.get(warm[0], warm[0]))}) needs "
                 f"{units.duration(per_call)} per call, {first / per_call:,.0f}× less.")
    return text
