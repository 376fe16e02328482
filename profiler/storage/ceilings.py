"""Measured ceilings of each GPU and software stack in the store (table gpu_ceilings, schema 9).

`keep(store, measured)` stores what `profiler.capture.ceilings.measure` returned (as its JSON
dict), replacing an earlier measurement of the same GPU and stack; a measurement made on the CPU
is refused: it is no GPU's ceiling. `has(store, gpu_name, stack)` says whether one is kept (a
capture measures once per GPU and stack). `latest(store)` gives, per GPU name, the most recent
stack's values: {gpu_name: {"stack", "measured_at", "gemm_bf16", …, "hbm_read", "hbm_copy",
"memory"}}, where "memory" is the larger of the read and the copy (the memory ceiling).
"""
from __future__ import annotations

import datetime as dt
import json

from profiler.errors import StoreError
from profiler.storage.session import StoreHandle

COLUMNS = ("gpu_name", "stack", "what", "value", "unit", "device", "measured_at", "detail")
WHATS = ("gemm_bf16", "gemm_fp16", "gemm_fp8", "hbm_read", "hbm_copy")


def keep(store, measured: dict) -> int:
    """Store a measurement's ceilings (rows written); raises StoreError for a CPU measurement."""
    if measured.get("device") != "cuda":
        raise StoreError(f"ceilings measured on {measured.get('gpu_name') or 'the CPU'} are not a GPU's: not kept")
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    rows = []
    for c in measured["ceilings"]:
        if c["what"] not in WHATS or not (c["value"] > 0) or c["value"] == float("inf"):
            raise StoreError(f"a ceiling {str(c['what'])[:40]!r} of {c['value']!r} is not one to keep")
        rows.append([measured["gpu_name"], measured["stack"], c["what"], float(c["value"]), c["unit"], "cuda", now,
                     json.dumps(c["detail"], allow_nan=False)])
    with store.connect() as con:
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute("DELETE FROM gpu_ceilings WHERE gpu_name = ? AND stack = ?",
                        [measured["gpu_name"], measured["stack"]])
            for row in rows:
                con.execute(f"INSERT INTO gpu_ceilings ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})", row)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    return len(rows)


def has(store, gpu_name: str, stack: str) -> bool:
    with store.connect() as con:
        return con.execute("SELECT 1 FROM gpu_ceilings WHERE gpu_name = ? AND stack = ? LIMIT 1",
                           [gpu_name, stack]).fetchone() is not None


def latest(store: StoreHandle) -> dict:
    """Per GPU name, the values of its most recently measured stack (see the module docstring)."""
    try:
        rows = store.query("SELECT gpu_name, stack, what, value, measured_at FROM gpu_ceilings "
                           "ORDER BY gpu_name, measured_at DESC, what")
    except StoreError:
        return {}
    out: dict = {}
    for gpu, stack, what, value, at in rows.itertuples(index=False):
        entry = out.setdefault(gpu, {"stack": stack, "measured_at": at})
        if entry["stack"] == stack:
            entry[what] = float(value)
    for entry in out.values():
        memory = [entry[w] for w in ("hbm_read", "hbm_copy") if w in entry]
        entry["memory"] = max(memory) if memory else None
    return out
