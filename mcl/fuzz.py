"""Fuzzing the toolchain (docs/reliability.md).

The promise under test: on any input, `mcl` prints diagnostics or results, never a
traceback or an "internal error" (exit status 2), and never hangs. Inputs are mutations of
the shipped kernels (`kernels/*/*.mcpl`, the MCPL library) and hardware descriptions
(`hwdescs/*.hdl`): tokens deleted, duplicated, swapped or replaced by tokens of the
grammars, identifiers renamed, hostile numbers (0, -1, 2^31, 1e99999) put in place of
numbers, and now and then a raw byte changed. Each MCPL input goes through `mcl check`;
one that passes goes on, with random `-D` values, through `check --level L` (translation
and performance feedback), `translate --to L` and `codegen --target LEAF`. Each HDL input
is loaded with `mcl hwd show` and `mcl hwd list`. Every command runs in a forked child
under a budget of CPU time; computing past it is a hang (a child starved by a busy
machine is not: only a far outer wall-clock limit stops one that waits for ever), dying
of a signal is a signal, failures like a crash.

The mutation functions take a `random.Random`, so the seeded test run
(`tests/fuzz/test_fuzz_short.py`, through Hypothesis) and the long run share them:

    python -m mcl.fuzz --mcpl 100000 --hdl 10000 --seed 1 [--budget 20] [--jobs 16]

prints one line per failure (with the input saved under --save) and a summary. Inputs are
numbered and seeded one by one (`make_input`): `--input N` fuzzes a failure line's input
alone, and `--jobs N` splits the campaign over N processes (mcl.fuzz_jobs) with one
summary of them all (docs/reliability.md, "Fuzzing").
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import functools
import importlib
import io
import json
import math
import os
import random
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mcl import fork_safety
from mcl.cpu_budget import cpu_seconds
from mcl.fuzz_jobs import Summary, run_jobs
from mcl.resources import hwdescs_dir, kernels_dir, mcpl_stdlib_dir

# Grammar tokens of MCPL (mcl/mcpl/mcpl.tx) and HDL (mcl/hdl/hdl.tx) that replacements
# and insertions draw on, so that mutations reach past the parser.
MCPL_TOKENS = (
    "foreach", "for", "if", "else", "barrier", "return", "const", "int", "float", "double",
    "bool", "byte", "void", "in", "as", "true", "false", "threads", "blocks", "warps",
    "vectors", "cores", "main", "global", "local", "shared", "reg", "dev", "perfect", "gpu",
    "hopper", "fermi", "(", ")", "{", "}", "[", "]", ",", ";", ".", "=", "+=", "-=", "*=",
    "/=", "++", "--", "<=>", "+", "-", "*", "/", "%", "^", "<<", ">>", "&&", "||", "!",
    "<", "<=", "==", "!=", "&", "|", "min", "max", "sqrt", "toInt", "toFloat",
)
HDL_TOKENS = (
    "hardware_description", "specializes", "parallelism", "hierarchy", "memory_space",
    "par_group", "par_unit", "max_nr_units", "nr_units", "default", "device", "memory",
    "cache", "interconnect", "execution_group", "execution_unit", "load_store_group",
    "load_store_unit", "connects", "latency", "bandwidth", "capacity", "space", "slots",
    "addressable", "cache_line_size", "atomic_interval", "clock_frequency", "width",
    "partial_write_bandwidth", "latency_knee",
    "performance_feedback",
    "true", "false", "cycles", "kB", "MB", "GB", "GB/s", "bit", "B", "MHz", "GHz", "*",
    "[*]", "{", "}", "(", ")", ";", ",", ".", "=", "+", "-", "/",
)
HOSTILE_NUMBERS = (
    "0", "1", "-1", "-5", "2", "31", "32", "2147483647", "2147483648", "4294967296",
    "99999999999999999999", "0.0", "1e99999", "1e-99999", "3.5", "0x0", "0xFFFFFFFF",
    "1" + "0" * 309, "9" * 4301,  # past a double; past Python's int-to-string limit
)
DEFINE_VALUES = (0, 1, 2, 3, 7, 31, 32, 33, 64, 100, 1000, 4096, -1)


@functools.cache
def levels() -> tuple[str, ...]:
    """Every bundled description, as the library lists them (a new leaf is fuzzed without a
    change here: docs/architecture.md, "Adding a leaf description")."""
    from mcl.hdl.library import default_library

    return tuple(default_library().names())


@functools.cache
def leaves() -> tuple[str, ...]:
    """The bundled descriptions code is generated from."""
    from mcl.hdl.library import default_library

    library = default_library()
    return tuple(n for n in library.names() if library.is_leaf(n))

_TOKEN = re.compile(
    r"//[^\n]*|/\*[\s\S]*?\*/|[A-Za-z_][A-Za-z0-9_]*|0[xX][0-9a-fA-F]+|"
    r"\d+\.?\d*(?:[eE][+-]?\d+)?|<=>|<<=|>>=|\+\+|--|&&|\|\||[-+*/%<>=!&|^]=?|\S"
)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")
_NUMBER = re.compile(r"\d")


# ----------------------------------------------------------------------------- inputs


def mcpl_seeds() -> list[tuple[str, str]]:
    """(file name, text) of every shipped kernel and MCPL library module."""
    paths = sorted(kernels_dir().glob("*/*.mcpl")) + sorted(mcpl_stdlib_dir().rglob("*.mcpl"))
    return [(p.name, p.read_text(encoding="utf-8")) for p in paths]


def hdl_seeds() -> list[tuple[str, str]]:
    return [(p.name, p.read_text(encoding="utf-8")) for p in sorted(hwdescs_dir().glob("*.hdl"))]


def _spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in _TOKEN.finditer(text) if not m.group().startswith(("//", "/*"))]


def mutate(text: str, rng: random.Random, grammar: tuple[str, ...]) -> str:
    """One to four mutations of `text` (see the module docstring)."""
    for _ in range(rng.randint(1, 4)):
        spans = _spans(text)
        if not spans:
            break
        a, b = spans[rng.randrange(len(spans))]
        word = text[a:b]
        kind = rng.choice(("delete", "duplicate", "swap", "replace", "insert", "rename",
                           "number", "byte"))
        if kind == "delete":
            text = text[:a] + text[b:]
        elif kind == "duplicate":
            text = text[:b] + " " + word + text[b:]
        elif kind == "swap":
            c, d = spans[rng.randrange(len(spans))]
            if b <= c:
                text = text[:a] + text[c:d] + text[b:c] + word + text[d:]
        elif kind == "replace":
            text = text[:a] + rng.choice(grammar) + text[b:]
        elif kind == "insert":
            text = text[:a] + rng.choice(grammar) + " " + text[a:]
        elif kind == "rename" and _IDENT.match(word):
            names = sorted({text[c:d] for c, d in spans if _IDENT.match(text[c:d])})
            new = rng.choice([*names, *grammar[:12], "x1"])
            text = re.sub(rf"\b{re.escape(word)}\b", new, text)
        elif kind == "number":
            numbers = [(c, d) for c, d in spans if _NUMBER.match(text[c:d])]
            if numbers:
                c, d = rng.choice(numbers)
                text = text[:c] + rng.choice(HOSTILE_NUMBERS) + text[d:]
        elif kind == "byte" and text:
            i = rng.randrange(len(text))
            text = text[:i] + chr(rng.randrange(1, 128)) + text[i + 1:]
    return text


def token_soup(rng: random.Random, grammar: tuple[str, ...], length: int) -> str:
    """A sequence of grammar tokens and small numbers: mostly a syntax error, but it
    exercises the parser's error reporting on unusual token orders."""
    words = [rng.choice(grammar) if rng.random() < 0.8 else rng.choice(HOSTILE_NUMBERS)
             for _ in range(length)]
    return " ".join(words)


# The classes of kernels an independent fuzzer found failures in (docs/reliability.md,
# "Round 3"): each template is a loop, expression or statement that used to crash an
# analysis, hang a stage, or pass `mcl check` silently. `generated_kernel` puts a few of
# them, with hostile numbers, in the body of a one-dimensional kernel
# `perfect void k(int n, int m, main float[n] a, main float[n] b)`, which
# GENERATED_REFERENCE can run.
_BOUNDS = ("i", "n", "m", "m - 100", "-5", "0", "1", "n - n", "toInt(toFloat(i) * 100.0)",
           "toInt(exp(toFloat(i)))", "n * m")
_STARTS = ("0", "1", "2", "3", "i", "m", "-1", "n")


def _loop(rng: random.Random, depth: int) -> str:
    var = f"k{depth}"
    start, bound = rng.choice(_STARTS), rng.choice(_BOUNDS)
    step = rng.choice((f"{var} *= 2", f"{var} *= 3", f"{var} /= 2", f"{var} >>= 1",
                       f"{var}++", f"{var} += 4", f"{var}--"))
    op = rng.choice(("<", "<=", ">", ">=", "!="))
    inner = _statement(rng, depth + 1) if depth < 2 and rng.random() < 0.5 else "s += b[i];"
    loop = f"for (int {var} = {start}; {var} {op} {bound}; {step}) {{ {inner} }}"
    return loop if _terminates(start, op, step) else f"{ENDLESS} {loop}"


# Marks a loop that may never end (`k = 0; k < n; k *= 2`): a program may loop forever,
# so such a kernel is checked and analysed but not run.
ENDLESS = "/* may not end */"


def _terminates(start: str, op: str, step: str) -> bool:
    if op in ("<", "<="):
        return step.endswith(("++", "+= 4")) or (step.endswith(("*= 2", "*= 3"))
                                                  and start in ("1", "2", "3"))
    return op in (">", ">=") and step.endswith("--")


def _power_chain(rng: random.Random) -> str:
    terms = rng.choice(("b[i]", "2.0", "toFloat(i)", "1.0001"))
    return "s += " + " ^ ".join([terms] * rng.randint(2, 300)) + ";"


def _if_nest(rng: random.Random) -> str:
    body = "s += b[i];"
    for level in range(rng.randint(1, 300)):
        body = f"if (i > {level}) {{ {body} }}"
    return body


def _for_nest(rng: random.Random) -> str:
    """Up to 300 nested loops of one iteration each: the analyses' time against the depth
    (once cubic), with a kernel that still runs quickly."""
    body = "s += b[i];"
    for level in range(rng.randint(1, 300)):
        body = f"for (int f{level} = 0; f{level} < 1; f{level}++) {{ {body} }}"
    return body


# Subscripts that name the index but give several units one element (write races).
_SHARED_SUBSCRIPTS = ("i * 0", "i % 1", "min(i, 0)", "i / (n + 1)", "i / 2", "i >> 1")
# Subscripts of another unit's element of `a`, which every unit writes at `a[i]` (read-write
# races), and of elements a local array may lack (never set, or past its end).
_OTHER_UNITS = ("(i + 1) % n", "n - 1 - i", "i")
_LOCAL_READS = ("0", "2", "3", "i % 4")
# Constant subscripts below 0 (out of range whatever n is).
_NEGATIVE_SUBSCRIPTS = ("-1", "3 - 5", "i - i - 1")


def _local_array(rng: random.Random, depth: int) -> str:
    """A local float[4] set in part (or past its end, `<= 4`) by a loop, then read."""
    var, end = f"o{depth}", rng.choice(("< 2", "< 4", "<= 4", "< 0"))
    return (f"float[4] w{depth}; for (int {var} = 0; {var} {end}; {var}++) "
            f"{{ w{depth}[{var}] = 1.0; }} s += w{depth}[{rng.choice(_LOCAL_READS)}];")


def _statement(rng: random.Random, depth: int = 0) -> str:
    number = rng.choice(HOSTILE_NUMBERS)
    return rng.choice((
        lambda: _loop(rng, depth),
        lambda: _power_chain(rng),
        lambda: _if_nest(rng),
        lambda: f"s += toFloat({number});",
        lambda: f"int q{depth} = {rng.choice(('100 % (0 / n)', 'i / (n - n)', '7 / 0'))}; "
                f"s += toFloat(q{depth});",
        lambda: f"byte c{depth} = {rng.choice(('300', '255', '-1', number))}; "
                f"s += toFloat(c{depth});",
        lambda: f"float[4] t{depth}; t{depth}[{rng.choice(('0', '3', '4', '-1'))}] = 1.0; "
                f"s += t{depth}[0];",
        lambda: f"float u{depth}; s += u{depth};",
        lambda: f"for (int e{depth}; e{depth} < n; e{depth}++) {{ s += 1.0; }}",
        lambda: f"a[{rng.choice(('0', 'i', 'i + 1', 'n', 'm', 'i * 2'))}] = s;",
        lambda: f"a[{rng.choice(_SHARED_SUBSCRIPTS)}] = s;",
        lambda: f"s += a[{rng.choice(_OTHER_UNITS)}];",
        lambda: _local_array(rng, depth),
        # an element read before the statement that sets it (or set first, which is fine)
        lambda: f"float[4] r{depth}; "
                + rng.choice((f"s += r{depth}[{rng.choice(_LOCAL_READS)}]; r{depth}[0] = 1.0;",
                              f"r{depth}[0] = 1.0; s += r{depth}[0];"))
                + f" r{depth}[1] = s;",
        lambda: f"s += b[{rng.choice(_NEGATIVE_SUBSCRIPTS)}];",
        lambda: _for_nest(rng),
        lambda: f"for (int d{depth} = 0; d{depth} < 4; d{depth}++) "
                f"{{ s += b[i] {rng.choice(('/', '%'))} d{depth}; }}",
        lambda: f"float[{rng.choice(('0', '2 - 5', 'n / (n - n)', '8'))}] v{depth}; "
                f"s += 1.0;",
        # a unit's own array larger than any leaf keeps for one unit (or not)
        lambda: f"float[{rng.choice(_OWN_SIZES)}] h{depth}; h{depth}[0] = s; "
                f"s += h{depth}[0];",
    ))()


# Sizes of a unit's own array: over every leaf's limit for one unit, over some, none.
_OWN_SIZES = ("2147483647", "1000000", "80000", "64")
# The count of the threads of a gpu kernel, from a scalar declared in its block (the
# original MCL programs' style): the host computes the launch from its initialiser.
_BLOCK_COUNTS = ("const int kk = n;", "int kk = n + 0;", "int h = n; int kk = h;")
# The levels and leaves a gpu kernel is taken to (the others lie on another branch).
GPU_LEVELS, GPU_LEAVES = ("gpu", "nvidia", "fermi", "hopper"), ("fermi", "hopper")


def generated_kernel(rng: random.Random) -> str:
    """A kernel made of the classes above (see the comment on _BOUNDS); now and then at
    gpu, its count of threads declared between the foreach levels."""
    body = "\n    ".join(_statement(rng) for _ in range(rng.randint(1, 4)))
    unit = "  foreach (int i in COUNT threads) {\n    float s = 0.0;\n    " + body \
        + "\n    a[i] = s;\n  }\n"
    if rng.random() < 0.15:
        return ("gpu void k(int n, int m, dev float[n] a, dev float[n] b) {\n"
                f"  foreach (int g in 1 blocks) {{\n    {rng.choice(_BLOCK_COUNTS)}\n"
                + unit.replace("COUNT", "kk") + "  }\n}\n")
    return ("perfect void k(int n, int m, main float[n] a, main float[n] b) {\n"
            + unit.replace("COUNT", "n") + "}\n")


# A reference for `generated_kernel`'s signature: `mcl run` needs inputs and outputs; the
# comparison itself may fail (the kernels compute anything), a crash or hang may not.
GENERATED_REFERENCE = """\
import numpy as np
FUNCTION = "k"
SIZES = {"n": 37, "m": 5}
OUTPUTS = ("a",)
TOLERANCE = {"rtol": 1e-5, "atol": 1e-5}
def inputs(sizes, rng):
    n = sizes["n"]
    return {"n": n, "m": sizes["m"], "a": np.zeros(n, np.float32),
            "b": rng.uniform(-1.0, 1.0, n).astype(np.float32)}
def reference(args):
    return {"a": np.zeros(args["n"], np.float32)}
"""


# ----------------------------------------------------------------------------- running


class Hang(BaseException):
    """Raised by the alarm inside a command that ran past its budget. A BaseException, so
    the CLI's last line of defence (`except Exception`) does not turn it into a status."""


@dataclass
class Outcome:
    # "ok" (went through every stage), "diagnostics" (stopped at check), "crash" (exit
    # status 2 or an escaped exception), "signal" (the process died of one: SIGSEGV in
    # an OpenCL driver, SIGABRT from a corrupted heap), "hang"
    kind: str
    stage: str = ""  # the command line that failed
    detail: str = ""


# A hang is judged on the child's CPU time alone: a command that computes past its budget
# of CPU seconds (the process's CPU limit, the profiling timer) has hung. A child starved
# of the CPU (`nice 19` beside other work: a command of 2 s took many times that of
# wall-clock time) uses little CPU for a long while and is no hang. The wall-clock limit,
# WALL_FACTOR times the budget, is only the far outer bound that stops a command that
# waits for ever without computing (a deadlock).
WALL_FACTOR = 30
PROGRESS_EVERY_S = 60.0  # a plain progress line on stderr (no terminal) this often
# A forked child that has used no CPU time after this many seconds never started.
STILLBORN_S = 10.0
# The pauses between looks at a running child: the first, doubled up to the last.
POLL_FIRST_S, POLL_LAST_S = 0.0005, 0.01


@contextlib.contextmanager
def _budget(seconds: float) -> Iterator[None]:
    def alarm(signum: int, frame: object) -> None:
        raise Hang

    previous = {sig: signal.signal(sig, alarm) for sig in (signal.SIGPROF, signal.SIGALRM)}
    signal.setitimer(signal.ITIMER_PROF, seconds)
    signal.setitimer(signal.ITIMER_REAL, seconds * WALL_FACTOR)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def run_command(argv: list[str], budget: float) -> tuple[int | None, str]:
    """Run `mcl ARGV` with its output captured: (status, stderr). The status is None when
    the command used more than `budget` seconds of CPU (or, waiting without computing,
    WALL_FACTOR times that of wall-clock time), minus the number of the signal that ended
    it, and 2 for an exception that escaped the CLI (which should catch them all).

    Each command runs in a child process: a signal (a driver's SIGSEGV) ends the child,
    not the campaign, and a command past its budget is killed, not left running in a
    thread beside the next one (a command runs on its own thread, `mcl.deep_stack`, which
    an alarm in the main thread cannot stop). The child is forked (it starts with what
    this process has imported), except for a command that may open an OpenCL device once
    a runtime has started here: a forked child has lost the runtime's threads and would
    wait for them for ever (`mcl.fork_safety`), so it starts afresh."""
    if not hasattr(os, "fork"):
        return _run_here(argv, budget)
    _warm()
    child = _Spawned(argv, budget) if _needs_fresh_process(argv) else _Forked(argv, budget)
    try:
        ended = _wait(child, budget)
        if ended is None:
            return None, (f"waited past the wall-clock limit of {budget * WALL_FACTOR:g} s "
                          "without using its CPU budget")
        if isinstance(ended, str):  # "stillborn"
            # No CPU time at all: the child is stuck on a lock that another thread of
            # this process held when it forked, not in the command. Run it here instead.
            return _run_here(argv, budget)
        data = child.report()
    finally:
        child.close()
    if ended < 0:
        # SIGKILL after the CPU budget is the hard CPU limit's (our own kills returned)
        if -ended == signal.SIGXCPU or (-ended == signal.SIGKILL and child.cpu_s > budget):
            return None, f"past {budget:g} s of CPU time"
        return ended, f"killed by {signal.Signals(-ended).name}"
    if not data:
        return 2, f"the command ended the process (exit status {ended})"
    status, err = json.loads(data)
    return status, err


# Commands that may open an OpenCL device (the others never load a runtime).
_DEVICE_COMMANDS = frozenset({"run", "profile", "tune", "hwd", "apply", "refine"})


def _needs_fresh_process(argv: list[str]) -> bool:
    return (bool(argv) and argv[0] in _DEVICE_COMMANDS and "--interp" not in argv
            and fork_safety.opencl_loaded())


def _child_main(argv: list[str], budget: float, report: int) -> None:
    """In a child: run `mcl ARGV` and write [status, stderr] to the file descriptor
    `report`; the command's own output, and what drivers print, goes nowhere."""
    # The alarm (`_budget`) stops Python code; the limit stops a child stuck in native
    # code (a driver, GMP inside SymPy), where no signal handler runs.
    cpu = math.ceil(budget) + 1
    # The soft limit's SIGXCPU ends the child only where it is neither blocked nor
    # handled, and a fork keeps the forking thread's mask and the parent's handlers (a
    # test runner's): otherwise the child runs on to the hard limit's SIGKILL.
    signal.signal(signal.SIGXCPU, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGXCPU})
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    faulthandler.disable()  # a test runner's: the signal is the parent's to report
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    status, err = _run_here(argv, budget)
    os.write(report, json.dumps([status, err[-4000:]]).encode())


class _Forked:
    """`mcl ARGV` in a forked child, which reports through a pipe."""

    def __init__(self, argv: list[str], budget: float) -> None:
        self.read, write = os.pipe()
        self.cpu_s = 0.0
        self.pid = os.fork()
        if self.pid == 0:  # the child: run, report through the pipe, never return
            code = 2
            try:
                os.close(self.read)
                _child_main(argv, budget, write)
                code = 0
            finally:
                os._exit(code)
        os.close(write)

    def poll(self) -> int | None:
        """None while it runs; then its exit status, or minus the signal that ended it
        (and `cpu_s`, the CPU seconds it used)."""
        done, status, usage = os.wait4(self.pid, os.WNOHANG)
        if not done:
            return None
        self.cpu_s = usage.ru_utime + usage.ru_stime
        return os.waitstatus_to_exitcode(status)

    def kill(self) -> None:
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)

    def report(self) -> bytes:
        with os.fdopen(self.read, "rb") as pipe:
            self.read = -1
            return pipe.read()

    def close(self) -> None:
        if self.read >= 0:
            os.close(self.read)
            self.read = -1


class _Spawned:
    """`mcl ARGV` in a new Python process (`_child_main` there), reporting on its stdout."""

    def __init__(self, argv: list[str], budget: float) -> None:
        code = ("import json, os, sys; from mcl.fuzz import _child_main; "
                "report = os.dup(1); _child_main(json.loads(sys.argv[1]), "
                "float(sys.argv[2]), report)")
        self.process = subprocess.Popen(
            [sys.executable, "-c", code, json.dumps(argv), repr(budget)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.pid = self.process.pid
        self.cpu_s = 0.0  # not known: Popen reaps the child without its resource usage

    def poll(self) -> int | None:
        return self.process.poll()

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()

    def report(self) -> bytes:
        assert self.process.stdout is not None
        return self.process.stdout.read()

    def close(self) -> None:
        if self.process.stdout is not None:
            self.process.stdout.close()


def _wait(child: _Forked | _Spawned, budget: float) -> int | str | None:
    """How `child` ended (as `_Forked.poll`), "stillborn" for a child that never started
    (killed), None for one killed at the wall-clock limit."""
    period = budget * WALL_FACTOR
    started = time.monotonic()
    deadline = started + period
    pause = POLL_FIRST_S
    while (ended := child.poll()) is None:
        if time.monotonic() - started > STILLBORN_S and cpu_seconds(child.pid) == 0.0:
            child.kill()
            return "stillborn"
        if time.monotonic() > deadline:
            child.kill()
            return None
        # Most commands end within milliseconds (a diagnostic): look again soon, then
        # less often (a fixed 10 ms pause was most of a short command's time).
        time.sleep(pause)
        pause = min(POLL_LAST_S, pause * 2)
    return ended


# Modules a command loads, imported before the first fork so that each child starts with
# them (importing them anew cost a child about a second).
_WARM = ("mcl.cli", "mcl.commands.check", "mcl.commands.translate", "mcl.commands.codegen",
         "mcl.commands.run", "mcl.commands.hwd", "mcl.feedback.registry", "sympy", "numpy")


_warmed: list[bool] = []


def _warm(kinds: Sequence[str] = ("mcpl", "hdl")) -> None:
    """Import what commands load and build the grammars once, in this process: run the
    usual commands on inputs of `kinds` here first, on shipped files and on inputs with
    errors (most mutated inputs end in a diagnostic, whose rendering each child imported
    anew: a forked `check` of a syntax error took 148.5 ms, 22.0 ms after this on the
    2-core machine, benchmarks/bench_fuzz_cost.py)."""
    if _warmed:
        return
    _warmed.append(True)
    for name in _WARM:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    with tempfile.TemporaryDirectory(prefix="mcl-fuzz-warm-") as tmp:
        folder = Path(tmp)
        commands = _warm_mcpl(folder) if "mcpl" in kinds else []
        if "hdl" in kinds:
            hwd = folder / "hwd"
            hwd.mkdir()
            (hwd / "broken.hdl").write_text("hardware_description broken {", encoding="utf-8")
            commands += [["hwd", "show", "broken", "--hwd-path", str(hwd)],
                         ["hwd", "show", "hopper"], ["hwd", "list", "--hwd-path", str(hwd)]]
        for argv in commands:
            _run_here(argv, 60.0)


def _warm_mcpl(folder: Path) -> list[list[str]]:
    """The commands that warm the MCPL stages: a clean and a failing check, feedback at
    gpu and at hopper, translate, codegen."""
    broken, unknown = folder / "broken.mcpl", folder / "unknown.mcpl"
    broken.write_text("perfect void k(int n {", encoding="utf-8")
    unknown.write_text("perfect void k(int n, main float[n] a) {\n"
                       "  foreach (int i in n threads) { a[i] = q; }\n}\n", encoding="utf-8")
    commands = [["check", "--no-feedback", "--format", "json", str(broken)],
                ["check", "--no-feedback", "--format", "json", str(unknown)],
                ["check", "--no-feedback", str(unknown)]]
    seeds = sorted(kernels_dir().glob("*/perfect.mcpl"))
    if seeds:
        seed = str(seeds[0])
        commands += [["check", "--no-feedback", seed],
                     ["check", "--level", "gpu", "--format", "json", seed],
                     ["check", "--level", "hopper", "--format", "json", seed],
                     ["translate", "--to", "gpu", seed],
                     ["codegen", "--target", "fermi", "-o", str(folder / "out"), seed]]
    return commands


def _run_here(argv: list[str], budget: float) -> tuple[int | None, str]:
    """`mcl ARGV` in this process under `budget` seconds of CPU time."""
    from mcl.cli import main

    err = io.StringIO()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err), \
                _budget(budget):
            status = main(argv)
    except Hang:
        return None, err.getvalue()
    except SystemExit as exc:  # argparse on a malformed command line
        return int(exc.code or 0), err.getvalue()
    except Exception as exc:  # noqa: BLE001 - reported as a crash, with its type
        return 2, f"{err.getvalue()}{type(exc).__name__}: {exc}"
    return status, err.getvalue()


FAILURES = ("crash", "signal", "hang")


def _failure(argv: list[str], status: int | None, err: str) -> Outcome | None:
    if status is None:
        return Outcome("hang", " ".join(argv), err[-500:])
    if status < 0:
        return Outcome("signal", " ".join(argv), err[-2000:])
    if status not in (0, 1):
        return Outcome("crash", " ".join(argv), err[-2000:])
    return None


def _int_params(text: str) -> list[str]:
    return sorted(set(re.findall(r"\bint\s+([A-Za-z_][A-Za-z0-9_]*)\s*[,)]", text)))


def run_mcpl(text: str, name: str, rng: random.Random, budget: float, folder: Path,
             deep: bool = True) -> Outcome:
    """Check one MCPL input; if it passes and `deep`, also feedback at a random level with
    random values, translation and code generation."""
    path = folder / name
    path.write_text(text, encoding="utf-8", errors="replace")
    argv = ["check", "--no-feedback", "--format", "json", str(path)]
    status, err = run_command(argv, budget)
    failure = _failure(argv, status, err)
    if failure is not None or status != 0 or not deep:
        return failure or Outcome("ok" if status == 0 else "diagnostics")
    defines = [a for p in _int_params(text)[:5] for a in ("-D", f"{p}={rng.choice(DEFINE_VALUES)}")]
    level, leaf = rng.choice(levels()), rng.choice(leaves())
    for argv in (
        ["check", "--level", level, "--format", "json", *defines, str(path)],
        ["translate", "--to", level, str(path)],
        ["codegen", "--target", leaf, "-o", str(folder / "out"), str(path)],
    ):
        status, err = run_command(argv, budget)
        failure = _failure(argv, status, err)
        if failure is not None:
            return failure
    return Outcome("ok")


def run_generated(text: str, rng: random.Random, budget: float, folder: Path,
                  execute: float) -> Outcome:
    """A `generated_kernel` through check (with feedback at a random level), and, when it
    passes and with probability `execute`, translate, codegen and `mcl run` with the
    interpreter or on the default OpenCL device (PoCL in CI)."""
    path = folder / "generated.mcpl"
    path.write_text(text, encoding="utf-8")
    (folder / "reference.py").write_text(GENERATED_REFERENCE, encoding="utf-8")
    sizes = ["-D", f"n={rng.choice(DEFINE_VALUES[1:])}", "-D", f"m={rng.choice(DEFINE_VALUES)}"]
    gpu = text.startswith("gpu")
    level, leaf = rng.choice(GPU_LEVELS if gpu else levels()), rng.choice(
        GPU_LEAVES if gpu else leaves())
    argv = ["check", "--level", level, "--format", "json", *sizes, str(path)]
    status, err = run_command(argv, budget)
    failure = _failure(argv, status, err)
    if failure is not None or status != 0 or rng.random() >= execute or ENDLESS in text:
        return failure or Outcome("ok" if status == 0 else "diagnostics")
    run_sizes = ["-D", f"n={rng.choice((1, 2, 7, 37, 100))}", "-D", f"m={rng.choice((0, 1, 5, 9))}"]
    runs = (["run", "--interp", *run_sizes, str(path)],
            ["run", "--target", rng.choice(GPU_LEAVES[:1] if gpu else ("fermi", "x86_avx512")),
             *run_sizes, str(path)])
    for argv in (["translate", "--to", level, str(path)],
                 ["codegen", "--target", leaf, "-o", str(folder / "out"), str(path)],
                 rng.choice(runs)):
        status, err = run_command(argv, budget)
        failure = _failure(argv, status, err)
        if failure is not None:
            return failure
    return Outcome("ok")


def run_hdl(text: str, name: str, budget: float, folder: Path) -> Outcome:
    """Load one HDL input as a user description and show it."""
    hwd = folder / "hwd"
    hwd.mkdir(exist_ok=True)
    for old in hwd.glob("*.hdl"):
        old.unlink()
    found = re.search(r"hardware_description\s+([A-Za-z_][A-Za-z0-9_]*)", text)
    described = found.group(1) if found else Path(name).stem
    (hwd / f"{described}.hdl").write_text(text, encoding="utf-8", errors="replace")
    for argv in (["hwd", "show", described, "--hwd-path", str(hwd)],
                 ["hwd", "list", "--hwd-path", str(hwd)]):
        status, err = run_command(argv, budget)
        failure = _failure(argv, status, err)
        if failure is not None:
            return failure
    return Outcome("ok")


# ----------------------------------------------------------------------------- long run


@dataclass
class Tally:
    inputs: Counter[str] = field(default_factory=Counter)
    failures: list[tuple[str, Outcome, Path | None]] = field(default_factory=list)


@dataclass(frozen=True)
class Input:
    """Input `number` of a campaign: its file name, its text, and the generator that
    made it, which the commands go on drawing their choices (levels, `-D` values) from."""

    number: int
    name: str
    text: str
    generated: bool
    rng: random.Random


def make_input(kind: str, seed: int, number: int, generated_fraction: float = 0.0) -> Input:
    """Input `number` of the campaign of `kind` and `seed`. Each input has a generator of
    its own, seeded by the seed and its number: input N is made without making those
    before it (`--input N` reproduces a failure line's input), whatever the earlier
    inputs' outcomes, and campaigns split over processes (`--jobs`) fuzz the same inputs
    as one process would."""
    rng = random.Random(f"{kind}-{seed}-{number}")
    name, text = rng.choice(_seeds(kind))
    grammar = MCPL_TOKENS if kind == "mcpl" else HDL_TOKENS
    generated = kind == "mcpl" and rng.random() < generated_fraction
    if generated:
        name, text = "generated.mcpl", generated_kernel(rng)
    elif rng.random() < 0.05:
        text = token_soup(rng, grammar, rng.randint(1, 40))
    else:
        text = mutate(text, rng, grammar)
    return Input(number, name, text, generated, rng)


@functools.cache
def _seeds(kind: str) -> tuple[tuple[str, str], ...]:
    return tuple(mcpl_seeds() if kind == "mcpl" else hdl_seeds())


@dataclass(frozen=True)
class CampaignOptions:
    """What a campaign runs each input with (the command line's options)."""

    budget: float
    save: Path | None
    deep_fraction: float = 0.3
    generated_fraction: float = 0.0
    execute: float = 0.0


def run_input(kind: str, made: Input, settings: CampaignOptions, folder: Path) -> Outcome:
    """Input `made` through the commands of its kind."""
    if made.generated:
        return run_generated(made.text, made.rng, settings.budget, folder, settings.execute)
    if kind == "mcpl":
        return run_mcpl(made.text, made.name, made.rng, settings.budget, folder,
                        made.rng.random() < settings.deep_fraction)
    return run_hdl(made.text, made.name, settings.budget, folder)


def campaign(kind: str, numbers: Sequence[int], seed: int, settings: CampaignOptions,
             report: Callable[[str], None], tally: Tally, deadline: float | None = None,
             step: Callable[[str], None] | None = None) -> None:
    """Fuzz the inputs `numbers` of `kind` ("mcpl" or "hdl") and `seed` (`make_input`);
    a share `settings.generated_fraction` of the MCPL inputs are `generated_kernel`s, of
    which a share `settings.execute` that pass check also run (`run_generated`).
    `step(label)` is told as each input starts."""
    with tempfile.TemporaryDirectory(prefix="mcl-fuzz-") as tmp:
        folder = Path(tmp)
        for done, i in enumerate(numbers):
            if deadline is not None and time.monotonic() > deadline:
                report(f"{kind}: stopped at the time limit after {done} inputs")
                break
            if step is not None:
                step(f"{kind} input {i} ({done + 1} of {len(numbers)}), "
                     f"{len(tally.failures)} failures")
            made = make_input(kind, seed, i, settings.generated_fraction)
            outcome = run_input(kind, made, settings, folder)
            tally.inputs[kind] += 1
            tally.inputs[f"{kind} {outcome.kind}"] += 1
            if outcome.kind in FAILURES or len(numbers) == 1:
                _record(kind, seed, made, outcome, settings.save, report, tally)
            if (done + 1) % 1000 == 0:
                report(f"{kind}: {done + 1} inputs, {len(tally.failures)} failures so far")


def _record(kind: str, seed: int, made: Input, outcome: Outcome, save: Path | None,
            report: Callable[[str], None], tally: Tally) -> None:
    """Report a failing input (or the one input asked for) and save its text."""
    kept = None
    if save is not None:
        save.mkdir(parents=True, exist_ok=True)
        kept = save / f"{kind}-{seed}-{made.number}-{made.name}"
        kept.write_text(made.text, encoding="utf-8", errors="replace")
    if outcome.kind in FAILURES:
        tally.failures.append((kind, outcome, kept))
    last = outcome.detail.strip().splitlines()[-1] if outcome.detail.strip() else ""
    stage = f" in `mcl {outcome.stage}`" if outcome.stage else ""
    report(f"{outcome.kind.upper()} {kind} #{made.number} ({made.name}){stage}"
           f"{' saved as ' + str(kept) if kept else ''}{': ' + last if last else ''}")


def _shard(text: str) -> tuple[int, int]:
    """`J/N` (job J of N, counted from 0) of `--shard`."""
    index, _, total = text.partition("/")
    job, jobs = int(index), int(total)
    if not 0 <= job < jobs:
        raise argparse.ArgumentTypeError(f"expected J/N with 0 <= J < N, got {text!r}")
    return job, jobs


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m mcl.fuzz", description=__doc__.split(
        "\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mcpl", type=int, default=1000, help="MCPL inputs (default 1000)")
    parser.add_argument("--hdl", type=int, default=100, help="HDL inputs (default 100)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--budget", type=float, default=20.0,
                        help="CPU seconds one command may take before it counts as a hang "
                        f"(a command that waits: {WALL_FACTOR} times that of wall-clock "
                        "time)")
    parser.add_argument("--deep-fraction", type=float, default=0.3,
                        help="share of MCPL inputs that pass `check` which also go through "
                        "feedback, translation and codegen (default 0.3)")
    parser.add_argument("--generated", type=float, default=0.3,
                        help="share of MCPL inputs generated from the classes of round 3 "
                        "(doubling loops, ^ chains, deep if nests, ...) instead of mutated "
                        "(default 0.3)")
    parser.add_argument("--execute", type=float, default=0.05,
                        help="share of generated inputs that pass check which also go "
                        "through translate, codegen and `mcl run` (--interp or --target "
                        "on the default OpenCL device; default 0.05)")
    parser.add_argument("--minutes", type=float, default=None,
                        help="stop each campaign after this many minutes (with --jobs: "
                        "the whole run)")
    parser.add_argument("--save", type=Path, default=Path("fuzz-failures"),
                        help="folder for the inputs that failed")
    parser.add_argument("--input", type=int, default=None, metavar="N",
                        help="fuzz only input N of the seed (the number of a failure "
                        "line), report its outcome and save its text under --save")
    parser.add_argument("--jobs", type=int, default=1,
                        help="run the campaign in this many processes, each on its share "
                        "of the inputs, and print one summary of them all (default 1)")
    parser.add_argument("--summary", type=Path, default=None,
                        help="also write the summary as JSON to this file")
    parser.add_argument("--shard", type=_shard, default=(0, 1), help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.jobs > 1 and args.input is None:
        return run_jobs(_job_lines(args), args.summary, _headline(args))
    settings = CampaignOptions(args.budget, args.save, args.deep_fraction, args.generated,
                        args.execute)
    tally = Tally()
    start = time.monotonic()

    def report(line: str) -> None:
        print(f"[{time.monotonic() - start:8.0f} s] {line}", flush=True)

    from mcl.progress import Progress

    job, jobs = args.shard
    counts = {"hdl": args.hdl, "mcpl": args.mcpl}
    numbers = {kind: [args.input] if args.input is not None else range(job, count, jobs)
               for kind, count in counts.items() if count}
    # Progress on stderr where it is no terminal: a line a minute (the report on stdout
    # has a line a thousand inputs, which can be an hour apart). No bar on a terminal:
    # its refresh thread would be running when each child forks (mcl.fork_safety).
    cpu: dict[str, float] = {}
    began, used = time.monotonic(), _cpu_used()
    _warm(tuple(numbers))  # the stages of the kinds fuzzed here; in the first one's time
    with Progress("fuzz", sum(len(n) for n in numbers.values()), every_s=PROGRESS_EVERY_S,
                  bar=False) as progress:
        for kind, chosen in numbers.items():
            deadline = began + args.minutes * 60 if args.minutes else None
            campaign(kind, chosen, args.seed, settings, report, tally, deadline,
                     progress.step)
            cpu[kind] = cpu.get(kind, 0.0) + _cpu_used() - used
            began, used = time.monotonic(), _cpu_used()
    summary = Summary(Counter(tally.inputs), [
        {"kind": kind, "outcome": o.kind, "stage": o.stage, "detail": o.detail[-500:],
         "saved": str(kept or "")} for kind, o, kept in tally.failures],
        time.monotonic() - start, cpu=cpu)
    print(summary.line(_headline(args)), flush=True)
    if args.summary is not None:
        summary.write(args.summary)
    return 1 if tally.failures else 0


def _cpu_used() -> float:
    """CPU seconds of this process and of the children it has waited for."""
    own, children = (resource.getrusage(who) for who in
                     (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _headline(args: argparse.Namespace) -> str:
    jobs = f", {args.jobs} jobs" if args.jobs > 1 else ""
    return f"seed {args.seed}, budget {args.budget:g} s{jobs}"


def _job_lines(args: argparse.Namespace) -> list[list[str]]:
    """The command lines of `--jobs` processes: the HDL inputs (each a `hwd show` and a
    `hwd list`, quick) to one job in eight, the MCPL inputs to the others, each job
    every N-th input of its kind, with the options given."""
    hdl_jobs = 0 if not args.hdl else args.jobs if not args.mcpl else max(1, args.jobs // 8)
    mcpl_jobs = args.jobs - hdl_jobs
    common = ["--seed", str(args.seed), "--budget", repr(args.budget),
              "--deep-fraction", repr(args.deep_fraction), "--generated", repr(args.generated),
              "--execute", repr(args.execute), "--save", str(args.save)]
    if args.minutes:
        common += ["--minutes", repr(args.minutes)]
    lines = [["--mcpl", str(args.mcpl), "--hdl", "0", "--shard", f"{j}/{mcpl_jobs}"]
             for j in range(mcpl_jobs)]
    lines += [["--mcpl", "0", "--hdl", str(args.hdl), "--shard", f"{j}/{hdl_jobs}"]
              for j in range(hdl_jobs)]
    return [[sys.executable, "-m", "mcl.fuzz", *line, *common] for line in lines]


if __name__ == "__main__":
    sys.exit(main())
