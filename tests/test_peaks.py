"""Datasheet peaks per engine: every required GPU is in the table, each figure cited."""
from __future__ import annotations

import pytest

from profiler.analysis.model.gpus import builtin_device


@pytest.mark.parametrize("name,tensor_bf16,vector_fp32,tbps", [
    ("NVIDIA H100 80GB HBM3", 989.4, 66.9, 3.35), ("NVIDIA H100 PCIe", 756, 51, 2.0),
    ("NVIDIA H200", 989.4, 66.9, 4.8), ("NVIDIA A100-SXM4-80GB", 312, 19.5, 2.039),
    ("Tesla V100-SXM2-16GB", None, 15.7, 0.9), ("NVIDIA B200", 2250, 75, 8.0),
    ("AMD Instinct MI300X", 1307.4, 163.4, 5.3), ("AMD Instinct MI250X", 383 / 2, 47.9 / 2, 3.2768 / 2),
])
def test_required_gpus_have_cited_peaks_per_engine(name, tensor_bf16, vector_fp32, tbps):
    peaks = builtin_device(name).peaks
    assert peaks.peak_tflops("tensor core", "bf16") == tensor_bf16
    assert peaks.peak_tflops("CUDA core", "fp32") == pytest.approx(vector_fp32)
    assert peaks.memory_gbps / 1e3 == pytest.approx(tbps)
    assert "datasheet" in peaks.source.lower() and ("nvidia.com" in peaks.source or "amd.com" in peaks.source)


def test_cuDNN_style_fp16_bf16_and_unknown_engines():
    peaks = builtin_device("NVIDIA H200").peaks
    assert peaks.peak_tflops("tensor core", "fp16/bf16") == 989.4
    assert peaks.peak_tflops("unknown", "bf16") == 989.4          # the higher roof: tensor core
    assert peaks.peak_tflops("CUDA core", "bf16") == 133.8
    assert peaks.peak_tflops("tensor core", "fp32") is None       # no fp32 tensor-core path on NVIDIA
