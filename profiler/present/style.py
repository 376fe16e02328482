"""One visual language for every chart: colours, units, names and type sizes (presentation layer).

A run keeps one colour on every page: runs are coloured by their position in the selected runs
(the URL's ``runs``), which every page shares. Categories (event kinds, API kinds, CPU/GPU
metrics, cold/warm) have fixed colours of their own, drawn from a different palette than runs, so a
colour never means a run on one page and an API on the next. Durations read in the unit that fits
(ns, µs, ms, s). C++ kernel templates get a short name for axes; the full name stays in tooltips
and tables.
"""
from __future__ import annotations

import math
import re

import altair as alt
import pandas as pd

# runs: strong, distinct hues (Okabe–Ito order, then Tableau's extras)
RUN_COLOURS = ["#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442",
               "#7f7f7f", "#9467bd", "#8c564b"]
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
HIGHLIGHT = "#e4002b"  # the selected event, its flows and its partners
FONT_PX = 12          # axis and legend labels (at least 11 px everywhere)
TITLE_PX = 13
LOG_SPAN = 100        # values spanning more than this factor get a log scale


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


def run_scale(labels: dict[str, str]) -> alt.Scale:
    """Colour scale of run labels: the n-th selected run has the n-th colour on every page."""
    names = list(dict.fromkeys(labels.values()))
    return alt.Scale(domain=names, range=[RUN_COLOURS[i % len(RUN_COLOURS)] for i in range(len(names))])


def category_colours(values) -> dict:
    """Vega-Lite colour scale of categories with their fixed colours (unknown ones grey)."""
    values = list(dict.fromkeys(values))
    return {"domain": values, "range": [CATEGORY_COLOURS.get(v, "#7f7f7f") for v in values]}


def category_scale(values) -> alt.Scale:
    """``category_colours`` as an Altair scale."""
    return alt.Scale(**category_colours(values))


def value_scale(values: pd.Series) -> alt.Scale:
    """Linear, or logarithmic when the positive values span more than ``LOG_SPAN``×."""
    pos = pd.to_numeric(values, errors="coerce")
    pos = pos[pos > 0]
    if len(pos) and pos.max() / pos.min() > LOG_SPAN:
        return alt.Scale(type="log")
    return alt.Scale(zero=True)


def is_log(scale: alt.Scale) -> bool:
    return scale.to_dict().get("type") == "log"


def duration(us: float | None) -> str:
    """A duration in microseconds, in the unit that reads best: '850 ns', '12.3 µs', '1.05 s'."""
    if us is None or (isinstance(us, float) and math.isnan(us)):
        return "—"
    a = abs(us)
    for limit, div, unit in ((1e6, 1e6, "s"), (1e3, 1e3, "ms"), (1, 1, "µs")):
        if a >= limit:
            return f"{us / div:.3g} {unit}"
    return f"{us * 1e3:.3g} ns" if us else "0"


# Vega expression: the same units for axis labels (the value is in µs)
DURATION_LABEL = (
    "abs(datum.value) >= 1e6 ? format(datum.value / 1e6, '.4~r') + ' s' : "
    "abs(datum.value) >= 1e3 ? format(datum.value / 1e3, '.4~r') + ' ms' : "
    "datum.value == 0 ? '0' : abs(datum.value) >= 1 ? format(datum.value, '.4~r') + ' µs' : "
    "format(datum.value * 1e3, '.4~r') + ' ns'")

_TEMPLATE = re.compile(r"<[^<>]*>")
_CALL = re.compile(r"^[\w:]+\(.*\)$")  # ncclKernel_…_int8_t(ncclDevComm*, …): a parameter list
_ONE_ARG = re.compile(r"^(?:void\s+)?(?:[\w:]+::)?(\w+)<(\w+)>\(")


def short_name(name: str, limit: int = 56) -> str:
    """A readable name for a C++ kernel: no return type, template arguments folded to ``<…>``,
    no parameter list, no namespaces: ``void at::native::(anonymous namespace)::
    flash_fwd_kernel<Traits<…>, true>(Params)`` ▶ ``flash_fwd_kernel<…>``. Other names (Memcpy,
    Triton, cuDNN) are kept, cut at ``limit`` characters."""
    text = str(name).strip()
    folded = text.replace("(anonymous namespace)::", "")
    if one := _ONE_ARG.match(folded):  # cutlass::Kernel2<cutlass_80_…_tn_align8>(…): keep the argument
        return _cut(f"{one[1]}<{one[2]}>", limit)
    while (nxt := _TEMPLATE.sub("\x00", folded)) != folded:
        folded = nxt
    folded = folded.replace("\x00", "<…>")
    if "::" in folded or "<" in folded or folded.startswith("void ") or _CALL.match(folded):
        folded = folded.split("(", 1)[0].strip()
        folded = re.sub(r"^(void|static|__global__)\s+", "", folded).rpartition("::")[2]
    return _cut(folded or text, limit)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def short_names(names: pd.Series) -> pd.Series:
    """``short_name`` of each, made unique: names that shorten alike get ' #2', ' #3' in order."""
    distinct = pd.Series(pd.unique(names.astype(str)))
    shorts = distinct.map(short_name)
    rank = shorts.groupby(shorts).cumcount()
    unique = shorts.where(rank == 0, shorts + " #" + (rank + 1).astype(str))
    return names.astype(str).map(dict(zip(distinct, unique)))
