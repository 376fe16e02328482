"""How an amount reads in a sentence, a table cell or a JSON output: the one formatter of each unit.

`binary_size(n)`: bytes in binary units with one decimal ('512 B', '131.0 KiB', '3.0 MiB'), used
by the findings' sentences (copies per iteration, shared memory per block) and the kernel table's
launch configuration.
`duration(us)`: microseconds in the unit that reads best, three significant digits ('850 ns',
'12.3 µs', '1.05 s'); the findings' sentences, the narrative, every table cell and tooltip and the
CLI's tables. (Chart axes spell the same rule as a Vega expression: `style.DURATION_LABEL`.)
`json_value(value)`: a value as plain JSON data, the one rule of every JSON output (the CLI's
`--json`, a finding's evidence, the job report): nothing that is not a number becomes one.
"""
from __future__ import annotations

import datetime
import math
import sys


def binary_size(n: float) -> str:
    """Bytes as B, KiB, MiB or GiB with one decimal (binary units)."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def duration(us: float | None) -> str:
    """A duration in microseconds, in the unit that reads best: '850 ns', '12.3 µs', '1.05 s';
    '—' for none (None or NaN)."""
    if us is None or (isinstance(us, float) and math.isnan(us)):
        return "—"
    a = abs(us)
    for limit, div, unit in ((1e6, 1e6, "s"), (1e3, 1e3, "ms"), (1, 1, "µs")):
        if a >= limit:
            return f"{us / div:.3g} {unit}"
    return f"{us * 1e3:.3g} ns" if us else "0"


def json_value(value):
    """``value`` as plain JSON data: None, NaN, ±infinity, pandas' NA and NaT become None (JSON has
    no NaN: Python's ``json`` would write one); numpy scalars become Python numbers; dates and
    timestamps ISO text; dicts (keys as text), lists, tuples and numpy arrays go element by element.
    pandas is not imported here: a pandas value can only exist once pandas is loaded."""
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if getattr(value, "ndim", 0):  # a numpy array
        return [json_value(v) for v in value.tolist()]
    pd = sys.modules.get("pandas")
    if value is None or (pd is not None and (value is pd.NA or value is pd.NaT)):
        return None
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if hasattr(value, "item"):  # a numpy scalar (a datetime64 becomes a datetime or an int)
        return json_value(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
