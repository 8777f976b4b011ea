"""The float32 FMA peak, and the vendor library's SGEMM rate it must reach.

A peak kernel keeps every FMA pipe busy: each work-item runs independent chains (more
than the FMA latency x pipes of any CPU or GPU, so no chain waits on its own result) of
the widest vectors the device's compiler turns into one instruction, and there are
enough work-items for every core. Which vectors and which spelling reach the pipes
depends on the OpenCL compiler: PoCL's generic x86-64 build calls a software `fma()` but
contracts `a * b + c` into the hardware FMA under -cl-mad-enable, and it builds no
float16 kernel (below). So every candidate -- vector width x spelling x chain count --
is built in one program (one compile), each is sized to a fixed time and run once, and
the fastest is timed `repeat` times.

The vendor library's SGEMM (numpy's BLAS on a CPU, cuBLAS through PyTorch on an NVIDIA
GPU) runs interleaved with those repeats, so that both see the same load on a shared
machine: a peak below what a library reaches is no bound, and the description then uses
the library's rate (mcl.detect.measure).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from mcl.detect.timing import Rate, Spread, grow_until
from mcl.detect.torch_peers import cuda_torch, event_seconds

B, C = 0.999999, 1e-6  # a * B + C stays finite over any number of iterations


@dataclass(frozen=True)
class PeakVariant:
    width: int  # floats per vector
    spelling: str  # "fma" (the builtin) or "mad" (a * b + c under -cl-mad-enable)
    chains: int

    @property
    def name(self) -> str:
        return f"peak_{self.spelling}_w{self.width}_c{self.chains}"

    @property
    def vector(self) -> str:
        return "float" if self.width == 1 else f"float{self.width}"

    def source(self) -> str:
        vt, k = self.vector, range(self.chains)
        step = "fma(a{i}, b, c)" if self.spelling == "fma" else "a{i} * b + c"
        lanes = ("s" if self.width == 1 else
                 " + ".join(f"s.s{'0123456789abcdef'[j]}" for j in range(self.width)))
        return (f"__kernel void {self.name}(__global float *out, float fb, float fc, "
                "int iters) {\n"
                f"  {vt} b = ({vt})(fb), c = ({vt})(fc);\n"
                f"  {vt} x = ({vt})((float)get_global_id(0) * 1e-7f);\n"
                + "".join(f"  {vt} a{i} = x + ({vt})({i}.0f);\n" for i in k)
                + "  for (int n = 0; n < iters; ++n) {\n"
                + "".join(f"    a{i} = {step.format(i=i)};\n" for i in k)
                + "  }\n"
                f"  {vt} s = " + " + ".join(f"a{i}" for i in k) + ";\n"
                f"  out[get_global_id(0)] = {lanes};\n"
                "}\n")


def candidates(kind: str, native_width: int, max_width: int) -> list[PeakVariant]:
    """GPUs: scalar chains (a warp is the vector). CPUs: the native width and half of it,
    both spellings, 8 chains (enough for 16 registers) and 16 (for 32)."""
    if kind == "gpu":
        return [PeakVariant(1, "fma", chains) for chains in (8, 16)]
    widths = sorted({w for w in (native_width, native_width // 2)
                     if w in (1, 2, 4, 8, 16) and w <= max_width} or {1}, reverse=True)
    return [PeakVariant(w, spelling, chains) for w in widths for spelling in ("mad", "fma")
            for chains in (8, 16)]


@dataclass(frozen=True)
class PeakKernel:
    """The chosen candidate, sized: `run()` enqueues it, `flops` per run."""

    candidate: PeakVariant
    run: Callable[[], Any]
    flops: float
    how: str
    tried: str  # each candidate's rate in its one sizing run
    keep: tuple[Any, ...] = ()  # the program and buffer the kernel needs alive


def peak_kernel(cl: Any, ctx: Any, queue: Any, kind: str, units: int, native_width: int,
                max_width: int, seconds: float) -> PeakKernel:
    """Build the candidates, size each to about `seconds` a run, keep the fastest."""
    options = candidates(kind, native_width, max_width)
    program = cl.Program(ctx, "".join(c.source() for c in options)).build(
        options=["-cl-mad-enable"])
    items, local = (units * 2048, (256,)) if kind == "gpu" else (units * 4, (1,))
    out = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, items * 4)
    best: tuple[float, PeakVariant, Any, int] | None = None
    tried = []
    for option in options:
        kernel = getattr(program, option.name)

        def launch(iters: int, kernel: Any = kernel) -> Any:
            kernel.set_args(out, np.float32(B), np.float32(C), np.int32(iters))
            return cl.enqueue_nd_range_kernel(queue, kernel, (items,), local)

        def timed(iters: int, launch: Callable[[int], Any] = launch) -> float:
            event = launch(iters)
            event.wait()
            return float((event.profile.end - event.profile.start) * 1e-9)

        launch(1).wait()  # PoCL compiles the work-group function here
        iters = grow_until(timed, 16, seconds, 1 << 26)
        rate = items * iters * option.chains * option.width * 2 / timed(iters)
        tried.append(f"{option.vector} {option.spelling} x{option.chains} "
                     f"{rate / 1e9:,.1f}")
        if best is None or rate > best[0]:
            best = (rate, option, kernel, iters)
    assert best is not None
    _, chosen, kernel, iters = best
    kernel.set_args(out, np.float32(B), np.float32(C), np.int32(iters))
    spelled = "fma()" if chosen.spelling == "fma" else "a * b + c (-cl-mad-enable)"
    how = (f"OpenCL, {items} work-items x {chosen.chains} independent chains of {iters} "
           f"{chosen.vector} {spelled}")
    return PeakKernel(chosen,
                      lambda: cl.enqueue_nd_range_kernel(queue, kernel, (items,), local),
                      float(items * iters * chosen.chains * chosen.width * 2), how,
                      "; ".join(tried), (program, out))


@dataclass(frozen=True)
class LibraryGemm:
    """One SGEMM call of the vendor library: `run()` returns its seconds."""

    run: Callable[[], float]
    flops: float
    how: str


# How long a call of numpy's BLAS leaves the cores before the next timed run: longer
# than OpenBLAS's spin after a call (2^28 cycles, 0.1 s at 2.7 GHz).
BLAS_IDLE_S = 0.25


def numpy_gemm(seconds: float, max_n: int = 4096) -> LibraryGemm:
    """numpy's float32 matmul (its BLAS: OpenBLAS in the wheels), n x n sized to about
    `seconds` a call."""
    import time

    def once(n: int) -> float:
        a = np.full((n, n), 0.5, np.float32)
        a @ a  # a first call starts the BLAS threads
        start = time.perf_counter()
        a @ a
        return time.perf_counter() - start

    n = 1024  # smaller matrices leave a many-core BLAS idle
    while n < max_n and once(n) < seconds:
        n *= 2
    a = np.random.default_rng(0).random((n, n), dtype=np.float32)

    def run() -> float:
        start = time.perf_counter()
        a @ a
        seconds = time.perf_counter() - start
        # OpenBLAS's threads spin for a while after a call before they sleep (its
        # THREAD_TIMEOUT, about 2^28 cycles); the peak kernel's run that follows in
        # `interleaved` would share every core with them.
        time.sleep(BLAS_IDLE_S)
        return seconds

    return LibraryGemm(run, 2.0 * n ** 3, f"numpy float32 matmul n = {n} ({_blas()})")


def torch_gemm(ordinal: int) -> LibraryGemm | None:
    """cuBLAS SGEMM through PyTorch (TF32 off: the float32 pipes), n = 8192; None where
    PyTorch or its CUDA is missing."""
    torch = cuda_torch()
    if torch is None:
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    n = 8192
    a = torch.rand((n, n), device=torch.device("cuda", ordinal), dtype=torch.float32)

    def run() -> float:
        return event_seconds(torch, lambda: torch.matmul(a, a))

    run()
    return LibraryGemm(run, 2.0 * n ** 3, f"cuBLAS SGEMM through torch.matmul n = {n}, "
                       f"TF32 off (torch {torch.__version__})")


def _blas() -> str:
    try:
        config: Any = np.show_config(mode="dicts")
        blas = config["Build Dependencies"]["blas"]
        return f"{blas.get('name', 'BLAS')} {blas.get('version', '')}".strip()
    except Exception:  # noqa: BLE001 - an older numpy: no dict form
        return "its BLAS"


def interleaved(peak: PeakKernel, library: LibraryGemm | None, repeat: int
                ) -> tuple[Rate, Rate | None]:
    """Time the peak kernel and the library call alternately, `repeat` times each."""
    peak.run().wait()
    kernel_s: list[float] = []
    library_s: list[float] = []
    for _ in range(repeat):
        event = peak.run()
        event.wait()
        kernel_s.append(max((event.profile.end - event.profile.start) * 1e-9, 1e-9))
        if library is not None:
            library_s.append(max(library.run(), 1e-9))
    fma = Rate.of_work(peak.flops, Spread(tuple(kernel_s)), peak.how)
    gemm = (None if library is None else
            Rate.of_work(library.flops, Spread(tuple(library_s)), library.how))
    return fma, gemm
