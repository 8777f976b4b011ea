"""`mcl tune`: find the fastest correct values of a kernel's named constants with Kernel
Tuner (PyPI `kernel-tuner`, its OpenCL backend through pyopencl).

mcl does what only it can do, per configuration: generate the OpenCL with the constants
set (`generate_module(..., overrides=...)`), run the host code to get the NDRange and the
host-computed kernel arguments, and rule configurations out by the kernel's `require:`
rules and the description's limits (space.py). Kernel Tuner does the rest: the search
strategy (brute force, random, genetic, Bayesian, ...), compiling, timing with OpenCL
events, and the cache file that makes a second run instant. The source is handed to
Kernel Tuner as a code generator (a function of the configuration), the launch sizes and
host-computed arguments as functions of the configuration (`problem_size`, `grid_div_*`,
`Tunable` arguments), and the work-group size, which Kernel Tuner reads from parameters
named block_size_x/y/z, as parameters tied to the configuration by a restriction.

Every configuration's outputs are compared with the numpy reference before its time
counts: a configuration with wrong outputs gets an infinite `time_verified`, the
objective the strategies minimise, and is never chosen.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import math
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mcl.backends import DEFAULT_BACKEND
from mcl.codegen.c_names import numpy_dtype
from mcl.codegen.host_eval import Number
from mcl.diagnostics import MclError, error
from mcl.tune.space import SearchSpace, constant_values, description_problems, rule_problems

if TYPE_CHECKING:
    from mcl.hdl.library import HwdLibrary
    from mcl.mcpl.loader import Program
    from mcl.tune.model import Ranking

Key = tuple[Number, ...]
BLOCK_NAMES = ("block_size_x", "block_size_y", "block_size_z")
OBJECTIVE = "time_verified"
MODEL = "model"  # the strategy of mcl.tune.model: the time model's order, then a stop rule
AUTO = "auto"  # the default: MODEL where it pays, brute force elsewhere (mcl.tune.model)


@dataclass
class Candidate:
    """One configuration that the rules allow: its code and launch."""

    config: dict[str, Number]
    source: str
    groups: tuple[int, ...]
    local: tuple[int, int, int]
    host_values: dict[str, Number]


@dataclass
class Space:
    names: list[str]
    candidates: dict[Key, Candidate] = field(default_factory=dict)
    ruled_out: dict[Key, list[str]] = field(default_factory=dict)

    def key(self, params: Mapping[str, Any]) -> Key:
        return tuple(params[n] for n in self.names)


@dataclass
class TuneResult:
    best: dict[str, Number] | None
    best_time_ms: float | None
    evaluated: list[dict[str, Any]]
    wrong: list[Key]
    space: Space
    device: str
    # `--strategy model`: the time model's ranking of the space (mcl.tune.model)
    ranking: Ranking | None = None
    # every configuration the strategy visited, in its order, once each (also those
    # whose build or run failed, which `evaluated` leaves out)
    trace: list[Key] = field(default_factory=list)
    # the strategy that ran (`auto` resolved: mcl.tune.model.auto_strategy)
    strategy: str = "brute_force"
    chose: str = ""  # with `auto`: what it chose and why, for the report


def kernel_tuner() -> Any:
    try:
        import kernel_tuner
    except ImportError as exc:
        raise MclError(
            error(
                "tune-no-kernel-tuner",
                "mcl tune needs Kernel Tuner, which is not installed",
                hint='pip install "mcl[tune]" (or pip install kernel-tuner)',
            )
        ) from exc
    return kernel_tuner


def build_space(
    program: Program,
    function: str,
    target: str,
    library: HwdLibrary,
    space: SearchSpace,
    args: Mapping[str, Any],
    language: str = DEFAULT_BACKEND,
) -> Space:
    """Generate every configuration of `space` (in the language of backend `language`);
    keep those the rules and the description allow (with their code
    and launch) and say why the others are ruled out."""
    from mcl import pipeline
    from mcl.backends import generate_module, load_mapping
    from mcl.codegen.opencl import codegen_input
    from mcl.codegen.session import build_options, launch_values, ndrange_of

    # Translated once, not once per configuration: the constants change, the code does not.
    at_leaf = pipeline.lower(program, target, library)
    hwd = library.get(target)
    mapping = load_mapping(hwd, language=language)
    constants = list(codegen_input(at_leaf, target, library).constants)
    out = Space(list(space.params))
    for config in space.configurations():
        key = out.key(config)
        values = constant_values(constants, config)
        problems = rule_problems(space, values)
        if problems:
            out.ruled_out[key] = problems
            continue
        try:
            generated = generate_module(at_leaf, target, library, mapping, overrides=config)
        except MclError as exc:
            out.ruled_out[key] = [f"code generation: {exc.diagnostics[0].message}"]
            continue
        plan = generated.function(function)
        if plan is None:
            raise MclError(error("tune-function", f"no kernel function '{function}'"))
        if len(plan.kernels) != 1:
            raise MclError(
                error(
                    "tune-kernels",
                    f"'{function}' has {len(plan.kernels)} kernels; mcl tune handles functions "
                    "of one kernel (one top-level foreach nest)",
                )
            )
        kernel = plan.kernels[0]
        if any(a.kind == "local" for a in kernel.args):
            raise MclError(
                error(
                    "tune-local-args",
                    f"'{function}' has __local memory sized by the host; mcl tune needs "
                    "shared memory of a size made of constants",
                )
            )
        launches = launch_values(generated, function, dict(args))
        if len(launches) != 1:
            raise MclError(
                error(
                    "tune-kernels",
                    f"'{function}' launches its kernel {len(launches)} times; "
                    "mcl tune handles one launch",
                )
            )
        launch = launches[0][1]
        problems = description_problems(generated, hwd, mapping, launch, function)
        if problems:
            out.ruled_out[key] = problems
            continue
        group_counts, local = ndrange_of(kernel, launch)
        groups = tuple(group_counts)
        local += [1] * (3 - len(local))
        defines = "".join(
            f"#define {d[2:].replace('=', ' ', 1)}\n" for d in build_options(kernel, launch)
        )
        host = {a.name: launch[a.name] for a in kernel.args if a.kind == "host"}
        out.candidates[key] = Candidate(
            config, defines + generated.source, groups, (local[0], local[1], local[2]), host
        )
    return out


def _kernel_arguments(
    kernel: Any, space: Space, args: Mapping[str, Any], plan: Any
) -> tuple[list[Any], list[Any], list[str | None]]:
    """Kernel Tuner's argument list, its answer skeleton and the parameter name per position."""
    from kernel_tuner.accuracy import Tunable

    arguments: list[Any] = []
    names: list[str | None] = []
    for a in kernel.args:
        if a.kind == "buffer":
            value = np.ascontiguousarray(args[a.name], dtype=numpy_dtype(a.element)).reshape(-1)
            arguments.append(value.copy())
            written = plan.param(a.name).written
            names.append(a.name if written else None)
        elif a.kind == "scalar":
            arguments.append(np.array(args[a.name], dtype=numpy_dtype(a.element))[()])
            names.append(None)
        else:  # host: computed per configuration
            dtype = numpy_dtype(a.element)
            options = {
                k: np.array(c.host_values[a.name], dtype=dtype)[()]
                for k, c in space.candidates.items()
            }
            arguments.append(Tunable(space.key, options))
            names.append(None)
    return arguments, [None] * len(arguments), names


class _Progress:
    """A Kernel Tuner observer that advances a rich progress bar once per configuration
    benchmarked (get_results is called once per configuration)."""

    def __new__(cls, advance: Callable[[], None]) -> Any:
        from kernel_tuner.observers.observer import BenchmarkObserver

        class Observer(BenchmarkObserver):
            def after_finish(self) -> None:
                pass

            def get_results(self) -> dict[str, Any]:
                advance()
                return {}

        return Observer()


def model_values(sizes: Mapping[str, int], args: Mapping[str, Any]) -> dict[str, Number]:
    """The values the time model estimates with: the sizes and the scalar arguments."""
    scalars = {k: v for k, v in args.items()
               if isinstance(v, (int, float)) and not isinstance(v, bool)}
    return {**scalars, **sizes}


def _progress_bar() -> Any:
    """A rich progress bar on stderr (Kernel Tuner's own printing to stdout is
    swallowed)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    return Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
    )


def cache_file(
    kernel: Path, target: str, device: str, sizes: Mapping[str, int], space: Space,
    tag: str = "",
) -> Path:
    """Beside the kernel, one file per (source, leaf, device, sizes, space) and `tag`
    (the worker of a parallel search: workers that pull from one space write apart)."""
    digest = hashlib.sha1(
        "\n".join(
            [
                kernel.read_text(encoding="utf-8") if kernel.is_file() else "",
                target,
                device,
                repr(sorted(sizes.items())),
                repr(space.names),
                repr(sorted(space.candidates)),
                *([tag] if tag else []),
            ]
        ).encode()
    ).hexdigest()[:12]
    safe = re.sub(r"[^A-Za-z0-9]+", "-", device).strip("-")[:40]
    return cache_folder(kernel) / f"{target}-{safe}-{digest}.json"


def cache_folder(kernel: Path) -> Path:
    """The folder of `kernel`'s tuning caches: Kernel Tuner's files and the inputs
    (mcl.tune.inputs_cache)."""
    return kernel.with_name(f".{kernel.stem}.tune-cache")


class Pulled:
    """A Kernel Tuner strategy (an object with `tune`, which `tune_kernel` accepts as
    its strategy) that runs the configurations `pull` hands out, one at a time, with
    Kernel Tuner's runner, until `pull` returns None. Workers of `mcl tune --parallel`
    each make one Kernel Tuner call and pull from one queue: Kernel Tuner's cost per
    call (a device context, the inputs copied to the device, and a warm-up run of the
    first configuration, which its sequential runner compiles and times twice) is paid
    once per worker, and no worker idles while another still has a batch to finish."""

    def __init__(self, pull: Callable[[], Key | None], space: Space,
                 told: Callable[[Key, dict[str, Any]], None] | None = None) -> None:
        self.pull = pull
        self.space = space
        self.told = told  # given each measurement, before the next pull (a stop rule)

    def tune(self, searchspace: Any, runner: Any, tuning_options: Any) -> list[Any]:
        del searchspace  # what runs is what `pull` hands out, a part of its configurations
        results: list[Any] = []
        while (key := self.pull()) is not None:
            # Kernel Tuner's element: the constants in `names` order, then the work-group
            # size (`run_search`'s tune_params).
            element = (*key, *self.space.candidates[key].local)
            measured = runner.run([element], tuning_options)
            if self.told is not None:
                for result in measured:
                    self.told(key, result)
            results += measured
        return results


def _resolved(strategy: str, configurations: int, hwd: Any,
              asked_for_model: bool) -> tuple[str, str]:
    """The strategy to run, and with `auto` a line saying what it chose and why."""
    if strategy != AUTO:
        return strategy, ""
    from mcl.tune.model import auto_strategy

    chosen, why = auto_strategy(configurations, hwd, asked_for_model)
    return chosen, f"strategy auto: {chosen} ({why})"


def run_search(
    program: Program,
    kernel_path: Path,
    function: str,
    target: str,
    library: HwdLibrary,
    device: Any,
    space: SearchSpace,
    reference: Any,
    sizes: dict[str, int],
    args: dict[str, Any],
    expected: dict[str, np.ndarray],
    strategy: str = "brute_force",
    strategy_options: dict[str, Any] | None = None,
    iterations: int = 7,
    progress: bool = False,
    use_cache: bool = True,
    backend: str = DEFAULT_BACKEND,
    built: Space | None = None,
    pull: Callable[[], Key | None] | None = None,
    cache_tag: str = "",
    patience: int | None = None,
) -> TuneResult:
    """Tune on `device`, a device of backend `backend` (its `select_device`), through the
    Kernel Tuner language the backend names (`tuner_target`: OpenCL, or cuda-python for
    CUDA).
    `built`, where given, is the space `build_space` made already, or a part of it
    (`mcl tune --parallel` sends each worker the code of its configurations,
    mcl.multi.tune). With `pull`, the configurations run are those `pull` hands out, one
    at a time until it returns None, in this one Kernel Tuner call (`Pulled`); `cache_tag`
    then names this caller's own cache file beside the others'.
    Strategy `model` (mcl.tune.model) ranks the configurations with the time model and
    measures them in that order until `patience` measurements bring no new best or
    `max_fevals` of `strategy_options` were measured."""
    kt = kernel_tuner()
    from mcl import pipeline
    from mcl.backends import get_backend
    from mcl.verify import verify

    runs_on = get_backend(backend)
    describe = runs_on.describe

    if built is None:
        built = build_space(program, function, target, library, space, args, backend)
    strategy, chose = _resolved(strategy, len(built.candidates), library.get(target),
                                patience is not None
                                or bool(strategy_options and "max_fevals" in strategy_options))
    if not built.candidates:
        return TuneResult(None, None, [], [], built, describe(device), strategy=strategy,
                          chose=chose)
    first = next(iter(built.candidates.values()))
    generated = pipeline.generate(pipeline.checked(program, library), target, library,
                                  overrides=first.config, language=backend)
    plan = generated.function(function)
    assert plan is not None  # build_space found it
    kernel = plan.kernels[0]
    arguments, answer, names = _kernel_arguments(kernel, built, args, plan)
    # The answer Kernel Tuner hands to `check`: only the written arrays (any non-None value
    # makes Kernel Tuner copy that argument back).
    answer = [expected[n].reshape(-1) if n in expected else None for n in names]

    wrong: set[Key] = set()
    checked: dict[Key, bool] = {}
    current: dict[str, Key] = {}

    def check(answer: list[Any], result_host: list[Any], atol: float | None = None) -> bool:
        outputs = {
            n: np.asarray(r).reshape(np.shape(expected[n]))
            for n, r in zip(names, result_host, strict=True)
            if n is not None and n in expected and r is not None
        }
        ok = all(c.ok for c in verify(reference, expected, outputs, sizes))
        key = current.get("key")
        if key is not None:
            checked[key] = ok
            if not ok:
                wrong.add(key)
        return True  # a wrong configuration is kept out by the objective, not by aborting

    def source(params: Mapping[str, Any] | None) -> str:
        if params is None:
            return first.source
        key = built.key(params)
        current["key"] = key
        return built.candidates[key].source

    def allowed(p: Mapping[str, Any]) -> bool:
        c = built.candidates.get(built.key(p))
        return c is not None and tuple(p[n] for n in BLOCK_NAMES) == c.local

    tune_params: dict[str, list[Any]] = {n: list(v) for n, v in space.params.items()}
    for d, name in enumerate(BLOCK_NAMES):
        tune_params[name] = sorted({c.local[d] for c in built.candidates.values()})

    def verified_time(p: Mapping[str, Any]) -> float:
        key = built.key(p)
        ok = checked.get(key, bool(p.get("verified", 0)))
        return float(p["time"]) if ok and isinstance(p.get("time"), float) else math.inf

    def verified_flag(p: Mapping[str, Any]) -> int:
        return int(checked.get(built.key(p), bool(p.get("verified", 0))))

    tuner = runs_on.tuner_target(device)
    cache = (cache_file(kernel_path, target, describe(device), sizes, built, cache_tag)
             if use_cache else None)
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)

    total = len(built.candidates)
    if strategy_options and "max_fevals" in strategy_options:
        total = min(total, int(strategy_options["max_fevals"]))
    observers = []
    # progress: a bar on a terminal, plain lines now and then elsewhere (mcl.progress)
    from mcl.progress import Progress, is_terminal

    bar = _progress_bar() if progress and is_terminal(sys.stderr) else None
    lines = Progress("tune", total, quiet=not progress or bar is not None, bar=False)
    ranking = None
    chosen: Any = strategy if pull is None else Pulled(pull, built)
    if strategy == MODEL and pull is None:
        from mcl.tune.model import PATIENCE, RankedQueue, rank_space

        ranked = bar.add_task("ranking with the time model", total=len(built.candidates)) \
            if bar is not None else None
        lines.say(f"ranking {len(built.candidates)} configurations with the time model")
        with bar if bar is not None else contextlib.nullcontext():
            ranking = rank_space(program, function, target, library, built,
                                 model_values(sizes, args),
                                 None if bar is None else lambda: bar.advance(ranked))
        if bar is not None and ranked is not None:
            bar.remove_task(ranked)  # the tuning bar below takes its place
        queue = RankedQueue(ranking.order, patience or PATIENCE,
                            (strategy_options or {}).get("max_fevals"))
        chosen = Pulled(queue.pull, built, lambda key, r: queue.told(key, r.get(OBJECTIVE)))
        strategy_options = None  # the queue keeps the budget
    if bar is not None:
        task = bar.add_task(f"tuning {function} on {describe(device)}", total=total)
        observers.append(_Progress(lambda: bar.advance(task)))
    elif progress:
        observers.append(_Progress(lambda: lines.step(f"tuning {function}")))

    def problem_size(p: Mapping[str, Any]) -> tuple[int, ...]:
        c = built.candidates[built.key(p)]
        return tuple(g * s for g, s in zip(c.groups, c.local, strict=False))

    def divisor(d: int) -> Callable[[Mapping[str, Any]], int]:
        return lambda p: built.candidates[built.key(p)].local[d]

    context = bar if bar is not None else contextlib.nullcontext()
    with context, contextlib.redirect_stdout(io.StringIO()):
        results, _env = kt.tune_kernel(
            kernel.name,
            source,
            problem_size,
            arguments,
            tune_params,
            grid_div_x=divisor(0),
            grid_div_y=divisor(1),
            grid_div_z=divisor(2),
            restrictions=allowed,
            answer=answer,
            verify=check,
            lang=tuner.lang,
            platform=tuner.platform,
            device=tuner.device,
            iterations=iterations,
            block_size_names=list(BLOCK_NAMES),
            quiet=True,
            strategy=chosen,
            strategy_options=strategy_options or None,
            cache=str(cache) if cache is not None else None,
            metrics={"verified": verified_flag, OBJECTIVE: verified_time},
            objective=OBJECTIVE,
            objective_higher_is_better=False,
            observers=observers or None,
        )
    evaluated = [r for r in results if isinstance(r.get("time"), float)]
    wrong_keys = sorted({built.key(r) for r in evaluated if not r.get("verified")} | wrong, key=str)
    good = [r for r in evaluated if r.get("verified") and math.isfinite(r.get(OBJECTIVE, math.inf))]
    best = min(good, key=lambda r: r["time"]) if good else None
    return TuneResult(
        {n: best[n] for n in built.names} if best else None,
        float(best["time"]) if best else None,
        evaluated,
        wrong_keys,
        built,
        describe(device),
        ranking,
        list(dict.fromkeys(built.key(r) for r in results if r is not None)),
        strategy=strategy,
        chose=chose,
    )
