"""One line on stderr per reason the runs a command compares were measured differently
(`profiler.analysis.conditions.warnings`: clocks more than 5 % apart, throttled or clock-locked,
other versions, other processes on the GPU). On stderr, so `--json` output stays one object."""
from __future__ import annotations

import sys

from profiler.cli.terminal import printable


def warn(store, run_ids) -> None:
    from profiler.analysis import conditions

    for sentence in conditions.warnings(store, run_ids):
        print(f"warning: {printable(sentence)}", file=sys.stderr)
