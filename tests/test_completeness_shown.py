"""Issue 37, item 1: a figure from an incomplete trace says so wherever it is shown: `summary`
(a line under the run, `completeness.qualifier` in --json), the warnings `rank`, `check` and
`compare` print, and the ranking sentence. A shipped sample damaged (one step's kernel dropped),
its counts predicted from the raw JSON, beside an undamaged one.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from profiler.cli.main import main
from profiler.storage.store import Store

SAMPLES = Path(__file__).resolve().parent.parent / "data" / "samples" / "default"
WHOLE = SAMPLES / "naive_b8_h16_s1024_d64_bf16_causal_warm.json.gz"
TO_DAMAGE = SAMPLES / "flex_b8_h16_s1024_d64_bf16_causal_warm.json.gz"


def _damaged(tmp_path) -> tuple[Path, int, int]:
    """The flex sample with its last kernel dropped: (file, kernel launch calls, those left without a kernel)."""
    data = json.loads(gzip.decompress(TO_DAMAGE.read_bytes()))
    events = data["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    gone = kernels[-1]
    data["traceEvents"] = [e for e in events if e is not gone]
    launches = [e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")
                and "launch" in e["name"].lower() and "correlation" in e.get("args", {})]
    kept = {k["args"]["correlation"] for k in kernels if k is not gone}
    lost = sum(1 for c in launches if c["args"]["correlation"] not in kept)
    path = tmp_path / "flex_damaged.json.gz"
    path.write_bytes(gzip.compress(json.dumps(data).encode()))
    return path, len(launches), lost


@pytest.fixture
def pair(tmp_path):
    path, launches, lost = _damaged(tmp_path)
    store = Store(tmp_path / "s.duckdb")
    whole, damaged = store.ingest(WHOLE).run_id, store.ingest(path).run_id
    return store, whole, damaged, launches, lost


def test_summary_qualifies_the_incomplete_run_only(pair, capsys):
    store, whole, damaged, launches, lost = pair
    assert launches == 3 and lost == 1
    assert main(["summary", "--db", str(store.path), "--json"]) == 0
    rows = {r["run_id"]: r["completeness"] for r in json.loads(capsys.readouterr().out)}
    assert rows[whole]["qualifier"] is None
    assert rows[damaged]["qualifier"].startswith("incomplete trace: GPU time and kernels per op are low")
    launch = next(i for i in rows[damaged]["damage"] if i["reason"] == "launch_no_gpu")
    assert (launch["count"], launch["of"]) == (lost, launches)
    assert main(["summary", "--db", str(store.path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = {rid: next(i for i, ln in enumerate(lines) if ln.startswith(rid)) for rid in (whole, damaged)}
    assert lines[at[damaged] + 1].strip().startswith("figures above: incomplete trace: ")
    assert not lines[at[whole] + 1].strip().startswith("figures above:") if at[whole] + 1 < len(lines) else True


def test_rank_and_check_warn_and_the_ranking_sentence_says_so(pair, capsys):
    store, whole, damaged, launches, lost = pair
    main(["rank", whole, damaged, "--db", str(store.path)])
    got = capsys.readouterr()
    warned = [ln for ln in got.err.splitlines() if "INCOMPLETE" in ln]
    assert len(warned) == 1 and f"{lost:,} of {launches:,} kernel launch calls" in warned[0]
    assert damaged[:8] in warned[0] or "flex" in warned[0]
    assert "Figures from incomplete traces:" in got.out and "incomplete trace: GPU time" in got.out
    assert main(["rank", whole, damaged, "--db", str(store.path), "--json"]) in (0, 1)
    text = capsys.readouterr().out
    assert "incomplete trace: GPU time and kernels per op are low" in text
    main(["check", whole, damaged, "--db", str(store.path)])
    assert sum("INCOMPLETE" in ln for ln in capsys.readouterr().err.splitlines()) == 1


def test_whole_runs_get_no_qualifier_anywhere(tmp_path, capsys):
    store = Store(tmp_path / "s.duckdb")
    ids = [store.ingest(WHOLE).run_id, store.ingest(TO_DAMAGE).run_id]
    main(["rank", *ids, "--db", str(store.path)])
    got = capsys.readouterr()
    assert "INCOMPLETE" not in got.err and "incomplete" not in got.out
