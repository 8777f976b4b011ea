"""`mcl devices [--backend NAME]`: a backend's devices (by default the OpenCL platforms and
devices), with what to pass to `--device`.

For OpenCL each line gives the index (`--device N`), the platform and device index
(`--device P:D`, also `PYOPENCL_CTX=P:D`), the type, the name and the platform (the PoCL
that comes with mcl is marked "bundled with mcl"); the device used when no `--device`,
$MCL_DEVICE or $PYOPENCL_CTX is given is marked: the bundled PoCL's CPU device, whatever
else is installed (mcl.backends.opencl.runner.default_device). Other backends list their
devices the same way (mcl.codegen.backend.Backend.devices).
"""

from __future__ import annotations

import argparse

from mcl.commands.options import add_backend_argument
from mcl.output_width import say


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "devices",
        help="list the OpenCL devices and the index to pass to --device",
        description="List the OpenCL platforms and devices (or another backend's devices, "
        "with --backend). Pass the index N or P:D to --device (or set MCL_DEVICE, or "
        "PYOPENCL_CTX=P:D as for pyopencl); a substring of the name (`--device nvidia`) "
        "works too.",
    )
    add_backend_argument(p, when="whose devices: ")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mcl.backends import DEFAULT_BACKEND, get_backend

    backend = get_backend(getattr(args, "backend", DEFAULT_BACKEND))
    devices = backend.devices()
    if not devices:
        say(f"no {backend.title} device found; install a driver (pip install "
              "pocl-binary-distribution)" if backend.name == DEFAULT_BACKEND
              else f"no {backend.title} device found")
        return 1
    titles = devices[0].spec_titles or tuple("--device" for _ in devices[0].specs)
    rows = [(*titles, "type", "device", "platform", "")]
    rows += [(*d.specs, d.kind, d.name,
              d.platform + "".join(f" ({note})" for note in d.notes),
              "(used by default)" if d.default else "")
             for d in devices]
    # Plain aligned columns; a row wider than the output (mcl.output_width) goes on under
    # the device column, so the indexes to pass to --device stay alone at the left.
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    device_column = sum(width + 2 for width in widths[:len(titles) + 1])
    for row in rows:
        say("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
            .rstrip(), hang=device_column)
    if backend.name == DEFAULT_BACKEND:  # descriptions are detected from its devices
        _hint_detect(backend.select_device(None))
    return 0


def _hint_detect(device: object) -> None:
    """On stderr, where no description (bundled, $MCL_HWD_PATH) describes the default
    device: how to write one (mcl.detect.match)."""
    import sys

    from mcl.detect.match import detect_hint
    from mcl.hdl.library import default_library

    hint = detect_hint(device, default_library())
    if hint:
        say(hint, file=sys.stderr)
