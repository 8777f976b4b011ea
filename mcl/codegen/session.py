"""How a generated module runs on a device, whatever the device API: arrays to buffers,
the host program with its launches (launch sizes and scalar arguments computed from its
sizes, as the generated host code does), the written arrays back, device times. A backend
(mcl.backends: OpenCL's pyopencl runner, CUDA's driver-API runner) subclasses
`SessionBase` with the device operations.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mcl.codegen.c_names import numpy_dtype
from mcl.codegen.host_eval import HostInterpreter, Number, evaluate
from mcl.codegen.plan import FunctionPlan, GeneratedModule, KernelArg, KernelPlan, ParamPlan
from mcl.codegen.struct_layout import from_layout, struct_dtype, to_layout
from mcl.diagnostics import MclError, error


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
    # Whether that first launch compiled nothing (the device compiler's cache had every
    # kernel); None where the backend cannot tell.
    first_launch_cached: bool | None = None

    @property
    def kernel_time_s(self) -> float:
        """Median over repetitions of the summed kernel times of one run."""
        return statistics.median(self.kernel_times_s) if self.kernel_times_s else 0.0


class SessionBase:
    """The run of a module's function on one device, whatever the API: arrays to
    buffers, the host program with its launches, results back, device times. Backends
    (mcl.backends.opencl.runner, mcl.backends.cuda.runner) supply the device operations."""

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
