"""What `rank` and `check` take for runs: run ids or unique prefixes, variant names, comma-separated
lists of them, trace files and folders of trace files, and filters on the workload.

Trace files are ingested into a temporary store, never the user's: an empty one, or a copy of the
user's when ids are given beside them. Arguments are resolved against one read of the store's ids
(a sorted list, prefixes found by bisection), so 10,000 ids resolve in milliseconds; repeated
arguments count once.
"""
from __future__ import annotations

import bisect
import contextlib
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

from profiler import errors
from profiler.storage.store import Store

TRACE_SUFFIXES = (".json", ".json.gz")
# --flag: (traces column as run_shapes names it, type)
FILTERS = {"mode": ("mode", str), "batch": ("batch", int), "heads": ("heads", int), "kv_heads": ("kv_heads", int),
           "seq": ("seq_len", int), "kv_len": ("kv_len", int), "head_dim": ("head_dim", int),
           "window": ("window", int), "dtype": ("dtype", str), "device": ("gpu_name", str)}


def add_filters(parser) -> None:
    group = parser.add_argument_group("filters (keep only the runs that match every one given)")
    for flag, (_, kind) in FILTERS.items():
        group.add_argument(f"--{flag.replace('_', '-')}", dest=f"filter_{flag}", type=kind, default=None)
    group.add_argument("--warm", dest="filter_state", action="store_const", const="warm", help="warm runs only")
    group.add_argument("--cold", dest="filter_state", action="store_const", const="cold", help="cold runs only")


def filters_of(args) -> dict:
    """{run_shapes column: value} of the filters given, and 'cold' for --warm / --cold."""
    chosen = {FILTERS[f][0]: getattr(args, f"filter_{f}") for f in FILTERS if getattr(args, f"filter_{f}", None) is not None}
    state = getattr(args, "filter_state", None)
    if state:
        chosen["cold"] = state == "cold"
    return chosen


def split(texts) -> list[str]:
    """Every comma-separated part of the arguments, stripped, empty parts dropped."""
    return [p.strip() for t in texts for p in str(t).split(",") if p.strip()]


def is_path(text: str) -> bool:
    """Whether an argument names a trace file or folder rather than a run id, prefix or variant."""
    return os.sep in text or text.endswith(TRACE_SUFFIXES) or (
        Path(text).exists() and not re.fullmatch(r"[0-9a-f]+", text))


def trace_files(text: str) -> list[Path]:
    """The traces an argument names: the file, or the folder's .json and .json.gz files (any depth)."""
    path = Path(text)
    if path.is_dir():
        found = sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(TRACE_SUFFIXES))
        if not found:
            raise errors.ProfilerError(f"the folder {text} holds no trace files (.json, .json.gz)")
        return found
    if not path.is_file():
        raise errors.ProfilerError(f"no trace file {text} (and no run, prefix or variant of that name)")
    return [path]


class Runs:
    """The store's run ids and variants, read once: `resolve` turns arguments into run ids."""

    def __init__(self, store):
        rows = store.query("SELECT run_id, variant FROM traces ORDER BY run_id")
        self.store = store
        self.ids = rows["run_id"].astype(str).tolist()
        self.by_variant: dict[str, list[str]] = {}
        for run, variant in zip(self.ids, rows["variant"]):
            if isinstance(variant, str):
                self.by_variant.setdefault(variant, []).append(run)

    def one(self, text: str) -> list[str]:
        """The run `text` is or uniquely starts, or every run of the variant `text`."""
        at = bisect.bisect_left(self.ids, text)
        if at < len(self.ids) and self.ids[at] == text:
            return [text]
        if text in self.by_variant:
            return list(self.by_variant[text])
        end = bisect.bisect_left(self.ids, text + "\uffff")
        if end - at == 1:
            return [self.ids[at]]
        if end == at:
            raise errors.UnknownRunError(f"no run, prefix or variant {text!r} in the store {self.store.path} "
                                         "(`python -m profiler summary` lists them)")
        raise errors.UnknownRunError(f"{text!r} matches {end - at} runs ({', '.join(self.ids[at:at + 4])}); "
                                     "give more of the id")

    def resolve(self, texts, ingested: dict[str, list[str]] | None = None) -> list[str]:
        """Run ids of the arguments, in their order, each once (files: their ingested runs)."""
        out: dict[str, None] = {}
        for text in texts:
            for run in (ingested or {}).get(text) or self.one(text):
                out[run] = None
        return list(out)


@contextlib.contextmanager
def opened(texts, db) -> Iterator[tuple[Store, dict[str, list[str]]]]:
    """(the store to read, {argument naming traces: the run ids they were ingested as}). With no
    trace files among ``texts`` that is the user's store, read-only; otherwise a temporary store
    (a copy of the user's when other arguments name its runs), removed afterwards."""
    paths = [t for t in texts if is_path(t)]
    if not paths:
        yield Store(db, read_only=True), {}
        return
    files = {t: trace_files(t) for t in paths}
    with tempfile.TemporaryDirectory(prefix="profiler-rank-") as tmp:
        target = Path(tmp) / "store.duckdb"
        if len(paths) < len(texts):
            user = Store(db, read_only=True)
            shutil.copyfile(user.path, target)
            if Path(str(user.path) + ".wal").exists():
                shutil.copyfile(str(user.path) + ".wal", str(target) + ".wal")
        store = Store(target)
        ingested = {}
        for text, found in files.items():
            results = store.ingest_many([(p, p.name.removesuffix(".gz").removesuffix(".json")) for p in found])
            ingested[text] = [r.run_id for r in results]
        yield store, ingested
