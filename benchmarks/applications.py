"""The paper's Table IV: every application with a refinement series, its naive version
(perfect), its best mcl version and the best known implementations (peers), measured in
one run on one OpenCL device, with ratios.

    PYTHONPATH=. python benchmarks/applications.py                        # PoCL CPU device
    PYTHONPATH=. python benchmarks/applications.py --device nvidia --rounds 5 \\
        --json benchmarks/results/DATE-h100-applications.json

An application is a module in benchmarks/apps/ (its contract is in
benchmarks/apps/__init__.py). For each of its sizes on this device type:
- the versions of kernels/<NAME>/series.toml that name a leaf for the device type (gpu,
  cpu) and belong to this device's branch (their leaf lies below `gpu` or `cpu` in the
  hierarchy; `perfect` always; `--all-versions` runs every version with a leaf) are
  translated to that leaf and run by benchmarks/harness.run_version (OpenCL built once,
  `--rounds` runs; the time is the OpenCL profiling time of the kernels, no transfers;
  the outputs are verified against the reference's error bounds);
- the peers run right after them on the same inputs, timed by harness.time_cuda (CUDA
  events) on a GPU and harness.time_cpu (wall time) on a CPU, after a warm-up call whose
  output is verified the same way;
- the copy bandwidth of the device (harness.copy_bandwidth: an OpenCL buffer-to-buffer
  copy, bytes read plus written) is measured before and after each size, for the GB/s of
  bandwidth-bound applications.
Every figure is the best of `--rounds` rounds; the medians are kept in the JSON.
"""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script: the apps import benchmarks.apps
    sys.path.insert(0, str(REPO))
from benchmarks import harness  # noqa: E402
from benchmarks.apps import Peer  # noqa: E402 - re-exported: the apps' contract

__all__ = ["Peer", "main"]
BRANCH_ROOT = {"gpu": "gpu", "cpu": "cpu"}  # the level a device type's versions lie below


@dataclass
class Row:
    """One version or peer at one size: its times and whether its output matched."""

    name: str
    kind: str  # "version" or "peer"
    leaf: str = ""
    times: list[float] = field(default_factory=list)  # seconds, one per round
    verified: bool | None = None
    problem: str | None = None
    error_ratio: float | None = None  # worst |error| / error bound of its output
    backend: str = "opencl"  # how a version ran: opencl or cuda (peers: their own way)

    @property
    def best(self) -> float | None:
        return harness.best(self.times)

    @property
    def median(self) -> float | None:
        return harness.median(self.times)


@dataclass
class Case:
    """One application at one size: its rows, and the figures of Table IV."""

    app: str
    unit: str
    defines: dict[str, int]
    work: dict[str, float]
    rows: list[Row] = field(default_factory=list)
    inputs: str | None = None  # the reference's input kind (None: its `inputs`)

    @property
    def label(self) -> str:
        """The application as the table names it, with its input kind if not the usual."""
        return f"{self.app} {self.inputs}" if self.inputs else self.app

    def rate(self, row: Row) -> float | None:
        """The primary figure (GFLOP/s or GB/s) of a row's best time."""
        return _rate(self.work, self.unit, row.best)

    def gbs(self, row: Row) -> float | None:
        return _rate(self.work, "GB/s", row.best)

    def measured(self, kind: str) -> list[Row]:
        """Rows with a time; a version whose output is wrong does not count, a peer does
        (a vendor library may use another algorithm, e.g. cuDNN's FFT or Winograd
        convolutions, whose rounding exceeds the bound of the direct sum: the table
        warns and shows by how much)."""
        return [r for r in self.rows if r.kind == kind and r.best
                and (kind == "peer" or r.verified is not False)]

    def best_version(self) -> Row | None:
        versions = self.measured("version")
        return min(versions, key=lambda r: r.best or 0.0) if versions else None

    def perfect(self) -> Row | None:
        return next((r for r in self.measured("version") if r.name == "perfect"), None)

    def on_backend(self, backend: str) -> Case:
        """The case with the versions that ran through `backend` (and all peers)."""
        rows = [r for r in self.rows if r.kind == "peer" or r.backend == backend]
        return Case(self.app, self.unit, self.defines, self.work, rows, self.inputs)


def _rate(work: dict[str, float], unit: str, seconds: float | None) -> float | None:
    if not seconds:
        return None
    amount = work.get("bytes" if unit == "GB/s" else "flop")
    return amount / seconds * 1e-9 if amount else None


# ----------------------------------------------------------------------------- modules


def app_modules(names: Iterable[str] | None = None) -> list[ModuleType]:
    """Every module of benchmarks/apps (or those whose NAME is in `names`), by NAME."""
    import benchmarks.apps as package

    modules = [importlib.import_module(f"benchmarks.apps.{info.name}")
               for info in pkgutil.iter_modules(package.__path__) if not info.ispkg]
    wanted = set(names) if names is not None else None
    return sorted((m for m in modules if wanted is None or m.NAME in wanted),
                  key=lambda m: m.NAME)


def apply_defines(size_list: list[dict[str, int]], overrides: dict[str, int]
                  ) -> list[dict[str, int]]:
    """The sizes with `-D` overrides applied where the app has that size; duplicates
    dropped (two paper sizes may become one small test size)."""
    out: list[dict[str, int]] = []
    for sizes in size_list:
        changed = {k: overrides.get(k, v) for k, v in sizes.items()}
        if changed not in out:
            out.append(changed)
    return out


# ----------------------------------------------------------------------------- peers


def as_numpy(value: object) -> np.ndarray | None:
    """A peer's result as a numpy array (torch tensors and CuPy arrays are copied back),
    or None for a result that is not an array."""
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "detach"):  # torch.Tensor
        return value.detach().cpu().numpy()  # type: ignore[union-attr]
    if hasattr(value, "get") and hasattr(value, "shape"):  # cupy.ndarray
        return np.asarray(value.get())  # type: ignore[union-attr]
    return None


def fma_peak(device: Any, kind: str) -> tuple[float | None, str]:
    """The FP32 FMA peak of an NVIDIA GPU in GFLOP/s: SMs x 128 FP32 lanes (Hopper, and
    Ampere/Ada GA10x/AD10x) x 2 flops x the clock the device reports as its maximum;
    None elsewhere (the lanes per compute unit are not known)."""
    vendor = str(getattr(device, "vendor", ""))
    if kind != "gpu" or "NVIDIA" not in vendor.upper():
        return None, ""
    units, mhz = int(device.max_compute_units), int(device.max_clock_frequency)
    peak = units * 128 * 2 * mhz * 1e-3
    return peak, f"{units} SMs x 128 lanes x 2 x {mhz} MHz = {peak:.0f} GFLOP/s"


# ----------------------------------------------------------------------------- one case


def branch_versions(series: Any, kind: str, library: Any, every: bool) -> list[Any]:
    """The hand-written versions that run on this device type: perfect and the versions
    whose leaf lies below the device type's branch (`every`: all that name a leaf)."""
    root = BRANCH_ROOT.get(kind)
    chosen = []
    for spec in series.versions:
        leaf = spec.leaf_for(kind)
        if spec.translated or leaf is None:
            continue
        if every or spec.name == "perfect" or (root and root in library.ancestors(leaf)):
            chosen.append(spec)
    return chosen


def peer_outputs(value: object, names: Iterable[str], expected: Any) -> dict[str, np.ndarray]:
    """A peer's result by output name: an array is the reference's first output, a tuple
    or list its first outputs in order (Black-Scholes: call, put); what is not an array
    is left out, so only the outputs a peer returns are checked."""
    values = list(value) if isinstance(value, (tuple, list)) else [value]
    out = {}
    for name, item in zip(names, values, strict=False):
        got = as_numpy(item)
        if got is not None:
            want = expected[name]
            out[name] = got.reshape(want.shape) if got.size == want.size else got
    return out


def run_case(module: ModuleType, defines: dict[str, int], kind: str, queue: Any,
             library: Any, rounds: int, only: list[str] | None, every: bool,
             tuned: bool = False, backends: tuple[str, ...] = ("opencl",),
             cuda_device: Any = None, inputs: str | None = None) -> Case:
    """The versions (benchmarks/harness.run_version: built once, `rounds` runs, verified)
    and the peers (time_cuda / time_cpu, the outputs they return verified) on one size, all on
    the same inputs (of the reference's kind `inputs`, e.g. spmv's "powerlaw")."""
    from mcl.report.series import load_series
    from mcl.verify import load_reference, verify

    folder = REPO / "kernels" / module.NAME
    reference = load_reference(folder / "reference.py")
    sizes, arrays, expected = harness.prepared_inputs(reference, defines, 0, inputs)
    case = Case(module.NAME, module.UNIT, dict(defines), dict(module.work(defines)),
                inputs=inputs)

    for spec in branch_versions(load_series(folder, library), kind, library, every):
        if only is not None and spec.name not in only:
            continue
        leaf = spec.leaf_for(kind) or ""
        for backend in backends:
            result = harness.run_version(spec.path, leaf, queue, defines, rounds, tuned=tuned,
                                         inputs=inputs, backend=backend,
                                         cuda_device=cuda_device)
            # a version built with its .tuned.toml constants (mcl tune) says so
            name = f"{spec.name} (tuned)" if result.constants else spec.name
            case.rows.append(Row(name, "version", leaf, list(result.times), result.verified,
                                 result.problem.splitlines()[0] if result.problem else None,
                                 result.ratio, backend))

    timer = harness.time_cuda if kind == "gpu" and _has_cuda() else harness.time_cpu
    for peer in module.peers(kind):
        row = Row(peer.name, "peer")
        case.rows.append(row)
        try:
            run = peer.prepare(dict(arrays))
            got = peer_outputs(run(), reference.outputs, expected)  # also loads libraries
            row.times = timer(run, max(1, rounds))
        except Exception as exc:  # noqa: BLE001 - a peer that cannot run is reported, not fatal
            row.problem = f"{type(exc).__name__}: {exc}".splitlines()[0]
            continue
        if got:
            checks = [c for c in verify(reference, expected, got, sizes) if c.name in got]
            row.verified = all(c.ok for c in checks)
            row.error_ratio = max((c.ratio for c in checks), default=0.0)
    return case


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


# ----------------------------------------------------------------------------- output


def _fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def print_table(cases: list[Case], copy_gbs: float | None, peak: float | None = None) -> None:
    """Table IV: naive, best mcl version, peers, ratios; GB/s and the share of the copy
    bandwidth for bandwidth-bound applications; the share of the FMA peak (`peak`,
    GFLOP/s) for the others."""
    print(f"\n{'application':<14}{'sizes':<28}{'perfect':>10}{'best mcl':>10}  "
          f"{'(version)':<16}{'peer':>10}  {'(peer)':<30}{'best/perfect':>13}{'best/peer':>10}"
          f"{'GB/s':>8}{'% copy':>8}")
    for case in cases:
        best, perfect = case.best_version(), case.perfect()
        peers = case.measured("peer") or [None]
        sizes = ", ".join(f"{k}={v}" for k, v in case.defines.items())
        for number, peer in enumerate(peers):
            gbs = case.gbs(best) if best and case.unit == "GB/s" else None
            share = gbs / copy_gbs * 100 if gbs and copy_gbs else None
            head = (f"{case.label:<14}{sizes:<28}" if number == 0 else " " * 42)
            print(head + f"{_fmt(case.rate(perfect) if perfect else None):>10}"
                  f"{_fmt(case.rate(best) if best else None):>10}  "
                  f"{(best.name if best else '-'):<16}"
                  f"{_fmt(case.rate(peer) if peer else None):>10}  "
                  f"{(peer.name if peer else '-')[:30]:<30}"
                  f"{_ratio(perfect, best):>13}{_ratio(peer, best):>10}"
                  f"{_fmt(gbs):>8}{_fmt(share, 0):>8}")
        note = f"({case.unit}; best of the rounds)"
        if peak and best and case.unit == "GFLOP/s":
            note += f"; best version at {(case.rate(best) or 0.0) / peak * 100:.0f}% of FMA peak"
        print(" " * 42 + note)
    for case in cases:
        for row in case.rows:
            if row.problem:
                print(f"{case.label} {row.name}: not measured ({row.problem})")
            elif row.verified is False:
                print(f"{case.label} {row.name}: output does NOT match the reference (worst "
                      f"error {row.error_ratio:.3g} x the bound)"
                      + ("; ranked anyway, as a peer" if row.kind == "peer" else ""))


def _ratio(slower: Row | None, faster: Row | None) -> str:
    """How many times faster `faster` is than `slower` (time over time)."""
    if slower is None or faster is None or not slower.best or not faster.best:
        return "-"
    return f"{slower.best / faster.best:.2f}x"


def print_rows(case: Case) -> None:
    sizes = ", ".join(f"{k}={v}" for k, v in case.defines.items())
    print(f"\n{case.label} ({sizes}): {case.unit}, best and median of the rounds")
    for row in case.rows:
        if row.problem:
            print(f"  {row.name:<34}{row.leaf:<12}({row.problem})")
            continue
        check = {None: "", True: "ok", False: "WRONG"}[row.verified]
        median = _rate(case.work, case.unit, row.median)
        print(f"  {row.name:<34}{row.leaf:<12}{_fmt(case.rate(row)):>10}{_fmt(median):>10}"
              f"  {check}" + (f"  ({row.backend})" if row.kind == "version" else ""))


def print_backend_ratios(cases: list[Case]) -> None:
    """Per version and size: OpenCL time over CUDA time of the same generated kernel in
    the same run (above 1: the CUDA build is faster)."""
    print(f"\n{'application':<14}{'sizes':<28}{'version':<22}{'OpenCL':>10}{'CUDA':>10}"
          f"{'OpenCL/CUDA':>13}")
    for case in cases:
        sizes = ", ".join(f"{k}={v}" for k, v in case.defines.items())
        opencl = {r.name: r for r in case.rows if r.kind == "version" and r.backend == "opencl"}
        for row in case.rows:
            if row.kind != "version" or row.backend != "cuda" or row.name not in opencl:
                continue
            peer = opencl[row.name]
            print(f"{case.label:<14}{sizes[:27]:<28}{row.name[:21]:<22}"
                  f"{_fmt(case.rate(peer)):>10}{_fmt(case.rate(row)):>10}"
                  f"{_ratio(peer, row):>13}")


def to_json(cases: list[Case], meta: dict[str, Any], copy_times: list[float]) -> dict[str, Any]:
    out = dict(meta)
    out["copy_gbs"] = {"runs": copy_times, "best": max(copy_times, default=None)}
    out["cases"] = []
    for case in cases:
        best, perfect = case.best_version(), case.perfect()
        out["cases"].append({
            "app": case.app, "inputs": case.inputs, "unit": case.unit,
            "defines": case.defines, "work": case.work,
            "rows": [asdict(r) | {"best_rate": case.rate(r), "best_gbs": case.gbs(r),
                                  "median_rate": _rate(case.work, case.unit, r.median)}
                     for r in case.rows],
            "perfect": perfect.name if perfect else None,
            "best": best.name if best else None,
        })
    return out


# ----------------------------------------------------------------------------- main


def parse_overrides(items: list[str]) -> dict[str, int]:
    out = {}
    for item in items:
        name, _, value = item.partition("=")
        if not value:
            raise SystemExit(f"-D {item}: expected NAME=VALUE")
        out[name.strip()] = int(value)
    return out


def main(argv: list[str] | None = None) -> int:
    from mcl.hdl.library import default_library

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", help="OpenCL device: P:D, N, or a name such as nvidia "
                        "(default: the PoCL CPU device)")
    parser.add_argument("--apps", help="comma-separated applications (default: all)")
    parser.add_argument("--versions", help="comma-separated versions (default: perfect and "
                        "the versions of the device type's branch)")
    parser.add_argument("--all-versions", action="store_true",
                        help="every version of the series that names a leaf for the device")
    parser.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=N",
                        help="override a size of every application that has it (tests)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (default 5)")
    parser.add_argument("--tuned", action="store_true",
                        help="build each version with the constants of its .tuned.toml for "
                        "this device, where it has one (mcl tune; docs/tuning.md)")
    parser.add_argument("--backend", choices=("opencl", "cuda", "both"), default="opencl",
                        help="run the versions as OpenCL (default), as CUDA through NVIDIA's "
                        "driver API (mcl[cuda]; NVIDIA GPUs), or both in the same run with "
                        "the ratio per version")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON "
                        "(raw output belongs under benchmarks/results/)")
    args = parser.parse_args(argv)

    library = default_library()
    opened = harness.open_device(args.device)
    device, kind = opened.device, opened.kind
    names = [a.strip() for a in args.apps.split(",")] if args.apps else None
    only = [v.strip() for v in args.versions.split(",")] if args.versions else None
    modules = app_modules(names)
    if names and len(modules) != len(set(names)):
        known = ", ".join(m.NAME for m in app_modules())
        print(f"error: unknown application in --apps {args.apps} (known: {known})",
              file=sys.stderr)
        return 2
    print(f"device: {opened.name} ({kind}); best of {args.rounds} rounds", flush=True)

    overrides = parse_overrides(args.defines)
    backends = ("opencl", "cuda") if args.backend == "both" else (args.backend,)
    cuda_device = None
    if "cuda" in backends:
        from mcl.backends.cuda.runner import select_cuda_device

        cuda_device = select_cuda_device(None)
        print(f"CUDA device: {cuda_device.name} ({cuda_device.platform.name})", flush=True)
    copy_runs: list[float] = []
    cases = []
    for module in modules:
        for defines in apply_defines(module.sizes(kind), overrides):
            for inputs in getattr(module, "INPUTS", (None,)):
                copy_runs.append(harness.copy_bandwidth(opened.queue, rounds=3))
                case = run_case(module, defines, kind, opened.queue, library, args.rounds,
                                only, args.all_versions, args.tuned, backends, cuda_device,
                                inputs)
                copy_runs.append(harness.copy_bandwidth(opened.queue, rounds=3))
                print_rows(case)
                cases.append(case)
    copy_gbs = max(copy_runs, default=None)
    print(f"\ncopy bandwidth (device buffer copy, read + write): {_fmt(copy_gbs)} GB/s")
    peak, peak_text = fma_peak(device, kind)
    if peak_text:
        print(f"FP32 FMA peak: {peak_text}")
    for backend in backends:
        if len(backends) > 1:
            print(f"\nversions through {backend}:")
        print_table([c.on_backend(backend) for c in cases], copy_gbs, peak)
    if len(backends) > 1:
        print_backend_ratios(cases)
    if args.json:
        meta = {"device": opened.name, "kind": kind, "rounds": args.rounds,
                "backends": list(backends),
                "cuda_device": cuda_device.name if cuda_device is not None else None,
                "fma_peak_gflops": peak, "fma_peak": peak_text}
        Path(args.json).write_text(json.dumps(to_json(cases, meta, copy_runs), indent=2),
                                   encoding="utf-8")
    wrong = [r for c in cases for r in c.rows if r.kind == "version" and r.verified is False]
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
