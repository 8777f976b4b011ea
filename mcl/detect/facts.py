"""Figures read from a query, each with the place it came from (the comment the
generated description writes beside it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Where each query field comes from, as the comment names it.
SOURCE_NAMES = {
    ("opencl", "max_compute_units"): "OpenCL CL_DEVICE_MAX_COMPUTE_UNITS",
    ("opencl", "max_clock_frequency"): "OpenCL CL_DEVICE_MAX_CLOCK_FREQUENCY (MHz)",
    ("opencl", "global_mem_size"): "OpenCL CL_DEVICE_GLOBAL_MEM_SIZE",
    ("opencl", "global_mem_cache_size"): "OpenCL CL_DEVICE_GLOBAL_MEM_CACHE_SIZE",
    ("opencl", "global_mem_cacheline_size"): "OpenCL CL_DEVICE_GLOBAL_MEM_CACHELINE_SIZE",
    ("opencl", "local_mem_size"): "OpenCL CL_DEVICE_LOCAL_MEM_SIZE",
    ("opencl", "max_work_group_size"): "OpenCL CL_DEVICE_MAX_WORK_GROUP_SIZE",
    ("opencl", "native_vector_width_float"): "OpenCL CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT",
    ("opencl", "warp_size_nv"): "OpenCL CL_DEVICE_WARP_SIZE_NV",
    ("opencl", "registers_per_block_nv"): "OpenCL CL_DEVICE_REGISTERS_PER_BLOCK_NV",
    ("opencl", "wavefront_width_amd"): "OpenCL CL_DEVICE_WAVEFRONT_WIDTH_AMD",
    ("host", "sockets"): "/proc/cpuinfo: distinct physical ids",
    ("host", "cores_per_socket"): "/proc/cpuinfo: distinct core ids per socket",
    ("host", "threads_per_core"): "/proc/cpuinfo: logical CPUs per core",
    ("host", "max_mhz"): "/sys/.../cpufreq/cpuinfo_max_freq (MHz)",
    ("host", "mhz"): "/proc/cpuinfo: cpu MHz",
    ("host", "mem_total_kb"): "/proc/meminfo: MemTotal (kB)",
}


@dataclass(frozen=True)
class Figure:
    value: float
    source: str

    @property
    def int(self) -> int:
        return int(self.value)


def figure(q: dict[str, Any], *keys: tuple[str, str]) -> Figure | None:
    """The first of `keys` (section, field) the query has, with its source; CUDA
    attributes are named as the driver names them."""
    for section, key in keys:
        value = (q.get(section) or {}).get(key)
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            continue
        name = SOURCE_NAMES.get((section, key)) or (
            f"CUDA CU_DEVICE_ATTRIBUTE_{key}" if section == "cuda" else f"{section} {key}")
        shown = (f"{value:g}" if isinstance(value, float) and not value.is_integer()
                 else f"{int(value)}")
        return Figure(value, f"{name}: {shown}")
    return None


def text(q: dict[str, Any], section: str, key: str) -> str:
    value = (q.get(section) or {}).get(key)
    return value.strip() if isinstance(value, str) else ""


def device_kind(q: dict[str, Any]) -> str:
    """cpu, gpu or accelerator: the OpenCL type, or cpu for a host-only query."""
    return text(q, "opencl", "type") or "cpu"


def is_nvidia(q: dict[str, Any]) -> bool:
    return "cuda" in q or "nvidia" in (text(q, "opencl", "vendor")
                                       + text(q, "opencl", "platform")).lower()


def device_name(q: dict[str, Any]) -> str:
    if device_kind(q) == "cpu" and text(q, "host", "model_name"):
        return text(q, "host", "model_name")  # PoCL's name adds its build: pthread-...
    return (text(q, "cuda", "name") or text(q, "opencl", "board_name_amd")
            or text(q, "opencl", "name") or text(q, "host", "model_name") or "device")


def compute_capability(q: dict[str, Any]) -> tuple[int, int, str] | None:
    """(major, minor, source) from CUDA or the OpenCL NVIDIA extension."""
    cuda = q.get("cuda") or {}
    if "COMPUTE_CAPABILITY_MAJOR" in cuda:
        return (int(cuda["COMPUTE_CAPABILITY_MAJOR"]), int(cuda.get("COMPUTE_CAPABILITY_MINOR", 0)),
                "CUDA CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR/MINOR")
    ocl = q.get("opencl") or {}
    if "compute_capability_major_nv" in ocl:
        return (int(ocl["compute_capability_major_nv"]),
                int(ocl.get("compute_capability_minor_nv", 0)),
                "OpenCL CL_DEVICE_COMPUTE_CAPABILITY_MAJOR/MINOR_NV")
    return None
