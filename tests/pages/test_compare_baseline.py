"""Compare's baseline defaults to the fastest selected run (issue 40): GPU time per call, what
runs are ranked by, read here from the fixtures' raw JSON (kernel time per ProfilerStep)."""
from __future__ import annotations

from tests import raw_trace
from tests.pages.conftest import FLASH, NAIVE, PAGE_FIXTURES


def _us_per_step(name: str) -> float:
    events = raw_trace.load(PAGE_FIXTURES / name)["traceEvents"]
    return raw_trace.us_per_step(events, cats=raw_trace.GPU_WORK, inside_steps=True)


def test_the_baseline_is_the_fastest_run_whatever_the_order(pages, page_store, run_ids):
    fastest = min((NAIVE, FLASH), key=_us_per_step)
    slower = FLASH if fastest == NAIVE else NAIVE
    for order in ((NAIVE, FLASH), (FLASH, NAIVE)):
        at = pages.open("compare", runs=",".join(run_ids[n] for n in order))
        pages.assert_clean(at)
        assert at.selectbox[0].value == run_ids[fastest]
        assert at.selectbox[1].value == run_ids[slower]
    at = pages.open("compare", runs=f"{run_ids[NAIVE]},{run_ids[FLASH]}", a=run_ids[slower])
    assert at.selectbox[0].value == run_ids[slower]          # a link's choice stands
