"""What tells two ranked groups apart: the same work launched, or the property that differs.

- `same_work(store, part)`: groups of one set whose representative runs launch the same GPU work
  (the same kernel, copy and set names, as often per iteration: `sql/gpu_work_names.sql`). Such a
  variant is named with the one it runs the work of ("dispatches to the same cuDNN kernel as
  sdpa_cudnn"), not ranked as its rival. Of groups with the same work, the one kept is a variant
  that forces an SDPA backend (`vocab.attention.SDPA_BACKENDS`: SDPA's own choice, `sdpa_auto`,
  dispatches to one of them), else the faster.
- `cause(store, faster, slower)`: the first property of the pair's main kernels or work that
  differs: kernel library, architecture, instruction or tile (`kernel_names.parse`), bytes moved
  or fp32 GEMMs on CUDA cores (the cost model's findings, `why.compare`), GPU work launched per
  call; else one kernel both run, when it alone takes longer. Never a kernel only one side runs
  set against nothing ("0 µs against 272.7 µs"), never one side's counters alone.
"""
from __future__ import annotations

import pandas as pd

from profiler.analysis.reads import kept, op_pricing, query_files
from profiler.analysis.model import kernel_names
from profiler.analysis.findings import why
from profiler.vocab.attention import SDPA_BACKENDS
from profiler.storage.session import StoreHandle

FORCED = {f"sdpa_{name}" for name in SDPA_BACKENDS}
CAUSES = ("bytes_moved", "fp32_cuda_core_gemm")   # the cost model's findings that explain a gap
SAME_KERNEL_SHARE = 0.1   # a shared kernel explains a gap when its change is at least this share of it


def work(store: StoreHandle, run_ids) -> pd.DataFrame:
    """run_id, name, calls_per_iter, us_per_iter of each run's GPU work inside its iterations (kept
    per run, up to `kept.BULK` runs at once: `ranking.rank_table` and `sweep_leads.ranked_curves`
    read every group's run in one query, the sets, points and sentences reuse them)."""
    return query_files.run(store, "gpu_work_names", bulk=kept.BULK, run_ids=list(dict.fromkeys(run_ids)))


def signature(rows: pd.DataFrame) -> tuple:
    """The work a run launches: (name, calls per iteration) pairs, sorted."""
    return tuple(sorted(zip(rows["name"], rows["calls_per_iter"].round(3))))


def same_work(store: StoreHandle, part: pd.DataFrame) -> dict[int, int]:
    """{position of a group: position of the group whose work it runs} over one set's groups
    (`ranking.groups` rows, fastest first)."""
    timed = [i for i in range(len(part)) if part["figure"].iloc[i].known and part["timed_on"].iloc[i] == "GPU"]
    if len(timed) < 2:
        return {}
    found = work(store, part["run_id"].iloc[timed])
    sigs = {r: signature(rows) for r, rows in found.groupby("run_id", sort=False)}
    by_sig: dict[tuple, list[int]] = {}
    for i in timed:
        sig = sigs.get(part["run_id"].iloc[i])
        if sig:   # the same kernels on another GPU are a rival: what the other GPU buys (--compare-gpus)
            by_sig.setdefault((part["device"].iloc[i] if "device" in part else None, sig), []).append(i)
    alias = {}
    for members in by_sig.values():
        if len(members) > 1:
            keep = next((i for i in members if part["variant"].iloc[i] in FORCED), members[0])
            alias.update({i: keep for i in members if i != keep})
    return alias


def main_kernel(rows: pd.DataFrame) -> str | None:
    """The kernel (not a copy or set) one run spends most time in, per iteration."""
    kernels = rows[~rows["name"].str.startswith(("Memcpy", "Memset"))]
    return None if kernels.empty else kernels.sort_values(["us_per_iter", "name"], ascending=[False, True])["name"].iloc[0]


def arch(store: StoreHandle, row: pd.Series) -> str | None:
    """The architecture of a group's run: the rank table's ``arch`` (read once for every group),
    else read for it."""
    return row["arch"] if "arch" in row.index else op_pricing.run_arch(store, row["run_id"])


def library_of(store: StoreHandle, row: pd.Series) -> str | None:
    """The library of the main kernel of a group's run ('cuDNN', 'FlashAttention-2 (PyTorch)', ...)."""
    name = main_kernel(work(store, [row["run_id"]]))
    return kernel_names.parse(name, arch(store, row)).library if name else None


def _kernel_text(fast: str, slow: str, a, b) -> str | None:
    parts = [("library", a.library, b.library), ("architecture", a.arch, b.arch),
             ("instruction", a.instruction, b.instruction), ("tile", a.tile, b.tile)]
    differ = [p for p, x, y in parts if x != y and (x or y)]
    if not differ:
        return None
    return (f"{fast} runs a {a.summary} kernel where {slow} runs a {b.summary} kernel "
            f"(they differ in {', '.join(differ)})")


def cause(store: StoreHandle, fast: pd.Series, slow: pd.Series) -> tuple[str, str] | None:
    """(kind, text) of the first property that differs between two groups' representative runs."""
    a, b = fast["run_id"], slow["run_id"]
    found = work(store, [a, b])
    wa, wb = found[found["run_id"] == a], found[found["run_id"] == b]
    ka, kb = main_kernel(wa), main_kernel(wb)
    if ka and kb and ka != kb:
        pa, pb = kernel_names.parse(ka, arch(store, fast)), kernel_names.parse(kb, arch(store, slow))
        text = _kernel_text(fast["variant"] or fast["label"], slow["variant"] or slow["label"], pa, pb)
        if text:
            return "kernel", text
    for finding in why.compare(store, a, b):
        if finding.kind in CAUSES:
            return finding.kind, finding.text.rstrip(".")
    na, nb = wa["calls_per_iter"].sum(), wb["calls_per_iter"].sum()
    if round(na) != round(nb):
        return "launches", (f"{fast['variant'] or fast['label']} launches {na:g} kernels, copies and sets per call, "
                            f"{slow['variant'] or slow['label']} {nb:g}")
    shared = wa.merge(wb, on="name", suffixes=("_a", "_b"))
    gap = slow["us_per_call"] - fast["us_per_call"]
    if not shared.empty and gap > 0:
        grew = shared.assign(d=shared["us_per_iter_b"] - shared["us_per_iter_a"]).sort_values("d", ascending=False).iloc[0]
        if grew["d"] >= SAME_KERNEL_SHARE * gap:
            from profiler.parse.demangled import short

            return "same_kernel_slower", (f"the same kernel {short(grew['name'])} takes {grew['us_per_iter_b']:,.1f} µs "
                                          f"per call in {slow['variant'] or slow['label']} against "
                                          f"{grew['us_per_iter_a']:,.1f} µs")
    return None
