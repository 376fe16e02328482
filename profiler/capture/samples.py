"""Real H200 traces shipped with the app (data/samples/), seeded into an empty store.

The samples are ordinary captured traces: each carries its own "attention_run" metadata, so
ingesting them anywhere gives the same run ids and descriptions as on the machine that made them.
A sample with a ``<name>.ncu.csv`` beside it ships with Nsight Compute's counters of one warm call,
attached when it is seeded (as `python -m profiler counters` would).
data/samples/MANIFEST.md says what they are and how they were made.

They also ship already ingested: ``data/samples.duckdb.gz`` is a store holding every sample, as
seeding would make it (tests/test_shipped_store.py holds it to that, table by table), and
``data/samples.duckdb.json`` says which samples and which DuckDB made it. A new store is that file
unpacked (`unpack_shipped`: ~0.1 s, where ingesting the 401 samples takes ~13 s on 2 cores), unless
the samples or DuckDB have changed since it was built; then the samples are ingested as before.
After a change to the samples or to what ingest stores, build it again:

    python -m profiler.cli.samples
"""
from __future__ import annotations

import atexit
import gzip
import hashlib
import json
import os
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from profiler import errors

SAMPLES_DIR = Path(__file__).resolve().parents[2] / "data" / "samples"
SHIPPED = SAMPLES_DIR.parent / "samples.duckdb.gz"  # every sample, ingested (see the module docstring)
SHIPPED_INDEX = SAMPLES_DIR.parent / "samples.duckdb.json"  # the samples and the DuckDB it was built from
Progress = Callable[[str, float, str], None]  # (sample name, fraction done, message)
FIRST_PAGE_GRACE_S = 2.0  # background seeding waits this long at most for the first page to draw
BATCH = 16  # samples stored per transaction (their metrics in one statement): ~1 s of ingest on 2 cores
FIRST_BATCH = 4  # the first transaction's samples (the default shape's first): the runs table fills sooner


def sample_files(samples_dir: Path = SAMPLES_DIR) -> list[Path]:
    """Every shipped trace under ``samples_dir`` (any depth), in a stable order."""
    if not samples_dir.is_dir():
        raise errors.ProfilerError(f"sample traces folder {samples_dir} does not exist")
    return sorted(samples_dir.rglob("*.json.gz"))


def sample_name(path: Path) -> str:
    return path.name.removesuffix(".json.gz")


def counters_file(path: Path) -> Path:
    """A sample's Nsight Compute counters: ``<name>.ncu.csv`` beside ``<name>.json.gz``."""
    return path.with_name(sample_name(path) + ".ncu.csv")


def ingest_samples(store, paths: list[Path]) -> list:
    """Ingest several samples in one transaction (`Store.ingest_many`: the runs appear together,
    each with its metrics) and attach the counters of those that ship with them."""
    results = store.ingest_many([(path, sample_name(path)) for path in paths], source="captured")
    for path, result in zip(paths, results):
        counted = counters_file(path)
        if counted.is_file() and not result.duplicate:
            store.attach_counters(result.run_id, counted)
    return results


def batches(files: list[Path], size: int = BATCH, first: int = FIRST_BATCH) -> list[list[Path]]:
    """`files` in transactions: a small first one (the first runs show sooner), then `size` each."""
    head = [files[:first]] if files[:first] else []
    return head + [files[i:i + size] for i in range(first, len(files), size)]


def samples_digest(samples_dir: Path = SAMPLES_DIR) -> str:
    """A digest of every file seeding reads (the traces and their counters: names and bytes)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in samples_dir.rglob("*") if p.name.endswith((".json.gz", ".ncu.csv"))):
        digest.update(path.relative_to(samples_dir).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def duckdb_version() -> str:
    import duckdb

    return duckdb.__version__


def shipped_matches(samples_dir: Path = SAMPLES_DIR, index: Path | None = None) -> bool:
    """Whether the shipped store was built from exactly these samples by this DuckDB."""
    try:
        built = json.loads((index or SHIPPED_INDEX).read_text(encoding="utf-8"))
        return (built.get("duckdb") == duckdb_version()
                and built.get("samples_sha256") == samples_digest(samples_dir))
    except (OSError, ValueError, AttributeError):
        return False


def unpack_shipped(path: Path, samples_dir: Path = SAMPLES_DIR, shipped: Path | None = None,
                   index: Path | None = None) -> bool:
    """Make the store at ``path``, which must not exist yet, a copy of the shipped store (every
    sample ingested); True when this call made it. False, and nothing written, when a file is
    there already (another process or thread made it first: the file appears whole, under its
    name, or not at all) or when the shipped store does not match the samples (`shipped_matches`:
    they are then ingested, `seed_in_background`)."""
    path, shipped = Path(path), shipped or SHIPPED
    if path.exists() or not shipped.is_file() or not shipped_matches(samples_dir, index):
        return False
    part = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.unpacking")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(shipped) as src, open(part, "xb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        os.link(part, path)  # fails when a store appeared meanwhile: never written over
        return True
    except (OSError, EOFError, gzip.BadGzipFile):  # taken, no hard links here, a damaged copy: ingest
        return False
    finally:
        part.unlink(missing_ok=True)


def build_shipped(store, samples_dir: Path = SAMPLES_DIR, shipped: Path | None = None,
                  index: Path | None = None) -> int:
    """Ingest every sample into ``store``, a new store (`seed_if_empty`), and write its file to
    ``shipped`` (gzip'd) with its ``index``; returns how many runs it holds
    (`python -m profiler.cli.samples`)."""
    shipped, index = shipped or SHIPPED, index or SHIPPED_INDEX
    added = seed_if_empty(store, samples_dir)
    with store.connect() as con:
        con.execute("CHECKPOINT")
    with open(store.path, "rb") as src, open(shipped, "wb") as out, \
            gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9, mtime=0) as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    index.write_text(json.dumps({"runs": added, "duckdb": duckdb_version(),
                                 "samples_sha256": samples_digest(samples_dir)}, indent=1) + "\n", encoding="utf-8")
    return added


def store_is_empty(store) -> bool:
    return store.run_count() == 0


def seed_if_empty(store, samples_dir: Path = SAMPLES_DIR, progress: Progress | None = None) -> int:
    """Ingest every shipped sample (source 'captured') into ``store`` if it holds no trace yet.

    Returns how many traces were added (0 when the store already had traces). ``progress`` is
    called after each file with (sample name, fraction of the samples done, message).
    """
    if not store_is_empty(store):
        return 0
    files = sample_files(samples_dir)
    added = done = 0
    with store.connect():  # the database stays open between batches (closing it writes a checkpoint)
        for batch in batches(files):
            added += sum(not r.duplicate for r in ingest_samples(store, batch))
            done += len(batch)
            if progress:
                progress(sample_name(batch[-1]), done / len(files), f"sample {done} of {len(files)} ingested")
    return added


@dataclass
class Seeding:
    """Seeding of an empty store on a background thread, so that the app draws its first page at
    once and shows the runs as they land. Read ``done``/``total``/``running``/``error`` any time."""

    total: int = 0
    done: int = 0
    error: str | None = None
    _thread: threading.Thread | None = field(default=None, repr=False)
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)
    _go: threading.Event = field(default_factory=threading.Event, repr=False)

    def page_drawn(self) -> None:
        """The first page is on screen: start ingesting (until then the page has the CPU)."""
        self._go.set()

    def wait_first_page(self, timeout: float = FIRST_PAGE_GRACE_S) -> None:
        """Until the first page is drawn (`page_drawn`), `timeout` seconds at most."""
        self._go.wait(timeout)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> None:
        """Until seeding has ended (at once when there is none)."""
        if self._thread is not None:
            self._thread.join(timeout)

    def stop(self, timeout: float | None = None) -> None:
        """Stop after the batch of samples being ingested (one transaction) and wait for that."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)


def seed_in_background(store, samples_dir: Path = SAMPLES_DIR, new_file: bool = False) -> Seeding:
    """Start seeding ``store`` from the samples on a thread (nothing to do when the store already
    holds traces); returns the ``Seeding`` to watch. The samples land in batches (one transaction
    each, the first one small). ``new_file``: the store's file does not exist yet, so it is
    empty: it is created on the thread (its schema: ~0.5 s), not before the first page. The process
    waits for the batch in flight when it exits, so no ingest is cut in half."""
    seeding = Seeding()
    if not samples_dir.is_dir() or not (new_file or store_is_empty(store)):
        return seeding
    files = sample_files(samples_dir)
    seeding.total = len(files)

    def run() -> None:
        seeding.wait_first_page()
        try:
            with store.connect():  # the database stays open between batches (closing it writes a checkpoint)
                if new_file and not store_is_empty(store):  # another process filled it meanwhile
                    return
                for batch in batches(files):
                    if seeding._stop.is_set():
                        return
                    ingest_samples(store, batch)
                    seeding.done += len(batch)
        except errors.ProfilerError as e:  # a damaged sample or store: said on the runs page
            seeding.error = str(e)

    seeding._thread = threading.Thread(target=run, name="seed-samples", daemon=True)
    seeding._thread.start()
    atexit.register(seeding.stop, 60)
    return seeding
