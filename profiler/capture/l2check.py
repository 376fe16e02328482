"""Did a cold run's first kernel really find L2 cold? Checked under Nsight Compute, kept in the record.

A cold run is the first call of a fresh process; its inputs, just made on the GPU, may still sit
in L2 (a "cold" number that is partly warm) unless the capture evicted them first (`record.flush_l2`,
the default; `--no-flush-l2` keeps them). The check runs the cold run's workload (`counters.request`
with its flush, no warm-up call) twice under `ncu`, counting only the first kernel of the first
call (`--launch-count 1`):

* ``as_run``: `--cache-control none`: L2 as the cold run left it;
* ``flushed``: `--cache-control all`: ncu flushes every cache first: the truly cold reference.

Both use `--replay-mode application` (each counter pass is a fresh process, so a pass never sees
the L2 a former pass warmed) and `--clock-control none`. Read: the L2 sector hit rate
(`lts__t_sector_hit_rate.pct`) and the bytes read from DRAM (`dram__bytes_read.sum`).

`verdict(as_run, flushed)`: the first kernel missed L2 (``cold: True``) when it read from DRAM
at least `COLD_MIN_DRAM_SHARE` of what it reads after a flush; else the inputs were (partly)
resident and the record says by how much. `check(request)` gives the record's "l2_check" dict.
"""
from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from profiler.capture import counters

HIT_RATE = "lts__t_sector_hit_rate.pct"
DRAM_READ = "dram__bytes_read.sum"
COLD_MIN_DRAM_SHARE = 0.9  # as_run's DRAM reads / flushed's: at or above, the first kernel missed L2
CACHE = {"as_run": "none", "flushed": "all"}
TIMEOUT_S = 180.0


class CheckError(ValueError):
    """An export the check cannot read (names what is wrong)."""


def command(ncu: str, request: dict, cache: str) -> list[str]:
    """ncu counting the first kernel of the cold call of ``request`` with L2 ``cache`` control."""
    return [ncu, "--profile-from-start", "off", "--clock-control", "none", "--cache-control", cache,
            "--replay-mode", "application", "--launch-count", "1", "--metrics", f"{HIT_RATE},{DRAM_READ}",
            "--csv", "--page", "raw", "--print-units", "base",
            sys.executable, "-m", "profiler.capture.counted", json.dumps({**request, "cold": True})]


def first_kernel(text: str, name: str) -> dict:
    """{"kernel", "hit_rate_pct", "dram_read_bytes"} of the first row of an ncu raw CSV (base units)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        raise CheckError(f"{name}: no ncu table (no header row starting with \"ID\")")
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    if len(rows) < 3:
        raise CheckError(f"{name}: ncu counted no kernel")
    header, units, row = rows[0], rows[1], rows[2]
    col = {h: i for i, h in enumerate(header)}
    for metric, unit in ((HIT_RATE, "%"), (DRAM_READ, "byte")):
        if metric not in col:
            raise CheckError(f"{name}: column {metric} is missing")
        if units[col[metric]].strip() != unit:
            raise CheckError(f"{name}: {metric} is in {units[col[metric]]!r}, not {unit!r} (export with --print-units base)")
    try:
        hit = float(row[col[HIT_RATE]].replace(",", ""))
        read = float(row[col[DRAM_READ]].replace(",", ""))
    except (ValueError, IndexError):
        raise CheckError(f"{name}: {HIT_RATE} or {DRAM_READ} of the first kernel is not a number") from None
    return {"kernel": row[col["Kernel Name"]][:200] if "Kernel Name" in col else None,
            "hit_rate_pct": hit, "dram_read_bytes": read}


def verdict(as_run: dict, flushed: dict) -> dict:
    """The record's "l2_check" from the two counts (see the module docstring)."""
    share = as_run["dram_read_bytes"] / flushed["dram_read_bytes"] if flushed["dram_read_bytes"] > 0 else None
    cold = share is not None and share >= COLD_MIN_DRAM_SHARE
    said = (f"the first kernel missed L2: it read {share:.0%} of a flushed L2's DRAM bytes" if cold else
            "the first kernel found its data partly in L2: it read "
            + (f"{share:.0%} of a flushed L2's DRAM bytes" if share is not None else "no DRAM bytes after a flush")
            + " (the inputs just made were still resident): this cold run was not fully cold")
    return {"cold": cold, "dram_read_share": None if share is None else round(share, 4),
            "as_run": as_run, "flushed": flushed, "kernel": as_run["kernel"],
            "kernels_agree": as_run["kernel"] == flushed["kernel"], "said": said,
            "how": "ncu --launch-count 1 --replay-mode application, --cache-control none vs all"}


def check(request: dict, timeout_s: float = TIMEOUT_S) -> dict:
    """The cold run's L2 check, or {"cold": None, "said": why it could not be checked}."""
    ncu = counters.find_ncu()
    if ncu is None:
        return {"cold": None, "said": counters.why_not("cuda")}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(counters.REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    got = {}
    for label, cache in CACHE.items():
        with tempfile.TemporaryDirectory(prefix="l2-") as tmp:
            try:
                run = subprocess.run(command(ncu, request, cache), capture_output=True, text=True,
                                     timeout=timeout_s, env=env, cwd=tmp)
            except subprocess.TimeoutExpired:
                return {"cold": None, "said": f"ncu ran past {timeout_s:.0f} s ({label})"}
        try:
            got[label] = first_kernel(run.stdout, f"ncu ({label})")
        except CheckError as e:
            return {"cold": None, "said": f"not checked: {e}; {counters.ncu_error_line(run.stderr)}"}
    return verdict(got["as_run"], got["flushed"])


def keep(trace: Path, result: dict) -> None:
    """Write ``result`` into the trace's record as "l2_check" (its "l2_flushed" stays as captured)."""
    import gzip

    with gzip.open(trace, "rt", encoding="utf-8") as f:
        data = json.load(f)
    record = data.setdefault("attention_run", {}).setdefault("record", {})
    record["l2_check"] = result
    with gzip.open(trace, "wt", encoding="utf-8") as f:
        json.dump(data, f)
