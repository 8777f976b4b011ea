"""How many measurements each search strategy of `mcl tune` needs to come within 3% of
the fastest configuration: the exhaustive search, the one guided by mcl's time model
(`--strategy model`), and Kernel Tuner's `bayes_opt` and `random_sample`, in one run.

    PYTHONPATH=. python benchmarks/tune_model.py --small --out /tmp/tm     # PoCL, small sizes
    PYTHONPATH=. python benchmarks/tune_model.py --device nvidia --out DIR  # a GPU, real sizes
    PYTHONPATH=. python benchmarks/tune_model.py --backend cuda --device 0 --out DIR

For each kernel (default: one per application with a tunable space at the hopper leaf
that `mcl tune` can run: matmul v2, gesummv v5, spmv v4 and Black-Scholes v2;
convolution has none; `--kernels` adds matmul v4) the exhaustive search measures every
configuration the rules allow, once, into a Kernel Tuner cache file of this run. The
other strategies then run against that cache: each visits configurations in its own
order and is answered with the exhaustive search's measurement, so all four see the very
same times (no timing noise between strategies) and only the order of the visits
differs. Per strategy it writes the evaluations (configurations visited, failed builds
included) until the first one within 3% of the exhaustive best; for the model, also how
many it measured before its stop rule ended the search, whether its choice is within 3%,
and Spearman's rank correlation of the model's estimates with the measured times (over
every verified configuration and over those it measured). `bayes_opt` and
`random_sample` are random: they run `--repeats` times with seeds 0, 1, ...; the median
is printed and every run is in the JSON. The issue's goal: the model within 3% after at
most max(10% of the configurations, 25) evaluations.

Output under `--out`: `tune_model.json` (everything) and `tune_model.txt` (the table).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script: import mcl from the checkout
    sys.path.insert(0, str(REPO))

WITHIN = 1.03  # "within 3% of the exhaustive best"
LEAF = "hopper"
# kernel (under kernels/) -> (sizes on a GPU, sizes for --small): per application the
# version with a `// tune:` space at the GPU leaf that `mcl tune` can run (one kernel
# launched once: spmv's later versions have two), and matmul's v4.
KERNELS: dict[str, tuple[dict[str, int], dict[str, int]]] = {
    "matmul/hopper_v2": ({"n": 4096, "m": 4096, "p": 4096}, {"n": 128, "m": 128, "p": 128}),
    "matmul/hopper_v4": ({"n": 4096, "m": 4096, "p": 4096}, {"n": 128, "m": 128, "p": 128}),
    "gesummv/hopper_v5": ({"n": 4096}, {"n": 256}),
    "spmv/hopper_v4": ({"nrows": 66_463, "ncols": 66_463, "nnz": 10_352_819},
                       {"nrows": 2048, "ncols": 2048, "nnz": 20_000}),
    "blackscholes/hopper_v2": ({"n": 1 << 24}, {"n": 1 << 14}),
}
# Run unless --kernels names others: matmul v4's 189 configurations (of 324) would take
# the exhaustive search alone some minutes on a GPU, beyond one run with the others.
DEFAULT = ("matmul/hopper_v2", "gesummv/hopper_v5", "spmv/hopper_v4", "blackscholes/hopper_v2")
RANDOM_STRATEGIES = ("bayes_opt", "random_sample")


@dataclass
class KernelResult:
    kernel: str
    sizes: dict[str, int]
    configurations: int = 0  # the space, before the rules
    allowed: int = 0  # the configurations the rules and the description allow
    verified: int = 0
    best: dict[str, Any] | None = None
    best_ms: float | None = None
    times_ms: dict[str, float] = field(default_factory=dict)  # config text -> measured
    estimates_s: dict[str, float | None] = field(default_factory=dict)
    exhaustive_s: float = 0.0  # wall time of the exhaustive search
    exhaustive_to_within: int | None = None  # in the space's order
    model: dict[str, Any] = field(default_factory=dict)
    others: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    problem: str | None = None

    @property
    def goal(self) -> int:
        return max(math.ceil(0.1 * self.allowed), 25)


def config_text(names: list[str], key: tuple[Any, ...]) -> str:
    return ",".join(f"{n}={v}" for n, v in zip(names, key, strict=True))


def to_within(trace: list[tuple[Any, ...]], times: dict[tuple[Any, ...], float],
              best: float) -> int | None:
    """Evaluations until the first configuration within 3% of `best` (None: never)."""
    for n, key in enumerate(trace, 1):
        if times.get(key, math.inf) <= best * WITHIN:
            return n
    return None


def progress(name: str, started: float, what: str) -> None:
    """One line per stage on stderr: a run cut off by a time limit still shows how far
    each kernel got and what took the time."""
    print(f"  {name}: {what} at {time.perf_counter() - started:.1f} s", file=sys.stderr,
          flush=True)


def run_kernel(name: str, sizes: dict[str, int], device_spec: str | None, backend: str,
               iterations: int, repeats: int, patience: int | None, work: Path
               ) -> KernelResult:
    from mcl.backends import leaf_device
    from mcl.commands.options import library_from_args
    from mcl.commands.tune import prepare
    from mcl.tune.model import model_correlation
    from mcl.tune.search import MODEL, build_space, run_search

    # A copy under `work`: Kernel Tuner's cache of this run lies beside it, not in kernels/.
    source = REPO / "kernels" / f"{name}.mcpl"
    path = work / name.replace("/", "-") / source.name
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(source, path)
    shutil.copy(source.with_name("reference.py"), path.with_name("reference.py"))
    tag = f"tune-model-bench-{time.time_ns()}"  # a cache of this run only
    out = KernelResult(name, sizes)
    started = time.perf_counter()
    args = argparse.Namespace(defines=[f"{k}={v}" for k, v in sizes.items()], include_dirs=[],
                              param=[])
    library = library_from_args(args)
    p = prepare(args, path, library)
    sizes, inputs, expected = p.data(0)
    out.sizes = dict(sizes)
    progress(name, started, "inputs and reference ready")
    built = build_space(p.program, p.reference.function, LEAF, library, p.space, inputs,
                        backend)
    out.configurations = len(built.candidates) + len(built.ruled_out)
    out.allowed = len(built.candidates)
    device = leaf_device(backend, library.get(LEAF), device_spec)
    progress(name, started, f"space built: {out.allowed} of {out.configurations} allowed")

    def search(strategy: str, **options: Any) -> Any:
        return run_search(p.program, path, p.reference.function, LEAF, library, device, p.space,
                          p.reference, sizes, inputs, expected, strategy, options or None,
                          iterations, False, True, backend, built, None, tag, patience)

    start = time.perf_counter()
    exhaustive = search("brute_force")
    out.exhaustive_s = time.perf_counter() - start
    progress(name, started, f"exhaustive search done in {out.exhaustive_s:.1f} s")
    times = {built.key(r): float(r["time"]) for r in exhaustive.evaluated if r.get("verified")}
    out.verified = len(times)
    out.times_ms = {config_text(built.names, k): t for k, t in times.items()}
    if exhaustive.best is None or exhaustive.best_time_ms is None:
        out.problem = "no configuration verified"
        return out
    out.best, out.best_ms = exhaustive.best, exhaustive.best_time_ms
    best = exhaustive.best_time_ms
    out.exhaustive_to_within = to_within(exhaustive.trace, times, best)

    guided = search(MODEL)
    ranking = guided.ranking
    assert ranking is not None
    progress(name, started, f"model search done (ranking {ranking.elapsed_s:.1f} s, "
             f"{len(guided.trace)} measured)")
    out.estimates_s = {config_text(built.names, k): s for k, s in ranking.seconds.items()}
    chosen = guided.best_time_ms
    rho_all, n_all = model_correlation(ranking, times)
    rho_measured, n_measured = model_correlation(
        ranking, {k: t for k, t in times.items() if k in set(guided.trace)})
    out.model = {
        "evaluations_to_within_3pct": to_within(guided.trace, times, best),
        "measured": len(guided.trace),
        "chosen_ms": chosen,
        "chosen_within_3pct": chosen is not None and chosen <= best * WITHIN,
        "ranking_s": ranking.elapsed_s,
        "estimated": sum(s is not None for s in ranking.seconds.values()),
        "rank_correlation_all": rho_all, "pairs_all": n_all,
        "rank_correlation_measured": rho_measured, "pairs_measured": n_measured,
        "order": [config_text(built.names, k) for k in guided.trace],
    }
    for strategy in RANDOM_STRATEGIES:
        runs = []
        for seed in range(repeats):
            random.seed(seed)
            np.random.seed(seed)
            try:
                found = search(strategy, max_fevals=len(built.candidates),
                               **strategy_options(strategy, len(built.candidates)))
            except Exception as exc:  # a strategy that cannot search this space says why
                runs.append({"seed": seed, "error": f"{type(exc).__name__}: {exc}"})
                continue
            runs.append({"seed": seed, "evaluations": len(found.trace),
                         "evaluations_to_within_3pct": to_within(found.trace, times, best)})
        out.others[strategy] = runs
        progress(name, started, f"{strategy} done")
    return out


def strategy_options(strategy: str, allowed: int) -> dict[str, Any]:
    """bayes_opt starts from `popsize` random samples (Kernel Tuner's default 20), which a
    space of fewer configurations cannot give: half the space there."""
    return {"popsize": min(20, max(2, allowed // 2))} if strategy == "bayes_opt" else {}


def median_text(runs: list[dict[str, Any]]) -> str:
    reached = [r["evaluations_to_within_3pct"] for r in runs
               if r.get("evaluations_to_within_3pct") is not None]
    failed = [r for r in runs if "error" in r]
    if failed and not reached:
        return "error"
    if not reached:
        return "never"
    text = f"{statistics.median(reached):g}"
    missed = len(runs) - len(reached)
    return text + (f" ({missed} of {len(runs)} never)" if missed else "")


def table(results: list[KernelResult], header: str) -> str:
    lines = [header, "",
             "kernel | allowed | best (ms) | exhaustive | model | model measured | "
             "model's choice | bayes_opt | random_sample | rho all | rho measured | "
             "goal max(10%, 25)",
             "---|---|---|---|---|---|---|---|---|---|---|---"]
    for r in results:
        if r.problem is not None:
            lines.append(f"{r.kernel} | {r.allowed} | {r.problem} |" + " |" * 9)
            continue
        m = r.model

        def rho(v: float | None) -> str:
            return f"{v:.2f}" if v is not None else "-"

        lines.append(" | ".join([
            r.kernel, str(r.allowed), f"{r.best_ms:.4f}", str(r.exhaustive_to_within),
            str(m["evaluations_to_within_3pct"]), str(m["measured"]),
            "within 3%" if m["chosen_within_3pct"] else f"{m['chosen_ms']} ms",
            median_text(r.others.get("bayes_opt", [])),
            median_text(r.others.get("random_sample", [])),
            rho(m["rank_correlation_all"]), rho(m["rank_correlation_measured"]),
            str(r.goal)]))
    lines += ["", "Columns: evaluations (configurations visited, failed builds included) "
              "until the first within 3% of the exhaustive best; exhaustive: in the space's "
              "order; model measured: all it measured before its stop rule; bayes_opt, "
              "random_sample: the median over the seeds; rho: Spearman's rank correlation of "
              "the model's estimates and the measured times (all verified configurations, "
              "and those the model measured)."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path, help="folder for the JSON and text")
    parser.add_argument("--device", help="--device of mcl tune (default: the leaf's type)")
    parser.add_argument("--backend", default="opencl", choices=("opencl", "cuda"))
    parser.add_argument("--work", type=Path, help="folder for the kernels' copies and Kernel "
                        "Tuner's caches of the run (default: OUT/work)")
    parser.add_argument("--small", action="store_true", help="small sizes (PoCL, testing)")
    parser.add_argument("--kernels", help="comma-separated, of " + ", ".join(KERNELS)
                        + " (default: " + ", ".join(DEFAULT) + ")")
    parser.add_argument("--iterations", type=int, default=7, help="timed runs per configuration")
    parser.add_argument("--repeats", type=int, default=5,
                        help="seeds of bayes_opt and random_sample")
    parser.add_argument("--patience", type=int, help="of the model's stop rule (default: mcl's)")
    args = parser.parse_args(argv)
    names = args.kernels.split(",") if args.kernels else list(DEFAULT)
    unknown = [n for n in names if n not in KERNELS]
    if unknown:
        parser.error(f"unknown kernel {unknown[0]}; known: {', '.join(KERNELS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    from mcl.backends.cuda.registers import register_count
    from mcl.feedback.compiler_registers import use_counter

    use_counter(register_count)  # the model's occupancy from NVRTC's count, as mcl's own
    results = []
    for name in names:
        sizes = KERNELS[name][1 if args.small else 0]
        start = time.perf_counter()
        print(f"{name} {sizes} ...", file=sys.stderr, flush=True)
        try:
            result = run_kernel(name, sizes, args.device, args.backend, args.iterations,
                                args.repeats, args.patience, args.work or args.out / "work")
        except Exception as exc:  # one kernel's failure is reported, the others still run
            result = KernelResult(name, sizes, problem=f"{type(exc).__name__}: {exc}")
        print(f"{name}: {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
        results.append(result)
        (args.out / "tune_model.json").write_text(
            json.dumps([asdict(r) for r in results], indent=1), encoding="utf-8")
    text = table(results, f"# tune_model.py --backend {args.backend} --device {args.device} "
                 f"{'--small' if args.small else ''}".rstrip())
    (args.out / "tune_model.txt").write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0 if all(r.problem is None for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
