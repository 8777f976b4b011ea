"""Which description of the library describes an OpenCL device, for `mcl devices`'s hint
to run `mcl hwd detect` where none does.

A description matches a device when it bears the name `mcl hwd detect` gives the device
(a user's detected description on --hwd-path or $MCL_HWD_PATH), or when it is a bundled
description of a machine whose device name is listed below. The generic levels (perfect,
cpu, gpu, nvidia, ...) describe no particular device.
"""

from __future__ import annotations

from typing import Any

from mcl.hdl.library import HwdLibrary

# Bundled leaves and the device names they describe (their .hdl headers say which).
BUNDLED_MACHINES = {
    "hopper": ("H100", "H200"),
    "fermi": ("GTX 480", "GF100"),
    "xeon_phi": ("Xeon Phi",),
}


def matching_description(device: Any, library: HwdLibrary) -> str | None:
    from mcl.detect.generate import default_name
    from mcl.detect.query import query

    name = default_name(query(device))
    if name in library.names():
        return name
    device_name = str(device.name)
    for level, markers in BUNDLED_MACHINES.items():
        if level in library.names() and any(m.lower() in device_name.lower() for m in markers):
            return level
    return None


def detect_hint(device: Any, library: HwdLibrary) -> str | None:
    """One line for a device no description matches, else None."""
    if matching_description(device, library) is not None:
        return None
    return (f"note: no hardware description matches the default device "
            f"'{str(device.name).strip()}': `mcl hwd detect -o DIR` writes one for it, "
            "then pass --hwd-path DIR (docs/hdl.md, \"Bring your own machine\")")
