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
DECOMPOSED = ("aten::_scaled_dot_product_attention_math",)   # its GEMMs and softmax are priced instead

# flex attention: its op's name, and part of the name of every kernel torch.compile makes for it
# (such a kernel has no op of its own in a trace)
FLEX = "flex_attention"
# an attention kernel that no priced op owns (flashinfer, FlashAttention-4): priced from the run's shape
UNOWNED_KERNEL = "attention kernel"

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
