"""Run generated CUDA through NVIDIA's Python bindings (`cuda-bindings`, the extra
`mcl[cuda]`): NVRTC compiles the module to a cubin for the device's own architecture
(mcl.backends.cuda.nvrtc says why not PTX), the driver API loads and launches it, CUDA events
time the copies and the kernels. The flow of a run (arrays, host program, launches,
results) is every backend's (`mcl.codegen.session.SessionBase`); only the device operations
differ.

Devices (`--device`): a CUDA device number (default 0) or a case-insensitive substring of
the device name. Without a driver or a device, one line says which is missing.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from mcl.backends.cuda.nvrtc import compile_module
from mcl.codegen.c_names import numpy_dtype
from mcl.codegen.host_eval import Number
from mcl.codegen.kernels import dynamic_shared_layout
from mcl.codegen.plan import GeneratedModule, KernelPlan, ParamPlan
from mcl.codegen.session import SessionBase, ndrange_of
from mcl.diagnostics import MclError, error

NAME = "cuda"  # the backend's, mcl.backends.cuda

# Shared memory a block gets without opting in (cuFuncSetAttribute), on every CUDA GPU.
DEFAULT_SHARED_BYTES = 48 * 1024


def driver_module() -> Any:
    try:
        from cuda.bindings import driver
    except ImportError:
        raise MclError(
            error(
                "cuda-missing",
                "--backend cuda needs NVIDIA's Python bindings, which are not installed",
                hint="pip install 'mcl[cuda]' (cuda-bindings and nvidia-cuda-nvrtc)",
            )
        ) from None
    return driver


def _check(result: Any, call: str) -> None:
    driver = driver_module()
    if result != driver.CUresult.CUDA_SUCCESS:
        raise MclError(error("cuda-driver", f"{call} failed: {_name(result)}"))


def _name(result: Any) -> str:
    return getattr(result, "name", str(result))


@dataclass(frozen=True)
class CudaPlatform:
    name: str


@dataclass(frozen=True)
class CudaDevice:
    """A CUDA device, with the figures that `mcl.footprint` and `describe` read (the
    names of OpenCL's device attributes)."""

    ordinal: int
    handle: Any
    name: str
    platform: CudaPlatform
    global_mem_size: int
    max_mem_alloc_size: int
    compute_capability: tuple[int, int]

    @property
    def arch(self) -> str:
        return f"sm_{self.compute_capability[0]}{self.compute_capability[1]}"


def _init() -> Any:
    """The driver, initialised; one line when it cannot be loaded or sees no GPU."""
    driver = driver_module()
    try:
        (result,) = driver.cuInit(0)
    except (RuntimeError, OSError):  # libcuda.so cannot be loaded
        raise MclError(
            error(
                "cuda-no-driver",
                "no NVIDIA driver found: the CUDA driver library (libcuda.so) could not be "
                "loaded",
                hint="install the NVIDIA driver, or run with --backend opencl",
            )
        ) from None
    if result == driver.CUresult.CUDA_ERROR_NO_DEVICE:
        raise MclError(
            error(
                "cuda-no-device",
                "the NVIDIA driver is loaded but sees no CUDA device",
                hint="check nvidia-smi and CUDA_VISIBLE_DEVICES, or run with --backend opencl",
            )
        )
    if result != driver.CUresult.CUDA_SUCCESS:
        raise MclError(
            error("cuda-no-driver", f"the NVIDIA driver did not start (cuInit: {_name(result)})",
                  hint="check nvidia-smi, or run with --backend opencl")
        )
    return driver


def _attribute(driver: Any, name: str, handle: Any) -> int:
    result, value = driver.cuDeviceGetAttribute(getattr(driver.CUdevice_attribute, name), handle)
    _check(result, "cuDeviceGetAttribute")
    return int(value)


def list_cuda_devices() -> list[CudaDevice]:
    driver = _init()
    result, count = driver.cuDeviceGetCount()
    _check(result, "cuDeviceGetCount")
    result, version = driver.cuDriverGetVersion()
    _check(result, "cuDriverGetVersion")
    platform = CudaPlatform(f"CUDA driver {version // 1000}.{version % 1000 // 10}")
    devices = []
    for ordinal in range(count):
        result, handle = driver.cuDeviceGet(ordinal)
        _check(result, "cuDeviceGet")
        result, raw = driver.cuDeviceGetName(256, handle)
        _check(result, "cuDeviceGetName")
        result, memory = driver.cuDeviceTotalMem(handle)
        _check(result, "cuDeviceTotalMem")
        major = _attribute(driver, "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR", handle)
        minor = _attribute(driver, "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR", handle)
        name = raw.split(b"\0", 1)[0].decode(errors="replace").strip()
        devices.append(CudaDevice(ordinal, handle, name, platform, int(memory), int(memory),
                                  (major, minor)))
    return devices


def select_cuda_device(spec: str | None = None) -> CudaDevice:
    """Device number `spec`, the first whose name contains it, or device 0."""
    devices = list_cuda_devices()
    if not devices:
        raise MclError(error("cuda-no-device", "the NVIDIA driver sees no CUDA device",
                             hint="run with --backend opencl"))
    if spec is None or spec.strip().lower() in ("", "auto", "gpu", "nvidia", "cuda"):
        return devices[0]
    text = spec.strip()
    if text.isdigit():
        if int(text) < len(devices):
            return devices[int(text)]
    else:
        for device in devices:
            if text.lower() in device.name.lower():
                return device
    raise MclError(
        error(
            "run-unknown-device",
            f"no CUDA device matches '{spec}'",
            hint="devices: " + "; ".join(f"{d.ordinal} {d.name} ({d.arch})" for d in devices),
        )
    )


def launch_gate_wanted(environ: Mapping[str, str] | None = None) -> bool:
    """Whether to hold the stream until a launch is issued (`LaunchGate`). Not under a
    CUDA tool injected into the process (Nsight Compute, Nsight Systems,
    compute-sanitizer set CUDA_INJECTION64_PATH): such a tool serialises each launch and
    returns from cuLaunchKernel only when the kernel has run, which a held stream never
    does — the host would wait for the kernel and the kernel for the host. The tool times
    the kernel itself. MCL_CUDA_LAUNCH_GATE=0 turns the gate off by hand."""
    env = os.environ if environ is None else environ
    return not env.get("CUDA_INJECTION64_PATH") and env.get("MCL_CUDA_LAUNCH_GATE") != "0"


class LaunchGate:
    """Holds a stream until the host has issued a timed launch, so that the CUDA events
    around it time the kernel alone, as OpenCL's profiling start and end do.

    Why: the begin event is recorded on an idle stream, so the GPU stamps it at once,
    while the host is still issuing the launch (tens of microseconds through Python and the
    bindings); without the gate that host time counts as kernel time. Measured on the H100
    (docs/performance-log.md): 10-20 us per launch, 0.73-0.90 of OpenCL's speed for kernels of
    50-150 us that ran as fast as OpenCL's once the launches were issued ahead. The stream
    waits (cuStreamWaitValue32) on a word of mapped host memory that the host writes after
    recording the end event."""

    def __init__(self, driver: Any):
        self.driver = driver
        result, self.host = driver.cuMemHostAlloc(4, driver.CU_MEMHOSTALLOC_DEVICEMAP)
        _check(result, "cuMemHostAlloc")
        result, self.device = driver.cuMemHostGetDevicePointer(self.host, 0)
        _check(result, "cuMemHostGetDevicePointer")
        self.word = ctypes.c_uint32.from_address(int(self.host))
        self.word.value = self.value = 0

    def hold(self, stream: Any) -> bool:
        """Make `stream` wait for the next release; False where the device cannot."""
        self.value = (self.value + 1) & 0xFFFFFFFF
        (result,) = self.driver.cuStreamWaitValue32(
            stream, self.device, self.value,
            self.driver.CUstreamWaitValue_flags.CU_STREAM_WAIT_VALUE_GEQ)
        return bool(result == self.driver.CUresult.CUDA_SUCCESS)

    def release(self) -> None:
        self.word.value = self.value

    def free(self) -> None:
        self.driver.cuMemFreeHost(self.host)


@dataclass
class _Kernel:
    function: Any
    registers: int
    static_shared: int
    max_threads: int  # per block, given its registers


class CudaSession(SessionBase):
    """The module compiled for one CUDA device; run any of its functions there."""

    def __init__(self, generated: GeneratedModule, device: CudaDevice | None = None,
                 options: tuple[str, ...] = ()):
        if generated.language != NAME:
            raise MclError(error("cuda-language", "CudaSession runs CUDA modules only "
                                 f"(this one is {generated.language})"))
        self.driver = _init()
        self.generated = generated
        self.device = device if device is not None else select_cuda_device()
        self.options = tuple(options)
        result, self.context = self.driver.cuDevicePrimaryCtxRetain(self.device.handle)
        _check(result, "cuDevicePrimaryCtxRetain")
        (result,) = self.driver.cuCtxSetCurrent(self.context)
        _check(result, "cuCtxSetCurrent")
        result, self.stream = self.driver.cuStreamCreate(0)
        _check(result, "cuStreamCreate")
        self.gate = LaunchGate(self.driver) if launch_gate_wanted() else None
        self.programs = {"": self._build(())}  # CUDA modules by build options
        self.kernels = {}
        self.allocations: list[Any] = []
        self.shared_per_block = _attribute(
            self.driver, "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
            self.device.handle)
        self.threads_per_block = _attribute(
            self.driver, "CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK", self.device.handle)
        self.registers_per_block = _attribute(
            self.driver, "CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK", self.device.handle)

    def __del__(self) -> None:
        driver = getattr(self, "driver", None)
        if driver is not None:
            for pointer in getattr(self, "allocations", []):
                driver.cuMemFree(pointer)
            gate = getattr(self, "gate", None)
            if gate is not None:
                gate.free()

    def _build(self, options: tuple[str, ...]) -> Any:
        compiled = compile_module(self.generated, self.device.arch, (*self.options, *options))
        result, module = self.driver.cuModuleLoadData(compiled.cubin)
        _check(result, "cuModuleLoadData")
        return module

    def device_name(self) -> str:
        return f"{self.device.name} ({self.device.platform.name})"

    # ------------------------------------------------------------------ memory
    def _buffer(self, a: np.ndarray, p: ParamPlan) -> Any:
        result, pointer = self.driver.cuMemAlloc(max(a.nbytes, 1))
        if result == self.driver.CUresult.CUDA_ERROR_OUT_OF_MEMORY:
            raise MclError(error("run-memory", f"array '{p.name}' ({a.nbytes} bytes) does not "
                                 f"fit in the free memory of {self.device_name()}"))
        _check(result, "cuMemAlloc")
        self.allocations.append(pointer)
        return pointer

    def _timed(self, start: Callable[[], None]) -> tuple[Any, Any]:
        result, begin = self.driver.cuEventCreate(0)
        _check(result, "cuEventCreate")
        result, end = self.driver.cuEventCreate(0)
        _check(result, "cuEventCreate")
        self.driver.cuEventRecord(begin, self.stream)
        start()
        self.driver.cuEventRecord(end, self.stream)
        return begin, end

    def _upload(self, buffer: Any, a: np.ndarray) -> Any:
        return self._timed(lambda: _check(
            self.driver.cuMemcpyHtoDAsync(buffer, a.ctypes.data, a.nbytes, self.stream)[0],
            "cuMemcpyHtoDAsync"))

    def _download(self, out: np.ndarray, buffer: Any) -> Any:
        return self._timed(lambda: _check(
            self.driver.cuMemcpyDtoHAsync(out.ctypes.data, buffer, out.nbytes, self.stream)[0],
            "cuMemcpyDtoHAsync"))

    def _finish(self) -> None:
        (result,) = self.driver.cuStreamSynchronize(self.stream)
        if result != self.driver.CUresult.CUDA_SUCCESS:
            raise MclError(error(
                "cuda-launch", f"a kernel of {self.generated.name} failed on "
                f"{self.device_name()}: {_name(result)}",
                hint="run it under compute-sanitizer to find the access"))

    def _seconds(self, handles: list[Any]) -> float:
        total = 0.0
        for begin, end in handles:
            result, ms = self.driver.cuEventElapsedTime(begin, end)
            _check(result, "cuEventElapsedTime")
            total += ms * 1e-3
            self.driver.cuEventDestroy(begin)
            self.driver.cuEventDestroy(end)
        return total

    # ------------------------------------------------------------------ kernels
    def _kernel(self, k: KernelPlan, env: dict[str, Number]) -> _Kernel:
        kernel: _Kernel = self._cached_kernel(k, env, lambda module: self._function(module, k))
        return kernel

    def _function(self, module: Any, k: KernelPlan) -> _Kernel:
        result, function = self.driver.cuModuleGetFunction(module, k.name.encode())
        _check(result, "cuModuleGetFunction")
        attr = self.driver.CUfunction_attribute

        def get(name: str) -> int:
            result, value = self.driver.cuFuncGetAttribute(getattr(attr, name), function)
            _check(result, "cuFuncGetAttribute")
            return int(value)

        return _Kernel(
            function,
            get("CU_FUNC_ATTRIBUTE_NUM_REGS"),
            get("CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES"),
            get("CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK"),
        )

    def _launch(
        self, k: KernelPlan, env: dict[str, Number], buffers: dict[str, Any], args: dict[str, Any]
    ) -> Any:
        groups, local = ndrange_of(k, env)
        if any(n <= 0 for n in groups + local):
            return None  # a foreach with no units: nothing to run
        kernel = self._kernel(k, env)
        local_args = [a for a in k.args if a.kind == "local"]
        offsets, dynamic = dynamic_shared_layout([self._local_bytes(a, env) for a in local_args])
        self._check_resources(k, kernel, local, dynamic)
        if kernel.static_shared + dynamic > DEFAULT_SHARED_BYTES:
            _check(self.driver.cuFuncSetAttribute(
                kernel.function,
                self.driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                dynamic)[0], "cuFuncSetAttribute")
        offset_of = {a.name: o for a, o in zip(local_args, offsets, strict=True)}
        values: list[np.ndarray] = []
        for a in k.args:
            if a.kind == "buffer":
                values.append(np.array([int(buffers[a.name])], dtype=np.uint64))
            elif a.kind == "local":
                values.append(np.array([offset_of[a.name]], dtype=np.int32))
            elif a.kind == "scalar" and a.is_struct:
                values.append(self._struct_argument(a, args))
            else:
                values.append(np.array([env[a.name]], dtype=numpy_dtype(a.element)))
        # cuLaunchKernel reads the argument values through these pointers when called.
        pointers = np.array([v.ctypes.data for v in values], dtype=np.uint64)
        grid = [*groups, 1, 1][:3]
        block = [*local, 1, 1][:3]

        def start() -> None:
            (result,) = self.driver.cuLaunchKernel(
                kernel.function, *grid, *block, dynamic, self.stream, pointers.ctypes.data, 0)
            if result != self.driver.CUresult.CUDA_SUCCESS:
                raise MclError(error(
                    "cuda-launch", f"kernel {k.name} could not be launched with "
                    f"{'x'.join(map(str, groups))} blocks of {'x'.join(map(str, local))} "
                    f"threads on {self.device_name()}: {_name(result)}", k.span))

        held = self.gate.hold(self.stream) if self.gate is not None else False
        try:
            return self._timed(start)
        finally:
            if held and self.gate is not None:  # also when the launch failed: the
                self.gate.release()  # stream must not wait forever

    def _check_resources(self, k: KernelPlan, kernel: _Kernel, local: list[int],
                         dynamic: int) -> None:
        """One line naming the resource a launch would exceed, with the figures (the
        driver's own answer is CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES and nothing more)."""
        threads = int(np.prod(local))
        shape = "x".join(map(str, local))
        where = f"on {self.device_name()}"
        if threads > self.threads_per_block:
            raise MclError(error(
                "run-work-group-size",
                f"kernel {k.name} needs blocks of {shape} = {threads} threads; {where} a block "
                f"has at most {self.threads_per_block}", k.span))
        if threads > kernel.max_threads:
            raise MclError(error(
                "run-registers",
                f"kernel {k.name} uses {kernel.registers} registers per thread, so a block of "
                f"{threads} threads needs {kernel.registers * threads} registers; {where} a "
                f"block has {self.registers_per_block} (at most {kernel.max_threads} threads "
                f"at {kernel.registers} registers)", k.span,
                hint="use fewer threads per block or fewer values per thread"))
        shared = kernel.static_shared + dynamic
        if shared > self.shared_per_block:
            raise MclError(error(
                "run-shared-memory",
                f"kernel {k.name} needs {shared} bytes of shared memory per block "
                f"({kernel.static_shared} declared, {dynamic} sized by the host); {where} a "
                f"block can have at most {self.shared_per_block}", k.span,
                hint="use smaller shared tiles"))


def run_cuda_function(generated: GeneratedModule, function: str, args: dict[str, Any],
                      device: CudaDevice | None = None, repeat: int = 1) -> Any:
    """Compile `generated` (CUDA) for `device` (default: device 0) and run `function`."""
    return CudaSession(generated, device).run(function, args, repeat)
