"""Pricing one run's op calls: the second half of the cost model (profiler/analysis/reads/op_costs.py
keeps the results and builds the tables).

Each call found by profiler/analysis/reads/op_charges.py is priced with `profiler.analysis.model.costmodel`
from its recorded inputs (or, captured without `record_shapes`, from the run's own attention
shape: `shape_source = 'run shape'`; a serving engine's attention call from the step annotation
around it, `profiler.analysis.reads.serving_steps`: `shape_source = 'step annotation'`), given the engine and precision of its longest kernel
(`profiler.analysis.model.tensor_cores`), and rated against the device's datasheet peak for that
precision on that engine. Numpy columns, no pandas.
"""
from __future__ import annotations

import json
from collections import namedtuple
from functools import lru_cache

import numpy as np

from profiler.analysis.model import arrays, costmodel as cm, gpus, kernel_names, modes, run_shape, tensor_cores
from profiler.analysis.reads import reads, serving_costs, serving_steps
from profiler.analysis.model.device import Device
from profiler.analysis.model.costmodel import OpCost
from profiler.analysis.reads.op_charges import (ATTENTION_KERNEL, charged_calls, charged_kernels, kernel_name_map,
                                                kernel_name_maps, launched_work, op_inputs)
from profiler.analysis.reads.op_tree import op_trees, thread_ops
from profiler.analysis.model.rating import rated
from profiler.vocab import attention
from profiler.storage.session import StoreHandle

KERNEL_COLUMNS = ["run_id", "op_id", "kernel_hash", "dur_ns"]
CPU = "CPU"    # the engine of a call in a run without GPU work (timed by the op itself)
Call = namedtuple("Call", "op iteration kernel_precision kernel")     # what run_shape.inferred_costs reads
# what the model reads of the runs it prices, read once for all of them (`about`): {run_id: its shape
# record}, {run_id: its device}, and with ``work`` {run_id: its launched_work} and {run_id: `Read`}
Known = namedtuple("Known", "shapes devices launched read")
# one run's part of the reads: {kernel_hash: name}, its op_tree, op_inputs, backward ops, GPU name,
# and its thread_ops (None: none needed)
Read = namedtuple("Read", "names tree inputs backward_ops gpu_name threads")


@lru_cache(maxsize=4096)
def _engine(kernel: str, vendor: str | None) -> tuple[str, str | None]:
    found = tensor_cores.classify(kernel, vendor)
    return found.engine, found.precision


def run_vendor(db, run_id: str, names) -> str | None:
    """The run's GPU vendor as the kernels page reads it: from the GPU name, else from
    vendor-only kernel name markers (`tensor_cores.vendor_of`)."""
    gpu_name = reads.run_devices(db, [run_id]).get(run_id, (None, None))[1]
    return tensor_cores.vendor_of(gpu_name, names)


@lru_cache(maxsize=65536)
def _recorded(name: str, dims: str | None, types: str | None, concrete: str | None) -> OpCost | None:
    if not isinstance(dims, str) or not isinstance(types, str):
        return None
    try:
        return cm.op_cost(name, json.loads(dims), json.loads(types), json.loads(concrete if isinstance(concrete, str) else "[]"))
    except ValueError:
        return None


def _calls(store, run_id: str, work: dict | None = None, read: Read | None = None) -> tuple[dict, dict]:
    """(`charged_calls` of the run with the engine and precision of its longest kernel, the
    `charged_kernels` of the run: run_id, op_id, kernel_hash, dur_ns, and names: {hash: name}).
    ``read``: the run's part of `about`'s reads (else read here)."""
    names = read.names if read else kernel_name_map(store, run_id)
    kernels = charged_kernels(store, run_id, work, names, *((read.tree, read.threads) if read else ()))
    calls = charged_calls(store, run_id, kernels, names, read.inputs if read else None)
    kernels = {**{k: kernels[k] for k in KERNEL_COLUMNS}, "names": names}
    if not calls:
        return calls, kernels
    main = calls["main_kernel"]
    vendor = tensor_cores.vendor_of(read.gpu_name, names.values()) if read else run_vendor(store, run_id, names.values())
    found = {k: _engine(k, vendor) if isinstance(k, str) else (CPU, None) for k in set(main.tolist())}
    calls["engine"] = arrays.objects([found[k][0] for k in main])
    calls["kernel_precision"] = arrays.objects([found[k][1] for k in main])
    return calls, kernels


def _served(calls: dict, costs: list, source: list, steps: dict[int, str]) -> None:
    """A serving engine's attention call (`serving_steps.backend`) unpriced by its inputs, priced
    in place from the step annotation around it (``steps``: {op_id: annotation})."""
    for i, op in enumerate(calls["op"].tolist()):
        if costs[i] is None and serving_steps.backend(op):
            step = serving_steps.parse(steps.get(int(calls["op_id"][i]), ""))
            costs[i] = serving_steps.cost(step, op, calls["input_dims"][i], calls["input_types"][i])
            source[i] = serving_steps.SOURCE if costs[i] else None


def _priced(calls: dict, shape: dict | None, backward_ops: int = 0, steps: dict[int, str] | None = None) -> dict:
    """The calls the model prices (recorded inputs, a serving step's annotation (``steps``:
    {op_id: annotation}), else the run's shape), with kind, flops,
    bytes, dtype, shape, backend, shape_source, mode (`profiler.analysis.model.modes`; the run's
    for a call that is not attention, ``backward_ops``: the run's autograd backward ops),
    flops_useful and flops_issued (`issued`)."""
    n = arrays.rows(calls)
    costs: list[OpCost | None] = [None] * n
    dims = calls["input_dims"]
    for i in np.flatnonzero(np.array([d is not None for d in dims], dtype=bool)).tolist():
        costs[i] = _recorded(calls["op"][i], dims[i], calls["input_types"][i], calls["concrete_inputs"][i])
    source = ["trace" if c else None for c in costs]
    if steps:
        _served(calls, costs, source, steps)
    if shape is not None and shape.get("seq_len") is not None and any(d is None for d in dims):
        rows = [Call(*r) for r in zip(calls["op"].tolist(), calls["iteration"].tolist(),
                                      calls["kernel_precision"].tolist(), calls["main_kernel"].tolist())]
        for i, cost in enumerate(run_shape.inferred_costs(rows, shape)):
            if cost is not None and costs[i] is None and dims[i] is None:   # recorded inputs win
                costs[i], source[i] = cost, "run shape"
    costs = [run_shape.with_run_mask(c, shape) for c in costs]   # a window or packed lengths: the run's own mask
    keep = np.array([c is not None for c in costs], dtype=bool)
    calls, costs = arrays.take(calls, keep), [c for c in costs if c]
    backends = [_backend(c, b, o, k) for c, b, o, k in zip(costs, calls["backend_op"], calls["op"], calls["main_kernel"])]
    own = [modes.op_mode(c) for c in costs]
    run = modes.run_mode(own, backward_ops, modes.declared_mode(shape))
    return {**calls, "kind": arrays.objects([c.kind for c in costs]), "flops": np.array([c.flops for c in costs]),
            # a training run's forward calls are part of its training step: mode "train", as its backward
            "mode": arrays.objects([run if run == "train" else (m or run) for m in own]),
            "flops_useful": np.array([c.flops_useful for c in costs]),
            "kv_bytes": np.array([c.kv_bytes for c in costs]), "kv_group": np.array([c.kv_group for c in costs]),
            "flops_issued": np.array([issued(c, b, k) for c, b, k in zip(costs, backends, calls["main_kernel"])]),
            "bytes": np.array([c.bytes for c in costs]), "dtype": arrays.objects([c.dtype for c in costs]),
            "shape": arrays.objects([c.shape for c in costs]),
            "backend": arrays.objects(backends),
            "shape_source": arrays.objects([s for s, k in zip(source, keep) if k])}


def tile(backend: str | None, kernel, seq_q: int = 0) -> tuple[int, int] | None:
    """The (query rows, key columns) tile an attention kernel computes at once: from its name
    when the name carries one (`64x128` of a CUTLASS or cuDNN name: rows first), else the
    backend's default (`attention.TILES`; the CPU flash kernel's by query length); None for the
    math backend (the full square) and a backend with no known tile."""
    named = kernel_names.parse(kernel).tile if isinstance(kernel, str) else None
    if named:
        rows, cols = named.split("x")[:2]
        return int(rows), int(cols)
    if backend == attention.CPU_FLASH:
        rows = next(r for at_least, r in attention.CPU_FLASH_QUERIES if seq_q >= at_least)
        return rows, attention.CPU_FLASH_KEYS
    return attention.TILES.get(backend)


def issued(cost: OpCost, backend: str | None, kernel) -> int:
    """The FLOPs a call issues (`costmodel.issued_flops`) with its kernel's `tile`; packed lengths
    per sequence where the backend takes them by cumulative offsets (`attention.PER_DOCUMENT`)."""
    if cost.mask is None:
        return cost.flops
    return cm.issued_flops(cost, tile(backend, kernel, cost.mask.seq_q), per_doc=backend in attention.PER_DOCUMENT)


def _backend(cost: OpCost, backend_op, op=None, kernel=None) -> str | None:
    if cost.kind != "attention":
        return None
    if op == ATTENTION_KERNEL:   # no op of its own: the kernel's library is the backend
        return kernel_names.parse(str(kernel)).library
    inner = cm.ATTENTION.get(backend_op, (None, None, None))[2] if isinstance(backend_op, str) else None
    return inner or cost.backend or "sdpa"


def backward_ops_of(db, run_ids) -> dict[str, int]:
    """{run_id: the count of the run's autograd backward ops} (sql/run_backward_ops.sql), 0 for none."""
    got = db.arrays(reads.sql_text("run_backward_ops"), {"run_ids": [str(r) for r in run_ids],
                                                                "prefix": modes.AUTOGRAD_PREFIX})
    found = dict(zip(got["run_id"].tolist(), got["backward_ops"].tolist()))
    return {str(r): int(found.get(str(r), 0)) for r in run_ids}


def backward_ops(db, run_id: str) -> int:
    """The count of the run's autograd backward ops (sql/run_backward_ops.sql)."""
    return backward_ops_of(db, [run_id])[str(run_id)]


def arch_of(device) -> str | None:
    """'sm90', 'sm100', ... of an NVIDIA device (None on AMD or unknown): the architecture that
    decides a kernel family's tensor-core instruction (`kernel_names.parse`)."""
    if getattr(device, "vendor", None) != "nvidia":
        return None
    return kernel_names.device_arch(device.compute_major, device.compute_minor)


def run_arch(store: StoreHandle, run_id: str) -> str | None:
    """`arch_of` the device a run ran on."""
    return arch_of(device_of(reads.run_devices(store, [run_id]).get(run_id)))


def device_of(info) -> Device | None:
    """The device of a `reads.run_devices` value (deviceProperties, GPU name): its first device,
    else the built-in one of that name (None when unknown)."""
    props, gpu_name = info or (None, None)
    try:
        return gpus.resolve_device(props, 0, gpu_name)
    except ValueError:
        return gpus.builtin_device(gpu_name)


def about(db, run_ids: list, work: bool = False) -> Known:
    """`Known` of the runs, each read one query for all of them (not one per run): their shape
    records and devices, and with ``work`` their launched work and `Read` (else {})."""
    launched, read = {}, {}
    devices = reads.run_devices(db, run_ids)
    if work:
        every = launched_work(db, run_ids)
        at = arrays.rows_of_each(every["run_id"], [str(r) for r in run_ids])
        launched = {r: arrays.take(every, rows) for r, rows in at.items()}
        names, trees, inputs = kernel_name_maps(db, run_ids), op_trees(db, run_ids), op_inputs(db, run_ids)
        backward = backward_ops_of(db, run_ids)
        threads = thread_ops(db, {r: (trees[r], launched[r]) for r in launched if len(launched[r]["kernel_hash"])})
        read = {r: Read(names[r], trees[r], inputs[r], backward[r], devices.get(r, (None, None))[1], threads.get(r))
                for r in map(str, run_ids)}
    return Known(reads.run_shape_records(db, run_ids), {r: device_of(i) for r, i in devices.items()}, launched, read)


def run_op_calls(db, run_id: str, known: tuple[dict, dict, dict] | None = None) -> tuple[dict, dict]:
    """(the priced and rated op calls of one run, {} when none; the kernels charged to them:
    run_id, op_id, kernel_hash, dur_ns, names). ``known``: the runs' `about`, when read already."""
    read = known.read.get(run_id) if known else None
    calls, kernels = _calls(db, run_id, known.launched.get(run_id) if known else None, read)
    if arrays.rows(calls):
        shapes, devices = (known or about(db, [run_id]))[:2]
        served = any(serving_steps.backend(op) for op in set(calls["op"].tolist()))
        steps = serving_costs.annotations(db, run_id) if served else None
        calls = _priced(calls, shapes.get(run_id), read.backward_ops if read else backward_ops(db, run_id), steps)
    if arrays.rows(calls):
        calls = {**calls, **rated(calls["run_id"], calls["engine"], calls["dtype"], calls["flops"], calls["bytes"],
                                  calls["kernel_ns"] / 1e9, {run_id: devices.get(run_id)} if run_id in devices else {})}
    else:
        calls = {}
    return calls, kernels
