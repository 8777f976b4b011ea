"""What NVIDIA's OpenCL compiler made of the generated kernels: registers, spills and
shared memory (the `-cl-nv-verbose` build log) and the instruction mix of the PTX.

    PYTHONPATH=. python benchmarks/opencl_ptx.py --device nvidia \\
        --versions hopper_v1,hopper_v2,hopper_v3 [--tuned] [--no-unroll] [--out DIR]

NVIDIA's OpenCL returns PTX as the program binary. Counting its instructions answers the
questions docs/performance-log.md asks of the best kernel: did the register tiles stay in
registers (no `ld.local`/`st.local`, the per-thread memory a private array lands in when
its indices are not constants), do the shared-memory reads come as 128-bit vectors
(`ld.shared.v4.f32`) or one float at a time, and how many shared loads and other
instructions accompany each fused multiply-add (`fma.rn.f32`). The counts are static
(per kernel body, loops counted once), so they compare versions, not runtimes.
`--no-unroll` builds the same kernels without mcl's `#pragma unroll` for comparison.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PATTERNS = {
    "fma.f32": r"\bfma\.rn\.f32\b",
    "ld.shared.v4": r"\bld\.shared\.v4\.f32\b",
    "ld.shared.v2": r"\bld\.shared\.v2\.f32\b",
    "ld.shared.f32": r"\bld\.shared\.f32\b",
    "st.shared": r"\bst\.shared\.",
    "ld.global": r"\bld\.global\.",
    "st.global": r"\bst\.global\.",
    "ld.local": r"\bld\.local\.",
    "st.local": r"\bst\.local\.",
    "bar.sync": r"\bbar\.sync\b",
    "branches": r"\bbra\b",
}


def instruction_mix(ptx: str) -> Counter:
    counts: Counter = Counter()
    for name, pattern in PATTERNS.items():
        counts[name] = len(re.findall(pattern, ptx))
    counts["instructions"] = sum(
        1 for line in ptx.splitlines()
        if line.strip() and not line.strip().startswith(("//", ".", "{", "}", "$", "@%p"))
        and not line.strip().endswith(":")
    )
    return counts


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(REPO))
    import pyopencl as cl

    from mcl import pipeline
    from mcl.backends import load_mapping
    from mcl.backends.opencl.runner import select_device
    from mcl.hdl.library import default_library
    from mcl.mcpl.loader import load_program
    from mcl.report.measure import tuned_overrides
    from mcl.report.series import load_series

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="nvidia")
    parser.add_argument("--kernel", default="matmul", help="the series: kernels/KERNEL")
    parser.add_argument("--versions", default="hopper_v1,hopper_v2,hopper_v3")
    parser.add_argument("--size", type=int, default=4096, help="sizes for --tuned lookup")
    parser.add_argument("--tuned", action="store_true", help="use each .tuned.toml")
    parser.add_argument("--no-unroll", action="store_true", help="codegen.unroll = 0")
    parser.add_argument("--out", metavar="DIR", help="write each kernel's .cl, .ptx and log")
    args = parser.parse_args(argv)

    library = default_library()
    device = select_device(args.device)
    context = cl.Context([device])
    series = load_series(REPO / "kernels" / args.kernel, library)
    sizes = {"n": args.size, "m": args.size, "p": args.size}
    rows: list[tuple[str, Counter, str]] = []
    for name in [v.strip() for v in args.versions.split(",") if v.strip()]:
        spec = series.version(name)
        if spec is None or spec.translated:
            print(f"{name}: not a hand-written version")
            continue
        leaf = spec.leaf_for("gpu") or "hopper"
        program = pipeline.checked(load_program(spec.path, (), library), library)
        mapping = load_mapping(library.get(leaf))
        if args.no_unroll:
            mapping = dataclasses.replace(mapping, unroll=0)
        overrides = tuned_overrides(program, leaf, device, sizes) if args.tuned else None
        generated = pipeline.generate(program, leaf, library, mapping, overrides=overrides)
        nvidia = "nvidia" in device.platform.name.lower()
        options = ["-cl-nv-verbose"] if nvidia else []
        built = cl.Program(context, generated.source).build(options=options)
        log = built.get_build_info(device, cl.program_build_info.LOG)
        ptx = built.binaries[0].decode("utf-8", "replace")
        label = name + (" (tuned)" if overrides else "")
        rows.append((label, instruction_mix(ptx), " ".join(log.split())))
        if args.out:
            out = Path(args.out)
            out.mkdir(parents=True, exist_ok=True)
            stem = label.replace(" ", "_").replace("(", "").replace(")", "")
            (out / f"{stem}.cl").write_text(generated.source, encoding="utf-8")
            (out / f"{stem}.ptx").write_text(ptx, encoding="utf-8")
    columns = list(PATTERNS) + ["instructions"]
    print(f"{'kernel':<22}" + "".join(f"{c:>14}" for c in columns))
    for label, counts, _ in rows:
        print(f"{label:<22}" + "".join(f"{counts[c]:>14}" for c in columns))
    for label, counts, log in rows:
        fma = counts["fma.f32"] or 1
        shared = counts["ld.shared.v4"] + counts["ld.shared.v2"] + counts["ld.shared.f32"]
        print(f"{label}: {shared / fma:.2f} shared loads per FMA; "
              f"{counts['ld.local'] + counts['st.local']} local-memory (spill) accesses; "
              f"build log: {log[:400]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
