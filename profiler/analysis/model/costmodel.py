"""FLOPs and bytes of one op call, from the shapes, dtypes and values the trace recorded.

With `record_shapes`, every CPU op carries `Input Dims` (one list per input, `[]` for scalars and
absent tensors), `Input type` (`c10::BFloat16`, `float`, `Scalar`, ...) and `Concrete Inputs` (the
value of scalar arguments as text: `'True'`, `'0.125'`). `op_cost(name, dims, types, concrete)`
turns one call into an `OpCost`; None for ops the model does not cover.

* **Attention** (SDPA and its backend ops, flex attention): FLOPs = 2 matmuls x 2 FLOPs per
  multiply-add x score elements x head dim, score elements = batch x query heads x the (query,
  key) pairs the mask keeps (`Mask`: causal top-left or bottom-right as the op aligns it, a
  sliding window); softmax and scaling are left out, as FlashAttention's own benchmarks do.
  Bytes = Q, K, V read once and O written once; K and V have their own (key/value) heads, so GQA
  reads fewer bytes, and decode (a few queries against a long cache) reads the cache once:
  2 x batch x kv heads x kv length x head dim x element bytes, plus Q and O.
* **Attention backward** (`attention.BACKWARD`): the FLOPs of each product, 2 per multiply-add
  over the kept pairs: QK^T recomputed (d), dV = P^T dO (d_v), dP = dO V^T (d_v), dQ = dS K (d),
  dK = dS^T Q (d). Bytes = Q, K, V, O, dO and the fp32 log-sum-exp read, dQ, dK, dV written.
* `flops` is what the mask makes useful; `issued_flops(cost, tile)` what a tiled kernel computes
  (every tile holding a useful pair, whole), and the full square for the math backend. Packed
  lengths run from cumulative offsets (``per_doc``) are tiled sequence by sequence: each one's own
  causal or windowed tiles, summed, as its tiles never cross into the next sequence.
* **GEMMs** (`mm`, `bmm`, `addmm`, `baddbmm`, `matmul`, `linear`): FLOPs = 2 M N K per batch
  entry; bytes = both operands and the bias read, the result written.
* **Memory-bound ops of the naive path** (`softmax`, `masked_fill`, `clone`/`copy_`, `div`/`mul`,
  `triu`/`tril`, `add`, `where`): bytes = every tensor input read plus the result written (the
  broadcast shape in the first input's dtype; `copy_` writes its first input); FLOPs = one per
  result element (five for softmax: max, subtract, exp, sum, divide).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from profiler.vocab import attention

DTYPE_BYTES = {
    "c10::BFloat16": 2, "c10::Half": 2, "float": 4, "double": 8, "c10::Float8_e4m3fn": 1,
    "c10::Float8_e5m2": 1, "c10::Float8_e4m3fnuz": 1, "c10::Float8_e5m2fnuz": 1, "bool": 1,
    "signed char": 1, "unsigned char": 1, "short int": 2, "int": 4, "long int": 8, "long": 8,
    "c10::complex<float>": 8,
}
PRECISION = {
    "c10::BFloat16": "bf16", "c10::Half": "fp16", "float": "fp32", "double": "fp64",
    "c10::Float8_e4m3fn": "fp8", "c10::Float8_e5m2": "fp8", "c10::Float8_e4m3fnuz": "fp8",
    "c10::Float8_e5m2fnuz": "fp8",
}
PRECISION_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4, "fp64": 8, "fp8": 1, "bool": 1}
# Short dtype names (captured runs describe themselves with these) -> trace 'Input type' names
TYPE_OF = {"bf16": "c10::BFloat16", "bfloat16": "c10::BFloat16", "fp16": "c10::Half",
           "float16": "c10::Half", "fp32": "float", "float32": "float", "bool": "bool"}

# what an attention op is, its layout, causal flag and backend: profiler/vocab/attention.py
ATTENTION = attention.OPS
DECOMPOSED = attention.DECOMPOSED   # its GEMMs and softmax are modelled
GEMMS = ("aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm", "aten::matmul", "aten::linear")
SOFTMAX = ("aten::softmax", "aten::_softmax", "aten::_safe_softmax")
MEMORY = (*SOFTMAX, "aten::masked_fill", "aten::masked_fill_", "aten::clone", "aten::copy_",
          "aten::div", "aten::div_", "aten::mul", "aten::mul_", "aten::triu", "aten::tril",
          "aten::add", "aten::add_", "aten::where")
MODELLED = (*ATTENTION, *GEMMS, *MEMORY)


@dataclass(frozen=True)
class Mask:
    """The (query, key) pairs one head keeps: row i sees keys [i + offset - window, i + offset]
    when causal (offset 0: top-left; seq_kv - seq_q: bottom-right), all keys otherwise, and
    never one outside [0, seq_kv)."""
    seq_q: int
    seq_kv: int
    causal: bool
    offset: int = 0
    window: int | None = None     # keys before the diagonal a row also sees; None: no window
    docs: tuple[int, ...] | None = None   # packed sequences laid end to end (varlen): a row sees its own only

    def rows(self) -> tuple[np.ndarray, np.ndarray]:
        """(first key, one past the last key) each query row sees."""
        i = np.arange(self.seq_q, dtype=np.int64)
        hi = np.clip(i + self.offset + 1, 0, self.seq_kv) if self.causal else np.full(self.seq_q, self.seq_kv)
        lo = np.clip(i + self.offset - self.window, 0, self.seq_kv) if self.window is not None else np.zeros(self.seq_q, np.int64)
        if self.docs and sum(self.docs) == self.seq_kv:   # the block of its own sequence (position i + offset)
            ends = np.cumsum(np.asarray(self.docs, dtype=np.int64))
            own = np.searchsorted(ends, np.clip(i + self.offset, 0, self.seq_kv - 1), side="right")
            lo, hi = np.maximum(lo, ends[own] - np.asarray(self.docs)[own]), np.minimum(hi, ends[own])
        return lo, np.maximum(hi, lo)

    def pairs(self) -> int:
        return _kept_pairs(self)


@lru_cache(maxsize=4096)
def _kept_pairs(mask: Mask) -> int:
    """The pairs one head keeps (a run prices the same shape call after call: counted once)."""
    lo, hi = mask.rows()
    return int((hi - lo).sum())


@dataclass(frozen=True)
class OpCost:
    kind: str             # 'attention' | 'gemm' | 'memory'
    flops: int
    bytes: int            # read + written
    dtype: str | None     # precision of the math: 'bf16', 'fp16', 'fp32', ...
    shape: str            # the shapes that decided, e.g. '16x16x559x64 causal' or '8944x1024 @ 1024x1024'
    backend: str | None = None
    direction: str | None = None    # attention only: 'forward' | 'backward'
    mask: Mask | None = None        # attention only: the pairs one head keeps
    flops_per_pair: int = 0         # attention only: FLOPs of one kept pair in all its heads
    kv_bytes: int = 0               # attention only: the bytes of K and V one pass reads
    kv_group: int = 0               # attention only: query heads per key/value head (1: MHA; > 1: GQA)

    @property
    def flops_useful(self) -> int:
        """The FLOPs the mask makes useful: `flops` (one definition)."""
        return self.flops

    @property
    def intensity(self) -> float | None:
        return self.flops / self.bytes if self.bytes else None


def _numel(dims) -> int:
    return math.prod(dims) if dims else 1


def _size(dims, dtype) -> int:
    return _numel(dims) * DTYPE_BYTES.get(dtype, 0)


def _tensors(dims: list, types: list, zero_dim: bool = False) -> list[tuple[list, str]]:
    """(dims, type) of the inputs that are tensors (non-empty dims, a known element type); with
    ``zero_dim``, the 0-dim tensors (dims [], a known type: one element) instead."""
    return [(d, t) for d, t in zip(dims, types)
            if t in DTYPE_BYTES and isinstance(d, list) and (d == [] if zero_dim else bool(d))]


def tensor_bytes(dims: list, dtype: str) -> int:
    """The bytes of a tensor of `dims` and trace type `dtype` (0 for an unknown type)."""
    return _size(dims, dtype)


def _shape_text(dims: list) -> str:
    return "x".join(map(str, dims))


def causal_pairs(seq_q: int, seq_kv: int, causal: bool) -> int:
    """(query, key) pairs one head computes; causal keeps row i's first i + 1 keys (top-left)."""
    if not causal:
        return seq_q * seq_kv
    full = min(seq_q, seq_kv)
    return full * (full + 1) // 2 + (seq_q - full) * seq_kv


def attention_cost(q: list, k: list, v: list, dtype: str, causal: bool, layout: str = "bhsd",
                   backend: str | None = None, bottom_right: bool = False, window: int | None = None,
                   backward: bool = False) -> OpCost:
    """Attention over Q (batch, heads_q, seq_q, d), K (batch, heads_kv, seq_kv, d) and V
    (batch, heads_kv, seq_kv, d_v) in `layout`; GQA when heads_q != heads_kv. Causal is top-left
    unless ``bottom_right``; ``window``: a sliding window's keys before the diagonal.
    ``backward``: the backward pass (see the module's docstring)."""
    if layout == "bshd":
        q, k, v = ([d[0], d[2], d[1], d[3]] for d in (q, k, v))
    batch, heads_q, seq_q, dim = q
    seq_kv, dim_v = k[2], v[3]
    offset = seq_kv - seq_q if bottom_right else 0
    mask = Mask(seq_q, seq_kv, causal, offset, window if window is not None and window >= 0 else None)
    per_pair = batch * heads_q * (2 * (3 * dim + 2 * dim_v) if backward else 2 * dim + 2 * dim_v)
    flops = per_pair * mask.pairs()
    out = [batch, heads_q, seq_q, dim_v]
    nbytes = sum(_size(d, dtype) for d in (q, k, v, out))
    if backward:   # + dO and the log-sum-exp read, dQ, dK, dV written
        nbytes += _size(out, dtype) + _numel([batch, heads_q, seq_q]) * 4 + sum(_size(d, dtype) for d in (q, k, v))
    gqa = f" gqa {heads_q}/{k[1]}" if k[1] != heads_q else ""
    masked = (" causal" + (" bottom-right" if offset else "")) if causal else ""
    masked += f" window {mask.window}" if mask.window is not None else ""
    shape = (f"{_shape_text(q)}{'x' + str(seq_kv) if seq_kv != seq_q else ''}{gqa}{masked}"
             f"{' backward' if backward else ''}")
    return OpCost("attention", flops, nbytes, PRECISION.get(dtype), shape, backend,
                  "backward" if backward else "forward", mask, per_pair, _size(k, dtype) + _size(v, dtype),
                  heads_q // k[1] if k[1] else 0)


def wasted_pct(useful: int | None, issued: int | None) -> float | None:
    """The share of issued FLOPs the mask makes useless: 100 x (issued - useful) / issued (None
    when either is unknown or nothing is issued)."""
    return 100 * (issued - useful) / issued if issued and useful is not None else None


def issued_flops(cost: OpCost, tile: tuple[int, int] | None, per_doc: bool = False) -> int:
    """The FLOPs a kernel computing `tile` (query rows, key columns) at a time issues for `cost`:
    every tile with at least one useful pair, whole (clipped to the score matrix); None as the
    tile: the full square (the math backend, the naive path). Not attention: `flops`.
    ``per_doc``: the kernel takes packed sequences (the mask's `docs`) by their cumulative offsets
    (varlen): its tiles start at each sequence and stay inside it, so each sequence is priced as
    its own square (its causal or windowed tiles), and the sums added (`_document_pairs`)."""
    if cost.mask is None:
        return cost.flops
    pairs = _document_pairs(cost.mask, tile) if per_doc else _issued_pairs(cost.mask, tile)
    return cost.flops_per_pair * pairs


@lru_cache(maxsize=4096)
def _document_pairs(mask: Mask, tile: tuple[int, int] | None) -> int:
    """The pairs issued tiling each packed sequence on its own (queries and keys the same packed
    sequence, a tile): the sum of each one's `_issued_pairs`; else those of the whole mask."""
    docs = mask.docs
    if tile is None or not docs or not sum(docs) == mask.seq_q == mask.seq_kv or mask.offset:
        return _issued_pairs(mask, tile)
    return sum(_issued_pairs(Mask(n, n, mask.causal, 0, mask.window), tile) for n in docs)


@lru_cache(maxsize=4096)
def _issued_pairs(mask: Mask, tile: tuple[int, int] | None) -> int:
    if tile is None:
        return mask.seq_q * mask.seq_kv
    rows, cols = tile
    lo, hi = mask.rows()
    used = hi > lo
    if not used.any():
        return 0
    starts = np.arange(0, mask.seq_q, rows)
    first = np.minimum.reduceat(np.where(used, lo, mask.seq_kv), starts)
    last = np.maximum.reduceat(np.where(used, hi, 0), starts)
    height = np.minimum(starts + rows, mask.seq_q) - starts
    width = np.minimum(-(-last // cols) * cols, mask.seq_kv) - first // cols * cols
    return int((height * np.where(last > first, width, 0)).sum())


def gemm_cost(name: str, dims: list, types: list) -> OpCost | None:
    """M N K of a GEMM op from its inputs (bias first for addmm / baddbmm)."""
    inputs = _tensors(dims, types)
    if name in ("aten::addmm", "aten::baddbmm"):
        bias, inputs = (inputs[0], inputs[1:]) if len(inputs) >= 3 else (None, inputs)
    elif name == "aten::linear":
        bias = inputs[2] if len(inputs) >= 3 else None
        inputs = [inputs[0], ([inputs[1][0][1], inputs[1][0][0]], inputs[1][1])] if len(inputs) >= 2 else []
    else:
        bias = None
    if len(inputs) < 2:
        return None
    (a, ta), (b, _) = inputs[:2]
    a, b = (a if len(a) > 1 else [1, *a]), (b if len(b) > 1 else [*b, 1])
    m, k, n = a[-2], a[-1], b[-1]
    batch = max(_numel(a[:-2]), _numel(b[:-2]))
    out = [batch, m, n]
    nbytes = _size(a, ta) + _size(b, inputs[1][1]) + _size(out, ta) + (_size(*bias) if bias else 0)
    shape = f"{_shape_text(inputs[0][0])} @ {_shape_text(inputs[1][0])}"
    return OpCost("gemm", 2 * batch * m * n * k, nbytes, PRECISION.get(ta), shape)


def _broadcast(shapes: list[list]) -> list:
    rank = max(len(s) for s in shapes)
    padded = [[1] * (rank - len(s)) + list(s) for s in shapes]
    return [max(col) for col in zip(*padded)]


def memory_cost(name: str, dims: list, types: list) -> OpCost | None:
    """Bytes of an elementwise / softmax / copy op: tensor inputs read, result written. A 0-dim
    input beside real tensors is a number the kernel takes as an argument (`x * 0.125` records
    a 0-dim double), not a read; an op on 0-dim tensors alone (a scalar copy_) moves one
    element each."""
    inputs = _tensors(dims, types) or _tensors(dims, types, zero_dim=True)
    if not inputs:
        return None
    first, dtype = inputs[0]
    if name == "aten::copy_":     # copy_(self, src): read src, write self
        read = _size(*inputs[1]) if len(inputs) > 1 else _size(first, dtype)
        written, out = _size(first, dtype), first
    else:
        out = _broadcast([d for d, _ in inputs])
        out_type = inputs[1][1] if name == "aten::where" and len(inputs) > 1 else dtype
        read, written = sum(_size(d, t) for d, t in inputs), _size(out, out_type)
    per_element = 5 if name in SOFTMAX else 0 if name in ("aten::clone", "aten::copy_") else 1
    shape = " , ".join(_shape_text(d) for d, _ in inputs)
    return OpCost("memory", per_element * _numel(out), read + written, PRECISION.get(dtype, dtype), shape)


def _flag(concrete: list, index: int | None) -> bool:
    if index is None or index >= len(concrete):
        return False
    value = str(concrete[index]).strip()
    return value in ("True", "true", "1", "2")


def _number(concrete: list, index: int | None) -> int | None:
    if index is None or index >= len(concrete):
        return None
    try:
        return int(str(concrete[index]).strip())
    except ValueError:
        return None


def _attention(name: str, dims: list, types: list, concrete: list) -> OpCost | None:
    layout, causal_at, backend = ATTENTION[name]
    if isinstance(causal_at, dict):           # by signature: the count of inputs tells
        if len(dims) not in causal_at:
            return None
        causal_at = causal_at[len(dims)]
    first = attention.BACKWARD.get(name, 0)
    (q, dtype), (k, _), (v, _) = _tensors(dims, types)[first:first + 3]
    if name in attention.MASK_TYPE_AT:        # custom_mask_type: 0 none, 1 top-left, 2 bottom-right
        kind = _number(concrete, attention.MASK_TYPE_AT[name])
        causal, bottom_right = kind in (1, 2), kind == 2
    else:
        causal, bottom_right = _flag(concrete, causal_at), name in attention.BOTTOM_RIGHT
    return attention_cost(q, k, v, dtype, causal, layout, backend, bottom_right,
                          _number(concrete, attention.WINDOW_AT.get(name)), name in attention.BACKWARD)


def op_cost(name: str, dims: list | None, types: list | None, concrete: list | None) -> OpCost | None:
    """The cost of one recorded op call, or None when the model does not cover it (or the
    inputs it needs were not recorded)."""
    if not dims or not types:
        return None
    concrete = concrete or []
    try:
        if name in ATTENTION:
            return _attention(name, dims, types, concrete)
        if name in GEMMS:
            return gemm_cost(name, dims, types)
        if name in MEMORY:
            return memory_cost(name, dims, types)
    except (ValueError, IndexError, TypeError):
        return None   # inputs of an unexpected arity or rank: not modelled rather than wrong
    return None
