"""The GPU's clocks, power, temperature and throttle reasons while a run is measured.

`Sampler(index)` samples every `PERIOD_S` on a thread between `start()` and `stop()`, through
NVIDIA's management library (the `nvidia-ml-py` bindings, module `pynvml`, imported only here and
only when a sampler starts) or, where those are not installed, `nvidia-smi`'s query of the same
fields. `summary()` gives min / mean / max of each, the throttle reasons seen (in NVML's words)
and whether any of them slows the clocks (`throttled`) or the clocks were set by the user
(`clocks_locked`). Without either source `summary()` says so in `note` and holds no numbers.
`other_processes(index)` lists other compute processes on the GPU; `driver_version()` the driver.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time

PERIOD_S = 0.05  # NVML; nvidia-smi: 0.5 s
# NVML's clock event (throttle) reason bits, in its words
REASONS = {0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
           0x10: "sync_boost", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown",
           0x80: "hw_power_brake_slowdown", 0x100: "display_clock_setting"}
SLOWING = {"sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"}
SMI_FIELDS = ("clocks.sm", "clocks.mem", "power.draw", "temperature.gpu", "clocks_throttle_reasons.active")


def _pynvml():
    try:
        import pynvml  # noqa: PLC0415 - optional: nvidia-ml-py
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no driver, no GPU: the record says there is no NVML
        return None
    return pynvml


def _smi() -> str | None:
    return shutil.which("nvidia-smi")


def source() -> str | None:
    """'nvml', 'nvidia-smi', or None when neither can be read here."""
    if _pynvml() is not None:
        return "nvml"
    return "nvidia-smi" if _smi() else None


def nvml_index(torch_index: int = 0) -> int:
    """NVML's index of torch's device ``torch_index`` (CUDA_VISIBLE_DEVICES renumbers devices)."""
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    if torch_index < len(visible) and visible[torch_index].isascii() and visible[torch_index].isdigit():
        return int(visible[torch_index])
    return torch_index


def reasons(mask: int) -> list[str]:
    return [word for bit, word in REASONS.items() if mask & bit]


def _read_nvml(nv, handle) -> dict:
    get_reasons = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
        nv.nvmlDeviceGetCurrentClocksThrottleReasons
    return {"sm_clock_mhz": nv.nvmlDeviceGetClockInfo(handle, nv.NVML_CLOCK_SM),
            "mem_clock_mhz": nv.nvmlDeviceGetClockInfo(handle, nv.NVML_CLOCK_MEM),
            "power_w": nv.nvmlDeviceGetPowerUsage(handle) / 1e3,
            "temp_c": nv.nvmlDeviceGetTemperature(handle, nv.NVML_TEMPERATURE_GPU),
            "reasons": int(get_reasons(handle))}


def _read_smi(index: int) -> dict | None:
    done = subprocess.run([_smi() or "nvidia-smi", f"--id={index}", f"--query-gpu={','.join(SMI_FIELDS)}",
                           "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=10)
    parts = [p.strip() for p in done.stdout.strip().split(",")]
    if done.returncode != 0 or len(parts) != len(SMI_FIELDS):
        return None
    try:
        return {"sm_clock_mhz": float(parts[0]), "mem_clock_mhz": float(parts[1]), "power_w": float(parts[2]),
                "temp_c": float(parts[3]), "reasons": int(parts[4], 16)}
    except ValueError:
        return None


class Sampler:
    """Samples the GPU on a thread while a run is measured (see the module docstring)."""

    def __init__(self, index: int = 0, period_s: float = PERIOD_S):
        self.index, self.period_s = nvml_index(index), period_s
        self.samples: list[dict] = []
        self.source = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> Sampler:
        nv = _pynvml()
        if nv is not None:
            handle = nv.nvmlDeviceGetHandleByIndex(self.index)
            self.source, read = "nvml", (lambda: _read_nvml(nv, handle))
        elif _smi():
            # nvidia-smi is a process of ~50 ms CPU a query: sampled more slowly (said in the summary),
            # so that it takes little of the CPU a launch-bound run needs
            self.source, read, self.period_s = "nvidia-smi", (lambda: _read_smi(self.index)), max(self.period_s, 0.5)
        else:
            return self
        self._read = read
        self._thread = threading.Thread(target=self._loop, args=(read,), daemon=True)
        self._thread.start()
        return self

    def _loop(self, read) -> None:
        while True:
            try:
                sample = read()
            except Exception:  # noqa: BLE001 - a failed read is a missing sample, never a failed run
                sample = None
            if sample is not None:
                self.samples.append({"t": time.monotonic(), **sample})
            if self._stop.wait(self.period_s):
                return

    def stop(self) -> dict:
        """End the sampling with one last sample (a run shorter than the period still has two)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._loop_once()
        return self.summary()

    def _loop_once(self) -> None:
        try:
            sample = self._read()
        except Exception:  # noqa: BLE001
            sample = None
        if sample is not None:
            self.samples.append({"t": time.monotonic(), **sample})

    def summary(self) -> dict:
        if self.source is None:
            return {"source": None, "samples": 0, "note": "no NVML here (nvidia-ml-py not installed, no nvidia-smi "
                                                          "or no NVIDIA GPU): clocks, power, temperature and "
                                                          "throttling were not recorded"}
        if not self.samples:
            return {"source": self.source, "samples": 0, "note": f"{self.source} gave no sample during the run"}
        out: dict = {"source": self.source, "samples": len(self.samples), "period_s": self.period_s}
        for key in ("sm_clock_mhz", "mem_clock_mhz", "power_w", "temp_c"):
            values = [s[key] for s in self.samples]
            out[key] = {"min": min(values), "mean": sum(values) / len(values), "max": max(values)}
        seen = sorted({word for s in self.samples for word in reasons(s["reasons"])})
        out["throttle_reasons"] = seen
        out["throttled"] = bool(SLOWING & set(seen))
        out["clocks_locked"] = "applications_clocks_setting" in seen
        return out


def other_processes(index: int = 0) -> list[dict] | None:
    """Other compute processes on the GPU ({pid, used_mib}); None when that cannot be read."""
    mine, index = os.getpid(), nvml_index(index)
    nv = _pynvml()
    try:
        if nv is not None:
            procs = nv.nvmlDeviceGetComputeRunningProcesses(nv.nvmlDeviceGetHandleByIndex(index))
            found = [(p.pid, (p.usedGpuMemory or 0) / 2**20) for p in procs]
        elif _smi():
            done = subprocess.run([_smi(), f"--id={index}", "--query-compute-apps=pid,used_memory",
                                   "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=10)
            found = [(int(a), float(b)) for a, b in (line.split(",") for line in done.stdout.splitlines() if "," in line)]
        else:
            return None
    except Exception:  # noqa: BLE001 - unknown is said as None, never a failed run
        return None
    return [{"pid": pid, "used_mib": round(mib, 1)} for pid, mib in found if pid != mine]


def driver_version() -> str | None:
    nv = _pynvml()
    try:
        if nv is not None:
            version = nv.nvmlSystemGetDriverVersion()
            return version.decode() if isinstance(version, bytes) else str(version)
        if _smi():
            done = subprocess.run([_smi(), "--query-gpu=driver_version", "--format=csv,noheader"],
                                  capture_output=True, text=True, timeout=10)
            return done.stdout.splitlines()[0].strip() if done.returncode == 0 and done.stdout.strip() else None
    except Exception:  # noqa: BLE001
        return None
    return None
