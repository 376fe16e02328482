"""One colour per variant on every page and in every selection (present/style.py).

The palette covers every variant the capture layer knows, its colours are told apart (CIE76 ΔE
computed here from sRGB, independently of style), a cold run is a tint of its variant's colour,
uploads get a colour by a stable hash (the same in another process), and on the real H200 sample
runs a run's colour does not depend on which other runs are selected, nor in which order.
"""
from __future__ import annotations

import itertools
import subprocess
import sys

import pytest

from profiler.analysis.reads import run_queries
from profiler.capture.variants import VARIANTS
from profiler.present import charts, style
from profiler.storage.store import Store
from tests.conftest import SAMPLES, ingest_all


def _lab(colour: str) -> tuple[float, float, float]:
    def linear(c):
        return ((c + 0.055) / 1.055) ** 2.4 if c > 0.04045 else c / 12.92
    r, g, b = (linear(int(colour[i:i + 2], 16) / 255) for i in (1, 3, 5))
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(t):
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116
    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def _delta_e(a: str, b: str) -> float:
    return sum((p - q) ** 2 for p, q in zip(_lab(a), _lab(b))) ** 0.5


def test_every_known_variant_has_its_own_distinct_colour():
    assert set(VARIANTS) <= set(style.VARIANT_COLOURS), "a variant without a colour of its own"
    colours = [style.variant_colour(v) for v in VARIANTS]
    assert len(set(colours)) == len(colours)
    closest = min(_delta_e(a, b) for a, b in itertools.combinations(colours, 2))
    assert closest >= 25, f"two variants only {closest:.1f} ΔE apart"
    # the pairs the issue found sharing a hue
    assert _delta_e(style.variant_colour("flash_attn_4"), style.variant_colour("sdpa_flash")) > 40
    assert _delta_e(style.variant_colour("flashinfer_fa2"), style.variant_colour("sdpa_math")) > 30


@pytest.mark.slow  # a subprocess
def test_uploads_and_unknown_variants_get_a_stable_fallback_colour():
    for colour in style.FALLBACK_COLOURS:
        assert min(_delta_e(colour, v) for v in style.VARIANT_COLOURS.values()) >= 15
    picked = [style.variant_colour(None, run_id=f"run{i}") for i in range(40)]
    assert set(picked) <= set(style.FALLBACK_COLOURS) and len(set(picked)) > 3  # spread, not one
    assert style.variant_colour("my_kernel") in style.FALLBACK_COLOURS
    code = ("from profiler.present import style; "
            "print(style.variant_colour(None, run_id='abc123'), style.variant_colour('my_kernel'))")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": "7", "PATH": ""}).stdout.split()
    assert other == [style.variant_colour(None, run_id="abc123"), style.variant_colour("my_kernel")]


def test_a_cold_run_is_a_lighter_tint_of_its_variant_colour():
    warm, cold = style.variant_colour("sdpa_cudnn"), style.variant_colour("sdpa_cudnn", cold=True)
    assert _lab(cold)[0] > _lab(warm)[0] + 10                          # lighter
    channels = [(int(warm[i:i + 2], 16), int(cold[i:i + 2], 16)) for i in (1, 3, 5)]
    assert all(round(w + (255 - w) * style.COLD_TINT) == c for w, c in channels)


def test_a_sample_run_keeps_its_colour_in_every_selection(tmp_path):
    store = Store(tmp_path / "colours.duckdb")
    files = [SAMPLES / "default" / f"{v}_b8_h16_s1024_d64_bf16_causal_{t}.json.gz"
             for v, t in (("sdpa_flash", "warm"), ("sdpa_cudnn", "warm"), ("sdpa_flash", "cold"),
                          ("naive", "warm"))]
    ids = ingest_all(store, files, source="captured")
    seen: dict[str, set[str]] = {}
    for selection in (ids, ids[::-1], ids[1:2], [ids[3], ids[0]], ids[2:]):
        labels = charts.label_map(run_queries.run_labels(store, selection))
        scale = style.run_scale(labels).to_dict()
        for run in selection:
            seen.setdefault(run, set()).add(dict(zip(scale["domain"], scale["range"]))[labels[run]])
    assert all(len(c) == 1 for c in seen.values()), seen
    flash, cudnn, flash_cold, naive = (seen[r].pop() for r in ids)
    assert flash == style.VARIANT_COLOURS["sdpa_flash"] and cudnn == style.VARIANT_COLOURS["sdpa_cudnn"]
    assert naive == style.VARIANT_COLOURS["naive"] and flash_cold == style.variant_colour("sdpa_flash", cold=True)
