"""The steps on the timeline: where a one-step view's step ends (a dashed rule with its name and
length), whether the runs' steps differ too much for a shared scale, and the whole trace: every step of a run marked on its views (a shaded band for
every other step, a dashed rule where each starts, its name and length at the top), and the
lanes of the whole trace, fixed whatever the window, so zooming never changes the chart's height.
Step names are trace text: data for Vega-Lite, never markup."""
from __future__ import annotations

import pandas as pd

from profiler.analysis.reads import units

SCALE_HINT_RATIO = 100  # runs whose iterations differ more than this read better on their own scales
STEP_BAND = {"type": "rect", "clip": True, "color": "#7f7f7f", "opacity": 0.09}
STEP_RULE = {"type": "rule", "clip": True, "color": "#444", "strokeDash": [4, 3], "strokeWidth": 1}


def step_values(steps: pd.DataFrame | None) -> list[dict]:
    """A whole-trace panel's steps (name, start_us, end_us) as chart rows: ``odd`` shades every
    other one, ``text`` is the name and length the label shows."""
    if steps is None or steps.empty:
        return []
    return [{"start_us": float(s), "end_us": float(e), "odd": i % 2 == 1,
             "text": f"{n} · {units.duration(float(e) - float(s))}"}
            for i, (n, s, e) in enumerate(zip(steps["name"], steps["start_us"], steps["end_us"]))]


def band_layer(x: dict, steps: pd.DataFrame | None) -> dict:
    """Every other step shaded over the whole height (drawn first, under the events)."""
    return {"data": {"values": step_values(steps)}, "transform": [{"filter": "datum.odd"}],
            "mark": STEP_BAND, "encoding": {"x": x, "x2": {"field": "end_us"}}}


def mark_layers(x: dict, steps: pd.DataFrame | None, scale: str) -> list[dict]:
    """A dashed rule where each step starts and its name and length at the top, cut to the
    step's visible width (a step narrower than the name shows none: hover its band's events)."""
    data = {"values": step_values(steps)}
    left = f"max(0, scale('{scale}', datum.start_us))"
    right = f"min(width, scale('{scale}', datum.end_us))"
    label = {"type": "text", "clip": True, "align": "left", "baseline": "top", "y": 1,
             "fontSize": 11, "color": "#444", "fontWeight": "bold", "x": {"expr": f"{left} + 4"},
             "limit": {"expr": f"max(0, {right} - {left} - 8)"},
             "opacity": {"expr": f"{right} - {left} >= 40 ? 1 : 0"}}
    return [{"data": data, "mark": STEP_RULE, "encoding": {"x": x}},
            {"data": data, "mark": label, "encoding": {"text": {"field": "text", "type": "nominal"}}}]


def fixed_lanes(lanes: pd.DataFrame, collapse: bool, gpu: bool) -> list[str]:
    """The lanes of one view of a whole-trace panel (its GPU streams, or its CPU lanes: ops by
    depth, or one lane per thread with ``collapse``, then API calls), in the order the views draw
    them, whatever the window shows."""
    own = lanes[(lanes["lane_group"] == 2) == gpu]
    if collapse:
        ops = own["lane_group"] == 0
        own = own.assign(lane=own["lane"].where(
            ~ops, own["lane"].str.replace(r" · depth \d+$", " · ops", regex=True)))
    own = own.drop_duplicates("lane")
    return own.sort_values(["lane_group", "lane", "level"])["lane"].tolist()


def scale_hint(panels: list) -> float | None:
    """How many times longer the longest panel's iteration is than the shortest (None when
    the ratio is below ``SCALE_HINT_RATIO``): a shared axis squeezes the short ones to nothing."""
    spans = [float(p[3]["end_us"].max()) for p in panels if not p[3].empty]
    spans = [s for s in spans if s > 0]
    if len(spans) < 2 or max(spans) / min(spans) <= SCALE_HINT_RATIO:
        return None
    return max(spans) / min(spans)


def end_layers(x: dict, step: str, step_end_us: float) -> list[dict]:
    """Where the step ends: a dashed rule labelled with the step's name and length; what lies
    past it is the step's own GPU work still running (the next step's events are not drawn)."""
    text = f"{step} ends at {units.duration(step_end_us)} · later steps not drawn"
    data = {"values": [{"start_us": step_end_us, "text": text}]}
    enc = {"x": x}
    return [{"data": data, "mark": {"type": "rule", "clip": True, "color": "#444",
                                    "strokeDash": [4, 3], "strokeWidth": 1.5}, "encoding": enc},
            {"data": data, "mark": {"type": "text", "clip": True, "align": "left", "dx": 4,
                                    "y": 0, "baseline": "top", "fontSize": 11, "color": "#444",
                                    "fontWeight": "bold"},
             "encoding": {**enc, "text": {"field": "text", "type": "nominal"}}}]
