"""Verifying a kernel run against its numpy reference (`kernels/<app>/reference.py`).

Shared by every way of running a kernel — the interpreter (`mcl run --interp`), the
OpenCL runner (`mcl run --target LEAF`) and tests: load the reference, build inputs for
given sizes, compare outputs within the reference's tolerance, and report the comparison
as a table. The contract of a reference module is in kernels/README.md.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from mcl.defines import Number, type_problem
from mcl.defines import parse_defines as parse_values
from mcl.diagnostics import MclError, Span, did_you_mean, error
from mcl.styled import text_console

REQUIRED = ("FUNCTION", "SIZES", "inputs", "reference", "OUTPUTS")
# One of these says how far a correct float32 output may lie from the reference.
TOLERANCE_RULES = ("error_bound", "error_terms", "TOLERANCE")

U32 = 2.0**-24  # unit roundoff of float32 (round to nearest)
# λ of the probabilistic bound (Higham & Mary 2019): it fails to hold with probability at
# most 2k·exp(-λ²/2) per element (< 1e-15 for k up to 10⁶ terms at λ = 10).
LAMBDA = 10.0


@dataclass(frozen=True)
class Reference:
    """A loaded `reference.py` (see kernels/README.md)."""

    path: Path
    module: ModuleType

    @property
    def function(self) -> str:
        return str(self.module.FUNCTION)

    @property
    def sizes(self) -> dict[str, int]:
        return dict(self.module.SIZES)

    @property
    def outputs(self) -> tuple[str, ...]:
        return tuple(self.module.OUTPUTS)

    @property
    def tolerance(self) -> dict[str, float]:
        """The fixed TOLERANCE (rtol, atol) of a reference that declares one; zero else."""
        return {"rtol": 0.0, "atol": 0.0, **getattr(self.module, "TOLERANCE", {})}

    def tolerance_for(self, sizes: Mapping[str, int]) -> dict[str, float]:
        """The tolerance at these sizes: TOLERANCE, refined by the reference's optional
        `tolerance(sizes)` where float32 rounding grows with a size (a dot product of
        length p accumulates error proportional to p)."""
        scaled = getattr(self.module, "tolerance", None)
        extra = scaled(dict(sizes)) if callable(scaled) else {}
        return {**self.tolerance, **extra}

    @property
    def peer(self) -> tuple[str, Any] | None:
        """(name, function) of the optional peer: the same computation by a tuned library
        on the host (`PEER = "numpy a @ b"`, `def peer(args)`), timed beside the versions
        when they run on a CPU device (`mcl report --run`)."""
        fn = getattr(self.module, "peer", None)
        return (str(getattr(self.module, "PEER", "peer")), fn) if callable(fn) else None

    def work(self, sizes: Mapping[str, int]) -> tuple[float, str] | None:
        """(amount, unit) of one run for rate reporting: flops or bytes moved."""
        if hasattr(self.module, "flops"):
            return float(self.module.flops(dict(sizes))), "FLOP"
        if hasattr(self.module, "bytes_moved"):
            return float(self.module.bytes_moved(dict(sizes))), "B"
        return None

    def traffic(self, sizes: Mapping[str, int]) -> float | None:
        """Bytes one run must move (`bytes_moved`), also for kernels rated in flops, to
        compare bandwidth-bound kernels with the device's copy bandwidth; None if unknown."""
        if hasattr(self.module, "bytes_moved"):
            return float(self.module.bytes_moved(dict(sizes)))
        return None


def reference_for(kernel: str | Path) -> Path:
    """The reference of a kernel file: `reference.py` in the kernel's folder."""
    return Path(kernel).resolve().parent / "reference.py"


def load_reference(path: str | Path) -> Reference:
    """Import a reference module from its file; problems become diagnostics."""
    path = Path(path)
    where = Span.point(str(path), 1, 1)
    if not path.is_file():
        raise MclError(
            error(
                "verify-no-reference",
                f"no numpy reference at {path}",
                None,
                hint="put reference.py next to the kernel (kernels/README.md) or pass "
                "--reference PATH",
            )
        )
    name = f"mcl_reference_{abs(hash(path))}"
    # An explicit source loader: `--reference` may name a file without the .py suffix, for
    # which importlib finds no loader by itself.
    loader = importlib.machinery.SourceFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    try:
        loader.exec_module(module)
    except SyntaxError as exc:
        line, column = exc.lineno or 1, max(exc.offset or 1, 1)
        raise MclError(
            error(
                "verify-reference-error",
                f"{path.name} is not valid Python: {exc.msg}",
                Span.point(str(path), line, column),
            )
        ) from None
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - user code: report, never a traceback
        raise MclError(
            error("verify-reference-error", f"{path.name} failed to load: {exc!r}", where)
        ) from None
    missing = [name for name in REQUIRED if not hasattr(module, name)]
    if not any(hasattr(module, name) for name in TOLERANCE_RULES):
        missing.append(" or ".join(TOLERANCE_RULES))
    tolerance = getattr(module, "TOLERANCE", {})
    if not isinstance(tolerance, Mapping) or not set(tolerance) <= {"rtol", "atol"}:
        raise MclError(error(
            "verify-reference-contract",
            f"{path}: TOLERANCE is {tolerance!r}, not a dict with rtol and/or atol", where,
            hint='write e.g. TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}'))
    if missing:
        raise MclError(
            error(
                "verify-reference-contract",
                f"{path} lacks {', '.join(missing)}",
                where,
                hint="see the reference.py contract in kernels/README.md",
            )
        )
    tolerance = getattr(module, "TOLERANCE", {})
    if not (isinstance(tolerance, Mapping) and set(tolerance) <= {"rtol", "atol"} and all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in tolerance.values())):
        raise MclError(
            error(
                "verify-reference-contract",
                f"{path}: TOLERANCE must be a dict of 'rtol' and 'atol' numbers, not "
                f"{tolerance!r:.80}",
                where,
                hint='e.g. TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}',
            )
        )
    return Reference(path, module)


def parse_defines(defines: Iterable[str], known: Mapping[str, int]) -> dict[str, int]:
    """`-D n=37` options as sizes (`mcl run`, `mcl tune`): read by the one `-D` parser
    (mcl.defines); every name must be a size of the reference."""
    return sizes_from(parse_values(defines), known, strict=True)


def sizes_from(values: Mapping[str, Number], known: Mapping[str, int], *, strict: bool
               ) -> dict[str, int]:
    """The reference's sizes among `values` (integers). With `strict`, any other name is
    an error; without (`mcl report --run`, whose `-D` are feedback values too), other
    names are left to the feedback, which warns about names the kernel does not have."""
    sizes: dict[str, int] = {}
    for name, value in values.items():
        if name not in known:
            if not strict:
                continue
            raise MclError(
                error(
                    "verify-define",
                    f"-D {name}={value}: '{name}' is not a size of this kernel",
                    None,
                    hint=did_you_mean(name, list(known)) or f"sizes: {', '.join(known)}",
                )
            )
        if isinstance(value, bool) or not isinstance(value, int):
            raise MclError(
                error("verify-define", f"-D {name}={value}: a size is an integer, not {value}",
                      None, hint=f"write -D {name}={int(value)} or another whole number")
            )
        why = type_problem(value, "int")  # sizes are the kernel's int parameters
        if why is not None:
            raise MclError(error("verify-define", f"-D {name}={value}: a size is {why}", None,
                                 hint="give a size an int can hold"))
        sizes[name] = value
    return sizes


def input_kinds(ref: Reference) -> list[str]:
    """The names of a reference's input generators: `default` (`inputs`) and the keys of
    its optional `INPUTS` dict (alternative generators, e.g. spmv's `powerlaw`)."""
    return ["default", *getattr(ref.module, "INPUTS", {})]


def make_inputs(
    ref: Reference, overrides: Mapping[str, int], seed: int, kind: str | None = None
) -> tuple[dict[str, int], dict[str, Any]]:
    """Sizes (the reference's defaults updated by `overrides`) and the arguments built by
    the reference's `inputs(sizes, rng)`, or by its generator `INPUTS[kind]`."""
    sizes = {**ref.sizes, **overrides}
    generator = ref.module.inputs
    if kind not in (None, "default"):
        kinds = input_kinds(ref)
        if kind not in kinds:
            raise MclError(error(
                "verify-inputs", f"{ref.path.name} has no input generator '{kind}'", None,
                hint=did_you_mean(str(kind), kinds) or f"generators: {', '.join(kinds)}"))
        generator = ref.module.INPUTS[kind]
    try:
        args = generator(dict(sizes), np.random.default_rng(seed))
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - user code: report, never a traceback
        raise MclError(
            error(
                "verify-inputs",
                f"{ref.path.name}: inputs() failed for sizes {sizes}: {exc}",
                None,
            )
        ) from None
    if not isinstance(args, Mapping):
        raise MclError(error(
            "verify-reference-contract",
            f"{ref.path.name}: inputs() gave a {type(args).__name__}; it must give a dict of "
            "the function's arguments by parameter name", None,
            hint="return {'n': sizes['n'], 'a': ..., ...} (kernels/README.md)"))
    return sizes, dict(args)


class Expected(dict):
    """The reference's expected outputs (name -> array), with the absolute error bound of
    each element (`bounds`, same shapes) and a short text of the rule that gave it
    (`rules`), as `verify` compares and the table shows them."""

    def __init__(self, values: Mapping[str, np.ndarray],
                 bounds: Mapping[str, np.ndarray] | None = None,
                 rules: Mapping[str, str] | None = None):
        super().__init__(values)
        self.bounds: dict[str, np.ndarray] = dict(bounds or {})
        self.rules: dict[str, str] = dict(rules or {})


def _call_reference(ref: Reference, what: str, *args: Any) -> Any:
    try:
        return getattr(ref.module, what)(*args)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - user code: report, never a traceback
        raise MclError(
            error("verify-reference-error", f"{ref.path.name}: {what}() failed: {exc!r}", None)
        ) from None


def _copies(args: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}


def expected_outputs(ref: Reference, args: Mapping[str, Any]) -> Expected:
    """The reference's expected outputs and their error bounds (`error_bounds`), computed
    on copies so the arguments stay untouched. Call it BEFORE the run: a faulty kernel may
    overwrite its inputs."""
    given = _call_reference(ref, "reference", _copies(args))
    if not isinstance(given, Mapping):
        raise MclError(error(
            "verify-reference-contract",
            f"{ref.path.name}: reference() gave a {type(given).__name__}; it must give a dict "
            "of the expected outputs by parameter name", None,
            hint="return {'c': expected_c, ...} for the names in OUTPUTS (kernels/README.md)"))
    values = _fields(given)
    bounds, rules = error_bounds(ref, args, values)
    return Expected(values, bounds, rules)


def gamma(k: np.ndarray | int, model: str = "probabilistic") -> np.ndarray:
    """The relative forward error bound of a float32 sum or dot product with k terms
    (Higham, Accuracy and Stability of Numerical Algorithms, §3.1 and §4.2):
    |computed - exact| <= gamma(k) * sum |terms| for ANY order of the operations (FMA
    included). Worst case: γ_k = ku/(1 - ku), which grows linearly with k and at k ≈ 4096
    already exceeds the effect of dropping a whole term. `probabilistic` (the default)
    takes the smaller of γ_k and Higham & Mary's γ̃_k(λ) = exp(λ√k·u + ku²/(1-u)) - 1,
    which holds unless the rounding errors conspire (probability < 2k·exp(-λ²/2), for
    independent rounding errors — true of the random inputs of the references)."""
    k = np.asarray(k, dtype=np.float64)
    worst = np.where(k * U32 < 1, k * U32 / np.maximum(1 - k * U32, 1e-300), np.inf)
    if model == "worst-case":
        return worst
    likely = np.expm1(LAMBDA * np.sqrt(k) * U32 + k * U32 * U32 / (1 - U32))
    return np.minimum(worst, likely)


def field_arrays(name: str, value: Any) -> dict[str, np.ndarray]:
    """An output as the plain arrays verification compares: itself, or for a value of a
    user type (a numpy structured array) one array per field, named `out.real`, nested
    fields `out.pos.x`, array fields with their extra dimensions (each field has its own
    error bound: a struct is not a number)."""
    array = np.asarray(value)
    if array.dtype.names is None:
        return {name: array}
    out: dict[str, np.ndarray] = {}
    for field in array.dtype.names:
        out.update(field_arrays(f"{name}.{field}", array[field]))
    return out


def _fields(values: Mapping[str, Any]) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for name, value in values.items():
        out.update(field_arrays(name, value))
    return out


def _output_names(output: str, expected: Mapping[str, Any]) -> list[str]:
    """The compared names of one reference output: itself or its fields."""
    return [n for n in expected if n == output or n.startswith(output + ".")] or [output]


def _absolute(v: np.ndarray) -> np.ndarray:
    """|v| of the float elements, fields of structured arrays included."""
    if v.dtype.names is None:
        return np.abs(v) if v.dtype.kind == "f" else v.copy()
    out = v.copy()
    for field in v.dtype.names:
        out[field] = _absolute(np.asarray(v[field]))
    return out


def _float_magnitudes(args: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments with every float replaced by its absolute value (integers, which
    index, are kept): the reference run on them gives Σ|terms| per output element."""
    out: dict[str, Any] = {}
    for k, v in args.items():
        match v:
            case np.ndarray() if v.dtype.kind == "f" or v.dtype.names is not None:
                out[k] = _absolute(v)
            case float() | np.floating():
                out[k] = type(v)(abs(v))
            case np.ndarray():
                out[k] = v.copy()
            case _:
                out[k] = v
    return out


def error_bounds(ref: Reference, args: Mapping[str, Any], expected: Mapping[str, np.ndarray]
                 ) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Per output, the absolute bound on |got - expected| of every element and its rule.

    In order of precedence, the reference's own `error_bound(args, outputs)`; else
    `error_terms(args)` = k, the number of terms each output element sums (an int, an
    array broadcast against the output, or a dict by output name; 0 for exact results):
    bound = gamma(k + 1) · Σ|terms|, with Σ|terms| the reference run once more on the
    absolute values of the float inputs (k + 1: the expected value itself is rounded to
    float32 once); else the fixed TOLERANCE, atol + rtol·|expected| (numpy's allclose)."""
    module = ref.module
    if hasattr(module, "error_bound"):
        given = _fields(_call_reference(ref, "error_bound", _copies(args), dict(expected)))
        return ({n: np.broadcast_to(np.asarray(given[n], dtype=np.float64), expected[n].shape)
                 for n in expected if n in given}, {n: "error_bound()" for n in expected})
    if hasattr(module, "error_terms"):
        terms = _call_reference(ref, "error_terms", _copies(args))
        per_output = terms if isinstance(terms, Mapping) else {n: terms for n in expected}
        model = str(getattr(module, "ERROR_MODEL", "probabilistic"))
        magnitudes: dict[str, np.ndarray] | None = None
        bounds, rules = {}, {}
        for name, e in expected.items():
            # Terms given for a struct output apply to each of its fields.
            root = name.split(".")[0]
            k = np.asarray(per_output.get(name, per_output.get(root, 0)))
            if not k.any():  # exact results: integer counts, pure data movement
                bounds[name], rules[name] = np.zeros(e.shape), "exact"
                continue
            if magnitudes is None:
                magnitudes = {n: np.asarray(v, dtype=np.float64) for n, v in _fields(
                    _call_reference(ref, "reference", _float_magnitudes(args))).items()}
            # Σ|terms| came back rounded to float32: 2u more covers that rounding.
            bounds[name] = gamma(k + 1, model) * magnitudes[name] * (1 + 2 * U32)
            kmax = int(k.max())
            rules[name] = f"γ({kmax + 1})·Σ|terms|" + (" worst case" if model == "worst-case"
                                                        else "")
        return bounds, rules
    tol = ref.tolerance_for(_sizes_of(ref, args))
    return ({n: tol["atol"] + tol["rtol"] * np.abs(e.astype(np.float64))
             for n, e in expected.items()},
            {n: f"atol {tol['atol']:.3g} + rtol {tol['rtol']:.3g}·|e|" for n in expected})


def _sizes_of(ref: Reference, values: Mapping[str, Any]) -> dict[str, int]:
    return {k: int(values[k]) for k in ref.sizes if k in values}


@dataclass(frozen=True)
class OutputCheck:
    """The comparison of one output array with its expected value: error and bound per
    element; `ratio` is the worst |error| / bound (an element passes when it is <= 1)."""

    name: str
    shape: tuple[int, ...]
    max_abs: float
    max_rel: float
    mismatches: int
    ok: bool
    note: str = ""
    bound: float = 0.0  # the largest bound of an element
    ratio: float = 0.0  # worst |error| / bound over the elements
    rule: str = ""  # how the bound was found


def compare_output(
    name: str, got: Any, expected: np.ndarray, rtol: float, atol: float
) -> OutputCheck:
    """numpy's allclose rule per element: |got - expected| <= atol + rtol * |expected|."""
    bound = atol + rtol * np.abs(np.asarray(expected, dtype=np.float64))
    return compare_bounded(name, got, expected, bound, f"atol {atol:.3g} + rtol {rtol:.3g}·|e|")


def compare_bounded(
    name: str, got: Any, expected: np.ndarray, bound: np.ndarray, rule: str = ""
) -> OutputCheck:
    """|got - expected| <= bound per element. NaN matches only a NaN of the reference
    (uninitialised memory is NaN in the interpreter), an infinity only the same infinity
    (inf - inf is NaN, which no bound holds)."""
    got_arr = np.asarray(got)
    if got_arr.shape != expected.shape:
        return OutputCheck(
            name,
            tuple(got_arr.shape),
            np.inf,
            np.inf,
            expected.size,
            False,
            f"shape {got_arr.shape}, expected {expected.shape}",
            ratio=np.inf,
            rule=rule,
        )
    g = got_arr.astype(np.float64)
    e = expected.astype(np.float64)
    bound = np.broadcast_to(np.asarray(bound, dtype=np.float64), e.shape)
    with np.errstate(invalid="ignore"):
        same = (g == e) | (np.isnan(g) & np.isnan(e))  # inf == inf; NaN where both are
        diff = np.where(same, 0.0, np.abs(g - e))
    bad = ~(diff <= bound)  # NaN compares False, so it counts as bad
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(diff == 0, 0.0, np.where(e != 0, diff / np.abs(e), np.inf))
        ratios = np.where(bound > 0, diff / bound, np.where(diff == 0, 0.0, np.inf))
    has_nan = bool(np.isnan(diff).any())
    max_abs = float(np.max(diff, initial=0.0)) if not has_nan else float("nan")
    max_rel = float(np.max(rel, initial=0.0)) if not has_nan else float("nan")
    ratio = float(np.max(ratios, initial=0.0)) if not has_nan else float("nan")
    mismatches = int(np.count_nonzero(bad))
    note = ""
    if mismatches:
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        got, want = apart(float(g[first]), float(e[first]))
        note = f"first at {list(first)}: got {got}, expected {want}, bound {bound[first]:.3g}"
    return OutputCheck(name, tuple(e.shape), max_abs, max_rel, mismatches, mismatches == 0,
                       note, float(np.max(bound, initial=0.0)), ratio, rule)


def apart(got: float, expected: float) -> tuple[str, str]:
    """The two numbers with 7 significant digits, or as many more (up to 17, a double's
    round trip) as it takes for the texts to differ where the numbers do: a report must
    not say `got -0.3922085, expected -0.3922085`."""
    for digits in range(7, 18):
        texts = f"{got:.{digits}g}", f"{expected:.{digits}g}"
        if texts[0] != texts[1] or got == expected:
            return texts
    return texts


def verify(
    ref: Reference,
    expected: Mapping[str, np.ndarray],
    results: Mapping[str, Any],
    sizes: Mapping[str, Any],
) -> list[OutputCheck]:
    """Compare every output of the reference. `expected` comes from `expected_outputs`,
    computed BEFORE the run (a faulty kernel may overwrite its inputs) and carrying the
    error bounds; `results` maps parameter names to their values after the run; `sizes`
    are the sizes of the run (the run's arguments do), for a reference's fixed TOLERANCE
    when `expected` is a plain dict without bounds."""
    bounds = getattr(expected, "bounds", {})
    rules = getattr(expected, "rules", {})
    tol = ref.tolerance_for(_sizes_of(ref, sizes))
    if not hasattr(expected, "bounds"):
        expected = _fields(expected)
    results = _fields(results)
    checks = []
    for name in (n for output in ref.outputs for n in _output_names(output, expected)):
        if name not in expected:
            raise MclError(
                error("verify-reference-contract", f"reference() gives no value for '{name}'", None)
            )
        if name not in results:
            checks.append(
                OutputCheck(
                    name,
                    tuple(expected[name].shape),
                    np.inf,
                    np.inf,
                    expected[name].size,
                    False,
                    "the run produced no such output",
                    ratio=np.inf,
                )
            )
            continue
        if name in bounds:
            checks.append(compare_bounded(name, results[name], expected[name], bounds[name],
                                          rules.get(name, "")))
        else:
            checks.append(compare_output(name, results[name], expected[name], tol["rtol"],
                                         tol["atol"]))
    return checks


def _format_error(x: float) -> str:
    if np.isnan(x):
        return "NaN"
    if np.isinf(x):
        return "inf"
    return f"{x:.3g}"


def report_table(checks: list[OutputCheck], title: str | None = None) -> Table:
    rules = [f"{c.name}: {c.rule}" for c in checks if c.rule]
    table = Table(title=title, title_justify="left", caption_justify="left",
                  caption="bounds: " + "; ".join(rules) if rules else None)
    table.add_column("output")
    table.add_column("shape")
    table.add_column("max abs err", justify="right")
    table.add_column("max rel err", justify="right")
    table.add_column("bound", justify="right")
    table.add_column("err/bound", justify="right")
    table.add_column("wrong", justify="right")
    table.add_column("result")
    for c in checks:
        status = "[bold green]OK[/]" if c.ok else "[bold red]FAIL[/]"
        if c.note:
            status += f" [dim]{c.note}[/]"
        table.add_row(
            c.name,
            "×".join(map(str, c.shape)) or "scalar",
            _format_error(c.max_abs),
            _format_error(c.max_rel),
            _format_error(c.bound),
            _format_error(c.ratio),
            str(c.mismatches),
            status,
        )
    return table


def print_report(
    checks: list[OutputCheck], title: str | None = None, console: Console | None = None
) -> bool:
    """Print the comparison table; True when every output matched."""
    console = console or text_console()
    from mcl.tables import print_table

    print_table(console, report_table(checks, title))
    return all(c.ok for c in checks)


def rate_of(work: tuple[float, str] | None, seconds: float) -> tuple[float | None, str]:
    """(rate, unit) of `work` done in `seconds`: GFLOP/s for flops, GB/s for bytes, both
    in units of 10^9 per second (as OpenCL, CUDA and STREAM report bandwidth). The one
    rate formula of `mcl run`, `mcl report --run` and `mcl tune`."""
    if work is None or seconds <= 0:
        return None, ""
    amount, kind = work
    return amount / seconds * 1e-9, ("GFLOP/s" if kind == "FLOP" else "GB/s")


def format_rate(work: tuple[float, str] | None, seconds: float) -> str:
    """'89.0 GFLOP/s' / '80.0 GB/s' for one run (`rate_of`), or '' without work."""
    rate, unit = rate_of(work, seconds)
    return "" if rate is None else f"{_three_digits(rate)} {unit}"


def _three_digits(value: float) -> str:
    """Three significant digits without scientific notation: 0.591, 89.0, 5280."""
    if value >= 100:
        return f"{round(value, 3 - len(str(int(value)))):,.0f}"
    return f"{value:.3g}" if value >= 0.001 else f"{value:.2e}"
