"""FLOPs and bytes of one op call, from the shapes, dtypes and values the trace recorded.

With `record_shapes`, every CPU op carries `Input Dims` (one list per input, `[]` for scalars and
absent tensors), `Input type` (`c10::BFloat16`, `float`, `Scalar`, ...) and `Concrete Inputs` (the
value of scalar arguments as text: `'True'`, `'0.125'`). `op_cost(name, dims, types, concrete)`
turns one call into an `OpCost`; None for ops the model does not cover.

* **Attention** (SDPA and its backend ops, flex attention): FLOPs = 2 matmuls x 2 FLOPs per
  multiply-add x score elements x head dim, score elements = batch x query heads x (query, key)
  pairs, only the lower triangle with its diagonal when causal (PyTorch's top-left `is_causal`);
  softmax and scaling are left out, as FlashAttention's own benchmarks do. Bytes = Q, K, V read
  once and O written once; K and V have their own (key/value) heads, so GQA reads fewer bytes.
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
class OpCost:
    kind: str             # 'attention' | 'gemm' | 'memory'
    flops: int
    bytes: int            # read + written
    dtype: str | None     # precision of the math: 'bf16', 'fp16', 'fp32', ...
    shape: str            # the shapes that decided, e.g. '16x16x559x64 causal' or '8944x1024 @ 1024x1024'
    backend: str | None = None

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


def _shape_text(dims: list) -> str:
    return "x".join(map(str, dims))


def causal_pairs(seq_q: int, seq_kv: int, causal: bool) -> int:
    """(query, key) pairs one head computes; causal keeps row i's first i + 1 keys (top-left)."""
    if not causal:
        return seq_q * seq_kv
    full = min(seq_q, seq_kv)
    return full * (full + 1) // 2 + (seq_q - full) * seq_kv


def attention_cost(q: list, k: list, v: list, dtype: str, causal: bool, layout: str = "bhsd",
                   backend: str | None = None) -> OpCost:
    """Forward attention over Q (batch, heads_q, seq_q, d), K (batch, heads_kv, seq_kv, d) and V
    (batch, heads_kv, seq_kv, d_v) in `layout`; GQA when heads_q != heads_kv."""
    if layout == "bshd":
        q, k, v = ([d[0], d[2], d[1], d[3]] for d in (q, k, v))
    batch, heads_q, seq_q, dim = q
    seq_kv, dim_v = k[2], v[3]
    pairs = batch * heads_q * causal_pairs(seq_q, seq_kv, causal)
    flops = 2 * pairs * dim + 2 * pairs * dim_v
    out = [batch, heads_q, seq_q, dim_v]
    nbytes = sum(_size(d, dtype) for d in (q, k, v, out))
    gqa = f" gqa {heads_q}/{k[1]}" if k[1] != heads_q else ""
    shape = f"{_shape_text(q)}{'x' + str(seq_kv) if seq_kv != seq_q else ''}{gqa}{' causal' if causal else ''}"
    return OpCost("attention", flops, nbytes, PRECISION.get(dtype), shape, backend)


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


def op_cost(name: str, dims: list | None, types: list | None, concrete: list | None) -> OpCost | None:
    """The cost of one recorded op call, or None when the model does not cover it (or the
    inputs it needs were not recorded)."""
    if not dims or not types:
        return None
    concrete = concrete or []
    try:
        if name in ATTENTION:
            layout, causal_at, backend = ATTENTION[name]
            if isinstance(causal_at, dict):           # by signature: the count of inputs tells
                if len(dims) not in causal_at:
                    return None
                causal_at = causal_at[len(dims)]
            (q, dtype), (k, _), (v, _) = _tensors(dims, types)[:3]
            return attention_cost(q, k, v, dtype, _flag(concrete, causal_at), layout, backend)
        if name in GEMMS:
            return gemm_cost(name, dims, types)
        if name in MEMORY:
            return memory_cost(name, dims, types)
    except (ValueError, IndexError, TypeError):
        return None   # inputs of an unexpected arity or rank: not modelled rather than wrong
    return None
