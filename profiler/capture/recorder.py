"""Capture attention variants: `capture(config)` profiles every asked-for variant at every shape,
each variant in fresh worker processes (`worker.py`) or, for variants outside the registry, in
this process (`inprocess.py`, whose docstring says what a run is and what it measures);
`ingest_outcomes` puts the traces into a store. The config and outcome types live in `config.py`
and are re-exported here, so callers import one module.
"""
from __future__ import annotations

from typing import Iterable

from profiler.capture.config import CaptureConfig, Progress, RunOutcome, validate
from profiler.capture.inprocess import InProcessCapture
from profiler.capture.variants import Variant
from profiler.capture.worker import capture_isolated


def capture(config: CaptureConfig, progress: Progress | None = None,
            extra_variants: Iterable[Variant] = ()) -> list[RunOutcome]:
    """Profile every asked-for variant at every sequence length; one RunOutcome per run.

    With ``config.isolate`` (the default) each variant runs in fresh worker processes
    (``profiler/capture/worker.py``); ``extra_variants`` (variants that are not in the registry,
    which tests use to check that a wrong result is flagged) can only run in this process, so
    passing any runs the whole capture here. A variant that cannot run is skipped with its
    reason and never stops the others.
    """
    config = validate(config)
    extra = tuple(extra_variants)
    if config.isolate and not extra:
        outcomes = capture_isolated(config, progress)
    else:
        outcomes = InProcessCapture(config, progress, extra).run()
    if progress:
        profiled = sum(o.path is not None for o in outcomes)
        progress("", 1.0, f"{profiled} of {len(outcomes)} runs profiled")
    return outcomes


def ingest_outcomes(store, outcomes: list[RunOutcome], progress: Progress | None = None,
                    joined=None) -> list:
    """Ingest every profiled run into ``store`` (a profiler.storage.store.Store) as source 'captured',
    one result per profiled run. ``joined(outcome)``: for a graph-mode run (its meta names a
    ``capture_trace``), the replay joined with its capture trace (bytes: parse/graph_join.py, which
    the caller imports), ingested instead of the replay alone."""
    profiled = [o for o in outcomes if o.path is not None]
    results = []
    for i, outcome in enumerate(profiled):
        src = outcome.path
        if joined is not None and (outcome.meta or {}).get("capture_trace"):
            src = joined(outcome)
        results.append(store.ingest(src, name=outcome.name, source="captured"))
        if progress:
            progress(outcome.variant, (i + 1) / len(profiled), f"ingested {outcome.name}")
    return results
