"""Finding runs in the runs table: the filters a user sets, the choices each offers, and sweeps.

`finder_columns(runs, labels)` adds what the finder reads beside the catalog's own columns: the
run's label as every page shows it (`flex bf16 decode KV=32768 GQA 32/8 · 1a2b3c`), warm or cold,
packed or not, the capture date, and the text the search reads. `RunFilter` is what the filter
widgets hold (each an empty tuple / text for "all"); `apply(runs, f)` keeps the catalog rows
(`run_queries.run_catalog`) that match all of them; `choices(runs)` lists the values each filter
offers. The text search matches words: every word typed must occur in the run's label, name,
mode, warm/cold, GPU, run id or `repeat N`, and a word ending in a number ends where that number
does (`L=1024` finds `L=1024`, not `L=10240`; `KV=32768 GQA 32/8` finds the decode runs labelled
so). `sort_rows(runs, key)` orders rows by one of `SORTS`, stably. `with_sweeps(runs)` finds the sweeps among the runs as the Sweep page does
(`sweeps.sweep_members`, per variant and warm or cold: the axis a sweep varies is `sweeps.swept`'s),
adds a ``sweep`` column (the variant, mode, what the sweep keeps fixed and the axis it varies) and a
``swept`` column (the run's value on that axis), and orders rows by sweep, then by that value, so
the runs of one sweep sit together, smallest first. Filters travel in the share URL as
``variant=a,b&len=1024&...`` (`to_params` / `from_params`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, fields

import pandas as pd

from profiler.analysis.findings import sweeps

# filter name (also the URL filter key) -> catalog column (finder_columns adds the last four)
COLUMN = {"variant": "variant", "mode": "mode", "len": "seq_len", "kv": "kv_len", "kvh": "kv_heads",
          "temp": "temperature", "batch": "batch", "heads": "heads", "dim": "head_dim", "window": "window",
          "packed": "packed", "repeat": "repeat", "dtype": "dtype", "device": "gpu_name", "date": "captured",
          "source": "source"}
NUMERIC = {"len", "kv", "kvh", "batch", "heads", "dim", "window", "repeat"}   # choices in numeric order
SEP = ","
SORTS = {"newest": "newest first", "fastest": "GPU µs / call, fastest first", "label": "run label",
         "kv": "KV length", "len": "query length"}


@dataclass(frozen=True)
class RunFilter:
    variant: tuple[str, ...] = ()
    mode: tuple[str, ...] = ()
    len: tuple[str, ...] = ()
    kv: tuple[str, ...] = ()
    kvh: tuple[str, ...] = ()
    temp: tuple[str, ...] = ()
    batch: tuple[str, ...] = ()
    heads: tuple[str, ...] = ()
    dim: tuple[str, ...] = ()
    window: tuple[str, ...] = ()
    packed: tuple[str, ...] = ()
    repeat: tuple[str, ...] = ()
    dtype: tuple[str, ...] = ()
    device: tuple[str, ...] = ()
    date: tuple[str, ...] = ()
    source: tuple[str, ...] = ()
    text: str = ""          # words of the label, name, mode, warm/cold, GPU or run id (any case)

    @property
    def active(self) -> bool:
        return any(getattr(self, f.name) for f in fields(self))


def _as_text(values: pd.Series) -> pd.Series:
    """A column as the strings the filters compare: whole numbers without '.0', missing as ''."""
    return values.map(lambda v: "" if pd.isna(v) else str(int(v)) if isinstance(v, float) and v.is_integer()
                      else str(v))


def finder_columns(runs: pd.DataFrame, labels: dict[str, str]) -> pd.DataFrame:
    """``runs`` (catalog rows) with ``label`` (the run's label on every page), ``temperature``
    ('warm' / 'cold'), ``packed`` ('packed' / 'not packed'), ``captured`` (the capture's date,
    'YYYY-MM-DD'; '' when unknown) and ``search`` (the text the search reads)."""
    label = runs["run_id"].map(labels).fillna(runs["name"])
    temperature = runs["cold"].map({True: "cold", False: "warm"}).fillna("")
    packed = runs["varlen"].map(lambda v: "" if pd.isna(v) else "packed" if v else "not packed")
    captured = pd.to_datetime(runs["captured_at"]).dt.strftime("%Y-%m-%d").fillna("")
    repeat = _as_text(runs["repeat"]).map(lambda r: f"repeat {r}" if r else "")
    search = (label + " " + runs["name"].fillna("") + " " + runs["mode"].fillna("") + " " + temperature + " "
              + runs["gpu_name"].fillna("") + " " + repeat + " " + runs["run_id"]).str.lower()
    return runs.assign(label=label, temperature=temperature, packed=packed, captured=captured, search=search)


def choices(runs: pd.DataFrame) -> dict[str, list[str]]:
    """{filter name: the distinct non-empty values in the catalog}, numbers in numeric order;
    a filter whose column the rows lack offers nothing."""
    out = {}
    for name, column in COLUMN.items():
        values = sorted(set(_as_text(runs[column])) - {""}) if column in runs else []
        out[name] = sorted(values, key=int) if name in NUMERIC else values
    return out


def words_match(haystack: pd.Series, text: str) -> pd.Series:
    """Which rows of ``haystack`` (lower-case text) hold every word of ``text``; a word that
    starts or ends with a digit must not continue into more digits there."""
    keep = pd.Series(True, index=haystack.index)
    for word in text.lower().split():
        pattern = re.escape(word)
        pattern = ("(?<![0-9])" if word[0].isdigit() else "") + pattern + ("(?![0-9])" if word[-1].isdigit() else "")
        keep &= haystack.str.contains(pattern, regex=True)
    return keep


def apply(runs: pd.DataFrame, f: RunFilter) -> pd.DataFrame:
    """The rows of ``runs`` that pass every filter of ``f`` (all rows when none is set)."""
    keep = pd.Series(True, index=runs.index)
    for name, column in COLUMN.items():
        wanted = getattr(f, name)
        if wanted and column in runs:
            keep &= _as_text(runs[column]).isin(wanted)
    if f.text:
        haystack = runs["search"] if "search" in runs else (
            runs["name"].fillna("") + " " + runs["variant"].fillna("") + " " + runs["run_id"]).str.lower()
        keep &= words_match(haystack, f.text)
    return runs[keep]


def sort_rows(runs: pd.DataFrame, key: str) -> pd.DataFrame:
    """``runs`` in the order ``SORTS[key]`` names (the catalog's own, newest first, for an unknown
    key); stable, so rows that tie keep the catalog's order whatever the filters."""
    by = {"fastest": ("gpu_us_per_call", True), "label": ("label", True), "kv": ("kv_len", True),
          "len": ("seq_len", True)}.get(key)
    if by is None or by[0] not in runs:
        return runs
    return runs.sort_values(by[0], ascending=by[1], kind="stable", na_position="last")


def with_sweeps(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` (catalog rows) with a ``sweep`` column (what a sweep holds fixed and the axis it varies;
    a run in no sweep: its whole shape, so its repeats sit together) and a ``swept`` column (the
    run's value on that axis, missing outside a sweep), a sweep's runs together in order of it.
    A run where two sweeps cross (a length sweep and a head dim sweep, say) sits in the first of
    `sweeps.AXES`."""
    shaped = runs[runs["seq_len"].notna()]
    members = sweeps.sweep_members(shaped, per=("variant", "cold")).drop_duplicates("run_id")
    axis = runs["run_id"].map(members.set_index("run_id")["axis"])
    named = [_sweep_name(row, a) for row, a in zip(runs.to_dict("records"), axis)]
    out = runs.assign(sweep=named, swept=runs["run_id"].map(members.set_index("run_id")["x"]).astype("Int64"))
    return out.sort_values(["sweep", "swept", "name", "run_id"], na_position="last", kind="stable")


def _sweep_name(row: dict, axis) -> str:
    """'flex · decode · B8 · H32/8 · D128 · Q1 · bf16 · causal · warm · over KV cache length': the
    variant, mode, the shape but ``axis`` (K/V heads after the heads when fewer, the queries and the
    KV cache in decode, the window and packed lengths when there are), dtype, causal, warm or cold."""
    if pd.isna(row["seq_len"]):
        return "no shape: " + str(row["name"] if isinstance(row["name"], str) else "")
    axis = axis if isinstance(axis, str) else None
    moving = {axis, "kv_len"} if axis == "seq_len" and row["kv_len"] == row["seq_len"] else {axis}
    decode = row["mode"] == "decode"
    heads = _int(row["heads"]) + ("" if "kv_heads" in moving or row["kv_heads"] == row["heads"]
                                   else "/" + _int(row["kv_heads"]))
    parts = [row["variant"] if isinstance(row["variant"], str) else "(uploaded)", str(row["mode"]),
             "B" + _int(row["batch"]), "H" + heads,
             "" if "head_dim" in moving else "D" + _int(row["head_dim"]),
             "" if "seq_len" in moving else ("Q" if decode else "L") + _int(row["seq_len"]),
             "" if "kv_len" in moving or (row["kv_len"] == row["seq_len"] and not decode)
             else "KV" + _int(row["kv_len"]),
             "" if "window" in moving or not row["window"] else "W" + _int(row["window"]),
             "packed " + str(row["varlen"]).replace(",", "+") if row["varlen"] else "",
             row["dtype"] if isinstance(row["dtype"], str) else "",
             {True: "causal", False: "not causal"}.get(row["causal"], ""),
             {True: "cold", False: "warm"}.get(row["cold"], ""),
             "over " + sweeps.AXIS_NAMES[axis] if axis else ""]
    return " · ".join(p for p in parts if p)


def _int(value) -> str:
    return "?" if pd.isna(value) else str(int(value))


def to_params(f: RunFilter) -> dict[str, str]:
    """The share URL's filters for ``f`` ({key: value}; keys of unset filters map to "")."""
    out = {name: SEP.join(getattr(f, name)) for name in COLUMN}
    out["text"] = f.text
    return out


def from_params(get) -> RunFilter:
    """A `RunFilter` from a ``get(key) -> str | None`` of the share URL's filters."""
    split = {name: tuple(v for v in (get(name) or "").split(SEP) if v) for name in COLUMN}
    return RunFilter(**split, text=get("text") or "")
