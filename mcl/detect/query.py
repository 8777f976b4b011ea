"""Query the device and the host: every figure `mcl hwd detect` can read without running
anything, as one JSON-able dict (a *query*). Tests load recorded queries instead
(tests/fixtures/detect/*.json), so nothing below the query needs the hardware.

Layout of a query (all sections optional; what a source does not give is absent):

    {"query_version": 1,
     "opencl": {"name": ..., "type": "gpu", "max_compute_units": 132, ...},
     "cuda":   {"name": ..., "total_mem": ..., "MULTIPROCESSOR_COUNT": 132, ...},
     "host":   {"model_name": ..., "flags": [...], "sockets": 1, "caches": [...], ...}}

The OpenCL section holds the device-info parameters under pyopencl's names, the CUDA
section the driver's device attributes under their CU_DEVICE_ATTRIBUTE_ names without
the prefix, the host section what /proc/cpuinfo, /proc/meminfo and
/sys/devices/system/cpu say.
"""

from __future__ import annotations

import importlib
import os
import platform
from pathlib import Path
from typing import Any

QUERY_VERSION = 1
# The backend whose devices are queried and measured (mcl.backends): the query's device
# section holds OpenCL's device-info parameters, and the benchmarks are OpenCL C.
BACKEND = "opencl"

# OpenCL device-info parameters read where the platform has them (pyopencl's names).
OPENCL_PARAMETERS = (
    "name", "vendor", "version", "driver_version", "max_compute_units",
    "max_clock_frequency", "global_mem_size", "global_mem_cache_size",
    "global_mem_cacheline_size", "local_mem_size", "max_work_group_size",
    "max_work_item_sizes", "preferred_vector_width_float", "native_vector_width_float",
    "double_fp_config", "extensions",
    # cl_nv_device_attribute_query
    "compute_capability_major_nv", "compute_capability_minor_nv", "warp_size_nv",
    "registers_per_block_nv",
    # cl_amd_device_attribute_query
    "simd_per_compute_unit_amd", "simd_width_amd", "wavefront_width_amd",
    "global_mem_channels_amd", "board_name_amd",
)

# CUDA driver attributes read where cuda-bindings is installed (CU_DEVICE_ATTRIBUTE_...).
CUDA_ATTRIBUTES = (
    "MULTIPROCESSOR_COUNT", "WARP_SIZE", "MAX_THREADS_PER_BLOCK",
    "MAX_THREADS_PER_MULTIPROCESSOR", "MAX_BLOCKS_PER_MULTIPROCESSOR", "MAX_GRID_DIM_X",
    "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR", "MAX_SHARED_MEMORY_PER_BLOCK",
    "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", "MAX_REGISTERS_PER_MULTIPROCESSOR",
    "MAX_REGISTERS_PER_BLOCK", "L2_CACHE_SIZE", "CLOCK_RATE", "MEMORY_CLOCK_RATE",
    "GLOBAL_MEMORY_BUS_WIDTH", "COMPUTE_CAPABILITY_MAJOR", "COMPUTE_CAPABILITY_MINOR",
    "TOTAL_CONSTANT_MEMORY",
)


def query_opencl(device: Any) -> dict[str, Any]:
    """The OpenCL section of a query for a pyopencl device."""
    import pyopencl as cl

    found: dict[str, Any] = {"platform": device.platform.name.strip()}
    for name in OPENCL_PARAMETERS:
        try:
            value = getattr(device, name)
        except (cl.Error, AttributeError):  # an extension the platform lacks
            continue
        found[name] = value.strip() if isinstance(value, str) else value
        if isinstance(value, tuple | list):
            found[name] = list(value)
    from mcl.backends import get_backend

    found["type"] = get_backend(BACKEND).device_kind(device)
    return found


def query_cuda(ordinal: int = 0) -> dict[str, Any] | None:
    """The CUDA section for device `ordinal`, or None where cuda-bindings or a CUDA
    driver is missing (then the OpenCL figures stand alone)."""
    try:
        driver: Any = importlib.import_module("cuda.bindings.driver")
    except ImportError:
        return None
    try:
        (err,) = driver.cuInit(0)
        if err != driver.CUresult.CUDA_SUCCESS:
            return None
        err, device = driver.cuDeviceGet(ordinal)
        if err != driver.CUresult.CUDA_SUCCESS:
            return None
        found: dict[str, Any] = {}
        err, name = driver.cuDeviceGetName(256, device)
        if err == driver.CUresult.CUDA_SUCCESS:
            found["name"] = name.split(b"\0", 1)[0].decode(errors="replace").strip()
        err, total = driver.cuDeviceTotalMem(device)
        if err == driver.CUresult.CUDA_SUCCESS:
            found["total_mem"] = int(total)
        for attribute in CUDA_ATTRIBUTES:
            which = getattr(driver.CUdevice_attribute, "CU_DEVICE_ATTRIBUTE_" + attribute, None)
            if which is None:
                continue
            err, value = driver.cuDeviceGetAttribute(which, device)
            if err == driver.CUresult.CUDA_SUCCESS:
                found[attribute] = int(value)
        return found
    except Exception:  # noqa: BLE001 - a broken driver: describe from OpenCL alone
        return None


def query_host(root: Path = Path("/")) -> dict[str, Any]:
    """The host section: the CPU's model, flags, topology, clock, caches and memory from
    /proc and /sys below `root` (a folder of recorded files in tests)."""
    found: dict[str, Any] = {"machine": platform.machine()}
    processors = _cpuinfo(root / "proc/cpuinfo")
    if processors:
        first = processors[0]
        found["model_name"] = first.get("model name") or first.get("Model") or ""
        flags = first.get("flags") or first.get("Features") or ""
        found["flags"] = sorted(set(flags.split()))
        found["logical_cpus"] = len(processors)
        packages = {p.get("physical id", "0") for p in processors}
        cores = {(p.get("physical id", "0"), p.get("core id", p.get("processor", "0")))
                 for p in processors}
        found["sockets"] = len(packages)
        found["cores_per_socket"] = max(1, len(cores) // len(packages))
        found["threads_per_core"] = max(1, len(processors) // len(cores))
        mhz = first.get("cpu MHz")
        if mhz:
            found["mhz"] = float(mhz)
    max_freq = _read(root / "sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
    if max_freq and max_freq.isdigit():
        found["max_mhz"] = int(max_freq) / 1000
    found["caches"] = _caches(root / "sys/devices/system/cpu")
    for line in (_read(root / "proc/meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            found["mem_total_kb"] = int(line.split()[1])
    return found


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _cpuinfo(path: Path) -> list[dict[str, str]]:
    processors: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in (_read(path) or "").splitlines() + [""]:
        if not line.strip():
            if "processor" in current:
                processors.append(current)
            current = {}
            continue
        key, _, value = line.partition(":")
        current[key.strip()] = value.strip()
    return processors


def _caches(cpus: Path) -> list[dict[str, Any]]:
    """One entry per data or unified cache level: its size per instance, line size and
    number of instances (distinct sets of CPUs sharing one)."""
    levels: dict[tuple[int, str], dict[str, Any]] = {}
    try:
        cpu_dirs = sorted(p for p in cpus.glob("cpu[0-9]*") if p.is_dir())
    except OSError:
        return []
    for cpu in cpu_dirs:
        for index in sorted((cpu / "cache").glob("index[0-9]*")):
            kind = _read(index / "type") or ""
            level = _read(index / "level") or ""
            size = _size(_read(index / "size") or "")
            if kind == "Instruction" or not level.isdigit() or size is None:
                continue
            entry = levels.setdefault((int(level), kind), {
                "level": int(level), "type": kind, "size": size,
                "line": int(_read(index / "coherency_line_size") or 0) or None,
                "shared": set()})
            entry["shared"].add(_read(index / "shared_cpu_list") or cpu.name)
    caches = []
    for key in sorted(levels):
        entry = levels[key]
        caches.append({"level": entry["level"], "type": entry["type"], "size": entry["size"],
                       "line": entry["line"], "instances": len(entry["shared"])})
    return caches


def _size(text: str) -> int | None:
    """sysfs cache sizes: `32K`, `1024K`, `32768K`, `2M`."""
    factors = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}
    text = text.strip()
    if text[-1:] in factors and text[:-1].isdigit():
        return int(text[:-1]) * factors[text[-1]]
    return int(text) if text.isdigit() else None


def query(device: Any | None, cuda_ordinal: int | None = None,
          root: Path = Path("/")) -> dict[str, Any]:
    """The whole query: the OpenCL device (None: the host CPU alone), CUDA where the
    device is NVIDIA's and cuda-bindings answers, and the host where the device is a CPU
    (the host is the device then)."""
    result: dict[str, Any] = {"query_version": QUERY_VERSION}
    if device is not None:
        result["opencl"] = query_opencl(device)
    kind = result.get("opencl", {}).get("type", "cpu")
    if kind == "cpu" and os.name == "posix":
        result["host"] = query_host(root)
    vendor = result.get("opencl", {}).get("vendor", "")
    if kind == "gpu" and "nvidia" in vendor.lower():
        cuda = query_cuda(cuda_ordinal or 0)
        # CUDA numbers devices its own way (CUDA_VISIBLE_DEVICES): use it only when it
        # names the same device as OpenCL does.
        if cuda is not None and cuda.get("name") == result["opencl"].get("name"):
            result["cuda"] = cuda
    return result
