"""Verifying a next version before it is offered: the original and the next version run
through the interpreter, and as OpenCL on a device where the level is a leaf
(mcl.refine.device_check: PoCL by default), on the same inputs at three sizes, primes
among them, and every run must match (docs/refinements.md, "Verified before offered").

With a `reference.py` beside the kernel, inputs, expected outputs and error bounds are
the reference's (mcl.verify, as `mcl run --interp` compares): integers exactly, floats
within the reference's bound, and the original must pass too (a size it fails at is
left out for another). Without one, the inputs are random numbers of the parameters'
types and the original's outputs are the reference: integers equal, floats within
`RANDOM_RTOL` and `RANDOM_ATOL` of them (the rewrites reorder no sum, but a new constant
may change a tile and with it the order of a sum). The device's outputs are compared
the same way, but for floats on random inputs: OpenCL lets the device compiler fuse a
multiply and an add into one operation (one rounding where the interpreter makes two),
so a sum of many products differs in its last bits, by more than `RANDOM_ATOL` where it
nearly cancels; there the bound is `DEVICE_NORMWISE` times the output's largest
magnitude. A size the original does not pass on the device is left out for another, as
one it does not pass in the interpreter."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mcl.codegen.host_eval import Number, evaluate
from mcl.diagnostics import MclError
from mcl.interp import run_function
from mcl.mcpl import ast
from mcl.refine.device_check import OpenCLCheck
from mcl.refine.kernel import KernelAtLevel
from mcl.refine.places import constant_env
from mcl.refine.refinement import Refused
from mcl.verify import (
    Reference,
    compare_output,
    expected_outputs,
    load_reference,
    make_inputs,
    verify,
)

SIZES_WANTED = 3
RANDOM_RTOL, RANDOM_ATOL = 1e-5, 1e-6
# Floats from the device on random inputs: within this share of the output's largest
# magnitude (a sum of up to 17 * 17 products of [-1, 1) rounded in float32, fused or not,
# stays some 100 times inside it; a wrong element is off by about a term).
DEVICE_NORMWISE = 1e-4
# Sizes of a kernel without a reference: every int parameter this value, in turn.
RANDOM_SIZES = (13, 7, 17)
SEED = 7


@dataclass(frozen=True)
class SizeCheck:
    """The next version at one set of sizes: `ok`, and the outputs compared."""

    sizes: dict[str, int]
    ok: bool
    outputs: tuple[str, ...]
    note: str = ""


@dataclass(frozen=True)
class Verification:
    """How the next version was verified: against what (`against`), at which sizes, and
    by what (`runs_on`: the interpreter, and the OpenCL device where one ran it)."""

    against: str
    checks: tuple[SizeCheck, ...]
    runs_on: str = "the interpreter"

    @property
    def ok(self) -> bool:
        return len(self.checks) >= SIZES_WANTED and all(c.ok for c in self.checks)


def primes_near(value: int, above: bool) -> int:
    """The prime nearest below two thirds of `value` (at least 2), or the next prime
    above `value`."""
    n = max(2, value * 2 // 3) if not above else value + 1
    while not _prime(n):
        n = n + 1 if above else max(2, n - 1)
        if n == 2:
            return 2
    return n


def _prime(n: int) -> bool:
    return n >= 2 and all(n % d for d in range(2, int(n ** 0.5) + 1))


def size_sets(defaults: Mapping[str, int]) -> list[dict[str, int]]:
    """The reference's sizes, the primes below two thirds of them and the primes above
    them (later ones stand in for a set the reference or the original cannot run)."""
    sets = [dict(defaults),
            {k: primes_near(v, False) for k, v in defaults.items()},
            {k: primes_near(v, True) for k, v in defaults.items()},
            {k: primes_near(primes_near(v, True), True) for k, v in defaults.items()}]
    unique: list[dict[str, int]] = []
    for s in sets:
        if s not in unique:
            unique.append(s)
    return unique


@dataclass
class _Case:
    sizes: dict[str, int]
    args: dict[str, Any]
    expected: Any  # the reference's outputs (mcl.verify.Expected) or the original's


@dataclass
class Verifier:
    """The cases of one kernel, made once and used for every next version: inputs at
    the sizes the original passes, with what each output must be."""

    kernel: KernelAtLevel
    reference: Reference | None = None
    cases: list[_Case] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    device: OpenCLCheck = field(default_factory=OpenCLCheck)

    @classmethod
    def of(cls, kernel: KernelAtLevel, reference: Path | None = None) -> Verifier:
        """The cases of `kernel`, verified against `reference` (default: the kernel's,
        the reference the user named or reference.py beside the file)."""
        path = reference or kernel.reference
        verifier = cls(kernel, load_reference(path) if path.is_file() else None,
                       device=OpenCLCheck.of(kernel))
        verifier._prepare()
        return verifier

    @property
    def runs_on(self) -> str:
        """What runs every version: `the interpreter and OpenCL on DEVICE`, or the
        interpreter alone with the reason there is no device run."""
        if self.device.unavailable is not None:
            return f"the interpreter only ({self.device.unavailable})"
        return f"the interpreter and OpenCL on {self.device.device}"

    @property
    def against(self) -> str:
        if self.reference is not None:
            return f"{self.reference.path.name} (the numpy reference)"
        return "the original on random inputs"

    def passed_by(self, kernel: KernelAtLevel, verification: Verification
                  ) -> Verifier | None:
        """The verifier of `kernel`, a next version this one verified as `verification`,
        without running it again: where the cases are the reference's (inputs made with
        SEED, expected outputs the reference's) at the first sizes tried, none left out,
        `Verifier.of(kernel)` would make the same cases and keep every one, since
        `kernel` matched each in the interpreter and on the device as `_case` asks the
        original to. None where that does not hold (random inputs, whose expected
        outputs are the original's own, or a size left out)."""
        sizes = [c.sizes for c in self.cases]
        if self.reference is None or self.left_out or not verification.ok \
                or [c.sizes for c in verification.checks] != sizes:
            return None
        return Verifier(kernel, self.reference, list(self.cases), [], self.device)

    def _prepare(self) -> None:
        ref = self.reference
        defaults = ref.sizes if ref is not None else {}
        candidates = size_sets(defaults) if ref is not None else [
            dict.fromkeys(_int_params(self.kernel), v) for v in RANDOM_SIZES]
        for sizes in candidates:
            if len(self.cases) == SIZES_WANTED:
                break
            try:
                case = self._case(sizes)
            except (MclError, ValueError) as exc:
                self.left_out.append(f"{_sizes_text(sizes)}: {_first_line(exc)}")
                continue
            if case is not None:
                self.cases.append(case)

    def _case(self, sizes: dict[str, int]) -> _Case | None:
        ref = self.reference
        if ref is not None:
            _, args = make_inputs(ref, sizes, SEED)
            case = _Case(sizes, args, expected_outputs(ref, args))
            if not self._matches(case, self._run(self.kernel, args)):
                self.left_out.append(f"{_sizes_text(sizes)}: the original does not match "
                                     "the reference")
                return None
        else:
            args = random_inputs(self.kernel, sizes)
            case = _Case(sizes, args, _arrays(self._run(self.kernel, args)))
        if self.device.unavailable is None:
            try:
                on_device = self.device.run(self.kernel, args)
            except Exception as exc:  # noqa: BLE001 - a driver's error is the device's answer
                self.left_out.append(f"{_sizes_text(sizes)}: the original does not run on "
                                     f"{self.device.device}: {_first_line(exc)}")
                return None
            if not self._matches(case, on_device, on_device=True):
                self.left_out.append(f"{_sizes_text(sizes)}: the original on "
                                     f"{self.device.device} does not match {self.against}")
                return None
        return case

    def _compared(self, case: _Case, got: Mapping[str, Any], on_device: bool = False
                  ) -> list[Any]:
        """Each output of `got` (the device's where `on_device`) against what the case
        expects (mcl.verify.OutputCheck)."""
        if self.reference is not None:
            return verify(self.reference, case.expected, got, case.args)
        # The interpreter gives back every array, the device those the kernel writes.
        return [_compare_exactly_or_close(name, got.get(name), value, on_device)
                for name, value in case.expected.items() if not on_device or name in got]

    def _matches(self, case: _Case, got: Mapping[str, Any], on_device: bool = False) -> bool:
        return all(c.ok for c in self._compared(case, got, on_device))

    def _run(self, kernel: KernelAtLevel, args: Mapping[str, Any]) -> dict[str, Any]:
        copies = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
        return run_function(kernel.lowered, kernel.function, copies, kernel.library)

    def check(self, next_kernel: KernelAtLevel) -> Verification:
        """Run the next version on every case and compare."""
        if len(self.cases) < SIZES_WANTED:
            raise Refused(f"the original verifies at {len(self.cases)} sizes only, not "
                          f"{SIZES_WANTED}: " + "; ".join(self.left_out))
        checks = []
        for case in self.cases:
            try:
                got = self._run(next_kernel, case.args)
            except MclError as exc:
                checks.append(SizeCheck(case.sizes, False, (), _first_line(exc)))
                continue
            compared = self._compared(case, got)
            bad = [f"{c.name}: {c.note}" for c in compared if not c.ok]
            # On the device only once the interpreter has run it at these sizes: it
            # checks every index, OpenCL none.
            if not bad and self.device.unavailable is None:
                try:
                    on_device = self.device.run(next_kernel, case.args)
                    bad = [f"{c.name} on {self.device.device}: {c.note}"
                           for c in self._compared(case, on_device, on_device=True)
                           if not c.ok]
                except Exception as exc:  # noqa: BLE001 - a driver's error fails the check
                    bad = [f"on {self.device.device}: {_first_line(exc)}"]
            checks.append(SizeCheck(case.sizes, not bad, tuple(c.name for c in compared),
                                    "; ".join(bad)))
        return Verification(self.against, tuple(checks), self.runs_on)


def _compare_exactly_or_close(name: str, got: Any, want: np.ndarray, on_device: bool = False
                              ) -> Any:
    if want.dtype.kind == "f":
        largest = float(np.max(np.abs(want))) if want.size else 0.0
        atol = max(RANDOM_ATOL, DEVICE_NORMWISE * largest) if on_device else RANDOM_ATOL
        return compare_output(name, got, want, RANDOM_RTOL, atol)
    return compare_output(name, got, want, 0.0, 0.0)


def _arrays(results: Mapping[str, Any]) -> dict[str, np.ndarray]:
    return {k: np.array(v) for k, v in results.items() if isinstance(v, np.ndarray)}


def _int_params(kernel: KernelAtLevel) -> list[str]:
    return [p.name for p in kernel.source_function.params
            if isinstance(p.type, ast.Prim) and p.type.name == "int"]


_DTYPES = {"float": np.float32, "double": np.float64, "int": np.int32, "byte": np.uint8,
           "bool": np.bool_}


def random_inputs(kernel: KernelAtLevel, sizes: Mapping[str, int]) -> dict[str, Any]:
    """Random arguments of the function's parameter types: sizes as given, floats in
    [-1, 1), integers in [0, 4) (small, as an index array needs)."""
    rng = np.random.default_rng(SEED)
    env: dict[str, Number] = {**constant_env(kernel.source.program.main), **sizes}
    args: dict[str, Any] = {}
    for p in kernel.source_function.params:
        element = p.type.element if isinstance(p.type, ast.ArrayType) else p.type
        if not isinstance(element, ast.Prim) or element.name not in _DTYPES:
            raise Refused(f"parameter {p.name} has no random value without a reference.py "
                          "beside the kernel")
        dtype = _DTYPES[element.name]
        if isinstance(p.type, ast.ArrayType):
            shape = tuple(int(evaluate(e, env)) for group in p.type.dims for e in group)
            args[p.name] = _random(rng, dtype, shape)
        elif p.name in sizes:
            args[p.name] = sizes[p.name]
        else:
            args[p.name] = _random(rng, dtype, ())[()]
    return args


def _random(rng: np.random.Generator, dtype: Any, shape: tuple[int, ...]) -> np.ndarray:
    if np.dtype(dtype).kind == "f":
        return rng.uniform(-1.0, 1.0, shape).astype(dtype)
    if np.dtype(dtype).kind == "b":
        return rng.integers(0, 2, shape).astype(dtype)
    return rng.integers(0, 4, shape).astype(dtype)


def _sizes_text(sizes: Mapping[str, int]) -> str:
    return " ".join(f"{k}={v}" for k, v in sizes.items())


def _first_line(exc: BaseException) -> str:
    if isinstance(exc, MclError) and exc.diagnostics:
        return exc.diagnostics[0].message
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
