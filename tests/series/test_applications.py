"""benchmarks/applications.py (the paper's Table IV): the application modules keep their
contract, and a run measures versions and peers in one run, checking both outputs."""

from __future__ import annotations

import json
import types
from pathlib import Path

import numpy as np
import pytest

from mcl.verify import load_reference

from .series_support import benchmark_script

REPO = Path(__file__).resolve().parents[2]


def _script() -> types.ModuleType:
    return benchmark_script("applications")


def test_every_app_module_keeps_the_contract() -> None:
    modules = _script().app_modules()
    assert "matmul" in {m.NAME for m in modules}
    for module in modules:
        folder = REPO / "kernels" / module.NAME
        assert (folder / "series.toml").is_file(), module.NAME
        reference = load_reference(folder / "reference.py")
        assert module.UNIT in ("GFLOP/s", "GB/s"), module.NAME
        for kind in ("gpu", "cpu"):
            sizes = module.sizes(kind)
            assert sizes, (module.NAME, kind)
            for defines in sizes:
                assert set(defines) <= set(reference.sizes), (module.NAME, defines)
                work = module.work({**reference.sizes, **defines})
                assert work["flop"] >= 0 and work["bytes"] > 0, module.NAME
            for peer in module.peers(kind):
                assert peer.name and callable(peer.prepare)


def test_defines_override_only_the_sizes_an_app_has_and_drop_duplicates() -> None:
    apply = _script().apply_defines
    sizes = [{"n": 4096}, {"n": 8192}]
    assert apply(sizes, {"n": 40, "m": 7}) == [{"n": 40}]
    assert apply(sizes, {}) == sizes


def test_cpu_run_measures_versions_and_peer_in_one_run(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "r.json"
    rc = _script().main(["--apps", "matmul", "-D", "n=40", "-D", "m=33", "-D", "p=17",
                         "--rounds", "2", "--versions", "perfect", "--json", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "best/perfect" in text and "numpy a @ b" in text
    data = json.loads(out.read_text())
    (case,) = data["cases"]
    assert case["defines"] == {"n": 40, "m": 33, "p": 17}
    rows = {r["name"]: r for r in case["rows"]}
    assert rows["perfect"]["leaf"] == "x86_avx512" and rows["perfect"]["verified"]
    assert len(rows["perfect"]["times"]) == 2
    peer = rows["numpy a @ b (OpenBLAS)"]
    assert peer["kind"] == "peer" and peer["verified"] and peer["best_rate"] > 0
    assert case["best"] == "perfect"
    assert len(data["copy_gbs"]["runs"]) == 2 and data["copy_gbs"]["best"] > 0


def test_a_peer_with_a_wrong_answer_or_a_failure_is_reported() -> None:
    script = _script()
    Peer = script.Peer

    def broken(args: dict[str, object]):  # noqa: ANN202
        raise RuntimeError("no such library\nsecond line")

    fake = types.SimpleNamespace(
        NAME="matmul", UNIT="GFLOP/s",
        work=lambda d: {"flop": 2.0 * d["n"] * d["m"] * d["p"], "bytes": 1.0},
        peers=lambda kind: [Peer("zeros", lambda args: lambda: np.zeros((5, 6), np.float32)),
                            Peer("right", lambda args: lambda: np.asarray(args["a"])
                                 @ np.asarray(args["b"])),
                            Peer("broken", broken)])
    from mcl.hdl.library import default_library

    case = script.run_case(fake, {"n": 5, "m": 6, "p": 7}, "cpu", None, default_library(), 1,
                           [], False)
    rows = {r.name: r for r in case.rows}
    assert rows["zeros"].verified is False and rows["right"].verified is True
    assert rows["zeros"].error_ratio > 1 >= rows["right"].error_ratio
    assert rows["broken"].problem == "RuntimeError: no such library"
    # a peer outside the error bound is still ranked (another algorithm's rounding)
    assert case.measured("peer") == [rows["zeros"], rows["right"]]


@pytest.mark.parametrize("sizes", [{"h": 17, "w": 21, "fh": 3, "fw": 5},
                                   {"h": 20, "w": 13, "fh": 4, "fw": 6}])
def test_convolution_cpu_peers_compute_the_reference(sizes: dict[str, int]) -> None:
    """scipy's correlate centres the filter at fh // 2, fw // 2 (odd and even sizes)."""
    (module,) = _script().app_modules(["convolution"])
    reference = load_reference(REPO / "kernels" / "convolution" / "reference.py")
    args = reference.module.inputs(sizes, np.random.default_rng(2))
    want = reference.module.reference(dict(args))["b"]
    peers = module.peers("cpu")
    assert len(peers) == 2
    for peer in peers:
        got = peer.prepare(dict(args))()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=peer.name)


def test_fma_peak_only_for_nvidia_gpus() -> None:
    fma_peak = _script().fma_peak
    h100 = types.SimpleNamespace(vendor="NVIDIA Corporation", max_compute_units=132,
                                 max_clock_frequency=1980)
    peak, text = fma_peak(h100, "gpu")
    assert peak == pytest.approx(132 * 128 * 2 * 1.98) and "1980 MHz" in text
    assert fma_peak(h100, "cpu") == (None, "")
    assert fma_peak(types.SimpleNamespace(vendor="AMD"), "gpu") == (None, "")


def test_transpose_reduction_and_both_spmv_inputs_are_rows(tmp_path: Path) -> None:
    """Transpose and reduction are rows against the copy bandwidth; spmv runs once per
    input kind, the power-law one on its own matrix (another row-length spread)."""
    out = tmp_path / "r.json"
    rc = _script().main(["--apps", "transpose,reduction,spmv", "-D", "n=45", "-D", "m=31",
                         "-D", "chunk=16", "-D", "nrows=70", "-D", "ncols=50", "-D", "nnz=600",
                         "--rounds", "1", "--versions", "perfect", "--json", str(out)])
    assert rc == 0
    cases = {(c["app"], c["inputs"]): c for c in json.loads(out.read_text())["cases"]}
    assert set(cases) == {("transpose", None), ("reduction", None), ("spmv", None),
                          ("spmv", "powerlaw")}
    for case in cases.values():
        rows = {r["name"]: r for r in case["rows"]}
        assert rows["perfect"]["verified"], case["app"]
        assert all(r["verified"] for r in case["rows"] if r["kind"] == "peer"), case["app"]
    assert cases[("transpose", None)]["unit"] == cases[("reduction", None)]["unit"] == "GB/s"
    reference = load_reference(REPO / "kernels" / "spmv" / "reference.py")
    from mcl.verify import make_inputs

    spread = {kind: np.diff(make_inputs(reference, {"nrows": 70, "ncols": 50, "nnz": 600}, 0,
                                        kind)[1]["rowptr"]).max() for kind in (None, "powerlaw")}
    assert spread["powerlaw"] > spread[None]


def test_every_transpose_version_is_timed_against_the_copy_bandwidth(tmp_path: Path) -> None:
    """The transpose series' GPU versions run at their leaf (hopper) with --all-versions,
    beside perfect, in the run that measures the copy bandwidth they are a share of."""
    out = tmp_path / "r.json"
    rc = _script().main(["--apps", "transpose", "-D", "n=45", "-D", "m=31", "--rounds", "1",
                         "--all-versions", "--json", str(out)])
    assert rc == 0
    data = json.loads(out.read_text())
    (case,) = data["cases"]
    versions = {r["name"]: r for r in case["rows"] if r["kind"] == "version"}
    assert set(versions) == {"perfect", "gpu_v1", "hopper_v1"}
    assert versions["gpu_v1"]["leaf"] == versions["hopper_v1"]["leaf"] == "hopper"
    assert all(r["verified"] and r["times"] for r in versions.values())
    assert data["copy_gbs"]["best"] > 0
