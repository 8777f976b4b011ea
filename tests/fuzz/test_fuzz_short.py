"""The seeded short fuzz run of the suite (issue 20): mutations of the shipped kernels and
descriptions, and token soups of both grammars, through the same stages as the long run
(`python -m mcl.fuzz`, docs/reliability.md). Each input has a time budget; running past it
fails like a crash. MCL_FUZZ_EXAMPLES scales the number of examples."""

from __future__ import annotations

import os
import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from mcl import fuzz

SCALE = float(os.environ.get("MCL_FUZZ_EXAMPLES", "1"))
BUDGET = 30.0  # seconds per command; generous for a loaded CI machine, still finite
FUZZ_SETTINGS = {
    "deadline": None,
    "derandomize": True,
    "database": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}

MCPL_SEEDS = fuzz.mcpl_seeds()
HDL_SEEDS = fuzz.hdl_seeds()


def _mcpl_input(base: tuple[str, str], rng: random.Random, soup: bool) -> tuple[str, str]:
    name, text = base
    if soup:
        return name, fuzz.token_soup(rng, fuzz.MCPL_TOKENS, rng.randint(1, 40))
    return name, fuzz.mutate(text, rng, fuzz.MCPL_TOKENS)


def _assert_no_failure(outcome: fuzz.Outcome, text: str) -> None:
    assert outcome.kind not in fuzz.FAILURES, (
        f"{outcome.kind} in `mcl {outcome.stage}`:\n{outcome.detail}\n--- input ---\n{text}")


@seed(20)
@settings(max_examples=int(200 * SCALE), **FUZZ_SETTINGS)
@given(st.sampled_from(MCPL_SEEDS), st.randoms(use_true_random=False),
       st.booleans(), st.floats(0, 1))
def test_mutated_mcpl_never_crashes_or_hangs(
    base: tuple[str, str], rng: random.Random, soup: bool, deep: float
) -> None:
    name, text = _mcpl_input(base, rng, soup and deep < 0.1)
    with tempfile.TemporaryDirectory() as tmp:
        # A fifth of the inputs that pass `check` also go through feedback with random
        # values, translation and codegen: those stages cost most of the time.
        outcome = fuzz.run_mcpl(text, name, rng, BUDGET, Path(tmp), deep=deep < 0.2)
    _assert_no_failure(outcome, text)


@seed(34)
@settings(max_examples=int(40 * SCALE), **FUZZ_SETTINGS)
@given(st.randoms(use_true_random=False))
def test_generated_round3_kernels_never_crash_or_hang(rng: random.Random) -> None:
    """Kernels built from the classes of round 3 (doubling loops, ^ chains, deep if nests,
    huge literals, ...): check with feedback, and for a few, translate, codegen and
    `mcl run` with the interpreter or on the OpenCL device."""
    text = fuzz.generated_kernel(rng)
    with tempfile.TemporaryDirectory() as tmp:
        outcome = fuzz.run_generated(text, rng, BUDGET, Path(tmp), execute=0.1)
    _assert_no_failure(outcome, text)


@seed(20)
@settings(max_examples=int(100 * SCALE), **FUZZ_SETTINGS)
@given(st.sampled_from(HDL_SEEDS), st.randoms(use_true_random=False), st.booleans())
def test_mutated_hdl_never_crashes_or_hangs(
    base: tuple[str, str], rng: random.Random, soup: bool
) -> None:
    name, text = base
    text = (fuzz.token_soup(rng, fuzz.HDL_TOKENS, rng.randint(1, 40)) if soup and rng.random() < 0.1
            else fuzz.mutate(text, rng, fuzz.HDL_TOKENS))
    with tempfile.TemporaryDirectory() as tmp:
        outcome = fuzz.run_hdl(text, name, BUDGET, Path(tmp))
    _assert_no_failure(outcome, text)


@pytest.mark.parametrize("wait", ["busy", "sleep"])
def test_a_hang_is_a_failure(wait: str) -> None:
    """The budget really interrupts a command, whether it computes (CPU time) or waits
    (wall-clock time, ten times the budget): `Hang` passes through the CLI's last line of
    defence and the run reports a hang."""
    import threading
    import time

    from mcl.commands import check

    stop = threading.Event()  # the command runs on a thread of its own (deep_stack), which
    # the budget leaves behind: it must end, or it spins beside every later test

    def busy(args: object) -> int:
        while not stop.is_set():
            sum(range(1000))
        return 0

    original = check.run
    check.run = busy if wait == "busy" else (lambda args: time.sleep(30) or 0)  # type: ignore[assignment]
    try:
        start = time.monotonic()
        status, _ = fuzz.run_command(["check", "x.mcpl"], budget=0.2)
    finally:
        check.run = original
        stop.set()
    assert status is None and time.monotonic() - start < 10
    assert fuzz._failure(["check"], status, "") == fuzz.Outcome("hang", "check", "")


@pytest.mark.parametrize("end", ["abort", "segfault"])
def test_a_signal_is_a_failure_of_its_own_and_the_campaign_goes_on(end: str) -> None:
    """A command that dies of a signal (a driver's SIGSEGV, glibc's abort on a corrupted
    heap) runs in a child: the fuzzer reports it and carries on."""
    import os
    import signal

    from mcl.commands import check

    number = signal.SIGABRT if end == "abort" else signal.SIGSEGV
    original = check.run
    check.run = lambda args: os.kill(os.getpid(), number) or 0  # type: ignore[assignment]
    try:
        status, err = fuzz.run_command(["check", "x.mcpl"], budget=5)
    finally:
        check.run = original
    assert status == -number and signal.Signals(number).name in err
    assert fuzz._failure(["check"], status, err).kind == "signal"
    assert fuzz.run_command(["check", "--help"], budget=5)[0] == 0


def test_mutations_change_the_input_and_stay_reproducible() -> None:
    name, text = MCPL_SEEDS[0]
    first = fuzz.mutate(text, random.Random(3), fuzz.MCPL_TOKENS)
    assert first == fuzz.mutate(text, random.Random(3), fuzz.MCPL_TOKENS)
    assert any(fuzz.mutate(text, random.Random(s), fuzz.MCPL_TOKENS) != text for s in range(5))
