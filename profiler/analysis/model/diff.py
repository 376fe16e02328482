"""Kernel families and an edit-distance alignment of two runs' kernel sequences.

Two runs of different attention variants launch kernels whose templated names differ in tile
sizes, dtypes and template arguments even when they do the same job. `kernel_family(name)`
reduces a name to its job (rules in `docs/analysis.md`); `align(a, b)` aligns two family
sequences with the minimum number of insertions, deletions and substitutions (Levenshtein), so
the diff shows what one run does that the other does not.
"""
from __future__ import annotations

import re
from collections import Counter
from difflib import SequenceMatcher

import pandas as pd

from profiler.analysis.model.counters import COUNTER_COLUMNS

FULL_DP_CELLS = 250_000   # above this, align only the stretches between common blocks
# SequenceMatcher's work grows with the pairs of equal elements (two runs of 20,000 launches of one
# kernel: 4e8 pairs, minutes); above this many, only the common ends are matched
MATCH_PAIRS = 5_000_000
GENERIC = {"Kernel", "Kernel2", "device_kernel", "elementwise_kernel", "vectorized_elementwise_kernel",
           "unrolled_elementwise_kernel", "reduce_kernel", "index_elementwise_kernel",
           "elementwise_kernel_with_index", "multi_tensor_apply_kernel"}
WRAPPERS = {"gpu_kernel_impl", "gpu_kernel_impl_nocast", "BinaryFunctor", "AUnaryFunctor",
            "BUnaryFunctor", "UnaryFunctor", "func_wrapper_t", "ReduceOp", "lambda", "operator",
            "TensorIteratorBase", "TensorIterator", "enable_sm90_or_later", "OffsetCalculator",
            "Array", "array", "OpaqueType", "TensorListMetadata", "BFloat16", "Half", "Scalar",
            "unsigned", "int", "long", "float", "double", "bool", "char", "const", "void", "true",
            "false", "anonymous", "namespace", "decltype", "nullptr", "std", "c10", "at", "native",
            "detail", "cutlass", "bfloat16_t", "half_t", "cute", "C", "tuple"}
_SHAPE_TOKEN = re.compile(r"\d+x\d+")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def kernel_family(name: str) -> str:
    """The job a kernel does, without tile sizes and template arguments.

    `volta_sgemm_64x32_sliced1x4_nn` -> `volta_sgemm`; `void at::native::vectorized_elementwise_
    kernel<4, at::native::FillFunctor<float>, ...>(...)` -> `vectorized_elementwise_kernel[FillFunctor]`;
    `Memcpy DtoD (Device -> Device)` -> `Memcpy DtoD`.
    """
    text = name.strip().removeprefix("void ").replace("(anonymous namespace)::", "").strip()
    if text.startswith(("Memcpy", "Memset")):
        return text.split(" (")[0]
    cut = min([i for i in (text.find("<"), text.find("(")) if i >= 0], default=len(text))
    base, rest = text[:cut], text[cut:]
    base = base.split("::")[-1]
    if base in GENERIC and rest:
        hint = _template_hint(rest)
        return f"{base}[{hint}]" if hint else base
    return _strip_shape_tokens(base)


def _strip_shape_tokens(base: str) -> str:
    kept = []
    for token in base.split("_"):
        if kept and _SHAPE_TOKEN.search(token):
            break
        kept.append(token)
    return "_".join(kept)


def _template_hint(rest: str) -> str | None:
    for ident in _IDENT.findall(rest.replace("(anonymous namespace)", "")):
        if ident not in WRAPPERS and not ident.startswith(("binary_internal", "Opaque")):
            return _strip_shape_tokens(ident)
    return None


def align(a: list[str], b: list[str]) -> list[tuple[int | None, int | None]]:
    """Minimum-edit alignment of two sequences: (i, j) pairs; i or j is None for a gap.

    Matches and substitutions pair an i with a j; an equal pair costs 0, a gap 1, a substitution
    `substitution_cost` (1 between kernels, 2 between a copy and a kernel).
    Long sequences are first split at SequenceMatcher's common blocks (exact inside each gap);
    those with more than MATCH_PAIRS pairs of equal elements at their common start and end.
    """
    if len(a) * len(b) <= FULL_DP_CELLS:
        return _levenshtein(a, b, 0, 0)
    counts = Counter(b)
    if sum(counts[x] * n for x, n in Counter(a).items()) > MATCH_PAIRS:
        return _common_ends(a, b)
    pairs: list[tuple[int | None, int | None]] = []
    i = j = 0
    for block in SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks():
        pairs += _gap(a[i:block.a], b[j:block.b], i, j)
        pairs += [(block.a + k, block.b + k) for k in range(block.size)]
        i, j = block.a + block.size, block.b + block.size
    return pairs


def _common_ends(a: list[str], b: list[str]) -> list[tuple[int | None, int | None]]:
    """The common start and end of two sequences matched, the rest between them as one gap."""
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end = 0
    while end < min(len(a), len(b)) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    middle = _gap(a[start:len(a) - end], b[start:len(b) - end], start, start)
    tail = [(len(a) - end + k, len(b) - end + k) for k in range(end)]
    return [(k, k) for k in range(start)] + middle + tail


def _gap(a: list[str], b: list[str], i0: int, j0: int) -> list[tuple[int | None, int | None]]:
    if len(a) * len(b) <= FULL_DP_CELLS:
        return _levenshtein(a, b, i0, j0)
    return [(i0 + k, None) for k in range(len(a))] + [(None, j0 + k) for k in range(len(b))]


def substitution_cost(a: str, b: str) -> int:
    """0 for the same family, 1 for another kernel, 2 (never better than two gaps) when a copy or
    set would stand in for a compute kernel: a Memcpy that one run lacks shows as 'only in'."""
    if a == b:
        return 0
    return 1 if _is_memop(a) == _is_memop(b) else 2


def _is_memop(family: str) -> bool:
    return family.startswith(("Memcpy", "Memset"))


def _levenshtein(a, b, i0, j0) -> list[tuple[int | None, int | None]]:
    n, m = len(a), len(b)
    cost = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n + 1):
        cost[i][0] = i
    for j in range(m + 1):
        cost[0][j] = j
    for i in range(1, n + 1):
        row, prev, ai = cost[i], cost[i - 1], a[i - 1]
        for j in range(1, m + 1):
            row[j] = min(prev[j - 1] + substitution_cost(ai, b[j - 1]), prev[j] + 1, row[j - 1] + 1)
    return _backtrace(cost, a, b, i0, j0)


def _backtrace(cost, a, b, i0, j0) -> list[tuple[int | None, int | None]]:
    i, j, out = len(a), len(b), []
    while i or j:
        if i and j and cost[i][j] == cost[i - 1][j - 1] + substitution_cost(a[i - 1], b[j - 1]):
            i, j = i - 1, j - 1
            out.append((i0 + i, j0 + j))
        elif i and cost[i][j] == cost[i - 1][j] + 1:
            i -= 1
            out.append((i0 + i, None))
        else:
            j -= 1
            out.append((None, j0 + j))
    return out[::-1]


def align_kernel_sequences(seq_a: pd.DataFrame, seq_b: pd.DataFrame) -> pd.DataFrame:
    """Align two iterations' kernel sequences (columns seq, name, dur_us, as
    `pair_queries.kernel_sequence` returns) by family. One row per slot: slot, seq_a, name_a,
    dur_us_a, seq_b, name_b, dur_us_b, family, status ('same' | 'same family' | 'replaced' |
    'only in a' | 'only in b')."""
    cols = ["seq", "name", "dur_us"]
    a, b = (list(zip(*(df[c].tolist() for c in cols))) for df in (seq_a, seq_b))  # rows as tuples: fast to index
    fam_a, fam_b = [kernel_family(n) for n in seq_a["name"]], [kernel_family(n) for n in seq_b["name"]]
    rows = [_slot(k, a, b, fam_a, fam_b, i, j) for k, (i, j) in enumerate(align(fam_a, fam_b))]
    return pd.DataFrame(rows, columns=["slot", "seq_a", "name_a", "dur_us_a", "seq_b", "name_b",
                                       "dur_us_b", "family", "status"])


def _slot(k, a, b, fam_a, fam_b, i, j) -> tuple:
    left = a[i] if i is not None else (None,) * 3
    right = b[j] if j is not None else (None,) * 3
    if i is None or j is None:
        status, family = ("only in b", fam_b[j]) if i is None else ("only in a", fam_a[i])
    elif fam_a[i] != fam_b[j]:
        status, family = "replaced", f"{fam_a[i]} -> {fam_b[j]}"
    else:
        status, family = ("same" if left[1] == right[1] else "same family"), fam_a[i]
    return (k, *left, *right, family, status)


def family_delta(kernel_delta: pd.DataFrame) -> pd.DataFrame:
    """`pair_queries.kernel_delta` (per kernel name) summed per family: family, kernels (names),
    calls_a, calls_b, calls_delta, us_a, us_b, us_delta, presence."""
    df = kernel_delta.assign(family=kernel_delta["kernel"].map(kernel_family))
    out = df.groupby("family", as_index=False).agg(
        kernels=("kernel", "count"), calls_a=("calls_a", "sum"), calls_b=("calls_b", "sum"),
        us_a=("us_a", "sum"), us_b=("us_b", "sum"))
    out["calls_delta"], out["us_delta"] = out["calls_b"] - out["calls_a"], out["us_b"] - out["us_a"]
    out["presence"] = ["only in b" if a == 0 else "only in a" if b == 0 else "both"
                       for a, b in zip(out["calls_a"], out["calls_b"])]
    return out.sort_values("us_delta", key=abs, ascending=False, ignore_index=True)


def kernel_comparison(kernel_delta: pd.DataFrame, details: pd.DataFrame, run_a: str,
                      run_b: str) -> pd.DataFrame:
    """Per kernel (or copy) name: `pair_queries.kernel_delta` joined with each run's
    `kernel_queries.kernel_details`: kernel, family, presence, calls_a, calls_b, us_a, us_b,
    tc_engine, tc_precision, est_occupancy_pct_a/_b (reported), theory_occupancy_pct_a/_b,
    occupancy_limiter_a/_b, and Nsight Compute's counters (`counters.COUNTER_COLUMNS`) _a/_b
    (NaN/None where the run lacks the kernel, has no counters for it, or it is a copy)."""
    cols = ["kernel", "tc_engine", "tc_precision", "est_occupancy_pct", "theory_occupancy_pct",
            "occupancy_limiter", *COUNTER_COLUMNS]
    out = kernel_delta.assign(family=kernel_delta["kernel"].map(kernel_family))
    details = details.reindex(columns=["run_id", *cols])  # details of runs stored before counters existed
    for side, run in (("a", run_a), ("b", run_b)):
        mine = details.loc[details["run_id"] == run, cols].rename(
            columns={c: f"{c}_{side}" for c in cols[1:]})
        out = out.merge(mine, on="kernel", how="left")
    for col in ("tc_engine", "tc_precision"):
        out[col] = out[f"{col}_a"].combine_first(out[f"{col}_b"])
        out = out.drop(columns=[f"{col}_a", f"{col}_b"])
    return out
