"""Run generated OpenCL through pyopencl: build the module's kernels, create buffers from
numpy inputs, run the function's host program (launch sizes and scalar arguments computed
from its sizes, as the generated C++ host code does), read the results back and report
kernel time from OpenCL profiling events.

Device selection (`--device SPEC`): by default the CPU device of the PoCL that comes
with mcl (pocl-binary-distribution ships it, so tests run anywhere), even when other
platforms such as the system's own PoCL are listed before it (`default_device`); `SPEC`
picks another one: `P:D` (platform and device index), `N` (index in the list of all
devices), a case-insensitive substring
of the platform, vendor, device name or type (`nvidia`, `gpu`), or `auto`: the first
device of the type the leaf's mapping prefers (`device_type`: a GPU for fermi), else the
default. Without `--device`, $MCL_DEVICE is read, then $PYOPENCL_CTX as pyopencl reads it
(`P` or `P:D`: platform P, device D, default 0); `mcl devices` lists the choices.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from mcl.codegen.c_names import numpy_dtype
from mcl.codegen.host_eval import Number
from mcl.codegen.plan import GeneratedModule, KernelPlan, ParamPlan

# The flow every device API shares; imported from here by code that predates backends.
from mcl.codegen.session import (  # noqa: F401
    RunResult,
    SessionBase,
    build_options,
    launch_environment,
    launch_values,
    ndrange_of,
)
from mcl.diagnostics import MclError, error

DEVICE_ENV = "MCL_DEVICE"
PYOPENCL_ENV = "PYOPENCL_CTX"


def device_spec_from_environment() -> str | None:
    """$MCL_DEVICE, else $PYOPENCL_CTX in pyopencl's sense (`1` is platform 1, device 0;
    `1:2` device 2 of platform 1; other text a substring of the name), else None."""
    spec = os.environ.get(DEVICE_ENV, "").strip()
    if spec:
        return spec
    ctx = os.environ.get(PYOPENCL_ENV, "").strip()
    if not ctx:
        return None
    parts = ctx.split(":", 1)
    if parts[0].isdigit() and (len(parts) == 1 or not parts[1] or parts[1].isdigit()):
        return f"{parts[0]}:{parts[1] if len(parts) == 2 and parts[1] else 0}"
    return ctx


def _cl() -> Any:
    import pyopencl as cl

    return cl


@dataclass(frozen=True)
class DeviceInfo:
    index: int
    platform_index: int
    device_index: int
    platform: str
    name: str
    kind: str

    def __str__(self) -> str:
        return (
            f"{self.platform_index}:{self.device_index} {self.name} ({self.kind}, {self.platform})"
        )


def device_kind(type_bits: int) -> str:
    """gpu, accelerator, cpu or other (PoCL reports CPU | DEFAULT bits)."""
    cl = _cl()
    for kind in ("gpu", "accelerator", "cpu"):
        if type_bits & getattr(cl.device_type, kind.upper()):
            return kind
    return "other"


def list_devices() -> list[tuple[DeviceInfo, Any]]:
    cl = _cl()
    found: list[tuple[DeviceInfo, Any]] = []
    try:
        platforms = cl.get_platforms()
    except cl.Error:  # no ICD at all
        platforms = []
    for p_index, platform in enumerate(platforms):
        try:
            devices = platform.get_devices()
        except cl.Error:
            continue
        for d_index, device in enumerate(devices):
            info = DeviceInfo(
                len(found),
                p_index,
                d_index,
                platform.name.strip(),
                device.name.strip(),
                device_kind(device.type),
            )
            found.append((info, device))
    return found


def select_device(spec: str | None = None, preferred_type: str | None = None) -> Any:
    """The OpenCL device named by `spec` (see the module docstring); `None` reads the
    environment variable MCL_DEVICE and defaults to the PoCL CPU device. `auto` picks the
    first device of `preferred_type`, the device type the leaf's mapping prefers."""
    spec = spec if spec is not None else device_spec_from_environment()
    devices = list_devices()
    if not devices:
        raise MclError(
            error(
                "run-no-opencl",
                "no OpenCL device found",
                hint="install an OpenCL driver (pip install pocl-binary-distribution)",
            )
        )
    if spec == "auto":
        for info, device in devices:
            if preferred_type in (info.kind, "all"):
                return device
        spec = None
    if spec is None:
        return default_device(devices)
    text = spec.strip()
    if ":" in text and all(part.strip().isdigit() for part in text.split(":", 1)):
        p, d = (int(part) for part in text.split(":", 1))
        for info, device in devices:
            if (info.platform_index, info.device_index) == (p, d):
                return device
    elif text.isdigit():
        if int(text) < len(devices):
            return devices[int(text)][1]
    else:
        needle = text.lower()
        for info, device in devices:
            haystack = f"{info.platform} {device.vendor} {info.name} {info.kind}".lower()
            if needle in haystack:
                return device
    raise MclError(
        error(
            "run-unknown-device",
            f"no OpenCL device matches '{spec}'",
            hint="devices: " + "; ".join(str(info) for info, _ in devices),
        )
    )


def default_device(devices: list[tuple[DeviceInfo, Any]]) -> Any:
    """The device used without `--device`, $MCL_DEVICE or $PYOPENCL_CTX: the CPU device of
    the PoCL that comes with mcl (mcl.backends.opencl.bundled_pocl), whatever other
    platforms are installed and in whatever order; without it the first PoCL CPU device,
    else the first device."""
    from mcl.backends.opencl.bundled_pocl import bundled_platform_handles

    bundled = bundled_platform_handles()
    cpus = [(info, d) for info, d in devices if info.kind == "cpu"]
    for _, device in cpus:
        if device.platform.int_ptr in bundled:
            return device
    for info, device in cpus:
        if "portable computing language" in info.platform.lower():
            return device
    return devices[0][1]


def nvidia_platform(platform: str) -> bool:
    """Whether OpenCL platform `platform` is NVIDIA's (its GPUs are CUDA's too)."""
    return "nvidia" in platform.lower() or "cuda" in platform.lower()


def describe(device: Any) -> str:
    return f"{device.name.strip()} ({device.platform.name.strip()})"


class OpenCLSession(SessionBase):
    """A built program on one OpenCL device; run any of the module's functions on it."""

    def __init__(
        self,
        generated: GeneratedModule,
        device: Any = None,
        options: tuple[str, ...] = (),
        queue: Any = None,
    ):
        """`queue`, when given, is a profiling-enabled command queue to run on (its device
        and context are used): benchmarks share one queue between many sessions."""
        cl = _cl()
        self.generated = generated
        self.options = tuple(options)  # extra build options, e.g. ("-DTILE=64",)
        if queue is not None:
            self.device, self.context, self.queue = queue.device, queue.context, queue
        else:
            self.device = device if device is not None else select_device()
            self.context = cl.Context([self.device])
            self.queue = cl.CommandQueue(
                self.context, properties=cl.command_queue_properties.PROFILING_ENABLE
            )
        # Programs by build options: kernels with private arrays sized by the kernel's sizes
        # are built for the values they run with (KernelPlan.defines).
        self.programs = {"": self._build(())}
        self.kernels: dict[tuple[str, str], Any] = {}

    def _build(self, options: tuple[str, ...]) -> Any:
        return build_program(self.context, self.device, self.generated,
                             (*self.options, *options))

    def run(self, function: str, args: dict[str, Any], repeat: int = 1,
            kept: dict[str, Any] | None = None) -> RunResult:
        """As SessionBase.run; `first_launch_cached` from PoCL's kernel cache (a first
        launch that added no machine code to it compiled nothing)."""
        from mcl.backends.opencl.pocl_cache import compiled_kernels

        before = compiled_kernels()
        result = super().run(function, args, repeat, kept)
        after = compiled_kernels() if before is not None else None
        if before is not None and after is not None:
            result.first_launch_cached = after <= before
        return result

    def device_name(self) -> str:
        return describe(self.device)

    def _upload(self, buffer: Any, a: np.ndarray) -> Any:
        return _cl().enqueue_copy(self.queue, buffer, a)

    def _download(self, out: np.ndarray, buffer: Any) -> Any:
        return _cl().enqueue_copy(self.queue, out, buffer)

    def _finish(self) -> None:
        self.queue.finish()

    def _seconds(self, handles: list[Any]) -> float:
        return _profiled(handles)

    # ------------------------------------------------------------------ parts
    def _kernel(self, k: KernelPlan, env: dict[str, Number]) -> Any:
        return self._cached_kernel(k, env, lambda program: getattr(program, k.name))

    def _buffer(self, a: np.ndarray, p: ParamPlan) -> Any:
        cl = _cl()
        flags = cl.mem_flags.READ_ONLY if not p.written else cl.mem_flags.READ_WRITE
        return cl.Buffer(self.context, flags, size=max(a.nbytes, 1))

    def _launch(
        self, k: KernelPlan, env: dict[str, Number], buffers: dict[str, Any], args: dict[str, Any]
    ) -> Any:
        cl = _cl()
        groups, local = ndrange_of(k, env)
        if any(n <= 0 for n in groups + local):
            return None  # a foreach with no units: nothing to run
        limit = self.device.max_work_group_size
        if int(np.prod(local)) > limit:
            raise MclError(
                error(
                    "run-work-group-size",
                    f"kernel {k.name} needs work-groups of "
                    f"{'x'.join(map(str, local))} work-items; {describe(self.device)} "
                    f"allows {limit}",
                    k.span,
                )
            )
        kernel = self._kernel(k, env)
        for i, a in enumerate(k.args):
            if a.kind == "buffer":
                kernel.set_arg(i, buffers[a.name])
            elif a.kind == "local":
                kernel.set_arg(i, cl.LocalMemory(max(1, self._local_bytes(a, env))))
            elif a.kind == "scalar" and a.is_struct:
                kernel.set_arg(i, self._struct_argument(a, args))
            else:
                value = env[a.name]
                kernel.set_arg(i, np.array(value, dtype=numpy_dtype(a.element)))
        global_size = [g * s for g, s in zip(groups, local, strict=True)]
        try:
            return cl.enqueue_nd_range_kernel(self.queue, kernel, global_size, local)
        except cl.RuntimeError as exc:
            if "OUT_OF_RESOURCES" not in str(exc):
                raise
            raise self._out_of_resources(k, kernel, local, env) from None

    def _out_of_resources(self, k: KernelPlan, kernel: Any, local: list[int],
                          env: dict[str, Number]) -> MclError:
        """The driver's OUT_OF_RESOURCES as one line with the figures the OpenCL API
        gives: the kernel's own work-group limit (its registers on a GPU), its local
        memory (declared and sized by the host) against the device's."""
        cl = _cl()
        info = cl.kernel_work_group_info
        limit = kernel.get_work_group_info(info.WORK_GROUP_SIZE, self.device)
        used = kernel.get_work_group_info(info.LOCAL_MEM_SIZE, self.device)
        dynamic = sum(self._local_bytes(a, env) for a in k.args if a.kind == "local")
        return MclError(error(
            "run-resources",
            resource_message(k.name, local, limit, used, dynamic,
                             self.device.local_mem_size, describe(self.device)),
            k.span, hint="use fewer work-items per group, fewer values per work-item or "
            "smaller local tiles; on an NVIDIA GPU, --backend cuda lets a block opt in to "
            "more shared memory"))


def build_program(context: Any, device: Any, generated: GeneratedModule,
                  options: tuple[str, ...]) -> Any:
    """The OpenCL program of `generated` built for `device` of `context` with compiler
    `options`; MclError with the compiler's log when it refuses it."""
    cl = _cl()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # compiler chatter is not the user's problem
            program = cl.Program(context, generated.source)
            return program.build(options=list(options))
    except cl.RuntimeError as exc:
        raise MclError(
            error(
                "run-build",
                f"the OpenCL compiler of {describe(device)} rejected the "
                f"generated code for {generated.target}:\n{exc}",
                hint="this is a bug in mcl's code generation; please report it",
            )
        ) from exc


def resource_message(kernel: str, local: list[int], limit: int, used: int, dynamic: int,
                     device_local: int, device: str) -> str:
    """Which resource a launch that the OpenCL driver refused exceeds, with the figures.
    `used` is the kernel's CL_KERNEL_LOCAL_MEM_SIZE, which counts the local-memory
    arguments already set (OpenCL 1.2, clGetKernelWorkGroupInfo); `dynamic` is their
    size."""
    items = int(np.prod(local))
    shape = "x".join(map(str, local))
    total = used if used >= dynamic else used + dynamic
    if items > limit:
        return (f"kernel {kernel} needs work-groups of {shape} = {items} work-items; with its "
                f"registers and private memory, {device} runs it in work-groups of at most "
                f"{limit}")
    if total > device_local:
        return (f"kernel {kernel} needs {total} bytes of local memory per work-group "
                f"({dynamic} of them sized by the host); {device} has {device_local}")
    return (f"{device} refused kernel {kernel} (OUT_OF_RESOURCES) although its work-groups "
            f"of {items} work-items are within its limit of {limit} and its {total} bytes "
            f"of local memory within the device's {device_local}")


def _profiled(events: list[Any]) -> float:
    """Seconds the events took on the device (0 for a device without profiling times)."""
    try:
        return sum((ev.profile.end - ev.profile.start) * 1e-9 for ev in events)
    except _cl().Error:
        return 0.0


def run_function(
    generated: GeneratedModule,
    function: str,
    args: dict[str, Any],
    device: Any = None,
    repeat: int = 1,
) -> RunResult:
    """Build `generated` on `device` (default: PoCL CPU) and run `function` with `args`
    (numpy arrays and Python scalars by parameter name)."""
    return OpenCLSession(generated, device).run(function, args, repeat)
