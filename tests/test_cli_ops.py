"""`python -m profiler ops RUN [--json] [--kind ...]` on the H200 samples."""
from __future__ import annotations

import json

import pytest

from profiler.analysis.reads import run_queries
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
    table, step = capsys.readouterr().out.split("\n\n")
    lines = table.splitlines()
    assert lines[0].split()[:4] == ["op", "backend", "shape", "dtype"]
    assert len(lines) == 3 and all(line.startswith("aten::bmm") for line in lines[1:])
    figure = run_queries.run_metrics(store, [ids["naive"]]).iloc[0]["gpu_work_us_per_iter"]  # the one figure
    assert f"each step launches {figure:,.1f} µs of GPU work" in step
    assert main(["ops", ids["naive"], "--kind", "attention", "--db", str(store.path)]) == 0
    assert "no modelled attention op" in capsys.readouterr().out


def test_ops_unknown_run_is_one_line(sample_store, capsys):
    store, _ = sample_store
    assert main(["ops", "nosuchrun", "--db", str(store.path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no run 'nosuchrun'") and "Traceback" not in err


@pytest.mark.slow  # a subprocess
def test_ops_command_loads_neither_pandas_nor_pyarrow(sample_store):
    """Issue 9: the command starts in well under a second on a 1M-event trace partly because it
    imports only numpy and duckdb; its rows are the same as the DataFrame the dashboard reads."""
    import subprocess
    import sys
    from pathlib import Path

    from profiler.analysis.reads import op_costs

    store, ids = sample_store
    code = ("import io, json, sys, contextlib; from profiler.cli.main import main; out = io.StringIO()\n"
            "with contextlib.redirect_stdout(out): rc = main(sys.argv[1:])\n"
            "print(json.dumps({'rc': rc, 'rows': json.loads(out.getvalue()), "
            "'loaded': [m for m in ('pandas', 'pyarrow') if m in sys.modules]}))")
    done = subprocess.run([sys.executable, "-c", code, "ops", ids["naive"], "--json", "--db", str(store.path)],
                          cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True, timeout=120)
    got = json.loads(done.stdout)
    assert (got["rc"], got["loaded"]) == (0, [])
    table = op_costs.ops_table(store, [ids["naive"]])
    assert [(r["op"], r["shape"], r["calls"]) for r in got["rows"]] == list(
        zip(table["op"], table["shape"], table["calls"]))


def test_ops_on_an_older_store_migrates_it_as_before(tmp_path, capsys):
    """`ops` opens the store read-only; an older schema falls back to the read-write open (which
    migrates), so the command works on it as it did."""
    import duckdb

    from profiler.storage.store import Store
    from profiler.storage.migrations import SCHEMA_VERSION
    from tests.conftest import SAMPLES

    store = Store(tmp_path / "old.duckdb")
    run_id = store.ingest(SAMPLES / "default" / "naive_b8_h16_s1024_d64_bf16_causal_warm.json.gz").run_id
    with duckdb.connect(str(store.path)) as con:
        con.execute("UPDATE store_meta SET value = ? WHERE key = 'schema_version'", [str(SCHEMA_VERSION - 1)])
    assert main(["ops", run_id[:8], "--kind", "gemm", "--db", str(store.path)]) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("aten::bmm")
    assert Store(store.path).schema_version() == SCHEMA_VERSION
