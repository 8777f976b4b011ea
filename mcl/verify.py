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

from mcl.defines import Number
from mcl.defines import parse_defines as parse_values
from mcl.diagnostics import MclError, Span, did_you_mean, error

REQUIRED = ("FUNCTION", "SIZES", "inputs", "reference", "OUTPUTS", "TOLERANCE")


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
        return {"rtol": 0.0, "atol": 0.0, **self.module.TOLERANCE}

    def tolerance_for(self, sizes: Mapping[str, int]) -> dict[str, float]:
        """The tolerance at these sizes: TOLERANCE, refined by the reference's optional
        `tolerance(sizes)` where float32 rounding grows with a size (a dot product of
        length p accumulates error proportional to p)."""
        scaled = getattr(self.module, "tolerance", None)
        extra = scaled(dict(sizes)) if callable(scaled) else {}
        return {**self.tolerance, **extra}

    def work(self, sizes: Mapping[str, int]) -> tuple[float, str] | None:
        """(amount, unit) of one run for rate reporting: flops or bytes moved."""
        if hasattr(self.module, "flops"):
            return float(self.module.flops(dict(sizes))), "FLOP"
        if hasattr(self.module, "bytes_moved"):
            return float(self.module.bytes_moved(dict(sizes))), "B"
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
    if missing:
        raise MclError(
            error(
                "verify-reference-contract",
                f"{path} lacks {', '.join(missing)}",
                where,
                hint="see the reference.py contract in kernels/README.md",
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
        sizes[name] = value
    return sizes


def make_inputs(
    ref: Reference, overrides: Mapping[str, int], seed: int
) -> tuple[dict[str, int], dict[str, Any]]:
    """Sizes (the reference's defaults updated by `overrides`) and the arguments built by
    the reference's `inputs(sizes, rng)`."""
    sizes = {**ref.sizes, **overrides}
    try:
        args = ref.module.inputs(dict(sizes), np.random.default_rng(seed))
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - user code: report, never a traceback
        raise MclError(
            error(
                "verify-inputs",
                f"{ref.path.name}: inputs() failed for sizes {sizes}: {exc}",
                None,
            )
        ) from None
    return sizes, dict(args)


def expected_outputs(ref: Reference, args: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """The reference's expected outputs, computed on copies so outputs stay untouched."""
    copies = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
    try:
        expected = ref.module.reference(copies)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - user code: report, never a traceback
        raise MclError(
            error("verify-reference-error", f"{ref.path.name}: reference() failed: {exc!r}", None)
        ) from None
    return {k: np.asarray(v) for k, v in expected.items()}


@dataclass(frozen=True)
class OutputCheck:
    """The comparison of one output array with its expected value."""

    name: str
    shape: tuple[int, ...]
    max_abs: float
    max_rel: float
    mismatches: int
    ok: bool
    note: str = ""


def compare_output(
    name: str, got: Any, expected: np.ndarray, rtol: float, atol: float
) -> OutputCheck:
    """numpy's allclose rule per element: |got - expected| <= atol + rtol * |expected|.
    NaN never matches (uninitialised memory is NaN in the interpreter)."""
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
        )
    g = got_arr.astype(np.float64)
    e = expected.astype(np.float64)
    diff = np.abs(g - e)
    bad = ~(diff <= atol + rtol * np.abs(e))  # NaN compares False, so it counts as bad
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(e != 0, diff / np.abs(e), np.where(diff == 0, 0.0, np.inf))
    max_abs = float(np.max(diff, initial=0.0)) if not np.isnan(diff).any() else float("nan")
    max_rel = float(np.max(rel, initial=0.0)) if not np.isnan(rel).any() else float("nan")
    mismatches = int(np.count_nonzero(bad))
    note = ""
    if mismatches:
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        note = f"first at {list(first)}: got {g[first]:.7g}, expected {e[first]:.7g}"
    return OutputCheck(name, tuple(e.shape), max_abs, max_rel, mismatches, mismatches == 0, note)


def verify(
    ref: Reference,
    expected: Mapping[str, np.ndarray],
    results: Mapping[str, Any],
    sizes: Mapping[str, Any],
) -> list[OutputCheck]:
    """Compare every output of the reference. `expected` comes from `expected_outputs`,
    computed BEFORE the run (a faulty kernel may overwrite its inputs); `results` maps
    parameter names to their values after the run; `sizes` are the sizes of the run (the
    run's arguments do: their size entries are used), for tolerances that grow with a size."""
    tol = ref.tolerance_for({k: int(sizes[k]) for k in ref.sizes if k in sizes})
    checks = []
    for name in ref.outputs:
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
                )
            )
            continue
        checks.append(compare_output(name, results[name], expected[name], tol["rtol"], tol["atol"]))
    return checks


def _format_error(x: float) -> str:
    if np.isnan(x):
        return "NaN"
    if np.isinf(x):
        return "inf"
    return f"{x:.3g}"


def report_table(checks: list[OutputCheck], title: str | None = None) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("output")
    table.add_column("shape")
    table.add_column("max abs error", justify="right")
    table.add_column("max rel error", justify="right")
    table.add_column("mismatches", justify="right")
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
            str(c.mismatches),
            status,
        )
    return table


def print_report(
    checks: list[OutputCheck], title: str | None = None, console: Console | None = None
) -> bool:
    """Print the comparison table; True when every output matched."""
    console = console or Console(highlight=False)
    console.print(report_table(checks, title))
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
