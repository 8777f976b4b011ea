"""Where a version's CUDA build loses to its OpenCL build: the code or the measurement.

For each version, in one process and the same rounds:
- its OpenCL build through NVIDIA's OpenCL driver (profiling times);
- its CUDA build through the driver API (CUDA events around each launch, as
  `mcl run --backend cuda`);
- the CUDA build with BATCH launches between one pair of events (the host's time to
  issue a launch then overlaps the previous kernel).
If the batched CUDA build is as fast as the OpenCL build, the measurement (the host's
launch time between the events) is the difference; if not, the code or the launch is.
Every output is verified. Then per build the PTX instruction statistics (double
precision, division, square root, the transcendental approximations, FMAs, 64-bit integer
arithmetic, non-coherent loads) and the registers the driver gives each kernel.

    PYTHONPATH=. python3 benchmarks/gpu/cuda_opencl_ptx.py \
        --case blackscholes:hopper_v1:n=16000000 --case gesummv:hopper_v3:n=4096 [--rounds 10]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

# Instruction classes worth comparing, by the PTX opcode's prefix or a part of it.
CLASSES = {
    "f64": lambda op: ".f64" in op,
    "div": lambda op: op.startswith("div.") and ".f32" in op,
    "rcp": lambda op: op.startswith("rcp."),
    "sqrt": lambda op: op.startswith(("sqrt.", "rsqrt.")),
    "lg2/ex2": lambda op: op.startswith(("lg2.", "ex2.")),
    "fma.f32": lambda op: op.startswith("fma.") and op.endswith("f32"),
    "64-bit int": lambda op: re.search(r"\.[su]64$", op) is not None
    and not op.startswith(("ld.", "st.", "cvta.", "mov.")),
    "ld.global.nc": lambda op: op.startswith("ld.global.nc"),
    "ld.global": lambda op: op.startswith("ld.global") and ".nc" not in op,
    "ftz": lambda op: ".ftz" in op,
}


def ptx_statistics(ptx: str, kernel: str) -> dict[str, int]:
    """Instruction counts of the body of `.entry kernel` in `ptx`."""
    start = ptx.find(f".entry {kernel}(")
    body = ptx[start:] if start >= 0 else ptx
    end = body.find("\n}\n")
    body = body[:end] if end >= 0 else body
    ops = [m.group(1) for m in re.finditer(r"^\s+(?:@!?%p\d+\s+)?([a-z][\w.]*)", body, re.M)
           if not m.group(1).startswith(".")]
    counts = Counter(ops)
    out = {"instructions": len(ops)}
    for name, test in CLASSES.items():
        out[name] = sum(n for op, n in counts.items() if test(op))
    return out


def nvrtc_ptx(source: str, arch: str, options: tuple[str, ...] = ()) -> str:
    """NVRTC's PTX of `source` (compute_XY of the device's sm_XY)."""
    from mcl.backends.cuda.nvrtc import nvrtc_module

    nvrtc = nvrtc_module()
    _, program = nvrtc.nvrtcCreateProgram(source.encode(), b"k.cu", 0, [], [])
    flags = [f"--gpu-architecture={arch.replace('sm_', 'compute_')}", "--std=c++17",
             *options]
    nvrtc.nvrtcCompileProgram(program, len(flags), [f.encode() for f in flags])
    _, size = nvrtc.nvrtcGetPTXSize(program)
    buffer = b" " * size
    nvrtc.nvrtcGetPTX(program, buffer)
    nvrtc.nvrtcDestroyProgram(program)
    return buffer.rstrip(b"\0").decode()


def opencl_ptx(session: Any, key: str = "") -> str:
    """The PTX NVIDIA's OpenCL driver made of the program built with options `key`."""
    import pyopencl as cl

    (binary,) = session.programs[key].get_info(cl.program_info.BINARIES)
    return bytes(binary).rstrip(b"\0").decode(errors="replace")


BATCH = 20  # launches between one pair of CUDA events in the batched build


def batched_session(generated: Any, device: Any) -> Any:
    """A CUDA session that times BATCH back-to-back launches of each kernel between one
    pair of events: the host's time to issue a launch (Python, the bindings) then
    overlaps the previous kernel instead of standing between the begin event and the
    kernel. Its kernel times are divided by BATCH by the caller; the kernels measured
    write their outputs from their inputs alone, so repeated launches verify too."""
    from mcl.backends.cuda.runner import CudaSession

    class Batched(CudaSession):
        batching = False

        def _launch(self, *args: Any) -> Any:
            self.batching = True
            try:
                return super()._launch(*args)
            finally:
                self.batching = False

        def _timed(self, start: Any) -> tuple[Any, Any]:
            if not self.batching:
                return super()._timed(start)
            return super()._timed(lambda: [start() for _ in range(BATCH)] and None)

    return Batched(generated, device)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", action="append", required=True,
                        metavar="APP:VERSION[:NAME=N,...]")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--device", default="nvidia", help="OpenCL device spec")
    args = parser.parse_args(argv)

    from benchmarks.harness import prepared_inputs
    from mcl import pipeline
    from mcl.backends.cuda.runner import CudaSession, select_cuda_device
    from mcl.backends.opencl.runner import OpenCLSession, select_device
    from mcl.commands.codegen import load_checked
    from mcl.hdl.library import default_library
    from mcl.verify import load_reference, verify

    library = default_library()
    opencl_device, cuda_device = select_device(args.device), select_cuda_device(None)
    print(f"OpenCL: {opencl_device.name}; CUDA: {cuda_device.name} ({cuda_device.arch}); "
          f"best of {args.rounds} rounds")
    for case in args.case:
        app, version, *rest = case.split(":")
        defines = {k: int(v) for k, v in (d.split("=", 1) for d in ",".join(rest).split(",")
                                          if d)}
        folder = REPO / "kernels" / app
        reference = load_reference(folder / "reference.py")
        sizes, inputs, expected = prepared_inputs(reference, defines, 0, None)
        program = load_checked(folder / f"{version}.mcpl", [], library)
        cl_module = pipeline.generate(program, "hopper", library)
        cuda_module = pipeline.generate(program, "hopper", library, language="cuda")
        opencl = OpenCLSession(cl_module, opencl_device)
        builds: dict[str, Any] = {"OpenCL": opencl}
        builds["CUDA (NVRTC)"] = CudaSession(cuda_module, cuda_device)
        builds[f"CUDA, {BATCH} launches/event"] = batched_session(cuda_module, cuda_device)
        print(f"\n{app} {version} at {sizes}")
        best: dict[str, float] = {}
        checked: dict[str, bool] = {}
        # Both orders, so that neither build always runs on a GPU the other warmed up.
        for name in [*builds, *reversed(builds)]:
            run = builds[name].run(reference.function, dict(inputs), args.rounds)
            ok = all(c.ok for c in verify(reference, expected, run.outputs, sizes))
            scale = BATCH if "launches/event" in name else 1
            best[name] = min(best.get(name, 1e9), min(run.kernel_times_s) / scale)
            checked[name] = checked.get(name, True) and ok
        for name in builds:
            print(f"  {name:<26}{best[name] * 1e6:10.1f} us  OpenCL/this "
                  f"{best['OpenCL'] / best[name]:5.2f}  {'ok' if checked[name] else 'WRONG'}",
                  flush=True)
        cuda_session = builds["CUDA (NVRTC)"]
        for f in cuda_module.functions:
            for k in f.kernels:
                options = _options(k, inputs, cuda_module, reference.function)
                key = " ".join(options)
                ptxs = {"OpenCL": opencl_ptx(opencl, key if key in opencl.programs else ""),
                        "CUDA (NVRTC)": nvrtc_ptx(cuda_module.source, cuda_device.arch,
                                                  options)}
                regs = {"CUDA (NVRTC)": _registers(cuda_session, k.name),
                        "OpenCL": _opencl_registers(opencl, k.name)}
                for name, ptx in ptxs.items():
                    stats = ptx_statistics(ptx, k.name)
                    print(f"  PTX of {k.name}, {name:<13} registers {regs.get(name, '?')!s:>4}  "
                          + "  ".join(f"{key} {value}" for key, value in stats.items()),
                          flush=True)
    return 0


def _options(k: Any, inputs: dict[str, Any], generated: Any, function: str) -> tuple[str, ...]:
    """The -D options kernel `k` was built with for this run's sizes."""
    from mcl.backends.opencl.runner import build_options, launch_values

    for plan, values in launch_values(generated, function, dict(inputs)):
        if plan.name == k.name:
            return build_options(plan, values)
    return ()


def _opencl_registers(session: Any, name: str) -> int | str:
    """Registers per thread that NVIDIA's OpenCL driver gave the kernel: its PTX JIT-compiled
    by the same driver through the CUDA driver API (cuModuleLoadData), as a figure only."""
    from mcl.backends.cuda.runner import driver_module

    driver = driver_module()
    result, module = driver.cuModuleLoadData(opencl_ptx(session).encode() + b"\0")
    if result != driver.CUresult.CUDA_SUCCESS:
        return "?"
    result, function = driver.cuModuleGetFunction(module, name.encode())
    if result != driver.CUresult.CUDA_SUCCESS:
        return "?"
    result, value = driver.cuFuncGetAttribute(
        driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NUM_REGS, function)
    return int(value) if result == driver.CUresult.CUDA_SUCCESS else "?"


def _registers(session: Any, name: str) -> int | str:
    for (_, kernel_name), kernel in session.kernels.items():
        if kernel_name == name:
            return int(kernel.registers)
    return "?"


if __name__ == "__main__":
    sys.exit(main())
