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
import statistics
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mcl.codegen.c_names import numpy_dtype
from mcl.codegen.host_eval import HostInterpreter, Number, evaluate
from mcl.codegen.plan import FunctionPlan, GeneratedModule, KernelArg, KernelPlan, ParamPlan
from mcl.codegen.struct_layout import from_layout, struct_dtype, to_layout
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
    the PoCL that comes with mcl (mcl.codegen.bundled_pocl), whatever other platforms are
    installed and in whatever order; without it the first PoCL CPU device, else the first
    device."""
    from mcl.codegen.bundled_pocl import bundled_platform_handles

    bundled = bundled_platform_handles()
    cpus = [(info, d) for info, d in devices if info.kind == "cpu"]
    for _, device in cpus:
        if device.platform.int_ptr in bundled:
            return device
    for info, device in cpus:
        if "portable computing language" in info.platform.lower():
            return device
    return devices[0][1]


def describe(device: Any) -> str:
    return f"{device.name.strip()} ({device.platform.name.strip()})"


@dataclass
class RunResult:
    outputs: dict[str, np.ndarray]
    kernel_times_s: list[float] = field(default_factory=list)  # one total per repetition
    device: str = ""
    to_device_s: float = 0.0  # host-to-device copies of one repetition (profiling time)
    from_device_s: float = 0.0  # device-to-host copies of the outputs
    # What the first repetition took beyond its kernels: mostly the device compiler, which
    # (PoCL) finishes each kernel only at its first launch, for its work-group size.
    first_launch_s: float = 0.0

    @property
    def kernel_time_s(self) -> float:
        """Median over repetitions of the summed kernel times of one run."""
        return statistics.median(self.kernel_times_s) if self.kernel_times_s else 0.0


class SessionBase:
    """The run of a module's function on one device, whatever the API: arrays to
    buffers, the host program with its launches, results back, device times. Backends
    (OpenCL below, CUDA in mcl.codegen.cuda_runner) supply the device operations."""

    generated: GeneratedModule
    programs: dict[str, Any]  # by build options, "" for none
    kernels: dict[tuple[str, str], Any]  # by (build options, kernel name)

    def run(self, function: str, args: dict[str, Any], repeat: int = 1,
            kept: dict[str, Any] | None = None) -> RunResult:
        """Run `function` `repeat` times, each repetition from the inputs. `kept`, when
        given, holds the device buffers of the arrays the function only reads, by name,
        from an earlier run of the same arguments (this run fills it): those are not
        copied again (`mcl run --rounds`, docs/scaling.md)."""
        plan = self.generated.function(function)
        if plan is None:
            names = ", ".join(f.name for f in self.generated.functions) or "none"
            raise MclError(
                error(
                    "run-unknown-function",
                    f"no kernel function '{function}' (functions with foreach statements: {names})",
                )
            )
        env = self._environment(plan, args)
        arrays = {p.name: self._array(p, args, env) for p in plan.params if p.is_array}
        read_only = {name for name in arrays if not plan.param(name).written}
        resident = set(kept) & read_only if kept is not None else set()
        buffers = {name: kept[name] if kept is not None and name in resident
                   else self._buffer(a, plan.param(name)) for name, a in arrays.items()}
        times: list[float] = []
        uploads: list[Any] = []
        first_wall: float | None = None
        for _ in range(max(1, repeat)):
            started = time.perf_counter()
            uploads = [self._upload(buffers[name], a)  # every repetition starts from the
                       for name, a in arrays.items()  # inputs, but those kept on the device
                       if a.size and name not in resident]
            events: list[Any] = []

            def launch(k: int, values: dict[str, Number], events: list[Any] = events) -> None:
                events.append(self._launch(plan.kernels[k], values, buffers, args))

            HostInterpreter(launch).run(plan.host_body, dict(env))
            self._finish()
            times.append(self._seconds([ev for ev in events if ev]))
            if first_wall is None:
                first_wall = time.perf_counter() - started
        outputs = {}
        downloads = []
        for p in plan.params:
            if p.is_array and p.written:
                out = np.empty_like(arrays[p.name])
                if out.size:
                    downloads.append(self._download(out, buffers[p.name]))
                outputs[p.name] = out.reshape(np.shape(args[p.name]))
        self._finish()
        for p in plan.params:
            if p.is_struct and p.name in outputs:  # back in the caller's dtype
                outputs[p.name] = from_layout(outputs[p.name], np.asarray(args[p.name]).dtype)
        # The first repetition's wall time beyond its kernels and copies: the device's own
        # compile of the kernels at their first launch (PoCL compiles there).
        # (`_seconds` once per handle: a backend may release the handles it has read.)
        if kept is not None:
            kept.update({name: buffers[name] for name in read_only})
        upload_s = self._seconds(uploads)
        first_launch = max(0.0, (first_wall or 0.0) - times[0] - upload_s)
        return RunResult(outputs, times, self.device_name(), upload_s,
                         self._seconds(downloads), first_launch)

    def _environment(self, plan: FunctionPlan, args: dict[str, Any]) -> dict[str, Number]:
        return launch_environment(self.generated, plan, args)

    def _array(self, p: ParamPlan, args: dict[str, Any], env: dict[str, Number]) -> np.ndarray:
        value = np.asarray(args[p.name])
        expected = int(evaluate(p.size, env)) if p.size is not None else value.size
        if value.size != expected:
            raise MclError(
                error(
                    "run-array-size",
                    f"array '{p.name}' has {value.size} elements; its declaration needs {expected}",
                )
            )
        if p.is_struct:
            return to_layout(self._structured(p.name, value), self._layout(p.element)).reshape(-1)
        return np.ascontiguousarray(value, dtype=numpy_dtype(p.element)).reshape(-1)

    def _layout(self, type_name: str) -> np.dtype:
        return struct_dtype(type_name, {t.name: t for t in self.generated.types})

    def _local_bytes(self, a: KernelArg, env: dict[str, Number]) -> int:
        """Bytes of the group-shared array `a` that the host sizes at a launch (a user
        type's elements in its device layout, mcl.codegen.struct_layout)."""
        elements = int(evaluate(a.size, env)) if a.size is not None else 1
        element = self._layout(a.element) if a.is_struct else numpy_dtype(a.element)
        return elements * element.itemsize

    def _struct_argument(self, a: KernelArg, args: dict[str, Any]) -> np.ndarray:
        """The bytes of a user-type scalar argument `a`: the caller's record in the
        device layout."""
        record = self._structured(a.name, np.asarray(args[a.name]))
        return to_layout(record, self._layout(a.element))

    @staticmethod
    def _structured(name: str, value: np.ndarray) -> np.ndarray:
        if value.dtype.names is None:
            raise MclError(error(
                "run-struct-fields", f"argument '{name}' is of a user type but has dtype "
                f"{value.dtype}", hint="pass a numpy structured array with the type's fields"))
        return value

    def _cached_kernel(self, k: KernelPlan, env: dict[str, Number],
                       find: Callable[[Any], Any]) -> Any:
        """Kernel `k` of the program built for the launch's options (private arrays sized
        by the kernel's sizes: KernelPlan.defines), each program built once; `find` takes
        the kernel out of a program."""
        options = build_options(k, env)
        key = " ".join(options)
        if key not in self.programs:
            self.programs[key] = self._build(options)
        if (key, k.name) not in self.kernels:
            self.kernels[key, k.name] = find(self.programs[key])
        return self.kernels[key, k.name]

    # ------------------------------------------------------------------ the backend's part
    def _build(self, options: tuple[str, ...]) -> Any:
        """The program (module) built with the extra compiler `options`."""
        raise NotImplementedError

    def device_name(self) -> str:
        raise NotImplementedError

    def _buffer(self, a: np.ndarray, p: ParamPlan) -> Any:
        raise NotImplementedError

    def _upload(self, buffer: Any, a: np.ndarray) -> Any:
        """Start copying `a` to `buffer`; a handle for `_seconds`."""
        raise NotImplementedError

    def _download(self, out: np.ndarray, buffer: Any) -> Any:
        raise NotImplementedError

    def _launch(
        self, k: KernelPlan, env: dict[str, Number], buffers: dict[str, Any], args: dict[str, Any]
    ) -> Any:
        """Start kernel `k`; a handle for `_seconds`, or None when it has no units."""
        raise NotImplementedError

    def _finish(self) -> None:
        """Wait until everything started has finished."""
        raise NotImplementedError

    def _seconds(self, handles: list[Any]) -> float:
        """Device seconds of the finished operations of `handles`."""
        raise NotImplementedError


class Session(SessionBase):
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
        cl = _cl()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # compiler chatter is not the user's problem
                program = cl.Program(self.context, self.generated.opencl)
                return program.build(options=[*self.options, *options])
        except cl.RuntimeError as exc:
            raise MclError(
                error(
                    "run-build",
                    f"the OpenCL compiler of {describe(self.device)} rejected the "
                    f"generated code for {self.generated.target}:\n{exc}",
                    hint="this is a bug in mcl's code generation; please report it",
                )
            ) from exc

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


def launch_environment(
    generated: GeneratedModule, plan: FunctionPlan, args: dict[str, Any]
) -> dict[str, Number]:
    """The values the host code starts from: the named constants and the scalar arguments."""
    env: dict[str, Number] = {}
    for c in generated.constants:
        if c.init is not None:
            try:
                env[c.name] = evaluate(c.init, env)
            except MclError:
                pass  # a constant the host does not need
    for p in plan.params:
        if p.name not in args:
            raise MclError(
                error(
                    "run-missing-argument", f"no value for parameter '{p.name}' of {plan.name}"
                )
            )
        if not p.is_array and not p.is_struct:
            value = args[p.name]
            env[p.name] = int(value) if p.element in ("int", "byte") else float(value)
    return env


def launch_values(
    generated: GeneratedModule, function: str, args: dict[str, Any]
) -> list[tuple[KernelPlan, dict[str, Number]]]:
    """Each kernel launch `function` makes with `args` and the host values at that launch
    (sizes, host variables), by running its host code without a device."""
    plan = generated.function(function)
    if plan is None:
        raise MclError(error("run-unknown-function", f"no kernel function '{function}'"))
    launches: list[tuple[KernelPlan, dict[str, Number]]] = []

    def launch(k: int, values: dict[str, Number]) -> None:
        launches.append((plan.kernels[k], dict(values)))

    HostInterpreter(launch).run(plan.host_body, launch_environment(generated, plan, args))
    return launches


def ndrange_of(k: KernelPlan, values: dict[str, Number]) -> tuple[list[int], list[int]]:
    """(work-groups, work-items per group) per dimension of a launch."""
    return [int(evaluate(g, values)) for g in k.groups], [int(evaluate(s, values)) for s in k.local]


def build_options(k: KernelPlan, env: dict[str, Number]) -> tuple[str, ...]:
    """`-D MCL_SIZE_x=value` for each private array size the kernel leaves to the host."""
    return tuple(f"-D{macro}={max(1, int(evaluate(size, env)))}" for macro, size in k.defines)


def run_function(
    generated: GeneratedModule,
    function: str,
    args: dict[str, Any],
    device: Any = None,
    repeat: int = 1,
) -> RunResult:
    """Build `generated` on `device` (default: PoCL CPU) and run `function` with `args`
    (numpy arrays and Python scalars by parameter name)."""
    return Session(generated, device).run(function, args, repeat)
