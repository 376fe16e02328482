"""What an attention op and an attention kernel are: the one definition every layer reads.

* capture (`variants.py`) forces SDPA onto the backends named in `SDPA_BACKENDS`;
* analysis prices the ops of `OPS` (`costmodel.py`), classifies kernels matching `KERNEL` as
  attention on matrix engines (`tensor_cores.py`), names the libraries of `LIBRARIES`
  (`kernel_names.py`) and infers a captured run's attention calls (`run_shape.py`, `FLEX`,
  `UNOWNED_KERNEL`).

Plain data: imports nothing, so the capture layer (torch) and the analysis layer (no torch) both
read it.
"""
from __future__ import annotations

# SDPA's backends: the name ops, variants (sdpa_<name>) and findings use -> torch's SDPBackend member
SDPA_BACKENDS = {"math": "MATH", "efficient": "EFFICIENT_ATTENTION", "flash": "FLASH_ATTENTION",
                 "cudnn": "CUDNN_ATTENTION"}

# attention op -> (layout of Q/K/V dims, index of is_causal in Concrete Inputs or None, backend)
# 'bhsd': (batch, heads, seq, dim) as SDPA takes them; 'bshd': (batch, seq, heads, dim).
OPS = {
    "aten::scaled_dot_product_attention": ("bhsd", 5, None),
    "aten::_scaled_dot_product_flash_attention": ("bhsd", 4, "flash"),
    "aten::_flash_attention_forward": ("bshd", 8, "flash"),
    "aten::_scaled_dot_product_efficient_attention": ("bhsd", 6, "efficient"),
    "aten::_efficient_attention_forward": ("bshd", 9, "efficient"),   # custom_mask_type 1, 2: causal
    "aten::_scaled_dot_product_cudnn_attention": ("bhsd", 6, "cudnn"),
    "aten::_cudnn_attention_forward": ("bhsd", 10, "cudnn"),
    "aten::_scaled_dot_product_attention_math": ("bhsd", 5, "math"),
    "aten::_scaled_dot_product_flash_attention_for_cpu": ("bhsd", 4, "flash (CPU)"),
    "flex_attention": ("bhsd", None, "flex"),
    # flash-attn's autograd Function (FlashAttention-2, and -4's CuTe DSL interface): which input is
    # `causal` depends on the version, told apart by the number of inputs recorded: FA4 4.0.0b36
    # forward(q, k, v, qv, gather_kv_indices, softmax_scale, causal, ...) has 23; FA2 2.6/2.7
    # forward(q, k, v, dropout_p, softmax_scale, causal, ...) has 12. Another count: not modelled.
    "FlashAttnFunc": ("bshd", {23: 6, 12: 5}, "flash_attn"),
}
# Backward ops (torch 2.13 schemas; their Q, K, V follow grad_out, so `BACKWARD` gives Q's input
# index): the flash, efficient and cuDNN backends of SDPA with their inner ops, the CPU flash
# kernel, flash-attn's custom op (2.6+: `_flash_attn_backward(dout, q, k, v, out, softmax_lse, dq,
# dk, dv, dropout_p, softmax_scale, causal, window_size_left, ...)`, layout (batch, seq, heads, dim)).
OPS.update({
    "aten::_scaled_dot_product_flash_attention_backward": ("bhsd", 11, "flash"),
    "aten::_flash_attention_backward": ("bshd", 11, "flash"),
    "aten::_scaled_dot_product_efficient_attention_backward": ("bhsd", 11, "efficient"),
    "aten::_efficient_attention_backward": ("bshd", 14, "efficient"),   # custom_mask_type 1, 2: causal
    "aten::_scaled_dot_product_cudnn_attention_backward": ("bhsd", 14, "cudnn"),
    "aten::_cudnn_attention_backward": ("bhsd", 14, "cudnn"),
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward": ("bhsd", 7, "flash (CPU)"),
    "flash_attn::_flash_attn_backward": ("bshd", 11, "flash_attn"),
    "flash_attn::_flash_attn_forward": ("bshd", 5, "flash_attn"),
})
BACKWARD = {name: 1 for name in OPS if name.endswith("_backward")}   # op -> index of Q among its inputs
DECOMPOSED = ("aten::_scaled_dot_product_attention_math",)   # its GEMMs and softmax are priced instead

# Where a causal mask's diagonal sits when the query is shorter than the keys (decode, chunked
# prefill). SDPA's `is_causal` is top-left (row i sees keys 0..i), on every backend: PyTorch
# refuses the flash backend for a causal call with seq_q != seq_kv and asks the efficient and cuDNN
# kernels for their top-left mask. FlashAttention's own kernels (flash-attn from 2.1, and PyTorch's
# copy of FlashAttention-2 called directly) align the mask bottom-right: row i sees keys
# 0..i + seq_kv - seq_q, so the last query sees the whole cache. The efficient op's
# custom_mask_type says it: 1 top-left, 2 bottom-right. An op not named here is top-left.
BOTTOM_RIGHT = ("aten::_flash_attention_forward", "aten::_flash_attention_backward", "FlashAttnFunc",
                "flash_attn::_flash_attn_forward", "flash_attn::_flash_attn_backward")
MASK_TYPE_AT = {"aten::_efficient_attention_forward": 9, "aten::_efficient_attention_backward": 14}
# a sliding window's left size (keys before the diagonal a row sees besides its own), by input index;
# -1 or absent: no window
WINDOW_AT = {"aten::_flash_attention_forward": 11, "aten::_flash_attention_backward": 15,
             "flash_attn::_flash_attn_forward": 6, "flash_attn::_flash_attn_backward": 12}

# The tile (query rows x key columns) a fused kernel computes at once, when its name does not carry
# one (`64x128` in a CUTLASS name does): a causal or windowed kernel skips only whole tiles with no
# useful (query, key) pair, so it issues the FLOPs of every tile it touches. FlashAttention-2's and
# flash-attn's forward for head dim <= 64 and cuDNN's and FlashAttention-4's use 128 x 128; flex's
# block mask is 128 x 128 by default; PyTorch's memory-efficient (CUTLASS) kernel 64 x 64. The CPU
# flash kernel splits queries by length (256 rows from 768 queries, 64 from 192, else 32) and keys
# by 512. The math backend and the naive path compute the whole score matrix: issued = full square.
TILES = {"flash": (128, 128), "flash_attn": (128, 128), "cudnn": (128, 128), "flex": (128, 128),
         "efficient": (64, 64), "FlashAttention-4 (CuTe DSL)": (128, 128), "flashinfer": (128, 128)}
# Backends that run packed lengths (varlen) from the sequences' cumulative offsets (flashinfer's ragged
# prefill, FlashAttention-4's and flash-attn's flash_attn_varlen_func): each sequence's tiles start at
# its own first token and never cross into the next, so the FLOPs they issue are counted per sequence
# (costmodel.issued_flops(..., per_doc=True)). Flex's document block mask and SDPA's explicit mask tile
# the packed sequence as one: a tile straddling two sequences is issued whole when it holds a useful pair.
PER_DOCUMENT = ("flashinfer", "FlashAttention-4 (CuTe DSL)", "flash_attn")
CPU_FLASH = "flash (CPU)"
CPU_FLASH_KEYS = 512
CPU_FLASH_QUERIES = ((768, 256), (192, 64), (0, 32))   # (from this many queries, rows per tile)

# flex attention: its op's name, and part of the name of every kernel torch.compile makes for it
# (such a kernel has no op of its own in a trace)
FLEX = "flex_attention"
# an attention kernel that no priced op owns (flashinfer, FlashAttention-4): priced from the run's shape
UNOWNED_KERNEL = "attention kernel"

# a fused attention kernel with no op of its own (flex's compiled backward
# `triton_tem_fused_flex_attention_backward_0`, FlashAttention-4's `FlashAttentionBackwardSm90`) is
# a backward pass when its name matches (case ignored)
BACKWARD_KERNEL = r"backward|bwd"

# a kernel whose (lower-cased) name matches is a fused attention kernel
KERNEL = (r"flash_fwd|flash_bwd|flash::|flash_attn|fmha|sdpa|attentionkernel|attention_kernel|"
          r"(?<![a-z])attn_(fwd|bwd)|flashinfer::.*(prefill|decode)")

# (pattern, library) of attention kernels, as kernel_names.py names them (first match wins)
LIBRARIES = (
    (r"flash_attn_?cute|FlashAttention(Forward|Backward)Sm\d+", "FlashAttention-4 (CuTe DSL)"),
    (r"pytorch_flash::|flash_fwd|flash_bwd", "FlashAttention-2 (PyTorch)"),
    (r"flashinfer", "flashinfer"),
    (r"fmhaSm\d+", "TensorRT-LLM (trtllm-gen)"),
    (r"fmha_cutlass|PyTorchMemEffAttention", "memory-efficient attention (PyTorch, CUTLASS)"),
)

# Serving engines' attention ops (their names start with one of these; SGLang appends a number):
# their Input Dims hold only the step's new tokens, so the cost model prices them from the serving
# step annotation around them (profiler/analysis/reads/serving_steps.py) -> the backend the rows name
SERVING_OPS = {"vllm::unified_attention": "vllm", "sglang_profiler::attention_": "sglang"}
# a serving engine's step annotation (vLLM's, SGLang's where it writes one), e.g.
# `execute_8192_context_9(sq8155sk8430sqsq7475785sqsk7671310)_generation_37(sq37sk34489sqsq37sqsk34489)`:
# tokens, context (prefill) sequences and their sums, generation (decode) sequences and theirs.
# One pattern for Python's re and DuckDB's RE2 (ingest picks a serving trace's steps with it)
SERVING_STEP = r"^execute(?:_(\d+))?_context_(\d+)\(([^)]*)\)_generation_(\d+)\(([^)]*)\)$"

