"""benchmarks/apps/gesummv.py and blackscholes.py (issue 13): on the PoCL CPU device every
version of the CPU branch and the numpy peer run and compute the reference's answer, and
the figures are GB/s (both applications are bandwidth-bound)."""

from __future__ import annotations

import pytest

from mcl.hdl.library import default_library

from .test_applications import _script


@pytest.mark.parametrize(("app", "n"), [("gesummv", 67), ("blackscholes", 1037)])
def test_cpu_versions_and_numpy_peer_agree_with_the_reference(app: str, n: int) -> None:
    script = _script()
    (module,) = script.app_modules([app])
    assert module.UNIT == "GB/s"
    queue = script.harness.open_device(None).queue
    case = script.run_case(module, {"n": n}, "cpu", queue, default_library(), 1, None, False)
    rows = {r.name: r for r in case.rows}
    versions = [r for r in case.rows if r.kind == "version"]
    assert {r.leaf for r in versions} == {"x86_avx512"}
    assert {"perfect", "x86_avx512_v1"} <= set(rows)
    assert all(r.verified is True and r.problem is None for r in case.rows), rows
    (peer,) = case.measured("peer")
    assert "numpy" in peer.name and case.gbs(peer) > 0


def test_gpu_sizes_and_peers_are_the_papers_and_the_issues() -> None:
    gesummv, blackscholes = (_script().app_modules([a])[0] for a in ("gesummv", "blackscholes"))
    assert gesummv.sizes("gpu") == [{"n": 4096}, {"n": 8192}]
    assert blackscholes.sizes("gpu") == [{"n": 4_000_000}, {"n": 16_000_000}]
    assert "SGEMV" in gesummv.peers("gpu")[0].name
    assert "CuPy" in blackscholes.peers("gpu")[0].name
    # bytes: A and B once, x and y; 20 bytes per option
    assert gesummv.work({"n": 10})["bytes"] == 4 * (200 + 20)
    assert blackscholes.work({"n": 10})["bytes"] == 200


def test_a_peer_returning_several_outputs_is_checked_on_each() -> None:
    """Black-Scholes' peers return (call, put): both are checked; a peer that returns only
    the first output is checked on that one."""
    import numpy as np

    script = _script()
    expected = {"call": np.ones(3, np.float32), "put": np.zeros(3, np.float32)}
    got = script.peer_outputs((np.ones(3), np.zeros(3)), ("call", "put"), expected)
    assert set(got) == {"call", "put"}
    assert set(script.peer_outputs(np.ones(3), ("call", "put"), expected)) == {"call"}
    assert script.peer_outputs("not an array", ("call", "put"), expected) == {}
