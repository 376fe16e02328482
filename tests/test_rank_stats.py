"""Ranking with statistics on the shipped H200 samples: repeats grouped (median, least to most,
outliers), ties, a variant that runs another's kernels, crossovers through ties, and one
definition of a group's figure in the rank table, `rank --json` and the Sweep page. Times are
recomputed here from the raw trace JSON (GPU work per profiled step), not by the code under test."""
from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from profiler.analysis.findings import ranking, repeats, sweep_leads, sweeps
from profiler.capture import samples
from profiler.cli.main import main
from profiler.present import curve_charts
from profiler.storage.store import Store
from tests import raw_trace
from tests.conftest import SAMPLES, held_open

FOLDERS = ("default", "sweep", "modes/decode", "modes/decode_sweep")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Every trace of FOLDERS, and {run id: its file}."""
    store = Store(tmp_path_factory.mktemp("rank_stats") / "s.duckdb")
    files = [p for f in FOLDERS for p in sorted((SAMPLES / f).glob("*.json.gz"))]
    ids = {}
    for batch in samples.batches(files):
        for path, got in zip(batch, samples.ingest_samples(store, batch)):
            ids[got.run_id] = path
    with held_open(store):  # the module's reads share one open database
        yield store, ids


def _raw(path: Path) -> tuple[dict, float]:
    trace = raw_trace.load(path)
    return trace["attention_run"], raw_trace.us_per_step(trace["traceEvents"], raw_trace.GPU_WORK)


def _rank_json(store, *argv) -> dict:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["rank", *argv, "--json", "--db", str(store.path)]) == 0
    return json.loads(out.getvalue())


def _independent_outliers(values: list[float]) -> set[int]:
    """A repeat further than 5 % and 3 MADs from the median, fewer than half of them (the rule as
    documented), by plain Python."""
    if len(values) < 3:
        return set()
    m = statistics.median(values)
    mad = statistics.median(abs(v - m) for v in values)
    far = {i for i, v in enumerate(values) if abs(v - m) > max(0.05 * m, 3 * mad)}
    return far if 2 * len(far) < len(values) else set()


def test_the_rules_of_repeats():
    fig = repeats.figure([243.7, 244.3, 276.6])
    assert fig.outliers == (2,) and (fig.median, fig.lo, fig.hi, fig.n) == (244.0, 243.7, 244.3, 2)
    assert repeats.figure([10.0, 30.0]).outliers == ()                      # two: nothing says which
    assert repeats.figure([0.0, None, float("nan")]) is repeats.NONE        # no time: no figure
    a, b = repeats.figure([100, 101, 102]), repeats.figure([101.5, 103, 104])
    assert repeats.tied(a, b, repeats.pair_noise(a, b))                      # intervals overlap
    c = repeats.figure([103, 103.2, 103.3])
    assert not repeats.tied(a, c, 0.0) and repeats.tied(a, c, 0.05)         # apart, unless the noise is larger
    assert repeats.tied(repeats.figure([5.0]), repeats.figure([5.0]), float("nan"))
    r = repeats.ratio(a, c)
    assert r.lo == pytest.approx(103 / 102) and r.hi == pytest.approx(103.3 / 100) and r.lo < r.mid < r.hi


def test_all_runs_at_the_default_shape_never_compare_a_run_with_its_repeat(store):
    store, ids = store
    default = [r for r, p in ids.items() if "_b8_h16_s1024_d64_bf16_causal_" in p.name]
    got = _rank_json(store, *default)
    sets = got["sets"]
    assert {s["set"].rsplit(", ", 2)[1] for s in sets} == {"warm", "cold"}   # cold and warm apart
    for one in sets:
        assert len({r["variant"] for r in one["runs"]}) == len(one["runs"])   # one row per variant
    warm = next(s for s in sets if ", warm, " in s["set"])
    rows = {r["variant"]: r for r in warm["runs"]}
    raw: dict[str, list] = {}
    for run in default:
        meta, us = _raw(ids[run])
        if not meta["cold"]:
            raw.setdefault(meta["variant"], []).append((run, us))
    for variant, runs in raw.items():
        values = [us for _, us in runs]
        odd = _independent_outliers(values)
        kept = [v for i, v in enumerate(values) if i not in odd]
        row = rows[variant]
        assert row["us_per_call"] == pytest.approx(statistics.median(kept), rel=1e-6), variant
        assert (row["us_min"], row["us_max"]) == pytest.approx((min(kept), max(kept)), rel=1e-6)
        assert sorted(row["outliers"]) == sorted(runs[i][0] for i in odd)
    assert rows["naive_compiled"]["outliers"] and rows["flex"]["outliers"]   # 329.8 against ~750 µs; 81 against 119
    # sdpa_auto runs cuDNN's kernel: named as such, never the runner-up
    assert rows["sdpa_auto"]["same_kernels_as"] == "sdpa_cudnn"
    assert warm["evidence"]["winner"] == rows["sdpa_cudnn"]["run_id"]
    assert warm["evidence"]["runner_up"] == rows["flash_attn_4"]["run_id"]
    assert "sdpa_auto bf16 L=1024 (4 runs) dispatches to the same cuDNN kernel as sdpa_cudnn" in warm["sentence"]
    assert "faster than sdpa_auto" not in warm["sentence"] and "faster than sdpa_cudnn" not in warm["sentence"]
    assert "Why: sdpa_cudnn runs a cuDNN" in warm["sentence"] and "FlashAttention-4" in warm["sentence"]
    assert "0 µs against" not in warm["sentence"]


def test_the_outlier_flash_decode_repeat_is_flagged(store):
    store, ids = store
    sweep = [r for r, p in ids.items() if p.parent.name == "decode_sweep" and "_L32768_" in p.name]
    got = _rank_json(store, *sweep)
    flash = next(r for r in got["runs"] if r["variant"] == "sdpa_flash")
    values = {r: _raw(ids[r])[1] for r in flash["run_ids"]}
    slow = max(values, key=values.get)
    assert flash["outliers"] == [slow] and values[slow] > 1.1 * statistics.median(values.values())
    assert f"Outlier: run {slow} of sdpa_flash" in got["sentence"]
    assert got["evidence"]["winner"] in [r["run_id"] for r in got["runs"] if r["variant"] == "sdpa_cudnn"]


def test_filters_variant_names_and_duplicates(store):
    store, ids = store
    by_filter = _rank_json(store, "--mode", "decode", "--kv-len", "32768", "--warm")
    assert {r["variant"] for r in by_filter["runs"]} >= {"sdpa_cudnn", "sdpa_flash", "flex"}
    assert all(", warm, " in s for s in [by_filter["set"]])
    named = _rank_json(store, "sdpa_cudnn,sdpa_flash", "sdpa_cudnn", "--mode", "decode", "--kv-len", "8192")
    assert sorted(r["variant"] for r in named["runs"]) == ["sdpa_cudnn", "sdpa_flash"]
    cudnn = next(r for r in named["runs"] if r["variant"] == "sdpa_cudnn")
    assert cudnn["runs"] == 4                  # decode/ and the sweep's 3 repeats, each once
    again = _rank_json(store, *cudnn["run_ids"], *cudnn["run_ids"], *[r["run_ids"][0] for r in named["runs"]])
    assert {r["variant"]: r["runs"] for r in again["runs"]} == {"sdpa_cudnn": 4, "sdpa_flash": 1}
    files = [str(ids[r]) for r in cudnn["run_ids"][:2]] + [str(ids[r]) for r in named["runs"][1]["run_ids"][:2]]
    from_files = _rank_json(store, *files)          # ingested into a temporary store
    assert {r["variant"]: r["runs"] for r in from_files["runs"]} == {"sdpa_cudnn": 2, "sdpa_flash": 2}


def test_the_prefill_sweep_names_the_cudnn_to_fa4_lead_change_through_the_tie(store):
    store, ids = store
    sweep = [r for r, p in ids.items() if p.parent.name == "sweep"]
    with store.session() as db:
        points = sweeps.sweep_points(db, sweep)
        curves = sweep_leads.ranked_curves(db, sweeps.sweep_curves(points), points)
        crossed = sweeps.crossovers(curves)
    raw: dict = {}
    for run in sweep:
        meta, us = _raw(ids[run])
        raw.setdefault((meta["variant"], meta["seq_len"]), []).append(us)
    cudnn, fa4 = ({n: repeats.figure(raw[v, n]) for n in (512, 1024, 2048, 4096)} for v in ("sdpa_cudnn", "flash_attn_4"))
    for n in (512, 1024):                      # cuDNN ahead, the repeats apart
        assert cudnn[n].hi < fa4[n].lo
    assert fa4[4096].hi < cudnn[4096].lo       # FA4 ahead at 4k
    row = crossed[(crossed["leader"] == "flash_attn_4") & (crossed["trailer"] == "sdpa_cudnn")]
    assert len(row) == 1
    row = row.iloc[0]
    assert row["x_lo"] == 1024 and row["x_hi"] in (2048, 4096)
    if row["x_hi"] == 4096:                    # 2k a tie, as the repeats' spread says
        assert row["ties"] == [2048] and "tied at 2k" in row["text"]
    else:                                      # 2k a lead: apart by more than the larger spread
        assert fa4[2048].hi < cudnn[2048].lo or repeats.difference(fa4[2048], cudnn[2048]) > max(
            fa4[2048].spread, cudnn[2048].spread)
    assert row["text"].startswith("flash_attn_4 overtakes sdpa_cudnn for prefill from ")
    assert "ahead by 7." in row["text"] and "at 4k" in row["text"]    # 589 against 633 µs


def _raw_work(path: Path) -> tuple:
    """The GPU work a run launches, read from its JSON by hand: (name, launches per step) of each
    kernel, copy and set inside its profiled steps, sorted."""
    trace = raw_trace.load(path)
    events, windows = trace["traceEvents"], raw_trace.steps(trace["traceEvents"])
    counts: dict[str, int] = {}
    for e in events:
        if e.get("cat") in raw_trace.GPU_WORK and any(a <= e["ts"] < b for a, b in windows):
            counts[e["name"]] = counts.get(e["name"], 0) + 1
    return tuple(sorted((n, round(c / len(windows), 3)) for n, c in counts.items()))


def test_a_variant_running_anothers_kernels_is_never_a_rival_in_a_sweep(store):
    """On the shipped prefill sweep, sdpa_auto runs cuDNN's kernels (checked on the raw JSON) at
    every length: the Sweep page names it so and no crossover or lead names it as a rival (before,
    "flash_attn_4 overtakes sdpa_auto" was reported beside "... overtakes sdpa_cudnn")."""
    store, ids = store
    sweep = [r for r, p in ids.items() if p.parent.name == "sweep"]
    work: dict = {}
    for run in sweep:
        meta = raw_trace.load(ids[run])["attention_run"]
        work.setdefault((meta["variant"], meta["seq_len"]), set()).add(_raw_work(ids[run]))
    lengths = sorted(n for v, n in work if v == "sdpa_auto")
    same = [n for n in lengths if work["sdpa_auto", n] == work["sdpa_cudnn", n] and len(work["sdpa_auto", n]) == 1]
    assert same == lengths == [512, 1024, 2048, 4096]
    with store.session() as db:
        points = sweeps.sweep_points(db, sweep)
        plain = sweeps.sweep_curves(points)
        curves = sweep_leads.ranked_curves(db, plain, points)
        crossed, lead = sweeps.crossovers(curves), sweep_leads.leaders(curves)
    assert "sdpa_auto" in set(sweeps.crossovers(plain)[["leader", "trailer"]].values.ravel())   # what it was
    auto = curves[curves["variant"] == "sdpa_auto"]
    assert sorted(auto["x"]) == same and set(auto["same_kernels_as"]) == {"sdpa_cudnn"}
    assert "sdpa_auto" not in set(crossed[["leader", "trailer"]].values.ravel())
    assert "sdpa_auto" not in set(lead[["leader", "runner_up"]].values.ravel())
    assert sweep_leads.same_kernel_sentence(curves, "seq_len") == (
        "sdpa_auto runs the same kernels as sdpa_cudnn at 512, 1k, 2k, 4k: named with it, "
        "not ranked as its rival there.")
    # a pair of variants with different kernels is still compared: the cuDNN -> FA4 change stays
    assert len(crossed[(crossed["leader"] == "flash_attn_4") & (crossed["trailer"] == "sdpa_cudnn")]) == 1


def test_decode_says_cudnn_leads_at_every_kv_length(store):
    store, ids = store
    sweep = [r for r, p in ids.items() if p.parent.name == "decode_sweep"]
    with store.session() as db:
        points = sweeps.sweep_points(db, sweep)
        curves = sweep_leads.ranked_curves(db, sweeps.sweep_curves(points), points)
        lead = sweep_leads.leaders(curves)
    assert set(lead["leader"]) == {"sdpa_cudnn"} and len(lead) == 6 and not lead["tied"].any()
    text = sweep_leads.lead_sentence(lead, "kv_len")
    assert text.startswith("sdpa_cudnn leads at every KV cache length (1k: by ")
    for r in lead.itertuples():                # each margin against the raw traces' medians
        us = {}
        for run in sweep:
            meta, t = _raw(ids[run])
            if meta["kv_len"] == r.x and meta["variant"] in (r.leader, r.runner_up):
                us.setdefault(meta["variant"], []).append(t)
        want = repeats.figure(us[r.runner_up]).median / repeats.figure(us[r.leader]).median
        assert 1 + r.margin_pct / 100 == pytest.approx(want, rel=0.01)   # raw: summed durations, no union


def test_one_definition_rank_table_rank_json_and_the_sweep(store):
    """For every point of every sweep: the winner, each group's median and interval are the same
    in the rank table, `rank --json` and the Sweep page's curves and leaders."""
    store, ids = store
    with store.session() as db:
        points = sweeps.sweep_points(db, list(ids))
        curves = sweep_leads.ranked_curves(db, sweeps.sweep_curves(points), points)
        lead = sweep_leads.leaders(curves).set_index(["sweep", "x"])
    checked = 0
    for (sweep, x), part in curves.groupby(["sweep", "x"]):
        runs = points[(points["sweep"] == sweep) & (points["x"] == x)]["run_id"].unique().tolist()
        table = ranking.rank_table(store, runs).set_index("variant")
        got = {r["variant"]: r for r in _rank_json(store, *runs)["runs"]}
        for row in part.itertuples():
            want = (row.us_per_call, row.us_min, row.us_max, row.repeats)
            assert tuple(table.loc[row.variant, ["us_per_call", "us_min", "us_max", "repeats"]]) == pytest.approx(want)
            assert (got[row.variant]["us_per_call"], got[row.variant]["us_min"], got[row.variant]["us_max"],
                    got[row.variant]["repeats"]) == pytest.approx(want)
        if (sweep, x) in lead.index:
            winner = table[(table["rank"] == 1) & table["same_kernels_as"].isna()].index
            assert lead.loc[(sweep, x), "leader"] in winner
            checked += 1
    assert checked >= 10


def test_end_of_line_labels_never_overlap():
    values = [633.0, 634.0, 589.0, 20_000.0, 640.0]
    placed = curve_charts.label_positions(values, 20.0, 42_000.0, 340)
    import math

    top = max(42_000.0, max(placed))                # the axis holds the top label
    gap = math.log10(top / 20) * curve_charts.LABEL_PX / 340
    ys = sorted(math.log10(y) for y in placed)
    assert all(b - a >= gap - 1e-9 for a, b in zip(ys, ys[1:]))
    assert placed[values.index(589.0)] == pytest.approx(589.0)   # the lowest stays at its line
