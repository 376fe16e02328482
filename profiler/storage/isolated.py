"""Ingest an uploaded trace in a child process, so that one upload cannot stall the dashboard.

Parsing is CPU-bound Python: in the server's process it would hold the interpreter lock that every
other session's page needs, and its memory would be the server's. The dashboard therefore writes
the upload to a temporary file and runs `python -m profiler.storage.isolated` on it at a lower CPU
priority; the child reports progress and its outcome as JSON lines on stdout, and its errors come
back as the same `TraceError` / `StoreError` sentences an in-process ingest raises. The store is
shared the usual way (each side holds the file only for its short transactions).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import BinaryIO

from profiler import errors
from profiler.storage.connection import WRITE_WAIT_S

ROOT = Path(__file__).resolve().parents[2]
NICE = 10  # the child yields the CPU to page renders
last_peak_rss_kb = 0  # the peak memory of the last child (for bench/hardening.py)



def ingest_upload(f: BinaryIO, db: str | os.PathLike, *, source: str = "uploaded",
                  progress: Callable[[float], None] | None = None, name: str | None = None):
    """Ingest the binary file-like `f` (e.g. a Streamlit upload) into the store at `db` in a
    child process; returns its `IngestResult`, raises the child's `ProfilerError`."""
    from profiler.storage.commit import IngestResult

    name = name or getattr(f, "name", None) or "uploaded trace"
    with tempfile.TemporaryDirectory(prefix="profiler-upload-") as tmp:
        path = Path(tmp) / "upload"
        f.seek(0)
        with open(path, "wb") as out:
            shutil.copyfileobj(f, out, 8 << 20)
        f.seek(0)
        outcome = _run_child(path, db, name, source, progress)
    if "result" in outcome:
        result = outcome["result"]
        result["notes"] = tuple(result.get("notes", ()))
        return IngestResult(**result)
    raise _error(outcome.get("error", {}), name)


def _run_child(path: Path, db: str | os.PathLike, name: str, source: str,
               progress: Callable[[float], None] | None) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH")))))
    command = [sys.executable, "-m", "profiler.storage.isolated", str(path), str(db), name, source]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd=ROOT, env=env)
    outcome: dict = {}
    try:
        assert child.stdout is not None
        for line in child.stdout:
            try:
                message = json.loads(line)
            except json.JSONDecodeError:
                continue
            if "progress" in message and progress is not None:
                progress(float(message["progress"]))
            elif "result" in message or "error" in message:
                outcome = message
            elif "peak_rss_kb" in message:
                global last_peak_rss_kb
                last_peak_rss_kb = int(message["peak_rss_kb"])
        child.wait()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    if not outcome:
        outcome = {"error": {"kind": "TraceError", "problem": "could not be ingested: the ingest "
                             f"process ended unexpectedly (exit status {child.returncode})"}}
    return outcome


def _error(error: dict, name: str) -> errors.ProfilerError:
    kind = getattr(errors, str(error.get("kind")), errors.TraceError)
    if not (isinstance(kind, type) and issubclass(kind, errors.ProfilerError)):
        kind = errors.TraceError
    if issubclass(kind, errors.TraceError):
        return kind(name, str(error.get("problem") or "could not be ingested"))
    return kind(str(error.get("message") or "The store could not be written."))


def _child(path: str, db: str, name: str, source: str) -> int:
    """The child: ingest one file, print JSON lines (progress, then result or error)."""
    try:
        os.nice(NICE)
    except (AttributeError, OSError):
        pass
    from profiler.storage.store import Store

    last = [0.0]

    def report(done: float) -> None:
        now = time.monotonic()
        if now - last[0] >= 0.2:
            last[0] = now
            print(json.dumps({"progress": round(done, 4)}), flush=True)

    try:
        result = Store(db, lock_timeout_s=WRITE_WAIT_S).ingest(path, name, source=source, progress=report)
        print(json.dumps({"result": asdict(result)}), flush=True)
    except errors.TraceError as e:
        print(json.dumps({"error": {"kind": type(e).__name__, "problem": e.problem}}), flush=True)
    except errors.ProfilerError as e:
        print(json.dumps({"error": {"kind": type(e).__name__, "message": str(e)}}), flush=True)
    except (Exception, MemoryError) as e:  # noqa: BLE001 - one sentence, never a traceback
        print(json.dumps({"error": {"kind": "TraceError", "problem": "could not be ingested "
                                    f"({type(e).__name__}: {str(e)[:200]})"}}), flush=True)
    print(json.dumps({"peak_rss_kb": peak_rss_kb()}), flush=True)
    return 0


def peak_rss_kb() -> int:
    """This process's peak resident memory (VmHWM; 0 where /proc is missing)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(_child(*sys.argv[1:5]))
