"""Why a version's CUDA build is slower than its OpenCL build: the same generated kernel
through OpenCL (NVIDIA's driver), through CUDA with NVRTC's defaults (IEEE-rounded
division and square root), and through CUDA with the accuracy OpenCL C allows by default
(division within 2.5 ulp, sqrt within 3 ulp: `-prec-div=false -prec-sqrt=false`), in the
same rounds, and with denormals flushed to zero (`-ftz=true`) and with `-use_fast_math`,
each output verified against numpy:

    PYTHONPATH=. python3 benchmarks/gpu/cuda_math_options.py [--app blackscholes]
        [--versions gpu_v1,hopper_v1] [-D n=16000000] [--rounds 10]

Prints the best time of each build and its ratio to the OpenCL build.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

BUILDS = {
    "CUDA, NVRTC defaults": (),
    "CUDA, -prec-div=false -prec-sqrt=false": ("-prec-div=false", "-prec-sqrt=false"),
    "CUDA, -ftz=true": ("-ftz=true",),
    "CUDA, -use_fast_math": ("-use_fast_math",),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--app", default="blackscholes")
    parser.add_argument("--versions", default="perfect,gpu_v1,hopper_v1")
    parser.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=N")
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
    folder = REPO / "kernels" / args.app
    reference = load_reference(folder / "reference.py")
    defines = {k: int(v) for k, v in (d.split("=", 1) for d in args.defines)}
    sizes, inputs, expected = prepared_inputs(reference, defines or {"n": 16_000_000}, 0, None)
    opencl_device, cuda_device = select_device(args.device), select_cuda_device(None)
    print(f"{args.app} at {sizes}; best of {args.rounds} rounds")
    for version in args.versions.split(","):
        path = folder / f"{version}.mcpl"
        program = load_checked(path, [], library)
        sessions = {"OpenCL": OpenCLSession(pipeline.generate(program, "hopper", library),
                                      opencl_device)}
        cuda = pipeline.generate(program, "hopper", library, language="cuda")
        sessions |= {name: CudaSession(cuda, cuda_device, options)
                     for name, options in BUILDS.items()}
        best: dict[str, float] = {}
        for name, session in sessions.items():
            run = session.run(reference.function, dict(inputs), args.rounds)
            ok = all(c.ok for c in verify(reference, expected, run.outputs, sizes))
            best[name] = min(run.kernel_times_s)
            ratio = best["OpenCL"] / best[name]
            print(f"  {version:<12}{name:<42}{best[name] * 1e6:10.1f} us  OpenCL/this "
                  f"{ratio:5.2f}  {'ok' if ok else 'WRONG'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
