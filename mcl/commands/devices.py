"""`mcl devices`: the OpenCL platforms and devices, with what to pass to `--device`.

Each line gives the index (`--device N`), the platform and device index (`--device P:D`,
also `PYOPENCL_CTX=P:D`), the type, the name and the platform (the PoCL that comes with mcl
is marked "bundled with mcl"); the device used when no `--device`, $MCL_DEVICE or
$PYOPENCL_CTX is given is marked: the bundled PoCL's CPU device, whatever else is installed
(mcl.codegen.runner.default_device).
"""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "devices",
        help="list the OpenCL devices and the index to pass to --device",
        description="List the OpenCL platforms and devices. Pass the index N or P:D to "
        "--device (or set MCL_DEVICE, or PYOPENCL_CTX=P:D as for pyopencl); a substring of "
        "the name (`--device nvidia`) works too.",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mcl.codegen.runner import list_devices, select_device

    devices = list_devices()
    if not devices:
        print("no OpenCL device found; install a driver (pip install pocl-binary-distribution)")
        return 1
    from mcl.codegen.bundled_pocl import bundled_platform_handles

    chosen = select_device()
    bundled = bundled_platform_handles()
    rows = [("N", "P:D", "type", "device", "platform", "")]
    rows += [(str(info.index), f"{info.platform_index}:{info.device_index}", info.kind,
              info.name,
              info.platform + (" (bundled with mcl)" if device.platform.int_ptr in bundled
                               else ""),
              "(used by default)" if device == chosen else "")
             for info, device in devices]
    # Plain aligned columns: never cut or wrapped, whatever the terminal width.
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
              .rstrip())
    _hint_detect(chosen)
    return 0


def _hint_detect(device: object) -> None:
    """On stderr, where no description (bundled, $MCL_HWD_PATH) describes the default
    device: how to write one (mcl.detect.match)."""
    import sys

    from mcl.detect.match import detect_hint
    from mcl.hdl.library import default_library

    hint = detect_hint(device, default_library())
    if hint:
        print(hint, file=sys.stderr)
