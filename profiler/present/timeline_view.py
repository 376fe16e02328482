"""Timeline panels ▶ one Vega-Lite chart: a panel per run, stacked on one time axis.

Like Perfetto and Nsight Systems: the panels share their time axis, so zooming or panning one moves
them all (with "each run its own scale" every panel keeps its own axis). The mouse wheel scrolls the
page; Ctrl/⌘/Shift + wheel zooms, Shift + drag pans, a plain drag selects a range (the page lists
what ran inside it). Hovering or clicking an event draws flow arrows from the CPU op to its launch
and on to the kernel or copy it launched. Trace text (names) is data for Vega-Lite, never markup.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from profiler.analysis.reads import units
from profiler.present import style, timeline_steps

EVENT_KINDS = ["op", "runtime", "driver", "kernel", "memcpy", "memset", "merged"]
LANE_PX = 22            # per timeline row
WIDTH_PX = 900          # plot width of every panel (the lane names sit left of it)
LABEL_PX = 260          # room for lane names (Kineto names threads "thread 1262 (pt_autograd_0)")
ZOOM_WHEEL = "wheel![event.ctrlKey || event.metaKey || event.shiftKey]"
PAN_DRAG = "[mousedown[event.shiftKey], window:mouseup] > window:mousemove!"
BRUSH_DRAG = "[mousedown[!event.shiftKey], window:mouseup] > window:mousemove!"
TOOLTIP = [("name", "name"), ("what", "what"), ("duration", "duration"), ("starts", "starts at"),
           ("details", "details")]
GPU_KINDS = ("kernel", "memcpy", "memset")


def _text(v, fmt: str) -> str:
    return "" if v is None or v != v else fmt.format(v)


def _details(row: dict) -> str:
    """One readable line: the launch shape of a kernel, or how many events a merged mark holds."""
    if row["kind"] == "merged":
        return f"{row['events']:,} events shorter than a pixel"
    return (_text(row.get("grid"), "grid {}") + _text(row.get("block"), " · block {}")
            + _text(row.get("registers_per_thread"), " · {:.0f} regs")
            + _text(row.get("shared_mem_bytes"), " · {:,.0f} B shared")
            + _text(row.get("est_occupancy_pct"), " · reported occupancy {:.0f} %")
            + _text(row.get("launch_api"), " · via {}")).strip(" ·")


def _rows(marks: pd.DataFrame) -> list[dict]:
    """Marks as plain dicts, missing values None (a few thousand at most: column lists and loops
    beat pandas' per-row and per-call overhead several times over)."""
    columns = {}
    for name in marks.columns:
        col = marks[name]
        values = col.tolist()
        if col.hasnans:
            values = [None if gone else v for v, gone in zip(values, col.isna().tolist())]
        columns[name] = values
    return [dict(zip(columns, row)) for row in zip(*columns.values())]


def panel_data(marks: pd.DataFrame | list[dict], panel: int, search: str | None,
               part: str = "") -> list[dict]:
    """What a panel draws: lane, kind, start/end, readable tooltip text, ``hit`` (matches the
    search) and a ``link`` key that joins an op with the launches and GPU work it caused (its
    external id, prefixed by the run's panel, so a run's CPU and GPU views join; a key of its own
    for marks without one, ``part`` telling the views apart)."""
    needle = (search or "").lower()
    out = []
    for i, r in enumerate(_rows(marks) if isinstance(marks, pd.DataFrame) else marks):
        name = str(r["name"])
        ext = r.get("external_id")
        out.append({
            "lane": r["lane"], "kind": r["kind"], "start_us": r["start_us"], "end_us": r["end_us"],
            "name": name, "what": f"{r['kind']} on {r['lane']}",
            "duration": units.duration(r["dur_us"]), "starts": units.duration(r["start_us"]),
            "details": _details(r), "link": f"{panel}:{ext}" if ext is not None else f"{panel}{part}:m{i}",
            "hit": not needle or (needle in name.lower() and r["kind"] != "merged"),
            "label": name if r.get("labelled", True) and r["kind"] != "merged" else "",
        })
    return out


def flow_data(marks: pd.DataFrame | list[dict], panel: int) -> list[dict]:
    """Flow arrows as two-point lines: op ▶ launch (at the launch's start) and launch ▶ the kernel
    or copy with its correlation id. Rows: flow, order, start_us, lane, link, head."""
    rows = _rows(marks) if isinstance(marks, pd.DataFrame) else marks
    ops: dict = {}
    for r in rows:  # the innermost op of an external id
        if r["kind"] == "op" and r.get("external_id") is not None:
            if r["external_id"] not in ops or r["level"] > ops[r["external_id"]]["level"]:
                ops[r["external_id"]] = r
    gpu = {r["correlation"]: r for r in rows
           if r["kind"] in GPU_KINDS and r.get("correlation") is not None}
    out = []
    for i, call in enumerate(r for r in rows if r["kind"] in ("runtime", "driver")):
        link = f"{panel}:{call.get('external_id')}"
        ends = []
        if (op := ops.get(call.get("external_id"))) is not None:
            ends.append(("a", (call["start_us"], op["lane"]), (call["start_us"], call["lane"])))
        if call.get("correlation") is not None and (g := gpu.get(call["correlation"])) is not None:
            ends.append(("b", (call["start_us"], call["lane"]), (g["start_us"], g["lane"])))
            if call.get("external_id") is None:
                link = f"{panel}:{g.get('external_id')}"
        for tag, a, b in ends:
            for order, (x, lane) in enumerate((a, b)):
                out.append({"flow": f"{panel}:{tag}{i}", "order": order, "start_us": x,
                            "lane": lane, "link": link, "head": order == 1})
    return out


def lane_order(marks: pd.DataFrame) -> list[str]:
    """CPU op rows (by depth), then API rows, then GPU streams."""
    lanes = marks[["lane_group", "lane", "level"]].drop_duplicates("lane")
    return lanes.sort_values(["lane_group", "lane", "level"])["lane"].tolist()


def collapse_depths(marks: pd.DataFrame) -> pd.DataFrame:
    """CPU ops of a thread in one lane (``… · ops``), the deeper drawn over the outer ones; only
    the innermost ops (no op one level deeper starts inside them) keep their name inside the bar,
    so names never print over each other (hover tells every name)."""
    ops = marks["lane_group"] == 0
    if not ops.any():
        return marks
    lanes = marks["lane"].where(~ops, marks["lane"].str.replace(r" · depth \d+$", " · ops", regex=True))
    out = marks.assign(lane=lanes, labelled=~ops)
    for lane, rows in out[ops].groupby("lane", sort=False):
        for level, own in rows.groupby("level"):
            inner = np.sort(rows.loc[rows["level"] == level + 1, "start_us"].to_numpy())
            parents = (np.searchsorted(inner, own["end_us"].to_numpy(), "left")
                       > np.searchsorted(inner, own["start_us"].to_numpy(), "left"))
            out.loc[own.index, "labelled"] = ~parents
    return out.sort_values(["level"], kind="stable", ignore_index=True)


def _params(groups: list[list[str]], shared: bool, brush_us: tuple[float, float] | None,
            picked: str | None = None) -> list[dict]:
    """Zoom (scale-bound: one for all views on a shared scale, else one per run's views), the
    range brush (started at ``brush_us`` when the URL has one), and pick/hover of an event (the
    pick started at the event whose link is ``picked``: its flow drawn, its kernel outlined)."""
    def zoom(name, on):
        return {"name": name, "bind": "scales", "views": on,
                "select": {"type": "interval", "encodings": ["x"], "zoom": ZOOM_WHEEL,
                           "translate": PAN_DRAG}}
    views = [v for g in groups for v in g]
    zooms = [zoom("zoom", views)] if shared else [zoom(f"zoom_{i}", g) for i, g in enumerate(groups)]
    brush = {"name": "brush", "views": views, "select": {
        "type": "interval", "encodings": ["x"], "on": BRUSH_DRAG, "zoom": False,
        "translate": False, "clear": "dblclick", "mark": {"fillOpacity": 0}}}
    if brush_us:
        brush["value"] = {"x": list(brush_us)}
    pick = {"name": "pick", "views": views, "select": {"type": "point", "fields": ["link"], "on": "click"}}
    if picked:
        pick["value"] = [{"link": picked}]
    return zooms + [
        brush,
        pick,
        {"name": "hover", "views": views, "select": {"type": "point", "fields": ["link"],
                                                     "on": "mouseover", "clear": "mouseout"}},
    ]


PICKED = {"or": [{"param": "pick", "empty": False}, {"param": "hover", "empty": False}]}
# the dragged range, drawn in every view (Vega-Lite draws a brush only in the view it was made in)
RANGE_LAYER = {
    "data": {"values": [{}]},
    "transform": [{"calculate": "brush && brush.start_us ? brush.start_us[0] : null", "as": "r0"},
                  {"calculate": "brush && brush.start_us ? brush.start_us[1] : null", "as": "r1"},
                  {"filter": "datum.r0 != null"}],
    "mark": {"type": "rect", "clip": True, "color": style.HIGHLIGHT, "opacity": 0.12,
             "stroke": style.HIGHLIGHT, "strokeOpacity": 0.6},
}
LABEL_MIN_PX = 24  # narrower bars carry no name (hover still tells it)


def _x_scale(view: int, shared: bool) -> str:
    """The Vega scale name of a view's x axis (Vega-Lite names a concat's views concat_<i>)."""
    return "x" if shared else f"concat_{view}_x"


def _names_layer(x: dict, y: dict, scale: str) -> dict:
    """Slice names inside the bars wide enough to hold them (cut to the bar's visible width)."""
    left = f"max(0, scale('{scale}', datum.start_us))"
    right = f"min(width, scale('{scale}', datum.end_us))"
    return {"transform": [{"filter": "datum.label != ''"}],
            "mark": {"type": "text", "align": "left", "baseline": "middle", "clip": True,
                     "fontSize": 11, "color": "#1a1a1a",
                     "x": {"expr": f"{left} + 3"},
                     "limit": {"expr": f"max(0, {right} - {left} - 6)"},
                     "opacity": {"expr": f"{right} - {left} >= {LABEL_MIN_PX} ? 1 : 0"}},
            "encoding": {"y": y, "text": {"field": "label", "type": "nominal"}}}


def _panel(marks: pd.DataFrame, view: int, run: int, title: str, subtitle: str, domain,
           search: str | None, shared: bool, step: str, step_end_us: float, axis: bool,
           lanes: list[str] | None = None, steps: pd.DataFrame | None = None) -> dict:
    """One view of a run: bars with their names, flow lines with arrow heads for the picked or
    hovered event, the dragged range, and the step's end when it lies in the window. A view of
    the whole trace gets its ``lanes`` (fixed: its height never changes with the window) and
    marks its ``steps`` instead."""
    whole = lanes is not None
    lanes = lanes if whole else lane_order(marks)
    rows = _rows(marks)
    data = panel_data(rows, run, search, part=f"v{view}")
    flows = flow_data(rows, run)
    x = {"field": "start_us", "type": "quantitative", "title": None,
         "scale": {"domain": list(domain), "nice": False, "zero": False},
         "axis": ({"labelExpr": style.DURATION_LABEL, "labelFlush": True, "orient": "top"}
                  if axis else None)}
    y = {"field": "lane", "type": "nominal", "sort": lanes, "title": None,
         "axis": {"labelLimit": LABEL_PX - 10, "labelOverlap": False, "minExtent": LABEL_PX},
         **({"scale": {"domain": lanes}} if whole else {})}
    kinds = style.category_colours(EVENT_KINDS)
    bars = {
        "name": f"panel_{view}",
        "mark": {"type": "bar", "clip": True},
        "encoding": {
            "x": x, "x2": {"field": "end_us"}, "y": y,
            "color": {"field": "kind", "type": "nominal", "scale": kinds, "title": "event",
                      "legend": {"orient": "top", "direction": "horizontal"}},
            "opacity": {"condition": {"test": "datum.hit", "value": 1.0}, "value": 0.15},
            "stroke": {"condition": {"test": PICKED, "value": style.HIGHLIGHT}, "value": None},
            "strokeWidth": {"condition": {"test": PICKED, "value": 2.5}, "value": 0},
            "tooltip": [{"field": c, "type": "nominal", "title": t} for c, t in TOOLTIP],
        },
    }
    names = _names_layer(x, y, _x_scale(view, shared))
    flow_values = {"values": flows}
    line = {"data": flow_values, "transform": [{"filter": PICKED}],
            "mark": {"type": "line", "clip": True, "strokeWidth": 1.5, "color": style.HIGHLIGHT},
            "encoding": {"x": x, "y": y, "detail": {"field": "flow", "type": "nominal"},
                         "order": {"field": "order", "type": "quantitative"}}}
    head = {"data": flow_values, "transform": [{"filter": PICKED}, {"filter": "datum.head"}],
            "mark": {"type": "point", "shape": "triangle-down", "filled": True, "size": 70,
                     "clip": True, "color": style.HIGHLIGHT, "opacity": 1},
            "encoding": {"x": x, "y": y}}
    ranged = {**RANGE_LAYER, "encoding": {"x": {**x, "field": "r0"}, "x2": {"field": "r1"}}}
    layers = [bars, names, ranged, line, head]
    if whole:
        layers = [bars, names, ranged, line, head,
                  *timeline_steps.mark_layers(x, steps, _x_scale(view, shared)),
                  timeline_steps.band_layer(x, steps)]
    elif domain[0] <= step_end_us <= domain[1] or not shared:
        layers += timeline_steps.end_layers(x, step, step_end_us)
    return {"title": {"text": title, "anchor": "start", **({"subtitle": subtitle} if subtitle else {})},
            "width": WIDTH_PX, "height": LANE_PX * max(len(lanes), 1),
            "data": {"values": data}, "layer": layers}  # bars and their names share the data


def event_link(panels: list, run_id: str, external_id: int) -> str | None:
    """The ``link`` key (panel_data) of the event of ``run_id`` with this external id, as the
    spec of ``panels`` draws it; None when that run's panel does not hold it."""
    for i, p in enumerate(panels):
        if p[0] == run_id:
            hits = [r["external_id"] for r in _rows(p[3]) if r.get("external_id") is not None
                    and r["external_id"] == external_id]
            return f"{i}:{hits[0]}" if hits else None
    return None


def _lanes(panel) -> pd.DataFrame | None:
    """The whole trace's lanes of a panel (``Panel.lanes``), None for a one-step panel."""
    return panel[6] if len(panel) > 6 else None


def timeline_spec(panels: list, titles: list[str], subtitles: list[str], shared: bool,
                  search: str | None = None, collapse: bool = False,
                  brush_us: tuple[float, float] | None = None, picked: str | None = None) -> dict:
    """Every run in one Vega-Lite spec (a plain dict: Altair's validation of a layered concat
    costs ~0.5 s). ``panels`` are ``timeline_queries.timeline_panels`` entries that have marks. The GPU
    lanes of all runs come first, next to each other, then each run's CPU lanes (with
    ``collapse``, one lane of ops per thread). ``shared``: one x scale (linked zoom), else each
    run its own (its GPU and CPU views zoom together). ``brush_us``: a range to start with;
    ``picked``: the link of an event to start picked (``event_link``)."""
    parts = []  # (run index, GPU?, marks, lanes of a whole-trace view)
    for i, p in enumerate(panels):
        marks = collapse_depths(p[3]) if collapse else p[3]
        gpu = marks["lane_group"] == 2
        for on, own in ((True, marks[gpu]), (False, marks[~gpu])):
            lanes = None if _lanes(p) is None else timeline_steps.fixed_lanes(_lanes(p), collapse, on)
            if (own.empty and lanes is None) or lanes == []:
                continue
            parts.append((i, on, own, lanes))
    order = [pt for pt in parts if pt[1]] + [pt for pt in parts if not pt[1]]
    views, groups = [], [[] for _ in panels]
    for k, (i, gpu, marks, lanes) in enumerate(order):
        p = panels[i]
        axis = not shared or k == 0 or (not gpu and order[k - 1][1])
        # GPU views: one title line (run, step), so the runs' GPU lanes sit close together
        title = f"{titles[i]} · {p[1]} · GPU" if gpu else f"{titles[i]} · CPU"
        views.append(_panel(marks.reset_index(drop=True), k, i, title, "" if gpu else subtitles[i],
                            p[2], search, shared, p[1], p[4], axis, lanes,
                            p[5] if lanes is not None else None))
        groups[i].append(f"panel_{k}")
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v6.json",
        "params": _params([g for g in groups if g], shared, brush_us, picked),
        "vconcat": views, "spacing": 10, "padding": {"left": 5, "top": 5, "right": 28, "bottom": 5},
        "resolve": {"scale": {"x": "shared" if shared else "independent", "y": "independent",
                              "color": "shared"}},
        "config": style.CONFIG, "usermeta": style.EMBED,
    }
