"""What bench/gpu_issue38.sh measured, checked (run on the GPU machine, after the captures).

    python -m bench.gpu_issue38_check SAMPLES_DIR WORK_DIR OUT_DIR
    python -m bench.gpu_issue38_check --plain SAMPLES_DIR OUT_DIR     # 3. alone, over committed samples
    python -m bench.gpu_issue38_check --paired SAMPLES_DIR OUT_DIR [--rounds N] [--only STEM,...]
                                                                      # 3. counted afresh, in turns

1. Ceilings: WORK_DIR/ceilings_1.json against ceilings_2.json (two measurements minutes apart):
   each value's difference in %, ok within 3 %.
2. Counters: every warm trace under SAMPLES_DIR has its `.ncu.csv`; every row joins a launch of
   the trace (`storage.counters.match`); achieved occupancy never above theoretical + 1 pt.
3. A plain Nsight Compute run (its SpeedOfLight and Occupancy sections, `--clock-control none
   --cache-control all`, the same settings as the capture's) of the same call as the capture
   counted, for one workload of every mode (`PLAIN`: prefill, decode at 8k twice, prefill with GQA,
   train, window, packed lengths): each metric's difference in points, ok within 1 pt. Both CSVs are read here with the csv module alone.
   `--paired` counts each workload afresh on this GPU, the capture's way (`counters.collect`, the
   metrics the tool reads) and the plain way in turns, ROUNDS times each, and compares the medians:
   the committed counters may come from another machine of the same model, and a kernel of a few
   microseconds reads differently from one ncu run to the next (the plain runs' own spread is
   reported beside each difference).
4. Records: every trace carries "record"; its sampler, sample count, mean SM clock, throttling.
5. L2: each cold run's "l2_check" (its first kernel's DRAM reads as run and after a flush).
6. Idle against loaded: default/'s sdpa_flash against loaded/'s (the same call captured while
   bench/gpu_load.py ran): both records, and the warnings `conditions.warnings` gives for the pair
   when duckdb is importable (a store in WORK_DIR).

The plain ncu CSVs go to WORK_DIR; OUT_DIR gets summary.json and summary.txt only.
"""
from __future__ import annotations

import csv
import gzip
import io
import json
import statistics
import subprocess
import sys
import tarfile
from pathlib import Path

from profiler.capture import counters
from profiler.parse.ncu import read_report
from profiler.storage.counters import match

ROOT = Path(__file__).resolve().parents[1]

COMPARED = {"occupancy_achieved": "sm__warps_active.avg.pct_of_peak_sustained_active",
            "sm_throughput": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
            "dram_throughput": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
            "occupancy_theoretical": "sm__maximum_warps_per_active_cycle_pct"}
PLAIN = (("default", "sdpa_flash_b8_h16_s1024_d64"), ("decode_sweep", "sdpa_flash_decode_b8_h32_kv8_s1_L8192"),
         ("decode_sweep", "sdpa_cudnn_decode_b8_h32_kv8_s1_L8192"), ("prefill_gqa", "sdpa_cudnn_b4_h32_kv8_s2048_d128"),
         ("train", "sdpa_flash_train_b8_h16_s1024_d64"), ("window", "sdpa_cudnn_b4_h16_s4096_w1024_d64"),
         ("varlen", "sdpa_efficient_b1_h16_s4096_v512x1536x1024x1024_d64"))   # every mode, one workload each


def _meta(trace: Path) -> dict:
    with gzip.open(trace, "rt") as f:
        return json.load(f)["attention_run"]


def _launches(trace: Path) -> list[tuple]:
    with gzip.open(trace, "rt") as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel"]
    return sorted((e["name"], int(e["ts"] * 1000), *e["args"]["grid"], *e["args"]["block"]) for e in events)


def _rows(text: str) -> list[dict]:
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), 0)
    header, _units, *rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    return [dict(zip(header, r)) for r in rows]


def _num(text: str | None) -> float | None:
    try:
        return float((text or "").replace(",", ""))
    except ValueError:
        return None


def ceilings(out: Path) -> dict:
    got = {}
    try:
        first, second = (json.loads((out / f"ceilings_{i}.json").read_text()) for i in (1, 2))
    except (OSError, ValueError) as e:
        return {"error": str(e)}
    b = {c["what"]: c["value"] for c in second["ceilings"]}
    for c in first["ceilings"]:
        if c["what"] in b:
            diff = 100 * abs(c["value"] - b[c["what"]]) / max(c["value"], b[c["what"]])
            got[c["what"]] = {"first": c["value"], "second": b[c["what"]], "unit": c["unit"],
                              "diff_pct": round(diff, 2), "ok": diff <= 3.0}
    return {"gpu": first["gpu_name"], "stack": first["stack"], "skipped": first["skipped"], "values": got}


def counted(samples: Path) -> dict:
    out = {}
    for trace in sorted(samples.rglob("*_warm*.json.gz")):
        if trace.parent.name == "loaded":  # captured without counters: it is there for its record
            continue
        beside = counters.csv_beside(trace)
        if not beside.is_file():
            out[trace.name] = {"counters": False}
            continue
        report = read_report(beside.read_bytes(), beside.name)
        pairs, unmatched = match(report.kernels, _launches(trace))
        over = [k.values["occupancy_achieved_pct"] - k.values["occupancy_theoretical_ncu_pct"] for k in report.kernels
                if k.values.get("occupancy_achieved_pct") is not None and k.values.get("occupancy_theoretical_ncu_pct") is not None]
        out[trace.name] = {"counters": True, "rows": len(report.kernels), "matched": len(pairs), "unmatched": len(unmatched),
                           "device": report.device.text() if report.device else None,
                           "max_achieved_over_theoretical_pt": round(max(over), 2) if over else None}
    return out


def _workload(samples: Path, part: str, stem: str) -> tuple[Path | None, dict]:
    """(the first warm trace of `stem` under samples/part, the counted call's request), or (None, {})."""
    traces = sorted((samples / part).glob(f"{stem}_*warm*.json.gz"))
    if not traces:
        return None, {}
    meta = _meta(traces[0])
    return traces[0], {**{k: meta.get(k) for k in counters.REQUEST_KEYS}, "seed": 0}


def _plain_cmd(ncu: str, request: dict) -> list[str]:
    """ncu's own Occupancy and SpeedOfLight sections over the counted call, as a raw CSV."""
    return [ncu, "--profile-from-start", "off", *counters.SETTINGS, "--section", "SpeedOfLight", "--section",
            "Occupancy", "--csv", "--page", "raw", "--print-units", "base", sys.executable, "-m",
            "profiler.capture.counted", json.dumps(request)]


def plain(samples: Path, out: Path) -> dict:
    ncu = counters.find_ncu()
    if ncu is None:
        return {"error": "no ncu"}
    found = {}
    for part, stem in PLAIN:
        trace, request = _workload(samples, part, stem)
        if trace is None:
            found[stem] = {"error": "no trace"}
            continue
        run = subprocess.run(_plain_cmd(ncu, request), capture_output=True, text=True, timeout=120, cwd=ROOT)
        (out / f"plain_{stem}.csv").write_text(run.stdout)
        theirs = _rows(run.stdout)
        ours = _rows(counters.csv_beside(trace).read_text())
        pairs = []
        for a, b in zip(ours, theirs):
            if a.get("Kernel Name") != b.get("Kernel Name"):
                pairs.append({"error": "kernels differ", "tool": a.get("Kernel Name", "")[:80], "plain": b.get("Kernel Name", "")[:80]})
                continue
            diffs = {k: (None if _num(a.get(m)) is None or _num(b.get(m)) is None else round(_num(a[m]) - _num(b[m]), 2))
                     for k, m in COMPARED.items()}
            pairs.append({"kernel": a["Kernel Name"][:80], "tool_minus_plain_pt": diffs,
                          "ok": all(d is None or abs(d) <= 1.0 for d in diffs.values())})
        found[stem] = {"rows": [len(ours), len(theirs)], "kernels": pairs,
                       "settings": " ".join(counters.SETTINGS) + " (both runs)"}
    return found


ROUNDS = 3


def paired(samples: Path, out: Path, rounds: int = ROUNDS, only: set[str] | None = None) -> dict:
    """Each PLAIN workload (those named in `only`, if given) counted `rounds` times the tool's way
    and the plain way, in turns; the raw exports packed into OUT/paired_csv.tgz (one file)."""
    from profiler.parse.ncu import METRIC_RUNS

    ncu = counters.find_ncu()
    if ncu is None:
        return {"error": "no ncu"}
    found = {}
    for part, stem in PLAIN:
        if only and stem not in only:
            continue
        trace, request = _workload(samples, part, stem)
        if trace is None:
            found[stem] = {"error": "no trace"}
            continue
        tool_runs, plain_runs = [], []
        for i in range(rounds):
            path = out / f"paired_{stem}_tool{i}.csv"
            got = counters.collect(request, path, METRIC_RUNS)
            tool_runs.append(_rows(path.read_text()) if path.is_file() else [])
            if not path.is_file():
                found[stem] = {"error": f"tool: {got}"[:300]}
                break
            run = subprocess.run(_plain_cmd(ncu, request), capture_output=True, text=True, timeout=120, cwd=ROOT)
            (out / f"paired_{stem}_plain{i}.csv").write_text(run.stdout)
            plain_runs.append(_rows(run.stdout))
        if stem in found:
            continue
        kernels = []
        for k, a in enumerate(tool_runs[0]):
            name = a.get("Kernel Name", "")
            diffs, spread = {}, {}
            for key, m in COMPARED.items():
                ours = [_num(r[k].get(m)) for r in tool_runs if k < len(r) and r[k].get("Kernel Name") == name]
                theirs = [_num(r[k].get(m)) for r in plain_runs if k < len(r) and r[k].get("Kernel Name") == name]
                ours, theirs = [x for x in ours if x is not None], [x for x in theirs if x is not None]
                if ours and theirs:
                    diffs[key] = round(statistics.median(ours) - statistics.median(theirs), 2)
                    spread[key] = round(max(theirs) - min(theirs), 2)
            kernels.append({"kernel": name[:80], "tool_minus_plain_pt": diffs, "plain_spread_pt": spread,
                            "ok": bool(diffs) and all(abs(d) <= 1.0 for d in diffs.values())})
        found[stem] = {"rounds": rounds, "kernels": kernels,
                       "settings": " ".join(counters.SETTINGS) + " (both ways, in turns)"}
    with tarfile.open(out / "paired_csv.tgz", "w:gz") as tar:
        for path in sorted(out.glob("paired_*.csv")):
            tar.add(path, arcname=path.name)
    return found


def records(samples: Path) -> dict:
    out = {}
    for trace in sorted(samples.rglob("*.json.gz")):
        rec = _meta(trace).get("record")
        gpu = (rec or {}).get("gpu") or {}
        out[trace.name] = None if rec is None else {
            "source": gpu.get("source"), "samples": gpu.get("samples"), "note": gpu.get("note"),
            "sm_clock_mhz": (gpu.get("sm_clock_mhz") or {}).get("mean"), "throttled": gpu.get("throttled"),
            "throttle_reasons": gpu.get("throttle_reasons"), "other_processes": rec.get("other_processes"),
            "driver": (rec.get("versions") or {}).get("driver")}
    return out


def l2(samples: Path) -> dict:
    return {t.name: _meta(t).get("record", {}).get("l2_check") for t in sorted(samples.rglob("*_cold*.json.gz"))}


def loaded(samples: Path, work: Path) -> dict:
    pair = [sorted((samples / part).glob("sdpa_flash_b8_h16_s1024_d64_*warm*.json.gz")) for part in ("default", "loaded")]
    if not all(pair):
        return {"error": "no idle or no loaded trace"}
    idle, busy = pair[0][0], pair[1][0]
    found = {"records": {"idle": records(idle.parent)[idle.name], "loaded": records(busy.parent)[busy.name]}}
    try:
        from profiler.analysis.findings import conditions
        from profiler.storage.store import Store
    except ImportError as e:
        return {**found, "warnings": f"not computed: {e}"}
    store = Store(work / "pair.duckdb")
    ids = [store.ingest(p, source="captured").run_id for p in (idle, busy)]
    return {**found, "warnings": conditions.warnings(store, ids)}


def main(argv: list[str]) -> int:
    if argv[0] in ("--plain", "--paired"):
        samples, out = Path(argv[1]), Path(argv[2])
        opts = dict(zip(argv[3::2], argv[4::2]))  # --paired only: --rounds N, --only STEM[,STEM]
        found = plain(samples, out) if argv[0] == "--plain" else paired(
            samples, out, int(opts.get("--rounds", ROUNDS)), set(filter(None, opts.get("--only", "").split(","))))
        (out / f"{argv[0][2:]}.json").write_text(json.dumps(found, indent=2))
        ok = [p.get("ok") for f in found.values() for p in f.get("kernels", [])]
        print(f"plain ncu: {sum(bool(o) for o in ok)} of {len(ok)} kernels within 1 pt over {len(found)} workloads")
        print(json.dumps(found)[:6000])
        return 0
    samples, work, out = Path(argv[0]), Path(argv[1]), Path(argv[2])
    summary = {"ceilings": ceilings(work), "counters": counted(samples), "plain_ncu": plain(samples, work),
               "records": records(samples), "l2": l2(samples)}
    try:
        summary["idle_vs_loaded"] = loaded(samples, work)
    except Exception as e:  # noqa: BLE001 - the summary says what failed; the other sections stand
        summary["idle_vs_loaded"] = {"error": f"{type(e).__name__}: {e}"[:300]}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    lines = [f"ceilings: {json.dumps(summary['ceilings'].get('values', summary['ceilings']))}"]
    c = summary["counters"]
    lines.append(f"counters: {sum(v['counters'] for v in c.values())} of {len(c)} warm traces; unmatched rows "
                 f"{sum(v.get('unmatched', 0) for v in c.values())}")
    lines.append(f"plain ncu: {json.dumps(summary['plain_ncu'])[:2000]}")
    r = summary["records"]
    lines.append(f"records: {sum(v is not None for v in r.values())} of {len(r)} traces; sampled "
                 f"{sum(bool(v and v['samples']) for v in r.values())}; throttled {sum(bool(v and v['throttled']) for v in r.values())}")
    lines.append(f"l2: {json.dumps({k: (v or {}).get('said') for k, v in summary['l2'].items()})}")
    lines.append(f"idle vs loaded: {json.dumps(summary['idle_vs_loaded'])[:3000]}")
    (out / "summary.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
