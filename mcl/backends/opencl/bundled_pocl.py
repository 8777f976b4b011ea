"""Which OpenCL platform is the PoCL that comes with mcl (docs/codegen.md, "Devices").

mcl's default device is the CPU device of the PoCL that pip installs with it (the pyopencl
wheel carries it, from pocl-binary-distribution), so that figures do not change when the
system gains another OpenCL platform -- Debian's own PoCL, for one, has the same platform
name and is often listed first. The bundled library is recognised exactly: loaded again
here (the same file, so the same loaded copy), its ICD entry point returns its platform
handle, which is the handle pyopencl reports for that platform.
"""

from __future__ import annotations

import ctypes
import functools
from pathlib import Path

# The ICD entry point; the bundled build prefixes its symbols with `POcl`.
_ENTRY_POINTS = ("clIcdGetPlatformIDsKHR", "POclIcdGetPlatformIDsKHR")


def bundled_libraries() -> list[Path]:
    """The PoCL libraries inside the installed pyopencl (none for a pyopencl built
    against the system's OpenCL)."""
    try:
        import pyopencl
    except ImportError:
        return []
    folder = Path(pyopencl.__file__).parent / ".libs"
    return sorted(folder.glob("libpocl*.so*")) if folder.is_dir() else []


@functools.lru_cache(maxsize=1)
def bundled_platform_handles() -> frozenset[int]:
    """The platform handles (pyopencl's `Platform.int_ptr`) of the bundled PoCL; empty
    when there is none or it cannot be asked."""
    handles: set[int] = set()
    for path in bundled_libraries():
        try:
            library = ctypes.CDLL(str(path))
        except OSError:
            continue
        entry = next((getattr(library, name) for name in _ENTRY_POINTS
                      if hasattr(library, name)), None)
        if entry is None:
            continue
        count = ctypes.c_uint()
        if entry(0, None, ctypes.byref(count)) != 0 or count.value == 0:
            continue
        ids = (ctypes.c_void_p * count.value)()
        if entry(count, ids, None) == 0:
            handles.update(int(i) for i in ids if i)
    return frozenset(handles)
