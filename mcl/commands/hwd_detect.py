"""`mcl hwd detect`: write the hardware description of the local GPU or CPU.

Queries the OpenCL device (plus CUDA through cuda-bindings for an NVIDIA GPU, plus the
host's /proc and /sys for a CPU), optionally measures bandwidths and the FMA peak
(`--measure`), and writes NAME.hdl and NAME.opencl.toml into DIR, ready for
`--hwd-path DIR` (plus NAME.cuda.toml, the CUDA mapping, for an NVIDIA GPU).
`--save-query FILE` keeps the raw query; `--from-query FILE` generates
from one recorded earlier (or on another machine) without touching the hardware.
The logic lives in mcl.detect; this module is the command line around it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from mcl.diagnostics import MclError, error
from mcl.output_width import say

HOST = "host"
# What detect may write (.cuda.toml for NVIDIA GPUs, _feedback.py for Hopper GPUs).
OUTPUT_SUFFIXES = (".hdl", ".opencl.toml", ".cuda.toml", "_feedback.py")
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def register(hwd_sub: argparse._SubParsersAction) -> None:
    p = hwd_sub.add_parser(
        "detect", help="describe the local GPU or CPU as a new leaf description",
        description="Query an OpenCL device (and CUDA for an NVIDIA GPU, the host's /proc "
        "and /sys for a CPU) and write NAME.hdl and NAME.opencl.toml (and NAME.cuda.toml for "
        "an NVIDIA GPU) into DIR, every figure commented with where it came from. The "
        "description specializes hopper (an NVIDIA GPU of compute capability 9.x), nvidia "
        "(another NVIDIA GPU), gpu (any other GPU; accelerator if its work-groups are "
        "smaller than gpu's) or cpu. Use it with --hwd-path DIR (docs/hdl.md, \"Bring your "
        "own machine\").")
    p.add_argument("--device", metavar="SPEC",
                   help="OpenCL device: P:D, N or a name as in `mcl devices`; `host` for the "
                   "host CPU without OpenCL (default: the device mcl run uses)")
    p.add_argument("-o", "--output", metavar="DIR", default=".",
                   help="folder for the files (default: .)")
    p.add_argument("--name", help="description name (default: from the device's name, "
                   "e.g. nvidia_h100_80gb_hbm3)")
    p.add_argument("--measure", action="store_true",
                   help="also run benchmarks (within a minute, progress on stderr): the "
                   "float32 FMA peak beside the vendor library's SGEMM, device-memory read/"
                   "write/copy bandwidth beside numpy's or PyTorch's copy, cache and local-"
                   "memory bandwidth and latency, kernel-launch overhead and host<->device "
                   "bandwidth, each repeated with its spread; the roofs become the measured "
                   "figures and figures more than 20%% off the nominal ones are reported")
    p.add_argument("--force", action="store_true", help="overwrite existing files")
    p.add_argument("--save-query", metavar="FILE",
                   help="also write the raw device query as JSON (what --from-query reads)")
    p.add_argument("--from-query", metavar="FILE",
                   help="generate from a query saved with --save-query instead of the "
                   "hardware (no --measure)")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text (default) or one JSON document on stdout: name, parent, files, "
                   "peaks")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mcl.detect.generate import default_name, generate

    if args.name is not None and not IDENTIFIER.match(args.name):
        raise MclError(error("detect-bad-name", f"--name '{args.name}' is not an HDL name",
                             hint="letters, digits and _, not starting with a digit"))
    if args.from_query and args.measure:
        raise MclError(error("detect-measure-recorded", "--measure needs the device; "
                             "--from-query reads a recorded query",
                             hint="drop one of them"))
    out = Path(args.output)
    _check_folder(out)
    device, q = _query(args)
    name = args.name or default_name(q)
    _check_name(name, out, args.force)
    if args.save_query:
        Path(args.save_query).write_text(json.dumps(q, indent=1, sort_keys=True) + "\n")
    measured = None
    if args.measure:
        from mcl.detect.measure import measure
        from mcl.progress import Timings

        timings = Timings("hwd detect")
        measured = measure(device, q, timings=timings, cuda_ordinal=_platform_index(device))
        say(f"measured in {sum(timings.values()):.1f} s: {timings.text()}", file=sys.stderr)
    generated = generate(q, name, measured)
    for warning in generated.warnings:
        say(f"warning: {warning}", file=sys.stderr)
    peaks = _validate(generated)
    written = generated.files()
    for file, text in written.items():
        (out / file).write_text(text)
    files = [str(out / file) for file in written]
    if args.format == "json":
        from mcl.schemas import SCHEMA_VERSION

        extra: dict[str, Any] = {} if measured is None else {
            "measurements": {key: {"value": r.value, "median": r.median, "worst": r.worst,
                                   "runs": r.runs, "how": r.how}
                             for key, r in measured.rates.items()},
            "warnings": list(generated.warnings)}
        print(json.dumps({"schema_version": SCHEMA_VERSION, "name": name,
                          "parent": generated.parent, "files": files,
                          "measured": measured is not None, **extra, **peaks}, indent=2))
        return 0
    say(f"wrote {', '.join(files)}: {name} specializes {generated.parent}")
    for line in _peak_lines(peaks):
        say("  " + line)
    say(f"next: mcl hwd show {name} --hwd-path {out}")
    return 0


def _query(args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    from mcl.detect.query import query

    if args.from_query:
        try:
            recorded = json.loads(Path(args.from_query).read_text())
        except (OSError, ValueError) as exc:
            raise MclError(error("detect-bad-query", f"cannot read {args.from_query}: {exc}",
                                 hint="pass a file written by --save-query")) from None
        if not isinstance(recorded, dict) or "query_version" not in recorded:
            raise MclError(error("detect-bad-query", f"{args.from_query} is not a device "
                                 "query", hint="pass a file written by --save-query"))
        return None, recorded
    if args.device == HOST:
        if args.measure:
            raise MclError(error("detect-measure-host", "--measure runs OpenCL benchmarks; "
                                 "--device host describes the CPU without OpenCL",
                                 hint="pick the OpenCL CPU device instead (mcl devices)"))
        return None, query(None)
    from mcl.backends import get_backend
    from mcl.detect.query import BACKEND

    device = get_backend(BACKEND).select_device(args.device)
    return device, query(device, cuda_ordinal=_platform_index(device))


def _platform_index(device: Any) -> int:
    """The device's index on its platform: NVIDIA's OpenCL platform lists devices in
    CUDA's order."""
    try:
        return [d.int_ptr for d in device.platform.get_devices()].index(device.int_ptr)
    except Exception:  # noqa: BLE001 - a platform that cannot list again: the first
        return 0


def _check_folder(out: Path) -> None:
    """Before any query or benchmark: DIR is a folder we can write, or can be made."""
    if out.exists() and not out.is_dir():
        raise MclError(error("detect-output", f"-o {out}: not a folder",
                             hint="name a folder for NAME.hdl and NAME.opencl.toml"))
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out):
            pass
    except OSError as exc:
        raise MclError(error("detect-output", f"-o {out}: cannot write there ({exc.strerror})",
                             hint="pick a folder you can write")) from None


def _check_name(name: str, out: Path, force: bool) -> None:
    from mcl.hdl.library import library_with

    if name in library_with([], bundled=True).names():
        raise MclError(error("detect-name-taken", f"'{name}' is a bundled description",
                             hint="pick another with --name"))
    existing = [out / f"{name}{suffix}" for suffix in OUTPUT_SUFFIXES
                if (out / f"{name}{suffix}").exists()]
    if existing and not force:
        raise MclError(error("detect-output", f"{existing[0]} exists",
                             hint="pass --force to overwrite it, or pick --name or -o"))


def _validate(generated: Any) -> dict[str, Any]:
    """Load the description beside the library before writing it (a description that
    does not load is our bug, never the user's file), and read its peaks."""
    from mcl.backends import load_mapping
    from mcl.hdl.library import library_with
    from mcl.hdl.peak import bandwidths, peak_flops

    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / f"{generated.name}.hdl").write_text(generated.hdl)
        (Path(folder) / f"{generated.name}.opencl.toml").write_text(generated.mapping)
        library = library_with([folder])
        if generated.name in library.failed:
            raise MclError([error(
                "detect-invalid", f"the description written for '{generated.name}' does not "
                "load (errors below); nothing was written",
                hint="a bug of mcl hwd detect: report it with the file of --save-query"),
                *library.failed[generated.name]])
        hwd = library.get(generated.name)
        load_mapping(hwd)
        return {"peak_flops": {"float": peak_flops(hwd, "float"),
                               "double": peak_flops(hwd, "double")},
                "bandwidths": [{"space": b.space, "bytes_per_s": b.bytes_per_s,
                                "stated_by": b.source} for b in bandwidths(hwd)]}


def _peak_lines(peaks: dict[str, Any]) -> list[str]:
    lines = []
    for dtype, flops in peaks["peak_flops"].items():
        if flops:
            lines.append(f"{dtype} peak: {flops / 1e9:,.1f} GFLOP/s")
    for b in peaks["bandwidths"]:
        lines.append(f"{b['space']} bandwidth: {b['bytes_per_s'] / 1e9:,.1f} GB/s "
                     f"(stated by {b['stated_by']})")
    if not peaks["bandwidths"]:
        lines.append("no memory bandwidth (the roofline has no memory roof): add --measure")
    return lines
