"""Finding runs in the runs table: the filters a user sets, the choices each offers, and sweeps.

`RunFilter` is what the filter widgets hold (each an empty tuple / text for "all"); `apply(runs, f)`
keeps the catalog rows (`queries.run_catalog`) that match all of them; `choices(runs)` lists the
values each filter offers. `with_sweeps(runs)` adds a ``sweep`` column (what a sweep keeps fixed:
variant, batch, heads, head dim, dtype, causal, warm or cold) and orders rows by it, then by length,
so the runs of one sweep sit together, shortest first. Filters travel in the share URL as
``variant=a,b&len=1024&...`` (`to_params` / `from_params`).
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import pandas as pd

# filter name (also the URL filter key) -> catalog column
COLUMN = {"variant": "variant", "len": "seq_len", "dtype": "dtype", "device": "gpu_name", "source": "source"}
SEP = ","


@dataclass(frozen=True)
class RunFilter:
    variant: tuple[str, ...] = ()
    len: tuple[str, ...] = ()
    dtype: tuple[str, ...] = ()
    device: tuple[str, ...] = ()
    source: tuple[str, ...] = ()
    text: str = ""          # in the name, the label parts or the run id (case-insensitive)

    @property
    def active(self) -> bool:
        return any(getattr(self, f.name) for f in fields(self))


def _as_text(values: pd.Series) -> pd.Series:
    """A column as the strings the filters compare: whole numbers without '.0', missing as ''."""
    return values.map(lambda v: "" if pd.isna(v) else str(int(v)) if isinstance(v, float) and v.is_integer()
                      else str(v))


def choices(runs: pd.DataFrame) -> dict[str, list[str]]:
    """{filter name: the distinct non-empty values in the catalog}, lengths in numeric order."""
    out = {}
    for name, column in COLUMN.items():
        values = sorted(set(_as_text(runs[column])) - {""})
        out[name] = sorted(values, key=int) if name == "len" else values
    return out


def apply(runs: pd.DataFrame, f: RunFilter) -> pd.DataFrame:
    """The rows of ``runs`` that pass every filter of ``f`` (all rows when none is set)."""
    keep = pd.Series(True, index=runs.index)
    for name, column in COLUMN.items():
        wanted = getattr(f, name)
        if wanted:
            keep &= _as_text(runs[column]).isin(wanted)
    if f.text:
        haystack = (runs["name"].fillna("") + " " + runs["variant"].fillna("") + " " + runs["run_id"]).str.lower()
        keep &= haystack.str.contains(f.text.lower(), regex=False)
    return runs[keep]


def with_sweeps(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with a ``sweep`` column, a sweep's runs together and in order of length."""
    parts = [runs["variant"].fillna("(uploaded)"),
             "B" + _as_text(runs["batch"]), "H" + _as_text(runs["heads"]), "D" + _as_text(runs["head_dim"]),
             runs["dtype"].fillna(""), runs["causal"].map({True: "causal", False: "not causal"}).fillna(""),
             runs["cold"].map({True: "cold", False: "warm"}).fillna("")]
    sweep = parts[0]
    for part in parts[1:]:
        sweep = sweep + " · " + part
    shaped = runs.assign(sweep=sweep.where(runs["seq_len"].notna(), "no shape: " + runs["name"].fillna("")))
    return shaped.sort_values(["sweep", "seq_len", "name", "run_id"], na_position="last", kind="stable")


def to_params(f: RunFilter) -> dict[str, str]:
    """The share URL's filters for ``f`` ({key: value}; keys of unset filters map to "")."""
    out = {name: SEP.join(getattr(f, name)) for name in COLUMN}
    out["text"] = f.text
    return out


def from_params(get) -> RunFilter:
    """A `RunFilter` from a ``get(key) -> str | None`` of the share URL's filters."""
    split = {name: tuple(v for v in (get(name) or "").split(SEP) if v) for name in COLUMN}
    return RunFilter(**split, text=get("text") or "")
