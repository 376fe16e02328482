"""`python -m profiler ops RUN [--json] [--kind ...]` on the H200 samples."""
from __future__ import annotations

import json

import pytest

from profiler.cli.main import main
from profiler.cli.ops import COLUMNS


def test_ops_json_has_the_issue_columns(sample_store, capsys):
    store, ids = sample_store
    assert main(["ops", ids["sdpa_flash"][:8], "--json", "--db", str(store.path)]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert set(COLUMNS) <= set(row)
    assert (row["op"], row["backend"], row["calls"], row["bound"]) == (
        "aten::scaled_dot_product_attention", "flash", 3, "compute")
    assert row["flops"] == 4 * 64 * 8 * 16 * (1024 * 1025 // 2)
    assert row["tflops"] == pytest.approx(row["flops"] / (row["kernel_us_mean"] * 1e-6) / 1e12)
    assert "sm80" in row["kernels"]


def test_ops_kind_filters_and_text_table(sample_store, capsys):
    store, ids = sample_store
    assert main(["ops", ids["naive"], "--kind", "gemm", "--db", str(store.path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:4] == ["op", "backend", "shape", "dtype"]
    assert len(lines) == 3 and all(line.startswith("aten::bmm") for line in lines[1:])
    assert main(["ops", ids["naive"], "--kind", "attention", "--db", str(store.path)]) == 0
    assert "no modelled attention op" in capsys.readouterr().out


def test_ops_unknown_run_is_one_line(sample_store, capsys):
    store, _ = sample_store
    assert main(["ops", "nosuchrun", "--db", str(store.path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no run 'nosuchrun'") and "Traceback" not in err
