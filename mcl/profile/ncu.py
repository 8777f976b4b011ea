"""Running a kernel under Nsight Compute (`ncu`, from the user's CUDA toolkit).

ncu wraps a `python -m mcl run FILE --target LEAF --backend cuda` process: the same
generated CUDA, built by NVRTC and launched once through the driver API as `mcl run`
does, so what is measured is what `mcl run` runs. ncu writes its report to a file
(`-o`), which a second ncu call turns into CSV (`--import --csv --page raw
--print-units base`): ncu's notes and the program's output never mix with the table.
ncu replays each kernel once per pass, flushing the caches before each (its default
`--cache-control all`), so device-memory traffic is the kernel's own.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from mcl.diagnostics import MclError, error
from mcl.profile.counters import METRICS, Pages

# The backends' name for Nsight Compute (`Backend.profiler`, mcl.codegen.backend).
PROFILER = "ncu"
# Where CUDA toolkits put ncu when it is not on PATH.
TOOLKIT_PLACES = ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu")
PERMISSION_CODE = "ERR_NVGPUCTRPERM"


def find_ncu(explicit: str | None) -> str:
    """The ncu executable: `--ncu PATH`, else ncu on PATH, else the toolkit's place."""
    if explicit:
        if Path(explicit).is_file() and os.access(explicit, os.X_OK):
            return explicit
        raise MclError(error("profile-ncu", f"--ncu {explicit}: no executable file there",
                             None, hint="give the path of Nsight Compute's `ncu`"))
    found = shutil.which("ncu")
    if found:
        return found
    for place in TOOLKIT_PLACES:
        if Path(place).is_file():
            return place
    raise MclError(error(
        "profile-ncu", "Nsight Compute (`ncu`) was not found on PATH", None,
        hint="install the CUDA toolkit (it ships ncu) or name it with --ncu PATH"))


def profiled_backend() -> str:
    """The name of the backend whose kernels Nsight Compute profiles (its `profiler`)."""
    from mcl.backends import backend_names, get_backend

    for name in backend_names():
        if get_backend(name).profiler == PROFILER:
            return name
    raise MclError(error("profile-ncu", "no backend's kernels are profiled by Nsight "
                         "Compute", None, hint="install mcl with its CUDA backend"))


def run_command(file: str, leaf: str, function: str, defines: Sequence[str],
                include_dirs: Sequence[str], hwd_paths: Sequence[str]) -> list[str]:
    """The `mcl run` that ncu profiles: as written (no .tuned.toml), since the feedback
    it is compared with is that of the kernel as written."""
    argv = [sys.executable, "-m", "mcl", "run", file, "--target", leaf, "--backend",
            profiled_backend(),
            "--no-tuned", "--function", function]
    for d in defines:
        argv += ["-D", d]
    for i in include_dirs:
        argv += ["-I", i]
    for h in hwd_paths:
        argv += ["--hwd-path", h]
    return argv


# Nsight Compute's `--clock-control`: `base` (its default) locks the SM clock to base
# for the whole profile, so that every replay pass runs at the same clock; `none` lets it
# boost as a free-running `mcl run` does. `mcl profile` reads the clock the kernel ran at
# from its counters either way (mcl.profile.counters.sm_clock_hz).
CLOCK_CONTROLS = ("base", "none")


def profile(ncu: str, run_argv: Sequence[str], report: Path, timeout: float = 600,
            clock_control: str = "base") -> Pages:
    """Profile `run_argv` into `report` (.ncu-rep) and return its CSV pages."""
    collect = [ncu, "--metrics", ",".join(METRICS), "--section", "SourceCounters",
               "--target-processes", "all", "--clock-control", clock_control,
               "--force-overwrite", "--export", str(report), *run_argv]
    env = dict(os.environ)
    # The child imports the same mcl as this process, also from a source checkout.
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    # ncu serialises launches: a stream held until the launch returns would never run
    # (mcl.backends.cuda.runner.launch_gate_wanted); ncu times the kernel itself.
    env["MCL_CUDA_LAUNCH_GATE"] = "0"
    done = _call(collect, env, timeout)
    output = done.stdout + done.stderr
    if PERMISSION_CODE in output:
        raise MclError(error(
            "profile-permission", "ncu may not read the GPU's performance counters "
            f"({PERMISSION_CODE}): the driver allows that only to administrators", None,
            hint="run as root, or let every user read them (NVIDIA's "
            "'NVreg_RestrictProfilingToAdminUsers=0' driver option)"))
    if done.returncode != 0 or not Path(report).is_file():
        last = _last_lines(output)
        raise MclError(error(
            "profile-run", f"the profiled run failed (ncu exit status {done.returncode})"
            + (f": {last}" if last else ""), None,
            hint="run the kernel alone: " + " ".join(run_argv[1:])))
    raw = export(ncu, report, ["--page", "raw", "--print-units", "base"], env, timeout)
    source = export(ncu, report, ["--page", "source", "--print-source", "cuda,sass"], env,
                    timeout)
    return Pages(raw, source)


def export(ncu: str, report: Path, page: list[str], env: dict[str, str], timeout: float
           ) -> str:
    """A page of `report` as CSV."""
    exported = _call([ncu, "--import", str(report), "--csv", *page], env, timeout)
    if exported.returncode != 0:
        raise MclError(error("profile-csv", f"ncu could not read its report {report}: "
                             + _last_lines(exported.stdout + exported.stderr), None))
    return exported.stdout


def run_group(argv: Sequence[str], timeout: float, env: dict[str, str] | None = None,
              cwd: str | Path | None = None) -> subprocess.CompletedProcess[str]:
    """`subprocess.run` in a process group of its own, the whole group killed on a
    timeout: ncu starts the profiled run as its child, and killing ncu alone left that
    run (and its GPU context, and ncu's lock) behind for the next profile to wait on.
    Raises subprocess.TimeoutExpired as `subprocess.run` does."""
    with subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=env, cwd=cwd, start_new_session=True) as child:
        try:
            out, err = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
            raise
    return subprocess.CompletedProcess(list(argv), child.returncode, out, err)


def _call(argv: Sequence[str], env: dict[str, str], timeout: float
          ) -> subprocess.CompletedProcess[str]:
    try:
        return run_group(argv, timeout, env)
    except subprocess.TimeoutExpired:
        raise MclError(error("profile-timeout", f"ncu did not finish in {timeout:.0f} s",
                             None, hint="profile smaller sizes (-D)")) from None
    except OSError as exc:
        raise MclError(error("profile-ncu", f"cannot start {argv[0]}: {exc.strerror}",
                             None)) from None


def _last_lines(output: str, count: int = 3) -> str:
    """The end of a failed tool's output, as one line: where it says what went wrong."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return " | ".join(lines[-count:])
