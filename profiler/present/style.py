"""One visual language for every chart: colours, units, names and type sizes (presentation layer).

A variant keeps one colour on every page and in every selection: ``variant_colour`` maps each
variant of ``capture/variants.py`` to a fixed colour of ``VARIANT_COLOURS`` (a run of a variant
the registry no longer lists, or an upload, gets one of ``FALLBACK_COLOURS`` by a stable hash of
its variant or run id); a cold run of a variant is a lighter tint of its colour. Categories (event kinds, API kinds, CPU/GPU
metrics, cold/warm) have fixed colours of their own, drawn from a different palette than runs, so a
colour never means a run on one page and an API on the next. Durations read in the unit that fits
(ns, µs, ms, s). C++ kernel templates get a short name for axes; the full name stays in tooltips
and tables.
"""
from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

import pandas as pd

from profiler.parse import demangled

# Altair validates a chart against the Vega-Lite schema when it is turned into a spec (once per
# chart drawn); in its debug mode it also validated every layer, encoding and copy as it was
# built, which cost pages 0.1-0.2 s of a ~1 s budget for the same check done again. Altair itself
# loads on first use: the runs page, the first a new server draws, has no chart (~0.26 s of import).
if TYPE_CHECKING:
    import altair as alt


def altair():
    """The altair module, its debug mode off (above). Every chart module takes Altair from here."""
    import altair as alt

    alt.utils.schemapi.disable_debug_mode()
    return alt

# variants: one strong hue each, every pair at least 25 CIELAB ΔE apart (tests/test_colours.py)
VARIANT_COLOURS = {
    "sdpa_flash": "#0072b2", "sdpa_cudnn": "#009e73", "sdpa_math": "#e69f00", "naive": "#d55e00",
    "naive_inplace": "#8c564b", "naive_compiled": "#f781bf", "sdpa_efficient": "#56b4e9",
    "sdpa_auto": "#17becf", "flex": "#9467bd", "flashinfer_fa2": "#bcbd22",
    "flashinfer_fa3": "#1b3a8c", "flashinfer_decode": "#2ca02c", "flashinfer_decode_tc": "#e31a1c",
    "flash_attn_4": "#c2185b", "hub_flash": "#4d4d4d",
}
# uploads and unknown variants: picked by a stable hash, apart from the variant colours
FALLBACK_COLOURS = ["#7b4173", "#637939", "#ad494a", "#8c6d31", "#a55194", "#e7ba52", "#31a354"]
RUN_COLOURS = [*VARIANT_COLOURS.values(), *FALLBACK_COLOURS]
COLD_TINT = 0.45      # a cold run: its variant's colour mixed with this much white
# categories: fixed per value, muted tones apart from the run colours
CATEGORY_COLOURS = {
    # timeline event kinds
    "op": "#6b8fb5", "runtime": "#c9a227", "driver": "#b5651d", "kernel": "#3a9e5f",
    "memcpy": "#8e6bbf", "memset": "#b07aa1", "merged": "#a0a0a0",
    # CPU / GPU metrics
    "CPU ops (self)": "#6b8fb5", "launch/runtime API": "#c9a227", "GPU kernels": "#3a9e5f",
    "GPU memcpy/memset": "#8e6bbf", "CPU time per iteration": "#6b8fb5",
    "GPU time per iteration": "#3a9e5f",
    # cold / warm
    "CPU, first iteration": "#b5651d", "CPU, later (mean)": "#6b8fb5", "GPU kernels (mean)": "#3a9e5f",
    "cold": "#b5651d", "warm": "#6b8fb5",
}
LABEL_GREY = "#808495"  # text drawn as a mark (bar labels): readable on light and dark themes alike
HIGHLIGHT = "#e4002b"  # the selected event, its flows and its partners
FONT_PX = 12          # axis and legend labels (at least 11 px everywhere)
TITLE_PX = 13


CONFIG = {  # the same, as a Vega-Lite config for specs written as dicts
    "axis": {"labelFontSize": FONT_PX, "titleFontSize": FONT_PX},
    "legend": {"labelFontSize": FONT_PX, "titleFontSize": FONT_PX, "labelLimit": 420},
    "header": {"labelFontSize": TITLE_PX, "titleFontSize": TITLE_PX},
    "title": {"fontSize": TITLE_PX, "subtitleFontSize": FONT_PX},
}
# vega-embed reads this from the spec: SVG keeps marks and labels inspectable (and crisp)
EMBED = {"embedOptions": {"renderer": "svg"}}


def configure(chart):
    """Readable type for a chart (and every view inside a concat/facet)."""
    return chart.properties(usermeta=EMBED).configure_axis(labelFontSize=FONT_PX, titleFontSize=FONT_PX).configure_legend(
        labelFontSize=FONT_PX, titleFontSize=FONT_PX, labelLimit=420).configure_header(
        labelFontSize=TITLE_PX, titleFontSize=TITLE_PX).configure_title(fontSize=TITLE_PX)


def _stable_pick(key: str) -> str:
    digest = hashlib.sha1(key.encode("utf-8")).digest()  # not hash(): salted per process
    return FALLBACK_COLOURS[int.from_bytes(digest[:4], "big") % len(FALLBACK_COLOURS)]


def _tint(colour: str, white: float) -> str:
    rgb = [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(c + (255 - c) * white):02x}" for c in rgb)


def variant_colour(variant: str | None, cold: bool = False, run_id: str = "") -> str:
    """The one colour of a variant on every page; a cold run's is a lighter tint of it. A variant
    outside the palette gets a fallback colour by a stable hash of its name; a run without a
    variant (an upload) by a stable hash of its run id."""
    if variant and variant in VARIANT_COLOURS:
        colour = VARIANT_COLOURS[variant]
    else:
        colour = _stable_pick(str(variant) if variant else str(run_id))
    return _tint(colour, COLD_TINT) if cold else colour


class RunLabels(dict):
    """{run_id: label}, and each run's colour (``variant_colour``) in ``colours``."""

    def __init__(self, labels: dict[str, str], colours: dict[str, str]):
        super().__init__(labels)
        self.colours = dict(colours)


def run_labels(frame: pd.DataFrame) -> RunLabels:
    """``run_labels`` DataFrame (run_id, label, variant, cold) ▶ labels with their colours."""
    colours = {}
    for row in frame.itertuples(index=False):
        cold = bool(getattr(row, "cold", False)) if pd.notna(getattr(row, "cold", None)) else False
        variant = getattr(row, "variant", None)
        colours[row.run_id] = variant_colour(variant if isinstance(variant, str) else None, cold, row.run_id)
    return RunLabels(dict(zip(frame["run_id"], frame["label"])), colours)


def run_colour(labels: dict[str, str], run_id: str) -> str:
    """The colour of a run of ``labels``: its variant's (``RunLabels``), else by its run id."""
    colours = getattr(labels, "colours", {})
    return colours.get(run_id) or _stable_pick(str(run_id))


def run_scale(labels: dict[str, str], present=None) -> alt.Scale:
    """Colour scale of run labels, each run in its variant's colour (the same on every page and
    in every selection). ``present``: the labels (or run ids) drawn; the legend lists only those."""
    keep = None if present is None else set(present)
    pairs = [(label, run_colour(labels, run)) for run, label in labels.items()
             if keep is None or label in keep or run in keep]
    names = list(dict.fromkeys(label for label, _ in pairs))
    colour = dict(pairs)
    return altair().Scale(domain=names, range=[colour[n] for n in names])


LEGEND_ROWS = 8  # entries one right-hand legend column holds beside a chart ~320 px tall


def side_legend(entries: int, title: str | None = None) -> alt.Legend:
    """A legend right of the chart listing every entry in full, in as many columns as it takes
    to stay within the chart's height (a taller one is cut off by the chart's frame)."""
    return altair().Legend(orient="right", title=title, labelLimit=420, symbolLimit=0,
                      columns=max(1, -(-entries // LEGEND_ROWS)))


def series_scale(series_variant: dict[str, str]) -> alt.Scale:
    """Colour scale of named series (a sweep's lines) each drawn in its variant's colour."""
    names = sorted(series_variant)
    return altair().Scale(domain=names, range=[variant_colour(series_variant[n]) for n in names])


def category_colours(values) -> dict:
    """Vega-Lite colour scale of categories with their fixed colours (unknown ones grey)."""
    values = list(dict.fromkeys(values))
    return {"domain": values, "range": [CATEGORY_COLOURS.get(v, "#7f7f7f") for v in values]}


def category_scale(values) -> alt.Scale:
    """``category_colours`` as an Altair scale."""
    return altair().Scale(**category_colours(values))


# Vega expression: units.duration's units for axis labels (the value is in µs)
DURATION_LABEL = (
    "abs(datum.value) >= 1e6 ? format(datum.value / 1e6, '.4~r') + ' s' : "
    "abs(datum.value) >= 1e3 ? format(datum.value / 1e3, '.4~r') + ' ms' : "
    "datum.value == 0 ? '0' : abs(datum.value) >= 1 ? format(datum.value, '.4~r') + ' µs' : "
    "format(datum.value * 1e3, '.4~r') + ' ns'")

SHORT_NAME_CHARS = 56  # a kernel name on a chart axis or beside the full name in a table


def short_names(names: pd.Series) -> pd.Series:
    """The one kernel-name shortener (``demangled.short``: the function and the template arguments
    that fit, no namespaces, return type or parameters) of each name, at most SHORT_NAME_CHARS,
    made unique: names that shorten alike get ' #2', ' #3' in order."""
    distinct = pd.Series(pd.unique(names.astype(str)))
    shorts = distinct.map(lambda name: demangled.short(name, SHORT_NAME_CHARS))
    rank = shorts.groupby(shorts).cumcount()
    unique = shorts.where(rank == 0, shorts + " #" + (rank + 1).astype(str))
    return names.astype(str).map(dict(zip(distinct, unique)))
