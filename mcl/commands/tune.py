"""`mcl tune FILE --target LEAF [--device SPEC] [-D name=value ...] [--param NAME=v1,v2 ...]
[--strategy NAME] [--max-fevals N] [--patience N] [--progress] [--no-cache]`: search the
kernel's named constants for the fastest configuration whose outputs match the numpy
reference, and write it to FILE's `.tuned.toml` (docs/tuning.md)."""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcl.commands import run_multi
from mcl.commands.options import (
    add_backend_argument,
    add_define_argument,
    add_device_argument,
    add_hwd_path_argument,
    add_include_argument,
    add_quiet_argument,
    library_from_args,
)
from mcl.diagnostics import MclError, Span, error
from mcl.styled import text_console

if TYPE_CHECKING:
    from mcl.mcpl.loader import Program


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tune",
        help="search a kernel's named constants for the fastest correct configuration",
        description=(
            "Try the values of the kernel's named constants given by `// tune:` comments "
            "and --param, skip configurations that break `// require:` rules or the "
            "description's limits, run the others on an OpenCL device (Kernel Tuner), "
            "verify each against the numpy reference, and write the fastest verified one "
            "to FILE's .tuned.toml, which mcl run, codegen and report then use."
        ),
    )
    p.add_argument("file", metavar="FILE", help="MCPL kernel (.mcpl)")
    p.add_argument("--target", required=True, metavar="LEAF", help="leaf description")
    add_device_argument(p)
    add_backend_argument(p)
    add_define_argument(p, "a size of the reference, e.g. -D n=4096")
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=V1,V2,...",
        help="values to try for a named constant (repeatable; replaces its // tune: values)",
    )
    p.add_argument(
        "--strategy",
        default="auto",
        metavar="NAME",
        help="auto (default: model on a space of 25 or more configurations at a leaf with "
        "a time model, or with --patience/--max-fevals; brute_force otherwise), model "
        "(the time model ranks every configuration, the best-ranked are measured in its "
        "order until they stop improving), or a Kernel Tuner strategy: brute_force, "
        "random_sample, genetic_algorithm, bayes_opt, ...",
    )
    p.add_argument(
        "--patience",
        type=int,
        metavar="N",
        help="with --strategy model: stop after N measurements in a row without a new best "
        "(default 8)",
    )
    p.add_argument(
        "--max-fevals",
        type=int,
        metavar="N",
        help="evaluate at most N configurations (strategies other than brute_force)",
    )
    p.add_argument(
        "--iterations",
        type=int,
        default=7,
        metavar="N",
        help="timed runs per configuration (default 7)",
    )
    p.add_argument("--progress", action="store_true",
                   help="show a progress bar on a terminal (where stderr is none, plain "
                   "progress lines are shown unless --quiet)")
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="do not read or write Kernel Tuner's cache beside the kernel",
    )
    p.add_argument("--no-write", action="store_true", help="do not write the .tuned.toml")
    p.add_argument("--seed", type=int, default=0, help="seed of the input generator")
    p.add_argument(
        "--parallel", action="store_true",
        help="search on every worker of a Dask cluster at once (the devices of --devices, "
        "default all, or the workers of --scheduler), a part of the configurations each; "
        "devices of one name share a search, and each name gets its entry (docs/scaling.md)")
    run_multi.add_arguments(p, "with --parallel: search on")
    add_include_argument(p)
    add_hwd_path_argument(p)
    add_quiet_argument(p)
    p.set_defaults(func=run)


def parse_params(items: list[str]) -> dict[str, list[int | float]]:
    from mcl.tune.space import parse_values

    params: dict[str, list[int | float]] = {}
    for item in items:
        name, sep, values = item.partition("=")
        if not sep or not name.strip():
            raise MclError(
                error(
                    "tune-param",
                    f"--param {item}: expected NAME=V1,V2,...",
                    hint="e.g. --param TILE_K=8,16",
                )
            )
        params[name.strip()] = parse_values(values, f"--param {name.strip()}")
    return params


@dataclass(frozen=True)
class Prepared:
    """The kernel, its reference, the sizes asked for and the values to try: checked
    before any worker starts."""

    program: Program
    reference: Any
    overrides: dict[str, int]
    space: Any

    def data(self, seed: int, cache: Path | None = None
             ) -> tuple[dict[str, int], dict[str, Any], dict[str, Any]]:
        """The sizes, the inputs and the reference's outputs; with `cache` (the kernel's
        tuning cache folder) read from there when an earlier run made them
        (mcl.tune.inputs_cache)."""
        from mcl.tune.inputs_cache import cached_data, inputs_file
        from mcl.verify import expected_outputs, make_inputs

        def make() -> tuple[dict[str, int], dict[str, Any], dict[str, Any]]:
            sizes, inputs = make_inputs(self.reference, self.overrides, seed)
            return sizes, inputs, expected_outputs(self.reference, inputs)

        if cache is None:
            return make()
        return cached_data(inputs_file(cache, self.reference.path, self.overrides, seed), make)


def prepare(args: argparse.Namespace, path: Path, library: Any) -> Prepared:
    from mcl import pipeline
    from mcl.tune.space import space_from_source
    from mcl.verify import load_reference, parse_defines, reference_for

    program = pipeline.checked_at(path, args.include_dirs, library).program
    reference = load_reference(reference_for(path))
    overrides = parse_defines(args.defines, reference.sizes)
    space = space_from_source(program.main, path, parse_params(args.param))
    if not space.params:
        raise MclError(
            error(
                "tune-nothing",
                f"{path.name} names no values to try",
                Span.point(str(path), 1, 1),
                hint="add `// tune: 4, 8, 16` above a constant, or give --param NAME=4,8,16",
            )
        )
    return Prepared(program, reference, overrides, space)


def run(args: argparse.Namespace) -> int:
    from mcl.backends import leaf_device, load_mapping
    from mcl.output_files import check_output_file, check_output_folder
    from mcl.tune.search import cache_folder, run_search
    from mcl.tune.tuned_file import tuned_path

    path = Path(args.file)
    if not args.no_write:
        check_output_file(tuned_path(path), "the tuned file")
    if not args.no_cache:
        check_output_folder(cache_folder(path), "the tuning cache")
    options = {"max_fevals": args.max_fevals} if args.max_fevals else None
    _check_model_options(args)
    if args.parallel:
        return run_parallel(args, path, options)
    library = library_from_args(args)
    hwd = library.get(args.target)
    load_mapping(hwd, language=args.backend)  # a leaf without one: before the inputs
    prepared = prepare(args, path, library)
    sizes, inputs, expected = prepared.data(args.seed, _cache_folder(args, path))
    device = leaf_device(args.backend, hwd, args.device)
    result = run_search(
        prepared.program,
        path,
        prepared.reference.function,
        args.target,
        library,
        device,
        prepared.space,
        prepared.reference,
        sizes,
        inputs,
        expected,
        args.strategy,
        options,
        args.iterations,
        # a bar with --progress on a terminal; plain lines wherever stderr is none
        (args.progress or not sys.stderr.isatty()) and not args.quiet,
        not args.no_cache,
        args.backend,
        patience=args.patience,
    )
    return _report(args, path, prepared.reference, sizes, result)


def _cache_folder(args: argparse.Namespace, path: Path) -> Path | None:
    """The kernel's tuning cache folder, unless --no-cache."""
    from mcl.tune.search import cache_folder

    return None if args.no_cache else cache_folder(path)


def _check_model_options(args: argparse.Namespace) -> None:
    """--patience belongs to --strategy model, which one process runs (its stop rule
    reads each measurement before the next is chosen)."""
    from mcl.tune.model import BRUTE_FORCE
    from mcl.tune.search import AUTO, MODEL

    if args.patience is not None and (args.strategy not in (MODEL, AUTO)
                                      or args.patience < 1):
        raise MclError(error("tune-patience", "--patience takes a number of 1 or more and "
                             "goes with --strategy model",
                             hint="e.g. --strategy model --patience 8"))
    if args.strategy == AUTO and args.parallel:
        # the model-guided search runs on one device; --parallel shares the space out
        args.strategy = MODEL if args.patience is not None else BRUTE_FORCE
    if args.strategy == MODEL and args.parallel:
        raise MclError(error("tune-parallel-model", "--strategy model measures on one "
                             "device: its stop rule reads each measurement before the next",
                             hint="leave out --parallel, or choose another --strategy"))


def run_parallel(args: argparse.Namespace, path: Path, options: dict[str, Any] | None) -> int:
    """`--parallel`: the workers start first, and import Kernel Tuner and open their
    devices while the devices are listed, the kernel is checked and its inputs and every
    configuration's code are made here (mcl.multi.tune); the results are printed and
    written before the cluster closes."""
    from mcl.backends import DEFAULT_BACKEND, default_backend
    from mcl.multi.cluster import DeviceSlot, device_slots, planned_workers, starting
    from mcl.multi.tune import WARM, TuneJob, tune_parallel
    from mcl.tune.search import build_space
    from mcl.verify import reference_for

    if args.backend != DEFAULT_BACKEND:  # the cluster's workers run the default backend's
        raise MclError(error("tune-parallel-backend",
                             f"--parallel tunes {default_backend().title} kernels",
                             hint=f"leave out --backend {args.backend}"))
    clock = time.perf_counter()

    from mcl.progress import Progress

    tell = Progress("tune", quiet=args.quiet).say

    # Each phase's time is printed: the parts that do not shrink with more workers
    # (inputs, code generation, the cluster's start and end) bound what --parallel gains.
    spec = args.devices or "all"

    def slots() -> list[DeviceSlot]:  # in the cluster's thread, while this one prepares
        from mcl.backends import load_mapping

        mapping = load_mapping(library_from_args(args).get(args.target))
        return device_slots(spec, mapping.device_type)

    with starting(None if args.scheduler else slots, planned_workers(spec), args.scheduler,
                  WARM) as started:
        library = library_from_args(args)
        p = prepare(args, path, library)
        sizes, inputs, expected = p.data(args.seed, _cache_folder(args, path))
        tell(f"inputs and reference made at {time.perf_counter() - clock:.1f} s")
        built = build_space(p.program, p.reference.function, args.target, library, p.space,
                            inputs)
        tell(f"{len(built.candidates)} configurations generated, {len(built.ruled_out)} "
             f"ruled out, at {time.perf_counter() - clock:.1f} s")
        job = TuneJob(p.program, str(path), p.reference.function, args.target, library,
                      p.space, str(reference_for(path)), dict(sizes), inputs, expected,
                      args.strategy, options, args.iterations, not args.no_cache)
        cluster = started()
        tell(f"{len(cluster.names)} worker(s) ready at {time.perf_counter() - clock:.1f} s")
        results = tune_parallel(cluster.client, job, built, tell, cluster.names)
        tell(f"search done at {time.perf_counter() - clock:.1f} s")
        status = max(_report(args, path, p.reference, sizes, r) for r in results.values())
    tell(f"cluster closed at {time.perf_counter() - clock:.1f} s")
    return status


def _report(args: argparse.Namespace, path: Path, reference: Any, sizes: dict[str, int],
            result: Any) -> int:
    """Print a search's result and write its best configuration for its device; the
    exit status."""
    from rich.table import Table

    from mcl.tables import print_table
    from mcl.tune.tuned_file import TunedConfig, tuned_path, write_tuned
    from mcl.verify import rate_of

    console = text_console()
    built = result.space
    size_text = " ".join(f"{k}={v}" for k, v in sizes.items())
    console.print(
        f"{reference.function} ({args.target}) on {size_text}, {result.device}: "
        f"{len(built.candidates) + len(built.ruled_out)} configurations, "
        f"{len(built.ruled_out)} ruled out, {len(result.evaluated)} run, "
        f"{len(result.wrong)} with wrong outputs",
    )
    if result.chose:
        console.print(result.chose)
    for key, reasons in list(built.ruled_out.items())[:5]:
        config = ", ".join(f"{n}={v}" for n, v in zip(built.names, key, strict=True))
        console.print(f"  ruled out {config}: {'; '.join(reasons)}")
    if len(built.ruled_out) > 5:
        console.print(f"  ... and {len(built.ruled_out) - 5} more")
    work = reference.work(sizes)
    table = Table(title="fastest verified configurations")
    for n in built.names:
        table.add_column(n, justify="right")
    table.add_column("time (ms)", justify="right")
    if work:
        table.add_column(rate_of(work, 1.0)[1], justify="right")
    ranked = sorted((r for r in result.evaluated if r.get("verified")), key=lambda r: r["time"])
    for r in ranked[:10]:
        row = [str(r[n]) for n in built.names] + [f"{r['time']:.3f}"]
        if work:
            row.append(f"{rate_of(work, r['time'] * 1e-3)[0]:.1f}")
        table.add_row(*row)
    print_table(console, table)
    if result.ranking is not None:
        console.print(_model_summary(result, args.target), soft_wrap=True)
    if result.best is None:
        console.print("[bold red]no configuration ran and verified; nothing written[/]")
        return 1
    best = ", ".join(f"{k} = {v}" for k, v in result.best.items())
    console.print(f"[bold green]best: {best} ({result.best_time_ms:.3f} ms)[/]")
    if not args.no_write:
        written = write_tuned(
            path,
            TunedConfig(
                args.target,
                result.device,
                reference.function,
                dict(sizes),
                dict(result.best),
                result.best_time_ms,
                {"strategy": result.strategy, "evaluated": len(result.evaluated)}
                | _model_fields(result),
            ),
        )
        console.print(f"written to {written}", soft_wrap=True)
    else:
        console.print(f"not written ({tuned_path(path)} unchanged)")
    return 0


def _model_fields(result: Any) -> dict[str, Any]:
    """`--strategy model`: the rank correlation, for the tuned file."""
    if result.ranking is None:
        return {}
    rho, pairs = _correlation(result)
    return {"rank_correlation": round(rho, 3)} if rho is not None and pairs else {}


def _correlation(result: Any) -> tuple[float | None, int]:
    from mcl.tune.model import model_correlation

    measured = {result.space.key(r): r["time"] for r in result.evaluated if r.get("verified")}
    return model_correlation(result.ranking, measured)


def _model_summary(result: Any, target: str) -> str:
    """What the time model's ranking did: how long it took, how much of the space was
    measured, and how well its order matched the measured times."""
    ranking = result.ranking
    estimated = sum(s is not None for s in ranking.seconds.values())
    rho, pairs = _correlation(result)
    agreement = (f"rank correlation of estimated and measured times {rho:.2f} (Spearman, "
                 f"{pairs} configurations)" if rho is not None else
                 f"no rank correlation: {pairs} configurations have both an estimate and a "
                 "verified time (3 or more are needed)")
    if not estimated:
        return (f"time model: no estimate at {target}; {len(result.trace)} "
                "measured in the space's order")
    return (f"time model: {estimated} of {len(ranking.seconds)} configurations estimated in "
            f"{ranking.elapsed_s:.1f} s; {len(result.trace)} measured in its order; "
            f"{agreement}")
