"""Devices the way pyopencl users expect (issue 19): `mcl devices` lists every device with
the index for `--device`, and $PYOPENCL_CTX picks the device when nothing else does."""

from __future__ import annotations

import pytest

from mcl.backends.opencl.runner import device_spec_from_environment, list_devices, select_device
from mcl.cli import main


@pytest.fixture(autouse=True)
def no_device_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCL_DEVICE", raising=False)
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)


@pytest.mark.parametrize(("value", "spec"), [("1", "1:0"), ("1:", "1:0"), ("0:2", "0:2"),
                                             ("nvidia", "nvidia"), ("", None)])
def test_pyopencl_ctx_is_read_as_pyopencl_reads_it(
    value: str, spec: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYOPENCL_CTX", value)
    assert device_spec_from_environment() == spec


def test_mcl_device_wins_over_pyopencl_ctx(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYOPENCL_CTX", "1")
    monkeypatch.setenv("MCL_DEVICE", "0:0")
    assert device_spec_from_environment() == "0:0"


def test_devices_lists_every_device_with_its_indices(capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "300")  # one line per device
    assert main(["devices"]) == 0
    lines = capsys.readouterr().out.splitlines()
    devices = list_devices()
    assert len(lines) == 1 + len(devices)
    for (info, _), line in zip(devices, lines[1:], strict=True):
        assert line.split()[:3] == [str(info.index), f"{info.platform_index}:{info.device_index}",
                                    info.kind]
    assert sum("(used by default)" in line for line in lines) == 1


def test_devices_rows_go_on_under_the_device_column_at_80(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Piped without $COLUMNS: 80 columns, the indexes alone at the left."""
    monkeypatch.delenv("COLUMNS", raising=False)
    assert main(["devices"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= 80
    column = lines[0].index("device")
    starts = [line.split()[0] for line in lines[1:] if not line.startswith(" ")]
    assert starts == [str(info.index) for info, _ in list_devices()]
    assert all(len(line) - len(line.lstrip()) == column
               for line in lines[1:] if line.startswith(" "))


def test_pyopencl_ctx_selects_the_device(monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COLUMNS", "300")
    info, device = list_devices()[-1]
    monkeypatch.setenv("PYOPENCL_CTX", f"{info.platform_index}:{info.device_index}")
    assert select_device() == device
    assert main(["devices"]) == 0
    marked = [line for line in capsys.readouterr().out.splitlines() if "used by default" in line]
    assert marked[0].split()[0] == str(info.index)


def test_the_default_is_the_bundled_pocl_whatever_the_order() -> None:
    """Other platforms (Debian's PoCL has the same name) may come first or last: the
    default stays the CPU device of the PoCL inside the installed pyopencl."""
    from mcl.backends.opencl.bundled_pocl import bundled_platform_handles
    from mcl.backends.opencl.runner import default_device

    devices = list_devices()
    bundled = bundled_platform_handles()
    assert bundled, "the pyopencl wheel carries a PoCL (pocl-binary-distribution)"
    expected = [d for info, d in devices if d.platform.int_ptr in bundled and info.kind == "cpu"]
    assert len(expected) == 1
    assert default_device(devices) == expected[0]
    assert default_device(list(reversed(devices))) == expected[0]
    assert select_device() == expected[0]


def test_without_a_bundled_pocl_the_first_pocl_cpu_device(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    from types import SimpleNamespace

    from mcl.backends.opencl import bundled_pocl
    from mcl.backends.opencl.runner import DeviceInfo, default_device

    monkeypatch.setattr(bundled_pocl, "bundled_platform_handles", lambda: frozenset())

    def device(n: int) -> SimpleNamespace:
        return SimpleNamespace(platform=SimpleNamespace(int_ptr=n))

    gpu = (DeviceInfo(0, 0, 0, "NVIDIA CUDA", "H100", "gpu"), device(1))
    pocl = (DeviceInfo(1, 1, 0, "Portable Computing Language", "pthread", "cpu"), device(2))
    assert default_device([gpu, pocl]) is pocl[1]
    assert default_device([gpu]) is gpu[1]


def test_devices_marks_the_bundled_platform(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["devices"]) == 0
    # A row's cells wrap onto the lines below it (indented) where the table is wider than
    # the terminal, as a long CPU name makes it: a row is its first line and those.
    rows: list[str] = []
    for line in capsys.readouterr().out.splitlines():
        if line.startswith(" ") and rows:
            rows[-1] += " " + line.strip()
        else:
            rows.append(line)
    marked = [row for row in rows if "bundled with mcl" in row]
    assert len(marked) == 1 and "(used by default)" in marked[0]
