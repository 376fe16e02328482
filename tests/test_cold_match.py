"""Issue 35: a cold run's first call is matched on the whole workload (mode, heads, K/V heads,
lengths, window, packed lengths, dtype, causal, device), so a training run never shows a prefill's
cold call, and it is printed in a readable unit, not as raw microseconds."""
from __future__ import annotations

import gzip
import json

from profiler.cli.main import main
from profiler.storage.store import Store
from tests.conftest import SAMPLES

NAIVE = SAMPLES / "default" / "naive_b8_h16_s1024_d64_bf16_causal_{}.json.gz"
NAIVE_TRAIN = SAMPLES / "modes" / "train" / "naive_train_b8_h16_s1024_d64_bf16_causal_warm.json.gz"
# a second variant of each workload, so that each is ranked
RIVALS = (SAMPLES / "default" / "sdpa_flash_b8_h16_s1024_d64_bf16_causal_warm.json.gz",
          SAMPLES / "modes" / "train" / "sdpa_auto_train_b8_h16_s1024_d64_bf16_causal_warm.json.gz")


def _readable(us: float) -> str:
    """Three significant digits in s, ms or µs (written here, apart from the code under test)."""
    for div, unit in ((1e6, "s"), (1e3, "ms"), (1.0, "µs")):
        if us >= div:
            return f"{float(f'{us / div:.3g}'):g} {unit}"
    return f"{us:.3g} µs"


def test_cold_first_call_matches_the_whole_workload_in_readable_units(tmp_path, capsys):
    db = Store(tmp_path / "store.duckdb")
    warm, cold, train = (db.ingest(p).run_id for p in (NAIVE.with_name(NAIVE.name.format("warm")),
                                                        NAIVE.with_name(NAIVE.name.format("cold")), NAIVE_TRAIN))
    with gzip.open(NAIVE.with_name(NAIVE.name.format("cold")), "rt") as f:
        cold_us = float(json.load(f)["attention_run"]["wall_us_per_call"])
    rivals = [db.ingest(p).run_id for p in RIVALS]
    assert main(["rank", warm, train, *rivals, "--json", "--db", str(db.path)]) == 0
    got = json.loads(capsys.readouterr().out)
    rows = {r["run_id"]: r for s in got["sets"] for r in s["runs"]}
    assert rows[warm]["cold_us"] == cold_us           # the prefill's own cold run
    assert rows[train]["cold_us"] is None             # a training run has no cold run of its mode
    assert main(["rank", warm, train, *rivals, "--db", str(db.path)]) == 0
    text = capsys.readouterr().out
    (line,) = [ln for ln in text.splitlines() if warm in ln]
    assert _readable(cold_us) in line and f"{cold_us:,.0f}" not in line, line
