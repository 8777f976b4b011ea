"""The second verifier of a next version: its code in the default backend's language
(OpenCL), generated at the kernel's leaf, run on an OpenCL device (the PoCL CPU device
that comes with mcl, or the one $MCL_DEVICE names, as `mcl run --target` picks it) on
the inputs the interpreter ran, compared as the interpreter's outputs are
(docs/refinements.md, "Verified before offered").

The code is the generated code but for one hint: a loop that holds a barrier gets no
`#pragma unroll` (the mapping's `unroll_barrier_loops`). PoCL builds a work-group
function by copying the code between barriers, once per unrolled step and condition, and
a loop of 8 steps around a barrier under a condition (several-elements of spmv's
row-per-warp version) took over 5 minutes to build with the pragma, under a second
without; the pragma changes no result, and `mcl refine --measure` runs and compares the
code as generated, pragma and all.

The interpreter checks every index and reads the MCPL semantics; the device runs the
code mcl generates, so a rewrite that the code generator or the device compiler gets
wrong is caught too. OpenCL checks no index (an access past a buffer corrupts memory),
so a version runs here only after the interpreter has run it at the same sizes.

One device, one context and one command queue serve every version of every kernel in
the process (a search verifies many); each version is one program built once and run at
every size. Where the level is no leaf (no OpenCL is generated for it) or no OpenCL
device can be opened, `OpenCLCheck.unavailable` says why and the interpreter verifies
alone: the verification's text says so."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from mcl import pipeline
from mcl.diagnostics import MclError
from mcl.refine.kernel import KernelAtLevel

# The queue of the first session opened, shared by every later one (its device and
# context with it): opening a context on PoCL costs a tenth of a second or more.
_shared_queue: list[Any] = []


@dataclass
class OpenCLCheck:
    """Runs versions of one kernel as OpenCL on one device: `device` names it, or
    `unavailable` says why there is none (then nothing runs)."""

    device: str = ""
    unavailable: str | None = None
    _programs: dict[str, Any] = field(default_factory=dict)  # session by generated source

    @classmethod
    def of(cls, kernel: KernelAtLevel) -> OpenCLCheck:
        """The check for `kernel`'s level: OpenCL is generated at leaves only."""
        if not kernel.library.is_leaf(kernel.level):
            return cls(unavailable=f"{kernel.level} is not a leaf, so no OpenCL is "
                       "generated to run on a device")
        check = cls()
        try:
            session = check._session(kernel)
        except MclError as exc:
            return cls(unavailable=f"no OpenCL run at {kernel.level}: {_first_line(exc)}")
        check.device = session.device_name()
        return check

    def run(self, kernel: KernelAtLevel, args: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """The arrays `kernel` writes, run on the device with copies of `args`."""
        copies = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
        result = self._session(kernel).run(kernel.function, copies)
        return {name: np.asarray(value) for name, value in result.outputs.items()}

    def _session(self, kernel: KernelAtLevel) -> Any:
        from mcl.backends import DEFAULT_BACKEND, load_mapping, open_session

        mapping = replace(load_mapping(kernel.library.get(kernel.level),
                                       language=DEFAULT_BACKEND), unroll_barrier_loops=False)
        generated = pipeline.generate(kernel.source, kernel.level, kernel.library,
                                      mapping=mapping, only={kernel.function})
        found = self._programs.get(generated.source)
        if found is None:
            found = open_session(generated, queue=_shared_queue[0] if _shared_queue else None)
            if not _shared_queue:  # OpenCL sessions have their queue
                _shared_queue.append(getattr(found, "queue"))  # noqa: B009
            self._programs[generated.source] = found
        return found


def _first_line(exc: MclError) -> str:
    text = exc.diagnostics[0].message if exc.diagnostics else str(exc)
    return text.splitlines()[0] if text else "failed"
