"""How long the performance feedback takes (issue 5: "`mcl check` on matmul at gpu with
values completes in well under a second of analysis time").

    python benchmarks/bench_feedback.py [KERNEL] [--level LEVEL] [--repeat N] [-D n=2048 ...]

Reports, for KERNEL (default kernels/matmul/perfect.mcpl) at LEVEL (default gpu):
  import:         importing the analyses (SymPy included), once per process;
  analysis:       all analyses of every kernel of the file, from the translated program to
                  the messages (facts rebuilt every run: nothing cached between runs);
  check stage:    the feedback stage as `mcl check` runs it (analysis + values);
  end to end:     `python -m mcl check KERNEL --level LEVEL -D ...` in a fresh process.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_VALUES = ["n=2048", "m=2048", "p=2048"]


def _ms(runs: list[float]) -> str:
    return (f"median {statistics.median(runs) * 1e3:7.1f} ms, min {min(runs) * 1e3:7.1f} ms "
            f"({len(runs)} runs)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("kernel", nargs="?", default=str(REPO / "kernels/matmul/perfect.mcpl"))
    parser.add_argument("--level", default="gpu")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("-D", dest="defines", action="append", default=None)
    args = parser.parse_args(argv)
    defines = args.defines or DEFAULT_VALUES

    from mcl.hdl.library import default_library
    from mcl.mcpl.loader import load_program
    from mcl.translate import translate_program

    library = default_library()
    program = translate_program(load_program(args.kernel, (), library), args.level,
                                library).program

    t = time.perf_counter()
    from mcl.feedback import registry
    from mcl.feedback.values import collect_values

    registry.analyses()  # imports every analysis module (and SymPy)
    import_time = time.perf_counter() - t

    values = collect_values(defines)
    runs = []
    messages: list = []
    for _ in range(args.repeat):
        registry._FACTS.clear()  # no facts carried over between runs
        t = time.perf_counter()
        messages, _levels = registry.analyse_program(program, library, values)
        runs.append(time.perf_counter() - t)

    stage_runs = []
    from mcl.commands.check import check_file
    from mcl.feedback.stage import FeedbackStage

    stage = FeedbackStage()
    ns = argparse.Namespace(defines=defines, values_files=[], feedback=True, no_feedback=False,
                            level=args.level)
    for _ in range(max(3, args.repeat // 4)):
        registry._FACTS.clear()
        checked = check_file(Path(args.kernel), [], library, None, None)
        checked.program = program
        t = time.perf_counter()
        stage.run(checked, library, ns)
        stage_runs.append(time.perf_counter() - t)

    e2e = []
    for _ in range(3):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "mcl", "check", args.kernel, "--level", args.level,
                        *[f"-D{d}" for d in defines]], capture_output=True, check=True,
                       cwd=REPO)
        e2e.append(time.perf_counter() - t)

    print(f"feedback on {args.kernel} at level {args.level} with {' '.join(defines)}")
    print(f"  messages:      {len(messages)}")
    print(f"  import:        {import_time * 1e3:7.1f} ms (once per process)")
    print(f"  analysis:      first run {runs[0] * 1e3:7.1f} ms (cold SymPy caches); "
          f"{_ms(runs)}")
    print(f"  check stage:   {_ms(stage_runs)}")
    print(f"  end to end:    {_ms(e2e)} (process start, parse, translate, check, feedback)")


if __name__ == "__main__":
    main()
