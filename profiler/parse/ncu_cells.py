"""The cells of an Nsight Compute export read a column at a time (100,000 rows in about a second):
each column checked with one regular expression over its joined text and converted by numpy, the
first bad cell named by its row. Used by `ncu.read_report`; the rules are its docstring's.
"""
from __future__ import annotations

import re

import numpy as np

from profiler.errors import CountersFileError

MISSING = {"", "n/a", "no data", "N/A"}
NUMBER = r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][+-]?\d{1,3})?"
_CELL = re.compile(rf"(?:{NUMBER})|n/a|no data|N/A|", re.ASCII)
# a line of the joined column that is neither a number of at most 40 characters nor a missing mark
_BAD_LINE = re.compile(rf"^(?!(?=.{{0,40}}$)(?:{NUMBER}|n/a|no data|N/A)?$).*$", re.M | re.ASCII)


def first_bad(cells: list[str]) -> int | None:
    """Index of the first cell that is not a number or a missing mark, or None."""
    joined = "\n".join(cells)
    if joined.count("\n") != max(0, len(cells) - 1):   # a cell holds a line break: one by one
        return next((i for i, c in enumerate(cells) if len(c) > 40 or not _CELL.fullmatch(c)), None)
    found = _BAD_LINE.search(joined)
    return None if found is None else joined.count("\n", 0, found.start())


def numbers(cells: list[str], factor: float, rule: dict, name: str, found: str) -> list[float | None]:
    """A column as numbers in the store's unit (None where missing). ``rule``: {"share": bool,
    "whole": int | None (the largest whole number allowed), "start": the first row's line}.
    Refuses (naming the row and the column) what is no number, infinite, below zero, a share
    above 100, or not whole where a whole number is meant."""
    start = rule["start"]
    cells = [c.strip() for c in cells]
    bad = first_bad(cells)
    if bad is not None:
        raise CountersFileError(name, f"row {start + bad}: {found} reads {cells[bad][:40]!r}, not a number")
    missing = np.array([c in MISSING for c in cells], dtype=bool)
    with np.errstate(over="ignore", invalid="ignore"):
        values = np.array(["nan" if m else c.replace(",", "") for c, m in zip(cells, missing)],
                          dtype=np.float64) * factor
    present = ~missing

    def refuse(mask, why) -> None:
        hit = np.flatnonzero(mask & present)
        if hit.size:
            i = int(hit[0])
            raise CountersFileError(name, f"row {start + i}: {found} {why(cells[i][:40], values[i])}")
    refuse(~np.isfinite(values), lambda text, v: f"reads {text!r}, not a finite number")
    refuse(values < 0, lambda text, v: f"is {text}, below zero")
    if rule.get("share"):
        refuse(values > 100.0, lambda text, v: f"is {v}, not a share between 0 and 100")
    if rule.get("whole") is not None:
        refuse((values != np.floor(values)) | (values > rule["whole"]),
               lambda text, v: f"is {text}, not a whole number up to {rule['whole']:,}")
    out = values.tolist()
    for i in np.flatnonzero(missing).tolist():
        out[i] = None
    return out
