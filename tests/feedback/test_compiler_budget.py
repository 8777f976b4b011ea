"""Each compiler call the feedback's figures come from (NVRTC for the register count and
the machine code per line, `nvdisasm` for its listing) runs under a budget of CPU time
(mcl.feedback.compiler_budget, mcl.cpu_budget); past it the figure is the estimate and
says that the compiler's figure was not analysed, and why — never a hang (a generated
loop nest 300 deep kept NVRTC busy for seconds: docs/reliability.md, "Fuzzing")."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcl import cpu_budget
from mcl.backends.cuda import line_instructions
from mcl.backends.cuda import registers as compiled
from mcl.cli import main
from mcl.diagnostics import MclError, error

ROOT = Path(__file__).resolve().parents[2]
MATMUL = ROOT / "kernels" / "matmul" / "hopper_v1.mcpl"
SIZES = ["-D", "n=1024", "-D", "m=1024", "-D", "p=1024"]


@pytest.fixture(autouse=True)
def nothing_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A disk cache of the test's own, and no compile kept in the process from before."""
    monkeypatch.setenv("MCL_CACHE_DIR", str(tmp_path / "cache"))
    for store in (compiled._memory, compiled._cubins, compiled._past_budget,
                  line_instructions._memory):
        store.clear()


def _spin() -> bytes:
    end = time.monotonic() + 60
    while time.monotonic() < end:
        pass
    return b""


def test_a_step_gives_its_result_and_its_error() -> None:
    assert cpu_budget.run_within(lambda: b"cubin", 5.0) == b"cubin"
    failed = MclError(error("cuda-build", "NVRTC rejected it", hint="a bug"))

    def fails() -> bytes:
        raise failed
    with pytest.raises(MclError) as raised:
        cpu_budget.run_within(fails, 5.0)
    assert raised.value.diagnostics == failed.diagnostics


def test_a_step_past_its_budget_is_stopped() -> None:
    started = time.monotonic()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with pytest.raises(cpu_budget.PastBudget) as raised:
        cpu_budget.run_within(_spin, 0.3)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    assert raised.value.seconds == 0.3
    assert used < 1.5  # stopped near its budget, long before the minute it would spin
    assert time.monotonic() - started < 0.3 * cpu_budget.WALL_FACTOR + 5


def test_a_step_that_waits_is_stopped_at_the_wall_clock_limit() -> None:
    started = time.monotonic()
    with pytest.raises(cpu_budget.PastBudget):
        cpu_budget.run_within(lambda: time.sleep(60), 0.2)
    assert time.monotonic() - started < 0.2 * cpu_budget.WALL_FACTOR + 5


def test_a_step_that_crashes_ends_its_child_only() -> None:
    with pytest.raises(cpu_budget.StepFailed, match="SIGABRT"):
        cpu_budget.run_within(os.abort, 5.0)


def test_a_compile_past_its_budget_leaves_the_estimate_that_says_so(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """NVRTC that would compute for a minute: the check ends soon after the budget; the
    occupancy states the register estimate, the time estimate issues no machine code,
    each saying the compiler's figure was not analysed; one wait, not one per figure."""
    monkeypatch.setenv("MCL_COMPILE_BUDGET", "1")
    monkeypatch.setattr("mcl.backends.cuda.nvrtc.compile_cuda",
                        lambda *args, **kwargs: _spin())
    started = time.monotonic()
    assert main(["check", str(MATMUL), "--level", "hopper", "-v", *SIZES]) == 0
    assert time.monotonic() - started < 40
    out = " ".join(capsys.readouterr().out.split())
    assert "the compiler's count not analysed: NVRTC ran past its budget of 1 s of CPU " \
        "time" in out
    assert "the compiler's instructions not analysed: NVRTC ran past its budget of 1 s" in out
    assert "an estimate that limits nothing" in out
    assert "the compiler's count)" not in out
    assert len(compiled._past_budget) == 1


def test_a_listing_past_its_budget_says_so(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """An `nvdisasm` that never ends (a script that spins): stopped by the CPU limit its
    child's budget hands it; the registers still come from the compile."""
    tool = tmp_path / "nvdisasm"
    tool.write_text("#!/bin/sh\nwhile :; do :; done\n", encoding="utf-8")
    tool.chmod(0o755)
    monkeypatch.setattr(line_instructions, "_nvdisasm", lambda: str(tool))
    # NVRTC's compile of this kernel takes a tenth of that budget
    monkeypatch.setenv("MCL_COMPILE_BUDGET", "2")
    started = time.monotonic()
    assert main(["check", str(MATMUL), "--level", "hopper", "-v", *SIZES]) == 0
    assert time.monotonic() - started < 60
    out = " ".join(capsys.readouterr().out.split())
    assert "the compiler's instructions not analysed: nvdisasm ran past its budget of " \
        "2 s of CPU time" in out
    assert "registers per thread, the compiler's count" in out


def _nest(depth: int, name: str) -> str:
    body = "s += b[i];"
    for level in range(depth):
        body = f"for (int {name}{level} = 0; {name}{level} < 1; {name}{level}++) {{ {body} }}"
    return body


def test_a_deep_generated_nest_checks_within_the_fuzzer_s_budget(tmp_path: Path) -> None:
    """The fuzzer's hang class (two nests of about 250 loops, `python -m mcl.fuzz`'s
    `_for_nest`): `check --level hopper` within 10 s of CPU time, its own and its
    compiler's children's (the fuzzer's budget per command), with NVRTC past a budget
    of 0.05 s: not analysed."""
    path = tmp_path / "nest.mcpl"
    path.write_text("perfect void k(int n, int m, main float[n] a, main float[n] b) {\n"
                    "  foreach (int i in n threads) {\n    float s = 0.0;\n    "
                    f"{_nest(250, 'f')}\n    {_nest(250, 'g')}\n    a[i] = s;\n  }}\n}}\n",
                    encoding="utf-8")
    code = ("import resource, sys; from mcl.cli import main; status = main(sys.argv[1:]); "
            "u = resource.getrusage(resource.RUSAGE_SELF); "
            "c = resource.getrusage(resource.RUSAGE_CHILDREN); "
            "print('CPU', u.ru_utime + u.ru_stime + c.ru_utime + c.ru_stime); "
            "sys.exit(status)")
    env = {**os.environ, "MCL_COMPILE_BUDGET": "0.05"}
    done = subprocess.run([sys.executable, "-c", code, "check", "--level", "hopper", "-v",
                           "-D", "n=4096", "-D", "m=3", str(path)], capture_output=True,
                          text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    out = " ".join(done.stdout.split())
    assert "the compiler's count not analysed: NVRTC ran past its budget of 0.05 s" in out
    cpu = float(done.stdout.rsplit("CPU", 1)[1])
    assert cpu < 10.0, cpu


def test_check_without_feedback_calls_no_compiler(monkeypatch: pytest.MonkeyPatch) -> None:
    """`mcl check` compiles only for the feedback's figures (the registers, the machine
    code): without feedback, or at a level without a CUDA mapping, it calls none."""
    def no_compiler(*args: object, **kwargs: object) -> bytes:
        raise AssertionError("compiled")
    monkeypatch.setattr(compiled, "run_within", no_compiler)
    monkeypatch.setattr(line_instructions, "run_within", no_compiler)
    assert main(["check", str(MATMUL), "--no-feedback", *SIZES]) == 0
    assert main(["check", str(ROOT / "kernels" / "matmul" / "perfect.mcpl"), "--level", "gpu",
                 "-D", "n=64", "-D", "m=64", "-D", "p=64"]) == 0
