"""Sweep page's axes (issue 40): the y axes log or linear (a toggle kept in the URL), the GPU's HBM
bandwidth as roof lines on a decode (TB/s) sweep, datasheet and measured, and the peak-memory
chart's log axes labelled at 1-2-5 steps and at the lengths measured. Real H200 samples
(tests/pages/test_sweep.py's store) and the H200's real ceilings (data/samples_H200/measure)."""
from __future__ import annotations

import json

import pyarrow as pa

from profiler.storage import ceilings
from tests.pages.conftest import ROOT
from tests.pages.test_sweep import sweep_store  # noqa: F401 (the fixture)

H200_DATASHEET_TBPS = 4.8  # NVIDIA H200 SXM datasheet: 4.8 TB/s of HBM3e
MEASURED = ROOT / "data" / "samples_H200" / "measure" / "ceilings_1.json"


def _specs(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]


def _layers(spec: dict) -> list[dict]:
    return spec.get("layer", [spec])


def _y_scales(spec: dict) -> list[dict]:
    return [layer["encoding"]["y"].get("scale", {}) for layer in _layers(spec)
            if "y" in layer.get("encoding", {}) and layer["encoding"]["y"].get("scale") is not None]


def _decode_chart(at) -> dict:
    return next(s for s in _specs(at) if "TB/s" in json.dumps(s.get("title", "")))


def _datasets(at) -> dict:
    """Every chart's named datasets (Streamlit sends them beside the spec, as Arrow)."""
    out = {}
    for chart in at.get("vega_lite_chart"):
        for named in chart.proto.datasets:
            out[named.name] = pa.ipc.open_stream(named.data.data).read_all().to_pylist()
    return out


def _roof_values(at, spec: dict) -> list[float]:
    """The y values of the chart's roof rules (the layers with a 'roof' tooltip), from the data."""
    roofs = [layer for layer in _layers(spec) if "roof" in json.dumps(layer.get("encoding", {}).get("tooltip", ""))]
    assert roofs, "no roof line on the decode chart"
    return sorted(row["tbps"] for row in _datasets(at)[roofs[0]["data"]["name"]])


def test_decode_sweep_is_log_with_the_datasheet_roof_by_default(pages, sweep_store):  # noqa: F811
    at = pages.open("sweep")
    pages.assert_clean(at)
    decode = _decode_chart(at)
    assert {s.get("type") for s in _y_scales(decode)} == {"log"}
    assert _roof_values(at, decode) == [H200_DATASHEET_TBPS]
    assert "NVIDIA H200 datasheet 4.8 TB/s" in pages.texts(at)
    prefill = next(s for s in _specs(at) if "TFLOP/s" in json.dumps(s.get("title", "")))
    assert "roof" not in json.dumps(prefill)  # a FLOP/s sweep has no bandwidth roof


def test_the_toggle_draws_linear_axes_from_zero_and_is_kept_in_the_url(pages, sweep_store):  # noqa: F811
    at = pages.open("sweep")
    next(t for t in at.toggle if t.label == "Log y axis").set_value(False).run()
    pages.assert_clean(at)
    assert at.query_params["ylog"] == "0"
    for spec in _specs(at)[:2]:   # the two sweeps (the peak-memory chart stays log-log)
        scales = _y_scales(spec)
        assert scales and all(s.get("type") in (None, "linear") and s["domain"][0] == 0 for s in scales), scales
    again = pages.open("sweep", ylog="0")   # a shared link opens linear
    assert not next(t for t in again.toggle if t.label == "Log y axis").value


def test_a_measured_bandwidth_is_a_second_roof(pages, sweep_store):  # noqa: F811
    store, _ = sweep_store
    measured = json.loads(MEASURED.read_text())
    ceilings.keep(store, measured)
    hbm = max(c["value"] for c in measured["ceilings"] if c["what"] in ("hbm_read", "hbm_copy"))
    at = pages.open("sweep")
    pages.assert_clean(at)
    assert _roof_values(at, _decode_chart(at)) == sorted([H200_DATASHEET_TBPS, hbm])
    assert f"NVIDIA H200 measured {hbm:.3g} TB/s" in pages.texts(at)


def test_peak_memory_log_axes_are_labelled_at_log_steps(pages, sweep_store):  # noqa: F811
    at = pages.open("sweep")
    memory = next(s for s in _specs(at) if "peak allocated" in json.dumps(s))
    x = next(layer["encoding"]["x"] for layer in _layers(memory) if "x" in layer.get("encoding", {}))
    y = next(layer["encoding"]["y"] for layer in _layers(memory)
             if isinstance(layer.get("encoding", {}).get("y"), dict) and "axis" in layer["encoding"]["y"])
    assert x["axis"]["values"] == [512, 1024]      # the lengths measured, not 0, 200, 400 ...
    ticks = y["axis"]["values"]
    assert ticks and all(f"{t:g}"[0] in "125" and set(f"{t:g}"[1:].replace(".", "")) <= {"0"} for t in ticks), ticks


def test_a_log_axis_off_by_default_is_kept_as_log_1_only_when_on(pages, page_store, run_ids):
    """The same toggle (ui.log_axis) where linear is the default (Launches): on writes log=1,
    off again takes it out of the URL."""
    runs = ",".join(list(run_ids.values())[:2])
    at = pages.open("launches", runs=runs)
    toggle = next(t for t in at.toggle if t.label == "Log axis")
    assert not toggle.value and "log" not in at.query_params
    toggle.set_value(True).run()
    assert at.query_params["log"] == "1"
    next(t for t in at.toggle if t.label == "Log axis").set_value(False).run()
    pages.assert_clean(at)
    assert "log" not in at.query_params
