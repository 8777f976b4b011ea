"""The OpenCL devices of a multi-device run, each pinned in a worker process of its own
(mcl.multi.cluster; the `ClusterBackend` protocol of mcl.codegen.backend).

A worker opens `select_device(None)`, which reads MCL_DEVICE (mcl.backends.opencl.runner),
so a slot's environment names its device as `platform:device`. An NVIDIA GPU is pinned
with CUDA_VISIBLE_DEVICES as well, so that the worker's driver sees that GPU alone (as
device 0 of its platform); a CPU device named several times (PoCL) is shared: each of
its workers runs PoCL on its share of the cores (POCL_CPU_MAX_CU_NUM).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from typing import Any

from mcl.codegen.backend import DeviceSlot


def worker_slots(specs: Sequence[str] | None, preferred_type: str | None) -> list[DeviceSlot]:
    """A slot per device `specs` names (None: every device of `preferred_type`, else every
    device)."""
    from mcl.backends.opencl.runner import describe, list_devices, nvidia_platform, select_device

    devices = list_devices()
    if specs is None:
        chosen = [d for info, d in devices if info.kind == preferred_type] or \
            [d for _, d in devices]
    else:
        chosen = [select_device(p) for p in specs]
    infos = {d.int_ptr: info for info, d in devices}
    shares = Counter(d.int_ptr for d in chosen)
    cores = os.cpu_count() or 1
    slots = []
    for device in chosen:
        info = infos[device.int_ptr]
        env = {"MCL_DEVICE": f"{info.platform_index}:{info.device_index}"}
        if nvidia_platform(info.platform):
            # The worker's OpenCL and CUDA see this GPU alone, as device 0 of the platform.
            ordinal = sum(1 for i, _ in devices if i.platform_index == info.platform_index
                          and i.device_index < info.device_index)
            env = {"CUDA_VISIBLE_DEVICES": str(ordinal),
                   "MCL_DEVICE": f"{info.platform_index}:0"}
        elif info.kind == "cpu":
            share = str(max(1, cores // shares[device.int_ptr]))
            env |= {"POCL_CPU_MAX_CU_NUM": share, "POCL_MAX_PTHREAD_COUNT": share}
        slots.append(DeviceSlot(str(info), env, describe(device)))
    return slots


def hold_device(device: Any) -> Any:
    """A context on `device`: creating it starts the driver (on NVIDIA, the CUDA driver's
    initialisation), and holding it keeps the driver started."""
    import pyopencl as cl

    return cl.Context([device])
