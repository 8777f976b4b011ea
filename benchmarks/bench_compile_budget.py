"""What the compiler calls of the feedback cost, against their budget (docs/feedback.md,
"Compiler budget"): the CPU seconds NVRTC takes to compile each shipped hopper kernel's
generated CUDA with `-lineinfo` (as the register count and the listing per line do), and
`mcl check --level hopper` of a generated loop nest (two nests of 250 loops of one
iteration, the fuzzer's hang class) with the default budget and with a budget the compile
cannot meet: the CPU seconds of the command and of the compiler's children, and whether
the output says the compiler's figures were not analysed.

    python benchmarks/bench_compile_budget.py [--depth 250]
"""

from __future__ import annotations

import argparse
import glob
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# The command and its children's CPU seconds, printed by the child after the command.
_MEASURED = ("import resource, sys; from mcl.cli import main; status = main(sys.argv[1:]); "
             "u = resource.getrusage(resource.RUSAGE_SELF); "
             "c = resource.getrusage(resource.RUSAGE_CHILDREN); "
             "print('CPU', u.ru_utime + u.ru_stime, c.ru_utime + c.ru_stime); sys.exit(status)")


def compile_seconds() -> list[tuple[str, float]]:
    """(kernel file, CPU seconds of its NVRTC compile), slowest first."""
    from mcl import pipeline
    from mcl.backends.cuda.nvrtc import compile_cuda, version
    from mcl.hdl.library import default_library

    version()  # NVRTC loaded before the first compile is timed
    library = default_library()
    rows = []
    for path in sorted(glob.glob(str(REPO / "kernels" / "*" / "hopper*.mcpl"))):
        checked = pipeline.check_source(path, [], library).checked()
        if checked is None or checked.errors:
            continue
        generated = pipeline.generate(checked, "hopper", library, language="cuda")
        started = time.thread_time()
        compile_cuda(generated.source, "k.cu", "sm_90", ("-lineinfo",))
        rows.append((str(Path(path).relative_to(REPO)), time.thread_time() - started))
    return sorted(rows, key=lambda row: -row[1])


def nest(depth: int, name: str) -> str:
    body = "s += b[i];"
    for level in range(depth):
        body = f"for (int {name}{level} = 0; {name}{level} < 1; {name}{level}++) {{ {body} }}"
    return body


def deep_check(depth: int, budget: str | None) -> str:
    """One line: `mcl check --level hopper` of the deep nest under `budget` (None: the
    default), with an empty disk cache."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "nest.mcpl"
        path.write_text("perfect void k(int n, int m, main float[n] a, main float[n] b) {\n"
                        "  foreach (int i in n threads) {\n    float s = 0.0;\n    "
                        f"{nest(depth, 'f')}\n    {nest(depth, 'g')}\n    a[i] = s;\n  }}\n}}\n",
                        encoding="utf-8")
        env = {**os.environ, "MCL_CACHE_DIR": str(Path(tmp) / "cache")}
        env.pop("MCL_COMPILE_BUDGET", None)
        if budget is not None:
            env["MCL_COMPILE_BUDGET"] = budget
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-c", _MEASURED, "check", "--level", "hopper",
                               "-v", "-D", "n=4096", "-D", "m=3", str(path)],
                              capture_output=True, text=True, env=env, check=False)
        wall = time.monotonic() - started
    own, children = (float(x) for x in done.stdout.rsplit("CPU", 1)[1].split())
    out = " ".join(done.stdout.split())
    said = ("compiler's figures not analysed" if "not analysed: NVRTC ran past" in out
            else "the compiler's count" if "the compiler's count" in out else "neither")
    return (f"budget {budget or 'default'}: exit status {done.returncode}, {own:.2f} s CPU "
            f"in the command + {children:.2f} s in its children = {own + children:.2f} s "
            f"CPU, {wall:.2f} s wall; says: {said}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--depth", type=int, default=250)
    args = parser.parse_args(argv)
    print(f"load: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}; "
          f"{os.cpu_count()} CPUs")
    print("NVRTC compile (-lineinfo, sm_90) of each shipped hopper kernel, CPU seconds:")
    for name, seconds in compile_seconds():
        print(f"  {name}: {seconds:.2f} s")
    print(f"mcl check --level hopper of two nests of {args.depth} loops:")
    for budget in (None, "0.05"):
        print(f"  {deep_check(args.depth, budget)}")
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(f"this script: {usage.ru_utime + usage.ru_stime:.1f} s CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
