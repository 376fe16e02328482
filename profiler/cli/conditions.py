"""One line on stderr per reason the runs a command compares were measured differently
(`profiler.analysis.findings.conditions.warnings`: clocks more than 5 % apart, throttled or clock-locked,
other versions, other processes on the GPU), and one per run whose trace is incomplete
(`profiler.analysis.reads.completeness.warnings`: what is missing and what it costs the figures).
On stderr, so `--json` output stays one object."""
from __future__ import annotations

import sys

from profiler.cli.terminal import printable
from profiler.storage.session import StoreHandle


def warn(store: StoreHandle, run_ids) -> None:
    from profiler.analysis.reads import completeness, run_queries
    from profiler.analysis.findings import conditions

    labels = run_queries.run_labels(store, list(run_ids)).set_index("run_id")["label"].to_dict()
    for sentence in conditions.warnings(store, run_ids) + completeness.warnings(store, run_ids, labels):
        print(f"warning: {printable(sentence)}", file=sys.stderr)
