"""Long work started from a page, with progress bars and errors per file (part of the app glue,
`profiler.present.ui`): uploads, jobs, captures, and a run's original trace to download."""
from __future__ import annotations

import sys
import tempfile
import threading
from collections.abc import Iterable
from dataclasses import replace

import streamlit as st

from profiler.analysis.findings import job_queries
from profiler.analysis.reads import run_queries
from profiler.errors import StoreError, TraceError
from profiler.present import markup
from profiler.present.ui.session import PROJECT_ERRORS, db_path, get_store, traces_dir
from profiler.present.ui.tables import download_name
from profiler.present.ui.view import show_error
from profiler.storage import catalog

_CAPTURE_LOCK = threading.Lock()  # torch.profiler is process-wide, and timings need the GPU alone


RUN_NAME_MAX_CHARS = catalog.MAX_NAME_CHARS  # the longest name a run can be given


def rename_run(run_id: str, name: str) -> str:
    """Rename a run of this server's store (`catalog.rename_run`: the name is checked there)."""
    return catalog.rename_run(get_store(), run_id, name)


def delete_runs(run_ids) -> int:
    """Delete runs of this server's store, with their kept traces; how many were deleted."""
    return catalog.delete_runs(get_store(), run_ids, traces_dir())


def upload_limit_mb() -> int:
    """The server's per-file upload limit in MB (``server.maxUploadSize``)."""
    return int(st.get_option("server.maxUploadSize"))


def ingest_files(files, source: str = "uploaded") -> list:
    """Ingest each file with its own progress bar; each succeeds or fails on its own (errors are
    shown per file, naming it, never raised), and a summary follows when some failed."""
    from profiler.storage import isolated

    results, failed = [], 0
    for f in files:
        bar = st.progress(0.0, text=markup.fmt("{}: reading…", f.name))
        def report(done: float, bar=bar, file=f.name) -> None:
            bar.progress(min(max(done, 0.0), 1.0), text=markup.fmt("{}: {:.0%}", file, done))
        try:
            result = isolated.ingest_upload(f, db_path(), source=source, progress=report)
        except PROJECT_ERRORS as err:
            bar.empty()
            show_error(err if isinstance(err, TraceError) else StoreError(f"{f.name}: {err}"))
            failed += 1
            continue
        bar.progress(1.0, text=markup.fmt("{}: {:,} events, {:,} kernels in {:.1f} s", f.name, result.events,
                                          result.kernels, result.seconds) + " (already in the store)" * result.duplicate)
        for note in result.notes:
            st.caption(markup.fmt("{}: {}", f.name, note))
        catalog.keep_trace(f, traces_dir(), result.run_id)
        results.append(result)
    if failed:
        st.warning(f"{len(files) - failed:,} of {len(files):,} files added; {failed:,} failed (see above).")
    return results


def ingest_graph_pair(files, asked: bool = True) -> tuple[bool, object]:
    """Store an uploaded CUDA/HIP-graph replay and its capture trace (files chosen together, or a
    zip holding them; which is the capture is told by the traces, profiler/storage/graph_pair.py)
    as one joined run. ``asked``: the user said the files are a pair (an error is shown when they
    are not); else they are joined only when they hold exactly one capture and one replay (several
    files or a zip), and left to the other uploads otherwise. Returns (handled, the IngestResult or
    None): handled is False when the files were not taken as a pair; other files are named as left
    out, the join's counts shown as captions."""
    from profiler.storage import graph_pair
    from profiler.storage.jobs import jobs

    if not asked and len(files) < 2 and not any(f.name.endswith(".zip") for f in files):
        return False, None
    bar = st.progress(0.0, text=markup.fmt("graph pair: reading {} file(s)…", len(files)))
    with tempfile.TemporaryDirectory(prefix="graph-pair-") as folder:
        try:
            kinds = graph_pair.classify(jobs.save_uploads(files, folder))
            if not asked and sorted(k for k in kinds.values() if k) != ["capture", "replay"]:
                bar.empty()
                return False, None
            replay, capture, others = graph_pair.pair_of(kinds)
            result, joined = graph_pair.ingest(get_store(), replay, capture)
        except PROJECT_ERRORS as err:
            bar.empty()
            show_error(err)
            return True, None
    bar.progress(1.0, text=markup.fmt("{}: {:,} events, {:,} kernels in {:.1f} s", result.name, result.events,
                                      result.kernels, result.seconds) + " (already in the store)" * result.duplicate)
    for note in [*joined.notes(), *result.notes]:
        st.caption(markup.fmt("{}", note))
    for other in others:
        st.caption(markup.fmt("Left out of the join: {} (neither a graph capture nor a graph replay trace)", other.name))
    return True, result


def ingest_job_upload(files, job: str, skip_bad: bool = False):
    """Store uploaded rank traces (several files, or zips of them) as one job, with one progress
    bar; parsed in this process. Returns the JobResult, or None after showing the error."""
    from profiler.storage.jobs import jobs

    bar = st.progress(0.0, text=markup.fmt("job {}: reading {} file(s)…", job, len(files)))
    with tempfile.TemporaryDirectory(prefix="job-upload-") as folder:
        try:
            paths = jobs.save_uploads(files, folder)
            result = job_queries.ingest_job(get_store(), paths, job, skip_bad=skip_bad, engine="in-process",
                                            progress=lambda done: bar.progress(min(max(done, 0.0), 1.0),
                                                                               text=markup.fmt("job {}: {:.0%}", job, done)))
        except PROJECT_ERRORS as err:
            bar.empty()
            show_error(err)
            return None
    bar.progress(1.0, text=markup.fmt("job {}: {} of {} ranks in {:.1f} s", job, len(result.ranks),
                                      result.world_size, result.seconds))
    return result


def trace_download(run_id: str) -> None:
    """Download button for a run's original trace, or a note that this server lacks it."""
    path = catalog.trace_path(traces_dir(), run_id)
    if path is None:
        st.caption("This server has no copy of this run's original trace (only runs uploaded "
                   "or captured in the dashboard keep one).")
        return
    name = run_queries.run_labels(get_store(), [run_id])["name"].iloc[0]
    stem = name.removesuffix(".gz").removesuffix(".json")
    st.download_button("Download the trace (.json.gz, opens in ui.perfetto.dev)",
                       data=path.read_bytes, file_name=download_name(stem, ".json.gz"),
                       mime="application/gzip", key=f"trace-{run_id}", on_click="ignore",
                       icon=":material/download:")


class _VariantBars:
    """One progress bar per variant, fed by ``capture``'s (variant, fraction, message) reports."""

    def __init__(self, names: Iterable[str], runs_each: int):
        self.bars = {n: st.progress(0.0, text=markup.fmt("{}: waiting", n)) for n in names}
        self.done = dict.fromkeys(self.bars, 0)
        self.runs_each, self.seen = runs_each, 0

    def __call__(self, variant: str, fraction: float, message: str) -> None:
        finished = round(fraction * self.runs_each * len(self.bars))
        if variant in self.bars:  # runs finished since the last report are this variant's
            self.done[variant] += max(0, finished - self.seen)
            share = min(1.0, self.done[variant] / self.runs_each)
            self.bars[variant].progress(share, text=markup.fmt("{}: {}", variant, message))
        self.seen = max(self.seen, finished)


_CAPTURE_ASKED = "_capture_layer_asked"


def capture_layer() -> bool:
    """The profile page's door to the capture layer: torch and the variants' checks (seconds of
    CPU) load when the user sets up a capture, with a progress message while they do, never when
    a page merely opens. True once they are loaded in this server (then at once)."""
    if "profiler.capture.variants" in sys.modules:
        return True
    if not st.session_state.get(_CAPTURE_ASKED):
        st.markdown("Capturing profiles attention variants with torch.profiler on this machine. PyTorch "
                    "loads when a capture is set up (a few seconds, once per server).")
        if not st.button("Set up a capture", type="primary", icon=":material/play_arrow:"):
            return False
        st.session_state[_CAPTURE_ASKED] = True
    with st.status("Loading PyTorch and checking which attention variants run here…") as status:
        from profiler.capture import variants

        variants.availability(variants.Setting(device=variants.default_device()))
        status.update(label="PyTorch loaded.", state="complete", expanded=False)
    return True


def capture_runs(config) -> tuple[list, list]:
    """Capture ``config`` (a ``capture.CaptureConfig``) with live bars, then ingest the traces."""
    from profiler.capture import recorder as capture  # torch loads only when someone captures
    from profiler.capture.config import CaptureError, runs_per_variant

    if not _CAPTURE_LOCK.acquire(blocking=False):
        with st.spinner("Another session is capturing on this machine; waiting for it to finish…"):
            _CAPTURE_LOCK.acquire()
    try:
        config = replace(config, out_dir=traces_dir())
        bars = _VariantBars(config.variants, runs_per_variant(config))
        outcomes = capture.capture(config, progress=bars)
        with st.spinner("Adding the traces to the store…"):
            results = capture.ingest_outcomes(get_store(), outcomes)
        profiled = [o for o in outcomes if o.path is not None]
        for outcome, result in zip(profiled, results):  # same order: ingest_outcomes' contract
            catalog.adopt_trace(outcome.path, traces_dir(), result.run_id)
    except CaptureError as err:
        show_error(err)
        return [], []
    finally:
        _CAPTURE_LOCK.release()
    return results, [o for o in outcomes if o.skipped]
