"""A bar axis shows the values its bars reach (issue 40: Launches' calls per iteration ran to 9
for a maximum of 5): ticks stop at the first round value at or past the longest bar, while the
scale keeps room for that bar's label."""
from __future__ import annotations

import pandas as pd
import pytest

from profiler.present import charts, style


@pytest.mark.parametrize("top,last", [(5, 5), (4.2, 5), (9, 10), (0.37, 0.4), (1070, 1200), (1, 1)])
def test_ticks_end_at_the_first_round_value_past_the_top(top, last):
    ticks = charts.axis_ticks(top)
    assert ticks[0] == 0 and ticks[-1] == pytest.approx(last) and len(ticks) <= 8
    assert ticks[-2] < top <= ticks[-1] + 1e-9


def test_launch_api_chart_axis_stops_at_the_data():
    apis = pd.DataFrame({"run_id": ["r1", "r1"], "api": ["cudaLaunchKernel", "cudaMemcpyAsync"],
                         "api_kind": ["runtime"] * 2, "category": ["launch", "memcpy"],
                         "calls_per_iter": [5.0, 1.0], "api_us_per_iter": [10.0, 2.0], "mean_us": [2.0, 2.0],
                         "kernels_launched_per_iter": [5.0, 0.0], "memops_launched_per_iter": [0.0, 1.0]})
    spec = charts.launch_api_chart(apis, style.run_labels(pd.DataFrame(
        {"run_id": ["r1"], "label": ["naive"], "cold": [False], "variant": ["naive"], "source": ["captured"]}))).to_dict()
    x = spec["layer"][0]["encoding"]["x"]
    assert x["axis"]["values"][-1] == 5 and x["scale"]["domainMax"] > 5    # room for the label, ticks to 5
