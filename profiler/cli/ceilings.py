"""`python -m profiler ceilings [FILE ...]`: a GPU's measured ceilings, kept and listed.

A capture measures its GPU's ceilings once per GPU and software stack (profiler/capture/ceilings.py)
and keeps them in the store. Traces captured elsewhere come with the measurement's JSON
(`python -m profiler.capture.ceilings --out FILE` on that GPU): `ceilings FILE` keeps it, so every
run of that GPU is rated against what it sustains as well as against its datasheet (`rank`, `ops`,
the roofline). Without a file, the kept ceilings are listed, one line per GPU and figure.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from profiler import errors
from profiler.cli import terminal

REQUIRED = ("device", "gpu_name", "stack", "ceilings")


def register(subparsers) -> None:
    cmd = subparsers.add_parser("ceilings", help="keep a GPU's measured ceilings (JSON) or list those kept")
    cmd.add_argument("files", nargs="*", metavar="FILE",
                     help="measurements written by `python -m profiler.capture.ceilings --out FILE`")
    cmd.add_argument("--db", default=None, help="store file (default: $PROFILER_DB or data/traces.duckdb)")
    cmd.set_defaults(func=run_ceilings)


def read(path: Path) -> dict:
    """One measurement's JSON, checked for what keeping it needs (a TraceError names what is wrong)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise errors.TraceError(str(path), "no such file") from None
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise errors.TraceError(str(path), f"not a ceilings measurement: not JSON ({type(e).__name__})") from None
    if not isinstance(data, dict) or any(k not in data for k in REQUIRED):
        missing = [k for k in REQUIRED if not isinstance(data, dict) or k not in data]
        raise errors.TraceError(str(path), "not a ceilings measurement: it has no " + ", ".join(missing)
                                + " (write one with `python -m profiler.capture.ceilings --out FILE`)")
    for c in data["ceilings"]:
        if not isinstance(c, dict) or not {"what", "value", "unit", "detail"} <= set(c):
            raise errors.TraceError(str(path), "not a ceilings measurement: a ceiling lacks what, value, unit or detail")
    return data


def run_ceilings(args: argparse.Namespace) -> int:
    from profiler.storage import ceilings as kept
    from profiler.storage.connection import WRITE_WAIT_S
    from profiler.storage.store import Store

    store = Store(args.db, lock_timeout_s=WRITE_WAIT_S)
    failed = 0
    for name in args.files:
        try:
            data = read(Path(name))
            rows = kept.keep(store, data)
        except errors.TraceError as e:
            print(terminal.inert(f"FAILED  {name}: {e.problem}"))
            failed += 1
            continue
        except errors.StoreError as e:
            print(terminal.inert(f"FAILED  {name}: {e}"))
            failed += 1
            continue
        print(terminal.inert(f"kept    {rows} ceilings of {data['gpu_name']} ({data['stack']}) from {name}"))
    if not args.files:
        found = kept.latest(store)
        if not found:
            print("No measured ceilings in the store: a capture on a GPU measures them, or keep a measurement "
                  "with `python -m profiler ceilings FILE`.")
        for gpu, entry in found.items():
            print(terminal.inert(f"{gpu}  ({entry['stack']}; measured {entry['measured_at']:%Y-%m-%d %H:%M} UTC)"))
            for what in kept.WHATS:
                if what in entry:
                    unit = "TB/s" if what.startswith("hbm") else "TFLOP/s"
                    print(f"  {what:10s} {entry[what]:10,.2f} {unit}")
    return 1 if failed else 0
