"""The units row of an Nsight Compute raw CSV export, read as written, never guessed.

`ncu --csv --page raw` writes a second row with each column's unit. With `--print-units base`
a duration reads `ns` and a size `byte`; without it ncu scales them for reading (`usecond`,
`msecond`, `Kbyte`, `Mbyte`, `Kinst`), and a value read without its unit would be off by 1000x
or more. `factor(kind, unit)` gives what turns a cell into the store's unit (ns, bytes, a share in
%, a count), or None when the unit is not one this kind of metric is written in (the caller
refuses the file, naming the column and the unit).
"""
from __future__ import annotations

# the store's unit of each kind of metric: a duration in ns, a size in bytes, a share in %, a count
TIME, BYTES, PERCENT, COUNT = "time", "bytes", "percent", "count"
_TIME = {"ns": 1.0, "nsecond": 1.0, "nanosecond": 1.0, "us": 1e3, "usecond": 1e3, "µs": 1e3, "μs": 1e3,
         "microsecond": 1e3, "ms": 1e6, "msecond": 1e6, "millisecond": 1e6, "s": 1e9, "second": 1e9}
_BYTE_WORDS = {"byte", "bytes", "B"}
# ncu scales sizes and counts by SI prefixes (Kbyte = 1000 bytes); KiB-style names are binary
_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
           "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40}
_SHORT_BYTES = {"KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "KiB": 2.0**10, "MiB": 2.0**20,
                "GiB": 2.0**30, "TiB": 2.0**40}
# what ncu writes for the counts read here (instructions, registers, blocks, warps); blank is a count
_COUNT_WORDS = {"", "inst", "register/thread", "register", "block", "warp", "thread", "SM", "cycle"}


def factor(kind: str, unit: str) -> float | None:
    """The multiplier from a cell written in ``unit`` to the store's unit of ``kind``, or None."""
    unit = unit.strip()
    if kind == PERCENT:
        return 1.0 if unit == "%" else None
    if kind == TIME:
        return _TIME.get(unit)
    if kind == BYTES:
        return _sized(unit, _BYTE_WORDS) or _SHORT_BYTES.get(unit)
    return _sized(unit, _COUNT_WORDS)


def _sized(unit: str, words: set[str]) -> float | None:
    """``unit`` as an optional SI (or binary) prefix on one of ``words``."""
    if unit in words:
        return 1.0
    for prefix in sorted(_PREFIX, key=len, reverse=True):
        if prefix and unit.startswith(prefix) and unit[len(prefix):] in words - {""}:
            return _PREFIX[prefix]
    return None


def expected(kind: str) -> str:
    """The units a metric of ``kind`` may be written in, for an error message."""
    return {PERCENT: "%", TIME: "ns, us, ms or s (nsecond, usecond, msecond, second)",
            BYTES: "byte, Kbyte, Mbyte, Gbyte (or KB, MB, GB)"}.get(kind, "a count (inst, block, register/thread, ...)")
