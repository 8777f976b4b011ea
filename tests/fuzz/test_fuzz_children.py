"""The fuzzer's children: a command that may open an OpenCL device, asked for once a
runtime has started in the fuzzing process, runs in a fresh process. A forked child has
lost the runtime's worker threads (PoCL's) and waited for them until the wall-clock
limit called it a hang."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcl import fork_safety, fuzz

KERNEL = """\
perfect void k(int n, int m, main float[n] a, main float[n] b) {
  foreach (int i in n threads) {
    a[i] = 0.0 * b[i];
  }
}
"""


def test_device_commands_start_afresh_only_once_a_runtime_is_loaded(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fork_safety, "opencl_loaded", lambda: False)
    assert not fuzz._needs_fresh_process(["run", "--target", "fermi", "x.mcpl"])
    monkeypatch.setattr(fork_safety, "opencl_loaded", lambda: True)
    assert fuzz._needs_fresh_process(["run", "--target", "fermi", "x.mcpl"])
    assert not fuzz._needs_fresh_process(["run", "--interp", "x.mcpl"])
    assert not fuzz._needs_fresh_process(["check", "x.mcpl"])


def test_a_run_after_the_runtime_started_here_ends(tmp_path: Path) -> None:
    cl = pytest.importorskip("pyopencl")
    try:
        context = cl.create_some_context(interactive=False)
    except Exception as exc:  # noqa: BLE001 - CI installs PoCL; a bare machine may not
        pytest.skip(f"no OpenCL device: {exc}")
    queue = cl.CommandQueue(context)  # the runtime's threads start here, in this process
    program = cl.Program(context, "kernel void z(global float *x) { x[0] = 1.0f; }").build()
    buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE, 4)
    program.z(queue, (1,), None, buffer)
    queue.finish()
    assert fork_safety.opencl_loaded()
    path = tmp_path / "generated.mcpl"
    path.write_text(KERNEL, encoding="utf-8")
    (tmp_path / "reference.py").write_text(fuzz.GENERATED_REFERENCE, encoding="utf-8")
    status, err = fuzz.run_command(
        ["run", "--target", "x86_avx512", "-D", "n=7", "-D", "m=0", str(path)], budget=30)
    assert status == 0, err
