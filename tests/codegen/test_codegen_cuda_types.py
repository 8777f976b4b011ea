"""User types and written scalars on the CUDA path without a GPU: NVRTC compiles the
generated kernels (struct parameters by value, a shared array of structs sized by the host,
a written scalar by pointer), and the CUDA runner passes the bytes the kernel expects --
checked by a fake driver that keeps device memory in Python and runs the kernel with numpy
on the argument bytes it is given, as cuLaunchKernel would read them."""

from __future__ import annotations

import ctypes
from enum import Enum
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from mcl import pipeline
from mcl.backends.cuda import runner as cuda_runner
from mcl.backends.cuda.nvrtc import compile_cuda
from mcl.backends.cuda.runner import CudaSession
from mcl.codegen.kernels import dynamic_shared_layout
from mcl.codegen.plan import GeneratedModule
from mcl.codegen.struct_layout import struct_dtype

from .support import library, load

SCALED = """
type Complex {
  float real;
  float imag;
}

gpu void scaled(int n, int m, Complex scale, float total, Complex[n] out, Complex[n] a) {
  foreach (int b in n / m blocks) {
    local Complex[m] tile;
    foreach (int t in m threads) {
      tile[t].real = a[b * m + t].real;
      tile[t].imag = a[b * m + t].imag;
      barrier(local);
      Complex z = tile[m - 1 - t];
      out[b * m + t].real = z.real * scale.real - z.imag * scale.imag;
      out[b * m + t].imag = z.real * scale.imag + z.imag * scale.real;
      atomicAdd(total, z.real);
    }
  }
}
"""

# The caller's own dtype: another field order, so the runner must copy by field name.
USER_COMPLEX = np.dtype([("imag", "f4"), ("real", "f4")])


def _generated(tmp_path: Path) -> GeneratedModule:
    return pipeline.generate(load(tmp_path, SCALED), "hopper", library(), language="cuda")


def test_struct_scalars_shared_structs_and_written_scalars_compile_with_nvrtc(
        tmp_path: Path) -> None:
    source = _generated(tmp_path).source
    assert "const Complex scale," in source
    # the written scalar is a pointer in CUDA's spelling, not OpenCL's
    assert "float* __restrict__ total," in source and "__global " not in source
    assert "Complex* const tile = (Complex*)(mcl_shared + mcl_offset_tile);" in source
    for arch in ("sm_90", "sm_75"):
        assert compile_cuda(source, "scaled.cu", arch, warnings_as_errors=True).cubin


class _Result(Enum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_OUT_OF_MEMORY = 2


class _FakeDriver:
    """Device memory as Python bytes; a launch reads its arguments through the pointer
    array as the driver does and hands them, by parameter name, to `kernel`."""

    CUresult = _Result
    CU_MEMHOSTALLOC_DEVICEMAP = 2
    CUstreamWaitValue_flags = SimpleNamespace(CU_STREAM_WAIT_VALUE_GEQ=0)
    CUfunction_attribute = SimpleNamespace(
        CU_FUNC_ATTRIBUTE_NUM_REGS="regs", CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES="static",
        CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK="threads",
        CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES="dynamic")

    def __init__(self, session: CudaSession, kernel: Any):
        self.session, self.kernel = session, kernel
        self.memory: dict[int, bytearray] = {}
        self.launches: list[dict[str, Any]] = []
        self.host_words: list[Any] = []
        self.waits: list[tuple[int, int]] = []  # (device address, value) of stream waits
        self.destroyed: list[object] = []  # events after cuEventDestroy

    def cuMemHostAlloc(self, size: int, flags: int) -> tuple[Any, int]:
        assert flags == self.CU_MEMHOSTALLOC_DEVICEMAP
        self.host_words.append(ctypes.create_string_buffer(size))
        return _Result.CUDA_SUCCESS, ctypes.addressof(self.host_words[-1])

    def cuMemHostGetDevicePointer(self, host: int, flags: int) -> tuple[Any, int]:
        return _Result.CUDA_SUCCESS, host  # unified addressing: the same address

    def cuStreamWaitValue32(self, stream: Any, address: int, value: int,
                            flags: int) -> tuple[Any]:
        self.waits.append((address, value))
        return (_Result.CUDA_SUCCESS,)

    def held(self) -> bool:
        """Whether the last stream wait is still waiting (its word below the value)."""
        if not self.waits:
            return False
        address, value = self.waits[-1]
        return ctypes.c_uint32.from_address(address).value < value

    def cuMemAlloc(self, size: int) -> tuple[Any, int]:
        handle = 4096 * (len(self.memory) + 1)
        self.memory[handle] = bytearray(size)
        return _Result.CUDA_SUCCESS, handle

    def cuMemcpyHtoDAsync(self, dst: int, src: int, size: int, stream: Any) -> tuple[Any]:
        self.memory[dst][:size] = ctypes.string_at(src, size)
        return (_Result.CUDA_SUCCESS,)

    def cuMemcpyDtoHAsync(self, dst: int, src: int, size: int, stream: Any) -> tuple[Any]:
        ctypes.memmove(dst, bytes(self.memory[src][:size]), size)
        return (_Result.CUDA_SUCCESS,)

    def cuModuleGetFunction(self, module: Any, name: bytes) -> tuple[Any, str]:
        return _Result.CUDA_SUCCESS, name.decode()

    def cuFuncGetAttribute(self, attribute: str, function: str) -> tuple[Any, int]:
        return _Result.CUDA_SUCCESS, {"regs": 32, "static": 0, "threads": 1024}[attribute]

    def cuLaunchKernel(self, function: str, gx: int, gy: int, gz: int, bx: int, by: int,
                       bz: int, shared: int, stream: Any, params: int, extra: int) -> tuple[Any]:
        plan = next(k for f in self.session.generated.functions for k in f.kernels
                    if k.name == function)
        pointers = (ctypes.c_uint64 * len(plan.args)).from_address(params)
        values: dict[str, bytes] = {}
        for a, pointer in zip(plan.args, pointers, strict=True):
            size = (8 if a.kind == "buffer" else 4 if a.kind == "local" else
                    self.session._layout(a.element).itemsize if a.is_struct else 4)
            values[a.name] = ctypes.string_at(pointer, size)
        self.launches.append({"grid": (gx, gy, gz), "block": (bx, by, bz), "shared": shared,
                              "args": values, "held": self.held()})
        self.kernel(self, values, (gx, gy, gz))
        return (_Result.CUDA_SUCCESS,)

    def buffer(self, value: bytes, dtype: np.dtype) -> np.ndarray:
        """The device array a pointer argument points to (a view: writes go to memory)."""
        handle = int(np.frombuffer(value, np.uint64)[0])
        return np.frombuffer(self.memory[handle], dtype)

    def cuEventCreate(self, flags: int) -> tuple[Any, object]:
        return _Result.CUDA_SUCCESS, object()

    def cuEventRecord(self, event: Any, stream: Any) -> tuple[Any]:
        return (_Result.CUDA_SUCCESS,)

    def cuEventElapsedTime(self, begin: Any, end: Any) -> tuple[Any, float]:
        # A destroyed event cannot be read again (the driver answers with an error).
        assert not any(e is begin or e is end for e in self.destroyed), \
            "an event was read after cuEventDestroy"
        return _Result.CUDA_SUCCESS, 0.5

    def cuEventDestroy(self, event: Any) -> tuple[Any]:
        self.destroyed.append(event)
        return (_Result.CUDA_SUCCESS,)

    def cuStreamSynchronize(self, stream: Any) -> tuple[Any]:
        return (_Result.CUDA_SUCCESS,)

    def cuFuncSetAttribute(self, *args: Any) -> tuple[Any]:
        return (_Result.CUDA_SUCCESS,)

    def cuMemFree(self, pointer: int) -> tuple[Any]:
        return (_Result.CUDA_SUCCESS,)

    def cuMemFreeHost(self, pointer: int) -> tuple[Any]:
        return (_Result.CUDA_SUCCESS,)


def _scaled_kernel(driver: _FakeDriver, values: dict[str, bytes], grid: tuple[int, ...]) -> None:
    """`scaled` in numpy, on the bytes the launch passed (the device layout of Complex)."""
    layout = driver.session._layout("Complex")
    n, m = (int(np.frombuffer(values[name], np.int32)[0]) for name in ("n", "m"))
    assert grid[0] == n // m
    scale = np.frombuffer(values["scale"], layout)[0]
    a = driver.buffer(values["a"], layout)
    out = driver.buffer(values["out"], layout)
    total = driver.buffer(values["total"], np.dtype(np.float32))
    for b in range(n // m):
        z = a[b * m:(b + 1) * m][::-1]
        out["real"][b * m:(b + 1) * m] = z["real"] * scale["real"] - z["imag"] * scale["imag"]
        out["imag"][b * m:(b + 1) * m] = z["real"] * scale["imag"] + z["imag"] * scale["real"]
        total[0] += np.float32(z["real"].sum(dtype=np.float32))


def _session(generated: GeneratedModule) -> tuple[CudaSession, _FakeDriver]:
    """A CudaSession on the fake driver (made without __init__, which asks a real driver
    for the device)."""
    session = object.__new__(CudaSession)
    session.generated = generated
    session.device = SimpleNamespace(name="fake GPU", platform=SimpleNamespace(name="fake"))
    session.options = ()
    session.stream = None
    session.programs = {"": "module"}
    session.kernels = {}
    session.allocations = []
    session.threads_per_block, session.registers_per_block = 1024, 65536
    session.shared_per_block = 232448
    driver = _FakeDriver(session, _scaled_kernel)
    session.driver = driver
    return session, driver


@pytest.mark.parametrize("n, m", [(4 * 37, 37), (3 * 64, 64)])
def test_the_cuda_runner_passes_structs_shared_structs_and_returns_written_scalars(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n: int, m: int) -> None:
    session, driver = _session(_generated(tmp_path))
    monkeypatch.setattr(cuda_runner, "driver_module", lambda: driver)
    session.gate = cuda_runner.LaunchGate(driver)
    rng = np.random.default_rng(3)
    a = np.zeros(n, USER_COMPLEX)
    a["real"], a["imag"] = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    scale = np.zeros((), USER_COMPLEX)
    scale["real"], scale["imag"] = 0.5, -2.0
    result = session.run("scaled", {"n": n, "m": m, "scale": scale, "total": np.float32(1.5),
                                    "out": np.zeros(n, USER_COMPLEX), "a": a})
    launch = driver.launches[0]
    # issued while the stream waited (the events time the kernel, not the host), and
    # released afterwards
    assert launch["held"] and not driver.held()
    layout = struct_dtype("Complex", {t.name: t for t in session.generated.types})
    # the struct argument: the device layout's bytes (real first), not the caller's
    assert launch["args"]["scale"] == np.array((0.5, -2.0), layout).tobytes()
    # the shared array of m structs, at offset 0 of the dynamic shared memory
    assert launch["shared"] == dynamic_shared_layout([m * layout.itemsize])[1]
    assert launch["shared"] >= m * 8
    assert np.frombuffer(launch["args"]["tile"], np.int32)[0] == 0
    out, total = result.outputs["out"], result.outputs["total"]
    assert out.dtype == USER_COMPLEX  # back in the caller's dtype
    z = a.reshape(-1, m)[:, ::-1].reshape(-1)
    np.testing.assert_allclose(out["real"], z["real"] * 0.5 + z["imag"] * 2.0, rtol=1e-6)
    np.testing.assert_allclose(out["imag"], z["imag"] * 0.5 - z["real"] * 2.0, rtol=1e-6)
    assert total.shape == ()  # a written scalar comes back as a scalar
    assert abs(float(total) - (1.5 + a["real"].astype(np.float64).sum())) < 1e-4
    assert result.kernel_time_s == pytest.approx(0.5e-3)


@pytest.mark.parametrize("environ, wanted", [
    ({}, True),
    ({"CUDA_INJECTION64_PATH": "/opt/nsight-compute/libInjection.so"}, False),
    ({"MCL_CUDA_LAUNCH_GATE": "0"}, False),
    ({"MCL_CUDA_LAUNCH_GATE": "1"}, True),
])
def test_no_launch_gate_under_a_cuda_tool(environ: dict[str, str], wanted: bool) -> None:
    # a tool that serialises launches would wait for a kernel whose stream waits for the
    # host: Nsight Compute hung on every kernel with the gate
    assert cuda_runner.launch_gate_wanted(environ) is wanted


def test_without_the_gate_a_launch_never_waits(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    session, driver = _session(_generated(tmp_path))
    monkeypatch.setattr(cuda_runner, "driver_module", lambda: driver)
    session.gate = None
    n, m = 4 * 37, 37
    a = np.zeros(n, USER_COMPLEX)
    a["real"] = np.arange(n)
    scale = np.zeros((), USER_COMPLEX)
    scale["real"] = 1.0
    result = session.run("scaled", {"n": n, "m": m, "scale": scale, "total": np.float32(0.0),
                                    "out": np.zeros(n, USER_COMPLEX), "a": a})
    assert driver.waits == [] and len(driver.launches) == 1
    np.testing.assert_allclose(result.outputs["out"]["real"],
                               a.reshape(-1, m)[:, ::-1].reshape(-1)["real"])
