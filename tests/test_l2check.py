"""The cold run's L2 check (profiler/capture/l2check.py): reading ncu's export and the verdict."""
from __future__ import annotations

import gzip
import json

import pytest

from profiler.analysis.findings.conditions import l2_text
from profiler.capture import l2check


def export(hit: str, read: str, hit_unit: str = "%", read_unit: str = "byte", kernel: str = "flash_fwd_kernel") -> str:
    return ("==PROF== Connected to process 1\n"
            '"ID","Kernel Name","lts__t_sector_hit_rate.pct","dram__bytes_read.sum"\n'
            f'"","","{hit_unit}","{read_unit}"\n'
            f'"0","{kernel}","{hit}","{read}"\n'
            f'"1","second_kernel","99.0","1"\n')


def test_first_kernel_reads_the_first_row_in_base_units():
    got = l2check.first_kernel(export("12.5", "50,331,648"), "x")
    assert got == {"kernel": "flash_fwd_kernel", "hit_rate_pct": 12.5, "dram_read_bytes": 50331648.0}


@pytest.mark.parametrize("text, words", [
    (export("12.5", "48", read_unit="Mbyte"), "Mbyte"),
    (export("12.5", "48", hit_unit=""), "lts__t_sector_hit_rate.pct is in ''"),
    ("==ERROR== no kernels\n", "no ncu table"),
    ('"ID","Kernel Name","lts__t_sector_hit_rate.pct"\n"","","%"\n"0","k","1"\n', "dram__bytes_read.sum is missing"),
    (export("n/a", "48"), "not a number"),
])
def test_first_kernel_refuses_what_it_cannot_read(text, words):
    with pytest.raises(l2check.CheckError, match=None) as e:
        l2check.first_kernel(text, "ncu (as_run)")
    assert words in str(e.value) and "ncu (as_run)" in str(e.value)


def _k(hit, read, kernel="k"):
    return {"kernel": kernel, "hit_rate_pct": hit, "dram_read_bytes": read}


def test_verdict_cold_when_dram_reads_match_a_flushed_l2():
    v = l2check.verdict(_k(10.0, 49e6), _k(9.0, 50e6))
    assert v["cold"] is True and v["dram_read_share"] == 0.98 and v["kernels_agree"]
    assert l2_text(v) == "missed L2 (DRAM reads 98 % of a flushed L2's)"


def test_verdict_not_cold_when_inputs_were_resident():
    v = l2check.verdict(_k(70.0, 20e6), _k(9.0, 50e6, kernel="other"))
    assert v["cold"] is False and v["dram_read_share"] == 0.4 and not v["kernels_agree"]
    assert "partly in L2" in v["said"] and l2_text(v).startswith("partly in L2 (DRAM reads 40 %")


def test_verdict_threshold_is_the_one_constant():
    at = l2check.COLD_MIN_DRAM_SHARE
    assert l2check.verdict(_k(0, at * 1000), _k(0, 1000))["cold"] is True
    assert l2check.verdict(_k(0, at * 1000 - 1), _k(0, 1000))["cold"] is False
    assert l2check.verdict(_k(0, 5), _k(0, 0))["cold"] is False  # nothing read after a flush: not shown cold


def test_command_counts_the_first_kernel_of_a_cold_call_with_and_without_flush():
    for cache in ("none", "all"):
        cmd = l2check.command("ncu", {"variant": "sdpa_flash", "warmup_calls": 3}, cache)
        assert cmd[cmd.index("--cache-control") + 1] == cache
        assert cmd[cmd.index("--launch-count") + 1] == "1"
        assert cmd[cmd.index("--replay-mode") + 1] == "application"
        assert json.loads(cmd[-1])["cold"] is True


def test_l2_text_of_an_unchecked_run():
    assert l2_text(None) is None
    assert l2_text({"cold": None, "said": "no ncu"}) == "not checked: no ncu"


def test_keep_writes_the_check_into_the_record(tmp_path):
    trace = tmp_path / "r_cold.json.gz"
    with gzip.open(trace, "wt") as f:
        json.dump({"traceEvents": [], "attention_run": {"cold": True, "record": {"l2_flushed": False}}}, f)
    l2check.keep(trace, {"cold": True, "said": "x"})
    with gzip.open(trace, "rt") as f:
        record = json.load(f)["attention_run"]["record"]
    assert record == {"l2_flushed": False, "l2_check": {"cold": True, "said": "x"}}


def test_a_cold_run_found_warm_warns_and_the_table_says_so(tmp_path):
    from profiler.analysis.findings import conditions
    from profiler.storage.store import Store
    from tests.test_measured import _with_record

    store = Store(tmp_path / "s.duckdb")
    ids = {}
    for name, check in {"warmish": l2check.verdict(_k(70.0, 20e6), _k(9.0, 50e6)),
                        "cold": l2check.verdict(_k(10.0, 49e6), _k(9.0, 50e6))}.items():
        path = _with_record(tmp_path, name, 1980.0, "2.11.0", [])
        l2check.keep(path, check)
        ids[name] = store.ingest(path, name=name).run_id
    said = conditions.warnings(store, [ids["warmish"], ids["cold"]])
    assert len(said) == 1 and "found its data partly in L2" in said[0] and "40 %" in said[0]
    table = conditions.record_table(store, [ids["warmish"], ids["cold"]]).set_index("run_id")
    assert table.loc[ids["cold"], "l2_cold_check"] == "missed L2 (DRAM reads 98 % of a flushed L2's)"
    assert table.loc[ids["warmish"], "l2_cold_check"].startswith("partly in L2")
