"""A step that may run long in native code (NVIDIA's compiler, its disassembler) under a
budget of CPU time, past which it is stopped and its caller told so.

A native call cannot be interrupted from Python (no signal handler runs until it
returns), and NVRTC on a generated loop nest 300 deep took seconds (docs/reliability.md,
"Fuzzing"). So the step runs in a forked child: the child starts with what this process
has loaded (no import, no second compiler start-up), runs the step and sends its result
or its exception back through a pipe; the parent stops it once it has used more than the
budget of CPU time (read from /proc while it runs, and from its resource usage once it
has ended, so a step that finished past the budget counts as past it too: the verdict
does not depend on how often the parent looked), or has waited `WALL_FACTOR` times the
budget of wall-clock time (a child starved by a busy machine computes slowly and is not
past its budget until then). The CPU clock, not the wall clock, so that a loaded machine
gives the same result.

Where a process cannot fork (not POSIX), the step runs in the process without a budget.
"""

from __future__ import annotations

import faulthandler
import math
import os
import pickle
import resource
import select
import signal
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# A child waiting without computing (a machine too busy to give it the CPU) is stopped
# only after this many times its budget of wall-clock time.
WALL_FACTOR = 10
_POLL_S = 0.01
# How a child ends past its budget: stopped here (SIGKILL), or by the CPU limit's signals.
_STOPPED = frozenset({-signal.SIGKILL, -signal.SIGXCPU})


class PastBudget(Exception):
    """The step used more than its budget of CPU time (or waited `WALL_FACTOR` times that
    of wall-clock time) and was stopped."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(f"past its budget of {seconds:g} s of CPU time")


class StepFailed(RuntimeError):
    """The step's child ended without a result: killed by a signal (a crash in native
    code ends the child, not this process), or with an exception that does not pickle
    (its text here)."""


def run_within(work: Callable[[], T], seconds: float) -> T:
    """`work()`'s result, computed in a forked child within `seconds` of CPU time; its
    exception re-raised here (one that cannot be pickled as StepFailed with its text);
    PastBudget where it ran past the budget."""
    if not hasattr(os, "fork"):
        return work()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read)
        _child(work, seconds, write)
    os.close(write)
    try:
        data, cpu_s, status = _collect(pid, read, seconds)
    finally:
        os.close(read)
    if cpu_s > seconds or status in _STOPPED:
        raise PastBudget(seconds)
    if status < 0:  # a crash in native code ends the child, not this process
        raise StepFailed(f"the step was killed by {signal.Signals(-status).name}")
    if not data:
        raise StepFailed(f"the step ended without a result (exit status {status})")
    ok, value = pickle.loads(data)
    if ok:
        return value
    raise value


def _child(work: Callable[[], object], seconds: float, write: int) -> None:
    """Run `work` under the process's CPU limit (a backstop: the parent stops the child
    first) and write (ok, result or exception) to `write`; exit."""
    code = 1
    try:
        faulthandler.disable()  # a crash is the parent's to report (StepFailed)
        limit = math.ceil(seconds) + 1
        signal.signal(signal.SIGXCPU, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGXCPU})
        soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
        if hard == resource.RLIM_INFINITY or hard > limit + 1:
            resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 1))
        try:
            answer = (True, work())
        except Exception as exc:  # noqa: BLE001 - handed back to the parent
            answer = (False, exc)
        try:
            data = pickle.dumps(answer)
        except Exception:  # noqa: BLE001 - an exception that does not pickle
            data = pickle.dumps((False, StepFailed(str(answer[1]))))
        view = memoryview(data)
        while view:
            view = view[os.write(write, view):]
        code = 0
    finally:
        os._exit(code)


def _collect(pid: int, read: int, seconds: float) -> tuple[bytes, float, int]:
    """The child's output, the CPU seconds it used, and its exit status (minus the signal
    that ended it: SIGKILL where this process stopped it)."""
    chunks: list[bytes] = []
    deadline = time.monotonic() + seconds * WALL_FACTOR
    poller = select.poll()
    poller.register(read, select.POLLIN | select.POLLHUP)
    while True:
        if poller.poll(_POLL_S * 1000):
            chunk = os.read(read, 1 << 20)
            if not chunk:
                break  # the child closed the pipe: it has ended, or is about to
            chunks.append(chunk)
            continue
        used = cpu_seconds(pid)
        if (used is not None and used > seconds) or time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            _, _, usage = os.wait4(pid, 0)
            return b"", usage.ru_utime + usage.ru_stime, -signal.SIGKILL
    _, status, usage = os.wait4(pid, 0)
    return b"".join(chunks), usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status)


def cpu_seconds(pid: int) -> float | None:
    """CPU time a running child has used (Linux's /proc), or None where unknown."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None
